// Tests for collectives/traffic.h: the bytes each rank moves per step kind and path, and per
// schedule, against counts worked out by hand from the ring's steps.
#include "collectives/traffic.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace coll
}  // namespace weft
