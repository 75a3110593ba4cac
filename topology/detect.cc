// Detection's orchestration: runs the sources (hwloc, sysfs, NVML, KFD, ROCm SMI), merges
// what they found by PCI bus id, and builds the System: one CPU node per NUMA node joined by
// SMP links, the PCI tree as PCIe links (device to bridge, bridge to bridge, root function to
// the CPU of its NUMA node), GPUs, NICs and NVSwitches typed, NVLink/xGMI bundles between
// GPUs. Bandwidths come from link_bw.h. A source that fails is reported and skipped.
//
// Conventions of the model built here:
//  - Host bridges are not nodes (NCCL's files have none): a function directly under one links
//    to the CPU node of its NUMA node.
//  - PCI functions that are neither bridges, GPUs, NICs nor NVSwitches (an NVMe drive, say)
//    are "pci" nodes (NodeType::kPciBridge) with their class; they are leaves.
//  - PCIe links go from the upstream end (CPU or bridge) to the downstream one, with the
//    bandwidth of the downstream function's link (current speed and width, else maximum).
//  - A NIC node per network port; its speed is in NicInfo (no kNet link: the fabric is not a
//    node of this model).
#include "topology/detect.h"

#include <dlfcn.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "base/log.h"
#include "base/os.h"
#include "topology/detect_sources.h"
#include "topology/link_bw.h"

namespace weft {
namespace topo {

const char* sourceStateName(SourceState s) {
  switch (s) {
    case SourceState::kUsed:
      return "used";
    case SourceState::kAbsent:
      return "absent";
    case SourceState::kFailed:
      return "failed";
    case SourceState::kSkipped:
      return "skipped";
  }
  return "unknown";
}

const DetectSourceResult* DetectReport::find(const std::string& name) const {
  for (const DetectSourceResult& s : sources) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string DetectReport::format() const {
  std::string out;
  for (const DetectSourceResult& s : sources) {
    char head[48];
    std::snprintf(head, sizeof(head), "%-9s %-7s ", s.name.c_str(), sourceStateName(s.state));
    out += head + s.detail + "\n";
  }
  for (const std::string& n : notes) out += "note: " + n + "\n";
  return out;
}

namespace detect {

SharedLibrary::~SharedLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

bool SharedLibrary::open(const std::string& name, std::string* why) {
  if (handle_ != nullptr) dlclose(handle_);
  name_ = name;
  handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* err = dlerror();
    if (why) *why = err ? err : ("dlopen(" + name + ") failed");
    return false;
  }
  return true;
}

void* SharedLibrary::symbol(const char* name) const { return handle_ ? dlsym(handle_, name) : nullptr; }

PciFunction* Inventory::findPci(const std::string& busId) {
  for (PciFunction& f : pci) {
    if (f.busId == busId) return &f;
  }
  return nullptr;
}

const PciFunction* Inventory::findPci(const std::string& busId) const {
  for (const PciFunction& f : pci) {
    if (f.busId == busId) return &f;
  }
  return nullptr;
}

GpuEntry* Inventory::findGpu(const std::string& busId) {
  for (GpuEntry& g : gpus) {
    if (g.busId == busId) return &g;
  }
  return nullptr;
}

bool Inventory::hasGpuLink(const std::string& from, const std::string& to) const {
  for (const GpuLink& l : gpuLinks) {
    if ((l.from == from && l.to == to) || (!l.toSwitch && l.from == to && l.to == from)) return true;
  }
  return false;
}

namespace {

constexpr uint32_t kVendorNvidia = 0x10de;
constexpr uint32_t kVendorAmd = 0x1002;
constexpr double kDefaultNicMbps = 10000;  // NCCL's socket transport assumes 10 Gb/s too

bool isNvSwitch(const PciFunction& f) { return f.vendor == kVendorNvidia && (f.pciClass >> 8) == 0x0680; }

// A GPU by its PCI identity alone (when no vendor library described it).
GpuVendor gpuVendorByClass(const PciFunction& f) {
  uint32_t cls = f.pciClass >> 8;
  if (f.vendor == kVendorNvidia && (cls == 0x0300 || cls == 0x0302)) return GpuVendor::kNvidia;
  if (f.vendor == kVendorAmd && (cls == 0x0300 || cls == 0x0380 || cls == 0x1200)) return GpuVendor::kAmd;
  return GpuVendor::kUnknown;
}

void record(DetectReport* rep, const DetectSourceResult& r, bool vendorLibrary) {
  switch (r.state) {
    case SourceState::kUsed:
      WEFT_LOG(kInfo, kGraph, "topology detection: %s: %s", r.name.c_str(), r.detail.c_str());
      break;
    case SourceState::kAbsent:
      if (vendorLibrary) {
        WEFT_LOG(kInfo, kGraph, "topology detection: %s: %s", r.name.c_str(), r.detail.c_str());
      } else {
        WEFT_LOG(kWarn, kGraph, "topology detection: %s unavailable: %s; going on without it", r.name.c_str(),
                 r.detail.c_str());
      }
      break;
    case SourceState::kFailed:
      WEFT_LOG(kWarn, kGraph, "topology detection: %s failed: %s; going on without it", r.name.c_str(),
               r.detail.c_str());
      break;
    case SourceState::kSkipped:
      WEFT_LOG(kTrace, kGraph, "topology detection: %s skipped: %s", r.name.c_str(), r.detail.c_str());
      break;
  }
  rep->sources.push_back(r);
}

std::string normaliseArch(const std::string& arch) {
  if (arch == "aarch64") return "arm64";
  if (arch.rfind("ppc64", 0) == 0) return "ppc64";
  return arch;
}

// Adds sysfs's function `busId` and the bridges above it, when the inventory lacks them.
void ensurePci(Inventory* inv, const Inventory& sys, const std::string& busId) {
  for (std::string id = busId; !id.empty() && inv->findPci(id) == nullptr;) {
    const PciFunction* f = sys.findPci(id);
    if (f == nullptr) return;
    inv->pci.push_back(*f);
    id = f->parentBusId;
  }
}

// Fills the zero/empty fields of `to` from `from`.
void fillGaps(PciFunction* to, const PciFunction& from) {
  // hwloc has class and subclass only: take sysfs's 24 bits when they agree.
  if (to->pciClass == 0 || (to->pciClass >> 8) == (from.pciClass >> 8)) to->pciClass = from.pciClass;
  if (to->vendor == 0) to->vendor = from.vendor;
  if (to->device == 0) to->device = from.device;
  if (to->subsystemVendor == 0) to->subsystemVendor = from.subsystemVendor;
  if (to->subsystemDevice == 0) to->subsystemDevice = from.subsystemDevice;
  if (to->linkSpeedGTs <= 0) to->linkSpeedGTs = from.linkSpeedGTs;
  if (to->linkWidth <= 0) to->linkWidth = from.linkWidth;
  if (to->maxLinkSpeedGTs <= 0) to->maxLinkSpeedGTs = from.maxLinkSpeedGTs;
  if (to->maxLinkWidth <= 0) to->maxLinkWidth = from.maxLinkWidth;
  if (from.numaNode >= 0) to->numaNode = from.numaNode;  // the kernel's word beats hwloc's inference
  if (!from.localCpus.empty()) to->localCpus = from.localCpus;
  if (to->productName.empty()) to->productName = from.productName;
  if (to->parentBusId.empty()) to->parentBusId = from.parentBusId;
}

// hwloc's inventory completed from sysfs's; sysfs's alone (filtered like hwloc's) without it.
Inventory merge(const Inventory* hw, const Inventory& sys) {
  Inventory inv;
  if (hw != nullptr) {
    inv = *hw;
    if (inv.numa.empty()) inv.numa = sys.numa;
    if (inv.cpu.arch.empty()) inv.cpu.arch = sys.cpu.arch;
    if (inv.cpu.vendor.empty()) inv.cpu.vendor = sys.cpu.vendor;
    if (inv.cpu.familyId < 0) inv.cpu.familyId = sys.cpu.familyId;
    if (inv.cpu.modelId < 0) inv.cpu.modelId = sys.cpu.modelId;
    for (PciFunction& f : inv.pci) {
      if (const PciFunction* s = sys.findPci(f.busId)) fillGaps(&f, *s);
    }
    // sysfs knows port numbers and speeds; hwloc adds devices sysfs did not show.
    std::vector<NetPort> hwPorts = inv.ports;
    inv.ports = sys.ports;
    for (const NetPort& p : hwPorts) {
      bool known = false;
      for (const NetPort& q : inv.ports) {
        known |= q.name == p.name || std::find(q.netdevs.begin(), q.netdevs.end(), p.name) != q.netdevs.end();
      }
      if (!known) inv.ports.push_back(p);
    }
  } else {
    inv.numa = sys.numa;
    inv.cpu = sys.cpu;
    inv.ports = sys.ports;
    for (const PciFunction& f : sys.pci) {
      if (isImportantPciClass(f.pciClass) || isNvSwitch(f)) ensurePci(&inv, sys, f.busId);
    }
  }
  for (const NetPort& p : inv.ports) ensurePci(&inv, sys, p.busId);
  return inv;
}

class SystemBuilder {
 public:
  SystemBuilder(const detect::Inventory& inv, System* out, DetectReport* rep, uint64_t hostHash)
      : inv_(inv), out_(out), rep_(rep), hostHash_(hostHash) {}

  void build() {
    out_->nodes.clear();
    out_->links.clear();
    out_->source = "detected";
    out_->version = 1;
    addCpus();
    addPci();
    addOrphanGpusAndNics();
    addGpuLinks();
  }

 private:
  void addCpus() {
    for (const NumaDomain& d : inv_.numa) {
      Node n;
      n.type = NodeType::kCpu;
      n.cpu.numaId = d.id;
      n.cpu.affinity = cpusToAffinity(d.cpus);
      n.cpu.arch = inv_.cpu.arch;
      n.cpu.vendor = inv_.cpu.vendor;
      n.cpu.familyId = inv_.cpu.familyId;
      n.cpu.modelId = inv_.cpu.modelId;
      n.cpu.hostHash = hostHash_;
      int idx = out_->addNode(n);
      cpuOfNuma_[d.id] = idx;
      for (int c : d.cpus) cpuOfCpu_[c] = idx;
      cpus_.push_back(idx);
    }
    for (size_t i = 0; i < cpus_.size(); ++i) {
      for (size_t j = i + 1; j < cpus_.size(); ++j)
        out_->addLink(cpus_[i], cpus_[j], LinkType::kSmp, 1, bw::smp(inv_.cpu.vendor));
    }
  }

  int cpuFor(int numaNode, const std::vector<int>& localCpus) const {
    auto it = cpuOfNuma_.find(numaNode);
    if (it != cpuOfNuma_.end()) return it->second;
    if (!localCpus.empty()) {
      auto c = cpuOfCpu_.find(localCpus.front());
      if (c != cpuOfCpu_.end()) return c->second;
    }
    return cpus_.front();
  }

  static PciInfo pciInfoOf(const PciFunction& f) {
    PciInfo p;
    p.busId = f.busId;
    p.pciClass = f.pciClass;
    p.vendor = f.vendor;
    p.device = f.device;
    p.subsystemVendor = f.subsystemVendor;
    p.subsystemDevice = f.subsystemDevice;
    p.linkSpeedGTs = f.linkSpeedGTs > 0 ? f.linkSpeedGTs : f.maxLinkSpeedGTs;
    p.linkWidth = f.linkWidth > 0 ? f.linkWidth : f.maxLinkWidth;
    return p;
  }

  NicInfo nicInfoOf(const NetPort& p) {
    NicInfo n;
    n.name = p.name;
    n.dev = nextNicDev_++;
    n.port = p.port;
    n.speedMbps = p.speedMbps;
    n.guid = p.guid;
    if (n.speedMbps <= 0) {
      n.speedMbps = kDefaultNicMbps;
      rep_->notes.push_back(p.name + ": link speed unknown (virtual NIC, or link down); assuming 10000 Mb/s");
    }
    return n;
  }

  void addPci() {
    std::vector<const PciFunction*> fns;
    for (const PciFunction& f : inv_.pci) fns.push_back(&f);
    std::sort(fns.begin(), fns.end(), [](const PciFunction* a, const PciFunction* b) { return a->busId < b->busId; });
    std::map<std::string, int> nodeOf;
    std::vector<std::pair<int, const PciFunction*>> placed;  // every node made for a function
    for (const PciFunction* f : fns) {
      Node n;
      n.pci = pciInfoOf(*f);
      std::vector<const NetPort*> ports;
      for (const NetPort& p : inv_.ports) {
        if (p.busId == f->busId) ports.push_back(&p);
      }
      const GpuEntry* g = nullptr;
      for (const GpuEntry& e : inv_.gpus) {
        if (e.busId == f->busId) g = &e;
      }
      if (g != nullptr) {
        n.type = NodeType::kGpu;
        n.gpu = gpuInfoOf(*g, f->productName);
      } else if (isNvSwitch(*f)) {
        n.type = NodeType::kNvSwitch;
      } else if (GpuVendor v = gpuVendorByClass(*f); v != GpuVendor::kUnknown) {
        n.type = NodeType::kGpu;
        n.gpu.vendor = v;
        n.gpu.model = f->productName;
        rep_->notes.push_back("GPU " + f->busId + " found by its PCI class only (no vendor library described it)");
      } else if (!ports.empty()) {
        n.type = NodeType::kNic;
        n.nic = nicInfoOf(*ports.front());
      } else {
        n.type = NodeType::kPciBridge;
      }
      int idx = out_->addNode(n);
      nodeOf[f->busId] = idx;
      placed.emplace_back(idx, f);
      // Further ports of a multi-port function: NIC nodes of their own on the same function.
      for (size_t i = n.type == NodeType::kNic ? 1 : 0; i < ports.size(); ++i) {
        Node extra;
        extra.type = NodeType::kNic;
        extra.pci = n.pci;
        extra.nic = nicInfoOf(*ports[i]);
        placed.emplace_back(out_->addNode(extra), f);
      }
    }
    for (const auto& pf : placed) {
      const PciFunction& f = *pf.second;
      auto parent = nodeOf.find(f.parentBusId);
      int up = f.parentBusId.empty() || parent == nodeOf.end() ? cpuFor(f.numaNode, f.localCpus) : parent->second;
      const PciInfo& p = out_->nodes[static_cast<size_t>(pf.first)].pci;
      out_->addLink(up, pf.first, LinkType::kPcie, 1, bw::pcie(p.linkSpeedGTs, p.linkWidth));
    }
  }

  GpuInfo gpuInfoOf(const GpuEntry& e, const std::string& productName) {
    GpuInfo g;
    g.vendor = e.vendor;
    g.dev = e.dev;
    g.sm = e.sm;
    g.arch = e.arch;
    g.model = e.model.empty() ? productName : e.model;
    return g;
  }

  // GPUs and NICs whose PCI function is not in the tree (a container hiding /sys): under CPU0.
  void addOrphanGpusAndNics() {
    for (const GpuEntry& e : inv_.gpus) {
      if (out_->findByBusId(e.busId) >= 0) continue;
      Node n;
      n.type = NodeType::kGpu;
      n.pci.busId = e.busId;
      n.gpu = gpuInfoOf(e, "");
      int idx = out_->addNode(n);
      out_->addLink(cpus_.front(), idx, LinkType::kPcie, 1, bw::pcie(0, 0));
      rep_->notes.push_back("GPU " + e.busId + ": PCI function not visible; placed under the first CPU");
    }
    for (const NetPort& p : inv_.ports) {
      if (!p.busId.empty() && inv_.findPci(p.busId) != nullptr) continue;
      Node n;
      n.type = NodeType::kNic;
      n.pci.busId = p.busId;
      n.nic = nicInfoOf(p);
      int idx = out_->addNode(n);
      out_->addLink(cpuFor(p.numaNode, {}), idx, LinkType::kPcie, 1, bw::pcie(0, 0));
    }
  }

  void addGpuLinks() {
    for (const GpuLink& l : inv_.gpuLinks) {
      int a = out_->findByBusId(l.from);
      if (a < 0 || out_->nodes[static_cast<size_t>(a)].type != NodeType::kGpu) continue;
      int b = l.to.empty() ? placeholderSwitch_ : out_->findByBusId(l.to);
      if (l.toSwitch) {
        if (b < 0) {
          Node n;
          n.type = NodeType::kNvSwitch;
          n.pci.busId = l.to;
          n.pci.vendor = kVendorNvidia;
          n.pci.pciClass = 0x068000;
          b = out_->addNode(n);
          if (l.to.empty()) placeholderSwitch_ = b;
        } else {
          out_->nodes[static_cast<size_t>(b)].type = NodeType::kNvSwitch;
        }
      } else if (b < 0 || out_->nodes[static_cast<size_t>(b)].type != NodeType::kGpu) {
        WEFT_LOG(kTrace, kGraph, "link from GPU %s to %s: the far end is not a known GPU", l.from.c_str(),
                 l.to.c_str());
        continue;
      }
      const GpuInfo& g = out_->nodes[static_cast<size_t>(a)].gpu;
      double perLink = l.type == LinkType::kXgmi ? bw::xgmiPerLink(g.arch) : bw::nvlinkPerLink(g.sm);
      out_->addLink(a, b, l.type, l.count, perLink * l.count);
      if (l.type == LinkType::kXgmi) out_->version = 2;
    }
    for (const Node& n : out_->nodes) {
      if (n.type == NodeType::kGpu && n.gpu.vendor == GpuVendor::kAmd) out_->version = 2;
    }
  }

  const Inventory& inv_;
  System* out_;
  DetectReport* rep_;
  uint64_t hostHash_;
  std::map<int, int> cpuOfNuma_;
  std::map<int, int> cpuOfCpu_;
  std::vector<int> cpus_;
  int nextNicDev_ = 0;
  int placeholderSwitch_ = -1;  // the NVSwitch that links with no bus id reach (one per machine)
};

// hwloc (live machine only) and sysfs, merged by bus id; *sys keeps what sysfs alone found.
Inventory readTreeSources(const DetectOptions& options, bool live, const std::string& root, DetectReport* rep,
                          Inventory* sys) {
  Inventory hw;
  DetectSourceResult hwr;
  hwr.name = "hwloc";
  if (!options.useHwloc) {
    hwr.detail = "disabled";
  } else if (!live) {
    hwr.detail = "reads the live machine only (root is " + options.root + ")";
  } else {
    hwr = readHwloc(&hw);
  }
  record(rep, hwr, false);

  record(rep, readSysfs(root, sys), false);
  return merge(hwr.state == SourceState::kUsed ? &hw : nullptr, *sys);
}

// The vendor libraries and KFD add GPUs, links and NICs to *inv.
void readVendorLibraries(const DetectOptions& options, bool live, const std::string& root, DetectReport* rep,
                         Inventory* inv) {
  if (!options.nvmlLibrary.empty()) {
    record(rep, readNvml(options.nvmlLibrary, inv), true);
  } else {
    record(rep, DetectSourceResult{"nvml", SourceState::kSkipped, "disabled"}, true);
  }
  record(rep, readKfd(root, inv), true);
  if (!options.rsmiLibrary.empty()) {
    record(rep, readRocmSmi(options.rsmiLibrary, inv), true);
  } else {
    record(rep, DetectSourceResult{"rocm-smi", SourceState::kSkipped, "disabled"}, true);
  }
  if (!options.fabricLibrary.empty() && live) {
    record(rep, readLibfabric(options.fabricLibrary, inv), true);
  } else {
    record(rep, DetectSourceResult{"libfabric", SourceState::kSkipped, live ? "disabled" : "live machine only"}, true);
  }
}

// What no source gave: the PCI functions of GPUs and switches, the CPU's architecture, a NUMA node.
void completeInventory(const Inventory& sys, bool live, DetectReport* rep, Inventory* inv) {
  for (const GpuEntry& g : inv->gpus) ensurePci(inv, sys, g.busId);
  for (const GpuLink& l : inv->gpuLinks) {
    if (l.toSwitch) ensurePci(inv, sys, l.to);
  }

  if (live && inv->cpu.arch.empty()) {
    struct utsname u;
    if (uname(&u) == 0) inv->cpu.arch = u.machine;
  }
  inv->cpu.arch = normaliseArch(inv->cpu.arch);
  if (inv->numa.empty()) {
    // No source could tell: one CPU node for the whole machine.
    NumaDomain d;
    d.id = 0;
    long n = live ? sysconf(_SC_NPROCESSORS_ONLN) : 0;
    for (long c = 0; c < n; ++c) d.cpus.push_back(static_cast<int>(c));
    inv->numa.push_back(d);
    rep->notes.push_back("no NUMA information: one CPU node for the whole machine");
    WEFT_LOG(kWarn, kGraph, "topology detection: no NUMA information from hwloc or sysfs; assuming one CPU node");
  }
}

}  // namespace
}  // namespace detect

Status detectSystem(System* out, DetectReport* report) { return detectSystem(DetectOptions(), out, report); }

Status detectSystem(const DetectOptions& options, System* out, DetectReport* report) {
  using namespace detect;
  if (out == nullptr) return WEFT_ERROR(weftInvalidArgument, "detectSystem: no System to fill");
  DetectReport local;
  DetectReport* rep = report ? report : &local;
  *rep = DetectReport();
  const bool live = options.root == "/";
  const std::string root = live ? "" : options.root;  // paths are root + "/sys/..."

  Inventory sys;
  Inventory inv = readTreeSources(options, live, root, rep, &sys);
  readVendorLibraries(options, live, root, rep, &inv);
  completeInventory(sys, live, rep, &inv);

  SystemBuilder(inv, out, rep, live ? hostHash() : 0).build();
  WEFT_LOG(kInfo, kGraph,
           "topology detection: %zu CPU node(s), %zu GPU(s), %zu NIC(s), %zu node(s) and %zu link(s) in all",
           out->nodesOfType(NodeType::kCpu).size(), out->nodesOfType(NodeType::kGpu).size(),
           out->nodesOfType(NodeType::kNic).size(), out->nodes.size(), out->links.size());
  return Status::ok();
}

}  // namespace topo
}  // namespace weft
