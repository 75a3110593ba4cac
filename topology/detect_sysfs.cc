// The sysfs source: what hwloc does not give (PCIe link speed and width, each device's NUMA
// node, NIC ports and their speed), and the whole CPU/NUMA/PCI picture when hwloc cannot run.
// Every reader takes the file-system root, so tests point it at a fake tree
// (tests/fixtures/sysfs/); the layout read is the kernel's:
//   /sys/devices/system/node/node<N>/cpulist
//   /sys/bus/pci/devices/<bdf> -> ../../../devices/pci<dom>:<bus>/<bdf>[/<bdf>...]
//       {class, vendor, device, subsystem_*, current_link_*, max_link_*, numa_node, local_cpulist}
//   /sys/class/infiniband/<dev>/{device, node_guid, ports/<n>/{rate, state}}
//   /sys/class/net/<if>/{device, speed, operstate, dev_port}
//   /proc/cpuinfo
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "topology/detect_sources.h"

namespace weft {
namespace topo {
namespace detect {

namespace fs = std::filesystem;

bool readTextFile(const std::string& path, std::string* text) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream buf;
  buf << in.rdbuf();
  // A sysfs attribute that cannot be read (e.g. a link-down interface's speed) opens but
  // fails on read: the stream then has its bad or fail bit set.
  if (in.bad()) return false;
  std::string s = buf.str();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t first = 0;
  while (first < s.size() && std::isspace(static_cast<unsigned char>(s[first]))) ++first;
  *text = s.substr(first);
  return true;
}

namespace {

bool readHex(const std::string& path, uint32_t* value) {
  std::string text;
  if (!readTextFile(path, &text) || text.empty()) return false;
  char* end = nullptr;
  unsigned long v = std::strtoul(text.c_str(), &end, 16);
  if (end == text.c_str()) return false;
  *value = static_cast<uint32_t>(v);
  return true;
}

bool readInt(const std::string& path, long* value) {
  std::string text;
  if (!readTextFile(path, &text) || text.empty()) return false;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str()) return false;
  *value = v;
  return true;
}

std::vector<std::string> listDir(const std::string& path) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

}  // namespace

bool parseCpuList(const std::string& text, std::vector<int>* cpus) {
  cpus->clear();
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.empty()) continue;
    int a = 0, b = 0;
    char tail = 0;
    if (std::sscanf(part.c_str(), "%d-%d%c", &a, &b, &tail) == 2) {
    } else if (std::sscanf(part.c_str(), "%d%c", &a, &tail) == 1) {
      b = a;
    } else {
      return false;
    }
    if (a < 0 || b < a || b > (1 << 20)) return false;
    for (int c = a; c <= b; ++c) cpus->push_back(c);
  }
  std::sort(cpus->begin(), cpus->end());
  cpus->erase(std::unique(cpus->begin(), cpus->end()), cpus->end());
  return true;
}

std::string cpusToAffinity(const std::vector<int>& cpus) {
  if (cpus.empty()) return "";
  int top = *std::max_element(cpus.begin(), cpus.end());
  std::vector<uint32_t> words(static_cast<size_t>(top / 32 + 1), 0);
  for (int c : cpus) {
    if (c >= 0) words[static_cast<size_t>(c / 32)] |= 1u << (c % 32);
  }
  std::string out;
  for (size_t i = words.size(); i-- > 0;) {
    char word[16];
    std::snprintf(word, sizeof(word), "%08x", words[i]);
    if (!out.empty()) out += ',';
    out += word;
  }
  return out;
}

double parseLinkSpeedGTs(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || v <= 0) return 0;
  return v;
}

double parseIbRateMbps(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || v <= 0) return 0;
  std::string unit(end);
  if (unit.find("Gb/sec") != std::string::npos || unit.find("Gb/s") != std::string::npos) return v * 1000.0;
  if (unit.find("Mb/sec") != std::string::npos || unit.find("Mb/s") != std::string::npos) return v;
  return 0;
}

bool isPciDirName(const std::string& name) {
  if (name.size() != 12) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (i == 4 || i == 7) {
      if (c != ':') return false;
    } else if (i == 10) {
      if (c != '.') return false;
    } else if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}

std::string pciFunctionOfSysfsLink(const std::string& linkPath) {
  std::error_code ec;
  fs::path real = fs::canonical(linkPath, ec);
  if (ec) return "";
  for (fs::path p = real; !p.empty() && p != p.root_path(); p = p.parent_path()) {
    std::string name = p.filename().string();
    if (isPciDirName(name)) return normaliseBusId(name);
  }
  return "";
}

bool isImportantPciClass(uint32_t pciClass24) {
  uint32_t base = pciClass24 >> 16;
  uint32_t cls16 = pciClass24 >> 8;
  switch (base) {
    case 0x00:  // unclassified (some interconnect adapters)
    case 0x01:  // storage
    case 0x02:  // network
    case 0x03:  // display (NVIDIA and AMD GPUs)
    case 0x0b:  // processors
    case 0x12:  // processing accelerators (AMD Instinct)
      return true;
    default:
      break;
  }
  // Fibre channel, InfiniBand, CXL memory.
  return cls16 == 0x0c04 || cls16 == 0x0c06 || cls16 == 0x0502;
}

bool readSysfsNuma(const std::string& root, std::vector<NumaDomain>* out) {
  out->clear();
  std::string dir = root + "/sys/devices/system/node";
  if (!exists(dir)) return false;
  for (const std::string& name : listDir(dir)) {
    int id = -1;
    char tail = 0;
    if (std::sscanf(name.c_str(), "node%d%c", &id, &tail) != 1) continue;
    std::string text;
    NumaDomain d;
    d.id = id;
    if (!readTextFile(dir + "/" + name + "/cpulist", &text) || !parseCpuList(text, &d.cpus)) {
      WEFT_LOG(kTrace, kGraph, "sysfs: NUMA node %d: unreadable cpulist", id);
      continue;
    }
    // Memory-only nodes (HBM, CXL, a Grace Hopper GPU's memory) have no CPUs: not a CPU node.
    if (d.cpus.empty()) continue;
    out->push_back(d);
  }
  std::sort(out->begin(), out->end(), [](const NumaDomain& a, const NumaDomain& b) { return a.id < b.id; });
  return !out->empty();
}

bool readProcCpuinfo(const std::string& root, CpuIdentity* out) {
  std::ifstream in(root + "/proc/cpuinfo");
  if (!in) return false;
  std::string line;
  bool any = false;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
    std::string value = line.substr(colon + 1);
    size_t first = value.find_first_not_of(" \t");
    value = first == std::string::npos ? "" : value.substr(first);
    if (key == "vendor_id" && out->vendor.empty()) {
      out->vendor = value;
      any = true;
    } else if (key == "cpu family" && out->familyId < 0) {
      out->familyId = std::atoi(value.c_str());
      any = true;
    } else if (key == "model" && out->modelId < 0 && !value.empty() &&
               std::isdigit(static_cast<unsigned char>(value[0]))) {
      out->modelId = std::atoi(value.c_str());
      any = true;
    }
  }
  return any;
}

bool readSysfsPci(const std::string& root, std::vector<PciFunction>* out) {
  out->clear();
  std::string dir = root + "/sys/bus/pci/devices";
  if (!exists(dir)) return false;
  for (const std::string& name : listDir(dir)) {
    if (!isPciDirName(name)) continue;
    std::string path = dir + "/" + name;
    PciFunction f;
    f.busId = normaliseBusId(name);
    // The directory above a function is its bridge's, or "pci<domain>:<bus>" (a host bridge).
    std::error_code ec;
    fs::path real = fs::canonical(path, ec);
    if (!ec) {
      std::string parent = real.parent_path().filename().string();
      if (isPciDirName(parent)) f.parentBusId = normaliseBusId(parent);
    }
    readHex(path + "/class", &f.pciClass);
    readHex(path + "/vendor", &f.vendor);
    readHex(path + "/device", &f.device);
    readHex(path + "/subsystem_vendor", &f.subsystemVendor);
    readHex(path + "/subsystem_device", &f.subsystemDevice);
    std::string text;
    if (readTextFile(path + "/current_link_speed", &text)) f.linkSpeedGTs = parseLinkSpeedGTs(text);
    if (readTextFile(path + "/max_link_speed", &text)) f.maxLinkSpeedGTs = parseLinkSpeedGTs(text);
    long v = 0;
    if (readInt(path + "/current_link_width", &v) && v > 0 && v <= 32) f.linkWidth = static_cast<int>(v);
    if (readInt(path + "/max_link_width", &v) && v > 0 && v <= 32) f.maxLinkWidth = static_cast<int>(v);
    if (readInt(path + "/numa_node", &v) && v >= 0) f.numaNode = static_cast<int>(v);
    if (readTextFile(path + "/local_cpulist", &text)) parseCpuList(text, &f.localCpus);
    if (readTextFile(path + "/product_name", &text)) f.productName = text;
    out->push_back(f);
  }
  return true;
}

namespace {

// RDMA devices: one entry per port.
void readRdmaPorts(const std::string& root, std::vector<NetPort>* out, std::vector<std::string>* notes) {
  std::string ibDir = root + "/sys/class/infiniband";
  for (const std::string& dev : listDir(ibDir)) {
    std::string path = ibDir + "/" + dev;
    std::string busId = pciFunctionOfSysfsLink(path + "/device");
    if (busId.empty()) {
      // Soft RDMA (rxe, siw) rides on a netdev that is listed on its own.
      WEFT_LOG(kTrace, kGraph, "sysfs: RDMA device %s has no PCI function; skipped", dev.c_str());
      continue;
    }
    uint64_t guid = 0;
    std::string text;
    if (readTextFile(path + "/node_guid", &text)) {
      text.erase(std::remove(text.begin(), text.end(), ':'), text.end());
      guid = std::strtoull(text.c_str(), nullptr, 16);
    }
    for (const std::string& portName : listDir(path + "/ports")) {
      int port = std::atoi(portName.c_str());
      if (port <= 0) continue;
      NetPort p;
      p.name = dev;
      p.kind = PortKind::kRdma;
      p.busId = busId;
      p.port = port;
      p.guid = guid;
      std::string portDir = path + "/ports/" + portName;
      if (readTextFile(portDir + "/rate", &text)) p.speedMbps = parseIbRateMbps(text);
      if (p.speedMbps <= 0 && notes) notes->push_back(dev + " port " + portName + ": rate unreadable");
      if (readTextFile(portDir + "/state", &text)) p.up = text.find("ACTIVE") != std::string::npos;
      out->push_back(p);
    }
  }
}

// Netdevs with a device behind them (loopback, bridges, veth, tunnels have none); an RDMA
// port's own netdev is recorded on that port instead of as a port of its own.
void readNetdevPorts(const std::string& root, std::vector<NetPort>* out) {
  std::string netDir = root + "/sys/class/net";
  for (const std::string& name : listDir(netDir)) {
    if (name == "lo") continue;
    std::string path = netDir + "/" + name;
    if (!exists(path + "/device")) continue;
    NetPort p;
    p.name = name;
    p.kind = PortKind::kEthernet;
    p.busId = pciFunctionOfSysfsLink(path + "/device");
    long v = 0;
    if (readInt(path + "/dev_port", &v) && v >= 0) p.port = static_cast<int>(v) + 1;
    // The speed of a link that is down (and of most virtual NICs) reads -1 or fails.
    if (readInt(path + "/speed", &v) && v > 0) p.speedMbps = static_cast<double>(v);
    std::string text;
    if (readTextFile(path + "/operstate", &text)) p.up = text == "up";
    if (p.busId.empty() && readInt(path + "/device/numa_node", &v) && v >= 0) p.numaNode = static_cast<int>(v);

    // An RDMA port's own netdev (ib0 of mlx5_0, the RoCE eth of a ConnectX) is that port.
    NetPort* owner = nullptr;
    int rdmaOnFunction = 0;
    for (NetPort& q : *out) {
      if (q.kind != PortKind::kRdma || p.busId.empty() || q.busId != p.busId) continue;
      ++rdmaOnFunction;
      if (q.port == p.port || owner == nullptr) owner = &q;
    }
    if (owner != nullptr && (rdmaOnFunction == 1 || owner->port == p.port)) {
      owner->netdevs.push_back(name);
      continue;
    }
    out->push_back(p);
  }
}

}  // namespace

void readSysfsNetPorts(const std::string& root, std::vector<NetPort>* out, std::vector<std::string>* notes) {
  out->clear();
  readRdmaPorts(root, out, notes);
  readNetdevPorts(root, out);
}

DetectSourceResult readSysfs(const std::string& root, Inventory* inv) {
  DetectSourceResult r;
  r.name = "sysfs";
  if (!exists(root + "/sys")) {
    r.state = SourceState::kAbsent;
    r.detail = root + "/sys is not there (not Linux, or /sys not mounted in this container)";
    return r;
  }
  bool numa = readSysfsNuma(root, &inv->numa);
  readProcCpuinfo(root, &inv->cpu);
  bool pci = readSysfsPci(root, &inv->pci);
  std::vector<std::string> notes;
  readSysfsNetPorts(root, &inv->ports, &notes);
  if (!numa && !pci && inv->ports.empty()) {
    r.state = SourceState::kFailed;
    r.detail = "nothing readable under " + root + "/sys/devices/system/node, /sys/bus/pci/devices or /sys/class/net";
    return r;
  }
  r.state = SourceState::kUsed;
  char text[160];
  std::snprintf(text, sizeof(text), "%zu NUMA node(s), %zu PCI function(s), %zu network port(s)", inv->numa.size(),
                inv->pci.size(), inv->ports.size());
  r.detail = text;
  for (const std::string& n : notes) r.detail += "; " + n;
  return r;
}

}  // namespace detect
}  // namespace topo
}  // namespace weft
