// A unique id makes one communicator. Using it for a second one (after the first was destroyed,
// by two groups of ranks at once, or by a rank that calls init twice) must fail with a message
// that says so, on every rank, instead of hanging or joining the wrong group. Ranks as threads
// and as forked processes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace {

struct Outcome {
  weftResult_t result = weftSuccess;
  std::string message;
  double seconds = 0;
};

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Joins `id` as rank/n with a 20 s time-out; on success runs one all-reduce and destroys.
Outcome joinOnce(const weftUniqueId& id, int rank, int n) {
  Outcome o;
  auto start = std::chrono::steady_clock::now();
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutS = 20;
  weftComm_t comm = nullptr;
  o.result = weftCommInitRankConfig(&comm, n, id, rank, &config);
  o.seconds = since(start);
  if (o.result != weftSuccess) {
    o.message = weftGetLastError(nullptr);
    return o;
  }
  int32_t in = rank + 1, out = 0;
  o.result = weftAllReduce(&in, &out, 1, weftInt32, weftSum, comm, nullptr);
  if (o.result == weftSuccess && out != n * (n + 1) / 2) o.result = weftInternalError;
  weftCommDestroy(comm);
  return o;
}

std::vector<Outcome> joinAsThreads(const weftUniqueId& id, const std::vector<int>& ranks, int n) {
  std::vector<Outcome> out(ranks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i) threads.emplace_back([&, i] { out[i] = joinOnce(id, ranks[i], n); });
  for (auto& t : threads) t.join();
  return out;
}

bool saysUsed(const std::string& m) {
  return (m.find("already used") != std::string::npos || m.find("used twice") != std::string::npos) &&
         m.find("weftGetUniqueId for each new communicator") != std::string::npos;
}

TEST(UniqueIdReuse, ThreadsSecondCommunicatorAfterDestroyIsRefusedAtOnce) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  for (const Outcome& o : joinAsThreads(id, {0, 1, 2}, 3)) ASSERT_EQ(o.result, weftSuccess) << o.message;
  for (const Outcome& o : joinAsThreads(id, {0, 1, 2}, 3)) {
    EXPECT_EQ(o.result, weftInvalidUsage);
    EXPECT_TRUE(saysUsed(o.message)) << o.message;
    EXPECT_LT(o.seconds, 5.0) << "refused at once, not after the 20 s time-out";
  }
}

// Two groups of ranks start on one id together: both rank 0s join before any rank 1, so the
// root sees rank 0 twice while it waits; no communicator may form from the mix.
TEST(UniqueIdReuse, ThreadsTwoGroupsAtOnceAllFail) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::vector<Outcome> out(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) threads.emplace_back([&, i] { out[i] = joinOnce(id, 0, 2); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int i = 2; i < 4; ++i) threads.emplace_back([&, i] { out[i] = joinOnce(id, 1, 2); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(out[i].result, weftInvalidUsage) << "rank " << i / 2 << " of group " << i % 2 << ": " << out[i].message;
    EXPECT_TRUE(saysUsed(out[i].message)) << out[i].message;
    EXPECT_LT(out[i].seconds, 10.0);
  }
}

// One rank calls init twice with one id (here: two non-blocking inits at once).
TEST(UniqueIdReuse, ThreadsOneRankInitTwice) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.timeoutS = 20;
  weftComm_t a = nullptr, b = nullptr;
  ASSERT_EQ(weftCommInitRankConfig(&a, 2, id, 0, &config), weftInProgress);
  ASSERT_EQ(weftCommInitRankConfig(&b, 2, id, 0, &config), weftInProgress);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Outcome other = joinOnce(id, 1, 2);
  EXPECT_EQ(other.result, weftInvalidUsage) << other.message;
  EXPECT_TRUE(saysUsed(other.message)) << other.message;
  for (weftComm_t c : {a, b}) {
    weftResult_t state = weftInProgress;
    for (int i = 0; i < 1000 && state == weftInProgress; ++i) {
      ASSERT_EQ(weftCommGetAsyncError(c, &state), weftSuccess);
      if (state == weftInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(state, weftInvalidUsage);
    EXPECT_TRUE(saysUsed(weftGetLastError(c))) << weftGetLastError(c);
    weftCommDestroy(c);
  }
}

// Runs each rank in a forked process; the child exits 0 when `check` holds for its outcome.
// The id's root runs in this (the parent) process.
template <typename Check>
void forkRanks(const weftUniqueId& id, const std::vector<int>& ranks, int n, int staggerMs, Check check) {
  std::vector<pid_t> pids;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == 2 && staggerMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(staggerMs));
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(60);  // a hang fails the test instead of stalling it
      _exit(check(ranks[i]) ? 0 : 1);
    }
    pids.push_back(pid);
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[i], &status, 0), pids[i]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "rank " << ranks[i] << " (child " << i << "): status " << status;
  }
}

TEST(UniqueIdReuse, ProcessesSecondCommunicatorAfterDestroyIsRefused) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  forkRanks(id, {0, 1}, 2, 0, [&](int rank) {
    Outcome first = joinOnce(id, rank, 2);
    if (first.result != weftSuccess) return false;
    Outcome second = joinOnce(id, rank, 2);
    if (!saysUsed(second.message)) std::fprintf(stderr, "rank %d: %s\n", rank, second.message.c_str());
    return second.result == weftInvalidUsage && saysUsed(second.message) && second.seconds < 5.0;
  });
}

TEST(UniqueIdReuse, ProcessesTwoGroupsAtOnceAllFail) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  forkRanks(id, {0, 0, 1, 1}, 2, 300, [&](int rank) {
    Outcome o = joinOnce(id, rank, 2);
    if (!saysUsed(o.message)) std::fprintf(stderr, "rank %d: %s\n", rank, o.message.c_str());
    return o.result == weftInvalidUsage && saysUsed(o.message);
  });
}

}  // namespace
