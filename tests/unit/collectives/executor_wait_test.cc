// The sender's end-of-call wait (ExecPlan::waitForConsumers): a rank whose collective only sends
// returns once its receiver took every message, or once the receiver announced the very same
// call (Connection::peerAnnounced); never on another call's announcement, and never while a
// message that lent memory by reference is unread.
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
  Status checkPeer() const override { return Status::ok(); }
  void signalAbort(int) override {}
  bool peerAborted() const override { return false; }
  int peerAbortCulprit() const override { return -1; }
  bool sendsReferencedBytes() const override { return transportReads_; }

  int posted = 0;
  uint64_t lastStamp = 0;
  uint64_t announced = 0;
  bool taken = false;

 private:
  bool transportReads_;
  std::vector<char> slot_ = std::vector<char>(1024);
};

class OneEdge final : public ConnectionProvider {
 public:
  explicit OneEdge(HeldConnection* conn) : conn_(conn) {}
  Status connect(const std::vector<ConnectionKey>&, const Deadline&) override { return Status::ok(); }
  Connection* get(const ConnectionKey& key) override { return key.peer == 1 && key.send ? conn_ : nullptr; }
  Status healthCheck() override { return Status::ok(); }
  int selfRank() const override { return 0; }

 private:
  HeldConnection* conn_;
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
    plan.waitForConsumers = true;
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

}  // namespace
}  // namespace coll
}  // namespace weft
