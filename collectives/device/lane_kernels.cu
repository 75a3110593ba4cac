// The lane program's kernels and their dispatcher (weftKernelLaunchLanes, kernel_api.h), compiled
// beside kernels.cu by nvcc into libweft-cuda.so and by hipcc into libweft-hip.so. A translation
// unit of its own: its 72 kernels (one per datatype and op, premul-sum included) take as long to build as the
// reduce-copy ones, and it changes with lane_program.cuh, not with them.
//
// Block b of a launch runs lane b of lane_program.cuh with its threads; the leader is thread 0
// and the lane's shared word sits in the block's shared memory.
#include <cstddef>
#include <cstdint>

#include "collectives/device/kernel_launch.cuh"
#include "collectives/device/lane_program.cuh"
#include "collectives/device/launch_shape.h"
#include "collectives/device/reduce_copy.cuh"
#include "device/kernel_api.h"

namespace weft {
namespace coll {
namespace kernel {

// The largest block a lane launch may ask for (LaneLaunch::threadsPerLane; device.cc's check
// says the same), as for the reduce-copy kernels. Register pressure for gfx90a: bounded by 1024
// threads, hipcc spills 29 of the 60 kernels to scratch; by 512, the 20 of the 16- and 8-bit
// float types (by 256, those tried spill to AGPRs only). nvcc keeps to 64 registers at either.
constexpr int kMaxThreadsPerLane = kTargetThreadsPerBlock;

// The threads of one block as lane_program.cuh's Ctx.
struct BlockLane {
  uint32_t* shared;  // the block's word
  WEFT_DEVICE size_t tid() const { return threadIdx.x; }
  WEFT_DEVICE size_t nthreads() const { return blockDim.x; }
  WEFT_DEVICE bool leader() const { return threadIdx.x == 0; }
  WEFT_DEVICE void barrier() const { __syncthreads(); }
  WEFT_DEVICE uint32_t& word() const { return *shared; }
};

template <typename T, typename Steps>
WEFT_GLOBAL void __launch_bounds__(kMaxThreadsPerLane) laneKernel(device::LaneLaunch launch, Steps steps) {
  __shared__ uint32_t word;
  BlockLane ctx{&word};
  runLane<T>(launch, static_cast<int>(blockIdx.x), steps, ctx);
}

namespace {

template <typename T, typename Steps>
int launchLanes(const device::LaneLaunch& launch, const Steps& steps, unsigned threads, GpuStream stream) {
  laneKernel<T, Steps><<<static_cast<unsigned>(launch.nLanes), threads, 0, stream>>>(launch, steps);
  return static_cast<int>(gpuLaunchError());
}

// Partial results combine with the op; avg sums until a step marked final, which divides; a
// premul-sum multiplies each rank's input by the scalar where it enters, then sums.
template <typename T>
int launchLanesOp(const device::LaneLaunch& launch, unsigned threads, GpuStream stream) {
  switch (static_cast<int>(launch.op)) {
    case weftSum:
      return launchLanes<T>(launch, PairwiseSteps<T, OpSum<T>>{}, threads, stream);
    case weftProd:
      return launchLanes<T>(launch, PairwiseSteps<T, OpProd<T>>{}, threads, stream);
    case weftMax:
      return launchLanes<T>(launch, PairwiseSteps<T, OpMax<T>>{}, threads, stream);
    case weftMin:
      return launchLanes<T>(launch, PairwiseSteps<T, OpMin<T>>{}, threads, stream);
    case weftAvg:
      return launchLanes<T>(launch, AvgSteps<T>{launch.divisor}, threads, stream);
    case device::kLaneOpPreMulSum:
      return launchLanes<T>(launch, PreMulSumSteps<T>{}, threads, stream);
    default:
      return static_cast<int>(kGpuInvalidValue);
  }
}

// What the kernels rely on; the runtime has checked the rest (checkLaneLaunch).
bool validLaunch(const device::LaneLaunch& l) {
  if (dataTypeSize(l.type) == 0 || !(isValidRedOp(l.op) || l.op == device::kLaneOpPreMulSum)) return false;
  if (l.op == weftAvg && l.divisor < 1) return false;
  if (l.nLanes < 1 || l.threadsPerLane < 0 || l.threadsPerLane > kMaxThreadsPerLane) return false;
  return l.lanes != nullptr && l.steps != nullptr && l.error != nullptr && (l.nFifos == 0 || l.fifos != nullptr);
}

}  // namespace
}  // namespace kernel
}  // namespace coll
}  // namespace weft

extern "C" int weftKernelLaunchLanes(const weft::device::LaneLaunch* launch, void* stream) {
  using namespace weft::coll::kernel;
  if (launch == nullptr || !validLaunch(*launch)) return static_cast<int>(kGpuInvalidValue);
  unsigned threads = static_cast<unsigned>(launch->threadsPerLane);
  if (threads == 0) {
    // Whole warps, at most kMaxThreadsPerLane threads (a warp is no larger: validLaunchLimits).
    const int warp = currentLaunchLimits().warpSize;
    threads = static_cast<unsigned>(kMaxThreadsPerLane / warp * warp);
  }
  const GpuStream s = static_cast<GpuStream>(stream);
  return withType(launch->type, [&](auto t) { return launchLanesOp<typename decltype(t)::type>(*launch, threads, s); });
}
