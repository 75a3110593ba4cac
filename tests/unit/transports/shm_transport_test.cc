// The shared-memory transport through the Transport interface: ranks as threads and as forked
// processes, time-outs, geometry mismatches, peer failure (abort flag, killed process), no
// segments left behind, and WEFT_SHM_DISABLE.
#include "transports/shm/shm_transport.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>

#include "base/os.h"
#include "shm_test_util.h"

namespace weft {
namespace shm {
namespace {

// The stamp these tests post with every message, and the last one received (the conformance
// suite checks that stamps arrive intact).
constexpr uint64_t kTestStamp = 0x5eed5eed00000042ull;
thread_local uint64_t lastStamp = 0;

using shmtest::messageBytes;
using shmtest::patternByte;
using shmtest::request;
using shmtest::shmEntries;
using shmtest::uniqueTag;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Sends `count` patterned messages; false on a peer failure or a deadline.
bool sendStream(Connection* c, uint64_t count, uint64_t* checksum, Deadline deadline) {
  Backoff backoff;
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t m = 0; m < count;) {
    void* slot = c->trySendSlot();
    if (slot == nullptr) {
      if ((backoff.rounds() & 1023) == 1023 && (!c->checkPeer().isOk() || deadline.expired())) return false;
      backoff.pause();
      continue;
    }
    backoff.reset();
    size_t n = messageBytes(m, c->slotBytes());
    auto* b = static_cast<unsigned char*>(slot);
    for (size_t i = 0; i < n; ++i) b[i] = patternByte(m, i);
    h = hashBytes(b, n, h);
    c->postSend(n, kTestStamp);
    ++m;
  }
  if (checksum) *checksum = h;
  return true;
}

// Receives `count` messages; with `verify`, checks every byte against the pattern.
bool recvStream(Connection* c, uint64_t count, bool verify, uint64_t* checksum, std::string* why, Deadline deadline) {
  Backoff backoff;
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t m = 0; m < count;) {
    size_t n = 0;
    const void* data = c->tryRecv(&n, &lastStamp);
    if (data == nullptr) {
      if ((backoff.rounds() & 1023) == 1023) {
        Status st = c->checkPeer();
        if (!st.isOk() || deadline.expired()) {
          *why = st.isOk() ? "deadline at message " + std::to_string(m) : st.message();
          return false;
        }
      }
      backoff.pause();
      continue;
    }
    backoff.reset();
    if (n != messageBytes(m, c->slotBytes())) {
      *why = "message " + std::to_string(m) + " has " + std::to_string(n) + " bytes";
      return false;
    }
    const auto* b = static_cast<const unsigned char*>(data);
    if (verify) {
      for (size_t i = 0; i < n; ++i) {
        if (b[i] != patternByte(m, i)) {
          *why = "message " + std::to_string(m) + " byte " + std::to_string(i) + " is wrong";
          return false;
        }
      }
    }
    h = hashBytes(b, n, h);
    c->releaseRecv();
    ++m;
  }
  if (checksum) *checksum = h;
  return true;
}

// Both ends of one edge (rank 0 -> rank 1) in this process.
struct ThreadPair {
  std::unique_ptr<Connection> recv;
  std::unique_ptr<Connection> send;
};

ThreadPair connectPair(const std::string& tag, size_t nSlots, size_t slotBytes) {
  ShmTransport t;
  ThreadPair p;
  Status st = t.connectRecv(request(tag, 1, 0, getpid(), nSlots, slotBytes), &p.recv);
  EXPECT_TRUE(st.isOk()) << st.message();
  st = t.connectSend(request(tag, 0, 1, getpid(), nSlots, slotBytes), &p.send);
  EXPECT_TRUE(st.isOk()) << st.message();
  return p;
}

// Waits for a forked child; true if it exited with status 0.
bool childSucceeded(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

class ShmStream : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {
 protected:
  size_t nSlots() const { return std::get<0>(GetParam()); }
  size_t slotBytes() const { return std::get<1>(GetParam()); }
};

TEST_P(ShmStream, TwoThreadsStream100kMessages) {
  std::string tag = uniqueTag();
  ShmTransport t;
  std::unique_ptr<Connection> recv, send;
  Status recvStatus, sendStatus;
  // The sender may start first: it waits for the receiver's FIFO.
  std::thread sender([&] { sendStatus = t.connectSend(request(tag, 0, 1, getpid(), nSlots(), slotBytes()), &send); });
  std::thread receiver([&] { recvStatus = t.connectRecv(request(tag, 1, 0, getpid(), nSlots(), slotBytes()), &recv); });
  sender.join();
  receiver.join();
  ASSERT_TRUE(recvStatus.isOk()) << recvStatus.message();
  ASSERT_TRUE(sendStatus.isOk()) << sendStatus.message();

  const uint64_t count = 100000;
  uint64_t sentSum = 0, recvSum = 0;
  bool sentOk = false;
  std::string why;
  Deadline deadline = Deadline::afterSeconds(30);
  std::thread s([&] { sentOk = sendStream(send.get(), count, &sentSum, deadline); });
  bool recvOk = recvStream(recv.get(), count, /*verify=*/false, &recvSum, &why, deadline);
  s.join();
  ASSERT_TRUE(sentOk);
  ASSERT_TRUE(recvOk) << why;
  EXPECT_EQ(sentSum, recvSum);
  size_t n = 0;
  EXPECT_EQ(recv->tryRecv(&n, &lastStamp), nullptr);
}

TEST_P(ShmStream, TwoProcessesStreamVerifiedData) {
  std::string tag = uniqueTag();
  const uint64_t count = 20000;
  pid_t parent = getpid();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Rank 0, the sender, in the child.
    ShmTransport t;
    std::unique_ptr<Connection> send;
    if (!t.connectSend(request(tag, 0, 1, parent, nSlots(), slotBytes()), &send).isOk()) _exit(2);
    _exit(sendStream(send.get(), count, nullptr, Deadline::afterSeconds(30)) ? 0 : 3);
  }
  ShmTransport t;
  std::unique_ptr<Connection> recv;
  Status st = t.connectRecv(request(tag, 1, 0, child, nSlots(), slotBytes()), &recv);
  ASSERT_TRUE(st.isOk()) << st.message();
  std::string why;
  bool ok = recvStream(recv.get(), count, /*verify=*/true, nullptr, &why, Deadline::afterSeconds(30));
  if (!ok) recv->signalAbort(-1);
  EXPECT_TRUE(ok) << why;
  EXPECT_TRUE(childSucceeded(child));
  EXPECT_TRUE(recv->checkPeer().code() == weftRemoteError) << "the sender has exited by now";
  recv.reset();
  EXPECT_TRUE(shmEntries(tag).empty());
}

INSTANTIATE_TEST_SUITE_P(Shm, ShmStream,
                         ::testing::Values(std::make_tuple(size_t{1}, size_t{64}),
                                           std::make_tuple(size_t{3}, size_t{1000}),
                                           std::make_tuple(size_t{8}, size_t{4096})),
                         [](const auto& test) {
                           return std::to_string(std::get<0>(test.param)) + "x" +
                                  std::to_string(std::get<1>(test.param));
                         });

TEST(ShmTransport, IsRegisteredAsShm) {
  bool found = false;
  for (const auto& t : makeTransports()) found = found || std::string(t->name()) == "shm";
  EXPECT_TRUE(found);
}

TEST(ShmTransport, ConnectsOnlyOnTheSameHostUnlessDisabled) {
  ShmTransport t;
  PeerInfo self = shmtest::peerInfo(0, getpid());
  PeerInfo peer = shmtest::peerInfo(1, getpid() + 1);
  EXPECT_TRUE(t.canConnect(self, peer));
  PeerInfo remote = peer;
  remote.hostHash ^= 1;
  EXPECT_FALSE(t.canConnect(self, remote));
  ASSERT_EQ(setenv("WEFT_SHM_DISABLE", "1", 1), 0);
  EXPECT_FALSE(t.canConnect(self, peer));
  ASSERT_EQ(unsetenv("WEFT_SHM_DISABLE"), 0);
  EXPECT_TRUE(t.canConnect(self, peer));
}

TEST(ShmTransport, ConnectSendTimesOutWhenNobodyCreatesTheFifo) {
  std::string tag = uniqueTag();
  ShmTransport t;
  std::unique_ptr<Connection> send;
  uint64_t start = nowNs();
  Status st = t.connectSend(request(tag, 0, 1, getpid(), 4, 4096, /*deadlineS=*/0.2), &send);
  double waited = static_cast<double>(nowNs() - start) / 1e9;
  ASSERT_EQ(st.code(), weftTimeout) << st.message();
  EXPECT_EQ(send, nullptr);
  EXPECT_GE(waited, 0.19);
  EXPECT_LT(waited, 2.0);
  EXPECT_TRUE(contains(st.message(), "rank 0: timed out after 0.2")) << st.message();
  EXPECT_TRUE(contains(st.message(), "waiting for rank 1 to create its shared-memory FIFO /weft-" + tag + "-0-1-0"))
      << st.message();
  EXPECT_TRUE(contains(st.message(), "is rank 1 running and in the same communicator?")) << st.message();
}

TEST(ShmTransport, MismatchedGeometryNamesBothSides) {
  std::string tag = uniqueTag();
  ShmTransport t;
  std::unique_ptr<Connection> recv, send;
  ASSERT_TRUE(t.connectRecv(request(tag, 1, 0, getpid(), 8, 4096), &recv).isOk());
  uint64_t start = nowNs();
  Status st = t.connectSend(request(tag, 0, 1, getpid(), 4, 4096), &send);
  EXPECT_LT(static_cast<double>(nowNs() - start) / 1e9, 2.0) << "a mismatch fails at once, not at the deadline";
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), weftInvalidUsage);
  EXPECT_TRUE(contains(st.message(), "8 slots of 4096 B")) << st.message();
  EXPECT_TRUE(contains(st.message(), "expects 4 slots of 4096 B")) << st.message();
  EXPECT_TRUE(contains(st.message(), "WEFT_BUFFSIZE")) << st.message();

  st = t.connectSend(request(tag, 0, 1, getpid(), 8, 8192), &send);
  ASSERT_FALSE(st.isOk());
  EXPECT_TRUE(contains(st.message(), "expects 8 slots of 8192 B")) << st.message();
}

TEST(ShmTransport, LanesAreIndependent) {
  std::string tag = uniqueTag();
  ShmTransport t;
  std::unique_ptr<Connection> recv0, recv1, send0, send1;
  ASSERT_TRUE(t.connectRecv(request(tag, 1, 0, getpid(), 2, 64, 5, 0), &recv0).isOk());
  ASSERT_TRUE(t.connectRecv(request(tag, 1, 0, getpid(), 2, 64, 5, 1), &recv1).isOk());
  ASSERT_TRUE(t.connectSend(request(tag, 0, 1, getpid(), 2, 64, 5, 1), &send1).isOk());
  ASSERT_TRUE(t.connectSend(request(tag, 0, 1, getpid(), 2, 64, 5, 0), &send0).isOk());
  std::memcpy(send1->trySendSlot(), "one", 3);
  send1->postSend(3, kTestStamp);
  size_t n = 0;
  EXPECT_EQ(recv0->tryRecv(&n, &lastStamp), nullptr);
  const void* data = recv1->tryRecv(&n, &lastStamp);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(std::string(static_cast<const char*>(data), n), "one");
}

TEST(ShmTransport, EachEndOnlyDoesItsOwnHalf) {
  ThreadPair p = connectPair(uniqueTag(), 2, 64);
  ASSERT_TRUE(p.recv && p.send);
  size_t n = 0;
  EXPECT_EQ(p.send->tryRecv(&n, &lastStamp), nullptr);
  EXPECT_EQ(p.recv->trySendSlot(), nullptr);
  EXPECT_EQ(p.send->slotBytes(), 64u);
  EXPECT_EQ(p.recv->slotBytes(), 64u);
}

TEST(ShmTransport, SignalAbortIsSeenByTheReceiver) {
  ThreadPair p = connectPair(uniqueTag(), 2, 64);
  ASSERT_TRUE(p.recv && p.send);
  EXPECT_TRUE(p.recv->checkPeer().isOk());
  EXPECT_TRUE(p.send->checkPeer().isOk());
  p.send->signalAbort(-1);
  Status st = p.recv->checkPeer();
  EXPECT_EQ(st.code(), weftRemoteError);
  EXPECT_EQ(st.message(), "rank 0 reported a failure; see its log for the cause");
  EXPECT_TRUE(p.send->checkPeer().isOk()) << "a side's own flag is not its peer's failure";
}

TEST(ShmTransport, SignalAbortIsSeenByTheSender) {
  ThreadPair p = connectPair(uniqueTag(), 2, 64);
  ASSERT_TRUE(p.recv && p.send);
  p.recv->signalAbort(-1);
  Status st = p.send->checkPeer();
  EXPECT_EQ(st.code(), weftRemoteError);
  EXPECT_EQ(st.message(), "rank 1 reported a failure; see its log for the cause");
  EXPECT_TRUE(p.recv->checkPeer().isOk());
}

TEST(ShmTransport, NoSegmentLeftAfterThePairIsDestroyed) {
  std::string tag = uniqueTag();
  {
    ThreadPair p = connectPair(tag, 4, 4096);
    ASSERT_TRUE(p.recv && p.send);
    EXPECT_TRUE(shmEntries(tag).empty());
  }
  {
    ShmTransport t;
    std::unique_ptr<Connection> recv;
    ASSERT_TRUE(t.connectRecv(request(tag, 1, 0, getpid(), 4, 4096), &recv).isOk());
    EXPECT_EQ(shmEntries(tag).size(), 1u) << "named until the sender attaches";
  }
  EXPECT_TRUE(shmEntries(tag).empty()) << "a receiver whose sender never came removes the name";
}

// Forks a child that connects as `childRank` (the receiver if 1, the sender if 0), reports
// through a pipe, then waits to be killed.
pid_t forkWaitingPeer(const std::string& tag, int childRank, size_t nSlots, size_t slotBytes) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t parent = getpid();
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    ShmTransport t;
    std::unique_ptr<Connection> c;
    ConnectRequest req = request(tag, childRank, 1 - childRank, parent, nSlots, slotBytes);
    Status st = childRank == 1 ? t.connectRecv(req, &c) : t.connectSend(req, &c);
    char ok = st.isOk() ? 1 : 0;
    if (write(fds[1], &ok, 1) != 1) _exit(4);
    sleep(30);  // the parent kills this process long before
    _exit(5);
  }
  close(fds[1]);
  char ok = 0;
  ssize_t got = read(fds[0], &ok, 1);
  close(fds[0]);
  if (child > 0 && (got != 1 || ok != 1)) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    return -1;
  }
  return child;
}

// Kills and reaps a forked child on the way out of a test that failed before doing so itself.
struct ChildReaper {
  pid_t pid;
  ~ChildReaper() {
    if (pid > 0 && waitpid(pid, nullptr, WNOHANG) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

TEST(ShmTransport, CheckPeerReportsAKilledReceiverWithinASecond) {
  std::string tag = uniqueTag();
  pid_t child = forkWaitingPeer(tag, /*childRank=*/1, 4, 4096);
  ASSERT_GT(child, 0);
  ChildReaper reaper{child};
  ShmTransport t;
  std::unique_ptr<Connection> send;
  Status st = t.connectSend(request(tag, 0, 1, child, 4, 4096), &send);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_TRUE(send->checkPeer().isOk());

  ASSERT_EQ(kill(child, SIGKILL), 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  uint64_t start = nowNs();
  Status peer;
  while ((peer = send->checkPeer()).isOk() && nowNs() - start < 1000000000ull) usleep(1000);
  ASSERT_EQ(peer.code(), weftRemoteError) << "no failure seen within a second";
  EXPECT_TRUE(contains(peer.message(), "rank 1 (pid " + std::to_string(child) + " on host " + hostName() + ")"))
      << peer.message();
  EXPECT_TRUE(contains(peer.message(), "exited while this rank was waiting for it")) << peer.message();
  EXPECT_TRUE(contains(peer.message(), "check rank 1's output")) << peer.message();
  send.reset();
  EXPECT_TRUE(shmEntries(tag).empty());
}

TEST(ShmTransport, NoSegmentLeftWhenTheSenderIsKilledAfterConnecting) {
  std::string tag = uniqueTag();
  ShmTransport t;
  std::unique_ptr<Connection> recv;
  // The receiver exists first so that the child's connectSend finds it at once. The child's pid
  // is not known yet (0): the receiver learns it from the header when the sender attaches.
  ASSERT_TRUE(t.connectRecv(request(tag, 1, 0, /*peerPid=*/0, 4, 4096), &recv).isOk());
  pid_t child = forkWaitingPeer(tag, /*childRank=*/0, 4, 4096);
  ASSERT_GT(child, 0);
  ChildReaper reaper{child};
  EXPECT_TRUE(shmEntries(tag).empty()) << "the sender unlinked the name when it attached";
  EXPECT_TRUE(recv->checkPeer().isOk());
  ASSERT_EQ(kill(child, SIGKILL), 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_TRUE(shmEntries(tag).empty());
  Status st = recv->checkPeer();
  EXPECT_EQ(st.code(), weftRemoteError) << st.message();
  EXPECT_TRUE(contains(st.message(), "rank 0 (pid " + std::to_string(child))) << st.message();
  recv.reset();
  EXPECT_TRUE(shmEntries(tag).empty());
}

}  // namespace
}  // namespace shm
}  // namespace weft
