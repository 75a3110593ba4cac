// The meeting point of the device runtime and the kernels: the runtime (gpu_runtime.cu) checks
// a launch and calls weftKernelReduceCopy, which collectives/device/kernels.cu defines in the
// same module (libweft-cuda.so / libweft-hip.so). Plain data only: nvcc, hipcc and the host
// compiler all read this file. Changing it means bumping kGpuModuleAbi (gpu_module.h).
#ifndef WEFT_DEVICE_KERNEL_API_H_
#define WEFT_DEVICE_KERNEL_API_H_

#include <stdint.h>

#include "weft/weft.h"

namespace weft {
namespace device {

constexpr int kMaxReduceSrcs = 8;
constexpr int kMaxReduceDsts = 4;

// dsts[j][i] = op(srcs[0][i], ..., srcs[nSrcs-1][i]) for i < count and every j < nDsts; with
// one source it is a copy (broadcast to several destinations). weftAvg sums, then divides by
// `divisor` (the rank count; integer division for integer types).
struct ReduceCopyArgs {
  weftDataType_t type = weftFloat32;
  weftRedOp_t op = weftSum;
  int32_t nSrcs = 0;
  const void* srcs[kMaxReduceSrcs] = {};
  int32_t nDsts = 0;
  void* dsts[kMaxReduceDsts] = {};
  uint64_t count = 0;    // elements, not bytes
  uint64_t divisor = 1;  // at most 2^32 - 1
};

}  // namespace device
}  // namespace weft

// Defined by collectives/device/kernels.cu. `stream` is a cudaStream_t / hipStream_t (null:
// the default stream). Returns 0, or the runtime's error code (cudaError_t / hipError_t) of
// the failed launch. The runtime has checked the arguments (checkReduceCopyArgs and where
// each buffer lives) before it calls.
extern "C" int weftKernelReduceCopy(const weft::device::ReduceCopyArgs* args, void* stream);

// Also defined by kernels.cu: the current device's warp size and the most blocks a launch may
// use (its SM / CU count), which size the grid. The runtime sets them before each launch.
// Returns 0, or the runtime's invalid-value code for warpSize outside 1..1024 or maxBlocks < 1.
extern "C" int weftKernelSetLaunchLimits(int warpSize, int maxBlocks);

#endif  // WEFT_DEVICE_KERNEL_API_H_
