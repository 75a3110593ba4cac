// Detection: builds the System model of the machine this process runs on. weft-topo prints it
// (with the report below); src/core builds communicators' topologies from it.
//
// Several sources, each optional. A source that is absent or fails is noted in the report and
// logged (WARN when something expected failed, INFO when a vendor library is simply not
// installed), and detection goes on with the rest; it never aborts on a machine it does not
// understand. In order:
//   hwloc     CPUs and NUMA nodes with their cpusets, CPU vendor/family/model, the PCI tree
//             (host bridges, bridges/switches, devices), OS devices (net, openfabrics).
//   sysfs     what hwloc lacks: PCIe link speed and width, NUMA node of each device, the whole
//             PCI tree and the NUMA nodes when hwloc is unavailable, NIC ports and their speed
//             (/sys/class/infiniband, /sys/class/net).
//   nvml      NVIDIA GPUs and their NVLinks (libnvidia-ml.so.1, loaded at run time).
//   rocm-kfd  AMD GPUs and their xGMI links from the KFD topology in sysfs.
//   rocm-smi  AMD link types from librocm_smi64 (loaded at run time), to fill what KFD lacked.
// Links get their bandwidth from link_bw.h.
#ifndef WEFT_TOPOLOGY_DETECT_H_
#define WEFT_TOPOLOGY_DETECT_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "topology/system.h"

namespace weft {
namespace topo {

enum class SourceState {
  kUsed,     // read and used
  kAbsent,   // not on this machine (no library, no such sysfs tree): nothing to worry about
  kFailed,   // present but could not be read: detection went on without it (a warning)
  kSkipped,  // not tried (disabled by DetectOptions)
};
const char* sourceStateName(SourceState s);  // "used", "absent", "failed", "skipped"

struct DetectSourceResult {
  std::string name;  // "hwloc", "sysfs", "nvml", "rocm-kfd", "rocm-smi"
  SourceState state = SourceState::kSkipped;
  std::string detail;  // what it found, or why it was not used and what to do about it
};

struct DetectReport {
  std::vector<DetectSourceResult> sources;  // in the order tried
  // Gaps that remain in the model, e.g. an interface whose speed could not be read.
  std::vector<std::string> notes;

  const DetectSourceResult* find(const std::string& name) const;  // nullptr when not tried
  // One line per source ("hwloc      used    1 NUMA node, 2 CPUs, 2 PCI functions"), then notes.
  std::string format() const;
};

struct DetectOptions {
  // File-system root under which /sys and /proc are read. Tests point it at a fake tree;
  // hwloc reads the real machine only, so it is skipped unless this is "/".
  std::string root = "/";
  bool useHwloc = true;
  std::string nvmlLibrary = "libnvidia-ml.so.1";  // "" skips NVML
  std::string rsmiLibrary = "librocm_smi64.so";   // "" skips ROCm SMI (".so.N" names are tried too)
  std::string fabricLibrary = "libfabric.so.1";   // "" skips libfabric
};

// Fills *out (replacing its contents) with what the sources find; `report` may be null.
// Fails only on a null `out`: with every source gone the model still holds one CPU node.
[[nodiscard]] Status detectSystem(System* out, DetectReport* report);
[[nodiscard]] Status detectSystem(const DetectOptions& options, System* out, DetectReport* report);

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_DETECT_H_
