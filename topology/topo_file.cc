// Reading topology files: XML elements (xml.cc) -> System. The mapping is documented in
// topo_file.h; attributes are read through topo_file_attrs.h; the writer (topo_file_write.cc)
// emits exactly what this reads back.
#include "topology/topo_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>

#include "base/log.h"
#include "topology/link_bw.h"
#include "topology/topo_file_attrs.h"
#include "topology/topo_file_classes.h"
#include "topology/topo_file_values.h"
#include "topology/xml.h"

namespace weft {
namespace topo {
namespace {

constexpr int kMaxCpus = 256;  // NUMA domains in one node; every pair gets a kSmp link
constexpr int kMaxLinkCount = 1024;

class Builder : private TopoAttrReader {
 public:
  Builder(const std::string& source, System* sys) : TopoAttrReader(source), sys_(sys) {}

  Status build(const XmlElement& root) {
    if (root.name != "system") {
      return fail(root.line, "expected <system version=\"1\"> as the root element, found <%s>",
                  xmlShown(root.name).c_str());
    }
    note(root, {"version"});
    long long version = 1;
    WEFT_TRY(readInt(root, "version", 0, INT_MAX, &version));
    if (version != 1 && version != 2) {
      WEFT_LOG(kInfo, kGraph, "%s: topology file version %lld is not 1 (NCCL) or 2 (RCCL); reading it as version %d",
               where(root.line).c_str(), version, version < 1 ? 1 : 2);
    }
    sys_->version = version < 2 ? 1 : 2;
    for (const XmlElement& child : root.children) {
      if (child.name == "cpu") {
        WEFT_TRY(addCpu(child));
      } else if (child.name == "pci") {
        WEFT_TRY(addPci(child, -1, -1));  // Weft's extension: devices under no CPU
      } else if (child.name == "nic") {
        WEFT_TRY(addNics(child, nullptr, -1, -1));
      } else {
        skipElement(child, root);
      }
    }
    WEFT_TRY(resolvePending());
    addSmpLinks();
    return Status::ok();
  }

 private:
  struct Pending {
    int from;
    LinkType type;
    std::string target;  // normalised bus id; empty for NCCL's NVSwitch placeholder
    uint32_t tclass;
    int count;
    double perLinkGBs;
    int line;
    bool placeholder;  // an NVLink to NCCL's NVSwitch placeholder
  };

  int addNode(const Node& n, int root) {
    int i = sys_->addNode(n);
    nodeRoot_.push_back(n.type == NodeType::kCpu ? i : root);
    return i;
  }

  Status registerBusId(const std::string& busId, int node, int line, int parent) {
    if (busId.empty()) return Status::ok();
    auto it = busIds_.find(busId);
    if (it != busIds_.end()) {
      return fail(line,
                  "bus id %s is already used by the element at line %d; each PCI function appears once (only a "
                  "switch may be listed again, under the same parent)",
                  busId.c_str(), it->second.line);
    }
    busIds_[busId] = {node, line, parent};
    return Status::ok();
  }

  // The switch node an element repeats, or -1. RCCL lists a PCI switch once per device path
  // through it, so <pci> elements with one bus id under one parent are one switch; a GPU or
  // NIC function, or the same bus id under another parent, is not a repeat (and is refused).
  int repeatedSwitch(const XmlElement& e, const PciInfo& info, int parent) const {
    auto it = info.busId.empty() ? busIds_.end() : busIds_.find(info.busId);
    if (it == busIds_.end() || it->second.parent != parent) return -1;
    NodeType type = sys_->nodes[static_cast<size_t>(it->second.node)].type;
    if (type != NodeType::kPciBridge && type != NodeType::kNvSwitch) return -1;
    if (isGpuClass(info.pciClass) || isNetworkClass(info.pciClass)) return -1;
    for (const XmlElement& c : e.children) {
      if (c.name == "gpu" || (c.name == "nic" && !isBridgeClass(info.pciClass))) return -1;
    }
    return it->second.node;
  }

  // One attribute of a repeated switch: what the first element left out, the repeat may add;
  // a value both give differently is an error naming both lines.
  template <typename T>
  Status agree(const XmlElement& e, const std::string& busId, const char* name, T got, T* have) {
    if (got != T{} && *have != T{} && got != *have) {
      return fail(e.line,
                  "<pci busid=\"%s\"> repeats the element at line %d under the same parent but gives %s=%s where "
                  "that one gives %s; make the two elements agree or remove one",
                  busId.c_str(), busIds_[busId].line, name, valueText(got).c_str(), valueText(*have).c_str());
    }
    if (*have == T{}) *have = got;
    return Status::ok();
  }
  static std::string valueText(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "0x%x", v);
    return buf;
  }
  static std::string valueText(int v) { return std::to_string(v); }
  static std::string valueText(double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g GT/s", v);
    return buf;
  }

  // A repeated switch element merged into its node (see repeatedSwitch). The first element
  // decided what the node is: devices under it were placed by that, so a class the repeat adds
  // does not change its type.
  Status mergeRepeat(const XmlElement& e, const PciInfo& info, int node, int parent) {
    PciInfo& p = sys_->nodes[static_cast<size_t>(node)].pci;
    WEFT_TRY(agree(e, info.busId, "class", info.pciClass, &p.pciClass));
    WEFT_TRY(agree(e, info.busId, "vendor", info.vendor, &p.vendor));
    WEFT_TRY(agree(e, info.busId, "device", info.device, &p.device));
    WEFT_TRY(agree(e, info.busId, "subsystem_vendor", info.subsystemVendor, &p.subsystemVendor));
    WEFT_TRY(agree(e, info.busId, "subsystem_device", info.subsystemDevice, &p.subsystemDevice));
    WEFT_TRY(agree(e, info.busId, "link_speed", info.linkSpeedGTs, &p.linkSpeedGTs));
    WEFT_TRY(agree(e, info.busId, "link_width", info.linkWidth, &p.linkWidth));
    // The link to the parent follows the speed and width the repeat may have added.
    auto link = parent < 0 ? links_.end()
                           : links_.find(std::make_tuple(std::min(node, parent), std::max(node, parent),
                                                         static_cast<int>(LinkType::kPcie)));
    if (link != links_.end())
      sys_->links[static_cast<size_t>(link->second)].bwGBs = bw::pcie(p.linkSpeedGTs, p.linkWidth);
    return Status::ok();
  }

  // One Link per unordered pair and type; when both ends list it differently, the larger count.
  void addLinkOnce(int a, int b, LinkType type, int count, double bwGBs, int line) {
    auto key = std::make_tuple(std::min(a, b), std::max(a, b), static_cast<int>(type));
    auto it = links_.find(key);
    if (it == links_.end()) {
      links_[key] = static_cast<int>(sys_->links.size());
      sys_->addLink(a, b, type, count, bwGBs);
      return;
    }
    Link& l = sys_->links[static_cast<size_t>(it->second)];
    if (l.count != count && type != LinkType::kPcie) {
      WEFT_LOG(kWarn, kGraph, "%s: %s between %s and %s listed with %d links here and %d elsewhere; using %d",
               where(line).c_str(), linkTypeName(type), sys_->describe(a).c_str(), sys_->describe(b).c_str(), count,
               l.count, std::max(count, l.count));
      if (count > l.count) {
        l.count = count;
        l.bwGBs = bwGBs;
      }
    }
  }

  Status addCpu(const XmlElement& e) {
    if (++cpus_ > kMaxCpus) return fail(e.line, "more than %d <cpu> elements; refused", kMaxCpus);
    note(e, {"numaid", "affinity", "arch", "vendor", "familyid", "modelid", "host_hash"});
    Node n;
    n.type = NodeType::kCpu;
    WEFT_TRY(readIntAs(e, "numaid", -1, INT_MAX, &n.cpu.numaId));
    WEFT_TRY(readString(e, "affinity", &n.cpu.affinity));
    if (n.cpu.affinity.find_first_not_of("0123456789abcdefABCDEFx, ") != std::string::npos) {
      return badValue(e, *e.attribute("affinity"), "a CPU mask (hex words separated by commas)");
    }
    WEFT_TRY(readString(e, "arch", &n.cpu.arch));
    WEFT_TRY(readString(e, "vendor", &n.cpu.vendor));
    WEFT_TRY(readIntAs(e, "familyid", -1, INT_MAX, &n.cpu.familyId));
    WEFT_TRY(readIntAs(e, "modelid", -1, INT_MAX, &n.cpu.modelId));
    WEFT_TRY(readHex(e, "host_hash", UINT64_MAX, &n.cpu.hostHash));
    int cpu = addNode(n, -1);
    for (const XmlElement& child : e.children) {
      if (child.name == "pci") {
        WEFT_TRY(addPci(child, cpu, cpu));
      } else if (child.name == "nic") {
        WEFT_TRY(addNics(child, nullptr, cpu, cpu));
      } else {
        skipElement(child, e);
      }
    }
    return Status::ok();
  }

  Status readPci(const XmlElement& e, PciInfo* p) {
    note(e, {"busid", "class", "vendor", "device", "subsystem_vendor", "subsystem_device", "link_speed", "link_width"});
    WEFT_TRY(readBusId(e, "busid", &p->busId));
    WEFT_TRY(readHex32(e, "class", 0xffffff, &p->pciClass));
    WEFT_TRY(readHex32(e, "vendor", 0xffff, &p->vendor));
    WEFT_TRY(readHex32(e, "device", 0xffff, &p->device));
    WEFT_TRY(readHex32(e, "subsystem_vendor", 0xffff, &p->subsystemVendor));
    WEFT_TRY(readHex32(e, "subsystem_device", 0xffff, &p->subsystemDevice));
    WEFT_TRY(readLinkSpeed(e, &p->linkSpeedGTs));
    WEFT_TRY(readWidth(e, &p->linkWidth));
    return Status::ok();
  }

  Status readGpu(const XmlElement& g, const PciInfo& pci, GpuInfo* gpu) {
    note(g, {"dev", "sm", "gcn", "arch", "rank", "gdr"});
    WEFT_TRY(readIntAs(g, "dev", -1, 1 << 20, &gpu->dev));
    WEFT_TRY(readIntAs(g, "sm", 0, 100000, &gpu->sm));
    WEFT_TRY(readIntAs(g, "rank", -1, INT_MAX, &gpu->rank));
    long long gdr = 0;
    WEFT_TRY(readInt(g, "gdr", 0, 1, &gdr));
    gpu->gdr = gdr != 0;
    WEFT_TRY(readString(g, "gcn", &gpu->arch));
    // RCCL's arch is a number (the device's feature bits); a name ("gfx90a", "sm_90a") is taken
    // when gcn is absent.
    const XmlAttribute* arch = g.attribute("arch");
    if (gpu->arch.empty() && arch != nullptr && !isArchNumber(arch->value)) gpu->arch = arch->value;
    // HIP's full target name ("gfx90a:sramecc+:xnack-") carries features that say nothing about
    // the topology; the gfx name alone is what the link tables know.
    if (startsWithNoCase(gpu->arch, "gfx")) gpu->arch = trimBlanks(gpu->arch.substr(0, gpu->arch.find(':')));
    bool nvidiaLinks = false;
    for (const XmlElement& c : g.children) nvidiaLinks = nvidiaLinks || c.name == "nvlink" || c.name == "c2c";
    if (pci.vendor == kPciVendorNvidia)
      gpu->vendor = GpuVendor::kNvidia;
    else if (pci.vendor == kPciVendorAmd)
      gpu->vendor = GpuVendor::kAmd;
    else if (startsWithNoCase(gpu->arch, "gfx"))
      gpu->vendor = GpuVendor::kAmd;
    else if (nvidiaLinks || startsWithNoCase(gpu->arch, "sm_"))
      gpu->vendor = GpuVendor::kNvidia;
    else if (gpu->sm > 0 && sys_->version == 1)
      gpu->vendor = GpuVendor::kNvidia;
    if (gpu->vendor == GpuVendor::kNvidia && gpu->arch.empty() && gpu->sm > 0)
      gpu->arch = "sm_" + std::to_string(gpu->sm);
    return Status::ok();
  }

  Status addGpuLinks(const XmlElement& g, int gpu, int root) {
    const GpuInfo& info = sys_->nodes[static_cast<size_t>(gpu)].gpu;
    int cpu = root >= 0 && sys_->nodes[static_cast<size_t>(root)].type == NodeType::kCpu ? root : -1;
    const size_t firstOfGpu = pending_.size();
    for (const XmlElement& c : g.children) {
      bool nvlink = c.name == "nvlink";
      if (!nvlink && c.name != "xgmi" && c.name != "c2c") {
        skipElement(c, g);
        continue;
      }
      long long count = 1;
      WEFT_TRY(readInt(c, "count", 0, kMaxLinkCount, &count));
      if (c.name == "c2c") {
        note(c, {"count", "bw"});
        double perLinkMBs = bw::kC2cPerLink * 1000.0;
        WEFT_TRY(readReal(c, "bw", 1e9, &perLinkMBs));
        if (cpu < 0) {
          WEFT_LOG(kWarn, kGraph, "%s: <c2c> of a GPU under no <cpu>; skipped", where(c.line).c_str());
        } else if (count > 0) {
          addLinkOnce(gpu, cpu, LinkType::kC2c, static_cast<int>(count),
                      static_cast<double>(count) * perLinkMBs / 1000.0, c.line);
        }
        continue;
      }
      note(c, {"target", "count", "tclass"});
      Pending p;
      p.from = gpu;
      p.type = nvlink ? LinkType::kNvLink : LinkType::kXgmi;
      p.tclass = 0;
      p.count = static_cast<int>(count);
      p.perLinkGBs = nvlink ? bw::nvlinkPerLink(info.sm) : bw::xgmiPerLink(info.arch);
      p.line = c.line;
      p.placeholder = false;
      WEFT_TRY(readHex32(c, "tclass", 0xffffff, &p.tclass));
      WEFT_TRY(readLinkTarget(c, &p));
      if (p.target.empty() && !p.placeholder) {
        WEFT_LOG(kWarn, kGraph, "%s: <%s> without a target; skipped", where(c.line).c_str(), c.name.c_str());
      } else if (p.count > 0) {
        addPending(p, firstOfGpu);
      }
    }
    return Status::ok();
  }

  // The target of an <nvlink>/<xgmi>. NCCL writes a placeholder that is no bus id for an
  // NVSwitch it cannot name (formats.md section 2; tclass 0x068000 says it is a switch): such
  // a link goes to the machine's one placeholder switch.
  Status readLinkTarget(const XmlElement& c, Pending* p) {
    const XmlAttribute* a = c.attribute("target");
    bool toSwitch = c.name == "nvlink" && p->tclass == kPciClassNvSwitch;
    bool busId = a != nullptr && !normaliseBusId(trimBlanks(a->value)).empty();
    if (toSwitch && a != nullptr && !busId) {
      p->placeholder = true;
      return Status::ok();
    }
    if (a != nullptr && !busId && !trimBlanks(a->value).empty()) {
      return badValue(c, *a,
                      "a PCI bus id (expected e.g. \"0000:18:00.0\"; a placeholder for an NVSwitch needs "
                      "tclass=\"0x068000\")");
    }
    return readBusId(c, "target", &p->target);
  }

  // Elements of one GPU naming the same far end add up, as NCCL adds their bandwidth: NVLinks
  // to NVSwitch chips that all show the placeholder are one bundle to the placeholder switch.
  void addPending(const Pending& p, size_t firstOfGpu) {
    for (size_t i = firstOfGpu; i < pending_.size(); ++i) {
      Pending& q = pending_[i];
      if (q.from == p.from && q.type == p.type && q.target == p.target && q.placeholder == p.placeholder) {
        q.count += p.count;
        return;
      }
    }
    pending_.push_back(p);
  }

  // <nic> with its <net> children: one kNic node per <net>, each with `pci` (nullptr: none),
  // linked to `linkParent`. Returns the first node made in *first (when not null).
  Status addNics(const XmlElement& e, const PciInfo* pci, int linkParent, int root, int* first = nullptr) {
    note(e, {});
    std::vector<const XmlElement*> nets;
    for (const XmlElement& c : e.children) {
      if (c.name == "net")
        nets.push_back(&c);
      else
        skipElement(c, e);
    }
    if (nets.empty()) nets.push_back(nullptr);  // a NIC whose ports the file does not list
    for (const XmlElement* net : nets) {
      Node n;
      n.type = NodeType::kNic;
      if (pci != nullptr) n.pci = *pci;
      if (net != nullptr) {
        note(*net, {"name", "dev", "speed", "port", "latency", "guid", "maxconn", "gdr"});
        WEFT_TRY(readString(*net, "name", &n.nic.name));
        WEFT_TRY(readIntAs(*net, "dev", -1, INT_MAX, &n.nic.dev));
        WEFT_TRY(readReal(*net, "speed", 1e12, &n.nic.speedMbps));
        WEFT_TRY(readIntAs(*net, "port", 0, INT_MAX, &n.nic.port));
        WEFT_TRY(readReal(*net, "latency", 1e12, &n.nic.latencyUs));
        WEFT_TRY(readHex(*net, "guid", UINT64_MAX, &n.nic.guid));
        WEFT_TRY(readIntAs(*net, "maxconn", 0, INT_MAX, &n.nic.maxConn));
        long long gdr = 0;
        WEFT_TRY(readInt(*net, "gdr", 0, 1, &gdr));
        n.nic.gdr = gdr != 0;
      }
      int node = addNode(n, root);
      if (first != nullptr && *first < 0) *first = node;
      if (linkParent >= 0) {
        addLinkOnce(node, linkParent, LinkType::kPcie, 1, bw::pcie(n.pci.linkSpeedGTs, n.pci.linkWidth), e.line);
      }
    }
    return Status::ok();
  }

  // A <pci> under `parent` (-1: under <system>); `root` is the CPU above it, or the top device
  // of a tree under no CPU (-1: this element is that top device).
  Status addPci(const XmlElement& e, int parent, int root) {
    PciInfo info;
    WEFT_TRY(readPci(e, &info));
    int repeat = repeatedSwitch(e, info, parent);
    if (repeat >= 0) {
      WEFT_TRY(mergeRepeat(e, info, repeat, parent));
      PciInfo& merged = sys_->nodes[static_cast<size_t>(repeat)].pci;
      return addPciChildren(e, repeat, nodeRoot_[static_cast<size_t>(repeat)], nullptr, false,
                            bw::pcie(merged.linkSpeedGTs, merged.linkWidth));
    }
    const XmlElement* gpuElem = nullptr;
    bool hasNic = false;
    for (const XmlElement& c : e.children) {
      if (c.name == "gpu" && gpuElem == nullptr) gpuElem = &c;
      hasNic = hasNic || c.name == "nic";
    }
    double linkBw = bw::pcie(info.linkSpeedGTs, info.linkWidth);
    const size_t firstNew = sys_->nodes.size();
    int node = -1;
    bool nicsConsumed = false;
    if (gpuElem != nullptr || (isGpuClass(info.pciClass) && !hasNic)) {
      Node n;
      n.type = NodeType::kGpu;
      n.pci = info;
      if (gpuElem != nullptr) {
        WEFT_TRY(readGpu(*gpuElem, info, &n.gpu));
      } else if (info.vendor == kPciVendorNvidia) {
        n.gpu.vendor = GpuVendor::kNvidia;  // a placeholder: detection fills in the rest
      } else if (info.vendor == kPciVendorAmd) {
        n.gpu.vendor = GpuVendor::kAmd;
      }
      node = addNode(n, root);
    } else if (hasNic && !isBridgeClass(info.pciClass)) {
      // The pci element is the NIC's PCI function: its NIC nodes hang under the parent.
      for (const XmlElement& c : e.children) {
        if (c.name == "nic") WEFT_TRY(addNics(c, &info, parent, root, &node));
      }
      nicsConsumed = true;
    } else {
      Node n;
      n.pci = info;
      if (isNvSwitchClass(info.pciClass))
        n.type = NodeType::kNvSwitch;
      else if (isNetworkClass(info.pciClass))
        n.type = NodeType::kNic;
      else
        n.type = NodeType::kPciBridge;
      node = addNode(n, root);
    }
    if (root < 0) {
      root = node;
      for (size_t i = firstNew; i < nodeRoot_.size(); ++i) nodeRoot_[i] = node;  // with all NIC ports
    }
    WEFT_TRY(registerBusId(info.busId, node, e.line, parent));
    if (!nicsConsumed && parent >= 0) addLinkOnce(node, parent, LinkType::kPcie, 1, linkBw, e.line);
    return addPciChildren(e, node, root, gpuElem, nicsConsumed, linkBw);
  }

  // The children of a <pci> made into `node`: `gpuElem` is the <gpu> that made it a GPU, and
  // `nicsConsumed` says its <nic>s made NIC nodes already.
  Status addPciChildren(const XmlElement& e, int node, int root, const XmlElement* gpuElem, bool nicsConsumed,
                        double linkBw) {
    const NodeType type = sys_->nodes[static_cast<size_t>(node)].type;
    for (const XmlElement& c : e.children) {
      if (c.name == "pci") {
        WEFT_TRY(addPci(c, node, root));
      } else if (c.name == "gpu") {
        if (&c == gpuElem)
          WEFT_TRY(addGpuLinks(c, node, root));
        else
          WEFT_LOG(kWarn, kGraph, "%s: a second <gpu> in one <pci>; ignored", where(c.line).c_str());
      } else if (c.name == "nic") {
        if (nicsConsumed) continue;
        if (type == NodeType::kPciBridge)
          WEFT_TRY(addNics(c, nullptr, node, root));
        else
          WEFT_LOG(kWarn, kGraph, "%s: <nic> inside the <pci> of a %s; ignored", where(c.line).c_str(),
                   nodeTypeName(type));
      } else if (c.name == "pcilink") {
        note(c, {"target"});
        Pending p{node, LinkType::kPcie, "", 0, 1, linkBw, c.line, false};
        WEFT_TRY(readBusId(c, "target", &p.target));
        if (!p.target.empty()) pending_.push_back(p);
      } else {
        skipElement(c, e);
      }
    }
    return Status::ok();
  }

  // Links that name their far end by bus id, once every element is known.
  Status resolvePending() {
    for (const Pending& p : pending_) {
      if (p.placeholder) {
        addLinkOnce(p.from, placeholderSwitch(), p.type, p.count, p.count * p.perLinkGBs, p.line);
        continue;
      }
      auto it = busIds_.find(p.target);
      int target = it == busIds_.end() ? -1 : it->second.node;
      if (target < 0 && p.type == LinkType::kNvLink && p.tclass == kPciClassNvSwitch) {
        Node n;
        n.type = NodeType::kNvSwitch;
        n.pci.busId = p.target;
        n.pci.pciClass = kPciClassNvSwitch;
        target = addNode(n, -1);
        busIds_[p.target] = {target, p.line, -1};
      }
      if (target < 0) {
        WEFT_LOG(kWarn, kGraph, "%s: %s target %s is not in the file; link skipped", where(p.line).c_str(),
                 linkTypeName(p.type), p.target.c_str());
        continue;
      }
      if (target == p.from) {
        WEFT_LOG(kWarn, kGraph, "%s: %s from %s to itself; skipped", where(p.line).c_str(), linkTypeName(p.type),
                 p.target.c_str());
        continue;
      }
      Node& t = sys_->nodes[static_cast<size_t>(target)];
      if (p.type == LinkType::kNvLink && t.type == NodeType::kPciBridge && t.pci.pciClass == 0 &&
          p.tclass == kPciClassNvSwitch) {
        t.type = NodeType::kNvSwitch;  // a <pci> of no class that the links say is a switch
      }
      if (p.type == LinkType::kPcie &&
          nodeRoot_[static_cast<size_t>(p.from)] != nodeRoot_[static_cast<size_t>(target)]) {
        // Joining two trees would make the link a tree link and move one tree under the other.
        WEFT_LOG(kWarn, kGraph, "%s: pcilink target %s is not under the same CPU; link skipped", where(p.line).c_str(),
                 p.target.c_str());
        continue;
      }
      bool ok = p.type == LinkType::kPcie || t.type == NodeType::kGpu ||
                (p.type == LinkType::kNvLink && t.type == NodeType::kNvSwitch);
      if (!ok) {
        WEFT_LOG(kWarn, kGraph, "%s: %s target %s is a %s, not a GPU%s; link skipped", where(p.line).c_str(),
                 linkTypeName(p.type), p.target.c_str(), nodeTypeName(t.type),
                 p.type == LinkType::kNvLink ? " or NVSwitch" : "");
        continue;
      }
      addLinkOnce(p.from, target, p.type, p.count, p.count * p.perLinkGBs, p.line);
    }
    return Status::ok();
  }

  // The NVSwitch that NVLinks to the placeholder reach: one per machine, with no PCI function
  // (machines.h models hidden switches the same way).
  int placeholderSwitch() {
    if (placeholderSwitch_ < 0) {
      Node n;
      n.type = NodeType::kNvSwitch;
      placeholderSwitch_ = addNode(n, -1);
    }
    return placeholderSwitch_;
  }

  void addSmpLinks() {
    std::vector<int> cpus = sys_->nodesOfType(NodeType::kCpu);
    for (size_t i = 0; i < cpus.size(); ++i) {
      for (size_t j = i + 1; j < cpus.size(); ++j) {
        const CpuInfo& a = sys_->nodes[static_cast<size_t>(cpus[i])].cpu;
        const CpuInfo& b = sys_->nodes[static_cast<size_t>(cpus[j])].cpu;
        addLinkOnce(cpus[i], cpus[j], LinkType::kSmp, 1, std::min(bw::smp(a.vendor), bw::smp(b.vendor)), 0);
      }
    }
  }

  System* sys_;
  int cpus_ = 0;
  struct BusIdUse {
    int node;
    int line;    // of the first element with the bus id
    int parent;  // the node it hangs under (-1: none)
  };
  std::map<std::string, BusIdUse> busIds_;
  std::map<std::tuple<int, int, int>, int> links_;  // (low node, high node, type) -> link index
  std::vector<Pending> pending_;
  std::vector<int> nodeRoot_;  // per node: its CPU, or the top device of its tree under no CPU
  int placeholderSwitch_ = -1;
};

}  // namespace

Status parseTopologyXml(const std::string& text, const std::string& sourceName, System* out) {
  XmlElement root;
  WEFT_TRY(parseXml(text, sourceName, &root));
  System sys;
  sys.source = "file:" + sourceName;
  Builder builder(sourceName, &sys);
  WEFT_TRY(builder.build(root));
  *out = std::move(sys);
  return Status::ok();
}

Status readTopologyFile(const std::string& path, System* out) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    return WEFT_ERROR(weftInvalidArgument, "topology file %s: %s; check the path given (WEFT_TOPO_FILE)", path.c_str(),
                      errnoText(err).c_str());
  }
  if (!S_ISREG(st.st_mode)) {
    return WEFT_ERROR(weftInvalidArgument, "topology file %s is not a regular file", path.c_str());
  }
  XmlLimits limits;
  if (static_cast<uint64_t>(st.st_size) > limits.maxBytes) {
    return WEFT_ERROR(weftInvalidArgument, "topology file %s has %lld bytes; files larger than %zu bytes are refused",
                      path.c_str(), static_cast<long long>(st.st_size), limits.maxBytes);
  }
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    int err = errno;
    return WEFT_ERROR(weftInvalidArgument, "cannot open topology file %s: %s", path.c_str(), errnoText(err).c_str());
  }
  std::string text;
  char buf[65536];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0 && text.size() <= limits.maxBytes) text.append(buf, n);
  bool readError = std::ferror(f) != 0;
  std::fclose(f);
  if (readError) return WEFT_ERROR(weftSystemError, "reading topology file %s failed", path.c_str());
  System sys;
  WEFT_TRY(parseTopologyXml(text, path, &sys));
  *out = std::move(sys);
  return Status::ok();
}

}  // namespace topo
}  // namespace weft
