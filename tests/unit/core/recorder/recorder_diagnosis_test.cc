// The diagnosis over flight recorders (src/core/recorder_diagnosis.*), from copies synthesized
// here: the sentences a person on call reads (who waits, in which call, for whom, and where that
// one is), disagreeing calls, dead, stopped and missing ranks, cycles of waits, communicators
// kept apart, and the progress between two looks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/coll_traits.h"
#include "core/recorder_diagnosis.h"
#include "weft/weft.h"

namespace weft_test {
namespace {

using weft::core::CopiedCall;
using weft::core::Diagnosis;
using weft::core::OwnerLiveness;
using weft::core::RecordedState;
using weft::core::RecorderCopy;
using weft::core::RecorderScan;

constexpr int64_t kSecond = 1000000000;
constexpr int64_t kNow = 1000 * kSecond;

CopiedCall call(uint64_t no, weft::coll::CollKind kind, RecordedState state, int64_t startedAgoNs, uint64_t count = 1024) {
  CopiedCall c;
  c.callNo = no;
  c.firstCallNo = no;
  c.callBytes = count * 4;
  c.kind = static_cast<int32_t>(kind);
  c.type = weftFloat32;
  c.op = weftSum;
  c.root = weft::coll::collRooted(kind) ? 0 : -1;
  c.algo = static_cast<int32_t>(weft::coll::Algo::kRing);
  c.state = state;
  c.count = count;
  c.queuedNs = kNow - startedAgoNs;
  c.startedNs = kNow - startedAgoNs;
  if (state == RecordedState::kDone) c.endedNs = kNow - startedAgoNs / 2;
  return c;
}

CopiedCall waiting(uint64_t no, weft::coll::CollKind kind, int peer, int64_t agoNs) {
  CopiedCall c = call(no, kind, RecordedState::kWaiting, agoNs);
  c.waitPeer = peer;
  c.waitStep = 2;
  return c;
}

RecorderCopy rankCopy(int rank, int nRanks, std::vector<CopiedCall> entries, uint64_t comm = 0xabcull) {
  RecorderCopy r;
  r.source = "seg" + std::to_string(rank);
  r.pid = 100 + rank;
  r.rank = rank;
  r.nRanks = nRanks;
  r.commHash = comm;
  r.host = "node" + std::to_string(rank / 2);
  r.frontEnd = "weft";
  r.createdNs = kNow - 60 * kSecond;
  r.updatedNs = kNow - kSecond;
  r.calls = entries.empty() ? 0 : entries.back().callNo;
  r.entries = std::move(entries);
  return r;
}

std::string allFindings(const Diagnosis& d) {
  std::string out;
  for (const auto& c : d.comms) {
    for (const auto& f : c.findings) out += f + "\n";
  }
  return out;
}

bool contains(const std::string& text, const std::string& words) { return text.find(words) != std::string::npos; }

using weft::coll::CollKind;

TEST(RecorderDiagnosis, NamesTheStragglerAndWhereItIs) {
  RecorderScan scan;
  for (int r = 0; r < 3; ++r) {
    scan.copies.push_back(rankCopy(r, 4, {call(1041, CollKind::kBroadcast, RecordedState::kDone, 20 * kSecond),
                                          waiting(1042, CollKind::kAllReduce, 3, 12 * kSecond)}));
  }
  scan.copies.push_back(rankCopy(3, 4, {call(1041, CollKind::kBroadcast, RecordedState::kRunning, 12400 * 1000000ll)}));
  const Diagnosis d = weft::core::diagnose(scan, kNow);
  ASSERT_EQ(d.comms.size(), 1u);
  const std::string f = allFindings(d);
  EXPECT_TRUE(contains(f, "ranks 0-2 wait in allreduce #1042 for rank 3; rank 3 is in broadcast #1041")) << f;
  EXPECT_TRUE(contains(f, "since 12.4 s")) << f;
  EXPECT_EQ(d.comms[0].stragglers, std::vector<int>{3});
  ASSERT_EQ(d.comms[0].rankLines.size(), 4u);
  EXPECT_TRUE(contains(d.comms[0].rankLines[0], "rank 0 (pid 100 on node0, alive): allreduce #1042 (1024 x float, sum, ring), "
                                                "waiting for rank 3 in step 2 since 12.0 s"))
      << d.comms[0].rankLines[0];
}

TEST(RecorderDiagnosis, FollowsChainsOfWaitsAndSaysWhenTheLastRankStopped) {
  RecorderScan scan;
  scan.copies.push_back(rankCopy(0, 3, {waiting(7, CollKind::kAllReduce, 1, 5 * kSecond)}));
  scan.copies.push_back(rankCopy(1, 3, {waiting(7, CollKind::kAllReduce, 2, 5 * kSecond)}));
  RecorderCopy stopped = rankCopy(2, 3, {call(6, CollKind::kAllReduce, RecordedState::kDone, 8 * kSecond)});
  stopped.liveness = OwnerLiveness::kStopped;
  scan.copies.push_back(stopped);
  const std::string f = allFindings(weft::core::diagnose(scan, kNow));
  EXPECT_TRUE(contains(f, "ranks 0-1 wait in allreduce #7 for rank 2; rank 2 finished allreduce #6")) << f;
  EXPECT_TRUE(contains(f, "and has not called since")) << f;
  EXPECT_TRUE(contains(f, "its process is stopped (SIGSTOP, Ctrl-Z or a debugger): kill -CONT 102 resumes it")) << f;
}

TEST(RecorderDiagnosis, ACycleOfWaitsIsCalledOne) {
  RecorderScan scan;
  scan.copies.push_back(rankCopy(0, 2, {waiting(3, CollKind::kAllReduce, 1, kSecond)}));
  scan.copies.push_back(rankCopy(1, 2, {waiting(3, CollKind::kAllReduce, 0, kSecond)}));
  const std::string f = allFindings(weft::core::diagnose(scan, kNow));
  EXPECT_TRUE(contains(f, "in allreduce #3 in a cycle of waits")) << f;
}

TEST(RecorderDiagnosis, CallsThatDisagreeAreNamedWithBothSides) {
  RecorderScan scan;
  scan.copies.push_back(rankCopy(0, 3, {waiting(5, CollKind::kAllReduce, 2, kSecond)}));
  scan.copies.push_back(rankCopy(1, 3, {waiting(5, CollKind::kAllReduce, 2, kSecond)}));
  scan.copies.push_back(rankCopy(2, 3, {call(5, CollKind::kAllReduce, RecordedState::kRunning, kSecond, 2048)}));
  const std::string f = allFindings(weft::core::diagnose(scan, kNow));
  EXPECT_TRUE(contains(f, "call #5 disagrees between ranks: ranks 0-1 called allreduce (1024 x float, sum); "
                          "rank 2 called allreduce (2048 x float, sum)"))
      << f;
}

// Rank 1's loop changed its count at call #7 while rank 0's did not: found inside the runs.
TEST(RecorderDiagnosis, FindsADisagreementInsideRunsOfCalls) {
  RecorderScan scan;
  CopiedCall loop = call(10, CollKind::kAllReduce, RecordedState::kRunning, kSecond);
  loop.firstCallNo = 1;
  scan.copies.push_back(rankCopy(0, 2, {loop}));
  CopiedCall before = call(6, CollKind::kAllReduce, RecordedState::kDone, 2 * kSecond);
  before.firstCallNo = 1;
  CopiedCall after = call(10, CollKind::kAllReduce, RecordedState::kRunning, kSecond, 2048);
  after.firstCallNo = 7;
  scan.copies.push_back(rankCopy(1, 2, {before, after}));
  const std::string f = allFindings(weft::core::diagnose(scan, kNow));
  EXPECT_TRUE(contains(f, "call #7 disagrees between ranks: rank 0 called allreduce (1024 x float, sum); "
                          "rank 1 called allreduce (2048 x float, sum)"))
      << f;
}

TEST(RecorderDiagnosis, DeadAndMissingRanksAndFailuresAreFindings) {
  RecorderScan scan;
  scan.copies.push_back(rankCopy(0, 4, {waiting(2, CollKind::kAllGather, 1, 3 * kSecond)}));
  RecorderCopy dead = rankCopy(1, 4, {call(2, CollKind::kAllGather, RecordedState::kRunning, 3 * kSecond)});
  dead.liveness = OwnerLiveness::kDead;
  scan.copies.push_back(dead);
  CopiedCall failed = call(2, CollKind::kAllGather, RecordedState::kFailed, 3 * kSecond);
  failed.error = "rank 2: allgather #2: rank 1 died";
  scan.copies.push_back(rankCopy(2, 4, {failed}));
  const Diagnosis d = weft::core::diagnose(scan, kNow);
  const std::string f = allFindings(d);
  EXPECT_TRUE(contains(f, "rank 3 of 4 is missing")) << f;
  EXPECT_TRUE(contains(f, "rank 1 (pid 101 on node0) is dead; its last call was allgather #2")) << f;
  EXPECT_TRUE(contains(f, "rank 2 failed in allgather #2 (1024 x float, ring): rank 2: allgather #2: rank 1 died")) << f;
  EXPECT_TRUE(contains(f, "rank 0 waits in allgather #2 for rank 1; rank 1 (pid 101 on node0) is dead")) << f;
  EXPECT_EQ(d.comms[0].missing, std::vector<int>{3});
}

TEST(RecorderDiagnosis, KeepsCommunicatorsApartAndSaysWhenAllIsQuiet) {
  RecorderScan scan;
  for (int r = 0; r < 2; ++r) {
    scan.copies.push_back(rankCopy(r, 2, {call(9, CollKind::kAllReduce, RecordedState::kDone, kSecond)}, 0x1));
    scan.copies.push_back(rankCopy(r, 2, {}, 0x2));
  }
  const Diagnosis d = weft::core::diagnose(scan, kNow);
  ASSERT_EQ(d.comms.size(), 2u);
  EXPECT_EQ(d.comms[0].findings, std::vector<std::string>{"no rank is in a call: every rank found finished call #9"});
  EXPECT_EQ(d.comms[1].findings, std::vector<std::string>{"no rank has made a call on this communicator yet"});
}

TEST(RecorderDiagnosis, TwoRecordersOfOneRankKeepTheNewer) {
  RecorderScan scan;
  RecorderCopy old = rankCopy(0, 1, {call(1, CollKind::kAllReduce, RecordedState::kDone, kSecond)});
  RecorderCopy newer = rankCopy(0, 1, {call(2, CollKind::kAllReduce, RecordedState::kDone, kSecond)});
  newer.source = "dump";
  newer.updatedNs = old.updatedNs + 1;
  scan.copies = {old, newer};
  const Diagnosis d = weft::core::diagnose(scan, kNow);
  ASSERT_EQ(d.comms[0].ranks.size(), 1u);
  EXPECT_EQ(d.comms[0].ranks[0].source, "dump");
  EXPECT_TRUE(contains(allFindings(d), "rank 0 has two recorders, seg0 and dump: using the newer, dump"));
}

TEST(RecorderDiagnosis, ProgressCountsCallsAndBytesBetweenLooks) {
  RecorderScan first, second;
  CopiedCall a = call(4, CollKind::kAllReduce, RecordedState::kRunning, kSecond);
  a.bytesDone = 1000;
  first.copies.push_back(rankCopy(0, 2, {a}));
  first.copies.push_back(rankCopy(1, 2, {waiting(4, CollKind::kAllReduce, 0, kSecond)}));
  CopiedCall b = a;
  b.state = RecordedState::kDone;
  b.bytesDone = 4096;
  CopiedCall c = call(5, CollKind::kAllReduce, RecordedState::kDone, kSecond);
  c.bytesDone = 4096;
  second.copies.push_back(rankCopy(0, 2, {b, c}));
  second.copies.push_back(rankCopy(1, 2, {waiting(4, CollKind::kAllReduce, 0, kSecond)}));
  const std::vector<std::string> lines = weft::core::progressSince(weft::core::diagnose(first, kNow),
                                                                   weft::core::diagnose(second, kNow + 2 * kSecond),
                                                                   2 * kSecond);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(contains(lines[0], "rank 0: 1 call, ")) << lines[0];
  EXPECT_TRUE(contains(lines[0], "in 2.0 s")) << lines[0];
  EXPECT_TRUE(contains(lines[1], "rank 1: no progress in 2.0 s")) << lines[1];
}

TEST(RecorderDiagnosis, RankListsAndAgesReadAsAPersonWritesThem) {
  EXPECT_EQ(weft::core::ranksPhrase({3}), "rank 3");
  EXPECT_EQ(weft::core::ranksPhrase({2, 0, 1}), "ranks 0-2");
  EXPECT_EQ(weft::core::ranksPhrase({0, 2, 5, 6, 7, 5}), "ranks 0, 2, 5-7");
  EXPECT_EQ(weft::core::formatAge(350 * 1000000ll), "350 ms");
  EXPECT_EQ(weft::core::formatAge(12400 * 1000000ll), "12.4 s");
  EXPECT_EQ(weft::core::formatAge(-5), "0 ms");
}

}  // namespace
}  // namespace weft_test
