// PCI class and vendor codes that topology files use (formats.md section 2), shared by the
// reader, the writer and the merge so that all three classify a <pci> element the same way.
#ifndef WEFT_TOPOLOGY_TOPO_FILE_CLASSES_H_
#define WEFT_TOPOLOGY_TOPO_FILE_CLASSES_H_

#include <cstdint>
#include <string>

namespace weft {
namespace topo {

constexpr uint32_t kPciClassNvSwitch = 0x068000;
constexpr uint32_t kPciClassBridge = 0x060400;
constexpr uint32_t kPciClassNvidiaGpu = 0x030200;  // 3D controller
constexpr uint32_t kPciClassAmdGpu = 0x038000;     // display controller (MI250X); MI300X reports 0x120000
constexpr uint32_t kPciVendorNvidia = 0x10de;
constexpr uint32_t kPciVendorAmd = 0x1002;

// The target NCCL writes for an NVLink to an NVSwitch it has no bus id for. formats.md says only
// that such a target is not a valid bus id and that tclass 0x068000 marks it: the reader takes
// any such target, the writer writes this one (the form seen in NCCL dumps of H100 systems).
constexpr const char* kNvSwitchPlaceholder = "fffffff:ffff:ff";

inline bool isBridgeClass(uint32_t c) { return (c >> 8) == 0x0604; }
inline bool isNvSwitchClass(uint32_t c) { return c == kPciClassNvSwitch; }
// Display controllers (0x03xxxx) and processing accelerators (0x12xxxx).
inline bool isGpuClass(uint32_t c) { return (c >> 16) == 0x03 || (c >> 16) == 0x12; }
// Ethernet, InfiniBand and other network controllers.
inline bool isNetworkClass(uint32_t c) { return (c >> 16) == 0x02; }

// RCCL writes a number in <gpu arch=...> (feature bits), not a name: such a value is not read
// as GpuInfo::arch, and an arch that looks like one is not written.
inline bool isArchNumber(const std::string& arch) { return arch.find_first_not_of("0123456789") == std::string::npos; }

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_TOPO_FILE_CLASSES_H_
