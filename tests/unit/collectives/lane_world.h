// Ranks as threads running the device executor's lane tables on the host (runLanesOnHost, or
// several host threads per lane as a GPU block runs one), over FIFOs laid out in host memory as
// the p2p transport lays them out in device memory, LL region included when asked for. Shared by
// device_lanes_test.cc and device_lanes_ll_test.cc.
#ifndef WEFT_TESTS_UNIT_COLLECTIVES_LANE_WORLD_H_
#define WEFT_TESTS_UNIT_COLLECTIVES_LANE_WORLD_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "collectives/device/lane_program.cuh"
#include "collectives/device_executor.h"
#include "collectives/schedule.h"
#include "schedule_cases.h"

namespace weft {
namespace coll {
namespace testing {

// One FIFO (sender -> receiver, lane) in host memory, with each side's own cursor, and an LL
// region (with the sender's stage) when `ll`.
struct HostFifo {
  HostFifo(size_t slots, size_t bytes, bool ll = false)
      : nSlots(slots), stride((bytes + 63) / 64 * 64), slotBytes(bytes) {
    data.assign(nSlots * stride, 0);
    sizes.assign(nSlots, 0);
    stamps.assign(nSlots, 0);
    if (ll) {
      llStride = device::llSlotBytes(bytes);
      llLines.assign(nSlots * llStride / sizeof(uint64_t), 0);
      llStage.assign(device::llSliceBytes(bytes) / sizeof(uint64_t) + 1, 0);
    }
  }
  device::FifoView view(bool sender, int peer) {
    device::FifoView v;
    v.data = data.data();
    v.stride = stride;
    v.nSlots = nSlots;
    v.slotBytes = slotBytes;
    v.sizes = sizes.data();
    v.stamps = stamps.data();
    v.head = &head;
    v.tail = &tail;
    v.cursor = sender ? &sendCursor : &recvCursor;
    v.selfAbort = sender ? &senderAbort : &receiverAbort;
    v.peerAbort = sender ? &receiverAbort : &senderAbort;
    v.peer = peer;
    if (!llLines.empty()) {
      v.ll = llLines.data();
      v.llStride = llStride;
      v.llStage = sender ? reinterpret_cast<char*>(llStage.data()) : nullptr;
    }
    return v;
  }
  size_t nSlots, stride, slotBytes;
  std::vector<char> data;
  std::vector<uint64_t> sizes, stamps;
  uint64_t head = 0, tail = 0, sendCursor = 0, recvCursor = 0;
  uint32_t senderAbort = 0, receiverAbort = 0;
  uint64_t llStride = 0;
  std::vector<uint64_t> llLines, llStage;
};

// Ranks as threads over host FIFOs.
class LaneWorld {
 public:
  LaneWorld(int nRanks, size_t nSlots, size_t slotBytes) : nRanks_(nRanks), nSlots_(nSlots), slotBytes_(slotBytes) {
    programs_.resize(static_cast<size_t>(nRanks));
    views_.resize(static_cast<size_t>(nRanks));
    errors_.resize(static_cast<size_t>(nRanks));
    launches_.resize(static_cast<size_t>(nRanks));
  }

  // Messages of at most maxBytes are LL (appendToProgram), on every rank or on one; the FIFOs
  // made by finish() have LL regions when `regions`. Call before append.
  void useLL(uint64_t maxBytes, bool regions = true) {
    llMaxBytes_.assign(static_cast<size_t>(nRanks_), maxBytes);
    llRegions_ = regions;
  }
  void useLL(int rank, uint64_t maxBytes) { llMaxBytes_[static_cast<size_t>(rank)] = maxBytes; }
  // FIFOs to and from `rank` get no LL region (a host rank's, staged through the device bridge).
  void noLLRegionsAt(int rank) { noRegionsAt_ = rank; }

  // Adds a collective to every rank's launch.
  void append(const ScheduleParams& p, size_t elemSize) {
    for (int r = 0; r < nRanks_; ++r) appendRank(r, buildSchedule(p, r), elemSize);
  }

  // Adds one rank's own schedule (ranks that disagree, for the failure tests).
  void appendRank(int rank, const RankSchedule& schedule, size_t elemSize) {
    const uint64_t ll = llMaxBytes_.empty() ? 0 : llMaxBytes_[static_cast<size_t>(rank)];
    Status s = appendToProgram(&programs_[static_cast<size_t>(rank)], schedule, elemSize, slotBytes_, -1, ll);
    ASSERT_TRUE(s.isOk()) << s.message();
  }

  // Fixes the tables; buffers are set per op with setBuffers.
  void finish(weftDataType_t type, weftRedOp_t op, uint64_t timeoutNs) {
    for (int r = 0; r < nRanks_; ++r) {
      DeviceProgram& prog = programs_[static_cast<size_t>(r)];
      auto& views = views_[static_cast<size_t>(r)];
      for (const ConnectionKey& k : prog.fifos) {
        auto key = k.send ? std::make_tuple(r, k.peer, k.lane) : std::make_tuple(k.peer, r, k.lane);
        auto& fifo = fifos_[key];
        const bool regions = llRegions_ && r != noRegionsAt_ && k.peer != noRegionsAt_;
        if (!fifo) fifo = std::make_unique<HostFifo>(nSlots_, slotBytes_, regions);
        views.push_back(fifo->view(k.send, k.peer));
      }
      device::LaneLaunch& l = launches_[static_cast<size_t>(r)];
      l.type = type;
      l.op = op;
      l.divisor = static_cast<uint32_t>(nRanks_);
      l.nLanes = static_cast<int32_t>(prog.lanes.size());
      l.lanes = prog.lanes.data();
      l.steps = prog.steps.data();
      l.fifos = views.data();
      l.nFifos = static_cast<int32_t>(views.size());
      l.nBuffers = prog.nOps;
      l.error = &errors_[static_cast<size_t>(r)];
      l.abortFlag = &abort_;
      l.timeoutNs = timeoutNs;
    }
  }

  void setBuffers(int rank, int op, const void* send, void* recv, void* scratch, uint64_t sendStamp = 0,
                  uint64_t recvStamp = 0) {
    launches_[static_cast<size_t>(rank)].buffers[op] = device::LaneBuffers{send, recv, scratch, sendStamp, recvStamp};
  }
  void setType(weftDataType_t type, weftRedOp_t op) {
    for (auto& l : launches_) {
      l.type = type;
      l.op = op;
    }
  }
  // Ready for another run of the same launches (the FIFOs keep their counts, as a GPU's do).
  void clearErrors() {
    for (auto& e : errors_) e = device::LaneError{};
  }
  // Messages sent in all, and how many of them were posted through head (the slot protocol).
  uint64_t messagesSent() const {
    uint64_t n = 0;
    for (const auto& [key, f] : fifos_) n += f->sendCursor;
    return n;
  }
  uint64_t headPosts() const {
    uint64_t n = 0;
    for (const auto& [key, f] : fifos_) n += f->head;
    return n;
  }

  // Runs the listed ranks (all when empty) concurrently to their end.
  void run(const std::vector<int>& ranks = {}) {
    std::vector<std::thread> threads;
    for (int r = 0; r < nRanks_; ++r) {
      if (!ranks.empty() && std::find(ranks.begin(), ranks.end(), r) == ranks.end()) continue;
      threads.emplace_back([this, r] { runLanesOnHost(launches_[static_cast<size_t>(r)]); });
    }
    for (auto& t : threads) t.join();
  }

  // Runs every rank with `threads` host threads per lane, as a GPU block runs a lane: the leader
  // waits and posts, the others follow its turn (int32 sums only).
  void runThreaded(size_t threads);
  // Every FIFO drained, with both sides' cursors written back: posted == head == tail == released.
  bool fifosSettled(uint64_t* posted) const {
    for (const auto& [key, f] : fifos_) {
      if (f->head != f->sendCursor || f->tail != f->recvCursor || f->head != f->tail) return false;
      *posted += f->head;
    }
    return true;
  }

  const device::LaneError& error(int rank) const { return errors_[static_cast<size_t>(rank)]; }
  const DeviceProgram& program(int rank) const { return programs_[static_cast<size_t>(rank)]; }
  device::FifoView& view(int rank, size_t i) { return views_[static_cast<size_t>(rank)][i]; }
  uint32_t* abortFlag() { return &abort_; }

 private:
  int nRanks_;
  size_t nSlots_, slotBytes_;
  std::vector<DeviceProgram> programs_;
  std::vector<std::vector<device::FifoView>> views_;
  std::vector<device::LaneError> errors_;
  std::vector<device::LaneLaunch> launches_;
  std::map<std::tuple<int, int, int>, std::unique_ptr<HostFifo>> fifos_;
  uint32_t abort_ = 0;
  std::vector<uint64_t> llMaxBytes_;
  bool llRegions_ = false;
  int noRegionsAt_ = -1;
};

// The threads of one lane's block on the host: a barrier over `n` threads and the block's
// shared turn and staging room.
struct HostBlock {
  explicit HostBlock(size_t threads) : n(threads) {}
  void barrier() {
    std::unique_lock<std::mutex> lock(mu);
    const uint64_t gen = generation;
    if (++arrived == n) {
      arrived = 0;
      ++generation;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return generation != gen; });
    }
  }
  size_t n;
  std::mutex mu;
  std::condition_variable cv;
  size_t arrived = 0;
  uint64_t generation = 0;
  kernel::LaneTurn turn{};
  std::vector<uint64_t> room = std::vector<uint64_t>(kernel::kLaneStageMaxBytes / sizeof(uint64_t));
};

struct BlockThreadCtx {
  HostBlock* block;
  size_t t;
  size_t tid() const { return t; }
  size_t nthreads() const { return block->n; }
  bool leader() const { return t == 0; }
  void barrier() { block->barrier(); }
  kernel::LaneTurn& turn() { return block->turn; }
  void* stage() { return block->room.data(); }
  size_t stageBytes() const { return block->room.size() * sizeof(uint64_t); }
};

inline void LaneWorld::runThreaded(size_t threads) {
  std::vector<std::unique_ptr<HostBlock>> blocks;
  std::vector<std::thread> pool;
  for (int r = 0; r < nRanks_; ++r) {
    const device::LaneLaunch& l = launches_[static_cast<size_t>(r)];
    for (int lane = 0; lane < l.nLanes; ++lane) {
      blocks.push_back(std::make_unique<HostBlock>(threads));
      HostBlock* b = blocks.back().get();
      for (size_t t = 0; t < threads; ++t) {
        pool.emplace_back([&l, lane, b, t] {
          BlockThreadCtx ctx{b, t};
          kernel::runLane<int32_t>(l, lane, kernel::PairwiseSteps<int32_t, OpSum<int32_t>>{}, ctx);
        });
      }
    }
  }
  for (auto& t : pool) t.join();
}

}  // namespace testing
}  // namespace coll
}  // namespace weft

#endif  // WEFT_TESTS_UNIT_COLLECTIVES_LANE_WORLD_H_
