// The interpreter catches broken schedules: each test takes a correct schedule (or writes a
// tiny one by hand), breaks it the way a real algorithm bug would, and checks that
// verifySchedules reports it, naming what went wrong.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/interpreter.h"
#include "collectives/schedule.h"
#include "schedule_cases.h"

namespace weft {
namespace coll {
namespace {

using testing::scheduleParams;

VerifyOptions options(int64_t slice, bool inPlace = false, int fifo = 2) {
  VerifyOptions o;
  o.sliceElems = slice;
  o.inPlace = inPlace;
  o.fifoCapacity = fifo;
  return o;
}

// Index of the nth step of `kind` in a lane (-1 if none).
int findStep(const Lane& lane, StepKind kind, int nth = 0) {
  for (size_t i = 0; i < lane.steps.size(); ++i) {
    if (lane.steps[i].kind == kind && nth-- == 0) return static_cast<int>(i);
  }
  return -1;
}

#define EXPECT_CONTAINS(text, needle) EXPECT_NE((text).find(needle), std::string::npos) << "got: " << (text)

class InterpreterRing : public ::testing::Test {
 protected:
  ScheduleParams p = scheduleParams(CollKind::kAllReduce, Algo::kRing, 4, 40);
  std::vector<RankSchedule> s = buildAllSchedules(p);
  Lane& lane(int rank) { return s[rank].lanes[0]; }
  std::string verify(bool inPlace = false) { return verifySchedules(p, s, options(3, inPlace)); }
};

TEST_F(InterpreterRing, CorrectScheduleVerifies) {
  EXPECT_EQ(verify(false), "");
  EXPECT_EQ(verify(true), "");
}

TEST_F(InterpreterRing, DroppedStep) {
  lane(1).steps.erase(lane(1).steps.begin() + 2);
  std::string err = verify();
  EXPECT_CONTAINS(err, "rank");
  EXPECT_FALSE(err.empty());
}

TEST_F(InterpreterRing, SwappedPeer) {
  Step& st = lane(2).steps[findStep(lane(2), StepKind::kSend)];
  st.sendPeer = (st.sendPeer + 1) % 4;
  EXPECT_FALSE(verify().empty());
}

TEST_F(InterpreterRing, MissingFinal) {
  lane(0).steps[findStep(lane(0), StepKind::kRecvReduceCopySend)].final = false;
  std::string err = verify();
  EXPECT_CONTAINS(err, "expected element 0 summed over every rank, post-processed");
  EXPECT_CONTAINS(err, "post-processed");
}

TEST_F(InterpreterRing, FinalTwice) {
  lane(1).steps[findStep(lane(1), StepKind::kRecvCopySend)].final = true;
  EXPECT_CONTAINS(verify(), "a second time");
}

TEST_F(InterpreterRing, FinalOnPartialSum) {
  lane(1).steps[findStep(lane(1), StepKind::kRecvReduceSend)].final = true;
  EXPECT_CONTAINS(verify(), "not every rank's contribution");
}

TEST_F(InterpreterRing, ReducesDifferentElements) {
  Step& st = lane(3).steps[findStep(lane(3), StepKind::kRecvReduceSend)];
  st.srcOffset = (st.srcOffset + 10) % 40;
  std::string err = verify();
  EXPECT_CONTAINS(err, "rank 3 lane 0 step");
  EXPECT_CONTAINS(err, "different elements");
}

TEST_F(InterpreterRing, MismatchedSliceSizes) {
  Step& st = lane(2).steps[findStep(lane(2), StepKind::kRecv)];
  st.count -= 2;  // 10 -> 8 elements: slices 3, 3, 2 where the sender sends 3, 3, 3, 1
  EXPECT_CONTAINS(verify(), "expects a slice of 2 elements but rank 1 sent 3");
}

TEST_F(InterpreterRing, MessageNobodyReceives) {
  Step extra = lane(0).steps[findStep(lane(0), StepKind::kSend)];
  extra.sendPeer = 2;  // rank 2 never receives from rank 0 in this ring
  lane(0).steps.push_back(extra);
  // With room for all 4 slices the sender finishes; the slices stay in the FIFO.
  EXPECT_CONTAINS(verifySchedules(p, s, options(3, false, 4)),
                  "rank 0 sent 4 slices to rank 2 on lane 0 that no step received");
  EXPECT_CONTAINS(verify(), "deadlock");  // with 2 slots the sender blocks
}

TEST_F(InterpreterRing, ReadsUnwrittenMemory) {
  Step& st = lane(0).steps[findStep(lane(0), StepKind::kSend)];
  st.srcBuf = Buf::kRecv;
  EXPECT_CONTAINS(verify(), "which holds nothing yet");
}

TEST_F(InterpreterRing, WritesOutsideTheBuffer) {
  lane(1).steps[findStep(lane(1), StepKind::kRecv)].dstOffset = 35;
  EXPECT_CONTAINS(verify(), "is outside the recv buffer of 40 elements");
}

TEST_F(InterpreterRing, WritesTheSendBuffer) {
  lane(1).steps[findStep(lane(1), StepKind::kRecv)].dstBuf = Buf::kSend;
  EXPECT_CONTAINS(verify(), "writes the send buffer");
}

TEST_F(InterpreterRing, SendsToItself) {
  lane(1).steps[findStep(lane(1), StepKind::kSend)].sendPeer = 1;
  EXPECT_CONTAINS(verify(), "not another rank");
}

TEST_F(InterpreterRing, MaxStepCountDiffers) {
  int64_t right = s[0].maxStepCount;
  s[2].maxStepCount = right + 1;
  EXPECT_CONTAINS(verify(), "rank 2 says maxStepCount is 11 but rank 0 says 10");
  for (auto& r : s) r.maxStepCount = right + 1;
  EXPECT_CONTAINS(verify(), "the largest step covers");
}

// Rings need two slots per FIFO; with one every rank's second step waits for a slot.
TEST_F(InterpreterRing, DeadlocksWithOneSlot) {
  std::string err = verifySchedules(p, s, options(3, false, 1));
  EXPECT_CONTAINS(err, "deadlock");
  EXPECT_CONTAINS(err, "waits for a free slot");
}

// A step that uses the receive buffer as scratch before the send data in the same place is
// consumed: right out of place, wrong in place.
TEST(InterpreterInPlace, ScratchUseOfRecvBreaksInPlace) {
  ScheduleParams p = scheduleParams(CollKind::kAllReduce, Algo::kRing, 2, 20);
  std::vector<RankSchedule> s = buildAllSchedules(p);
  for (RankSchedule& rs : s) {
    std::vector<Step>& steps = rs.lanes[0].steps;
    const Step& send = steps[0];  // reads block pos-1 of send
    const Step& fin = steps[1];   // reads and finishes block pos
    Step scratch;
    scratch.kind = StepKind::kCopy;
    scratch.srcBuf = Buf::kSend, scratch.srcOffset = send.srcOffset;
    scratch.dstBuf = Buf::kRecv, scratch.dstOffset = fin.dstOffset;
    scratch.count = send.count;
    steps.insert(steps.begin(), scratch);
  }
  EXPECT_EQ(verifySchedules(p, s, options(4, false)), "");
  std::string err = verifySchedules(p, s, options(4, true));
  EXPECT_CONTAINS(err, "different elements");
}

// Schedules that read the rank's own data from the receive buffer, where only NCCL's in-place
// aliasing puts it (all-gather: send == recv + rank * count; reduce-scatter: recv == send +
// rank * recvcount): right in place, wrong out of place. This pins down the aliasing itself.
TEST(InterpreterInPlace, AllGatherOwnBlockLivesInRecv) {
  ScheduleParams p = scheduleParams(CollKind::kAllGather, Algo::kRing, 3, 4);
  std::vector<RankSchedule> s = buildAllSchedules(p);
  for (RankSchedule& rs : s) {
    std::vector<Step>& steps = rs.lanes[0].steps;
    ASSERT_EQ(steps[0].kind, StepKind::kCopy);
    ASSERT_EQ(steps[1].kind, StepKind::kSend);
    steps[1].srcBuf = Buf::kRecv, steps[1].srcOffset = steps[0].dstOffset;
    steps.erase(steps.begin());
  }
  EXPECT_EQ(verifySchedules(p, s, options(3, true)), "");
  EXPECT_CONTAINS(verifySchedules(p, s, options(3, false)), "which holds nothing yet");
}

TEST(InterpreterInPlace, ReduceScatterRecvIsOwnSendBlock) {
  ScheduleParams p = scheduleParams(CollKind::kReduceScatter, Algo::kRing, 3, 4);
  std::vector<RankSchedule> s = buildAllSchedules(p);
  for (RankSchedule& rs : s) {
    Step& fin = rs.lanes[0].steps.back();
    ASSERT_TRUE(fin.final);
    fin.srcBuf = Buf::kRecv, fin.srcOffset = 0;
  }
  EXPECT_EQ(verifySchedules(p, s, options(3, true)), "");
  EXPECT_CONTAINS(verifySchedules(p, s, options(3, false)), "which holds nothing yet");
}

// Every rank receives before it sends: nobody can start.
TEST(InterpreterDeadlock, ReceiveBeforeSend) {
  ScheduleParams p = scheduleParams(CollKind::kAllToAll, Algo::kPairwise, 3, 5);
  std::vector<RankSchedule> s = buildAllSchedules(p);
  for (RankSchedule& rs : s) std::swap(rs.lanes[0].steps[1], rs.lanes[0].steps[2]);
  std::string err = verifySchedules(p, s, options(2));
  EXPECT_CONTAINS(err, "deadlock");
  EXPECT_CONTAINS(err, "rank 0 lane 0 step 1 (recv from 2");
  EXPECT_CONTAINS(err, "waits for data from rank 2");
}

// A rank adds the same contribution twice.
TEST(InterpreterReduce, CountsAContributionTwice) {
  ScheduleParams p = scheduleParams(CollKind::kReduce, Algo::kRing, 2, 6);
  std::vector<RankSchedule> s = buildAllSchedules(p);
  Step again = s[1].lanes[0].steps[0];  // rank 1: send to the root
  s[1].lanes[0].steps.push_back(again);
  Step& fin = s[0].lanes[0].steps[0];  // root: recvReduceCopy, final
  fin.final = false;
  Step second = fin;
  second.srcBuf = Buf::kRecv, second.srcOffset = fin.dstOffset, second.final = true;
  s[0].lanes[0].steps.push_back(second);
  std::string err = verifySchedules(p, s, options(4));
  EXPECT_CONTAINS(err, "counts element 0 of rank 1 twice");
}

// A non-root of a reduce may not write its receive buffer (it may be invalid).
TEST(InterpreterReduce, NonRootWritesRecv) {
  ScheduleParams p = scheduleParams(CollKind::kReduce, Algo::kRing, 3, 6, 1, 0);
  std::vector<RankSchedule> s = buildAllSchedules(p);
  Step& st = s[2].lanes[0].steps[0];  // rank 2: recvReduceSend (chain 1 -> 2 -> 0)
  ASSERT_EQ(st.kind, StepKind::kRecvReduceSend);
  st.kind = StepKind::kRecvReduceCopySend;
  st.dstBuf = Buf::kRecv;
  EXPECT_CONTAINS(verifySchedules(p, s, options(4)), "only the root provides");
}

// Two lanes of one rank share memory with nothing ordering them. Round-robin happens to run
// them in a good order, so only the race check sees it.
TEST(InterpreterRace, UnorderedLanesSharingMemory) {
  ScheduleParams p = scheduleParams(CollKind::kBroadcast, Algo::kRing, 2, 2, 2, 0);
  std::vector<RankSchedule> s(2);
  for (int r = 0; r < 2; ++r) s[r].rank = r, s[r].lanes.resize(2), s[r].maxStepCount = 2;
  Step copy;
  copy.kind = StepKind::kCopy, copy.srcBuf = Buf::kSend, copy.dstBuf = Buf::kRecv, copy.count = 2;
  Step send0;
  send0.kind = StepKind::kSend, send0.sendPeer = 1, send0.srcBuf = Buf::kSend, send0.count = 1;
  Step send1 = send0;  // lane 1 forwards element 1 from the receive buffer lane 0 fills
  send1.srcBuf = Buf::kRecv, send1.srcOffset = 1;
  s[0].lanes[0].steps = {copy, send0};
  s[0].lanes[1].steps = {send1};
  Step recv0;
  recv0.kind = StepKind::kRecv, recv0.recvPeer = 0, recv0.dstBuf = Buf::kRecv, recv0.count = 1;
  Step recv1 = recv0;
  recv1.dstOffset = 1;
  s[1].lanes[0].steps = {recv0};
  s[1].lanes[1].steps = {recv1};
  VerifyOptions o = options(4);
  o.checkRaces = false;
  EXPECT_EQ(verifySchedules(p, s, o), "");
  o.checkRaces = true;
  std::string err = verifySchedules(p, s, o);
  EXPECT_CONTAINS(err, "rank 0: lane 1 step 0");
  EXPECT_CONTAINS(err, "reads recv[1]");
  EXPECT_CONTAINS(err, "which lane 0 step 0");
  EXPECT_CONTAINS(err, "no message orders the two");
}

// The tree all-reduce root must hand each finished slice to the down lane through its final
// step (sendLane); broadcasting from a separate down-lane step would race with the up lane.
TEST(InterpreterRace, TreeRootBroadcastFromItsOwnLane) {
  ScheduleParams p = scheduleParams(CollKind::kAllReduce, Algo::kTree, 5, 50);
  std::vector<RankSchedule> s = buildAllSchedules(p);
  int broken = 0;
  for (RankSchedule& rs : s) {
    for (int t = 0; t < 2; ++t) {
      std::vector<Step>& up = rs.lanes[2 * t].steps;
      std::vector<Step>& down = rs.lanes[2 * t + 1].steps;
      if (up.empty() || up.back().sendLane < 0) continue;  // not this tree's root
      for (auto it = up.begin(); it != up.end();) {
        if (it->sendLane < 0) {
          ++it;
          continue;
        }
        Step send = *it;
        send.kind = StepKind::kSend, send.srcBuf = Buf::kRecv, send.srcOffset = send.dstOffset;
        send.sendLane = -1, send.final = false, send.recvPeer = -1;
        down.push_back(send);
        if (it->kind == StepKind::kSend) {
          it = up.erase(it);
        } else {
          it->kind = StepKind::kRecvReduceCopy, it->sendPeer = -1, it->sendLane = -1;
          ++it;
        }
      }
      ++broken;
    }
  }
  ASSERT_EQ(broken, 2);
  EXPECT_EQ(verifySchedules(p, buildAllSchedules(p), options(3, true)), "");
  EXPECT_FALSE(verifySchedules(p, s, options(3, true)).empty());
  EXPECT_FALSE(verifySchedules(p, s, options(3, false)).empty());
}

TEST(InterpreterInputs, RejectsBadOptions) {
  ScheduleParams p = scheduleParams(CollKind::kAllToAll, Algo::kPairwise, 3, 5);
  EXPECT_CONTAINS(verifySchedule(p, 4, true), "no in-place form");
  EXPECT_CONTAINS(verifySchedule(p, 0, false), "sliceElems is 0");
  EXPECT_CONTAINS(verifySchedule(p, 4, false, 0), "fifoCapacity is 0");
  p.nChannels = 0;
  EXPECT_CONTAINS(verifySchedule(p, 4, false), "invalid parameters");
}

TEST(InterpreterInputs, TwoLanesFeedingOneFifo) {
  ScheduleParams p = scheduleParams(CollKind::kAllReduce, Algo::kRing, 3, 30, 2);
  std::vector<RankSchedule> s = buildAllSchedules(p);
  Step& st = s[0].lanes[1].steps[0];  // channel 1 runs the ring backwards: to rank 2
  ASSERT_EQ(st.kind, StepKind::kSend);
  st.sendPeer = 1, st.sendLane = 0;  // into lane 0's FIFO to rank 1
  EXPECT_CONTAINS(verifySchedules(p, s, options(4)), "a FIFO needs a single sender");
}

}  // namespace
}  // namespace coll
}  // namespace weft
