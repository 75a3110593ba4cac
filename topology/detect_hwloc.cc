// The hwloc source: NUMA nodes and their cpusets, the CPU's vendor/family/model, the PCI tree
// (bridges and the functions hwloc deems important: storage, network, display, accelerators)
// and the OS devices hwloc attaches to them (net "eth0", openfabrics "mlx5_0"). hwloc reads
// the live machine only; detect.cc fills what it lacks from sysfs.
#include <hwloc.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "base/status.h"
#include "topology/detect_sources.h"

namespace weft {
namespace topo {
namespace detect {

namespace {

using PciAttr = hwloc_obj_attr_u::hwloc_pcidev_attr_s;

class HwlocTopology {
 public:
  ~HwlocTopology() {
    if (loaded_) hwloc_topology_destroy(topo_);
  }
  // "" on success, else why not.
  std::string load() {
    // The library found at run time must be the 2.x API this was built against.
    unsigned runtime = hwloc_get_api_version();
    if ((runtime >> 16) != (HWLOC_API_VERSION >> 16)) {
      char text[128];
      std::snprintf(text, sizeof(text), "libhwloc API 0x%x at run time, built against 0x%x", runtime,
                    static_cast<unsigned>(HWLOC_API_VERSION));
      return text;
    }
    if (hwloc_topology_init(&topo_) != 0) return "hwloc_topology_init: " + errnoText(errno);
    loaded_ = true;
    // Bridges only when they lead to something kept; PCI functions and OS devices that matter.
    hwloc_topology_set_io_types_filter(topo_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo_) != 0) return "hwloc_topology_load: " + errnoText(errno);
    return "";
  }
  hwloc_topology_t get() const { return topo_; }

 private:
  hwloc_topology_t topo_ = nullptr;
  bool loaded_ = false;
};

std::string busIdOf(unsigned domain, unsigned bus, unsigned dev, unsigned fn) {
  char text[32];
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%x", domain, bus, dev, fn);
  return text;
}

std::vector<int> cpusOf(hwloc_const_cpuset_t set) {
  std::vector<int> cpus;
  if (set == nullptr) return cpus;
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) cpus.push_back(i);
  return cpus;
}

// The NUMA node of an I/O object: the single NUMA node under its non-I/O ancestor, -1 when
// that ancestor spans several (hwloc then could not tell).
int numaOfIo(hwloc_topology_t topo, hwloc_obj_t obj) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, obj);
  if (anc == nullptr || anc->nodeset == nullptr || hwloc_bitmap_weight(anc->nodeset) != 1) return -1;
  return hwloc_bitmap_first(anc->nodeset);
}

// The PCI function whose attributes describe a PCI device or a PCI-to-PCI bridge object.
const PciAttr* pciAttrOf(hwloc_obj_t obj) {
  if (obj->type == HWLOC_OBJ_PCI_DEVICE) return &obj->attr->pcidev;
  if (obj->type == HWLOC_OBJ_BRIDGE && obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) {
    return &obj->attr->bridge.upstream.pci;
  }
  return nullptr;  // a host bridge: no PCI function of its own here
}

PciFunction functionOf(hwloc_topology_t topo, hwloc_obj_t obj, const PciAttr& a) {
  PciFunction f;
  f.busId = busIdOf(a.domain, a.bus, a.dev, a.func);
  // hwloc keeps class and subclass; sysfs later supplies the programming interface.
  f.pciClass = static_cast<uint32_t>(a.class_id) << 8;
  f.vendor = a.vendor_id;
  f.device = a.device_id;
  f.subsystemVendor = a.subvendor_id;
  f.subsystemDevice = a.subdevice_id;
  for (hwloc_obj_t p = obj->parent; p != nullptr; p = p->parent) {
    if (p->type == HWLOC_OBJ_BRIDGE && p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) {
      const PciAttr& pa = p->attr->bridge.upstream.pci;
      f.parentBusId = busIdOf(pa.domain, pa.bus, pa.dev, pa.func);
      break;
    }
    if (p->type == HWLOC_OBJ_BRIDGE) break;  // the host bridge: a root function
    if (p->type != HWLOC_OBJ_PCI_DEVICE) break;
  }
  f.numaNode = numaOfIo(topo, obj);
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, obj);
  if (anc != nullptr) f.localCpus = cpusOf(anc->cpuset);
  return f;
}

const char* infoOf(hwloc_obj_t obj, const char* name) {
  return obj == nullptr ? nullptr : hwloc_obj_get_info_by_name(obj, name);
}

// NUMA nodes with CPUs (memory-only nodes are not CPU nodes).
void readNuma(hwloc_topology_t topo, Inventory* inv) {
  int nNuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nNuma; ++i) {
    hwloc_obj_t n = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    NumaDomain d;
    d.id = static_cast<int>(n->os_index);
    d.cpus = cpusOf(n->cpuset);
    if (!d.cpus.empty()) inv->numa.push_back(d);
  }
  if (inv->numa.empty()) {
    // No NUMA information: the whole machine is one domain.
    NumaDomain d;
    d.id = 0;
    d.cpus = cpusOf(hwloc_get_root_obj(topo)->cpuset);
    if (!d.cpus.empty()) inv->numa.push_back(d);
  }
}

// CPU identity: x86 packages carry CPUVendor/CPUFamilyNumber/CPUModelNumber.
void readCpuIdentity(hwloc_topology_t topo, Inventory* inv) {
  hwloc_obj_t root = hwloc_get_root_obj(topo);
  hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
  if (const char* v = infoOf(root, "Architecture")) inv->cpu.arch = v;
  if (const char* v = infoOf(pkg, "CPUVendor")) inv->cpu.vendor = v;
  if (const char* v = infoOf(pkg, "CPUFamilyNumber")) inv->cpu.familyId = std::atoi(v);
  if (const char* v = infoOf(pkg, "CPUModelNumber")) inv->cpu.modelId = std::atoi(v);
}

// The PCI tree: bridges (with a PCI function) and devices.
void readPciTree(hwloc_topology_t topo, Inventory* inv) {
  for (hwloc_obj_t b = hwloc_get_next_bridge(topo, nullptr); b != nullptr; b = hwloc_get_next_bridge(topo, b)) {
    if (const PciAttr* a = pciAttrOf(b)) inv->pci.push_back(functionOf(topo, b, *a));
  }
  for (hwloc_obj_t d = hwloc_get_next_pcidev(topo, nullptr); d != nullptr; d = hwloc_get_next_pcidev(topo, d)) {
    inv->pci.push_back(functionOf(topo, d, d->attr->pcidev));
  }
}

// OS devices under PCI functions: network interfaces and RDMA devices. Speeds come from sysfs.
// Returns how many it added.
size_t readNetDevices(hwloc_topology_t topo, Inventory* inv) {
  size_t nPorts = 0;
  for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o != nullptr; o = hwloc_get_next_osdev(topo, o)) {
    hwloc_obj_osdev_type_t type = o->attr->osdev.type;
    if (type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
    if (o->name == nullptr || std::strcmp(o->name, "lo") == 0) continue;
    NetPort p;
    p.name = o->name;
    p.kind = type == HWLOC_OBJ_OSDEV_OPENFABRICS ? PortKind::kRdma : PortKind::kEthernet;
    if (o->parent != nullptr && o->parent->type == HWLOC_OBJ_PCI_DEVICE) {
      const PciAttr& a = o->parent->attr->pcidev;
      p.busId = busIdOf(a.domain, a.bus, a.dev, a.func);
    }
    if (const char* guid = infoOf(o, "NodeGUID")) {
      std::string g = guid;
      std::string hex;
      for (char c : g) {
        if (c != ':') hex += c;
      }
      p.guid = std::strtoull(hex.c_str(), nullptr, 16);
    }
    inv->ports.push_back(p);
    ++nPorts;
  }
  return nPorts;
}

}  // namespace

DetectSourceResult readHwloc(Inventory* inv) {
  DetectSourceResult r;
  r.name = "hwloc";
  HwlocTopology t;
  std::string why = t.load();
  if (!why.empty()) {
    r.state = SourceState::kFailed;
    r.detail = why;
    return r;
  }
  hwloc_topology_t topo = t.get();
  readNuma(topo, inv);
  readCpuIdentity(topo, inv);
  readPciTree(topo, inv);
  size_t nPorts = readNetDevices(topo, inv);

  r.state = SourceState::kUsed;
  char text[200];
  std::snprintf(text, sizeof(text),
                "%zu NUMA node(s), %zu PCI function(s), %zu network device(s); CPU %s family %d model %d",
                inv->numa.size(), inv->pci.size(), nPorts, inv->cpu.vendor.empty() ? "?" : inv->cpu.vendor.c_str(),
                inv->cpu.familyId, inv->cpu.modelId);
  r.detail = text;
  return r;
}

}  // namespace detect
}  // namespace topo
}  // namespace weft
