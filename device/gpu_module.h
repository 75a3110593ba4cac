// The contract between libweft.so and a GPU module (libweft-cuda.so, libweft-hip.so): one C
// entry point, whose signature never changes, and an ABI version that changes whenever the
// Runtime class (device.h) or ReduceCopyArgs (kernel_api.h) does. The loader (gpu_loader.cc)
// passes the version it was built with; a module built for another one refuses and says so.
#ifndef WEFT_DEVICE_GPU_MODULE_H_
#define WEFT_DEVICE_GPU_MODULE_H_

#include <cstddef>
#include <cstdio>

namespace weft {
namespace device {

class Runtime;

// Bump on any change to device.h's Runtime, DeviceProps, PointerInfo, IpcHandle or to
// kernel_api.h. A module may be built with another value (tests do) by defining it.
#ifndef WEFT_GPU_MODULE_ABI
// 6: eventCreate takes an EventKind; 7: allocDeviceShared / allocHostShared; 8: LaneLaunch's
// maxLaneSteps and hostLanes (lane tables in device memory); 9: the LL protocol (FifoView's LL
// region and stage, LaneStep::ll, LaneDesc::llSliceElems, kLaneBadProtocol).
#define WEFT_GPU_MODULE_ABI 9
#endif
constexpr int kGpuModuleAbi = WEFT_GPU_MODULE_ABI;

constexpr const char* kGpuModuleEntry = "weftCreateGpuRuntime";

// Returns a new Runtime owned by the caller, or null with a sentence in whyNot saying why
// (wrong ABI, no driver, no device). Never throws.
using GpuModuleEntry = Runtime* (*)(int abiVersion, char* whyNot, size_t whyNotBytes);

// Module side of the version check: false, with the reason in whyNot, when the caller was
// built for another ABI.
inline bool gpuModuleAbiMatches(int callerAbi, char* whyNot, size_t whyNotBytes) {
  if (callerAbi == kGpuModuleAbi) return true;
  std::snprintf(whyNot, whyNotBytes,
                "built for Weft device ABI %d but libweft.so uses ABI %d; install the GPU modules that came "
                "with this libweft.so",
                kGpuModuleAbi, callerAbi);
  return false;
}

}  // namespace device
}  // namespace weft

#endif  // WEFT_DEVICE_GPU_MODULE_H_
