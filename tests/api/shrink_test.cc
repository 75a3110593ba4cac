// weftCommShrink: the remaining ranks form a communicator in their old order while the excluded
// ranks take no part (they never call it, or their process is gone); the parent keeps working
// after WEFT_SHRINK_DEFAULT and refuses after WEFT_SHRINK_ABORT; lists are checked.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

bool excludedIn(const std::vector<int>& list, int r) { return std::find(list.begin(), list.end(), r) != list.end(); }

// On the new communicator: its size and this rank's place, an exact all-reduce of the old ranks
// and a gather to the new root of them, which shows the order.
void checkShrunk(weftComm_t shrunk, int oldRank, int oldN, const std::vector<int>& excluded) {
  std::vector<int> members;
  for (int r = 0; r < oldN; ++r) {
    if (!excludedIn(excluded, r)) members.push_back(r);
  }
  int n = -1, rank = -1;
  ASSERT_EQ(weftCommCount(shrunk, &n), weftSuccess);
  ASSERT_EQ(weftCommUserRank(shrunk, &rank), weftSuccess);
  ASSERT_EQ(n, static_cast<int>(members.size()));
  ASSERT_EQ(members[static_cast<size_t>(rank)], oldRank) << "ranks keep their order";
  std::vector<int32_t> mine(5), sum(5, -1);
  for (int i = 0; i < 5; ++i) mine[i] = oldRank * 10 + i;
  ASSERT_EQ(weftAllReduce(mine.data(), sum.data(), 5, weftInt32, weftSum, shrunk, nullptr), weftSuccess)
      << weftGetLastError(shrunk);
  for (int i = 0; i < 5; ++i) {
    int32_t want = 0;
    for (int m : members) want += m * 10 + i;
    ASSERT_EQ(sum[i], want) << i;
  }
  int32_t me = oldRank;
  std::vector<int32_t> all(members.size(), -1);
  ASSERT_EQ(weftGather(&me, all.data(), 1, weftInt32, 0, shrunk, nullptr), weftSuccess) << weftGetLastError(shrunk);
  if (rank == 0) {
    EXPECT_EQ(all, std::vector<int32_t>(members.begin(), members.end()));
  }
}

class Shrink : public ::testing::TestWithParam<Mode> {};

TEST_P(Shrink, ExcludedRanksThatNeverCallIt) {
  struct Case {
    int n;
    std::vector<int> excluded;
  };
  for (const Case& c : {Case{2, {1}}, Case{3, {0}}, Case{5, {1, 3}}, Case{5, {4, 0}}, Case{4, {}}}) {
    for (int flags : {WEFT_SHRINK_DEFAULT, WEFT_SHRINK_ABORT}) {
      runRanks(GetParam(), c.n, [&](Rank& r) {
        if (!excludedIn(c.excluded, r.rank)) {
          weftComm_t shrunk = nullptr;
          ASSERT_EQ(
              weftCommShrink(r.comm, c.excluded.data(), static_cast<int>(c.excluded.size()), &shrunk, nullptr, flags),
              weftSuccess)
              << weftGetLastError(r.comm);
          checkShrunk(shrunk, r.rank, r.nranks, c.excluded);
          EXPECT_EQ(weftCommDestroy(shrunk), weftSuccess);
        }
        if (flags == WEFT_SHRINK_ABORT) {
          if (excludedIn(c.excluded, r.rank)) return;
          int x = 1, y = 0;
          EXPECT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftInvalidUsage);
          EXPECT_NE(std::string(weftGetLastError(r.comm)).find("error state"), std::string::npos)
              << weftGetLastError(r.comm);
          return;
        }
        // WEFT_SHRINK_DEFAULT: the parent, excluded ranks included, still works.
        int x = r.rank + 1, y = 0;
        ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftSuccess)
            << weftGetLastError(r.comm);
        EXPECT_EQ(y, r.nranks * (r.nranks + 1) / 2);
      });
    }
  }
}

TEST_P(Shrink, TwiceInARow) {
  runRanks(GetParam(), 5, [&](Rank& r) {
    if (r.rank == 2) return;
    int first[] = {2};
    weftComm_t a = nullptr;
    ASSERT_EQ(weftCommShrink(r.comm, first, 1, &a, nullptr, WEFT_SHRINK_DEFAULT), weftSuccess)
        << weftGetLastError(r.comm);
    checkShrunk(a, r.rank, 5, {2});
    // In a's numbering old rank 0 is rank 0: shrink it away too (old ranks 1, 3, 4 remain).
    int aRank = -1;
    ASSERT_EQ(weftCommUserRank(a, &aRank), weftSuccess);
    if (aRank != 0) {
      int second[] = {0};
      weftComm_t b = nullptr;
      ASSERT_EQ(weftCommShrink(a, second, 1, &b, nullptr, WEFT_SHRINK_DEFAULT), weftSuccess) << weftGetLastError(a);
      checkShrunk(b, aRank, 4, {0});
      EXPECT_EQ(weftCommDestroy(b), weftSuccess);
    }
    EXPECT_EQ(weftCommDestroy(a), weftSuccess);
  });
}

INSTANTIATE_TEST_SUITE_P(Modes, Shrink, ::testing::Values(Mode::kThreads, Mode::kProcesses),
                         [](const ::testing::TestParamInfo<Mode>& i) { return std::string(modeName(i.param)); });

TEST(ShrinkDeadRank, SurvivorsShrinkAwayAProcessThatExited) {
  // Rank 2 (and in the second round rank 0, the parent's bootstrap hub) leaves after a first
  // all-reduce, without destroying anything: its process is gone when the others shrink.
  for (int dead : {2, 0}) {
    runRanks(Mode::kProcesses, 4, [&](Rank& r) {
      int x = 1, y = 0;
      ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftSuccess);
      ASSERT_EQ(y, 4);
      if (r.rank == dead) _exit(0);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      int excluded[] = {dead};
      weftComm_t shrunk = nullptr;
      auto start = std::chrono::steady_clock::now();
      ASSERT_EQ(weftCommShrink(r.comm, excluded, 1, &shrunk, nullptr, WEFT_SHRINK_ABORT), weftSuccess)
          << weftGetLastError(r.comm);
      EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
      checkShrunk(shrunk, r.rank, 4, {dead});
      EXPECT_EQ(weftCommDestroy(shrunk), weftSuccess);
    });
  }
}

TEST(ShrinkAbort, StopsACollectiveInFlightOnTheParent) {
  // Rank 2 stops taking part after a first all-reduce; ranks 0 and 1 start a second one, which
  // waits for rank 2, and shrink rank 2 away with WEFT_SHRINK_ABORT from another thread: the
  // waiting call returns (an error, well before the 60 s deadline) and the new one works.
  setenv("WEFT_TIMEOUT_S", "60", 1);
  runRanks(Mode::kThreads, 3, [](Rank& r) {
    int x = 1, y = 0;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftSuccess);
    if (r.rank == 2) return;
    auto start = std::chrono::steady_clock::now();
    weftResult_t inFlight = weftSuccess;
    std::thread waiting([&] {
      std::vector<int32_t> big(1 << 16, 1), out(1 << 16, 0);
      inFlight = weftAllReduce(big.data(), out.data(), big.size(), weftInt32, weftSum, r.comm, nullptr);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    int excluded[] = {2};
    weftComm_t shrunk = nullptr;
    ASSERT_EQ(weftCommShrink(r.comm, excluded, 1, &shrunk, nullptr, WEFT_SHRINK_ABORT), weftSuccess)
        << weftGetLastError(r.comm);
    waiting.join();
    EXPECT_NE(inFlight, weftSuccess);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
    checkShrunk(shrunk, r.rank, 3, {2});
    EXPECT_EQ(weftCommDestroy(shrunk), weftSuccess);
  });
  unsetenv("WEFT_TIMEOUT_S");
}

// Ranks as processes where rank `dead` is killed with SIGKILL at the point its body calls
// `die` (the harness would count that as a failure): every other rank must exit 0.
void runWithKilledRank(int n, int dead, const std::function<void(Rank&, const std::function<void()>&)>& body) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      Rank rank;
      rank.rank = r;
      rank.nranks = n;
      if (weftCommInitRank(&rank.comm, n, id, r) != weftSuccess) _exit(3);
      body(rank, [] { raise(SIGKILL); });
      weftCommDestroy(rank.comm);
      std::fflush(stdout);
      _exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    pids.push_back(pid);
  }
  for (int r = 0; r < n; ++r) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[r], &status, 0), pids[r]);
    if (r == dead) {
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "rank " << r << " was to be killed";
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << r << " failed (output above)";
    }
  }
}

TEST(ShrinkDeadRank, SurvivorsShrinkAwayAKilledProcessInTheMiddleOfACollective) {
  // Rank 3 is killed while the others run an all-reduce: they fail it, then shrink it away.
  setenv("WEFT_TIMEOUT_S", "5", 1);
  runWithKilledRank(4, 3, [](Rank& r, const std::function<void()>& die) {
    int x = 1, y = 0;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftSuccess);
    if (r.rank == 3) die();
    std::vector<int32_t> big(1 << 15, 1), out(1 << 15, 0);
    EXPECT_NE(weftAllReduce(big.data(), out.data(), big.size(), weftInt32, weftSum, r.comm, nullptr), weftSuccess);
    int excluded[] = {3};
    weftComm_t shrunk = nullptr;
    ASSERT_EQ(weftCommShrink(r.comm, excluded, 1, &shrunk, nullptr, WEFT_SHRINK_ABORT), weftSuccess)
        << weftGetLastError(r.comm);
    checkShrunk(shrunk, r.rank, 4, {3});
    EXPECT_EQ(weftCommDestroy(shrunk), weftSuccess);
  });
  unsetenv("WEFT_TIMEOUT_S");
}

TEST(ShrinkDeadRank, AfterACollectiveFailedOnTheDeadRank) {
  // The usual recovery: a collective fails because a rank died, the communicator is in its
  // error state, and the survivors shrink it away.
  setenv("WEFT_TIMEOUT_S", "3", 1);
  runRanks(Mode::kProcesses, 4, [&](Rank& r) {
    int x = 1, y = 0;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftSuccess);
    if (r.rank == 1) _exit(0);
    std::vector<int32_t> big(1 << 15, 1), out(1 << 15, 0);
    EXPECT_NE(weftAllReduce(big.data(), out.data(), big.size(), weftInt32, weftSum, r.comm, nullptr), weftSuccess);
    weftResult_t state = weftSuccess;
    ASSERT_EQ(weftCommGetAsyncError(r.comm, &state), weftSuccess);
    EXPECT_NE(state, weftSuccess) << "the failed collective put the communicator in its error state";
    int excluded[] = {1};
    weftComm_t shrunk = nullptr;
    ASSERT_EQ(weftCommShrink(r.comm, excluded, 1, &shrunk, nullptr, WEFT_SHRINK_ABORT), weftSuccess)
        << weftGetLastError(r.comm);
    checkShrunk(shrunk, r.rank, 4, {1});
    EXPECT_EQ(weftCommDestroy(shrunk), weftSuccess);
  });
  unsetenv("WEFT_TIMEOUT_S");
}

TEST(ShrinkArguments, ListsAreChecked) {
  runRanks(Mode::kThreads, 3, [](Rank& r) {
    weftComm_t out = nullptr;
    auto refused = [&](const std::vector<int>& list, int n, int flags, const std::string& words) {
      EXPECT_EQ(weftCommShrink(r.comm, list.empty() ? nullptr : list.data(), n, &out, nullptr, flags),
                weftInvalidArgument);
      EXPECT_NE(std::string(weftGetLastError(r.comm)).find(words), std::string::npos) << weftGetLastError(r.comm);
      EXPECT_EQ(out, nullptr);
    };
    const int other = (r.rank + 1) % 3;
    refused({3}, 1, 0, "excludeRanks[0] = 3 is not a rank of this communicator (0..2)");
    refused({-1}, 1, 0, "excludeRanks[0] = -1");
    refused({other, other}, 2, 0, "rank " + std::to_string(other) + " is listed twice");
    refused({other, r.rank}, 2, 0, "excludeRanks[1] is this rank itself");
    refused({0, 1, 2}, 3, 0, "excluding 3 of 3 ranks leaves no communicator");
    refused({}, 1, 0, "nExclude is 1 with excludeRanks NULL");
    refused({other}, -1, 0, "nExclude is -1");
    refused({other}, 1, 7, "shrinkFlags is 7");
    EXPECT_EQ(weftCommShrink(r.comm, nullptr, 0, nullptr, nullptr, 0), weftInvalidArgument);
    EXPECT_EQ(weftCommShrink(nullptr, nullptr, 0, &out, nullptr, 0), weftInvalidArgument);
    // The communicator still works.
    int x = 1, y = 0;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftSuccess);
    EXPECT_EQ(y, 3);
  });
}

TEST(ShrinkArguments, RanksThatPassDifferentListsAllFail) {
  // Ranks 0 and 1 remain in both lists but disagree about rank 3; rank 2 is excluded by both.
  runRanks(Mode::kThreads, 4, [](Rank& r) {
    if (r.rank >= 2) return;
    std::vector<int> list = r.rank == 0 ? std::vector<int>{2, 3} : std::vector<int>{2};
    // Rank 1 expects rank 3 to join; rank 0 does not: both must fail at once, not at a deadline.
    weftComm_t out = nullptr;
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(weftCommShrink(r.comm, list.data(), static_cast<int>(list.size()), &out, nullptr, 0),
              weftInvalidArgument);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
    EXPECT_NE(std::string(weftGetLastError(r.comm)).find("every remaining rank must pass the same excludeRanks"),
              std::string::npos)
        << weftGetLastError(r.comm);
    EXPECT_EQ(out, nullptr);
  });
}

}  // namespace
}  // namespace weft_test
