// Proves every algorithm with the reference interpreter: every collective x algorithm for
// every rank count 1..64 and a few larger ones, counts 0, 1, odd and larger, slices small
// enough that blocks take many iterations, 1..3 channels (and 8, 32), in place and out of
// place, several roots and ring orders. Also checks the trees' shape and the parameter checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/interpreter.h"
#include "collectives/schedule.h"
#include "schedule_cases.h"

namespace weft {
namespace coll {
namespace {

using testing::AlgoCase;
using testing::algoCaseName;
using testing::kAlgos;
using testing::scheduleParams;

bool hasInPlace(CollKind kind) { return kind != CollKind::kAllToAll; }
bool rooted(CollKind kind) { return kind == CollKind::kBroadcast || kind == CollKind::kReduce; }
// Per-rank buffers of all-gather, reduce-scatter and all-to-all hold n blocks of count.
bool blocked(CollKind kind) {
  return kind == CollKind::kAllGather || kind == CollKind::kReduceScatter || kind == CollKind::kAllToAll;
}
// Rings need two slots per FIFO; everything else runs with one.
int minFifo(const AlgoCase& c) {
  bool ring = c.algo == Algo::kRing &&
              (c.kind == CollKind::kAllReduce || c.kind == CollKind::kAllGather || c.kind == CollKind::kReduceScatter);
  return ring ? 2 : 1;
}

std::string describe(const ScheduleParams& p, int64_t slice, bool inPlace, int fifo) {
  return std::string(collName(p.kind)) + "/" + algoName(p.algo) + " n=" + std::to_string(p.nRanks) +
         " count=" + std::to_string(p.count) + " channels=" + std::to_string(p.nChannels) +
         " root=" + std::to_string(p.root) + " slice=" + std::to_string(slice) + (inPlace ? " in-place" : "") +
         " fifo=" + std::to_string(fifo) + (p.ringOrders.empty() ? "" : " ringOrders");
}

// Runs the interpreter and returns how many configurations failed (reporting the first few).
void expectVerified(const ScheduleParams& p, int64_t slice, bool inPlace, int fifo, int* failures) {
  std::string err = verifySchedule(p, slice, inPlace, fifo);
  if (err.empty()) return;
  if (++*failures <= 5) ADD_FAILURE() << describe(p, slice, inPlace, fifo) << ": " << err;
}

class ScheduleSweep : public ::testing::TestWithParam<AlgoCase> {};

// Every rank count 1..64 at counts 0, 1, n-1 and 2n+1; channels, slices, in-place, roots and
// FIFO sizes rotate with the rank count and count so that every combination shows up many times.
TEST_P(ScheduleSweep, AllRankCountsUpTo64) {
  const AlgoCase c = GetParam();
  int failures = 0;
  for (int n = 1; n <= 64; ++n) {
    int64_t counts[] = {0, 1, n - 1, 2 * n + 1};
    for (int ci = 0; ci < 4; ++ci) {
      int64_t count = counts[ci];
      if (blocked(c.kind) && ci == 3) count = 3;  // buffers are n * count already
      for (int channels = 1; channels <= 3; ++channels) {
        int64_t slice = ((n + ci + channels) % 2) ? 3 : 64;
        int root = rooted(c.kind) ? std::vector<int>{0, n - 1, n / 2}[(n + ci + channels) % 3] : 0;
        int fifo = minFifo(c) + (n + channels) % 2;
        ScheduleParams p = scheduleParams(c.kind, c.algo, n, count, channels, root);
        expectVerified(p, slice, false, fifo, &failures);
        if (hasInPlace(c.kind)) expectVerified(p, slice, true, fifo, &failures);
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

// A larger count, so that blocks are uneven and take many slices: every rank count 1..64 in one
// rotating configuration, and a few rank counts in every configuration.
TEST_P(ScheduleSweep, LargerCounts) {
  const AlgoCase c = GetParam();
  const int64_t count = blocked(c.kind) ? 37 : 1001;
  int failures = 0;
  for (int n = 1; n <= 64; ++n) {
    int channels = 1 + n % 3;
    int64_t slice = n % 2 ? 3 : 64;
    bool inPlace = hasInPlace(c.kind) && n % 4 >= 2;
    int root = rooted(c.kind) ? std::vector<int>{0, n - 1, n / 2}[n % 3] : 0;
    expectVerified(scheduleParams(c.kind, c.algo, n, count, channels, root), slice, inPlace, minFifo(c), &failures);
  }
  for (int n : {2, 3, 4, 5, 8, 13, 32, 33}) {
    for (int channels : {1, 2, 3}) {
      for (int64_t slice : {int64_t{3}, int64_t{64}}) {
        for (bool inPlace : {false, true}) {
          if (inPlace && !hasInPlace(c.kind)) continue;
          int root = rooted(c.kind) ? (n - 1 + channels) % n : 0;
          expectVerified(scheduleParams(c.kind, c.algo, n, count, channels, root), slice, inPlace, minFifo(c),
                         &failures);
        }
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST_P(ScheduleSweep, ManyRanks) {
  const AlgoCase c = GetParam();
  int failures = 0;
  for (int n : {100, 128, 257}) {
    for (int64_t count : {int64_t{1}, blocked(c.kind) ? int64_t{3} : int64_t{2 * n + 1}}) {
      for (int channels : {1, 2}) {
        bool inPlace = hasInPlace(c.kind) && channels == 2;
        int root = rooted(c.kind) ? (channels == 1 ? n - 1 : n / 2) : 0;
        expectVerified(scheduleParams(c.kind, c.algo, n, count, channels, root), 64, inPlace, minFifo(c), &failures);
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

// Up to 32 channels (more channels than elements, too), a permuted ring order, deeper FIFOs.
TEST_P(ScheduleSweep, ChannelsOrdersAndFifos) {
  const AlgoCase c = GetParam();
  int failures = 0;
  std::mt19937 rng(12345);
  for (int n : {2, 3, 6, 9}) {
    for (int channels : {4, 8, 32}) {
      ScheduleParams p = scheduleParams(c.kind, c.algo, n, blocked(c.kind) ? 19 : 203, channels, n - 1);
      expectVerified(p, 5, false, minFifo(c), &failures);
      if (hasInPlace(c.kind)) expectVerified(p, 2, true, 4, &failures);
    }
    ScheduleParams p = scheduleParams(c.kind, c.algo, n, blocked(c.kind) ? 11 : 301, 3, 1 % n);
    // Two different orders over three channels: channel 2 takes the first again, reversed.
    p.ringOrders.assign(2, std::vector<int>(static_cast<size_t>(n)));
    for (std::vector<int>& order : p.ringOrders) {
      for (int i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
      std::shuffle(order.begin(), order.end(), rng);
    }
    for (bool inPlace : {false, true}) {
      if (inPlace && !hasInPlace(c.kind)) continue;
      expectVerified(p, 7, inPlace, minFifo(c), &failures);
      expectVerified(p, 1000, inPlace, 8, &failures);
    }
  }
  EXPECT_EQ(failures, 0);
}

// Parts on 16-byte boundaries (ScheduleParams::align = partitionAlign of 1-, 2-, 4- and 8-byte
// elements): every algorithm stays right for every rank count, odd counts and channels.
TEST_P(ScheduleSweep, AlignedPartitions) {
  const AlgoCase c = GetParam();
  int failures = 0;
  for (int64_t align : {int64_t{2}, int64_t{4}, int64_t{16}}) {
    for (int n = 1; n <= 64; n += (n < 9 ? 1 : 7)) {
      for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{3}, blocked(c.kind) ? int64_t{37} : int64_t{1001}}) {
        for (int channels : {1, 3}) {
          ScheduleParams p = scheduleParams(c.kind, c.algo, n, count, channels, rooted(c.kind) ? n / 2 : 0);
          p.align = align;
          const int64_t slice = n % 2 ? 3 : 64;
          expectVerified(p, slice, false, minFifo(c), &failures);
          if (hasInPlace(c.kind)) expectVerified(p, slice, n % 3 == 0, minFifo(c) + 1, &failures);
        }
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(All, ScheduleSweep, ::testing::ValuesIn(kAlgos),
                         [](const ::testing::TestParamInfo<AlgoCase>& param) { return algoCaseName(param.param); });

// splitEven's parts tile [0, total) in order, start at multiples of align, are as even as whole
// units allow (the last one also takes the remainder), and largestPart is the largest of them.
TEST(SchedulePartition, SplitEvenOnAlignedBoundaries) {
  for (int64_t align : {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}, int64_t{16}}) {
    for (int64_t total = 0; total <= 300; ++total) {
      for (int parts = 1; parts <= 9; ++parts) {
        SCOPED_TRACE("align " + std::to_string(align) + " total " + std::to_string(total) + " parts " +
                     std::to_string(parts));
        int64_t next = 0, largest = 0, smallest = total;
        for (int i = 0; i < parts; ++i) {
          const algo::Part part = algo::splitEven(total, parts, i, align);
          ASSERT_EQ(part.offset, next);
          ASSERT_EQ(part.offset % align, 0);
          ASSERT_GE(part.count, 0);
          next += part.count;
          largest = std::max(largest, part.count);
          smallest = std::min(smallest, part.count - (i == parts - 1 ? total % align : 0));
        }
        ASSERT_EQ(next, total);
        ASSERT_EQ(algo::largestPart(total, parts, align), largest);
        ASSERT_LE(largest - smallest, align + total % align);
      }
    }
  }
  // Align 1 is the old even split: the first total % parts parts take one more.
  EXPECT_EQ(algo::splitEven(10, 3, 0).count, 4);
  EXPECT_EQ(algo::splitEven(10, 3, 2).offset, 7);
  // 1001 floats are 250 units of 4 and one element: 84 + 83 + 83 units, the last 1 element more.
  EXPECT_EQ(algo::splitEven(1001, 3, 1, 4).offset, 336);
  EXPECT_EQ(algo::splitEven(1001, 3, 2, 4).offset, 668);
  EXPECT_EQ(algo::splitEven(1001, 3, 2, 4).count, 333);
}

TEST(SchedulePartition, AlignOfElementSizes) {
  EXPECT_EQ(partitionAlign(1), 16);
  EXPECT_EQ(partitionAlign(2), 8);
  EXPECT_EQ(partitionAlign(4), 4);
  EXPECT_EQ(partitionAlign(8), 2);
  EXPECT_EQ(partitionAlign(16), 1);
  EXPECT_EQ(partitionAlign(3), 1);
  EXPECT_EQ(partitionAlign(0), 1);
  ScheduleParams p = scheduleParams(CollKind::kAllReduce, Algo::kRing, 4, 64, 1, 0);
  p.align = 0;
  EXPECT_NE(validateParams(p).find("align is 0"), std::string::npos) << validateParams(p);
  p.align = 17;
  EXPECT_NE(validateParams(p).find("align is 17"), std::string::npos) << validateParams(p);
}

// Rings cannot run with one slot per FIFO (schedule.h): the interpreter says so.
TEST(ScheduleRing, OneSlotFifoDeadlocks) {
  ScheduleParams p = scheduleParams(CollKind::kAllReduce, Algo::kRing, 4, 64, 1, 0);
  std::string err = verifySchedule(p, 8, false, 1);
  EXPECT_NE(err.find("deadlock"), std::string::npos) << err;
  EXPECT_NE(err.find("at least 2 slots"), std::string::npos) << err;
  EXPECT_EQ(verifySchedule(p, 8, false, 2), "");
}

// Each tree spans all positions, has no cycle, and is about log2(n) deep; in the double
// binary tree no position is interior in both trees.
int depthOf(const std::vector<algo::TreeNode>& t, int pos) {
  int d = 0;
  while (t[pos].parent >= 0 && d <= static_cast<int>(t.size())) pos = t[pos].parent, ++d;
  return d;
}

int rootOf(const std::vector<algo::TreeNode>& t) {
  for (size_t v = 0; v < t.size(); ++v) {
    if (t[v].parent < 0) return static_cast<int>(v);
  }
  return -1;
}

void expectSpanningTree(const std::vector<algo::TreeNode>& t, int maxDepth, const std::string& what) {
  int n = static_cast<int>(t.size()), roots = 0;
  for (int v = 0; v < n; ++v) {
    if (t[v].parent < 0) ++roots;
    ASSERT_LE(depthOf(t, v), maxDepth) << what << " position " << v;
    int children = 0;
    for (int c = 0; c < 2; ++c) {
      int ch = t[v].children[c];
      if (ch < 0) continue;
      ++children;
      ASSERT_EQ(t[ch].parent, v) << what << " position " << v;
    }
    ASSERT_EQ(children, t[v].nChildren) << what << " position " << v;
    if (t[v].parent >= 0) {
      const algo::TreeNode& par = t[t[v].parent];
      ASSERT_TRUE(par.children[0] == v || par.children[1] == v) << what << " position " << v;
    }
  }
  ASSERT_EQ(roots, 1) << what;
}

TEST(ScheduleTree, DoubleBinaryTreeIsComplementary) {
  for (int n = 1; n <= 1024; ++n) {
    int maxDepth = 2;
    while ((1 << (maxDepth - 1)) < n) ++maxDepth;
    std::vector<algo::TreeNode> t0 = algo::doubleBinaryTree(n, 0), t1 = algo::doubleBinaryTree(n, 1);
    expectSpanningTree(t0, maxDepth, "tree 0 n=" + std::to_string(n));
    expectSpanningTree(t1, maxDepth, "tree 1 n=" + std::to_string(n));
    for (int v = 0; v < n; ++v) {
      ASSERT_FALSE(t0[v].nChildren > 0 && t1[v].nChildren > 0) << "n=" << n << " position " << v;
    }
    if (n > 1) {
      EXPECT_NE(rootOf(t0), rootOf(t1)) << "n=" << n;
    }
  }
}

// Ranks of two hosts, each host's together in the order (any even count): each tree of the
// double binary tree crosses between the hosts over exactly one edge, the least a spanning tree
// can (the shifted tree 1 used before crossed more: position 0 joined the far end).
TEST(ScheduleTree, DoubleBinaryTreeCrossesBetweenTwoHalvesOnce) {
  for (int n = 2; n <= 256; n += 2) {
    for (int which : {0, 1}) {
      std::vector<algo::TreeNode> t = algo::doubleBinaryTree(n, which);
      int crossings = 0;
      for (int v = 0; v < n; ++v) {
        if (t[v].parent >= 0 && (v < n / 2) != (t[v].parent < n / 2)) ++crossings;
      }
      EXPECT_EQ(crossings, 1) << "n=" << n << " tree " << which;
    }
  }
}

TEST(ScheduleTree, HeapTreeIsRootedAtRoot) {
  for (int n = 1; n <= 300; n += 7) {
    for (int root : {0, n / 3, n - 1}) {
      std::vector<algo::TreeNode> t = algo::heapTree(n, root);
      int maxDepth = 1;
      while ((1 << maxDepth) <= n) ++maxDepth;
      expectSpanningTree(t, maxDepth, "heap n=" + std::to_string(n));
      EXPECT_EQ(t[root].parent, -1);
    }
  }
}

// In every rank's tree all-reduce schedule, each channel's up lanes receive (merge children)
// in at most one of the two trees; every rank has the same lanes and maxStepCount.
TEST(ScheduleTree, LanesInteriorWorkAndMaxStepCount) {
  for (int n : {1, 2, 5, 64, 65}) {
    ScheduleParams p = scheduleParams(CollKind::kAllReduce, Algo::kTree, n, 1000, 3, 0);
    for (const RankSchedule& s : buildAllSchedules(p)) {
      ASSERT_EQ(static_cast<int>(s.lanes.size()), 3 * lanesPerChannel(p));
      EXPECT_EQ(s.maxStepCount, n == 1 ? 334 : 167);
      for (int c = 0; c < 3; ++c) {
        int interior = 0;
        for (int t = 0; t < 2; ++t) {
          bool merges = false;
          for (const Step& st : s.lanes[c * 4 + t * 2].steps) merges = merges || stepReceives(st.kind);
          interior += merges;
        }
        EXPECT_LE(interior, 1) << "n=" << n << " rank " << s.rank << " channel " << c;
      }
    }
  }
}

TEST(ScheduleBuild, OneRankIsLocalCopies) {
  for (const AlgoCase& c : kAlgos) {
    ScheduleParams p = scheduleParams(c.kind, c.algo, 1, 10, 2, 0);
    RankSchedule s = buildSchedule(p, 0);
    for (const Lane& lane : s.lanes) {
      for (const Step& st : lane.steps) EXPECT_EQ(st.kind, StepKind::kCopy) << algoCaseName(c);
    }
  }
}

TEST(ScheduleBuild, ReduceTreeScratch) {
  ScheduleParams p = scheduleParams(CollKind::kReduce, Algo::kTree, 4, 100, 1, 0);
  EXPECT_EQ(scratchBufferCount(p), 0);
  p.nRanks = 5;
  EXPECT_EQ(scratchBufferCount(p), 100);
  p.algo = Algo::kRing;
  EXPECT_EQ(scratchBufferCount(p), 0);
}

TEST(ScheduleParamsCheck, RejectsBadParameters) {
  ScheduleParams good = scheduleParams(CollKind::kBroadcast, Algo::kTree, 4, 10, 2, 3);
  EXPECT_EQ(validateParams(good), "");
  auto bad = [&](auto change, const char* needle) {
    ScheduleParams p = good;
    change(p);
    std::string err = validateParams(p);
    EXPECT_NE(err.find(needle), std::string::npos) << "got: " << err;
  };
  bad([](ScheduleParams& p) { p.nRanks = 0; }, "nRanks is 0");
  bad([](ScheduleParams& p) { p.root = 4; }, "root 4");
  bad([](ScheduleParams& p) { p.nChannels = 33; }, "nChannels is 33");
  bad([](ScheduleParams& p) { p.count = -1; }, "negative");
  bad([](ScheduleParams& p) { p.algo = Algo::kPairwise; }, "no pairwise algorithm");
  bad([](ScheduleParams& p) { p.kind = CollKind::kSendRecv; }, "built from the user's calls");
  bad([](ScheduleParams& p) { p.ringOrders = {{0, 1, 2}}; }, "3 entries for 4 ranks");
  bad([](ScheduleParams& p) { p.ringOrders = {{0, 1, 2, 3}, {0, 1, 1, 2}}; }, "ringOrders[1] lists rank 1 twice");
  bad([](ScheduleParams& p) { p.ringOrders = {{0, 1, 2, 7}}; }, "not a rank");
  bad([](ScheduleParams& p) { p.ringOrders.assign(33, {0, 1, 2, 3}); }, "33 ring orders");
  bad([](ScheduleParams& p) { p.count = int64_t{1} << 62, p.kind = CollKind::kAllGather, p.algo = Algo::kRing; },
      "does not fit");
}

TEST(ScheduleFormat, NamesStepsPeersAndRegions) {
  ScheduleParams p = scheduleParams(CollKind::kAllReduce, Algo::kRing, 3, 9, 1, 0);
  std::string text = formatSchedule(buildSchedule(p, 0));
  EXPECT_NE(text.find("rank 0: 1 lanes, maxStepCount 3"), std::string::npos) << text;
  EXPECT_NE(text.find("send to 1, src send[6, +3)"), std::string::npos) << text;
  EXPECT_NE(text.find("recvReduceCopySend from 2 to 1, src send[0, +3), dst recv[0, +3), final"), std::string::npos)
      << text;
  EXPECT_NE(text.find("recv from 2, dst recv[3, +3)"), std::string::npos) << text;
  EXPECT_STREQ(collName(CollKind::kReduceScatter), "reducescatter");
  EXPECT_STREQ(algoName(Algo::kPairwise), "pairwise");
  EXPECT_STREQ(stepName(StepKind::kRecvReduceCopySend), "recvReduceCopySend");
}

}  // namespace
}  // namespace coll
}  // namespace weft
