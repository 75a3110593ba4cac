// One-sided windows and signals on host memory: a put lands in the peer's window at its offset
// without the peer taking part (it only waits for the signal); waits count signals per (peer,
// sigIdx, ctx); windows of weftMemAlloc memory and of ordinary memory, ranks as threads and as
// processes; time-outs, revoke and bad arguments.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

bool contains(const std::string& text, const std::string& words) { return text.find(words) != std::string::npos; }

int32_t valueOf(int src, int dst, size_t i) { return src * 1000000 + dst * 10000 + static_cast<int32_t>(i % 10000); }

// A window's memory: from weftMemAlloc (shared memory) or from the heap.
class WindowMemory {
 public:
  WindowMemory(size_t bytes, bool memAlloc) : memAlloc_(memAlloc) {
    if (memAlloc_) {
      EXPECT_EQ(weftMemAlloc(&p_, bytes), weftSuccess);
    } else {
      heap_.resize(bytes);
      p_ = heap_.data();
    }
  }
  ~WindowMemory() {
    if (memAlloc_) weftMemFree(p_);
  }
  int32_t* ints() const { return static_cast<int32_t*>(p_); }

 private:
  bool memAlloc_;
  void* p_ = nullptr;
  std::vector<char> heap_;
};

struct Case {
  Mode mode;
  int n;
  size_t count;
  bool memAlloc;
};

class Window : public ::testing::TestWithParam<Case> {};

// Every rank puts `count` known elements into every peer's window at its own block and signals;
// each waits for one signal from every peer (one weftWaitSignal of n - 1 descs) and then finds
// every peer's block in place and the rest of its window untouched.
TEST_P(Window, PutsLandAtTheirOffsetsAndWaitsCountSignals) {
  const Case c = GetParam();
  runRanks(c.mode, c.n, [&](Rank& r) {
    const size_t n = static_cast<size_t>(r.nranks);
    WindowMemory mem((n + 1) * c.count * sizeof(int32_t), c.memAlloc);
    int32_t* w = mem.ints();
    for (size_t i = 0; i < (n + 1) * c.count; ++i) w[i] = -1;
    weftWindow_t win = nullptr;
    ASSERT_EQ(weftCommWindowRegister(r.comm, w, (n + 1) * c.count * sizeof(int32_t), &win, WEFT_WIN_DEFAULT),
              weftSuccess)
        << weftGetLastError(r.comm);
    std::vector<weftWaitSignalDesc_t> descs;
    for (int p = 0; p < r.nranks; ++p) {
      if (p == r.rank) continue;
      std::vector<int32_t> mine(c.count);
      for (size_t i = 0; i < c.count; ++i) mine[i] = valueOf(r.rank, p, i);
      const size_t offset = static_cast<size_t>(r.rank) * c.count * sizeof(int32_t);
      ASSERT_EQ(weftPutSignal(mine.data(), c.count, weftInt32, p, win, offset, 0, 0, 0, r.comm, nullptr), weftSuccess)
          << weftGetLastError(r.comm);
      descs.push_back({1, p, 0, 0});
    }
    ASSERT_EQ(weftWaitSignal(static_cast<int>(descs.size()), descs.data(), r.comm, nullptr), weftSuccess)
        << weftGetLastError(r.comm);
    for (int p = 0; p < r.nranks; ++p) {
      size_t wrong = 0;
      for (size_t i = 0; i < c.count; ++i) {
        const int32_t want = p == r.rank ? -1 : valueOf(p, r.rank, i);
        wrong += w[static_cast<size_t>(p) * c.count + i] != want;
      }
      EXPECT_EQ(wrong, 0u) << "block of rank " << p;
    }
    for (size_t i = n * c.count; i < (n + 1) * c.count; ++i) ASSERT_EQ(w[i], -1) << "past the blocks: " << i;

    // Signals alone, three to the next rank on (sigIdx 2, ctx 1): waited for as one desc of 3,
    // then a wait of 0 returns at once.
    const int next = (r.rank + 1) % r.nranks, prev = (r.rank + r.nranks - 1) % r.nranks;
    for (int k = 0; k < 3; ++k) ASSERT_EQ(weftSignal(next, 2, 1, 0, r.comm, nullptr), weftSuccess);
    weftWaitSignalDesc_t three{3, prev, 2, 1}, none{0, prev, 2, 1};
    ASSERT_EQ(weftWaitSignal(1, &three, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
    ASSERT_EQ(weftWaitSignal(1, &none, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
    ASSERT_EQ(weftCommWindowDeregister(r.comm, win), weftSuccess) << weftGetLastError(r.comm);
    // Collectives are unaffected.
    int32_t x = 1, y = 0;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
    EXPECT_EQ(y, r.nranks);
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, Window,
                         ::testing::Values(Case{Mode::kThreads, 2, 5, false}, Case{Mode::kThreads, 4, 1000, true},
                                           Case{Mode::kProcesses, 2, 1, true}, Case{Mode::kProcesses, 3, 300000, true},
                                           Case{Mode::kProcesses, 4, 33, false}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(modeName(i.param.mode)) + "_" + std::to_string(i.param.n) + "ranks_" +
                                  std::to_string(i.param.count) + (i.param.memAlloc ? "_memalloc" : "_heap");
                         });

// A wait without its signals ends at WEFT_TIMEOUT_S, or at once on revoke from another thread.
TEST(WindowWaits, EndAtTheTimeoutAndOnRevoke) {
  setenv("WEFT_TIMEOUT_S", "2", 1);
  runRanks(Mode::kThreads, 2, [](Rank& r) {
    int32_t w[4];
    weftWindow_t win = nullptr;
    ASSERT_EQ(weftCommWindowRegister(r.comm, w, sizeof(w), &win, 0), weftSuccess) << weftGetLastError(r.comm);
    if (r.rank == 0) {
      weftWaitSignalDesc_t d{1, 1, 0, 0};
      auto start = std::chrono::steady_clock::now();
      EXPECT_EQ(weftWaitSignal(1, &d, r.comm, nullptr), weftTimeout);
      EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
      EXPECT_TRUE(contains(weftGetLastError(r.comm), "0 of 1 signals from rank 1 on (sigIdx 0, ctx 0) came within 2 s"))
          << weftGetLastError(r.comm);
    }
  });
  setenv("WEFT_TIMEOUT_S", "60", 1);
  runRanks(Mode::kThreads, 2, [](Rank& r) {
    int32_t w[4];
    weftWindow_t win = nullptr;
    ASSERT_EQ(weftCommWindowRegister(r.comm, w, sizeof(w), &win, 0), weftSuccess) << weftGetLastError(r.comm);
    if (r.rank != 0) return;
    std::thread revoker([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      EXPECT_EQ(weftCommRevoke(r.comm, 0), weftSuccess);
    });
    weftWaitSignalDesc_t d{1, 1, 0, 0};
    auto start = std::chrono::steady_clock::now();
    EXPECT_NE(weftWaitSignal(1, &d, r.comm, nullptr), weftSuccess);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
    revoker.join();
  });
  unsetenv("WEFT_TIMEOUT_S");
}

TEST(WindowArguments, AreCheckedWithASentence) {
  runRanks(Mode::kThreads, 2, [](Rank& r) {
    auto refused = [&](weftResult_t want, weftResult_t got, const std::string& words) {
      EXPECT_EQ(got, want) << words;
      const std::string msg = weftGetLastError(r.comm);
      EXPECT_TRUE(contains(msg, words)) << msg;
      EXPECT_TRUE(contains(msg, "rank " + std::to_string(r.rank) + ": weft")) << msg;
    };
    const int peer = 1 - r.rank;
    refused(weftInvalidUsage, weftSignal(peer, 0, 0, 0, r.comm, nullptr), "call weftCommWindowRegister first");
    int32_t w[8] = {0}, src[8] = {0};
    weftWindow_t win = nullptr;
    refused(weftInvalidArgument, weftCommWindowRegister(r.comm, w, sizeof(w), &win, 5), "winFlags is 5");
    refused(weftInvalidArgument, weftCommWindowRegister(r.comm, w, sizeof(w), nullptr, 0), "win is NULL");
    ASSERT_EQ(weftCommWindowRegister(r.comm, w, sizeof(w), &win, 0), weftSuccess) << weftGetLastError(r.comm);
    refused(weftInvalidArgument, weftPutSignal(src, 4, weftInt32, peer, win, 20, 0, 0, 0, r.comm, nullptr),
            "16 bytes at peerWinOffset 20 run past rank " + std::to_string(peer) + "'s window of 32 bytes");
    refused(weftInvalidArgument, weftPutSignal(src, 1, weftInt32, peer, win, 0, 8, 0, 0, r.comm, nullptr),
            "sigIdx 8, ctx 0");
    refused(weftInvalidArgument, weftPutSignal(src, 1, weftInt32, peer, win, 0, 0, -1, 0, r.comm, nullptr),
            "sigIdx 0, ctx -1");
    refused(weftInvalidArgument, weftPutSignal(src, 1, weftInt32, peer, win, 0, 0, 0, 1, r.comm, nullptr),
            "flags is 1");
    refused(weftInvalidArgument, weftPutSignal(src, 1, weftInt32, 5, win, 0, 0, 0, 0, r.comm, nullptr), "peer");
    refused(weftInvalidArgument, weftPutSignal(src, 1, weftInt32, peer, nullptr, 0, 0, 0, 0, r.comm, nullptr),
            "peerWin is NULL");
    refused(weftInvalidArgument, weftPutSignal(src, 1, weftInt32, peer, win, 0, 0, 0, 0, r.comm, WEFT_STREAM_DEFAULT),
            "host memory only");
    refused(weftInvalidArgument, weftSignal(peer, 0, 9, 0, r.comm, nullptr), "sigIdx 0, ctx 9");
    weftWaitSignalDesc_t bad{-1, peer, 0, 0};
    refused(weftInvalidArgument, weftWaitSignal(1, &bad, r.comm, nullptr), "signalDescs[0].opCnt is negative");
    refused(weftInvalidArgument, weftWaitSignal(1, nullptr, r.comm, nullptr), "nDesc is 1 with signalDescs NULL");
    // Nothing was done: a put and its wait still work, and so do collectives.
    src[0] = 40 + r.rank;
    ASSERT_EQ(weftPutSignal(src, 1, weftInt32, peer, win, 4, 0, 0, 0, r.comm, nullptr), weftSuccess)
        << weftGetLastError(r.comm);
    weftWaitSignalDesc_t d{1, peer, 0, 0};
    ASSERT_EQ(weftWaitSignal(1, &d, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
    EXPECT_EQ(w[1], 40 + peer);
    ASSERT_EQ(weftCommWindowDeregister(r.comm, win), weftSuccess);
    refused(weftInvalidArgument, weftCommWindowDeregister(r.comm, win), "deregistered already");
    refused(weftInvalidArgument, weftPutSignal(src, 1, weftInt32, peer, win, 0, 0, 0, 0, r.comm, nullptr),
            "peerWin is not a window of this communicator");
    int32_t x = 1, y = 0;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
    EXPECT_EQ(y, 2);
  });
}

}  // namespace
}  // namespace weft_test
