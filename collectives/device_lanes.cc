// The lane program compiled by the host compiler: every (type, op) instantiation of runLane with
// one thread per lane. The host runtime's launchLanes runs it, and so do the CPU-only tests.
#include <thread>
#include <vector>

#include "collectives/device/lane_program.cuh"
#include "collectives/device_executor.h"
#include "collectives/dispatch.h"

namespace weft {
namespace coll {
namespace {

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

// Lane `lane` of the launch, on this thread, for the launch's type and op (dispatch.h); nothing
// for an unknown one.
void runOne(const device::LaneLaunch& launch, int lane) {
  withDataType(launch.type, false, [&](auto type) {
    using T = typename decltype(type)::type;
    return withRedOp<T>(static_cast<int>(launch.op), false, [&](auto op) {
      HostLaneCtx ctx;
      kernel::runLane<T>(launch, lane, kernel::laneStepsFor<T>(op, launch.divisor), ctx);
      return true;
    });
  });
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
