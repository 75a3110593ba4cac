// Detection's sources (detect_hwloc.cc, detect_sysfs.cc, detect_nvml.cc, detect_rocm.cc) and
// the inventory they fill. Internal to detection; tests call the sources directly, pointing
// the sysfs readers at fake trees (every reader takes the file-system root).
//
// A source only records facts, keyed by PCI bus id; detect.cc merges the inventories and
// turns the result into a System (node types, links, bandwidths).
#ifndef WEFT_TOPOLOGY_DETECT_SOURCES_H_
#define WEFT_TOPOLOGY_DETECT_SOURCES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "topology/detect.h"
#include "topology/system.h"

namespace weft {
namespace topo {
namespace detect {

struct NumaDomain {
  int id = -1;
  std::vector<int> cpus;  // logical CPU numbers, ascending
};

struct CpuIdentity {
  std::string arch;    // x86_64, arm64, ppc64
  std::string vendor;  // GenuineIntel, AuthenticAMD
  int familyId = -1;
  int modelId = -1;
};

struct PciFunction {
  std::string busId;        // normalised "0000:18:00.0"
  std::string parentBusId;  // the bridge above it; "" when it sits under a host bridge
  uint32_t pciClass = 0;    // 24 bits: class, subclass, programming interface (0x060400)
  uint32_t vendor = 0;
  uint32_t device = 0;
  uint32_t subsystemVendor = 0;
  uint32_t subsystemDevice = 0;
  double linkSpeedGTs = 0;  // current; 0 unknown
  int linkWidth = 0;
  double maxLinkSpeedGTs = 0;
  int maxLinkWidth = 0;
  int numaNode = -1;  // -1 unknown
  std::vector<int> localCpus;
  std::string productName;  // amdgpu's product_name, when the driver provides it
};

enum class PortKind : uint8_t { kRdma, kEthernet };

// One network port: an RDMA device's port (mlx5_0 port 1) or a netdev (eth0).
struct NetPort {
  std::string name;  // mlx5_0, eth0
  PortKind kind = PortKind::kEthernet;
  std::string busId;     // PCI function it belongs to; "" for a port with no PCI function
  int port = 1;          // RDMA port number; a netdev's dev_port + 1
  double speedMbps = 0;  // 0 unknown
  bool up = false;
  uint64_t guid = 0;
  int numaNode = -1;                 // for a port with no PCI function
  std::vector<std::string> netdevs;  // an RDMA port's netdevs on the same function (ib0)
};

struct GpuEntry {
  std::string busId;
  GpuVendor vendor = GpuVendor::kUnknown;
  int dev = -1;
  int sm = 0;
  std::string arch;
  std::string model;
};

// A bundle of NVLinks or xGMI links from GPU `from` to `to` (a GPU, or an NVSwitch).
struct GpuLink {
  std::string from;
  std::string to;  // "" with toSwitch: an NVSwitch with no bus id (the machine's one placeholder)
  LinkType type = LinkType::kNvLink;
  int count = 1;
  bool toSwitch = false;
};

struct Inventory {
  std::vector<NumaDomain> numa;
  CpuIdentity cpu;
  std::vector<PciFunction> pci;
  std::vector<NetPort> ports;
  std::vector<GpuEntry> gpus;
  std::vector<GpuLink> gpuLinks;

  PciFunction* findPci(const std::string& busId);
  const PciFunction* findPci(const std::string& busId) const;
  GpuEntry* findGpu(const std::string& busId);
  // True when a link between these two GPUs (either direction) or from `from` to this switch
  // is already listed.
  bool hasGpuLink(const std::string& from, const std::string& to) const;
};

// ---- hwloc (detect_hwloc.cc): the live machine only.
DetectSourceResult readHwloc(Inventory* inv);

// ---- sysfs (detect_sysfs.cc). `root` is the file-system root ("/" on a live machine).
// Everything below reads root + "/sys/..." or root + "/proc/...".
DetectSourceResult readSysfs(const std::string& root, Inventory* inv);
// The parts, for tests and for readSysfs.
bool readSysfsNuma(const std::string& root, std::vector<NumaDomain>* out);
bool readProcCpuinfo(const std::string& root, CpuIdentity* out);
bool readSysfsPci(const std::string& root, std::vector<PciFunction>* out);
void readSysfsNetPorts(const std::string& root, std::vector<NetPort>* out, std::vector<std::string>* notes);

// hwloc's notion of an "important" PCI function (storage, network, display, processors,
// accelerators, bridges): what both sources keep, so the model does not depend on which ran.
bool isImportantPciClass(uint32_t pciClass24);

// ---- NVML (detect_nvml.cc): GPUs and NVLinks. `library` is the name given to dlopen.
DetectSourceResult readNvml(const std::string& library, Inventory* inv);

// ---- libfabric (detect_ofi.cc): providers per NIC, and NICs only it reports. `library` is
// the name given to dlopen.
DetectSourceResult readLibfabric(const std::string& library, Inventory* inv);

// ---- ROCm (detect_rocm.cc).
DetectSourceResult readKfd(const std::string& root, Inventory* inv);
DetectSourceResult readRocmSmi(const std::string& library, Inventory* inv);
// KFD's gfx_target_version (major*10000 + minor*100 + stepping) as a gfx name: 90010 ->
// "gfx90a", 90402 -> "gfx942", 110000 -> "gfx1100"; "" for 0 or nonsense.
std::string gfxArchFromTargetVersion(uint32_t version);
// KFD io_link types (the kernel's CRAT_IOLINK_TYPE_*, libhsakmt's HSA_IOLINK_TYPE_*).
constexpr int kKfdIoLinkPcie = 2;
constexpr int kKfdIoLinkXgmi = 11;

// A library loaded with dlopen, closed when this goes (detect.cc). Vendor libraries are loaded
// at run time so that one build runs on NVIDIA, AMD and CPU-only machines.
class SharedLibrary {
 public:
  SharedLibrary() = default;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  ~SharedLibrary();
  // False with dlerror's text in *why when it cannot be loaded.
  bool open(const std::string& name, std::string* why);
  void* symbol(const char* name) const;
  const std::string& name() const { return name_; }

 private:
  void* handle_ = nullptr;
  std::string name_;
};

// ---- small parsers shared by the sources (detect_sysfs.cc).
// Whole file, trailing white space removed; false when it cannot be read.
bool readTextFile(const std::string& path, std::string* text);
// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; false on malformed text ("" is an empty list).
bool parseCpuList(const std::string& text, std::vector<int>* cpus);
// NCCL's affinity text: 32-bit hex words, most significant first, comma-separated
// ({0,1} -> "00000003"; CPUs 0-63 -> "ffffffff,ffffffff"); "" for no CPUs.
std::string cpusToAffinity(const std::vector<int>& cpus);
// "16.0 GT/s PCIe" -> 16; "Unknown" -> 0.
double parseLinkSpeedGTs(const std::string& text);
// An RDMA port's rate file, "400 Gb/sec (4X NDR)" -> 400000 Mb/s; 0 when unparsable.
double parseIbRateMbps(const std::string& text);
// "0000:18:00.0" exactly (the form sysfs uses for a PCI function's directory).
bool isPciDirName(const std::string& name);
// The PCI function a sysfs device path belongs to: the nearest component, walking up from
// the link's target, that names a PCI function; "" when there is none (a virtual device).
std::string pciFunctionOfSysfsLink(const std::string& linkPath);

}  // namespace detect
}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_DETECT_SOURCES_H_
