// weftCommSuspend / weftCommResume / weftCommMemStats: after suspend the communicator's FIFO
// segments are unmapped (none of its /dev/shm/weft-* mappings is left in the process) and it
// reports holding no bytes; calls that move data are refused with a sentence; after resume they
// reconnect and give the right results. Ranks as threads and as processes, over shared memory and
// over TCP (whose connections stay through a suspend).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

bool contains(const std::string& text, const std::string& words) { return text.find(words) != std::string::npos; }

// Mappings of shared-memory FIFO segments (transports/shm: "/weft-<comm>-<from>-<to>-<lane>") in
// this process, unlinked or not.
int fifoMappings() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) n += contains(line, "/dev/shm/weft-") && !contains(line, "/dev/shm/weft-rec-") ? 1 : 0;  // FIFOs, not flight recorders
  return n;
}

uint64_t stat(weftComm_t comm, weftCommMemStat_t which) {
  uint64_t v = ~0ull;
  EXPECT_EQ(weftCommMemStats(comm, which, &v), weftSuccess) << weftGetLastError(comm);
  return v;
}

// An all-reduce of 300000 known floats (more than one FIFO slot) and a send/recv around the ring.
void runCalls(const Rank& r) {
  const size_t n = 300000;
  std::vector<float> mine(n), sum(n, -1);
  for (size_t i = 0; i < n; ++i) mine[i] = static_cast<float>(r.rank * 3 + static_cast<int>(i % 101));
  ASSERT_EQ(weftAllReduce(mine.data(), sum.data(), n, weftFloat32, weftSum, r.comm, nullptr), weftSuccess)
      << weftGetLastError(r.comm);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(sum[i], static_cast<float>(3 * r.nranks * (r.nranks - 1) / 2 + r.nranks * static_cast<int>(i % 101)))
        << i;
  }
  const int next = (r.rank + 1) % r.nranks, prev = (r.rank + r.nranks - 1) % r.nranks;
  int32_t out = r.rank, in = -1;
  ASSERT_EQ(weftGroupStart(), weftSuccess);
  ASSERT_EQ(weftSend(&out, 1, weftInt32, next, r.comm, nullptr), weftSuccess);
  ASSERT_EQ(weftRecv(&in, 1, weftInt32, prev, r.comm, nullptr), weftSuccess);
  ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(r.comm);
  EXPECT_EQ(in, prev);
}

// Ranks that are threads of this process wait here for each other (a communicator barrier cannot
// run while it is suspended): until all have looked at the mappings, none resumes and reconnects.
std::atomic<int> arrived{0};
void threadsMeet(Mode mode, int n) {
  if (mode != Mode::kThreads) return;
  arrived.fetch_add(1);
  while (arrived.load() < n) std::this_thread::yield();
}

struct Case {
  Mode mode;
  bool sockets;  // WEFT_SHM_DISABLE=1: every connection is TCP over loopback, and stays
};

class Suspend : public ::testing::TestWithParam<Case> {};

TEST_P(Suspend, ReleasesTheFifosAndResumeReconnects) {
  arrived.store(0);
  const Mode mode = GetParam().mode;
  const bool shm = !GetParam().sockets;
  if (!shm) setenv("WEFT_SHM_DISABLE", "1", 1);
  runRanks(mode, 3, [mode, shm](Rank& r) {
    runCalls(r);
    EXPECT_EQ(fifoMappings() > 0, shm);
    if (shm) EXPECT_GT(stat(r.comm, weftStatMemHeld), 0u);
    EXPECT_EQ(stat(r.comm, weftStatMemSuspended), 0u);

    ASSERT_EQ(weftCommSuspend(r.comm, WEFT_SUSPEND_MEM), weftSuccess) << weftGetLastError(r.comm);
    // Every rank released before any returns: no FIFO of the communicator is mapped in this process.
    EXPECT_EQ(fifoMappings(), 0);
    EXPECT_EQ(stat(r.comm, weftStatMemHeld), 0u);
    EXPECT_EQ(stat(r.comm, weftStatMemSuspended), 1u);
    int32_t x = 1, y = 0;
    EXPECT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftInvalidUsage);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "suspended (weftCommSuspend); call weftCommResume"))
        << weftGetLastError(r.comm);
    EXPECT_EQ(weftSend(&x, 1, weftInt32, (r.rank + 1) % r.nranks, r.comm, nullptr), weftInvalidUsage);
    EXPECT_EQ(weftCommSuspend(r.comm, 0), weftInvalidUsage) << "already suspended";
    threadsMeet(mode, r.nranks);

    ASSERT_EQ(weftCommResume(r.comm), weftSuccess) << weftGetLastError(r.comm);
    EXPECT_EQ(stat(r.comm, weftStatMemSuspended), 0u);
    runCalls(r);
    EXPECT_EQ(fifoMappings() > 0, shm);
    if (shm) EXPECT_GT(stat(r.comm, weftStatMemHeld), 0u);
    // A receive from any source reconnects too.
    if (r.rank == 1) ASSERT_EQ(weftSend(&x, 1, weftInt32, 0, r.comm, nullptr), weftSuccess);
    if (r.rank == 0) {
      int source = -1;
      ASSERT_EQ(weftRecvAny(&y, 1, weftInt32, &source, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
      EXPECT_EQ(source, 1);
      EXPECT_EQ(y, 1);
    }
    // A second round.
    ASSERT_EQ(weftCommSuspend(r.comm, 0), weftSuccess) << weftGetLastError(r.comm);
    ASSERT_EQ(weftCommResume(r.comm), weftSuccess) << weftGetLastError(r.comm);
    runCalls(r);
  });
  unsetenv("WEFT_SHM_DISABLE");
}

INSTANTIATE_TEST_SUITE_P(Modes, Suspend,
                         ::testing::Values(Case{Mode::kThreads, false}, Case{Mode::kProcesses, false},
                                           Case{Mode::kThreads, true}, Case{Mode::kProcesses, true}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(modeName(i.param.mode)) + (i.param.sockets ? "_sockets" : "");
                         });

TEST(SuspendArguments, AreChecked) {
  runRanks(Mode::kThreads, 2, [](Rank& r) {
    const std::string me = "rank " + std::to_string(r.rank) + ": ";
    EXPECT_EQ(weftCommSuspend(r.comm, 2), weftInvalidArgument);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), me + "weftCommSuspend: flags is 2")) << weftGetLastError(r.comm);
    EXPECT_EQ(weftCommResume(r.comm), weftInvalidUsage);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), me + "weftCommResume: the communicator is not suspended"))
        << weftGetLastError(r.comm);
    uint64_t v = 0;
    EXPECT_EQ(weftCommMemStats(r.comm, static_cast<weftCommMemStat_t>(7), &v), weftInvalidArgument);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "stat is 7")) << weftGetLastError(r.comm);
    EXPECT_EQ(weftCommMemStats(r.comm, weftStatMemHeld, nullptr), weftInvalidArgument);
    EXPECT_EQ(weftCommMemStats(nullptr, weftStatMemHeld, &v), weftInvalidArgument);
    EXPECT_EQ(weftCommSuspend(nullptr, 0), weftInvalidArgument);
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    int32_t x = 1, y = 0;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftSuccess);
    EXPECT_EQ(weftCommSuspend(r.comm, 0), weftInvalidUsage);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "call weftGroupEnd before weftCommSuspend"))
        << weftGetLastError(r.comm);
    ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(r.comm);
    EXPECT_EQ(y, 2);
  });
}

}  // namespace
}  // namespace weft_test
