// The sender's end-of-call wait (CallChecks::waitForConsumers): a rank whose collective only sends
// returns once its receiver took every message, or once the receiver announced the very same
// call (Connection::peerAnnounced); never on another call's announcement, and never while a
// message that lent memory by reference is unread. And the wait for lent memory alone (without
// waitForConsumers) ends when a peer of the call reports a failure, naming the rank it blamed.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "collectives/call_stamp.h"
#include "collectives/host_executor.h"
#include "collectives/schedule.h"

namespace weft {
namespace coll {
namespace {

// The sending end of an edge whose receiver never reads: the test sets what it announced and
// whether it took the messages.
class HeldConnection final : public Connection {
 public:
  explicit HeldConnection(bool transportReads) : transportReads_(transportReads) {}
  size_t slotBytes() const override { return slot_.size(); }
  void* trySendSlot() override { return slot_.data(); }
  void postSend(size_t, uint64_t stamp) override {
    ++posted;
    lastStamp = stamp;
  }
  const void* tryRecv(size_t*, uint64_t*) override { return nullptr; }
  void releaseRecv() override {}
  bool allSendsConsumed() const override { return taken; }
  bool peerAnnounced(uint64_t stamp) const override { return announced == stamp; }
  Status checkPeer() const override {
    return abortCulprit >= 0 ? Status::error(weftRemoteError, "rank 1 reported a failure; see its log for the cause")
                             : Status::ok();
  }
  void signalAbort(int) override {}
  bool peerAborted() const override { return abortCulprit >= 0; }
  int peerAbortCulprit() const override { return abortCulprit; }
  bool sendsReferencedBytes() const override { return transportReads_; }

  int posted = 0;
  uint64_t lastStamp = 0;
  uint64_t announced = 0;
  bool taken = false;
  int abortCulprit = -1;  // >= 0: the receiver aborted, blaming that rank

 private:
  bool transportReads_;
  std::vector<char> slot_ = std::vector<char>(1024);
};

// The receiving end of an edge from a peer that sent its message of the call and then failed,
// blaming rank `abortCulprit`.
class DeliveredThenAborted final : public Connection {
 public:
  DeliveredThenAborted(uint64_t stamp, size_t bytes, int abortCulprit)
      : stamp_(stamp), bytes_(bytes), abortCulprit_(abortCulprit) {}
  size_t slotBytes() const override { return slot_.size(); }
  void* trySendSlot() override { return nullptr; }
  void postSend(size_t, uint64_t) override {}
  const void* tryRecv(size_t* bytes, uint64_t* stamp) override {
    if (released_) return nullptr;
    *bytes = bytes_;
    *stamp = stamp_;
    return slot_.data();
  }
  void releaseRecv() override { released_ = true; }
  bool allSendsConsumed() const override { return true; }
  Status checkPeer() const override {
    return Status::error(weftRemoteError, "rank 2 reported a failure; see its log for the cause");
  }
  void signalAbort(int) override {}
  bool peerAborted() const override { return true; }
  int peerAbortCulprit() const override { return abortCulprit_; }

 private:
  uint64_t stamp_;
  size_t bytes_;
  int abortCulprit_;
  bool released_ = false;
  std::vector<char> slot_ = std::vector<char>(1024);
};

// Rank 0's edges: sending to rank 1, and (when given) receiving from rank 2. Keeps the culprit
// the executor noted.
class OneEdge final : public ConnectionProvider {
 public:
  explicit OneEdge(HeldConnection* conn, Connection* from2 = nullptr) : conn_(conn), from2_(from2) {}
  Status connect(const std::vector<ConnectionKey>&, const Deadline&) override { return Status::ok(); }
  Connection* get(const ConnectionKey& key) override {
    if (key.peer == 1 && key.send) return conn_;
    return key.peer == 2 && !key.send ? from2_ : nullptr;
  }
  Status healthCheck() override { return Status::ok(); }
  void noteCulprit(int rank) override {
    if (culprit < 0) culprit = rank;
  }
  int selfRank() const override { return 0; }

  int culprit = -1;

 private:
  HeldConnection* conn_;
  Connection* from2_;
};

// Rank 0 of two sends its 64 floats to rank 1 and receives nothing (a broadcast root's part).
struct SendOnly {
  explicit SendOnly(bool transportReads) : conn(transportReads), provider(&conn) {
    Step step;
    step.kind = StepKind::kSend;
    step.sendPeer = 1;
    step.srcBuf = Buf::kSend;
    step.count = 64;
    schedule.rank = 0;
    schedule.lanes.push_back(Lane{{step}});
    schedule.maxStepCount = 64;
    plan = planCollective(schedule, sizeof(float), conn.slotBytes());
    plan.what = [] { return std::string("rank 0: broadcast #7"); };
    plan.timeoutS = 0.2;
    plan.checks.waitForConsumers = true;
    plan.sendBufferStable = true;
    plan.referenceMinBytes = 1;
    stampPlan(&plan, makeStamp(7, 0x1234abcd));
  }
  Status run() {
    Status s = connectPlan(&plan, &provider);
    if (!s.isOk()) return s;
    bindBuffers(&plan, send.data(), recv.data(), nullptr, nullptr, nullptr, 0);
    return runHostPlan(plan, &provider);
  }

  HeldConnection conn;
  OneEdge provider;
  RankSchedule schedule;
  ExecPlan plan;
  std::vector<float> send = std::vector<float>(64, 1.0f);
  std::vector<float> recv = std::vector<float>(64, 0.0f);
};

TEST(SenderWait, ReturnsOnceTheReceiverAnnouncedTheSameCallBeforeItTookTheMessage) {
  SendOnly rank0(false);
  rank0.conn.announced = makeStamp(7, 0x1234abcd);
  Status s = rank0.run();
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(rank0.conn.posted, 1);
  EXPECT_EQ(rank0.conn.lastStamp, makeStamp(7, 0x1234abcd));
  EXPECT_FALSE(rank0.conn.taken);
}

TEST(SenderWait, AnotherCallsAnnouncementIsNotEnough) {
  // The receiver runs call 7 with another fingerprint (another count, say), or is still in
  // call 6: the sender waits for its message to be taken, and times out here.
  for (uint64_t other : {makeStamp(7, 0x1234abce), makeStamp(6, 0x1234abcd), uint64_t{0}}) {
    SendOnly rank0(false);
    rank0.conn.announced = other;
    Status s = rank0.run();
    ASSERT_FALSE(s.isOk());
    EXPECT_EQ(s.code(), weftTimeout) << s.message();
    EXPECT_NE(s.message().find("waiting for peers to take the messages"), std::string::npos) << s.message();
  }
}

TEST(SenderWait, TakenMessagesEndTheWaitWithoutAnAnnouncement) {
  SendOnly rank0(false);
  rank0.conn.taken = true;
  Status s = rank0.run();
  EXPECT_TRUE(s.isOk()) << s.message();
}

TEST(SenderWait, LentMemoryIsWaitedForEvenWhenTheCallWasAnnounced) {
  // The transport reads the referenced send buffer itself when it sends: the caller may change
  // the buffer once the call returns, so the announcement alone must not end the wait.
  SendOnly rank0(true);
  rank0.conn.announced = makeStamp(7, 0x1234abcd);
  Status s = rank0.run();
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), weftTimeout) << s.message();
  rank0.conn.taken = true;
  s = rank0.run();
  EXPECT_TRUE(s.isOk()) << s.message();
}

// Rank 0 receives 64 floats from rank 2, then sends its own 64 to rank 1 by reference, and waits
// (without waitForConsumers) until rank 1 has read them. Rank 1 died: its connection cannot tell
// (libfabric's tcp provider never fails the pending operations), but rank 2 reports that it failed
// because of rank 3. Rank 0 must fail at once naming rank 3, not wait out WEFT_TIMEOUT_S.
TEST(LentMemoryWait, EndsWhenAnotherPeerOfTheCallReportsAFailure) {
  const uint64_t stamp = makeStamp(7, 0x1234abcd);
  HeldConnection to1(true);
  DeliveredThenAborted from2(stamp, 64 * sizeof(float), 3);
  OneEdge provider(&to1, &from2);
  Step recv;
  recv.kind = StepKind::kRecv;
  recv.recvPeer = 2;
  recv.dstBuf = Buf::kRecv;
  recv.count = 64;
  Step send;
  send.kind = StepKind::kSend;
  send.sendPeer = 1;
  send.srcBuf = Buf::kSend;
  send.count = 64;
  RankSchedule schedule;
  schedule.rank = 0;
  schedule.lanes.push_back(Lane{{recv, send}});
  schedule.maxStepCount = 64;
  ExecPlan plan = planCollective(schedule, sizeof(float), to1.slotBytes());
  plan.what = [] { return std::string("rank 0: allreduce #7"); };
  plan.timeoutS = 5;
  plan.sendBufferStable = true;
  plan.referenceMinBytes = 1;
  stampPlan(&plan, stamp);
  std::vector<float> in(64, 1.0f), out(64, 0.0f);
  ASSERT_TRUE(connectPlan(&plan, &provider).isOk());
  bindBuffers(&plan, in.data(), out.data(), nullptr, nullptr, nullptr, 0);
  Status s = runHostPlan(plan, &provider);
  ASSERT_EQ(to1.posted, 1) << "rank 0 lent its buffer to rank 1";
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), weftRemoteError) << s.message();
  EXPECT_NE(s.message().find("rank 2 reported a failure caused by rank 3"), std::string::npos) << s.message();
  EXPECT_EQ(provider.culprit, 3);
}

// The reader of the lent memory itself aborted, blaming rank 3: the message names rank 3, as it
// would had the abort come while rank 0's steps ran, so that every rank's message names the same.
TEST(LentMemoryWait, AReaderThatAbortedIsNamedWithTheRankItBlamed) {
  SendOnly rank0(true);
  rank0.plan.checks.waitForConsumers = false;
  rank0.plan.timeoutS = 5;
  rank0.conn.abortCulprit = 3;
  Status s = rank0.run();
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), weftRemoteError) << s.message();
  EXPECT_NE(s.message().find("rank 1 reported a failure caused by rank 3"), std::string::npos) << s.message();
  EXPECT_EQ(rank0.provider.culprit, 3);
}

}  // namespace
}  // namespace coll
}  // namespace weft
