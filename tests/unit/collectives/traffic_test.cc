// Tests for collectives/traffic.h: the bytes each rank moves per step kind and path, and per
// schedule, against counts worked out by hand from the ring's steps.
#include "collectives/traffic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

namespace weft {
namespace coll {
namespace {

Step stepOf(StepKind kind) {
  Step s;
  s.kind = kind;
  return s;
}

// Operands touched per kind (reads src, reads incoming, writes dst, writes outgoing).
TEST(Traffic, EachStepKindCountsItsOperands) {
  struct Case {
    StepKind kind;
    double fifo, single, zero;
    bool reduces;
  };
  const Case cases[] = {
      {StepKind::kSend, 2, 0, 0, false},               // src -> slot; lent otherwise
      {StepKind::kRecv, 2, 2, 2, false},               // incoming -> dst
      {StepKind::kRecvReduceSend, 3, 3, 3, true},      // src + incoming -> slot (a result not stored)
      {StepKind::kRecvReduceCopy, 3, 3, 3, true},      // src + incoming -> dst
      {StepKind::kRecvReduceCopySend, 4, 4, 3, true},  // -> dst and slot; zero-copy: the peer reads dst
      {StepKind::kRecvCopySend, 3, 3, 2, false},       // incoming -> dst and slot
      {StepKind::kCopy, 2, 2, 2, false},               // src -> dst
  };
  for (const Case& c : cases) {
    const Step s = stepOf(c.kind);
    const double want[] = {c.fifo, c.single, c.zero};
    const CopyPath paths[] = {CopyPath::kFifo, CopyPath::kSingleCopy, CopyPath::kZeroCopy};
    for (int p = 0; p < 3; ++p) {
      const Traffic t = stepTraffic(s, 100, paths[p], false);
      EXPECT_DOUBLE_EQ(t.total(), want[p] * 100) << stepName(c.kind) << " " << copyPathName(paths[p]);
      EXPECT_DOUBLE_EQ(c.reduces ? t.copyBytes : t.reduceBytes, 0) << stepName(c.kind);
    }
  }
}

TEST(Traffic, InPlaceCopyOntoItselfMovesNothing) {
  Step s = stepOf(StepKind::kCopy);
  s.srcBuf = Buf::kSend;
  s.dstBuf = Buf::kRecv;
  s.srcOffset = s.dstOffset = 8;
  EXPECT_DOUBLE_EQ(stepTraffic(s, 64, CopyPath::kFifo, true).total(), 0);
  EXPECT_DOUBLE_EQ(stepTraffic(s, 64, CopyPath::kFifo, false).total(), 128);
  s.dstOffset = 16;  // a different place of the one buffer still copies
  EXPECT_DOUBLE_EQ(stepTraffic(s, 64, CopyPath::kFifo, true).total(), 128);
}

ScheduleParams ring(int nRanks, int64_t count) {
  ScheduleParams p;
  p.kind = CollKind::kAllReduce;
  p.algo = Algo::kRing;
  p.nRanks = nRanks;
  p.count = count;
  return p;
}

// 2 ranks, S bytes each: send S/2, recvReduceCopySend S/2, recv S/2.
TEST(Traffic, TwoRankRingAllReduceMovesFourThreeAndTwoAndAHalfBuffers) {
  const double s = 1024 * 4;
  const ScheduleParams p = ring(2, 1024);
  const Traffic fifo = busiestRankTraffic(p, 4, CopyPath::kFifo, false);
  EXPECT_DOUBLE_EQ(fifo.copyBytes, 2 * s);  // send: src + slot; recv: slot + dst
  EXPECT_DOUBLE_EQ(fifo.reduceBytes, 2 * s);
  const Traffic single = busiestRankTraffic(p, 4, CopyPath::kSingleCopy, false);
  EXPECT_DOUBLE_EQ(single.copyBytes, s);
  EXPECT_DOUBLE_EQ(single.reduceBytes, 2 * s);
  const Traffic zero = busiestRankTraffic(p, 4, CopyPath::kZeroCopy, false);
  EXPECT_DOUBLE_EQ(zero.copyBytes, s);
  EXPECT_DOUBLE_EQ(zero.reduceBytes, 1.5 * s);
  // In place changes nothing for a ring with more than one rank (it has no local copy).
  EXPECT_DOUBLE_EQ(busiestRankTraffic(p, 4, CopyPath::kFifo, true).total(), 4 * s);
}

// n ranks through FIFOs: send 2, (n-2) recvReduceSend 3, recvReduceCopySend 4, (n-2)
// recvCopySend 3, recv 2, each on S/n bytes.
TEST(Traffic, RingAllReduceThroughFifosForAnyRankCount) {
  for (int n = 2; n <= 9; ++n) {
    const int64_t count = 720 * 7 * 8;  // divisible by every n here
    const double blockBytes = static_cast<double>(count) * 2 / n;
    const Traffic t = busiestRankTraffic(ring(n, count), 2, CopyPath::kFifo, false);
    EXPECT_DOUBLE_EQ(t.copyBytes, (2 + 3.0 * (n - 2) + 2) * blockBytes) << n << " ranks";
    EXPECT_DOUBLE_EQ(t.reduceBytes, (3.0 * (n - 2) + 4) * blockBytes) << n << " ranks";
  }
  // One rank: a local copy, nothing at all in place.
  EXPECT_DOUBLE_EQ(busiestRankTraffic(ring(1, 100), 4, CopyPath::kFifo, false).total(), 800);
  EXPECT_DOUBLE_EQ(busiestRankTraffic(ring(1, 100), 4, CopyPath::kFifo, true).total(), 0);
}

// Every all-reduce algorithm: fewer copies never move more, and every rank moves at least its
// own input once and its result once.
TEST(Traffic, PathsOrderAndLowerBoundForEveryAllReduceAlgorithm) {
  for (Algo algo : {Algo::kRing, Algo::kTree, Algo::kRecursiveDoubling}) {
    for (int n = 1; n <= 12; ++n) {
      ScheduleParams p = ring(n, 4096);
      p.algo = algo;
      if (!validateParams(p).empty()) continue;
      const double fifo = busiestRankTraffic(p, 4, CopyPath::kFifo, false).total();
      const double single = busiestRankTraffic(p, 4, CopyPath::kSingleCopy, false).total();
      const double zero = busiestRankTraffic(p, 4, CopyPath::kZeroCopy, false).total();
      EXPECT_LE(single, fifo) << algoName(algo) << " " << n;
      EXPECT_LE(zero, single) << algoName(algo) << " " << n;
      EXPECT_GE(zero, n == 1 ? 2 * 4096 * 4 : 4096 * 4) << algoName(algo) << " " << n;
    }
  }
}

// The zero-copy all-reduce of registered buffers (direct_host.h): 2.0 buffers per rank at 2
// ranks, (5n - 6) / n at n, fewer than the ring through FIFOs from 2 ranks on.
TEST(Traffic, DirectAllReduceMovesTwoBuffersPerRankAtTwoRanks) {
  const Traffic two = directAllReduceTraffic(2, 4, 4096);
  EXPECT_DOUBLE_EQ(two.reduceBytes, 2.0 * 4096 * 4);
  EXPECT_DOUBLE_EQ(two.copyBytes, 0);
  const Traffic four = directAllReduceTraffic(4, 4, 4096);
  EXPECT_DOUBLE_EQ(four.reduceBytes, 10.0 * 1024 * 4);
  EXPECT_DOUBLE_EQ(four.copyBytes, 4.0 * 1024 * 4);
  EXPECT_DOUBLE_EQ(directAllReduceTraffic(1, 4, 4096).total(), 0);
  for (int n = 2; n <= 12; ++n) {
    EXPECT_LT(directAllReduceTraffic(n, 4, 4096).total(), busiestRankTraffic(ring(n, 4096), 4, CopyPath::kFifo, false).total())
        << n;
  }
}

TEST(Traffic, BoundAddsCopyAndReduceTimes) {
  Traffic t;
  t.copyBytes = 30e9;
  t.reduceBytes = 20e9;
  EXPECT_DOUBLE_EQ(boundSeconds(t, 10e9, 5e9), 3.0 + 4.0);
  EXPECT_DOUBLE_EQ(boundSeconds(t, 0, 5e9), 0);  // no measurement, no bound
}

// ---- scheduleWork against the host model's formulas it replaced ----

// The formulas topology/cost_model.cc used before the model priced the schedules (hostRingWork,
// hostTreeWork, hostDoublingWork and the pairwise case), kept here as the reference; s is
// nccl-tests' size (the larger buffer).
int floorLog2(int n) {
  int d = 0;
  while ((2 << d) <= n) ++d;
  return d;
}

topo::HostWork formulaWork(CollKind c, Algo a, int n, double s) {
  if (a == Algo::kTree) {
    const double kids = std::min(2, n - 1);
    const double depth = floorLog2(n);
    if (c == CollKind::kBroadcast) return {depth, s * (1 + kids), 0, s * kids};
    if (c == CollKind::kReduce) return {depth, s, s * kids, s};
    const double half = s / 2;
    return {2 * depth, half * (4 + kids), half * kids, half * (2 + kids)};
  }
  if (a == Algo::kRecursiveDoubling) {
    const int rounds = floorLog2(n);
    const double extra = (n & (n - 1)) != 0 ? 2 : 0;
    return {rounds + extra, (rounds + extra) * s, (rounds + (extra > 0 ? 1 : 0)) * s, (rounds + extra) * s};
  }
  if (a == Algo::kPairwise) return {double(n - 1), 2 * s * (n - 1) / n, 0, s * (n - 1) / n};
  const double share = s * (n - 1) / n;
  switch (c) {
    case CollKind::kAllReduce:
      return {2.0 * (n - 1), 3 * share, share, 2 * share};
    case CollKind::kAllGather:
      return {double(n - 1), 2 * share, 0, share};
    case CollKind::kReduceScatter:
      return {double(n - 1), share, share, share};
    case CollKind::kBroadcast:
      return {double(n - 1), 2 * s, 0, s};
    case CollKind::kReduce:
      return {double(n - 1), s, s, s};
    default:
      return {};
  }
}

std::string describeWork(const topo::HostWork& w) {
  char text[160];
  std::snprintf(text, sizeof(text), "hops %g copies %g reduces %g sent %g", w.hops, w.copies, w.reduces, w.sent);
  return text;
}

// Where the schedules do less than the formulas said (ScheduleWork.DiffersFromTheFormulas...
// pins each): doubling on a rank count that is no power of two, trees of up to 4 ranks, the
// broadcast chain of 2.
bool knownDifference(CollKind c, Algo a, int n) {
  if (a == Algo::kRecursiveDoubling) return (n & (n - 1)) != 0;
  if (a == Algo::kTree) return n <= 4 && c != CollKind::kReduce;
  return c == CollKind::kBroadcast && n == 2;
}

topo::HostWork largeWork(CollKind c, Algo a, int n, int64_t bytes) {
  ScheduleWorkSource source;
  topo::HostWork w;
  EXPECT_TRUE(source.work(c, a, n, bytes, &w));
  return w;
}

void expectWork(const topo::HostWork& got, const topo::HostWork& want, const std::string& what) {
  EXPECT_EQ(got.hops, want.hops) << what;
  EXPECT_DOUBLE_EQ(got.copies, want.copies) << what;
  EXPECT_DOUBLE_EQ(got.reduces, want.reduces) << what;
  EXPECT_DOUBLE_EQ(got.sent, want.sent) << what;
}

// Doubling on n = p + e ranks (p a power of two): the formula charged the partner of an extra
// rank one copy and one send too many (fold in, hand back: it receives the extra's data into a
// reduce, no copy, and sends the result once). And the chain is log2 p + 2 hops only when a
// rank that hands back depends on a folded partner's message in the last round: on 3, 5 and 6
// ranks the ranks that hand back finish a round early (log2 p + 1), on 7 and 12 they do not.
TEST(ScheduleWork, DiffersFromTheFormulasForDoublingOnExtraRanks) {
  const double s = 1 << 26;
  for (auto [n, hops] : {std::pair{3, 2}, {5, 3}, {6, 3}, {7, 4}, {12, 4}}) {
    const double rounds = floorLog2(n);
    expectWork(largeWork(CollKind::kAllReduce, Algo::kRecursiveDoubling, n, 1 << 26),
               {double(hops), (rounds + 1) * s, (rounds + 1) * s, (rounds + 1) * s}, std::to_string(n) + " ranks");
  }
}

// Trees of up to 4 ranks have no rank with both a parent and two children, which the
// formula's busiest rank was; the broadcast chain of 2 has no middle rank (receive and send on).
TEST(ScheduleWork, DiffersFromTheFormulasForSmallTreesAndTheChainOfTwo) {
  const double s = 1 << 26;
  const CollKind ar = CollKind::kAllReduce, bc = CollKind::kBroadcast;
  // All-reduce, half the data per tree: 2 ranks, the ring's steps (root of one, leaf of the
  // other); 3 and 4, a root of two children in one tree and a leaf in the other.
  expectWork(largeWork(ar, Algo::kTree, 2, 1 << 26), {2, 1.5 * s, 0.5 * s, s}, "2 ranks");
  expectWork(largeWork(ar, Algo::kTree, 3, 1 << 26), {2, 2 * s, s, 1.5 * s}, "3 ranks");
  expectWork(largeWork(ar, Algo::kTree, 4, 1 << 26), {4, 2.5 * s, s, 1.5 * s}, "4 ranks");
  // Broadcast: the root sends to each child, nobody sends on what it received.
  expectWork(largeWork(bc, Algo::kTree, 2, 1 << 26), {1, s, 0, s}, "2 ranks");
  expectWork(largeWork(bc, Algo::kTree, 3, 1 << 26), {1, 2 * s, 0, 2 * s}, "3 ranks");
  expectWork(largeWork(bc, Algo::kTree, 4, 1 << 26), {2, 2 * s, 0, 2 * s}, "4 ranks");
  expectWork(largeWork(bc, Algo::kRing, 2, 1 << 26), {1, s, 0, s}, "2 ranks");
}

// Small sizes are built exactly: 4 bytes (one float) on 8 ranks is one block of the ring's 8,
// which still goes all the way round twice (14 hops); its busiest rank sends it twice and
// copies one in (the formula spread 4 bytes over the 8 blocks: 10.5 copies, 7 sent).
TEST(ScheduleWork, SmallSizesAreBuiltExactly) {
  expectWork(largeWork(CollKind::kAllReduce, Algo::kRing, 8, 4), {14, 12, 4, 8}, "one float");
  expectWork(largeWork(CollKind::kAllReduce, Algo::kRing, 8, 1), {14, 12, 4, 8}, "a byte is priced as a float");
  // From kExactElemsPerRank elements per rank the pair is scaled from one large build: equal
  // to the exact build where blocks are even (128 floats per rank on 4 ranks).
  ScheduleParams p = ring(4, 512);
  p.align = partitionAlign(4);
  expectWork(largeWork(CollKind::kAllReduce, Algo::kRing, 4, 512 * 4), scheduleWork(p, 4), "2 KiB on 4 ranks");
}

// Every scheduled collective and algorithm on 2..16 ranks, at a large size: the work of the
// schedule is the formula's, but where knownDifference says otherwise.
TEST(ScheduleWork, EqualsTheHostModelFormulasAtLargeSizes) {
  for (const CollTraits& t : kCollTraits) {
    if (!t.scheduled) continue;
    for (int a = 0; a < kNumAlgos; ++a) {
      const Algo algo = static_cast<Algo>(a);
      if (!algoSupported(t.kind, algo)) continue;
      for (int n = 2; n <= 16; ++n) {
        if (knownDifference(t.kind, algo, n)) continue;
        const int64_t bytes = int64_t{1} << 26;  // a 64 MiB call
        ScheduleWorkSource source;
        topo::HostWork got;
        ASSERT_TRUE(source.work(t.kind, algo, n, bytes, &got));
        const CollExtents e = collExtents(t.kind, bytes, n);
        const topo::HostWork want = formulaWork(t.kind, algo, n, static_cast<double>(std::max(e.send, e.recv)));
        const std::string what = std::string(collName(t.kind)) + " " + algoName(algo) + " " + std::to_string(n) +
                                 " ranks: got " + describeWork(got) + ", formula " + describeWork(want);
        EXPECT_DOUBLE_EQ(got.hops, want.hops) << what;
        EXPECT_NEAR(got.copies, want.copies, want.copies * 1e-12) << what;
        EXPECT_NEAR(got.reduces, want.reduces, want.reduces * 1e-12) << what;
        EXPECT_NEAR(got.sent, want.sent, want.sent * 1e-12) << what;
      }
    }
  }
}

}  // namespace
}  // namespace coll
}  // namespace weft
