// Writing topology files: System -> NCCL/RCCL XML (what topo_file.cc reads back) and JSON.
// weft-topo --dump and WEFT_TOPO_DUMP_FILE call these.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "base/log.h"
#include "topology/link_bw.h"
#include "topology/topo_file.h"
#include "topology/topo_file_classes.h"
#include "topology/topo_file_values.h"
#include "topology/xml.h"

namespace weft {
namespace topo {
namespace {

constexpr int kMaxWriteDepth = 256;  // bounds the recursion; the reader refuses more than 64 levels anyway

// The shortest text that reads back as the same number ("400000", "370.8").
std::string realText(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[64];
  double mag = std::fabs(v);
  bool plain = v == 0 || (mag >= 1e-4 && mag < 1e15);  // no exponent where people read the number
  auto r = plain ? std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed)
                 : std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

// A PCIe link speed as sysfs and NCCL write it: "32.0", "2.5" (one decimal when that is exact).
std::string gtsText(double v) {
  if (v * 10 != std::floor(v * 10) || v > 1e6) return realText(v);
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed, 1);
  return std::string(buf, r.ptr);
}

std::string hexText(uint64_t v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

bool nicInfoIsDefault(const NicInfo& n) {
  return n.name.empty() && n.dev < 0 && n.port == 1 && n.speedMbps == 0 && n.latencyUs == 0 && n.guid == 0 &&
         n.maxConn == 0 && !n.gdr;
}

class XmlWriter {
 public:
  XmlWriter(const System& sys, int version) : sys_(sys), version_(version >= 2 ? 2 : 1), tree_(pciTree(sys)) {
    size_t n = sys.nodes.size();
    children_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (tree_.parent[i] >= 0) children_[static_cast<size_t>(tree_.parent[i])].push_back(static_cast<int>(i));
    }
    written_.assign(n, false);
    incident_.resize(n);
    for (size_t li = 0; li < sys.links.size(); ++li) {
      const Link& l = sys.links[li];
      if (l.from < 0 || l.to < 0 || static_cast<size_t>(l.from) >= n || static_cast<size_t>(l.to) >= n) continue;
      incident_[static_cast<size_t>(l.from)].push_back(static_cast<int>(li));
      if (l.to != l.from) incident_[static_cast<size_t>(l.to)].push_back(static_cast<int>(li));
    }
    isTreeLink_.assign(sys.links.size(), false);
    for (int l : tree_.parentLink) {
      if (l >= 0) isTreeLink_[static_cast<size_t>(l)] = true;
    }
  }

  std::string write() {
    out_ = "<system version=\"" + std::to_string(version_) + "\">\n";
    for (size_t i = 0; i < sys_.nodes.size(); ++i) {
      if (sys_.nodes[i].type == NodeType::kCpu) writeCpu(static_cast<int>(i));
    }
    // Devices no CPU reaches (NCCL ignores these; Weft's reader keeps them).
    std::vector<int> roots;
    for (size_t i = 0; i < sys_.nodes.size(); ++i) {
      if (sys_.nodes[i].type != NodeType::kCpu && tree_.parent[i] < 0 && !impliedByTargets(static_cast<int>(i))) {
        roots.push_back(static_cast<int>(i));
      }
    }
    writeChildren(roots, 1, -1);
    out_ += "</system>\n";
    return out_;
  }

 private:
  void indent(int depth) { out_.append(static_cast<size_t>(depth) * 2, ' '); }
  void attr(const char* name, const std::string& value) {
    out_ += ' ';
    out_ += name;
    out_ += "=\"";
    out_ += xmlEscape(value);
    out_ += '"';
  }
  void attrInt(const char* name, long long v) { attr(name, std::to_string(v)); }

  const Node& node(int i) const { return sys_.nodes[static_cast<size_t>(i)]; }

  // An NVSwitch that only NVLink targets describe: the reader remakes it from them (one
  // without a bus id from NCCL's placeholder target).
  bool impliedByTargets(int i) const {
    const Node& n = node(i);
    if (n.type != NodeType::kNvSwitch || !children_[static_cast<size_t>(i)].empty()) return false;
    if ((n.pci.pciClass != 0 && n.pci.pciClass != kPciClassNvSwitch) || n.pci.vendor != 0 || n.pci.device != 0 ||
        n.pci.subsystemVendor != 0 || n.pci.subsystemDevice != 0 || n.pci.linkSpeedGTs != 0 || n.pci.linkWidth != 0) {
      return false;
    }
    for (int li : incident_[static_cast<size_t>(i)]) {
      const Link& l = sys_.links[static_cast<size_t>(li)];
      if (l.type == LinkType::kNvLink && node(l.from == i ? l.to : l.from).type == NodeType::kGpu) return true;
    }
    return false;
  }

  void writeCpu(int i) {
    const CpuInfo& c = node(i).cpu;
    indent(1);
    out_ += "<cpu";
    if (c.numaId >= 0) attrInt("numaid", c.numaId);
    if (!c.affinity.empty()) attr("affinity", c.affinity);
    if (!c.arch.empty()) attr("arch", c.arch);
    if (!c.vendor.empty()) attr("vendor", c.vendor);
    if (c.familyId >= 0) attrInt("familyid", c.familyId);
    if (c.modelId >= 0) attrInt("modelid", c.modelId);
    if (c.hostHash != 0) attr("host_hash", hexText(c.hostHash, 1));
    const std::vector<int>& kids = children_[static_cast<size_t>(i)];
    if (kids.empty()) {
      out_ += "/>\n";
      return;
    }
    out_ += ">\n";
    writeChildren(kids, 2, i);
    indent(1);
    out_ += "</cpu>\n";
  }

  // `cls` is the class written: the node's own, unless the reader would take that for another
  // kind of node (see classToWrite).
  void writePciAttrs(const PciInfo& p, uint32_t cls) {
    if (!p.busId.empty()) attr("busid", p.busId);
    if (cls != 0) attr("class", hexText(cls, 6));
    if (p.vendor != 0) attr("vendor", hexText(p.vendor, 4));
    if (p.device != 0) attr("device", hexText(p.device, 4));
    if (p.subsystemVendor != 0) attr("subsystem_vendor", hexText(p.subsystemVendor, 4));
    if (p.subsystemDevice != 0) attr("subsystem_device", hexText(p.subsystemDevice, 4));
    if (p.linkSpeedGTs > 0) attr("link_speed", gtsText(p.linkSpeedGTs) + " GT/s PCIe");
    if (p.linkWidth > 0) attrInt("link_width", p.linkWidth);
  }

  void writeNet(const NicInfo& n, int depth) {
    indent(depth);
    out_ += "<net";
    if (!n.name.empty()) attr("name", n.name);
    if (n.dev >= 0) attrInt("dev", n.dev);
    if (n.speedMbps > 0) attr("speed", realText(n.speedMbps));
    attrInt("port", n.port);
    if (n.latencyUs > 0) attr("latency", realText(n.latencyUs));
    if (n.guid != 0) attr("guid", hexText(n.guid, 1));
    if (n.maxConn > 0) attrInt("maxconn", n.maxConn);
    attrInt("gdr", n.gdr ? 1 : 0);
    out_ += "/>\n";
  }

  void writeNicGroup(const std::vector<int>& nics, int depth) {
    indent(depth);
    out_ += "<nic>\n";
    for (int i : nics) writeNet(node(i).nic, depth + 1);
    indent(depth);
    out_ += "</nic>\n";
  }

  // Devices under one parent (-1: under <system>), in node order. NICs without a bus id or
  // class share one <nic> (a bare <nic> where the reader takes it as hanging under the parent,
  // else inside a <pci> of no attributes); NICs with the same bus id (ports of one adapter)
  // share one <pci>.
  void writeChildren(const std::vector<int>& kids, int depth, int parent) {
    std::vector<int> bare;
    std::map<std::string, std::vector<int>> ports;  // NICs by bus id
    for (int k : kids) {
      const Node& n = node(k);
      if (n.type != NodeType::kNic) continue;
      if (n.pci.busId.empty() && n.pci.pciClass == 0)
        bare.push_back(k);
      else if (!n.pci.busId.empty())
        ports[n.pci.busId].push_back(k);
    }
    for (int k : kids) {
      if (written_[static_cast<size_t>(k)]) continue;
      const Node& n = node(k);
      if (n.type == NodeType::kNic && n.pci.busId.empty() && n.pci.pciClass == 0) {
        bool direct = parent < 0 || node(parent).type == NodeType::kCpu || node(parent).type == NodeType::kPciBridge;
        for (int b : bare) direct = direct && children_[static_cast<size_t>(b)].empty();
        if (direct) {
          for (int b : bare) written_[static_cast<size_t>(b)] = true;
          writeNicGroup(bare, depth);
        } else {
          writeDevice(bare, depth);
        }
        continue;
      }
      if (n.type == NodeType::kNic && !n.pci.busId.empty()) {
        writeDevice(ports[n.pci.busId], depth);  // k is its first
      } else {
        writeDevice({k}, depth);
      }
    }
  }

  // A GPU's <c2c>, <nvlink> and <xgmi> children, sorted by kind and target so that the text
  // does not depend on the order the links were found in.
  void writeGpuLinks(int gpu, int depth) {
    std::vector<std::pair<std::string, std::string>> lines;  // (sort key, element)
    for (int li : incident_[static_cast<size_t>(gpu)]) {
      const Link& l = sys_.links[static_cast<size_t>(li)];
      int other = l.from == gpu ? l.to : l.from;
      if (other == gpu) continue;
      const Node& o = node(other);
      std::string saved;
      saved.swap(out_);
      if (l.type == LinkType::kC2c && o.type == NodeType::kCpu) {
        out_ += "<c2c";
        attrInt("count", l.count);
        double perLinkMBs = l.count > 0 ? l.bwGBs * 1000.0 / l.count : bw::kC2cPerLink * 1000.0;
        attr("bw", realText(perLinkMBs));
        out_ += "/>\n";
      } else {
        bool nvlink = l.type == LinkType::kNvLink && (o.type == NodeType::kGpu || o.type == NodeType::kNvSwitch);
        bool xgmi = l.type == LinkType::kXgmi && o.type == NodeType::kGpu && version_ >= 2;
        // A switch without a bus id is named as NCCL names a switch it cannot identify.
        bool placeholder = nvlink && o.type == NodeType::kNvSwitch && o.pci.busId.empty() &&
                           tree_.parent[static_cast<size_t>(other)] < 0 && impliedByTargets(other);
        if ((nvlink || xgmi) && (!o.pci.busId.empty() || placeholder)) {
          out_ += nvlink ? "<nvlink" : "<xgmi";
          attr("target", placeholder ? kNvSwitchPlaceholder : o.pci.busId);
          attrInt("count", l.count);
          uint32_t tclass = o.type == NodeType::kNvSwitch ? kPciClassNvSwitch : o.pci.pciClass;
          if (tclass != 0) attr("tclass", hexText(tclass, 6));
          out_ += "/>\n";
        }
      }
      saved.swap(out_);
      if (!saved.empty()) lines.push_back({std::to_string(static_cast<int>(l.type)) + o.pci.busId + saved, saved});
    }
    writeSorted(&lines, depth);
  }

  void writeSorted(std::vector<std::pair<std::string, std::string>>* lines, int depth) {
    std::sort(lines->begin(), lines->end());
    for (const auto& line : *lines) {
      indent(depth);
      out_ += line.second;
    }
  }

  // Extra PCIe links (not in the tree) from this node to another PCI function.
  void writePciLinks(int i, int depth) {
    std::vector<std::pair<std::string, std::string>> lines;
    for (int li : incident_[static_cast<size_t>(i)]) {
      const Link& l = sys_.links[static_cast<size_t>(li)];
      if (l.type != LinkType::kPcie || isTreeLink_[static_cast<size_t>(li)] || l.from != i || l.to == i) continue;
      if (node(l.to).type == NodeType::kCpu) continue;
      const std::string& target = node(l.to).pci.busId;
      if (target.empty()) continue;
      lines.push_back({target, "<pcilink target=\"" + xmlEscape(target) + "\"/>\n"});
    }
    writeSorted(&lines, depth);
  }

  // The reader decides what a <pci> is by its children, then its class. Where the node's own
  // class would make it read back as something else, the class of its kind is written instead.
  uint32_t classToWrite(int i, const std::vector<int>& kids) const {
    const Node& n = node(i);
    uint32_t cls = n.pci.pciClass;
    if (n.type == NodeType::kNvSwitch) return kPciClassNvSwitch;
    if (n.type != NodeType::kPciBridge || isBridgeClass(cls)) return cls;
    bool bareNics = false;
    for (int k : kids)
      bareNics = bareNics || (node(k).type == NodeType::kNic && node(k).pci.busId.empty() && node(k).pci.pciClass == 0);
    return bareNics || isGpuClass(cls) || isNetworkClass(cls) || isNvSwitchClass(cls) ? kPciClassBridge : cls;
  }

  // The <gpu> inside GPU i's <pci> at depth, with its NVLink/xGMI links; nothing when the
  // GPU has nothing to say and its <pci> class tells it is a GPU.
  void writeGpu(int i, int depth) {
    const Node& n = node(i);
    size_t gpuStart = out_.size();
    indent(depth);
    out_ += "<gpu";
    size_t attrsStart = out_.size();
    const GpuInfo& g = n.gpu;
    if (g.dev >= 0) attrInt("dev", g.dev);
    if (g.sm > 0) attrInt("sm", g.sm);
    // What is written depends on the text alone, so that writing what was read back gives
    // the same file: a gfx name is RCCL's gcn (not in NCCL's dialect); sm_90 is implied by
    // sm="90"; another name goes in arch (RCCL's own numeric arch is not kept).
    if (startsWithNoCase(g.arch, "gfx")) {
      if (version_ >= 2) attr("gcn", g.arch);
    } else if (!isArchNumber(g.arch) && g.arch != "sm_" + std::to_string(g.sm)) {
      attr("arch", g.arch);
    }
    if (g.rank >= 0) attrInt("rank", g.rank);
    // Nothing to say about the GPU (a skeleton's, or what this dialect cannot express): the
    // <pci> of a GPU class alone, as cloud images write it.
    bool placeholder = out_.size() == attrsStart && !g.gdr && isGpuClass(n.pci.pciClass);
    attrInt("gdr", g.gdr ? 1 : 0);
    out_ += ">\n";
    size_t linksStart = out_.size();
    writeGpuLinks(i, depth + 1);
    if (out_.size() == linksStart) {
      out_.resize(linksStart - 2);
      out_ += "/>\n";
      if (placeholder) out_.resize(gpuStart);
    } else {
      indent(depth);
      out_ += "</gpu>\n";
    }
  }

  void writeDevice(const std::vector<int>& group, int depth) {
    int i = group[0];
    for (int g : group) written_[static_cast<size_t>(g)] = true;
    const Node& n = node(i);
    std::vector<int> kids;
    for (int g : group) {
      for (int k : children_[static_cast<size_t>(g)]) kids.push_back(k);
    }
    if (depth > kMaxWriteDepth) {
      WEFT_LOG(kWarn, kGraph, "topology writer: %s is nested more than %d levels deep; not written",
               sys_.describe(i).c_str(), kMaxWriteDepth);
      return;
    }
    indent(depth);
    out_ += "<pci";
    writePciAttrs(n.pci, classToWrite(i, kids));
    size_t openEnd = out_.size();
    out_ += ">\n";
    size_t bodyStart = out_.size();
    if (n.type == NodeType::kGpu) {
      writeGpu(i, depth + 1);
    } else if (n.type == NodeType::kNic) {
      bool placeholder = group.size() == 1 && nicInfoIsDefault(n.nic) && isNetworkClass(n.pci.pciClass);
      if (!placeholder) writeNicGroup(group, depth + 1);
    }
    writeChildren(kids, depth + 1, i);
    for (int g : group) writePciLinks(g, depth + 1);
    if (out_.size() == bodyStart) {
      out_.resize(openEnd);
      out_ += "/>\n";
    } else {
      indent(depth);
      out_ += "</pci>\n";
    }
  }

  const System& sys_;
  int version_;
  PciTree tree_;
  std::vector<std::vector<int>> children_;
  std::vector<bool> written_;
  std::vector<bool> isTreeLink_;
  std::vector<std::vector<int>> incident_;  // per node: indices of its links
  std::string out_;
};

// JSON string: quotes, backslash and control characters escaped; bytes that are not UTF-8 as U+FFFD.
void jsonString(const std::string& s, std::string* out) {
  *out += '"';
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      *out += buf;
      ++i;
    } else if (c < 0x80) {
      *out += static_cast<char>(c);
      ++i;
    } else {
      size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
      bool ok = len > 0 && i + len <= s.size();
      for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
      if (ok && len == 3) {
        unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
        ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);  // overlong, surrogate
      } else if (ok && len == 4) {
        unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
        ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
      }
      if (ok) {
        out->append(s, i, len);
        i += len;
      } else {
        *out += "\\ufffd";
        ++i;
      }
    }
  }
  *out += '"';
}

class JsonObject {
 public:
  explicit JsonObject(std::string* out) : out_(out) { *out_ += '{'; }
  void key(const char* k) {
    if (!first_) *out_ += ", ";
    first_ = false;
    jsonString(k, out_);
    *out_ += ": ";
  }
  void str(const char* k, const std::string& v) {
    key(k);
    jsonString(v, out_);
  }
  void num(const char* k, long long v) {
    key(k);
    *out_ += std::to_string(v);
  }
  void real(const char* k, double v) {
    key(k);
    *out_ += std::isfinite(v) ? realText(v) : "null";
  }
  void boolean(const char* k, bool v) {
    key(k);
    *out_ += v ? "true" : "false";
  }
  void close() { *out_ += '}'; }

 private:
  std::string* out_;
  bool first_ = true;
};

const char* gpuVendorName(GpuVendor v) {
  switch (v) {
    case GpuVendor::kNvidia:
      return "nvidia";
    case GpuVendor::kAmd:
      return "amd";
    case GpuVendor::kUnknown:
      break;
  }
  return "unknown";
}

void jsonNode(const Node& n, int id, std::string* out) {
  JsonObject o(out);
  o.num("id", id);
  o.str("type", nodeTypeName(n.type));
  if (n.type == NodeType::kCpu) {
    o.num("numaid", n.cpu.numaId);
    o.str("affinity", n.cpu.affinity);
    o.str("arch", n.cpu.arch);
    o.str("vendor", n.cpu.vendor);
    o.num("familyid", n.cpu.familyId);
    o.num("modelid", n.cpu.modelId);
    o.str("host_hash", hexText(n.cpu.hostHash, 1));
    o.close();
    return;
  }
  o.str("busid", n.pci.busId);
  o.str("class", hexText(n.pci.pciClass, 6));
  o.str("vendor", hexText(n.pci.vendor, 4));
  o.str("device", hexText(n.pci.device, 4));
  o.str("subsystem_vendor", hexText(n.pci.subsystemVendor, 4));
  o.str("subsystem_device", hexText(n.pci.subsystemDevice, 4));
  o.real("link_speed_gts", n.pci.linkSpeedGTs);
  o.num("link_width", n.pci.linkWidth);
  if (n.type == NodeType::kGpu) {
    o.str("gpu_vendor", gpuVendorName(n.gpu.vendor));
    o.num("dev", n.gpu.dev);
    o.num("sm", n.gpu.sm);
    o.str("arch", n.gpu.arch);
    o.str("model", n.gpu.model);
    o.num("rank", n.gpu.rank);
    o.boolean("gdr", n.gpu.gdr);
  } else if (n.type == NodeType::kNic) {
    o.str("name", n.nic.name);
    o.num("dev", n.nic.dev);
    o.num("port", n.nic.port);
    o.real("speed_mbps", n.nic.speedMbps);
    o.real("latency_us", n.nic.latencyUs);
    o.str("guid", hexText(n.nic.guid, 1));
    o.num("maxconn", n.nic.maxConn);
    o.boolean("gdr", n.nic.gdr);
  }
  o.close();
}

}  // namespace

std::string writeTopologyXml(const System& system, int version) { return XmlWriter(system, version).write(); }

std::string writeTopologyJson(const System& system) {
  std::string out;
  {
    JsonObject top(&out);
    top.num("version", system.version);
    top.str("source", system.source);
    top.key("nodes");
    out += "[";
    for (size_t i = 0; i < system.nodes.size(); ++i) {
      out += i == 0 ? "\n    " : ",\n    ";
      jsonNode(system.nodes[i], static_cast<int>(i), &out);
    }
    out += "\n  ]";
    top.key("links");
    out += "[";
    for (size_t i = 0; i < system.links.size(); ++i) {
      const Link& l = system.links[i];
      out += i == 0 ? "\n    " : ",\n    ";
      JsonObject o(&out);
      o.num("from", l.from);
      o.num("to", l.to);
      o.str("type", linkTypeName(l.type));
      o.num("count", l.count);
      o.real("bw", l.bwGBs);
      o.close();
    }
    out += "\n  ]";
    top.close();
  }
  out += "\n";
  return out;
}

}  // namespace topo
}  // namespace weft
