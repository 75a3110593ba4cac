// weftCommRevoke: from another thread it releases a rank blocked in a collective whose peer is
// gone, the communicator reports in-progress until its calls have left and success after, and
// the survivors can still shrink the gone rank away (and split, destroy) while finalize and
// every call that moves data are refused.
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

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Polls weftCommGetAsyncError until it stops reporting weftInProgress; returns what it reports then.
weftResult_t settledState(weftComm_t comm) {
  weftResult_t state = weftInProgress;
  auto start = std::chrono::steady_clock::now();
  while (state == weftInProgress && secondsSince(start) < 10) {
    EXPECT_EQ(weftCommGetAsyncError(comm, &state), weftSuccess);
    if (state == weftInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return state;
}

class Revoke : public ::testing::TestWithParam<Mode> {};

// Rank 2 stops taking part (its thread returns; its process idles, alive, so nothing but the
// revoke ends the wait before the 60 s deadline). Ranks 0 and 1 block in an all-reduce that
// waits for it; another thread of each revokes the communicator: the all-reduce returns an
// error at once, the communicator settles to weftSuccess, and a shrink without rank 2 (no
// WEFT_SHRINK_ABORT: the revoke already stopped everything) gives a communicator whose
// all-reduce is right.
TEST_P(Revoke, ReleasesACollectiveWaitingForAGoneRankThenShrinkWorks) {
  setenv("WEFT_TIMEOUT_S", "60", 1);
  runRanks(GetParam(), 3, [](Rank& r) {
    int32_t x = 1, y = 0;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftSuccess);
    ASSERT_EQ(y, 3);
    if (r.rank == 2) {
      if (GetParam() == Mode::kProcesses) std::this_thread::sleep_for(std::chrono::seconds(3));
      return;
    }
    auto start = std::chrono::steady_clock::now();
    weftResult_t revoked = weftInternalError;
    std::thread revoker([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      revoked = weftCommRevoke(r.comm, 0);
    });
    std::vector<int32_t> big(1 << 16, 1), out(1 << 16, 0);
    const weftResult_t blocked = weftAllReduce(big.data(), out.data(), big.size(), weftInt32, weftSum, r.comm, nullptr);
    revoker.join();
    ASSERT_EQ(revoked, weftSuccess) << weftGetLastError(r.comm);
    EXPECT_NE(blocked, weftSuccess);
    EXPECT_LT(secondsSince(start), 10.0) << "the revoke, not the deadline, ended the all-reduce";
    EXPECT_EQ(settledState(r.comm), weftSuccess);
    // Calls that move data are refused now, with a sentence that says what to do.
    EXPECT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftInvalidUsage);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "revoked (weftCommRevoke)")) << weftGetLastError(r.comm);

    int excluded[] = {2};
    weftComm_t shrunk = nullptr;
    ASSERT_EQ(weftCommShrink(r.comm, excluded, 1, &shrunk, nullptr, WEFT_SHRINK_DEFAULT), weftSuccess)
        << weftGetLastError(r.comm);
    int n = 0, rank = -1;
    ASSERT_EQ(weftCommCount(shrunk, &n), weftSuccess);
    ASSERT_EQ(weftCommUserRank(shrunk, &rank), weftSuccess);
    EXPECT_EQ(n, 2);
    EXPECT_EQ(rank, r.rank);
    std::vector<int32_t> mine(7), sum(7, -1);
    for (int i = 0; i < 7; ++i) mine[i] = r.rank * 100 + i;
    ASSERT_EQ(weftAllReduce(mine.data(), sum.data(), 7, weftInt32, weftSum, shrunk, nullptr), weftSuccess)
        << weftGetLastError(shrunk);
    for (int i = 0; i < 7; ++i) EXPECT_EQ(sum[i], 100 + 2 * i) << i;
    EXPECT_EQ(weftCommDestroy(shrunk), weftSuccess);
  });
  unsetenv("WEFT_TIMEOUT_S");
}

// Every rank revokes: finalize is refused, split and destroy still work.
TEST_P(Revoke, AfterRevokeSplitWorksAndFinalizeIsRefused) {
  runRanks(GetParam(), 3, [](Rank& r) {
    ASSERT_EQ(weftCommRevoke(r.comm, 0), weftSuccess);
    ASSERT_EQ(weftCommRevoke(r.comm, 0), weftSuccess) << "a second revoke changes nothing";
    EXPECT_EQ(settledState(r.comm), weftSuccess);
    EXPECT_EQ(weftCommFinalize(r.comm), weftInvalidUsage);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "call weftCommDestroy")) << weftGetLastError(r.comm);
    int32_t x = 1, y = 0;
    EXPECT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftInvalidUsage);
    // Ranks 0 and 2 make one communicator, rank 1 none.
    weftComm_t half = nullptr;
    ASSERT_EQ(weftCommSplit(r.comm, r.rank == 1 ? WEFT_SPLIT_NOCOLOR : 5, 0, &half, nullptr), weftSuccess)
        << weftGetLastError(r.comm);
    if (r.rank == 1) {
      EXPECT_EQ(half, nullptr);
      return;
    }
    x = r.rank + 1;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, half, nullptr), weftSuccess) << weftGetLastError(half);
    EXPECT_EQ(y, 4);
    EXPECT_EQ(weftCommDestroy(half), weftSuccess);
  });
}

INSTANTIATE_TEST_SUITE_P(Modes, Revoke, ::testing::Values(Mode::kThreads, Mode::kProcesses),
                         [](const ::testing::TestParamInfo<Mode>& i) { return std::string(modeName(i.param)); });

TEST(RevokeArguments, AreChecked) {
  runRanks(Mode::kThreads, 2, [](Rank& r) {
    EXPECT_EQ(weftCommRevoke(r.comm, 1), weftInvalidArgument);
    const std::string msg = weftGetLastError(r.comm);
    EXPECT_TRUE(contains(msg, "rank " + std::to_string(r.rank) + ": weftCommRevoke: flags is 1")) << msg;
    EXPECT_TRUE(contains(msg, "pass 0")) << msg;
    EXPECT_EQ(weftCommRevoke(nullptr, 0), weftInvalidArgument);
    // A refused revoke revoked nothing.
    int32_t x = 1, y = 0;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
    EXPECT_EQ(y, 2);
    weftResult_t state = weftInternalError;
    ASSERT_EQ(weftCommGetAsyncError(r.comm, &state), weftSuccess);
    EXPECT_EQ(state, weftSuccess);
  });
}

}  // namespace
}  // namespace weft_test
