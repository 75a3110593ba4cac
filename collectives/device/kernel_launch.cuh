// What the kernel translation units share (kernels.cu: the reduce-copy kernels; lane_kernels.cu:
// the lane program): the vendor's few names for a launch and the device limits the runtime module
// set through weftKernelSetLaunchLimits (the switches from a weftDataType_t to its element type
// and from an op to its functor are collectives/dispatch.h's, shared with the host). Compiled by
// nvcc and hipcc only; everything else about the device (streams, memory, attributes) is the
// runtime module's.
#ifndef WEFT_COLLECTIVES_DEVICE_KERNEL_LAUNCH_CUH_
#define WEFT_COLLECTIVES_DEVICE_KERNEL_LAUNCH_CUH_

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#elif defined(__CUDACC__)
#include <cuda_runtime.h>
#else
#error "kernel_launch.cuh is compiled by nvcc or hipcc"
#endif

#include <cstdint>

#include "collectives/datatypes.h"
#include "collectives/device/launch_shape.h"

namespace weft {
namespace coll {
namespace kernel {

#if defined(__HIPCC__)
using GpuStream = hipStream_t;
using GpuError = hipError_t;
constexpr GpuError kGpuSuccess = hipSuccess;
constexpr GpuError kGpuInvalidValue = hipErrorInvalidValue;
constexpr int kDefaultWarpSize = 64;  // the larger AMD wavefront: its multiples suit RDNA too
inline GpuError gpuLaunchError() { return hipGetLastError(); }
// Blocks of `kernel` one CU holds resident at `threads` threads per block and `sharedBytes` of
// dynamic shared memory each, on the current device.
template <typename Kernel>
GpuError gpuOccupancy(int* blocks, Kernel kernel, unsigned threads, size_t sharedBytes) {
  return hipOccupancyMaxActiveBlocksPerMultiprocessor(blocks, reinterpret_cast<const void*>(kernel),
                                                      static_cast<int>(threads), sharedBytes);
}
#else
using GpuStream = cudaStream_t;
using GpuError = cudaError_t;
constexpr GpuError kGpuSuccess = cudaSuccess;
constexpr GpuError kGpuInvalidValue = cudaErrorInvalidValue;
constexpr int kDefaultWarpSize = 32;
inline GpuError gpuLaunchError() { return cudaGetLastError(); }
template <typename Kernel>
GpuError gpuOccupancy(int* blocks, Kernel kernel, unsigned threads, size_t sharedBytes) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, kernel, static_cast<int>(threads), sharedBytes);
}
#endif

// The limits weftKernelSetLaunchLimits set last (kernels.cu keeps them): until the runtime
// module calls it, kDefaultWarpSize and 64 blocks.
LaunchLimits currentLaunchLimits();

}  // namespace kernel
}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_DEVICE_KERNEL_LAUNCH_CUH_
