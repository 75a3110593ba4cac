// The device executor's protocol on host threads: every algorithm's schedules turned into
// lane-program tables (appendToProgram) and run by the host instantiation of lane_program.cuh
// (runLanesOnHost), ranks as threads, FIFOs laid out in host memory as the p2p transport lays
// them out in device memory. Results are checked element by element against a reference; the
// failure paths (time-out, abort, a peer's abort with its culprit, a message of the wrong size)
// end every rank's lanes with the right LaneError instead of hanging.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "collectives/device/lane_program.cuh"
#include "collectives/device/pack.cuh"
#include "collectives/device_executor.h"
#include "collectives/schedule.h"
#include "device/gpu_loader.h"
#include "lane_world.h"

namespace weft {
namespace coll {
namespace {

using testing::BlockThreadCtx;
using testing::HostBlock;
using testing::HostFifo;
using testing::AlgoCase;
using testing::kAlgos;
using testing::LaneWorld;

int32_t inputOf(int rank, int64_t i) { return static_cast<int32_t>((rank * 31 + i * 7) % 97) - 40; }

// The expected receive buffer of `rank` for an int32 sum (or max) of inputOf.
std::vector<int32_t> expected(const ScheduleParams& p, int rank, bool max) {
  const int n = p.nRanks;
  const int64_t c = p.count;
  auto reduced = [&](int64_t i) {
    int32_t acc = inputOf(0, i);
    for (int r = 1; r < n; ++r) acc = max ? std::max(acc, inputOf(r, i)) : acc + inputOf(r, i);
    return acc;
  };
  std::vector<int32_t> out(static_cast<size_t>(recvBufferCount(p)), 0);
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    int32_t& v = out[static_cast<size_t>(i)];
    switch (p.kind) {
      case CollKind::kAllReduce: v = reduced(i); break;
      case CollKind::kReduce: v = rank == p.root ? reduced(i) : 0; break;
      case CollKind::kAllGather: v = inputOf(static_cast<int>(i / c), i % c); break;
      case CollKind::kReduceScatter: v = reduced(rank * c + i); break;
      case CollKind::kBroadcast: v = inputOf(p.root, i); break;
      case CollKind::kAllToAll: v = inputOf(static_cast<int>(i / c), rank * c + i % c); break;
      default: break;
    }
  }
  return out;
}

// Runs one collective on every rank and checks every rank's receive buffer.
void checkCollective(const ScheduleParams& p, bool max, size_t nSlots, size_t slotBytes) {
  std::string what = std::string(collName(p.kind)) + "/" + algoName(p.algo) + " n=" + std::to_string(p.nRanks) +
                     " count=" + std::to_string(p.count) + " channels=" + std::to_string(p.nChannels) +
                     " root=" + std::to_string(p.root) + " slot=" + std::to_string(slotBytes);
  SCOPED_TRACE(what);
  LaneWorld world(p.nRanks, nSlots, slotBytes);
  world.append(p, sizeof(int32_t));
  world.finish(weftInt32, max ? weftMax : weftSum, 20ull * 1000 * 1000 * 1000);
  std::vector<std::vector<int32_t>> send(static_cast<size_t>(p.nRanks)), recv(send.size()), scratch(send.size());
  for (int r = 0; r < p.nRanks; ++r) {
    auto& s = send[static_cast<size_t>(r)];
    s.resize(static_cast<size_t>(sendBufferCount(p)));
    for (size_t i = 0; i < s.size(); ++i) s[i] = inputOf(r, static_cast<int64_t>(i));
    recv[static_cast<size_t>(r)].assign(static_cast<size_t>(recvBufferCount(p)), 0);
    scratch[static_cast<size_t>(r)].assign(static_cast<size_t>(scratchBufferCount(p)) + 1, 0);
    world.setBuffers(r, 0, s.data(), recv[static_cast<size_t>(r)].data(), scratch[static_cast<size_t>(r)].data());
  }
  world.run();
  for (int r = 0; r < p.nRanks; ++r) {
    ASSERT_EQ(world.error(r).code, device::kLaneOk)
        << "rank " << r << ": " << describeLaneError(world.error(r), world.program(r));
    std::vector<int32_t> want = expected(p, r, max);
    if (p.kind == CollKind::kReduce && r != p.root) continue;  // only the root's buffer is defined
    ASSERT_EQ(recv[static_cast<size_t>(r)], want) << "rank " << r;
  }
}

TEST(DeviceLanes, EveryAlgorithmMatchesTheReference) {
  for (const AlgoCase& a : kAlgos) {
    for (int n = 1; n <= 5; ++n) {
      for (int64_t count : {int64_t{1}, int64_t{37}, int64_t{300}}) {
        for (int channels : {1, 2}) {
          ScheduleParams p;
          p.kind = a.kind;
          p.algo = a.algo;
          p.nRanks = n;
          p.count = count;
          p.nChannels = channels;
          p.root = n > 2 ? 2 : 0;
          if (!validateParams(p).empty()) continue;
          // 64-byte slots: 16 elements per slice, so the larger counts take many iterations.
          checkCollective(p, (count % 2) == 1, 2, 64);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// With parts on 16-byte boundaries (partitionAlign), every slice a lane moves starts 16-byte
// aligned in every buffer of an odd-count all-reduce, broadcast or reduce, so reduce_copy.cuh
// takes its 16-byte packs from the first element (planAccess: kPacks, no scalar head); parts as
// even as elements allow leave most slices to the scalar path.
int slicesOffPacks(const ScheduleParams& p, size_t slotBytes) {
  alignas(256) static char buffers[3][256];  // pointers as cudaMalloc gives them: 256-aligned
  alignas(64) static char slot[64];
  int off = 0;
  for (int r = 0; r < p.nRanks; ++r) {
    DeviceProgram prog;
    EXPECT_TRUE(appendToProgram(&prog, buildSchedule(p, r), sizeof(float), slotBytes).isOk());
    const int64_t sliceElems = static_cast<int64_t>(slotBytes / sizeof(float));
    for (const device::LaneStep& st : prog.steps) {
      for (int64_t first = 0; first < st.count; first += sliceElems) {
        const int64_t n = std::min(sliceElems, st.count - first);
        // The addresses only: planAccess never dereferences.
        const uintptr_t src = reinterpret_cast<uintptr_t>(buffers[st.srcBuf]) + (st.srcOffset + first) * sizeof(float);
        const uintptr_t dst = reinterpret_cast<uintptr_t>(buffers[st.dstBuf]) + (st.dstOffset + first) * sizeof(float);
        const void* srcs[2] = {reinterpret_cast<const void*>(src), slot};
        void* dsts[2] = {reinterpret_cast<void*>(dst), slot};
        const kernel::AccessPlan plan = kernel::planAccess<float>(2, srcs, 2, dsts, static_cast<size_t>(n));
        if (plan.path != kernel::AccessPath::kPacks || plan.head != 0) ++off;
      }
    }
  }
  return off;
}

TEST(DeviceLanes, AlignedPartitionsTakeThePackPathForOddCounts) {
  for (const AlgoCase& a : kAlgos) {
    if (a.kind != CollKind::kAllReduce && a.kind != CollKind::kBroadcast && a.kind != CollKind::kReduce) continue;
    for (int n : {2, 3, 5, 8}) {
      for (int64_t count : {int64_t{1001}, int64_t{4093}}) {
        for (int channels : {1, 3}) {
          ScheduleParams p;
          p.kind = a.kind;
          p.algo = a.algo;
          p.nRanks = n;
          p.count = count;
          p.nChannels = channels;
          p.root = n - 1;
          SCOPED_TRACE(std::string(collName(p.kind)) + "/" + algoName(p.algo) + " n=" + std::to_string(n) +
                       " count=" + std::to_string(count) + " channels=" + std::to_string(channels));
          p.align = partitionAlign(sizeof(float));
          EXPECT_EQ(slicesOffPacks(p, 1024), 0);
          if (channels == 3) {  // 1001 or 4093 elements in three parts: two start off 16-byte boundaries
            p.align = 1;
            EXPECT_GT(slicesOffPacks(p, 1024), 0);
          }
        }
      }
    }
  }
}

// Aligned parts move the right data too (the last part takes the remainder).
TEST(DeviceLanes, AlignedPartitionsMatchTheReference) {
  for (const AlgoCase& a : kAlgos) {
    for (int n : {2, 3, 5}) {
      for (int64_t count : {int64_t{3}, int64_t{37}, int64_t{301}}) {
        ScheduleParams p;
        p.kind = a.kind;
        p.algo = a.algo;
        p.nRanks = n;
        p.count = count;
        p.nChannels = 2;
        p.root = n - 1;
        p.align = partitionAlign(sizeof(int32_t));
        checkCollective(p, false, 2, 64);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// The device's channel count: one per 32 KiB of a rank's part, from the tuner's up to the
// device maximum, within the rank's share of resident blocks at the algorithm's lanes per channel.
TEST(DeviceChannels, ScaleWithBytesPerRankWithinTheShare) {
  constexpr int64_t kKiB = 1024;
  // A 132-SM H100 with one rank: 132 blocks.
  EXPECT_EQ(deviceChannels(0, 1, 32, 1, 132), 1);
  EXPECT_EQ(deviceChannels(31 * kKiB, 1, 32, 1, 132), 1);
  EXPECT_EQ(deviceChannels(64 * kKiB, 1, 32, 1, 132), 2);
  EXPECT_EQ(deviceChannels(512 * kKiB, 1, 32, 1, 132), 16);
  EXPECT_EQ(deviceChannels(1024 * kKiB, 1, 32, 1, 132), 32);
  EXPECT_EQ(deviceChannels(int64_t{1} << 40, 1, 32, 1, 132), 32);
  // Never fewer than the tuner's, never more than the maximum (WEFT_DEVICE_MAX_NCHANNELS) or 32.
  EXPECT_EQ(deviceChannels(0, 4, 32, 1, 132), 4);
  EXPECT_EQ(deviceChannels(1024 * kKiB, 1, 8, 1, 132), 8);
  EXPECT_EQ(deviceChannels(0, 8, 2, 1, 132), 2);
  EXPECT_EQ(deviceChannels(int64_t{1} << 40, 1, 99, 1, 1000), kMaxScheduleChannels);
  // Eight ranks sharing the GPU: 16 blocks each; the tree's four lanes per channel: 4 channels.
  EXPECT_EQ(deviceChannels(1024 * kKiB, 1, 32, 1, 16), 16);
  EXPECT_EQ(deviceChannels(1024 * kKiB, 1, 32, 4, 16), 4);
  // A share smaller than one channel's lanes still gets one (the caller then falls back to an
  // algorithm with one lane per channel).
  EXPECT_EQ(deviceChannels(1024 * kKiB, 1, 32, 4, 2), 1);
  EXPECT_EQ(deviceChannels(1024 * kKiB, 1, 32, 1, 0), 1);
  EXPECT_EQ(deviceChannels(-5, 0, 0, 0, 0), 1);
}

// laneStage: a lane's steps and each step's FIFO views, copied into the block's room by its
// threads (here three, one after the other), or the launch's own tables when they do not fit.
struct StageCtx {
  size_t t = 0, n = 1;
  size_t tid() const { return t; }
  size_t nthreads() const { return n; }
  void barrier() {}
};

TEST(DeviceLanes, LaneStageCopiesTheStepsAndTheirFifos) {
  ScheduleParams p;
  p.kind = CollKind::kAllReduce;
  p.nRanks = 4;
  p.count = 1000;
  p.nChannels = 2;
  DeviceProgram prog;
  ASSERT_TRUE(appendToProgram(&prog, buildSchedule(p, 1), sizeof(float), 256).isOk());
  std::vector<device::FifoView> fifos(prog.fifos.size());
  for (size_t i = 0; i < fifos.size(); ++i) fifos[i].peer = static_cast<int32_t>(100 + i);
  device::LaneLaunch l;
  l.lanes = prog.lanes.data();
  l.steps = prog.steps.data();
  l.fifos = fifos.data();
  const device::LaneDesc& desc = prog.lanes[1];
  ASSERT_GT(desc.nSteps, 2);
  std::vector<uint64_t> room(kernel::laneStageBytes(desc.nSteps) / sizeof(uint64_t));
  kernel::LaneTables t{};
  for (size_t tid = 0; tid < 3; ++tid) {
    StageCtx ctx{tid, 3};
    t = kernel::laneStage(l, desc, room.data(), room.size() * sizeof(uint64_t), ctx);
  }
  ASSERT_NE(t.views, nullptr);
  EXPECT_EQ(static_cast<const void*>(t.views), static_cast<const void*>(room.data()));
  for (int32_t s = 0; s < desc.nSteps; ++s) {
    const device::LaneStep& want = prog.steps[static_cast<size_t>(desc.firstStep + s)];
    EXPECT_EQ(t.steps[s].count, want.count) << "step " << s;
    EXPECT_EQ(t.steps[s].srcOffset, want.srcOffset) << "step " << s;
    if (want.recvFifo >= 0) {
      EXPECT_EQ(kernel::laneFifo(l, t, s, want.recvFifo, false)->peer, 100 + want.recvFifo);
    }
    if (want.sendFifo >= 0) {
      EXPECT_EQ(kernel::laneFifo(l, t, s, want.sendFifo, true)->peer, 100 + want.sendFifo);
    }
  }
  // One byte short: the launch's tables.
  StageCtx one;
  t = kernel::laneStage(l, desc, room.data(), room.size() * sizeof(uint64_t) - 1, one);
  EXPECT_EQ(t.views, nullptr);
  EXPECT_EQ(t.steps, l.steps + desc.firstStep);
  EXPECT_EQ(kernel::laneFifo(l, t, 0, 2, false), &fifos[2]);
}

// Several threads per lane, as on a GPU: only the leader reads and writes the FIFO cursors (kept
// in registers across steps); the others take the slots' positions from its turn. The result is
// the reference's, and every FIFO ends drained with both sides' cursors written back.
TEST(DeviceLanes, SeveralThreadsPerLaneFollowTheLeadersTurn) {
  for (int algo = 0; algo < 2; ++algo) {
    ScheduleParams p;
    p.kind = CollKind::kAllReduce;
    p.algo = algo == 0 ? Algo::kRing : Algo::kTree;
    p.nRanks = 3;
    p.count = 1001;
    p.nChannels = 2;
    SCOPED_TRACE(algoName(p.algo));
    LaneWorld world(p.nRanks, 2, 64);
    world.append(p, sizeof(int32_t));
    world.finish(weftInt32, weftSum, 20ull * 1000 * 1000 * 1000);
    std::vector<std::vector<int32_t>> send(3), recv(3), scratch(3);
    for (int r = 0; r < 3; ++r) {
      for (int64_t i = 0; i < p.count; ++i) send[static_cast<size_t>(r)].push_back(inputOf(r, i));
      recv[static_cast<size_t>(r)].assign(static_cast<size_t>(p.count), 0);
      scratch[static_cast<size_t>(r)].assign(static_cast<size_t>(scratchBufferCount(p)) + 1, 0);
      world.setBuffers(r, 0, send[static_cast<size_t>(r)].data(), recv[static_cast<size_t>(r)].data(),
                       scratch[static_cast<size_t>(r)].data());
    }
    world.runThreaded(3);
    uint64_t posted = 0;
    for (int r = 0; r < 3; ++r) {
      ASSERT_EQ(world.error(r).code, device::kLaneOk) << describeLaneError(world.error(r), world.program(r));
      EXPECT_EQ(recv[static_cast<size_t>(r)], expected(p, r, false)) << "rank " << r;
    }
    EXPECT_TRUE(world.fifosSettled(&posted));
    EXPECT_GT(posted, 0u);
  }
}

// A plan's tables go to device memory once (from a pinned copy, which stays as the lane table
// the runtime checks); the launch says how long the longest lane is, for the kernel's staging.
TEST(DeviceTables, LiveInDeviceMemoryWithAPinnedCopyOfTheLanes) {
  ScheduleParams p;
  p.kind = CollKind::kAllReduce;
  p.nRanks = 4;
  p.count = 1000;
  p.nChannels = 2;
  DeviceProgram prog;
  ASSERT_TRUE(appendToProgram(&prog, buildSchedule(p, 1), sizeof(float), 256).isOk());
  std::vector<device::FifoView> fifos(prog.fifos.size());
  for (size_t i = 0; i < fifos.size(); ++i) fifos[i].peer = static_cast<int32_t>(100 + i);
  device::Runtime* rt = &device::emulatedRuntime();
  device::Stream stream = nullptr;
  ASSERT_TRUE(rt->streamCreate(&stream).isOk());
  std::unique_ptr<DeviceTables> tables;
  Status made = DeviceTables::create(rt, prog, fifos, stream, &tables);
  ASSERT_TRUE(made.isOk()) << made.message();
  ASSERT_TRUE(rt->streamSynchronize(stream).isOk());
  const device::LaneLaunch l = tables->launch();
  for (const void* table : {static_cast<const void*>(l.lanes), static_cast<const void*>(l.steps),
                            static_cast<const void*>(l.fifos)}) {
    device::PointerInfo info;
    ASSERT_TRUE(rt->pointerInfo(table, &info).isOk());
    EXPECT_EQ(info.kind, device::MemoryKind::kDevice) << device::memoryKindName(info.kind);
  }
  device::PointerInfo host;
  ASSERT_TRUE(rt->pointerInfo(l.hostLanes, &host).isOk());
  EXPECT_EQ(host.kind, device::MemoryKind::kPinnedHost) << device::memoryKindName(host.kind);
  // The emulated device's memory is the host's: the copies can be compared in place.
  ASSERT_EQ(l.nLanes, static_cast<int32_t>(prog.lanes.size()));
  int32_t most = 0;
  for (size_t i = 0; i < prog.lanes.size(); ++i) {
    EXPECT_EQ(l.lanes[i].firstStep, prog.lanes[i].firstStep);
    EXPECT_EQ(l.hostLanes[i].nSteps, prog.lanes[i].nSteps);
    most = std::max(most, prog.lanes[i].nSteps);
  }
  EXPECT_EQ(l.maxLaneSteps, most);
  for (size_t i = 0; i < prog.steps.size(); ++i) EXPECT_EQ(l.steps[i].count, prog.steps[i].count) << i;
  for (size_t i = 0; i < fifos.size(); ++i) EXPECT_EQ(l.fifos[i].peer, fifos[i].peer) << i;
  tables.reset();
  ASSERT_TRUE(rt->streamDestroy(stream).isOk());
}

// A ring of 56 ranks gives each lane 111 steps, more than kLaneStageMaxBytes holds: those lanes
// read the launch's tables, and the result is the same.
TEST(DeviceLanes, LanesTooLongToStageReadTheLaunchTables) {
  ScheduleParams p;
  p.kind = CollKind::kAllReduce;
  p.nRanks = 56;
  p.count = 56 * 4 + 3;
  ASSERT_GT(kernel::laneStageBytes(2 * p.nRanks - 1), kernel::kLaneStageMaxBytes);
  checkCollective(p, false, 2, 64);
}

TEST(DeviceLanes, LargeSlotsAndDeepFifos) {
  ScheduleParams p;
  p.kind = CollKind::kAllReduce;
  p.nRanks = 4;
  p.count = 100000;
  p.nChannels = 2;
  checkCollective(p, false, 8, 1 << 14);
}

TEST(DeviceLanes, AvgDividesOnceOnFinalSteps) {
  for (Algo algo : {Algo::kRing, Algo::kTree}) {
    const int n = 3;
    ScheduleParams p;
    p.kind = CollKind::kAllReduce;
    p.algo = algo;
    p.nRanks = n;
    p.count = 50;
    LaneWorld world(n, 2, 64);
    world.append(p, sizeof(float));
    world.finish(weftFloat32, weftAvg, 20ull * 1000 * 1000 * 1000);
    std::vector<std::vector<float>> send(n), recv(n), scratch(n);
    for (int r = 0; r < n; ++r) {
      for (int i = 0; i < 50; ++i) send[r].push_back(static_cast<float>(r * 10 + i));
      recv[r].assign(50, -1.0f);
      scratch[r].assign(static_cast<size_t>(scratchBufferCount(p)) + 1, 0.0f);
      world.setBuffers(r, 0, send[r].data(), recv[r].data(), scratch[r].data());
    }
    world.run();
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(world.error(r).code, device::kLaneOk);
      for (int i = 0; i < 50; ++i) {
        ASSERT_EQ(recv[r][i], static_cast<float>(3 * i + 30) / 3.0f) << algoName(algo) << " rank " << r << " i " << i;
      }
    }
  }
}

TEST(DeviceLanes, FusedCollectivesUseTheirOwnBuffersAndFifos) {
  const int n = 3;
  ScheduleParams a;
  a.kind = CollKind::kAllReduce;
  a.nRanks = n;
  a.count = 70;
  ScheduleParams g = a;
  g.kind = CollKind::kAllGather;
  g.count = 20;
  LaneWorld world(n, 2, 64);
  world.append(a, sizeof(int32_t));
  world.append(g, sizeof(int32_t));
  world.finish(weftInt32, weftSum, 20ull * 1000 * 1000 * 1000);
  std::vector<std::vector<int32_t>> sa(n), ra(n), sg(n), rg(n);
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < 70; ++i) sa[r].push_back(inputOf(r, i));
    for (int i = 0; i < 20; ++i) sg[r].push_back(inputOf(r, i));
    ra[r].assign(70, 0);
    rg[r].assign(60, 0);
    world.setBuffers(r, 0, sa[r].data(), ra[r].data(), nullptr);
    world.setBuffers(r, 1, sg[r].data(), rg[r].data(), nullptr);
  }
  ASSERT_EQ(world.program(0).nOps, 2);
  world.run();
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(world.error(r).code, device::kLaneOk) << describeLaneError(world.error(r), world.program(r));
    EXPECT_EQ(ra[r], expected(a, r, false));
    EXPECT_EQ(rg[r], expected(g, r, false));
  }
}

// Two ranks, a ring all-reduce; only rank 0 runs.
ScheduleParams pairAllReduce(int64_t count) {
  ScheduleParams p;
  p.kind = CollKind::kAllReduce;
  p.nRanks = 2;
  p.count = count;
  return p;
}

struct PairBuffers {
  explicit PairBuffers(LaneWorld* world, int64_t count) {
    for (int r = 0; r < 2; ++r) {
      send[r].assign(static_cast<size_t>(count), r + 1);
      recv[r].assign(static_cast<size_t>(count), 0);
      world->setBuffers(r, 0, send[r].data(), recv[r].data(), nullptr);
    }
  }
  std::vector<int32_t> send[2], recv[2];
};

TEST(DeviceLanes, SilentPeerEndsInATimeOutNamingIt) {
  LaneWorld world(2, 2, 64);
  world.append(pairAllReduce(100), sizeof(int32_t));
  world.finish(weftInt32, weftSum, 100ull * 1000 * 1000);  // 100 ms
  PairBuffers buffers(&world, 100);
  world.run({0});
  const device::LaneError& e = world.error(0);
  ASSERT_EQ(e.code, device::kLaneTimeout);
  EXPECT_EQ(e.lane, 0);
  std::string text = describeLaneError(e, world.program(0));
  EXPECT_NE(text.find("rank 1"), std::string::npos) << text;
  EXPECT_NE(text.find("time-out"), std::string::npos) << text;
  // Rank 0 told rank 1 through every FIFO of the launch.
  for (size_t i = 0; i < world.program(0).fifos.size(); ++i) EXPECT_EQ(*world.view(0, i).selfAbort, 1u);
}

TEST(DeviceLanes, AbortFlagStopsAWaitingLane) {
  LaneWorld world(2, 2, 64);
  world.append(pairAllReduce(100), sizeof(int32_t));
  world.finish(weftInt32, weftSum, 0);  // no time-out: only the abort can end it
  PairBuffers buffers(&world, 100);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    __atomic_store_n(world.abortFlag(), 1u, __ATOMIC_RELEASE);
  });
  world.run({0});
  aborter.join();
  EXPECT_EQ(world.error(0).code, device::kLaneAborted);
  EXPECT_NE(describeLaneError(world.error(0), world.program(0)).find("aborted"), std::string::npos);
}

TEST(DeviceLanes, PeerAbortIsSeenWithItsCulprit) {
  LaneWorld world(2, 2, 64);
  world.append(pairAllReduce(100), sizeof(int32_t));
  world.finish(weftInt32, weftSum, 0);
  PairBuffers buffers(&world, 100);
  // Rank 1 failed because of rank 7 (culprit + 2) before it sent anything.
  for (size_t i = 0; i < world.program(1).fifos.size(); ++i) *world.view(1, i).selfAbort = 7 + 2;
  world.run({0});
  const device::LaneError& e = world.error(0);
  ASSERT_EQ(e.code, device::kLanePeerAborted);
  std::string text = describeLaneError(e, world.program(0));
  EXPECT_NE(text.find("rank 1 reported a failure caused by rank 7"), std::string::npos) << text;
}

TEST(DeviceLanes, MismatchedCountsAreABadMessageNotAHang) {
  // Rank 0 all-reduces 10 elements, rank 1 12: the first slice differs in size.
  LaneWorld world(2, 2, 64);
  for (int r = 0; r < 2; ++r) world.appendRank(r, buildSchedule(pairAllReduce(10 + 2 * r), r), sizeof(int32_t));
  world.finish(weftInt32, weftSum, 2ull * 1000 * 1000 * 1000);
  std::vector<int32_t> send[2] = {std::vector<int32_t>(10, 1), std::vector<int32_t>(12, 1)};
  std::vector<int32_t> recv[2] = {std::vector<int32_t>(10, 0), std::vector<int32_t>(12, 0)};
  for (int r = 0; r < 2; ++r) world.setBuffers(r, 0, send[r].data(), recv[r].data(), nullptr);
  world.run();
  bool sawBadMessage = false;
  for (int r = 0; r < 2; ++r) {
    ASSERT_NE(world.error(r).code, device::kLaneOk) << "rank " << r;
    EXPECT_NE(world.error(r).code, device::kLaneTimeout) << "rank " << r << " should have heard of the failure";
    if (world.error(r).code == device::kLaneBadMessage) {
      sawBadMessage = true;
      EXPECT_NE(describeLaneError(world.error(r), world.program(r)).find("different collectives or counts"),
                std::string::npos);
    }
  }
  EXPECT_TRUE(sawBadMessage);
}

TEST(DeviceLanes, ProgramLimits) {
  DeviceProgram prog;
  ScheduleParams p = pairAllReduce(8);
  for (int i = 0; i < device::kMaxFusedOps; ++i) ASSERT_TRUE(appendToProgram(&prog, buildSchedule(p, 0), 4, 64).isOk());
  Status s = appendToProgram(&prog, buildSchedule(p, 0), 4, 64);
  EXPECT_EQ(s.code(), weftInternalError);
  EXPECT_NE(s.message().find("at most 32 collectives"), std::string::npos) << s.message();
  DeviceProgram other;
  EXPECT_FALSE(appendToProgram(&other, buildSchedule(p, 0), 8, 4).isOk());  // slot smaller than an element
  // The FIFO lanes of the two collectives of a launch never meet.
  DeviceProgram two;
  ASSERT_TRUE(appendToProgram(&two, buildSchedule(p, 0), 4, 64).isOk());
  size_t first = two.fifos.size();
  ASSERT_TRUE(appendToProgram(&two, buildSchedule(p, 0), 4, 64).isOk());
  for (size_t i = first; i < two.fifos.size(); ++i) {
    for (size_t j = 0; j < first; ++j) EXPECT_FALSE(two.fifos[i] == two.fifos[j]);
    EXPECT_GE(two.fifos[i].lane, kDeviceFifoLaneBase + kDeviceFifoLanesPerOp);
  }
}

}  // namespace
}  // namespace coll
}  // namespace weft
