// weftCommInitRankScalable: ranks given several ids form one communicator; the roots of the ids
// not joined through are stopped (a 1-rank init through one of them then finds nobody); ranks
// as threads (all ids made in this process) and as processes (each id made by its own rank).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

// A 1-rank communicator through `id`: succeeds only while the id's root still listens.
weftResult_t joinAlone(const weftUniqueId& id) {
  weftConfig_t cfg = WEFT_CONFIG_INITIALIZER;
  cfg.timeoutS = 1;
  weftComm_t comm = nullptr;
  weftResult_t r = weftCommInitRankConfig(&comm, 1, id, 0, &cfg);
  if (r == weftSuccess) weftCommDestroy(comm);
  return r;
}

// Every rank's part: join, check the rank and size, all-reduce exactly.
void formAndReduce(int rank, int n, int nId, weftUniqueId* ids) {
  weftComm_t comm = nullptr;
  ASSERT_EQ(weftCommInitRankScalable(&comm, n, rank, nId, ids, nullptr), weftSuccess) << weftGetLastError(nullptr);
  int got = -1;
  ASSERT_EQ(weftCommUserRank(comm, &got), weftSuccess);
  EXPECT_EQ(got, rank);
  ASSERT_EQ(weftCommCount(comm, &got), weftSuccess);
  EXPECT_EQ(got, n);
  std::vector<int64_t> v(257), out(257, -1);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (rank + 1) * 1000 + static_cast<int64_t>(i);
  ASSERT_EQ(weftAllReduce(v.data(), out.data(), v.size(), weftInt64, weftSum, comm, nullptr), weftSuccess)
      << weftGetLastError(comm);
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t want = 0;
    for (int p = 0; p < n; ++p) want += (p + 1) * 1000 + static_cast<int64_t>(i);
    ASSERT_EQ(out[i], want) << i;
  }
  EXPECT_EQ(weftCommDestroy(comm), weftSuccess);
}

TEST(InitScalable, ThreadsFormOneCommunicatorAndStopTheOtherRoots) {
  for (int n : {1, 3, 5}) {
    for (int nId = 1; nId <= std::min(n, 3); ++nId) {
      std::vector<weftUniqueId> ids(static_cast<size_t>(nId));
      for (auto& id : ids) ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
      weftUniqueId control;  // made alike, never passed: its root still listens afterwards
      ASSERT_EQ(weftGetUniqueId(&control), weftSuccess);
      std::vector<std::thread> threads;
      for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { formAndReduce(r, n, nId, ids.data()); });
      for (auto& t : threads) t.join();
      for (int i = 1; i < nId; ++i) EXPECT_NE(joinAlone(ids[i]), weftSuccess) << "root of id " << i << " still runs";
      EXPECT_EQ(joinAlone(control), weftSuccess) << weftGetLastError(nullptr);
    }
  }
}

TEST(InitScalable, ProcessesEachMakingAnId) {
  const int n = 4, nId = 3;
  struct Shared {
    weftUniqueId ids[3];
    std::atomic<int> made;
  };
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* shared = new (mem) Shared();
  shared->made.store(0);
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Ranks 0..nId-1 make one id each in their own process, as NCCL's users do.
      if (r < nId) {
        if (weftGetUniqueId(&shared->ids[r]) != weftSuccess) _exit(3);
        shared->made.fetch_add(1);
      }
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (shared->made.load() < nId && std::chrono::steady_clock::now() < until) usleep(1000);
      formAndReduce(r, n, nId, shared->ids);
      // This rank's own extra root was stopped by its own call.
      if (r >= 1 && r < nId && joinAlone(shared->ids[r]) == weftSuccess) {
        ADD_FAILURE() << "rank " << r << ": the root of its id still runs";
      }
      std::fflush(stdout);
      _exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    pids.push_back(pid);
  }
  for (int r = 0; r < n; ++r) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[r], &status, 0), pids[r]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << r << " failed (its output is above)";
  }
  munmap(mem, sizeof(Shared));
}

TEST(InitScalable, ArgumentsAreChecked) {
  weftUniqueId ids[2];
  ASSERT_EQ(weftGetUniqueId(&ids[0]), weftSuccess);
  ASSERT_EQ(weftGetUniqueId(&ids[1]), weftSuccess);
  weftComm_t comm = nullptr;
  auto expectRefused = [&](weftResult_t r, const std::string& words) {
    EXPECT_EQ(r, weftInvalidArgument);
    EXPECT_NE(std::string(weftGetLastError(nullptr)).find(words), std::string::npos) << weftGetLastError(nullptr);
  };
  expectRefused(weftCommInitRankScalable(nullptr, 2, 0, 1, ids, nullptr), "newcomm (the output pointer) is NULL");
  expectRefused(weftCommInitRankScalable(&comm, 0, 0, 1, ids, nullptr), "nranks is 0");
  expectRefused(weftCommInitRankScalable(&comm, 2, 2, 1, ids, nullptr), "myrank 2 is outside 0..1");
  expectRefused(weftCommInitRankScalable(&comm, 2, 0, 0, ids, nullptr), "nId is 0; it must be 1..nranks (2)");
  expectRefused(weftCommInitRankScalable(&comm, 2, 0, 3, ids, nullptr), "nId is 3");
  expectRefused(weftCommInitRankScalable(&comm, 2, 0, 1, nullptr, nullptr), "commIds is NULL");
  weftUniqueId twice[2] = {ids[0], ids[0]};
  expectRefused(weftCommInitRankScalable(&comm, 2, 1, 2, twice, nullptr), "commIds[0] and commIds[1] are the same id");
  weftUniqueId bad[2] = {ids[0], ids[1]};
  std::memset(bad[1].internal, 0, sizeof(bad[1].internal));
  expectRefused(weftCommInitRankScalable(&comm, 2, 1, 2, bad, nullptr),
                "commIds[1]: the unique id is not one Weft made");
  weftConfig_t cfg = WEFT_CONFIG_INITIALIZER;
  cfg.magic = 0;
  expectRefused(weftCommInitRankScalable(&comm, 2, 1, 2, ids, &cfg), "WEFT_CONFIG_INITIALIZER");
  EXPECT_EQ(comm, nullptr);
  // Nothing was stopped by refused calls: both roots still serve a 1-rank communicator.
  EXPECT_EQ(joinAlone(ids[0]), weftSuccess) << weftGetLastError(nullptr);
  EXPECT_EQ(joinAlone(ids[1]), weftSuccess) << weftGetLastError(nullptr);
}

}  // namespace
}  // namespace weft_test
