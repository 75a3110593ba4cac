// Non-blocking init (config->blocking = 0): weftCommAbort while the init still waits for ranks
// that never come returns promptly (it aborts the bootstrap in progress), not at the init's
// deadline; and a non-blocking init that completes gives a working communicator.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST(NonBlockingInit, AbortWhileWaitingForMissingRanksReturnsPromptly) {
  for (int missingFrom : {0, 1}) {
    weftUniqueId id;
    ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
    weftConfig_t cfg = WEFT_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    cfg.timeoutS = 60;
    // One rank of three joins; the other two never do.
    weftComm_t comm = nullptr;
    ASSERT_EQ(weftCommInitRankConfig(&comm, 3, id, missingFrom == 0 ? 2 : 0, &cfg), weftInProgress);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    weftResult_t state = weftSuccess;
    ASSERT_EQ(weftCommGetAsyncError(comm, &state), weftSuccess);
    EXPECT_EQ(state, weftInProgress);
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(weftCommAbort(comm), weftSuccess);
    EXPECT_LT(secondsSince(start), 5.0) << "weftCommAbort waited for the init's 60 s deadline";
  }
}

TEST(NonBlockingInit, CompletesIntoAWorkingCommunicator) {
  const int n = 3;
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::vector<weftComm_t> comms(n, nullptr);
  weftConfig_t cfg = WEFT_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  for (int r = 0; r < n; ++r) ASSERT_EQ(weftCommInitRankConfig(&comms[r], n, id, r, &cfg), weftInProgress);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int r = 0; r < n; ++r) {
    weftResult_t state = weftInProgress;
    while (state == weftInProgress && std::chrono::steady_clock::now() < until) {
      ASSERT_EQ(weftCommGetAsyncError(comms[r], &state), weftSuccess);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_EQ(state, weftSuccess) << weftGetLastError(comms[r]);
    int dev = 0;
    ASSERT_EQ(weftCommDevice(comms[r], &dev), weftSuccess);
    EXPECT_EQ(dev, -1);  // no GPU backend in this binary: host ranks
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      int in = r + 1, out = 0;
      EXPECT_EQ(weftAllReduce(&in, &out, 1, weftInt32, weftSum, comms[r], nullptr), weftSuccess);
      EXPECT_EQ(out, 6);
    });
  }
  for (auto& t : threads) t.join();
  for (auto c : comms) EXPECT_EQ(weftCommDestroy(c), weftSuccess);
}

}  // namespace
}  // namespace weft_test

namespace weft_test {
namespace {

TEST(InitAll, WithoutAGpuBackendNullDevlistMakesHostRanks) {
  std::vector<weftComm_t> comms(3, nullptr);
  ASSERT_EQ(weftCommInitAll(comms.data(), 3, nullptr), weftSuccess) << weftGetLastError(nullptr);
  for (int i = 0; i < 3; ++i) {
    int dev = 7, rank = -1;
    ASSERT_EQ(weftCommDevice(comms[i], &dev), weftSuccess);
    ASSERT_EQ(weftCommUserRank(comms[i], &rank), weftSuccess);
    EXPECT_EQ(dev, -1);
    EXPECT_EQ(rank, i);
  }
  for (auto c : comms) EXPECT_EQ(weftCommDestroy(c), weftSuccess);
}

}  // namespace
}  // namespace weft_test
