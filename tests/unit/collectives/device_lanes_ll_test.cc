// The low-latency (LL) protocol in the lane program, on host threads (lane_world.h): messages of
// at most the threshold go as flagged lines into the FIFO's LL region, with the call stamp and
// byte count in flagged header lines, and nothing posted through head. Results are compared bit
// for bit with the slot protocol (threshold 0) for every type and op, and with exact sums; slots
// are reused over many calls; counts straddle the threshold; ranks that disagree on the
// threshold, or on the call, fail with the right error instead of hanging or taking garbage.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "collectives/datatypes.h"
#include "collectives/device/ll.cuh"
#include "lane_world.h"

namespace weft {
namespace coll {
namespace {

using testing::AlgoCase;
using testing::kAlgos;
using testing::LaneWorld;

constexpr uint64_t kTimeoutNs = 20ull * 1000 * 1000 * 1000;
constexpr uint64_t kAllLL = uint64_t{1} << 20;

using Bytes = std::vector<unsigned char>;

// Deterministic bytes for rank r's send buffer (any bit pattern: the comparison is bit for bit
// with the slot protocol, which reduces the same elements in the same order).
Bytes inputBytes(int rank, size_t n, int salt) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>((rank * 131 + i * 29 + salt * 17 + 7) % 251);
  return b;
}

struct Outcome {
  std::vector<Bytes> recv;
  uint64_t sent = 0;       // messages
  uint64_t headPosts = 0;  // of them through head (slots)
};

// Runs p on every rank (elements of `type`, reduced with `op`), LL for messages of at most
// llMaxBytes on FIFOs with LL regions (`regions`), and returns what every rank received.
Outcome runCollective(const ScheduleParams& p, weftDataType_t type, weftRedOp_t op, uint64_t llMaxBytes,
                      size_t slotBytes, bool regions = true) {
  const size_t es = dataTypeSize(type);
  LaneWorld world(p.nRanks, 2, slotBytes);
  world.useLL(llMaxBytes, regions);
  world.append(p, es);
  world.finish(type, op, kTimeoutNs);
  std::vector<Bytes> send(static_cast<size_t>(p.nRanks)), scratch(send.size());
  Outcome out;
  out.recv.resize(send.size());
  for (int r = 0; r < p.nRanks; ++r) {
    const size_t i = static_cast<size_t>(r);
    send[i] = inputBytes(r, static_cast<size_t>(sendBufferCount(p)) * es, 0);
    out.recv[i].assign(static_cast<size_t>(recvBufferCount(p)) * es, 0);
    scratch[i].assign((static_cast<size_t>(scratchBufferCount(p)) + 1) * es, 0);
    world.setBuffers(r, 0, send[i].data(), out.recv[i].data(), scratch[i].data());
  }
  world.run();
  for (int r = 0; r < p.nRanks; ++r) {
    EXPECT_EQ(world.error(r).code, device::kLaneOk)
        << "rank " << r << ": " << describeLaneError(world.error(r), world.program(r));
    if (p.kind == CollKind::kReduce && r != p.root) out.recv[static_cast<size_t>(r)].clear();  // undefined
  }
  out.sent = world.messagesSent();
  out.headPosts = world.headPosts();
  return out;
}

// Rooted collectives take rank 2 as their root where there is one (not 0: a root other than the
// first rank).
ScheduleParams params(CollKind kind, Algo algo, int n, int64_t count, int channels = 1) {
  return testing::scheduleParams(kind, algo, n, count, channels, n > 2 ? 2 : 0);
}

TEST(DeviceLanesLL, EveryTypeAndOpMatchesTheSlotProtocolBitForBit) {
  // 37 elements: 1-byte types end mid-line, so the last line of a message is padded.
  const ScheduleParams p = params(CollKind::kAllReduce, Algo::kRing, 3, 37);
  for (int t = 0; t < weftNumTypes; ++t) {
    for (weftRedOp_t op : {weftSum, weftProd, weftMax, weftMin, weftAvg}) {
      const weftDataType_t type = static_cast<weftDataType_t>(t);
      SCOPED_TRACE(std::string(dataTypeName(type)) + " op " + std::to_string(op));
      const Outcome slots = runCollective(p, type, op, 0, 256);
      const Outcome ll = runCollective(p, type, op, kAllLL, 256);
      ASSERT_EQ(ll.recv, slots.recv);
      EXPECT_GT(ll.sent, 0u);
      EXPECT_EQ(ll.headPosts, 0u) << "every message went as LL lines, none through head";
      EXPECT_EQ(slots.headPosts, slots.sent);
    }
  }
}

TEST(DeviceLanesLL, EveryAlgorithmMatchesTheSlotProtocol) {
  for (const AlgoCase& a : kAlgos) {
    for (int n = 1; n <= 5; ++n) {
      for (int64_t count : {int64_t{1}, int64_t{37}, int64_t{300}}) {
        for (int channels : {1, 2}) {
          ScheduleParams p = params(a.kind, a.algo, n, count, channels);
          if (!validateParams(p).empty()) continue;
          SCOPED_TRACE(std::string(collName(p.kind)) + "/" + algoName(p.algo) + " n=" + std::to_string(n) +
                       " count=" + std::to_string(count) + " channels=" + std::to_string(channels));
          // 64-byte slots and LL slices: many messages per step for the larger counts.
          const Outcome ll = runCollective(p, weftInt32, weftSum, kAllLL, 64);
          ASSERT_EQ(ll.recv, runCollective(p, weftInt32, weftSum, 0, 64).recv);
          EXPECT_EQ(ll.headPosts, 0u);
        }
      }
    }
  }
}

// Many calls over the same FIFOs, whose LL slots are reused with fresh flags: each call's exact
// sum (rank r's element i is r * 1000 + i + call), never a line of an earlier call.
TEST(DeviceLanesLL, BackToBackCallsReuseTheSlotsWithFreshFlags) {
  const int n = 3;
  const int64_t count = 100;  // 64-byte slices: 2 or 3 messages per step through 2 slots per FIFO
  LaneWorld world(n, 2, 64);
  world.useLL(kAllLL);
  world.append(params(CollKind::kAllReduce, Algo::kRing, n, count), sizeof(int32_t));
  world.finish(weftInt32, weftSum, kTimeoutNs);
  std::vector<std::vector<int32_t>> send(n, std::vector<int32_t>(count)), recv(n, std::vector<int32_t>(count));
  for (int call = 0; call < 200; ++call) {
    for (int r = 0; r < n; ++r) {
      for (int64_t i = 0; i < count; ++i) send[r][static_cast<size_t>(i)] = r * 1000 + static_cast<int32_t>(i) + call;
      std::fill(recv[r].begin(), recv[r].end(), -1);
      world.setBuffers(r, 0, send[r].data(), recv[r].data(), nullptr);
    }
    world.clearErrors();
    world.run();
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(world.error(r).code, device::kLaneOk) << "call " << call << " rank " << r << ": "
                                                     << describeLaneError(world.error(r), world.program(r));
      for (int64_t i = 0; i < count; ++i) {
        ASSERT_EQ(recv[r][static_cast<size_t>(i)], 3000 + 3 * (static_cast<int32_t>(i) + call))
            << "call " << call << " rank " << r << " element " << i;
      }
    }
  }
  EXPECT_EQ(world.headPosts(), 0u);
  EXPECT_GE(world.messagesSent(), 200u * 3 * 4 * 2);  // each of 3 ranks: 4 steps of 2 or more messages
}

// A line left in an LL slot by an earlier use carries that use's flag: never taken as the next
// message's, and never 0 (the zeroed region), also where the count wraps 2^32 - 1.
TEST(DeviceLanesLL, StaleLinesAreNeverTakenAsReady) {
  for (uint64_t nSlots : {1u, 2u, 3u, 4u, 17u, 64u, 65536u}) {
    for (uint64_t c : {uint64_t{0}, uint64_t{5}, uint64_t{0xfffffffe}, uint64_t{0xffffffff}, uint64_t{1} << 40}) {
      EXPECT_NE(kernel::llFlag(c), 0u);
      for (uint64_t k = 1; k <= 4 && k * nSlots <= c; ++k) EXPECT_NE(kernel::llFlag(c), kernel::llFlag(c - k * nSlots));
    }
  }
  EXPECT_EQ(kernel::llFlag(0xfffffffe), 0xffffffffu);
  EXPECT_EQ(kernel::llFlag(0xffffffff), 1u);
  // A FIFO of 2 LL slots after message 0: message 2 (same slot) is not there yet, and neither
  // protocol says it arrived; once sent, its header is read back.
  {
    testing::HostFifo fifo(2, 64, true);
    device::FifoView v = fifo.view(false, 0);
    const int32_t data[16] = {1, 2, 3};
    kernel::llPackMessage(fifo.llLines.data(), data, sizeof data, 0x1234, kernel::llFlag(0), 0, 1);
    EXPECT_TRUE(kernel::laneArrived(v, 0));
    EXPECT_FALSE(kernel::laneArrived(v, 2));
    uint64_t detail = 0;
    EXPECT_EQ(kernel::laneCheckSlot(v, 0, sizeof data, 0x1234, true, &detail), device::kLaneOk);
    kernel::llPackMessage(fifo.llLines.data(), data, 8, 0x99, kernel::llFlag(2), 0, 1);
    EXPECT_TRUE(kernel::laneArrived(v, 2));
    EXPECT_EQ(kernel::laneCheckSlot(v, 2, 8, 0x99, true, &detail), device::kLaneOk);
    EXPECT_EQ(kernel::laneCheckSlot(v, 2, 12, 0x99, true, &detail), device::kLaneBadMessage);
    EXPECT_EQ(detail, 8u);
  }
}

// Counts whose steps fall on both sides of the threshold: some messages LL, some in slots, in
// one collective, with the slices of each step by its own protocol.
TEST(DeviceLanesLL, CountsStraddlingTheThreshold) {
  bool mixed = false;
  for (const AlgoCase& a : {AlgoCase{CollKind::kAllReduce, Algo::kRing}, AlgoCase{CollKind::kAllReduce, Algo::kTree},
                            AlgoCase{CollKind::kReduceScatter, Algo::kRing}}) {
    for (int64_t count = 40; count <= 60; ++count) {
      for (uint64_t threshold : {uint64_t{60}, uint64_t{64}, uint64_t{68}}) {
        ScheduleParams p = params(a.kind, a.algo, 3, count);
        SCOPED_TRACE(std::string(collName(p.kind)) + "/" + algoName(p.algo) + " count=" + std::to_string(count) +
                     " threshold=" + std::to_string(threshold));
        // 256-byte slots, LL slices of 256 bytes too: a step of 17 int32 is one message either way.
        const Outcome ll = runCollective(p, weftInt32, weftSum, threshold, 256);
        ASSERT_EQ(ll.recv, runCollective(p, weftInt32, weftSum, 0, 256).recv);
        mixed = mixed || (ll.headPosts > 0 && ll.headPosts < ll.sent);
      }
    }
  }
  EXPECT_TRUE(mixed) << "no collective had LL and slot messages both";
}

// Steps marked LL on FIFOs without an LL region (the device bridge, host ranks): slots, at the
// LL slices' size, on both ends; on a ring where only some FIFOs have regions, both at once.
TEST(DeviceLanesLL, FifosWithoutAnLLRegionCarryLLSizedSlots) {
  // 16 KiB slots: LL slices are 8 KiB, so a 12 KiB step is two messages instead of one.
  ScheduleParams p = params(CollKind::kAllReduce, Algo::kRing, 4, 4 * 3072);
  const Outcome slots = runCollective(p, weftInt32, weftSum, 0, 16384);
  const Outcome staged = runCollective(p, weftInt32, weftSum, kAllLL, 16384, false);
  ASSERT_EQ(staged.recv, slots.recv);
  EXPECT_EQ(staged.headPosts, staged.sent);
  EXPECT_EQ(staged.sent, 2 * slots.sent);

  LaneWorld world(4, 2, 16384);
  world.useLL(kAllLL);
  world.noLLRegionsAt(1);  // a host rank: its two FIFOs are staged, the other two carry LL lines
  world.append(p, sizeof(int32_t));
  world.finish(weftInt32, weftSum, kTimeoutNs);
  std::vector<std::vector<int32_t>> send(4, std::vector<int32_t>(static_cast<size_t>(p.count))), recv = send;
  for (int r = 0; r < 4; ++r) {
    for (size_t i = 0; i < send[r].size(); ++i) send[r][i] = r * 100000 + static_cast<int32_t>(i);
    world.setBuffers(r, 0, send[r].data(), recv[r].data(), nullptr);
  }
  world.run();
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(world.error(r).code, device::kLaneOk) << describeLaneError(world.error(r), world.program(r));
    for (size_t i = 0; i < recv[r].size(); ++i) ASSERT_EQ(recv[r][i], 600000 + 4 * static_cast<int32_t>(i));
  }
  EXPECT_GT(world.headPosts(), 0u);
  EXPECT_LT(world.headPosts(), world.messagesSent());
}

// Several threads per lane, as a GPU block: each polls and unpacks its own lines.
TEST(DeviceLanesLL, ThreadsOfALaneUnpackTheirShareOfTheLines) {
  const int n = 3;
  ScheduleParams p = params(CollKind::kAllReduce, Algo::kRing, n, 301, 2);
  LaneWorld world(n, 2, 128);
  world.useLL(kAllLL);
  world.append(p, sizeof(int32_t));
  world.finish(weftInt32, weftSum, kTimeoutNs);
  std::vector<std::vector<int32_t>> send(n, std::vector<int32_t>(301)), recv = send;
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < 301; ++i) send[r][i] = r * 7 - static_cast<int32_t>(i);
    world.setBuffers(r, 0, send[r].data(), recv[r].data(), nullptr);
  }
  world.runThreaded(5);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(world.error(r).code, device::kLaneOk) << describeLaneError(world.error(r), world.program(r));
    for (size_t i = 0; i < 301; ++i) ASSERT_EQ(recv[r][i], 21 - 3 * static_cast<int32_t>(i)) << r << " " << i;
  }
  EXPECT_EQ(world.headPosts(), 0u);
}

// Ranks whose thresholds differ choose different protocols for one message: the receiver says
// so (a protocol error, marked as a call mismatch for the peers) instead of waiting for a head
// that never comes or taking lines as a slot.
TEST(DeviceLanesLL, ThresholdMismatchIsAProtocolErrorNotAHang) {
  for (int slotRank : {0, 1}) {
    SCOPED_TRACE("the rank without LL: " + std::to_string(slotRank));
    LaneWorld world(2, 2, 256);
    world.useLL(kAllLL);
    world.useLL(slotRank, 0);
    world.append(params(CollKind::kAllReduce, Algo::kRing, 2, 16), sizeof(int32_t));
    world.finish(weftInt32, weftSum, kTimeoutNs);
    std::vector<int32_t> send(16, 1), recv0(16), recv1(16);
    world.setBuffers(0, 0, send.data(), recv0.data(), nullptr);
    world.setBuffers(1, 0, send.data(), recv1.data(), nullptr);
    world.run();
    int protocol = 0;
    for (int r = 0; r < 2; ++r) {
      const device::LaneError& e = world.error(r);
      EXPECT_NE(e.code, device::kLaneOk);
      EXPECT_NE(e.code, device::kLaneTimeout) << describeLaneError(e, world.program(r));
      if (e.code != device::kLaneBadProtocol) continue;
      ++protocol;
      EXPECT_EQ(e.detail, r == slotRank ? 1u : 0u);  // 1: lines came where a slot was expected
      const std::string text = describeLaneError(e, world.program(r));
      EXPECT_NE(text.find("WEFT_DEVICE_LL_MAX_BYTES"), std::string::npos) << text;
    }
    EXPECT_GE(protocol, 1);
  }
}

// An LL message of another call: its header's stamp is refused as a slot's is.
TEST(DeviceLanesLL, StampMismatchOnAnLLMessageIsABadStamp) {
  LaneWorld world(2, 2, 256);
  world.useLL(kAllLL);
  world.append(params(CollKind::kAllReduce, Algo::kRing, 2, 16), sizeof(int32_t));
  world.finish(weftInt32, weftSum, kTimeoutNs);
  const uint64_t mine = 0x0000000c00001111ull, theirs = 0x0000000d00002222ull;
  std::vector<int32_t> send(16, 1), recv0(16), recv1(16);
  world.setBuffers(0, 0, send.data(), recv0.data(), nullptr, mine, mine);
  world.setBuffers(1, 0, send.data(), recv1.data(), nullptr, theirs, theirs);
  world.run();
  for (int r = 0; r < 2; ++r) {
    const device::LaneError& e = world.error(r);
    const std::string text = describeLaneError(e, world.program(r));
    if (e.code == device::kLaneBadStamp) {
      EXPECT_EQ(e.detail, r == 0 ? theirs : mine);
      EXPECT_NE(text.find("a message of another call from rank"), std::string::npos) << text;
    } else {
      // The other rank may have read its message first, or stopped at its peer's abort.
      EXPECT_EQ(e.code, device::kLanePeerAborted) << text;
    }
  }
  EXPECT_TRUE(world.error(0).code == device::kLaneBadStamp || world.error(1).code == device::kLaneBadStamp);
  EXPECT_EQ(world.headPosts(), 0u);
}

}  // namespace
}  // namespace coll
}  // namespace weft
