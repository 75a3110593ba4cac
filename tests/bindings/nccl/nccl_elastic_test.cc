// NCCL programs that change a communicator while it lives, on Weft's libnccl.so.2 (ranks as
// threads): ncclCommRevoke frees an all-reduce blocked on a rank that stopped taking part and
// ncclCommShrink then drops that rank; ncclCommGetUniqueId / ncclCommGrow add a rank to three;
// ncclCommSuspend / ncclCommResume release and remake what a suspend frees, which
// ncclCommMemStats reports. Values are chosen so that every result is known exactly.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "nccl_harness.h"

using nccl_test::Mode;
using nccl_test::Rank;

namespace {

std::string lastError() { return ncclGetLastError(nullptr); }
bool said(const char* words) { return lastError().find(words) != std::string::npos; }

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// An all-reduce of rank * 100 + i over comm's n ranks, checked exactly.
void expectAllReduceRight(ncclComm_t comm, int rank, int n) {
  std::vector<int32_t> mine(1000), sum(1000, -1);
  for (int i = 0; i < 1000; ++i) mine[i] = rank * 100 + i;
  NCCL_OK(ncclAllReduce(mine.data(), sum.data(), mine.size(), ncclInt32, ncclSum, comm, nullptr));
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(sum[i], 100 * n * (n - 1) / 2 + n * i) << "element " << i;
}

// Threads of one test wait here for each other (count: how many).
class Meeting {
 public:
  explicit Meeting(int count) : count_(count) {}
  void meet() {
    arrived_.fetch_add(1);
    while (arrived_.load() < count_) std::this_thread::yield();
  }

 private:
  const int count_;
  std::atomic<int> arrived_{0};
};

// Rank 2 stops taking part but stays alive, so nothing but the revoke ends the all-reduce of
// ranks 0 and 1 before WEFT_TIMEOUT_S (60 s here). Another thread of each revokes: the
// all-reduce fails at once, the communicator settles to ncclSuccess and refuses calls that move
// data, and a shrink without rank 2 gives a communicator whose all-reduce is right.
TEST(NcclRevoke, FreesABlockedAllReduceThenShrinkWorks) {
  setenv("WEFT_TIMEOUT_S", "60", 1);
  std::atomic<int> survivorsDone{0};
  nccl_test::runRanks(Mode::kThreads, 3, [&](Rank& me) {
    expectAllReduceRight(me.comm, me.rank, 3);
    if (me.rank == 2) {
      while (survivorsDone.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return;
    }
    struct Done {
      std::atomic<int>& n;
      ~Done() { n.fetch_add(1); }
    } done{survivorsDone};
    const auto start = std::chrono::steady_clock::now();
    ncclResult_t revoked = ncclInternalError;
    std::thread revoker([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      revoked = ncclCommRevoke(me.comm, NCCL_REVOKE_DEFAULT);
    });
    std::vector<float> big(1 << 16, 1.0f);
    const ncclResult_t blocked =
        ncclAllReduce(big.data(), big.data(), big.size(), ncclFloat, ncclSum, me.comm, nullptr);
    revoker.join();
    ASSERT_EQ(revoked, ncclSuccess) << lastError();
    EXPECT_NE(blocked, ncclSuccess) << "rank 2 never joined: only the revoke can have ended it";
    EXPECT_LT(secondsSince(start), 10.0) << "the revoke, not the 60 s deadline, ended the all-reduce";

    ncclResult_t state = ncclInProgress;
    for (int i = 0; i < 10000 && state == ncclInProgress; ++i) {
      NCCL_OK(ncclCommGetAsyncError(me.comm, &state));
      if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(state, ncclSuccess);
    int32_t x = 1, y = 0;
    EXPECT_EQ(ncclAllReduce(&x, &y, 1, ncclInt32, ncclSum, me.comm, nullptr), ncclInvalidUsage);
    EXPECT_TRUE(said("revoked")) << lastError();

    int excluded[] = {2};
    ncclComm_t shrunk = nullptr;
    NCCL_OK(ncclCommShrink(me.comm, excluded, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT));
    int n = 0, rank = -1;
    NCCL_OK(ncclCommCount(shrunk, &n));
    NCCL_OK(ncclCommUserRank(shrunk, &rank));
    EXPECT_EQ(n, 2);
    EXPECT_EQ(rank, me.rank);
    expectAllReduceRight(shrunk, me.rank, 2);
    NCCL_OK(ncclCommDestroy(shrunk));
  });
  unsetenv("WEFT_TIMEOUT_S");
}

TEST(NcclRevoke, FlagsAreChecked) {
  nccl_test::runRanks(Mode::kThreads, 1, [](Rank& me) {
    EXPECT_EQ(ncclCommRevoke(me.comm, 0x4), ncclInvalidArgument);
    EXPECT_TRUE(said("ncclCommRevoke: revokeFlags is 0x4; pass NCCL_REVOKE_DEFAULT")) << lastError();
    expectAllReduceRight(me.comm, 0, 1);  // a refused revoke revoked nothing
  });
  EXPECT_NE(ncclCommRevoke(nullptr, NCCL_REVOKE_DEFAULT), ncclSuccess);
}

// Ranks 0..2 have a communicator; rank 0 makes the grow id with ncclCommGetUniqueId and hands
// it to rank 3, which joins with comm NULL. The grown communicator has 4 ranks in order and
// reduces exactly; the old one keeps working.
TEST(NcclGrow, ThreeRanksGrowToFour) {
  ncclUniqueId initId;
  ASSERT_EQ(ncclGetUniqueId(&initId), ncclSuccess) << lastError();
  ncclUniqueId growId;
  std::atomic<bool> growIdReady{false};
  auto participant = [&](int r) {
    ncclComm_t comm = nullptr;
    if (r < 3) NCCL_OK(ncclCommInitRank(&comm, 3, initId, r));
    ncclComm_t grown = nullptr;
    if (r == 0) {
      NCCL_OK(ncclCommGetUniqueId(comm, &growId));
      growIdReady.store(true);
      NCCL_OK(ncclCommGrow(comm, 4, &growId, -1, &grown, nullptr));
    } else if (r < 3) {
      NCCL_OK(ncclCommGrow(comm, 4, nullptr, -1, &grown, nullptr));
    } else {
      while (!growIdReady.load()) std::this_thread::yield();
      NCCL_OK(ncclCommGrow(nullptr, 4, &growId, 3, &grown, nullptr));
    }
    ASSERT_NE(grown, nullptr);
    int n = 0, rank = -1;
    NCCL_OK(ncclCommCount(grown, &n));
    NCCL_OK(ncclCommUserRank(grown, &rank));
    EXPECT_EQ(n, 4);
    EXPECT_EQ(rank, r) << "old ranks keep their numbers; the new rank follows them";
    expectAllReduceRight(grown, r, 4);
    if (comm != nullptr) {
      expectAllReduceRight(comm, r, 3);
      NCCL_OK(ncclCommDestroy(comm));
    }
    NCCL_OK(ncclCommDestroy(grown));
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) threads.emplace_back(participant, r);
  for (auto& t : threads) t.join();
}

TEST(NcclGrow, ArgumentsAreChecked) {
  nccl_test::runRanks(Mode::kThreads, 2, [](Rank& me) {
    ncclUniqueId id;
    if (me.rank == 1) {
      EXPECT_NE(ncclCommGetUniqueId(me.comm, &id), ncclSuccess) << "only rank 0 makes a grow id";
      EXPECT_FALSE(lastError().empty());
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 3;
    ncclComm_t grown = nullptr;
    EXPECT_EQ(ncclCommGrow(me.comm, 3, nullptr, -1, &grown, &config), ncclInvalidArgument);
    EXPECT_TRUE(said("ncclCommGrow: config->blocking is 3")) << lastError();
  });
}

uint64_t memStat(ncclComm_t comm, ncclCommMemStat_t stat) {
  uint64_t value = 12345;
  EXPECT_EQ(ncclCommMemStats(comm, stat, &value), ncclSuccess) << lastError();
  return value;
}

// After an all-reduce the communicator holds shared-memory FIFOs (ncclStatGpuMemSuspend > 0);
// suspended it holds none, says so, and refuses calls that move data; resumed it reduces right.
TEST(NcclSuspend, SuspendResumeThenAllReduceAndMemStats) {
  Meeting suspended(3);
  nccl_test::runRanks(Mode::kThreads, 3, [&](Rank& me) {
    expectAllReduceRight(me.comm, me.rank, 3);
    const uint64_t held = memStat(me.comm, ncclStatGpuMemSuspend);
    EXPECT_GT(held, 0u) << "the all-reduce's shared-memory FIFOs are what a suspend releases";
    EXPECT_EQ(memStat(me.comm, ncclStatGpuMemSuspended), 0u);
    EXPECT_EQ(memStat(me.comm, ncclStatGpuMemPersist), 0u) << "a host communicator holds no GPU memory";
    EXPECT_EQ(memStat(me.comm, ncclStatGpuMemTotal), held);

    NCCL_OK(ncclCommSuspend(me.comm, NCCL_SUSPEND_MEM));
    EXPECT_EQ(memStat(me.comm, ncclStatGpuMemSuspended), 1u);
    EXPECT_EQ(memStat(me.comm, ncclStatGpuMemSuspend), 0u);
    int32_t x = 1, y = 0;
    EXPECT_EQ(ncclAllReduce(&x, &y, 1, ncclInt32, ncclSum, me.comm, nullptr), ncclInvalidUsage);
    EXPECT_TRUE(said("call weftCommResume")) << lastError();
    EXPECT_EQ(ncclCommSuspend(me.comm, NCCL_SUSPEND_MEM), ncclInvalidUsage) << "already suspended";
    suspended.meet();  // every rank saw the suspended state before any reconnects

    NCCL_OK(ncclCommResume(me.comm));
    EXPECT_EQ(memStat(me.comm, ncclStatGpuMemSuspended), 0u);
    expectAllReduceRight(me.comm, me.rank, 3);
    EXPECT_GT(memStat(me.comm, ncclStatGpuMemSuspend), 0u) << "the all-reduce made its FIFOs again";
  });
}

TEST(NcclSuspend, FlagsAreChecked) {
  nccl_test::runRanks(Mode::kThreads, 1, [](Rank& me) {
    EXPECT_EQ(ncclCommSuspend(me.comm, 0x2), ncclInvalidArgument);
    EXPECT_TRUE(said("ncclCommSuspend: flags is 0x2; pass 0 or NCCL_SUSPEND_MEM")) << lastError();
    EXPECT_EQ(memStat(me.comm, ncclStatGpuMemSuspended), 0u) << "a refused suspend suspended nothing";
    NCCL_OK(ncclCommSuspend(me.comm, 0));
    NCCL_OK(ncclCommResume(me.comm));
    expectAllReduceRight(me.comm, 0, 1);
  });
}

}  // namespace
