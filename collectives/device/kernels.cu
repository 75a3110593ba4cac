// The GPU kernels of the collectives and their dispatcher, one translation unit compiled by
// nvcc into libweft-cuda.so and by hipcc into libweft-hip.so (DESIGN.md, "Device code").
//
// A kernel is reduce_copy.cuh's element-wise loop with (tid, nthreads) = (global thread index,
// threads in the grid); there is one per (datatype, op) and one copy per element size. The
// runtime module calls weftKernelReduceCopy (declared with ReduceCopyArgs), which picks the
// kernel for (type, op), sizes the grid from the message and the device's limits, and launches.
//
// The only runtime calls here are the launch and the error query, through the few names below;
// everything else about the device (streams, memory, attributes) is the runtime module's.
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#elif defined(__CUDACC__)
#include <cuda_runtime.h>
#else
#error "kernels.cu is compiled by nvcc or hipcc"
#endif

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "collectives/device/launch_shape.h"
#include "collectives/device/reduce_copy.cuh"
#include "device/kernel_api.h"

// Tells the kernels the device's warp size and the most blocks one launch may use; the runtime
// module calls it once it has queried the device (until then: warp size 32 for CUDA, 64 for HIP,
// and 64 blocks). Returns 0, or the invalid-value code when deviceWarpSize is not 1..512 or
// maxBlocks < 1. (Its declaration belongs in device/kernel_api.h next to weftKernelReduceCopy.)
extern "C" int weftKernelSetLaunchLimits(int deviceWarpSize, int maxBlocks);

namespace weft {
namespace coll {
namespace kernel {
namespace {

#if defined(__HIPCC__)
using GpuStream = hipStream_t;
using GpuError = hipError_t;
constexpr GpuError kGpuSuccess = hipSuccess;
constexpr GpuError kGpuInvalidValue = hipErrorInvalidValue;
constexpr int kDefaultWarpSize = 64;  // the larger AMD wavefront: its multiples suit RDNA too
GpuError gpuLaunchError() { return hipGetLastError(); }
#else
using GpuStream = cudaStream_t;
using GpuError = cudaError_t;
constexpr GpuError kGpuSuccess = cudaSuccess;
constexpr GpuError kGpuInvalidValue = cudaErrorInvalidValue;
constexpr int kDefaultWarpSize = 32;
GpuError gpuLaunchError() { return cudaGetLastError(); }
#endif

static_assert(kMaxSrcs == device::kMaxReduceSrcs && kMaxDsts == device::kMaxReduceDsts,
              "reduce_copy.cuh and kernel_api.h agree on the source and destination counts");

std::atomic<int> gWarpSize{kDefaultWarpSize};
std::atomic<int> gMaxBlocks{64};

}  // namespace

// One thread per (tid, nthreads) share of the message. The bound is the block size launchShapeFor
// never exceeds: hipcc then gives each thread the registers of the unrolled packs (its default
// assumes 1024-thread blocks and spills the 1-byte types to scratch), and nvcc keeps to 64
// registers so that two blocks fit on an SM.
template <typename T, typename Step>
WEFT_GLOBAL void __launch_bounds__(kTargetThreadsPerBlock) reduceCopyKernel(device::ReduceCopyArgs args, Step step) {
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t nthreads = static_cast<size_t>(gridDim.x) * blockDim.x;
  reduceCopy<T>(step, args.nSrcs, args.srcs, args.nDsts, args.dsts, args.count, tid, nthreads);
}

namespace {

template <typename T, typename Step>
int launch(const device::ReduceCopyArgs& args, const Step& step, GpuStream stream) {
  const LaunchLimits limits{gWarpSize.load(std::memory_order_relaxed), gMaxBlocks.load(std::memory_order_relaxed)};
  const LaunchShape shape = launchShapeFor(args.count * sizeof(T), limits, kUnroll);
  reduceCopyKernel<T, Step><<<shape.blocks, shape.threadsPerBlock, 0, stream>>>(args, step);
  return static_cast<int>(gpuLaunchError());
}

template <typename T>
int launchOp(const device::ReduceCopyArgs& args, GpuStream stream) {
  switch (args.op) {
    case weftSum:
      return launch<T>(args, PairwiseStep<T, OpSum<T>>{}, stream);
    case weftProd:
      return launch<T>(args, PairwiseStep<T, OpProd<T>>{}, stream);
    case weftMax:
      return launch<T>(args, PairwiseStep<T, OpMax<T>>{}, stream);
    case weftMin:
      return launch<T>(args, PairwiseStep<T, OpMin<T>>{}, stream);
    case weftAvg:
      return launch<T>(args, AvgStep<T>{static_cast<uint32_t>(args.divisor)}, stream);
    default:
      return static_cast<int>(kGpuInvalidValue);
  }
}

// One source: a copy of the bytes, whatever the type and op, by element size.
int launchCopy(const device::ReduceCopyArgs& args, size_t elemSize, GpuStream stream) {
  switch (elemSize) {
    case 1:
      return launch<uint8_t>(args, CopyStep<uint8_t>{}, stream);
    case 2:
      return launch<uint16_t>(args, CopyStep<uint16_t>{}, stream);
    case 4:
      return launch<uint32_t>(args, CopyStep<uint32_t>{}, stream);
    case 8:
      return launch<uint64_t>(args, CopyStep<uint64_t>{}, stream);
    default:
      return static_cast<int>(kGpuInvalidValue);
  }
}

int launchTyped(const device::ReduceCopyArgs& args, GpuStream stream) {
  switch (args.type) {
    case weftInt8:
      return launchOp<int8_t>(args, stream);
    case weftUint8:
      return launchOp<uint8_t>(args, stream);
    case weftInt32:
      return launchOp<int32_t>(args, stream);
    case weftUint32:
      return launchOp<uint32_t>(args, stream);
    case weftInt64:
      return launchOp<int64_t>(args, stream);
    case weftUint64:
      return launchOp<uint64_t>(args, stream);
    case weftFloat16:
      return launchOp<Half>(args, stream);
    case weftFloat32:
      return launchOp<float>(args, stream);
    case weftFloat64:
      return launchOp<double>(args, stream);
    case weftBfloat16:
      return launchOp<BFloat16>(args, stream);
    case weftFloat8e4m3:
      return launchOp<Fp8E4M3>(args, stream);
    case weftFloat8e5m2:
      return launchOp<Fp8E5M2>(args, stream);
    default:
      return static_cast<int>(kGpuInvalidValue);
  }
}

bool validArgs(const device::ReduceCopyArgs& a) {
  if (dataTypeSize(a.type) == 0 || !isValidRedOp(a.op)) return false;
  if (a.nSrcs < 1 || a.nSrcs > kMaxSrcs || a.nDsts < 1 || a.nDsts > kMaxDsts) return false;
  if (a.op == weftAvg && a.divisor > UINT32_MAX) return false;  // reduce.h's divisor is a 32-bit rank count
  if (a.count == 0) return true;
  for (int s = 0; s < a.nSrcs; ++s) {
    if (a.srcs[s] == nullptr) return false;
  }
  for (int d = 0; d < a.nDsts; ++d) {
    if (a.dsts[d] == nullptr) return false;
  }
  return true;
}

}  // namespace
}  // namespace kernel
}  // namespace coll
}  // namespace weft

extern "C" int weftKernelSetLaunchLimits(int deviceWarpSize, int maxBlocks) {
  using namespace weft::coll::kernel;
  if (!validLaunchLimits(LaunchLimits{deviceWarpSize, maxBlocks})) return static_cast<int>(kGpuInvalidValue);
  gWarpSize.store(deviceWarpSize, std::memory_order_relaxed);
  gMaxBlocks.store(maxBlocks, std::memory_order_relaxed);
  return static_cast<int>(kGpuSuccess);
}

extern "C" int weftKernelReduceCopy(const weft::device::ReduceCopyArgs* args, void* stream) {
  using namespace weft::coll::kernel;
  if (args == nullptr || !validArgs(*args)) return static_cast<int>(kGpuInvalidValue);
  if (args->count == 0) return static_cast<int>(kGpuSuccess);
  const GpuStream s = static_cast<GpuStream>(stream);
  if (args->nSrcs == 1) return launchCopy(*args, weft::coll::dataTypeSize(args->type), s);
  return launchTyped(*args, s);
}
