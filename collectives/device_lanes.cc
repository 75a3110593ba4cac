// The lane program compiled by the host compiler: every (type, op) instantiation of runLane with
// one thread per lane. The host runtime's launchLanes runs it, and so do the CPU-only tests.
#include <thread>
#include <vector>

#include "collectives/device/lane_program.cuh"
#include "collectives/device_executor.h"

namespace weft {
namespace coll {
namespace {

using kernel::AvgSteps;
using kernel::PairwiseSteps;
using kernel::PreMulSumSteps;

// One host thread is a lane's whole block.
struct HostLaneCtx {
  kernel::LaneTurn shared{};
  std::vector<uint64_t> room = std::vector<uint64_t>(kernel::kLaneStageMaxBytes / sizeof(uint64_t));
  void* stage() { return room.data(); }
  size_t stageBytes() const { return room.size() * sizeof(uint64_t); }
  size_t tid() const { return 0; }
  size_t nthreads() const { return 1; }
  bool leader() const { return true; }
  void barrier() {}
  kernel::LaneTurn& turn() { return shared; }
};

template <typename T>
void runTyped(const device::LaneLaunch& launch, int lane) {
  HostLaneCtx ctx;
  switch (static_cast<int>(launch.op)) {
    case weftSum:
      return kernel::runLane<T>(launch, lane, PairwiseSteps<T, OpSum<T>>{}, ctx);
    case weftProd:
      return kernel::runLane<T>(launch, lane, PairwiseSteps<T, OpProd<T>>{}, ctx);
    case weftMax:
      return kernel::runLane<T>(launch, lane, PairwiseSteps<T, OpMax<T>>{}, ctx);
    case weftMin:
      return kernel::runLane<T>(launch, lane, PairwiseSteps<T, OpMin<T>>{}, ctx);
    case weftAvg:
      return kernel::runLane<T>(launch, lane, AvgSteps<T>{launch.divisor}, ctx);
    case device::kLaneOpPreMulSum:
      return kernel::runLane<T>(launch, lane, PreMulSumSteps<T>{}, ctx);
    default:
      return;
  }
}

void runOne(const device::LaneLaunch& launch, int lane) {
  switch (launch.type) {
    case weftInt8: return runTyped<int8_t>(launch, lane);
    case weftUint8: return runTyped<uint8_t>(launch, lane);
    case weftInt32: return runTyped<int32_t>(launch, lane);
    case weftUint32: return runTyped<uint32_t>(launch, lane);
    case weftInt64: return runTyped<int64_t>(launch, lane);
    case weftUint64: return runTyped<uint64_t>(launch, lane);
    case weftFloat16: return runTyped<Half>(launch, lane);
    case weftFloat32: return runTyped<float>(launch, lane);
    case weftFloat64: return runTyped<double>(launch, lane);
    case weftBfloat16: return runTyped<BFloat16>(launch, lane);
    case weftFloat8e4m3: return runTyped<Fp8E4M3>(launch, lane);
    case weftFloat8e5m2: return runTyped<Fp8E5M2>(launch, lane);
    default: return;
  }
}

}  // namespace

uint32_t runLanesOnHost(const device::LaneLaunch& launch, device::BlockSlots* slots) {
  // A lane is a block: it starts once the device has room for it and gives the room back at its end.
  auto block = [&launch, slots](int lane) {
    runOne(launch, lane);
    if (slots != nullptr) slots->release();
  };
  if (launch.nLanes == 1) {
    if (slots != nullptr) slots->acquire();
    block(0);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(launch.nLanes));
    for (int lane = 0; lane < launch.nLanes; ++lane) {
      if (slots != nullptr) slots->acquire();
      threads.emplace_back(block, lane);
    }
    for (auto& t : threads) t.join();
  }
  return launch.error->code;
}

void registerHostLaneRunner() { device::setHostLaneRunner(&runLanesOnHost); }

}  // namespace coll
}  // namespace weft
