// The fact tables (step_kind.h, coll_traits.h, the algorithm table in schedule.cc) against what
// the code that reads them does: the device encoding of every step kind as the device-program
// encoder writes it, every schedule's steps against their kind's flags, the collective traits'
// extents against the regions the schedules touch, and the algorithm table against the
// schedules it builds.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "base/coll_traits.h"
#include "collectives/device_executor.h"
#include "collectives/schedule.h"
#include "collectives/step_kind.h"

namespace weft {
namespace coll {
namespace {

const Algo kAllAlgos[] = {Algo::kRing, Algo::kTree, Algo::kPairwise, Algo::kRecursiveDoubling};

// What the API documents, written here independently of the tables.
struct ExpectedColl {
  CollKind kind;
  int sendBlocks;  // the send buffer holds count * (sendBlocks ? nRanks : 1)
  int recvBlocks;
  bool reduces;
  bool rooted;
  std::vector<Algo> algos;
};
const std::vector<ExpectedColl>& expectedColls() {
  static const std::vector<ExpectedColl> e = {
      {CollKind::kAllReduce, 0, 0, true, false, {Algo::kRing, Algo::kTree, Algo::kRecursiveDoubling}},
      {CollKind::kAllGather, 0, 1, false, false, {Algo::kRing}},
      {CollKind::kReduceScatter, 1, 0, true, false, {Algo::kRing}},
      {CollKind::kBroadcast, 0, 0, false, true, {Algo::kRing, Algo::kTree}},
      {CollKind::kReduce, 0, 0, true, true, {Algo::kRing, Algo::kTree}},
      {CollKind::kAllToAll, 1, 1, false, false, {Algo::kPairwise}},
  };
  return e;
}

std::vector<const Step*> allSteps(const RankSchedule& s) {
  std::vector<const Step*> out;
  for (const Lane& lane : s.lanes) {
    for (const Step& st : lane.steps) out.push_back(&st);
  }
  return out;
}

TEST(StepKindTable, EveryKindHasARowAndAName) {
  ASSERT_EQ(kNumStepKinds, 7);
  std::set<std::string> names;
  for (int i = 0; i < kNumStepKinds; ++i) {
    const StepKind k = static_cast<StepKind>(i);
    EXPECT_EQ(kStepKinds[i].kind, k);
    EXPECT_STREQ(stepName(k), kStepKinds[i].name);
    names.insert(stepName(k));
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kNumStepKinds)) << "names must differ";
  EXPECT_STREQ(stepName(static_cast<StepKind>(kNumStepKinds)), "unknown");
}

// The predicates the device reads (a packed word) say what the table's rows say, and a byte that
// names no kind has no flags (the lane program would then move nothing rather than misread).
TEST(StepKindTable, PackedFlagsMatchTheRows) {
  for (const StepKindInfo& k : kStepKinds) {
    SCOPED_TRACE(k.name);
    EXPECT_EQ(stepReceives(k.kind), k.receives);
    EXPECT_EQ(stepSends(k.kind), k.sends);
    EXPECT_EQ(stepReads(k.kind), k.reads);
    EXPECT_EQ(stepWrites(k.kind), k.writes);
    EXPECT_EQ(stepReduces(k.kind), k.reduces);
    EXPECT_TRUE(k.receives || k.sends || (k.reads && k.writes)) << "a step must move something";
  }
  EXPECT_EQ(stepFlags(decodeStepKind(static_cast<uint8_t>(kNumStepKinds))), 0u);
  EXPECT_EQ(stepFlags(decodeStepKind(255)), 0u);
}

// What the kinds mean, spelled out once more by hand: a change to a row must be deliberate.
TEST(StepKindTable, KnownKinds) {
  EXPECT_TRUE(stepSends(StepKind::kSend) && stepReads(StepKind::kSend) && !stepReceives(StepKind::kSend));
  EXPECT_TRUE(stepReceives(StepKind::kRecv) && stepWrites(StepKind::kRecv) && !stepReads(StepKind::kRecv));
  EXPECT_TRUE(stepReduces(StepKind::kRecvReduceSend) && !stepWrites(StepKind::kRecvReduceSend));
  EXPECT_TRUE(stepReduces(StepKind::kRecvReduceCopy) && !stepSends(StepKind::kRecvReduceCopy));
  EXPECT_TRUE(stepReduces(StepKind::kRecvReduceCopySend) && stepSends(StepKind::kRecvReduceCopySend) &&
              stepWrites(StepKind::kRecvReduceCopySend));
  EXPECT_TRUE(!stepReduces(StepKind::kRecvCopySend) && !stepReads(StepKind::kRecvCopySend) &&
              stepSends(StepKind::kRecvCopySend));
  EXPECT_TRUE(!stepReceives(StepKind::kCopy) && !stepSends(StepKind::kCopy) && stepReads(StepKind::kCopy) &&
              stepWrites(StepKind::kCopy));
}

// The device-program encoder writes every kind as a byte the lane program decodes back to the
// same kind, with FIFOs exactly where the kind receives or sends.
TEST(StepKindTable, DeviceEncodingOfEveryKind) {
  RankSchedule s;
  s.lanes.resize(1);
  for (int i = 0; i < kNumStepKinds; ++i) {
    Step st;
    st.kind = static_cast<StepKind>(i);
    st.recvPeer = stepReceives(st.kind) ? 1 : -1;
    st.sendPeer = stepSends(st.kind) ? 2 : -1;
    st.count = 3;
    s.lanes[0].steps.push_back(st);
  }
  s.maxStepCount = 3;
  DeviceProgram program;
  ASSERT_TRUE(appendToProgram(&program, s, 4, 64).isOk());
  ASSERT_EQ(program.steps.size(), static_cast<size_t>(kNumStepKinds));
  for (int i = 0; i < kNumStepKinds; ++i) {
    const device::LaneStep& ls = program.steps[static_cast<size_t>(i)];
    const StepKind k = static_cast<StepKind>(i);
    SCOPED_TRACE(stepName(k));
    EXPECT_EQ(ls.kind, encodeStepKind(k));
    EXPECT_EQ(decodeStepKind(ls.kind), k);
    EXPECT_EQ(ls.recvFifo >= 0, stepReceives(k));
    EXPECT_EQ(ls.sendFifo >= 0, stepSends(k));
  }
}

TEST(CollTraits, MatchWhatTheApiDocuments) {
  // Besides the scheduled ones: send/recv, gather and scatter (built from the calls).
  ASSERT_EQ(expectedColls().size() + 3, static_cast<size_t>(kNumCollKinds)) << "a collective without expectations";
  for (const ExpectedColl& e : expectedColls()) {
    SCOPED_TRACE(collName(e.kind));
    EXPECT_EQ(collReduces(e.kind), e.reduces);
    EXPECT_EQ(collRooted(e.kind), e.rooted);
    EXPECT_TRUE(collTraits(e.kind).scheduled);
    const CollExtents x = collExtents(e.kind, 5, 3);
    EXPECT_EQ(x.send, e.sendBlocks ? 15 : 5);
    EXPECT_EQ(x.recv, e.recvBlocks ? 15 : 5);
    EXPECT_EQ(collCountPerRank(e.kind), e.sendBlocks || e.recvBlocks);
    const CollExtents b = collExtentBytes(e.kind, 5, 4, 3);
    EXPECT_EQ(b.send, x.send * 4);
    EXPECT_EQ(b.recv, x.recv * 4);
    CollKind parsed;
    ASSERT_TRUE(collFromName(collName(e.kind), &parsed));
    EXPECT_EQ(parsed, e.kind);
  }
  EXPECT_FALSE(collTraits(CollKind::kSendRecv).scheduled);
  // Gather and scatter: rooted, one buffer of nRanks blocks on the root, built from the calls.
  for (CollKind k : {CollKind::kGather, CollKind::kScatter}) {
    SCOPED_TRACE(collName(k));
    EXPECT_FALSE(collTraits(k).scheduled);
    EXPECT_TRUE(collRooted(k));
    EXPECT_FALSE(collReduces(k));
    EXPECT_FALSE(collTraits(k).everyResultNeedsEveryRank);
  }
  EXPECT_EQ(collExtents(CollKind::kGather, 5, 3).recv, 15);
  EXPECT_EQ(collExtents(CollKind::kGather, 5, 3).send, 5);
  EXPECT_EQ(collExtents(CollKind::kScatter, 5, 3).send, 15);
  EXPECT_EQ(collExtents(CollKind::kScatter, 5, 3).recv, 5);
  EXPECT_FALSE(collUsesRecv(CollKind::kGather, 1, 0));
  EXPECT_FALSE(collUsesSend(CollKind::kScatter, 1, 0));
  CollKind parsed;
  EXPECT_FALSE(collFromName("gather", &parsed));
  EXPECT_FALSE(collFromName("sendrecv", &parsed));
  EXPECT_TRUE(collFromName("All_Reduce", &parsed));
  EXPECT_EQ(parsed, CollKind::kAllReduce);
}

// collSourceOf against the collectives' definitions, written out per kind: 3 ranks, count 2,
// rank 1's receive buffer, root 2.
TEST(CollTraits, SourceOfEachReceivedElement) {
  struct Want {
    CollKind kind;
    int64_t index;
    int fromRank;  // -1: summed over every rank
    int64_t sendIndex;
  };
  const Want wants[] = {
      {CollKind::kAllReduce, 1, -1, 1},     {CollKind::kReduceScatter, 1, -1, 3},  // rank 1's block: 2..3
      {CollKind::kReduce, 0, -1, 0},        {CollKind::kAllGather, 5, 2, 1},       // block 2 of rank 2
      {CollKind::kBroadcast, 1, 2, 1},      {CollKind::kAllToAll, 0, 0, 2},        // rank 0's block for rank 1
      {CollKind::kAllToAll, 5, 2, 3},
  };
  for (const Want& w : wants) {
    const CollSource src = collSourceOf(w.kind, 1, 2, w.index, 2);
    EXPECT_TRUE(src.valid) << collName(w.kind);
    EXPECT_EQ(src.fromRank, w.fromRank) << collName(w.kind) << " [" << w.index << "]";
    EXPECT_EQ(src.sendIndex, w.sendIndex) << collName(w.kind) << " [" << w.index << "]";
  }
  EXPECT_FALSE(collSourceOf(CollKind::kSendRecv, 1, 2, 0, 2).valid);
}

TEST(CollTraits, InPlaceLayout) {
  EXPECT_EQ(collInPlaceRecvOffset(CollKind::kAllGather, 3, 5), -15);     // send is block 3 of recv
  EXPECT_EQ(collInPlaceRecvOffset(CollKind::kReduceScatter, 3, 5), 15);  // recv is block 3 of send
  EXPECT_EQ(collInPlaceRecvOffset(CollKind::kAllReduce, 3, 5), 0);
  EXPECT_EQ(collInPlaceRecvOffset(CollKind::kAllToAll, 3, 5), 0);
}

TEST(CollTraits, BusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(collBusBwFactor(CollKind::kAllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(collBusBwFactor(CollKind::kAllToAll, 4), 0.75);
  EXPECT_DOUBLE_EQ(collBusBwFactor(CollKind::kBroadcast, 4), 1.0);
  EXPECT_DOUBLE_EQ(collBusBwFactor(CollKind::kAllGather, 0), 0.0);
}

TEST(CollTraits, RootOnlyBuffers) {
  EXPECT_FALSE(collUsesSend(CollKind::kBroadcast, 1, 0));
  EXPECT_TRUE(collUsesSend(CollKind::kBroadcast, 0, 0));
  EXPECT_TRUE(collUsesRecv(CollKind::kBroadcast, 1, 0));
  EXPECT_FALSE(collUsesRecv(CollKind::kReduce, 1, 0));
  EXPECT_TRUE(collUsesRecv(CollKind::kReduce, 0, 0));
  EXPECT_TRUE(collUsesSend(CollKind::kReduce, 1, 0));
  EXPECT_TRUE(collUsesSend(CollKind::kAllReduce, 1, 0) && collUsesRecv(CollKind::kAllReduce, 1, 0));
}

// The in-place staging rule: all-to-all in place with something to send, nothing else.
TEST(CollTraits, StagingRule) {
  int a[4], b[4];
  for (const CollTraits& t : kCollTraits) {
    SCOPED_TRACE(t.name);
    EXPECT_EQ(collStagesSend(t.kind, a, a, 1), t.kind == CollKind::kAllToAll);
    EXPECT_FALSE(collStagesSend(t.kind, a, b, 1));
    EXPECT_FALSE(collStagesSend(t.kind, a, a, 0));
  }
}

TEST(AlgoTable, SupportedPairsAreExactlyTheDocumentedOnes) {
  for (const ExpectedColl& e : expectedColls()) {
    for (Algo a : kAllAlgos) {
      const bool expected = std::find(e.algos.begin(), e.algos.end(), a) != e.algos.end();
      EXPECT_EQ(algoSupported(e.kind, a), expected) << collName(e.kind) << " " << algoName(a);
    }
    EXPECT_TRUE(algoSupported(e.kind, collTraits(e.kind).defaultAlgo)) << collName(e.kind);
  }
  for (Algo a : kAllAlgos) EXPECT_FALSE(algoSupported(CollKind::kSendRecv, a));
}

TEST(AlgoTable, NamesRoundTrip) {
  std::set<std::string> names;
  for (Algo a : kAllAlgos) {
    Algo parsed;
    ASSERT_TRUE(algoFromName(algoName(a), &parsed)) << algoName(a);
    EXPECT_EQ(parsed, a);
    names.insert(algoName(a));
    EXPECT_NE(std::string(algorithmNames()).find(algoName(a)), std::string::npos);
  }
  EXPECT_EQ(names.size(), 4u);
  Algo parsed;
  EXPECT_TRUE(algoFromName("Doubling", &parsed));
  EXPECT_EQ(parsed, Algo::kRecursiveDoubling);
  EXPECT_FALSE(algoFromName("butterfly", &parsed));
}

// The message for an unsupported pair lists every supported one (it once forgot doubling).
TEST(AlgoTable, ValidationMessageListsEverySupportedAlgorithm) {
  ScheduleParams p;
  p.kind = CollKind::kAllGather;
  p.algo = Algo::kTree;
  p.nRanks = 4;
  const std::string msg = validateParams(p);
  ASSERT_NE(msg, "");
  for (const ExpectedColl& e : expectedColls()) {
    std::string entry = std::string(collName(e.kind)) + ":";
    for (size_t i = 0; i < e.algos.size(); ++i) entry += std::string(i ? ", " : " ") + algoName(e.algos[i]);
    EXPECT_NE(msg.find(entry), std::string::npos) << msg << "\nmissing: " << entry;
  }
}

// Every schedule the table builds: lanes as the table says, steps' peers and regions as their
// kinds' flags say, regions inside the traits' extents and the table's scratch, reductions only
// where the collective reduces, and the extents the schedule module reports equal the traits'.
TEST(AlgoTable, SchedulesAgreeWithTheTables) {
  for (const ExpectedColl& e : expectedColls()) {
    for (Algo a : e.algos) {
      for (int n : {1, 2, 3, 5, 8}) {
        for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{7}}) {
          for (int channels : {1, 2}) {
            ScheduleParams p;
            p.kind = e.kind, p.algo = a, p.nRanks = n, p.count = count, p.nChannels = channels;
            p.root = collRooted(e.kind) ? n - 1 : 0;
            SCOPED_TRACE(std::string(collName(e.kind)) + " " + algoName(a) + " n=" + std::to_string(n) +
                         " count=" + std::to_string(count) + " channels=" + std::to_string(channels));
            ASSERT_EQ(validateParams(p), "");
            const CollExtents x = collExtents(e.kind, count, n);
            EXPECT_EQ(sendBufferCount(p), x.send);
            EXPECT_EQ(recvBufferCount(p), x.recv);
            bool reduced = false;
            for (int r = 0; r < n; ++r) {
              RankSchedule s = buildSchedule(p, r);
              ASSERT_EQ(s.lanes.size(), static_cast<size_t>(channels * lanesPerChannel(p)));
              const int64_t limit[3] = {x.send, x.recv, scratchBufferCount(p)};
              for (const Step* st : allSteps(s)) {
                EXPECT_EQ(st->recvPeer >= 0, stepReceives(st->kind)) << formatStep(*st);
                EXPECT_EQ(st->sendPeer >= 0, stepSends(st->kind)) << formatStep(*st);
                if (stepReads(st->kind) && st->count > 0) {
                  EXPECT_LE(st->srcOffset + st->count, limit[static_cast<int>(st->srcBuf)]) << formatStep(*st);
                }
                if (stepWrites(st->kind) && st->count > 0) {
                  EXPECT_LE(st->dstOffset + st->count, limit[static_cast<int>(st->dstBuf)]) << formatStep(*st);
                }
                reduced = reduced || (stepReduces(st->kind) && st->count > 0);
              }
            }
            if (!e.reduces || (n > 1 && count > 0)) {
              EXPECT_EQ(reduced, e.reduces);
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace coll
}  // namespace weft
