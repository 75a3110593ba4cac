// What the kernel translation units share (kernels.cu: the reduce-copy kernels; lane_kernels.cu:
// the lane program): the vendor's few names for a launch, the device limits the runtime module
// set through weftKernelSetLaunchLimits, and the switch from a weftDataType_t to its element
// type. Compiled by nvcc and hipcc only; everything else about the device (streams, memory,
// attributes) is the runtime module's.
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

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) for the element type T of `type`; the invalid-value code for an unknown
// type.
template <typename F>
int withType(weftDataType_t type, F f) {
  switch (type) {
    case weftInt8:
      return f(TypeTag<int8_t>{});
    case weftUint8:
      return f(TypeTag<uint8_t>{});
    case weftInt32:
      return f(TypeTag<int32_t>{});
    case weftUint32:
      return f(TypeTag<uint32_t>{});
    case weftInt64:
      return f(TypeTag<int64_t>{});
    case weftUint64:
      return f(TypeTag<uint64_t>{});
    case weftFloat16:
      return f(TypeTag<Half>{});
    case weftFloat32:
      return f(TypeTag<float>{});
    case weftFloat64:
      return f(TypeTag<double>{});
    case weftBfloat16:
      return f(TypeTag<BFloat16>{});
    case weftFloat8e4m3:
      return f(TypeTag<Fp8E4M3>{});
    case weftFloat8e5m2:
      return f(TypeTag<Fp8E5M2>{});
    default:
      return static_cast<int>(kGpuInvalidValue);
  }
}

}  // namespace kernel
}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_DEVICE_KERNEL_LAUNCH_CUH_
