// NCCL's one-sided calls on Weft's libnccl.so.2 (ranks as threads, host memory): every rank
// puts a block of known values into each peer's window with ncclPutSignal, at its own offset,
// and waits for the peers' signals with ncclWaitSignal; ncclSignal orders a signal after the
// puts; the window still serves collectives and gives its pointer back (ncclWinGetUserPtr).
#include <string>
#include <vector>

#include "nccl_harness.h"

using nccl_test::Mode;
using nccl_test::Rank;

namespace {

std::string lastError() { return ncclGetLastError(nullptr); }
bool said(const char* words) { return lastError().find(words) != std::string::npos; }

int32_t valueOf(int from, int to, int i) { return from * 10000 + to * 100 + i; }

class NcclOneSided : public ::testing::TestWithParam<int> {};

// Rank r writes kBlock values to peer p at p's window offset r * kBlock elements, then one more
// signal (ncclSignal, sigIdx 1). Each rank waits for one put-signal (sigIdx 0) and one signal
// from every peer, then finds every peer's block, exact, and its own block untouched.
TEST_P(NcclOneSided, PutSignalIntoEveryPeersWindowThenWait) {
  const int n = GetParam();
  constexpr int kBlock = 37;
  nccl_test::runRanks(Mode::kThreads, n, [&](Rank& me) {
    std::vector<int32_t> window(static_cast<size_t>(n * kBlock), -1);
    ncclWindow_t win = nullptr;
    NCCL_OK(ncclCommWindowRegister(me.comm, window.data(), window.size() * sizeof(int32_t), &win, NCCL_WIN_DEFAULT));
    void* user = nullptr;
    NCCL_OK(ncclWinGetUserPtr(me.comm, win, &user));
    EXPECT_EQ(user, window.data());

    std::vector<ncclWaitSignalDesc_t> waits;
    for (int p = 0; p < n; ++p) {
      if (p == me.rank) continue;
      std::vector<int32_t> block(kBlock);
      for (int i = 0; i < kBlock; ++i) block[i] = valueOf(me.rank, p, i);
      const size_t offset = static_cast<size_t>(me.rank * kBlock) * sizeof(int32_t);
      NCCL_OK(ncclPutSignal(block.data(), kBlock, ncclInt32, p, win, offset, 0, 0, 0, me.comm, nullptr));
      NCCL_OK(ncclSignal(p, 1, 0, 0, me.comm, nullptr));
      waits.push_back({1, p, 0, 0});
      waits.push_back({1, p, 1, 0});
    }
    NCCL_OK(ncclWaitSignal(static_cast<int>(waits.size()), waits.data(), me.comm, nullptr));
    for (int p = 0; p < n; ++p) {
      for (int i = 0; i < kBlock; ++i) {
        const int32_t want = p == me.rank ? -1 : valueOf(p, me.rank, i);
        ASSERT_EQ(window[static_cast<size_t>(p * kBlock + i)], want) << "block of rank " << p << ", element " << i;
      }
    }

    // The window serves collectives too (its range is registered for zero-copy).
    NCCL_OK(ncclAllReduce(window.data(), window.data(), window.size(), ncclInt32, ncclSum, me.comm, nullptr));
    for (int p = 0; p < n; ++p) {
      int64_t want = -1;  // the block's owner never wrote its own block
      for (int q = 0; q < n; ++q) want += q == p ? 0 : valueOf(p, q, 5);
      EXPECT_EQ(window[static_cast<size_t>(p * kBlock + 5)], want) << "block " << p;
    }
    NCCL_OK(ncclCommWindowDeregister(me.comm, win));
    int32_t x = 0;
    EXPECT_EQ(ncclPutSignal(&x, 1, ncclInt32, 0, win, 0, 0, 0, 0, me.comm, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(said("ncclPutSignal: window")) << lastError();
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, NcclOneSided, ::testing::Values(2, 3));

// Weft checks what NCCL's arguments mean and says which is wrong; the window stays usable.
TEST(NcclOneSidedArguments, AreChecked) {
  nccl_test::runRanks(Mode::kThreads, 2, [](Rank& me) {
    int32_t window[16] = {};
    ncclWindow_t win = nullptr;
    NCCL_OK(ncclCommWindowRegister(me.comm, window, sizeof(window), &win, NCCL_WIN_COLL_SYMMETRIC));
    const int peer = 1 - me.rank;
    int32_t src[4] = {1, 2, 3, 4};
    EXPECT_EQ(ncclPutSignal(src, 4, ncclInt32, peer, win, 60, 0, 0, 0, me.comm, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(said("run past rank")) << lastError();
    EXPECT_EQ(ncclPutSignal(src, 1, ncclInt32, peer, win, 0, 99, 0, 0, me.comm, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(said("sigIdx 99")) << lastError();
    EXPECT_EQ(ncclSignal(peer, 0, 0, 1, me.comm, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(said("flags is 1")) << lastError();
    int stray = 0;
    EXPECT_EQ(
        ncclPutSignal(src, 1, ncclInt32, peer, reinterpret_cast<ncclWindow_t>(&stray), 0, 0, 0, 0, me.comm, nullptr),
        ncclInvalidArgument);
    EXPECT_TRUE(said("was not returned by ncclCommWindowRegister")) << lastError();
    // Still usable: one put lands.
    NCCL_OK(ncclPutSignal(src, 4, ncclInt32, peer, win, 48, 0, 0, 0, me.comm, nullptr));
    ncclWaitSignalDesc_t wait = {1, peer, 0, 0};
    NCCL_OK(ncclWaitSignal(1, &wait, me.comm, nullptr));
    EXPECT_EQ(window[12], 1);
    EXPECT_EQ(window[15], 4);
    NCCL_OK(ncclCommWindowDeregister(me.comm, win));
  });
}

}  // namespace
