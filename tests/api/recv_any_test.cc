// weftRecvAny: a receive from whichever peer sends first, reporting the sender. Every send is
// received exactly once, with its own data, by successive calls; a send of another size fails
// like weftRecv's; collective data that arrives early is not taken for a send; the wait ends at
// WEFT_TIMEOUT_S and on revoke and abort; bad arguments are refused with a sentence.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

// What message `k` from rank `src` holds at index i: every (source, message, index) differs.
int32_t valueOf(int src, int k, size_t i) { return src * 1000000 + k * 10000 + static_cast<int32_t>(i % 10000); }

std::vector<int32_t> messageOf(int src, int k, size_t count) {
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = valueOf(src, k, i);
  return v;
}

// Returns the number of elements of `got` that are not message k of src.
size_t wrongElements(const std::vector<int32_t>& got, int src, int k) {
  size_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != valueOf(src, k, i);
  return wrong;
}

bool contains(const std::string& text, const std::string& words) { return text.find(words) != std::string::npos; }

struct Case {
  Mode mode;
  int n;
  size_t count;          // elements per message
  bool sockets = false;  // WEFT_SHM_DISABLE=1: every FIFO is a TCP connection over loopback
};

std::string caseName(const ::testing::TestParamInfo<Case>& i) {
  return std::string(modeName(i.param.mode)) + "_" + std::to_string(i.param.n) + "ranks_" +
         std::to_string(i.param.count) + (i.param.sockets ? "_sockets" : "");
}

// WEFT_SHM_DISABLE=1 for the scope when asked.
class Transport {
 public:
  explicit Transport(bool sockets) : sockets_(sockets) {
    if (sockets_) setenv("WEFT_SHM_DISABLE", "1", 1);
  }
  ~Transport() {
    if (sockets_) unsetenv("WEFT_SHM_DISABLE");
  }

 private:
  bool sockets_;
};

class RecvAny : public ::testing::TestWithParam<Case> {};

// Every other rank sends `perSender` messages to rank 0; rank 0 takes them with weftRecvAny: each
// once, in order per sender, with its data. Then an all-reduce on the same FIFOs still works.
TEST_P(RecvAny, ReceivesEverySendOnceInOrderPerSender) {
  const Case c = GetParam();
  Transport transport(c.sockets);
  const int perSender = 3;
  runRanks(c.mode, c.n, [&](Rank& r) {
    if (r.rank != 0) {
      for (int k = 0; k < perSender; ++k) {
        std::vector<int32_t> msg = messageOf(r.rank, k, c.count);
        ASSERT_EQ(weftSend(msg.data(), c.count, weftInt32, 0, r.comm, nullptr), weftSuccess)
            << weftGetLastError(r.comm);
      }
    } else {
      std::map<int, int> received;  // per source: how many so far
      for (int m = 0; m < perSender * (r.nranks - 1); ++m) {
        std::vector<int32_t> got(c.count, -1);
        int source = -1;
        ASSERT_EQ(weftRecvAny(got.data(), c.count, weftInt32, &source, r.comm, nullptr), weftSuccess)
            << weftGetLastError(r.comm);
        ASSERT_GE(source, 1);
        ASSERT_LT(source, r.nranks);
        const int k = received[source]++;
        ASSERT_LT(k, perSender) << "more messages from rank " << source << " than it sent";
        ASSERT_EQ(wrongElements(got, source, k), 0u) << "message " << k << " from rank " << source;
      }
      for (int s = 1; s < r.nranks; ++s) EXPECT_EQ(received[s], perSender) << "from rank " << s;
    }
    int32_t x = r.rank + 1, sum = 0;
    ASSERT_EQ(weftAllReduce(&x, &sum, 1, weftInt32, weftSum, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
    EXPECT_EQ(sum, r.nranks * (r.nranks + 1) / 2);
  });
}

// Rank 0 sends one message to every other rank, which each take it with weftRecvAny.
TEST_P(RecvAny, EveryReceiverHearsTheOneSender) {
  const Case c = GetParam();
  Transport transport(c.sockets);
  runRanks(c.mode, c.n, [&](Rank& r) {
    if (r.rank == 0) {
      for (int p = 1; p < r.nranks; ++p) {
        std::vector<int32_t> msg = messageOf(0, p, c.count);
        ASSERT_EQ(weftSend(msg.data(), c.count, weftInt32, p, r.comm, nullptr), weftSuccess)
            << weftGetLastError(r.comm);
      }
      return;
    }
    std::vector<int32_t> got(c.count, -1);
    int source = -1;
    ASSERT_EQ(weftRecvAny(got.data(), c.count, weftInt32, &source, r.comm, nullptr), weftSuccess)
        << weftGetLastError(r.comm);
    EXPECT_EQ(source, 0);
    EXPECT_EQ(wrongElements(got, 0, r.rank), 0u);
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, RecvAny,
                         ::testing::Values(Case{Mode::kThreads, 2, 5}, Case{Mode::kThreads, 3, 1},
                                           Case{Mode::kThreads, 4, 1000}, Case{Mode::kProcesses, 2, 1},
                                           Case{Mode::kProcesses, 3, 700000}, Case{Mode::kProcesses, 4, 17},
                                           Case{Mode::kThreads, 3, 1000, true},
                                           Case{Mode::kProcesses, 3, 300000, true}),
                         caseName);

class RecvAnyModes : public ::testing::TestWithParam<Mode> {};

// After a first gather to rank 0 (its FIFOs connected, its call checks done), rank 1 enters a
// second one at once: its block goes straight to rank 0 and arrives before anything else. Rank 2
// sends to rank 0 a little later and then joins the gather. Rank 0 must take rank 2's send, not
// rank 1's collective data, and then run the gather correctly.
TEST_P(RecvAnyModes, CollectiveDataIsNotTakenForASend) {
  runRanks(GetParam(), 3, [](Rank& r) {
    auto gather = [&](int32_t round) {
      const int32_t mine = r.rank * 10 + round;
      std::vector<int32_t> all(3, -1);
      ASSERT_EQ(weftGather(&mine, all.data(), 1, weftInt32, 0, r.comm, nullptr), weftSuccess)
          << weftGetLastError(r.comm);
      if (r.rank != 0) return;
      for (int p = 0; p < 3; ++p) EXPECT_EQ(all[p], p * 10 + round) << "block from rank " << p;
    };
    gather(1);
    if (r.rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::vector<int32_t> msg = messageOf(2, 0, 1);
      ASSERT_EQ(weftSend(msg.data(), 1, weftInt32, 0, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
    }
    if (r.rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // rank 1's block is here by now
      int32_t got = -1;
      int source = -1;
      ASSERT_EQ(weftRecvAny(&got, 1, weftInt32, &source, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
      EXPECT_EQ(source, 2);
      EXPECT_EQ(got, valueOf(2, 0, 0));
    }
    gather(2);
  });
}

// A send of another size than weftRecvAny's count fails the receive as weftRecv's does
// (call_mismatch_test.cc, SendOfAnotherSizeFailsBothRanks): with WEFT_CHECK_SENDS=1 both ranks
// fail at once, and the receiver's sentence names both calls.
TEST_P(RecvAnyModes, ASendOfAnotherSizeFailsBothRanks) {
  setenv("WEFT_CHECK_SENDS", "1", 1);
  runRanks(GetParam(), 2, [](Rank& r) {
    std::vector<int32_t> buf(8, 7);
    auto start = std::chrono::steady_clock::now();
    int source = -1;
    const weftResult_t got = r.rank == 1 ? weftSend(buf.data(), 8, weftInt32, 0, r.comm, nullptr)
                                         : weftRecvAny(buf.data(), 4, weftInt32, &source, r.comm, nullptr);
    const std::string msg = weftGetLastError(r.comm);
    EXPECT_EQ(got, weftInvalidUsage) << msg;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
    EXPECT_TRUE(contains(msg, "rank " + std::to_string(r.rank) + " called a send/recv group")) << msg;
    if (r.rank == 0) {
      EXPECT_TRUE(contains(msg, "while rank 1")) << msg;
      EXPECT_EQ(source, -1);
    }
  });
  unsetenv("WEFT_CHECK_SENDS");
}

INSTANTIATE_TEST_SUITE_P(Modes, RecvAnyModes, ::testing::Values(Mode::kThreads, Mode::kProcesses),
                         [](const ::testing::TestParamInfo<Mode>& i) { return std::string(modeName(i.param)); });

TEST(RecvAnyArguments, AreCheckedWithASentence) {
  runRanks(Mode::kThreads, 2, [](Rank& r) {
    int32_t buf[4] = {0};
    int source = -1;
    auto refused = [&](weftResult_t want, weftResult_t got, const std::string& words) {
      EXPECT_EQ(got, want) << words;
      const std::string msg = weftGetLastError(r.comm);
      EXPECT_TRUE(contains(msg, words)) << msg;
      EXPECT_TRUE(contains(msg, "rank " + std::to_string(r.rank) + ": weftRecvAny")) << msg;
    };
    refused(weftInvalidArgument, weftRecvAny(buf, 4, weftInt32, nullptr, r.comm, nullptr), "source is NULL");
    refused(weftInvalidArgument, weftRecvAny(buf, 0, weftInt32, &source, r.comm, nullptr), "count is 0");
    refused(weftInvalidArgument, weftRecvAny(nullptr, 4, weftInt32, &source, r.comm, nullptr),
            "recvbuff is NULL but count is 4");
    refused(weftInvalidArgument, weftRecvAny(buf, 4, static_cast<weftDataType_t>(99), &source, r.comm, nullptr), "99");
    refused(weftInvalidArgument, weftRecvAny(buf, 4, weftInt32, &source, r.comm, WEFT_STREAM_DEFAULT),
            "host memory only; pass stream NULL");
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    refused(weftInvalidUsage, weftRecvAny(buf, 4, weftInt32, &source, r.comm, nullptr), "called inside a group");
    ASSERT_EQ(weftGroupEnd(), weftSuccess);
    EXPECT_EQ(weftRecvAny(buf, 4, weftInt32, &source, nullptr, nullptr), weftInvalidArgument);
    EXPECT_EQ(source, -1);
    // The communicator still works.
    int32_t x = 1, y = 0;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
    EXPECT_EQ(y, 2);
  });
  runRanks(Mode::kThreads, 1, [](Rank& r) {
    int32_t buf = 0;
    int source = -1;
    EXPECT_EQ(weftRecvAny(&buf, 1, weftInt32, &source, r.comm, nullptr), weftInvalidUsage);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "the communicator has one rank")) << weftGetLastError(r.comm);
  });
}

// A pipe through which one rank process tells another it has left (destroyed its communicator).
class LeftSignal {
 public:
  LeftSignal() { EXPECT_EQ(pipe(fds_), 0); }
  ~LeftSignal() {
    close(fds_[0]);
    close(fds_[1]);
  }
  // In the rank that leaves, after weftCommDestroy: ends the process as a finished rank would.
  [[noreturn]] void leave() {
    const char c = 'x';
    EXPECT_EQ(write(fds_[1], &c, 1), 1);
    std::fflush(stdout);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  // In another rank: true once the leaving rank is gone (within 20 s).
  bool waitForLeave() {
    pollfd p{fds_[0], POLLIN, 0};
    char c = 0;
    return poll(&p, 1, 20000) == 1 && read(fds_[0], &c, 1) == 1;
  }

 private:
  int fds_[2] = {-1, -1};
};

// A rank that finished its part and destroyed its communicator sends nothing more. Over sockets
// the receiving end sends its offer to the sender, which that rank cannot take: weftRecvAny
// leaves such a rank out and hears the one that sends (it once failed after WEFT_TIMEOUT_S when
// rank 1 finished first: Shapes/RecvAny.EveryReceiverHearsTheOneSender/..._sockets).
TEST(RecvAnyLeft, ARankThatDestroyedItsCommunicatorIsLeftOut) {
  setenv("WEFT_TIMEOUT_S", "60", 1);
  for (bool sockets : {true, false}) {
    SCOPED_TRACE(sockets ? "sockets" : "shared memory");
    Transport transport(sockets);
    LeftSignal left;
    runRanks(Mode::kProcesses, 3, [&](Rank& r) {
      if (r.rank == 1) {
        ASSERT_EQ(weftCommDestroy(r.comm), weftSuccess);
        left.leave();
      }
      if (r.rank == 0) {
        std::vector<int32_t> msg = messageOf(0, 2, 1000);
        ASSERT_EQ(weftSend(msg.data(), msg.size(), weftInt32, 2, r.comm, nullptr), weftSuccess)
            << weftGetLastError(r.comm);
        return;
      }
      ASSERT_TRUE(left.waitForLeave());
      auto start = std::chrono::steady_clock::now();
      std::vector<int32_t> got(1000, -1);
      int source = -1;
      ASSERT_EQ(weftRecvAny(got.data(), got.size(), weftInt32, &source, r.comm, nullptr), weftSuccess)
          << weftGetLastError(r.comm);
      EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0);
      EXPECT_EQ(source, 0);
      EXPECT_EQ(wrongElements(got, 0, 2), 0u);
    });
  }
  unsetenv("WEFT_TIMEOUT_S");
}

// When every other rank has left, no message can come: the receive says so at once.
TEST(RecvAnyLeft, NoSenderLeftFailsWithASentence) {
  setenv("WEFT_TIMEOUT_S", "60", 1);
  for (bool sockets : {true, false}) {
    SCOPED_TRACE(sockets ? "sockets" : "shared memory");
    Transport transport(sockets);
    LeftSignal left;
    runRanks(Mode::kProcesses, 2, [&](Rank& r) {
      if (r.rank == 0) {
        ASSERT_EQ(weftCommDestroy(r.comm), weftSuccess);
        left.leave();
      }
      ASSERT_TRUE(left.waitForLeave());
      auto start = std::chrono::steady_clock::now();
      int32_t buf = 0;
      int source = -1;
      EXPECT_EQ(weftRecvAny(&buf, 1, weftInt32, &source, r.comm, nullptr), weftInvalidUsage);
      EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0);
      const std::string msg = weftGetLastError(r.comm);
      EXPECT_TRUE(contains(msg, "rank 1: weftRecvAny: every other rank has destroyed its communicator or exited")) << msg;
      EXPECT_EQ(source, -1);
    });
  }
  unsetenv("WEFT_TIMEOUT_S");
}

TEST(RecvAnyWaits, EndAtTheTimeout) {
  setenv("WEFT_TIMEOUT_S", "2", 1);
  runRanks(Mode::kThreads, 3, [](Rank& r) {
    if (r.rank != 0) {
      // Nobody sends, and nobody leaves before the time-out (one that left would end it sooner).
      std::this_thread::sleep_for(std::chrono::seconds(4));
      return;
    }
    int32_t buf = 0;
    int source = -1;
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(weftRecvAny(&buf, 1, weftInt32, &source, r.comm, nullptr), weftTimeout);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GE(s, 1.5);
    EXPECT_LT(s, 10.0);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "no peer sent a message to this rank within 2 s"))
        << weftGetLastError(r.comm);
  });
  unsetenv("WEFT_TIMEOUT_S");
}

TEST(RecvAnyWaits, EndOnRevokeAndAbortFromAnotherThread) {
  setenv("WEFT_TIMEOUT_S", "60", 1);
  for (bool abort : {false, true}) {
    runRanks(Mode::kThreads, 2, [abort](Rank& r) {
      // A communicator of its own, which abort frees (the harness destroys r.comm).
      weftComm_t comm = nullptr;
      ASSERT_EQ(weftCommSplit(r.comm, 0, r.rank, &comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
      if (r.rank == 0) {
        weftResult_t got = weftSuccess;
        auto start = std::chrono::steady_clock::now();
        std::thread waiting([&] {
          int32_t buf = 0;
          int source = -1;
          got = weftRecvAny(&buf, 1, weftInt32, &source, comm, nullptr);
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ASSERT_EQ(abort ? weftCommAbort(comm) : weftCommRevoke(comm, 0), weftSuccess);
        waiting.join();
        EXPECT_NE(got, weftSuccess);
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
        if (abort) return;
      }
      EXPECT_EQ(weftCommDestroy(comm), weftSuccess);
    });
  }
  unsetenv("WEFT_TIMEOUT_S");
}

}  // namespace
}  // namespace weft_test
