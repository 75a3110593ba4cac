// The reduce-copy kernels and their dispatcher, one translation unit compiled by nvcc into
// libweft-cuda.so and by hipcc into libweft-hip.so (DESIGN.md, "Device code"); lane_kernels.cu,
// beside it in both modules, holds the lane program's.
//
// A kernel is reduce_copy.cuh's element-wise loop with (tid, nthreads) = (global thread index,
// threads in the grid); there is one per (datatype, op) and one copy per element size. The
// runtime module calls weftKernelReduceCopy (declared with ReduceCopyArgs), which picks the
// kernel for (type, op), sizes the grid from the message and the device's limits, and launches.
//
// The only runtime calls here are the launch and the error query (kernel_launch.cuh).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "collectives/device/kernel_launch.cuh"
#include "collectives/device/launch_shape.h"
#include "collectives/device/reduce_copy.cuh"
#include "collectives/dispatch.h"
#include "device/kernel_api.h"

namespace weft {
namespace coll {
namespace kernel {
namespace {

static_assert(kMaxSrcs == device::kMaxReduceSrcs && kMaxDsts == device::kMaxReduceDsts,
              "reduce_copy.cuh and kernel_api.h agree on the source and destination counts");

std::atomic<int> gWarpSize{kDefaultWarpSize};
std::atomic<int> gMaxBlocks{64};

}  // namespace

LaunchLimits currentLaunchLimits() {
  return LaunchLimits{gWarpSize.load(std::memory_order_relaxed), gMaxBlocks.load(std::memory_order_relaxed)};
}

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
  const LaunchShape shape = launchShapeFor(args.count * sizeof(T), currentLaunchLimits(), kUnroll);
  reduceCopyKernel<T, Step><<<shape.blocks, shape.threadsPerBlock, 0, stream>>>(args, step);
  return static_cast<int>(gpuLaunchError());
}

// The kernel of the args' op for type T (dispatch.h); premul-sum is the lane program's only.
template <typename T>
int launchOp(const device::ReduceCopyArgs& args, GpuStream stream) {
  const int invalid = static_cast<int>(kGpuInvalidValue);
  return withRedOp<T>(static_cast<int>(args.op), invalid, [&](auto op) {
    using Tag = decltype(op);
    if constexpr (IsPairwiseOp<Tag>::value) {
      return launch<T>(args, PairwiseStep<T, typename Tag::Functor>{}, stream);
    } else if constexpr (std::is_same<Tag, AvgOp>::value) {
      return launch<T>(args, AvgStep<T>{static_cast<uint32_t>(args.divisor)}, stream);
    } else {
      return invalid;
    }
  });
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
  return withDataType(args.type, static_cast<int>(kGpuInvalidValue),
                      [&](auto t) { return launchOp<typename decltype(t)::type>(args, stream); });
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
