// The lane program's kernels and their dispatcher (weftKernelLaunchLanes, kernel_api.h), compiled
// beside kernels.cu by nvcc into libweft-cuda.so and by hipcc into libweft-hip.so. A translation
// unit of its own: its 72 kernels (one per datatype and op, premul-sum included) take as long to build as the
// reduce-copy ones, and it changes with lane_program.cuh, not with them.
//
// Block b of a launch runs lane b of lane_program.cuh with its threads; the leader is thread 0
// and the lane's shared turn sits in the block's shared memory.
#include <cstddef>
#include <cstdint>

#include "collectives/device/kernel_launch.cuh"
#include "collectives/device/lane_program.cuh"
#include "collectives/device/launch_shape.h"
#include "collectives/device/reduce_copy.cuh"
#include "collectives/dispatch.h"
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
  LaneTurn* shared;  // the block's turn
  void* room;        // the block's dynamic shared memory, for laneStage
  size_t roomBytes;
  WEFT_DEVICE size_t tid() const { return threadIdx.x; }
  WEFT_DEVICE size_t nthreads() const { return blockDim.x; }
  WEFT_DEVICE bool leader() const { return threadIdx.x == 0; }
  WEFT_DEVICE void barrier() const { __syncthreads(); }
  WEFT_DEVICE LaneTurn& turn() const { return *shared; }
  WEFT_DEVICE void* stage() const { return room; }
  WEFT_DEVICE size_t stageBytes() const { return roomBytes; }
};

template <typename T, typename Steps>
WEFT_GLOBAL void __launch_bounds__(kMaxThreadsPerLane) laneKernel(device::LaneLaunch launch, Steps steps,
                                                                    size_t stageBytes) {
  __shared__ LaneTurn turn;
  extern __shared__ uint64_t weftLaneRoom[];  // laneStage's tables, as many bytes as the launch gave
  BlockLane ctx{&turn, weftLaneRoom, stageBytes};
  runLane<T>(launch, static_cast<int>(blockIdx.x), steps, ctx);
}

namespace {

// Shared memory for laneStage: enough for the launch's longest lane (maxLaneSteps; the lane
// table itself is in device memory), at most kLaneStageMaxBytes (a longer lane reads the
// launch's tables). None when the launch does not say.
size_t laneStageRoom(const device::LaneLaunch& launch) {
  const size_t bytes = laneStageBytes(launch.maxLaneSteps);
  return bytes <= kLaneStageMaxBytes ? bytes : kLaneStageMaxBytes;
}

template <typename T, typename Steps>
int launchLanes(const device::LaneLaunch& launch, const Steps& steps, unsigned threads, GpuStream stream) {
  const size_t room = laneStageRoom(launch);
  laneKernel<T, Steps><<<static_cast<unsigned>(launch.nLanes), threads, room, stream>>>(launch, steps, room);
  return static_cast<int>(gpuLaunchError());
}

// Partial results combine with the op; avg sums until a step marked final, which divides; a
// premul-sum multiplies each rank's input by the scalar where it enters, then sums.
template <typename T>
int launchLanesOp(const device::LaneLaunch& launch, unsigned threads, GpuStream stream) {
  return withRedOp<T>(static_cast<int>(launch.op), static_cast<int>(kGpuInvalidValue), [&](auto op) {
    return launchLanes<T>(launch, laneStepsFor<T>(op, launch.divisor), threads, stream);
  });
}

// The fewest blocks of laneKernel<T, Steps> an SM / CU holds resident at `threads` threads, folded
// into *least (0: none yet).
template <typename T, typename Steps>
int foldOccupancy(unsigned threads, int* least) {
  int blocks = 0;
  // At the most shared memory a launch gives a block (laneStageRoom), so that every launch fits.
  const GpuError e = gpuOccupancy(&blocks, laneKernel<T, Steps>, threads, kLaneStageMaxBytes);
  if (e != kGpuSuccess) return static_cast<int>(e);
  if (*least == 0 || blocks < *least) *least = blocks;
  return 0;
}

// Over every op's kernel for type T (the instantiations launchLanesOp picks from).
template <typename T>
int foldOccupancyOps(unsigned threads, int* least) {
  int rc = foldOccupancy<T, PairwiseSteps<T, OpSum<T>>>(threads, least);
  if (rc == 0) rc = foldOccupancy<T, PairwiseSteps<T, OpProd<T>>>(threads, least);
  if (rc == 0) rc = foldOccupancy<T, PairwiseSteps<T, OpMax<T>>>(threads, least);
  if (rc == 0) rc = foldOccupancy<T, PairwiseSteps<T, OpMin<T>>>(threads, least);
  if (rc == 0) rc = foldOccupancy<T, AvgSteps<T>>(threads, least);
  if (rc == 0) rc = foldOccupancy<T, PreMulSumSteps<T>>(threads, least);
  return rc;
}

// The block size a launch with threadsPerLane == 0 gets: whole warps, at most kMaxThreadsPerLane
// threads (a warp is no larger: validLaunchLimits).
unsigned defaultLaneThreads() {
  const int warp = currentLaunchLimits().warpSize;
  return static_cast<unsigned>(kMaxThreadsPerLane / warp * warp);
}

// What the kernels rely on; the runtime has checked the rest (checkLaneLaunch).
bool validLaunch(const device::LaneLaunch& l) {
  if (dataTypeSize(l.type) == 0 || !(isValidRedOp(l.op) || l.op == device::kLaneOpPreMulSum)) return false;
  if (l.op == weftAvg && l.divisor < 1) return false;
  if (l.nLanes < 1 || l.maxLaneSteps < 0 || l.threadsPerLane < 0 || l.threadsPerLane > kMaxThreadsPerLane) return false;
  return l.lanes != nullptr && l.steps != nullptr && l.error != nullptr && (l.nFifos == 0 || l.fifos != nullptr);
}

}  // namespace
}  // namespace kernel
}  // namespace coll
}  // namespace weft

extern "C" int weftKernelLaunchLanes(const weft::device::LaneLaunch* launch, void* stream) {
  using namespace weft::coll::kernel;
  using weft::coll::withDataType;
  if (launch == nullptr || !validLaunch(*launch)) return static_cast<int>(kGpuInvalidValue);
  unsigned threads = static_cast<unsigned>(launch->threadsPerLane);
  if (threads == 0) threads = defaultLaneThreads();
  const GpuStream s = static_cast<GpuStream>(stream);
  return withDataType(launch->type, static_cast<int>(kGpuInvalidValue),
                      [&](auto t) { return launchLanesOp<typename decltype(t)::type>(*launch, threads, s); });
}

extern "C" int weftKernelLaneOccupancy(int threadsPerLane, int* blocksPerUnit) {
  using namespace weft::coll::kernel;
  using weft::coll::withDataType;
  if (blocksPerUnit == nullptr || threadsPerLane < 0 || threadsPerLane > kMaxThreadsPerLane) {
    return static_cast<int>(kGpuInvalidValue);
  }
  const unsigned threads = threadsPerLane == 0 ? defaultLaneThreads() : static_cast<unsigned>(threadsPerLane);
  int least = 0;
  for (int t = 0; t < weftNumTypes; ++t) {
    const int rc = withDataType(static_cast<weftDataType_t>(t), static_cast<int>(kGpuInvalidValue),
                                [&](auto tag) { return foldOccupancyOps<typename decltype(tag)::type>(threads, &least); });
    if (rc != 0) return rc;
  }
  *blocksPerUnit = least;
  return 0;
}
