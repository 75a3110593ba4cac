// The GPU runtime (gpu_runtime.cu): the device interface (device.h) over the CUDA or the HIP
// runtime, written once against gpu_api.h. The module's entry point (gpu_module_entry.cu)
// queries the devices and makes one. Compiled by nvcc or hipcc only.
#ifndef WEFT_DEVICE_GPU_RUNTIME_H_
#define WEFT_DEVICE_GPU_RUNTIME_H_

#include <string>
#include <vector>

#include "device/device.h"

namespace weft {
namespace device {

// What each device can do, queried once when the module starts.
struct GpuDeviceLimits {
  int warpSize = 0;
  int multiProcessors = 0;
  bool pageableAccess = false;  // kernels may touch pageable host memory (HMM, ATS)
};

// A new runtime over devices 0..devices.size()-1, owned by the caller; description is what
// Runtime::description() answers.
Runtime* newGpuRuntime(std::vector<GpuDeviceLimits> devices, std::string description);

}  // namespace device
}  // namespace weft

#endif  // WEFT_DEVICE_GPU_RUNTIME_H_
