// Text views of weft-topo; see topo_report.h.
#include "topo_report.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/coll_traits.h"
#include "topology/cost_model.h"
#include "topology/topo_file.h"

namespace weft {
namespace tools {

namespace {

using topo::NodeType;
using topo::System;

// Row/column headers: GPU0..GPUn-1 then NIC0..NICm-1, in the path matrix's order.
struct Device {
  int node;
  std::string label;
};

std::vector<Device> devicesOf(const topo::PathMatrix& paths) {
  std::vector<Device> out;
  for (size_t i = 0; i < paths.gpus().size(); ++i) out.push_back({paths.gpus()[i], "GPU" + std::to_string(i)});
  for (size_t i = 0; i < paths.nics().size(); ++i) out.push_back({paths.nics()[i], "NIC" + std::to_string(i)});
  return out;
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

std::string nicName(const System& sys, int node) {
  const topo::Node& n = sys.nodes[static_cast<size_t>(node)];
  if (!n.nic.name.empty()) return n.nic.name;
  return n.pci.busId.empty() ? "(unnamed)" : n.pci.busId;
}

std::string nicSpeed(const System& sys, int node) {
  double mbps = sys.nodes[static_cast<size_t>(node)].nic.speedMbps;
  if (mbps <= 0) return "speed unknown";
  char text[32];
  std::snprintf(text, sizeof(text), "%g Gb/s", mbps / 1000.0);
  return text;
}

const char kLegend[] =
    "Legend:\n"
    "  X     = the device itself\n"
    "  SYS   = path crosses PCIe and the link between NUMA nodes / sockets (UPI, QPI, Infinity Fabric)\n"
    "  NODE  = path crosses PCIe and the connection between two host bridges of one NUMA node\n"
    "  PHB   = path crosses PCIe and a host bridge (the CPU's root complex)\n"
    "  PXB   = path crosses several PCIe bridges, but not the host bridge\n"
    "  PIX   = path crosses at most one PCIe bridge (both ends under one switch)\n"
    "  NVB   = path goes through another GPU over NVLink / xGMI\n"
    "  NV#   = a bonded set of # NVLinks (directly, or through NVSwitches)\n"
    "  XGMI# = a bonded set of # xGMI (Infinity Fabric) links between AMD GPUs\n";

}  // namespace

std::string cpuListFromMask(const std::string& hexMask) {
  // Words are 32 bits, most significant first.
  std::vector<uint32_t> words;
  size_t start = 0;
  while (start <= hexMask.size()) {
    size_t comma = hexMask.find(',', start);
    std::string word = hexMask.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (word.rfind("0x", 0) == 0) word = word.substr(2);
    if (word.empty() || word.size() > 8) return "";
    char* end = nullptr;
    unsigned long v = std::strtoul(word.c_str(), &end, 16);
    if (*end != '\0') return "";
    words.push_back(static_cast<uint32_t>(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::reverse(words.begin(), words.end());
  std::string out;
  int runStart = -1;
  int nBits = static_cast<int>(words.size()) * 32;
  for (int cpu = 0; cpu <= nBits; ++cpu) {
    bool set = cpu < nBits && ((words[static_cast<size_t>(cpu / 32)] >> (cpu % 32)) & 1u);
    if (set && runStart < 0) runStart = cpu;
    if (!set && runStart >= 0) {
      if (!out.empty()) out += ",";
      out += std::to_string(runStart);
      if (cpu - 1 > runStart) out += "-" + std::to_string(cpu - 1);
      runStart = -1;
    }
  }
  return out;
}

int cpuOfNode(const System& sys, int node) {
  topo::PciTree tree = topo::pciTree(sys);
  for (int n = node, guard = 0; n >= 0 && guard <= static_cast<int>(sys.nodes.size()); ++guard) {
    if (sys.nodes[static_cast<size_t>(n)].type == NodeType::kCpu) return n;
    n = tree.parent[static_cast<size_t>(n)];
  }
  return -1;
}

namespace {

// A machine without GPUs: the CPUs (vendor, architecture, CPU list), and "NICs: none" when
// there are no NICs either.
std::string formatNoGpus(const System& sys, const topo::PathMatrix& paths) {
  std::string out = "No GPUs found: there is no GPU connection matrix to show.\n";
  std::vector<int> cpus = sys.nodesOfType(NodeType::kCpu);
  out += "CPUs (" + std::to_string(cpus.size()) + "):\n";
  for (int c : cpus) {
    const topo::CpuInfo& info = sys.nodes[static_cast<size_t>(c)].cpu;
    std::string list = cpuListFromMask(info.affinity);
    out += "  " + pad(sys.describe(c), 18) + pad(info.vendor.empty() ? "vendor unknown" : info.vendor, 14) +
           pad(info.arch, 8) + "CPUs " + (list.empty() ? "unknown" : list) + "\n";
  }
  if (paths.nics().empty()) out += "NICs: none\n";
  return out;
}

// The NICs one a line (name, speed, PCI function), when there is no matrix to show.
std::string formatNicList(const System& sys, const topo::PathMatrix& paths) {
  std::string out = "NICs:\n";
  for (size_t i = 0; i < paths.nics().size(); ++i) {
    int nic = paths.nics()[i];
    out += "  NIC" + std::to_string(i) + ": " + nicName(sys, nic) + " (" + nicSpeed(sys, nic) + ", " +
           (sys.nodes[static_cast<size_t>(nic)].pci.busId.empty() ? "no PCI function"
                                                                  : sys.nodes[static_cast<size_t>(nic)].pci.busId) +
           ")\n";
  }
  return out;
}

// The matrix itself: a header row, then per device its path label to every device and, for a
// GPU, its CPU and NUMA affinity.
std::string formatDeviceMatrix(const System& sys, const topo::PathMatrix& paths, const std::vector<Device>& devs) {
  size_t width = 7;
  for (const Device& a : devs)
    for (const Device& b : devs) width = std::max(width, topo::pathLabel(paths, a.node, b.node).size() + 2);
  std::string out = pad("", 8);
  for (const Device& d : devs) out += pad(d.label, width);
  out += pad("CPU Affinity", 20) + "NUMA Affinity\n";
  for (const Device& a : devs) {
    std::string line = pad(a.label, 8);
    for (const Device& b : devs) line += pad(topo::pathLabel(paths, a.node, b.node), width);
    const topo::Node& n = sys.nodes[static_cast<size_t>(a.node)];
    if (n.type == NodeType::kGpu) {
      int cpu = cpuOfNode(sys, a.node);
      std::string list = cpu < 0 ? "" : cpuListFromMask(sys.nodes[static_cast<size_t>(cpu)].cpu.affinity);
      int numa = cpu < 0 ? -1 : sys.nodes[static_cast<size_t>(cpu)].cpu.numaId;
      line += pad(list.empty() ? "N/A" : list, 20) + (numa < 0 ? "N/A" : std::to_string(numa));
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

// The NIC legend under the matrix (empty without NICs).
std::string formatNicLegend(const System& sys, const topo::PathMatrix& paths) {
  if (paths.nics().empty()) return "";
  std::string out = "\nNIC Legend:\n";
  for (size_t i = 0; i < paths.nics().size(); ++i) {
    int nic = paths.nics()[i];
    const topo::Node& n = sys.nodes[static_cast<size_t>(nic)];
    out += "  NIC" + std::to_string(i) + ": " + nicName(sys, nic) + " (" + nicSpeed(sys, nic);
    if (!n.pci.busId.empty() && !n.nic.name.empty()) out += ", " + n.pci.busId;
    out += ")\n";
  }
  return out;
}

}  // namespace

std::string formatConnectionMatrix(const System& sys, const topo::PathMatrix& paths) {
  std::string out;
  std::vector<Device> devs = devicesOf(paths);
  if (paths.gpus().empty()) {
    out += formatNoGpus(sys, paths);
    devs.clear();
  }
  if (devs.empty()) return out + formatNicList(sys, paths);
  out += formatDeviceMatrix(sys, paths, devs);
  out += "\n";
  out += kLegend;
  out += formatNicLegend(sys, paths);
  return out;
}

std::string formatRouteMatrix(const System& sys, const topo::PathMatrix& paths, topo::P2pLevel level) {
  (void)sys;
  const std::vector<int>& gpus = paths.gpus();
  if (gpus.empty()) return "No GPUs: host-memory ranks on one host use shared memory.\n";
  std::string out = std::string("Route between the GPUs (one rank each) at P2P level ") + topo::p2pLevelName(level) +
                    ": p2p = peer access, staged = through host memory\n";
  const size_t width = 8;
  out += pad("", 8);
  for (size_t i = 0; i < gpus.size(); ++i) out += pad("GPU" + std::to_string(i), width);
  while (out.back() == ' ') out.pop_back();
  out += "\n";
  std::vector<std::string> reasons;  // each distinct reason once, in order of appearance
  for (size_t i = 0; i < gpus.size(); ++i) {
    std::string line = pad("GPU" + std::to_string(i), 8);
    for (size_t j = 0; j < gpus.size(); ++j) {
      if (i == j) {
        line += pad("X", width);
        continue;
      }
      topo::RouteEnd a{static_cast<int>(i), 0, gpus[i]}, b{static_cast<int>(j), 0, gpus[j]};
      topo::Route r = topo::route(a, b, &paths.at(gpus[i], gpus[j]), level);
      line += pad(topo::routeKindName(r.kind), width);
      std::string why = std::string(topo::routeKindName(r.kind)) + ": " + r.reason;
      if (std::find(reasons.begin(), reasons.end(), why) == reasons.end()) reasons.push_back(why);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  for (const std::string& why : reasons) out += "  " + why + "\n";
  return out;
}

std::string formatBandwidthMatrix(const System& sys, const topo::PathMatrix& paths) {
  (void)sys;
  std::vector<Device> devs = devicesOf(paths);
  if (paths.gpus().empty()) return "No GPUs: no GPU bandwidth matrix.\n";
  std::string out = "Bandwidth of each path's bottleneck link, GB/s per direction:\n";
  const size_t width = 8;
  out += pad("", 8);
  for (const Device& d : devs) out += pad(d.label, width);
  while (out.back() == ' ') out.pop_back();
  out += "\n";
  char cell[32];
  for (const Device& a : devs) {
    std::string line = pad(a.label, 8);
    for (const Device& b : devs) {
      const topo::Path& p = paths.at(a.node, b.node);
      if (a.node == b.node) {
        std::snprintf(cell, sizeof(cell), "-");
      } else if (p.type == topo::PathType::kDis) {
        std::snprintf(cell, sizeof(cell), "none");
      } else {
        std::snprintf(cell, sizeof(cell), "%.1f", p.bwGBs);
      }
      line += pad(cell, width);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

namespace {

// "3 -> 1 5" per interior rank, breadth first from the root.
std::string treeEdges(const topo::Tree& t) {
  std::string out;
  std::vector<int> queue{t.root};
  for (size_t i = 0; i < queue.size(); ++i) {
    int r = queue[i];
    const std::array<int, 2>& kids = t.children[static_cast<size_t>(r)];
    if (kids[0] < 0 && kids[1] < 0) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(r) + "->";
    for (int k : kids) {
      if (k < 0) continue;
      out += (out.back() == '>' ? "" : "/") + std::to_string(k);
      queue.push_back(k);
    }
  }
  return out.empty() ? "(single rank)" : out;
}

}  // namespace

std::string formatRingsAndTrees(const topo::SearchResult& result) {
  std::string out;
  char text[160];
  std::snprintf(text, sizeof(text), "%d ranks on %d node%s", result.nRanks, result.nNodes,
                result.nNodes == 1 ? "" : "s");
  out += text + (result.method.empty() ? "" : "; node rings by " + result.method) + "\n";
  if (result.nRanks == 0) return out + "  (no GPUs: no rings or trees)\n";
  for (size_t c = 0; c < result.rings.size(); ++c) {
    const topo::Ring& r = result.rings[c];
    std::string line = "  ring " + std::to_string(c) + ":";
    for (int rank : r.ranks) line += " " + std::to_string(rank);
    std::snprintf(text, sizeof(text), " (bottleneck %.1f GB/s)\n", r.bwGBs);
    out += line + text;
  }
  std::snprintf(text, sizeof(text), "  rings together: %.1f GB/s\n", result.ringBwGBs());
  out += text;
  for (size_t t = 0; t < result.trees.size(); ++t) {
    const topo::TreePair& p = result.trees[t];
    std::snprintf(text, sizeof(text), "  tree pair %zu: all-reduce %.1f GB/s, broadcast %.1f, reduce %.1f\n", t,
                  p.bwGBs, p.bcastBwGBs, p.reduceBwGBs);
    out += text;
    for (int k = 0; k < 2; ++k) {
      const topo::Tree& tree = p.trees[static_cast<size_t>(k)];
      std::snprintf(text, sizeof(text), "    tree %zu%c: root %d, depth %d: ", t, k == 0 ? 'a' : 'b', tree.root,
                    tree.depth);
      out += text + treeEdges(tree) + "\n";
    }
  }
  std::snprintf(text, sizeof(text), "  trees together: %.1f GB/s (all-reduce)\n", result.treeBwGBs());
  out += text;
  return out;
}

const std::vector<int64_t>& predictionSizes() {
  static const std::vector<int64_t> sizes{8, 64 << 10, 1 << 20, 16 << 20, 256 << 20, int64_t{1} << 30};
  return sizes;
}

std::string formatBytes(int64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

std::string formatPredictions(const topo::Cluster& cluster, const topo::SearchResult& result) {
  if (result.nRanks < 1) return "No GPUs: no predictions.\n";
  // Every scheduled collective (sendrecv is the user's own calls), from the traits table.
  std::vector<coll::CollKind> kinds;
  for (const coll::CollTraits& t : coll::kCollTraits) {
    if (t.scheduled) kinds.push_back(t.kind);
  }
  const size_t width = 22;
  std::string out = "Predicted bus bandwidth, GB/s (algorithm/protocol x channels the tuner picks), " +
                    std::to_string(result.nRanks) + " ranks:\n";
  out += pad("size", 9);
  for (coll::CollKind c : kinds) out += pad(coll::collName(c), width);
  while (out.back() == ' ') out.pop_back();
  out += "\n";
  char cell[64];
  for (int64_t bytes : predictionSizes()) {
    std::string line = pad(formatBytes(bytes), 9);
    for (coll::CollKind c : kinds) {
      topo::Prediction p = topo::predictBest(cluster, result, c, bytes);
      std::snprintf(cell, sizeof(cell), p.busBwGBs < 10 ? "%.2f %s/%s x%d" : "%.1f %s/%s x%d", p.busBwGBs,
                    topo::algoLabel(p.algorithm), topo::protocolName(p.protocol), p.channels);
      line += pad(cell, width);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

namespace {

// `text` as lines of at most `width` columns, each after `indent` spaces (the first line's
// indent is the caller's), broken at spaces.
std::string wrapAt(const std::string& text, size_t indent, size_t width) {
  std::string out, line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  return out + line + "\n";
}

}  // namespace

std::string scheduleHelp() {
  constexpr size_t kIndent = 30, kWidth = 100;
  std::string colls;
  for (const coll::CollTraits& t : coll::kCollTraits) {
    if (t.scheduled) colls += std::string(colls.empty() ? "" : " ") + t.name;
  }
  return "  --schedule COLL             " +
         wrapAt("print the schedule every rank runs for a collective and check it with the reference "
                "interpreter. COLL: " + colls,
                kIndent, kWidth) +
         "      -n, --nranks N          ranks (8)\n"
         "      --algo ALGO             " +
         wrapAt("per collective: " + coll::supportedAlgorithms(), kIndent, kWidth);
}

}  // namespace tools
}  // namespace weft
