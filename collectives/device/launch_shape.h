// The grid of a reduce-copy launch: how many blocks of how many threads kernels.cu asks for.
// Plain host code, so the unit tests check it; the limits come from the device at run time
// (the runtime module passes them in through weftKernelSetLaunchLimits).
#ifndef WEFT_COLLECTIVES_DEVICE_LAUNCH_SHAPE_H_
#define WEFT_COLLECTIVES_DEVICE_LAUNCH_SHAPE_H_

#include <cstddef>

namespace weft {
namespace coll {
namespace kernel {

struct LaunchLimits {
  int warpSize;   // of the device: 32 on NVIDIA and RDNA, 64 on CDNA
  int maxBlocks;  // the most blocks one launch may use (e.g. the number of SMs / CUs)
};

struct LaunchShape {
  unsigned blocks;
  unsigned threadsPerBlock;
};

// About this many threads per block: a multiple of both wavefront sizes, and at most half the
// 1024 that both vendors allow, leaving registers for the unrolled packs.
constexpr int kTargetThreadsPerBlock = 512;

// False for limits that make no sense: a warp size outside 1..kTargetThreadsPerBlock (the
// kernels are compiled for blocks of at most that many threads), or no block.
inline bool validLaunchLimits(const LaunchLimits& limits) {
  return limits.warpSize >= 1 && limits.warpSize <= kTargetThreadsPerBlock && limits.maxBlocks >= 1;
}

// Blocks of whole warps, at most kTargetThreadsPerBlock threads each (limits must be valid);
// enough blocks for every thread to have `packsPerThread` 16-byte packs of the `bytes` of the
// message, at least one and at most limits.maxBlocks (the kernels loop over larger messages).
inline LaunchShape launchShapeFor(size_t bytes, const LaunchLimits& limits, size_t packsPerThread) {
  const unsigned warps = static_cast<unsigned>(kTargetThreadsPerBlock / limits.warpSize);
  const unsigned threads = warps * static_cast<unsigned>(limits.warpSize);
  const size_t packs = (bytes + 15) / 16;
  const size_t perBlock = static_cast<size_t>(threads) * (packsPerThread == 0 ? 1 : packsPerThread);
  size_t blocks = (packs + perBlock - 1) / perBlock;
  if (blocks < 1) blocks = 1;
  if (blocks > static_cast<size_t>(limits.maxBlocks)) blocks = static_cast<size_t>(limits.maxBlocks);
  return LaunchShape{static_cast<unsigned>(blocks), threads};
}

}  // namespace kernel
}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_DEVICE_LAUNCH_SHAPE_H_
