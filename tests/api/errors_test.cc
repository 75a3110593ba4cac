// Errors a person meets: bad arguments (nothing runs, a message says what), time-outs that
// name the collective and the silent peers, aborts from another thread, and a rank killed in
// the middle of a collective.
#include <gtest/gtest.h>
#include <signal.h>
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

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Arguments, InvalidCallsReturnInvalidArgumentAndTouchNothing) {
  runRanks(Mode::kThreads, 1, [](Rank& r) {
    std::vector<float> a(8, 1.0f), b(8, 7.0f);
    const std::vector<float> before = b;
    EXPECT_EQ(weftAllReduce(nullptr, b.data(), 8, weftFloat32, weftSum, r.comm, nullptr), weftInvalidArgument);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "sendbuff is NULL")) << weftGetLastError(r.comm);
    EXPECT_EQ(weftAllReduce(a.data(), b.data(), 8, static_cast<weftDataType_t>(99), weftSum, r.comm, nullptr),
              weftInvalidArgument);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "datatype 99")) << weftGetLastError(r.comm);
    EXPECT_EQ(weftAllReduce(a.data(), b.data(), 8, weftFloat32, static_cast<weftRedOp_t>(17), r.comm, nullptr),
              weftInvalidArgument);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "op 17")) << weftGetLastError(r.comm);
    EXPECT_EQ(weftBroadcast(a.data(), b.data(), 8, weftFloat32, 3, r.comm, nullptr), weftInvalidArgument);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "root 3")) << weftGetLastError(r.comm);
    EXPECT_EQ(weftReduce(a.data(), b.data(), 8, weftFloat32, weftSum, -1, r.comm, nullptr), weftInvalidArgument);
    EXPECT_EQ(weftSend(a.data(), 8, weftFloat32, 5, r.comm, nullptr), weftInvalidArgument);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "peer 5")) << weftGetLastError(r.comm);
    EXPECT_EQ(weftRecv(nullptr, 8, weftFloat32, 0, r.comm, nullptr), weftInvalidArgument);
    int fakeStream = 0;
    EXPECT_EQ(weftAllReduce(a.data(), b.data(), 8, weftFloat32, weftSum, r.comm, &fakeStream), weftInvalidArgument);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "no GPU backend")) << weftGetLastError(r.comm);
    EXPECT_EQ(weftAllGather(a.data(), b.data(), SIZE_MAX / 2, weftFloat32, r.comm, nullptr), weftInvalidArgument);
    // Counts whose byte count passes int64 / 2, including those whose product with the element
    // size wraps around (SIZE_MAX / 4 + 1 floats: 2^64 bytes, 0 when wrapped).
    const size_t limitFloats = static_cast<size_t>(INT64_MAX) / 2 / sizeof(float);
    for (size_t count : {limitFloats + 1, SIZE_MAX / 4 + 1, SIZE_MAX / 4 + 2, SIZE_MAX}) {
      EXPECT_EQ(weftAllReduce(a.data(), b.data(), count, weftFloat32, weftSum, r.comm, nullptr), weftInvalidArgument)
          << count;
      EXPECT_TRUE(contains(weftGetLastError(r.comm), "is too large")) << weftGetLastError(r.comm);
    }
    EXPECT_EQ(b, before) << "a refused call wrote the receive buffer";
    // Refused calls inside a group are not recorded: the group then runs nothing.
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    EXPECT_EQ(weftAllReduce(nullptr, b.data(), 8, weftFloat32, weftSum, r.comm, nullptr), weftInvalidArgument);
    ASSERT_EQ(weftGroupEnd(), weftSuccess);
    EXPECT_EQ(b, before);
    // Zero elements with NULL buffers is fine.
    EXPECT_EQ(weftAllReduce(nullptr, nullptr, 0, weftFloat32, weftSum, r.comm, nullptr), weftSuccess);
    // The communicator is still usable after refused calls.
    EXPECT_EQ(weftAllReduce(a.data(), b.data(), 8, weftFloat32, weftSum, r.comm, nullptr), weftSuccess);
    EXPECT_EQ(b[0], 1.0f);
  });
}

// Every refused call's message starts "rank r: fn: " (or "fn: " before a rank is known), built in
// one place (src/core/call_context.cc) for collectives, sends, gather/scatter, split, premul-sum
// ops, registration and the init checks alike.
TEST(Arguments, MessagesStartWithRankAndFunction) {
  auto startsWith = [](const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; };
  runRanks(Mode::kThreads, 1, [&](Rank& r) {
    std::vector<float> a(8, 1.0f);
    EXPECT_EQ(weftAllReduce(nullptr, a.data(), 8, weftFloat32, weftSum, r.comm, nullptr), weftInvalidArgument);
    EXPECT_TRUE(startsWith(weftGetLastError(r.comm), "rank 0: weftAllReduce: sendbuff is NULL"))
        << weftGetLastError(r.comm);
    EXPECT_EQ(weftSend(a.data(), 8, weftFloat32, 5, r.comm, nullptr), weftInvalidArgument);
    EXPECT_TRUE(startsWith(weftGetLastError(r.comm), "rank 0: weftSend: peer 5 is not a rank"))
        << weftGetLastError(r.comm);
    EXPECT_EQ(weftGather(a.data(), a.data(), 8, weftFloat32, 1, r.comm, nullptr), weftInvalidArgument);
    EXPECT_TRUE(startsWith(weftGetLastError(r.comm), "rank 0: weftGather: root 1 is not a rank"))
        << weftGetLastError(r.comm);
    weftComm_t child = nullptr;
    EXPECT_EQ(weftCommSplit(r.comm, -5, 0, &child, nullptr), weftInvalidArgument);
    EXPECT_TRUE(startsWith(weftGetLastError(r.comm), "rank 0: weftCommSplit: color -5 is negative"))
        << weftGetLastError(r.comm);
    weftRedOp_t op = weftSum;
    EXPECT_EQ(weftRedOpCreatePreMulSum(&op, nullptr, weftFloat32, weftScalarHostImmediate, r.comm),
              weftInvalidArgument);
    EXPECT_TRUE(startsWith(weftGetLastError(r.comm), "rank 0: weftRedOpCreatePreMulSum: scalar is NULL"))
        << weftGetLastError(r.comm);
    void* handle = nullptr;
    EXPECT_EQ(weftCommRegister(r.comm, nullptr, 8, &handle), weftInvalidArgument);
    EXPECT_TRUE(startsWith(weftGetLastError(r.comm), "rank 0: weftCommRegister: buff is NULL"))
        << weftGetLastError(r.comm);
  });
  EXPECT_EQ(weftBroadcast(nullptr, nullptr, 0, weftFloat32, 0, nullptr, nullptr), weftInvalidArgument);
  EXPECT_TRUE(startsWith(weftGetLastError(nullptr), "weftBroadcast: comm is NULL")) << weftGetLastError(nullptr);
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  weftComm_t comm = nullptr;
  EXPECT_EQ(weftCommInitRank(&comm, 2, id, 2), weftInvalidArgument);
  EXPECT_TRUE(startsWith(weftGetLastError(nullptr), "weftCommInitRank: rank 2 is outside 0..1"))
      << weftGetLastError(nullptr);
}

TEST(Arguments, InitAndQueries) {
  weftComm_t comm = nullptr;
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  EXPECT_EQ(weftCommInitRank(&comm, 0, id, 0), weftInvalidArgument);
  EXPECT_TRUE(contains(weftGetLastError(nullptr), "nranks")) << weftGetLastError(nullptr);
  EXPECT_EQ(weftCommInitRank(&comm, 2, id, 2), weftInvalidArgument);
  EXPECT_EQ(weftCommInitRank(nullptr, 1, id, 0), weftInvalidArgument);
  weftConfig_t bad;
  std::memset(&bad, 0, sizeof(bad));
  EXPECT_EQ(weftCommInitRankConfig(&comm, 1, id, 0, &bad), weftInvalidArgument);
  EXPECT_TRUE(contains(weftGetLastError(nullptr), "WEFT_CONFIG_INITIALIZER"));
  EXPECT_EQ(weftAllReduce(nullptr, nullptr, 0, weftFloat32, weftSum, nullptr, nullptr), weftInvalidArgument);
  EXPECT_TRUE(contains(weftGetLastError(nullptr), "comm is NULL"));
  EXPECT_EQ(weftGroupEnd(), weftInvalidUsage);
  int version = 0;
  EXPECT_EQ(weftGetVersion(&version), weftSuccess);
  EXPECT_EQ(version, WEFT_VERSION_CODE);
  EXPECT_STREQ(weftGetErrorString(weftTimeout), "timeout");
  EXPECT_EQ(weftGetVersion(nullptr), weftInvalidArgument);
}

TEST(Errors, TimeoutNamesCollectiveAndSilentPeerThenCommunicatorRefuses) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  weftComm_t comms[2] = {nullptr, nullptr};
  std::thread t1([&] {
    weftConfig_t cfg = WEFT_CONFIG_INITIALIZER;
    cfg.timeoutS = 2;
    ASSERT_EQ(weftCommInitRankConfig(&comms[1], 2, id, 1, &cfg), weftSuccess);
  });
  weftConfig_t cfg = WEFT_CONFIG_INITIALIZER;
  cfg.timeoutS = 2;
  ASSERT_EQ(weftCommInitRankConfig(&comms[0], 2, id, 0, &cfg), weftSuccess) << weftGetLastError(nullptr);
  t1.join();
  // Rank 1 never calls the collective.
  float x = 1, y = 0;
  auto start = Clock::now();
  weftResult_t r = weftAllReduce(&x, &y, 1, weftFloat32, weftSum, comms[0], nullptr);
  double took = secondsSince(start);
  EXPECT_EQ(r, weftTimeout);
  std::string message = weftGetLastError(comms[0]);
  EXPECT_TRUE(contains(message, "allreduce #1")) << message;
  EXPECT_TRUE(contains(message, "rank 1")) << message;
  EXPECT_GE(took, 1.5);
  EXPECT_LT(took, 10.0) << "a 2 s time-out took " << took << " s";
  weftResult_t async = weftSuccess;
  EXPECT_EQ(weftCommGetAsyncError(comms[0], &async), weftSuccess);
  EXPECT_EQ(async, weftTimeout);
  EXPECT_EQ(weftAllReduce(&x, &y, 1, weftFloat32, weftSum, comms[0], nullptr), weftInvalidUsage);
  EXPECT_TRUE(contains(weftGetLastError(comms[0]), "error state")) << weftGetLastError(comms[0]);
  // Rank 1 now calls: rank 0 told it about the failure, so it fails at once, not at its deadline.
  start = Clock::now();
  EXPECT_NE(weftAllReduce(&x, &y, 1, weftFloat32, weftSum, comms[1], nullptr), weftSuccess);
  EXPECT_LT(secondsSince(start), 1.9) << weftGetLastError(comms[1]);
  weftCommDestroy(comms[0]);
  weftCommDestroy(comms[1]);
  // A new communicator works in the same process afterwards.
  runRanks(Mode::kThreads, 2, [](Rank& rr) {
    int v = 1, s = 0;
    EXPECT_EQ(weftAllReduce(&v, &s, 1, weftInt32, weftSum, rr.comm, nullptr), weftSuccess);
    EXPECT_EQ(s, 2);
  });
}

TEST(Errors, AbortFromAnotherThreadUnblocksACollective) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  weftComm_t comms[2] = {nullptr, nullptr};
  std::thread t1([&] { ASSERT_EQ(weftCommInitRank(&comms[1], 2, id, 1), weftSuccess); });
  ASSERT_EQ(weftCommInitRank(&comms[0], 2, id, 0), weftSuccess);
  t1.join();
  std::atomic<double> returnedAfterAbort{-1};
  std::atomic<bool> aborted{false};
  Clock::time_point abortTime;
  std::thread worker([&] {
    std::vector<float> x(1 << 20, 1.0f), y(1 << 20);
    weftResult_t r = weftAllReduce(x.data(), y.data(), x.size(), weftFloat32, weftSum, comms[0], nullptr);
    EXPECT_NE(r, weftSuccess);
    while (!aborted.load()) std::this_thread::yield();
    returnedAfterAbort = secondsSince(abortTime);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  abortTime = Clock::now();
  aborted = true;
  EXPECT_EQ(weftCommAbort(comms[0]), weftSuccess);
  double abortTook = secondsSince(abortTime);
  worker.join();
  EXPECT_LT(abortTook, 5.0) << "weftCommAbort took " << abortTook << " s";
  EXPECT_LT(returnedAfterAbort.load(), 5.0);
  RecordProperty("abort_seconds", std::to_string(abortTook));
  weftCommDestroy(comms[1]);
}

// Four ranks as processes run all-reduces; the test kills rank 2 in the middle. The three
// survivors must fail with an error that names rank 2, well within WEFT_TIMEOUT_S + 5 s.
TEST(Errors, KilledRankIsNamedBySurvivors) {
  const int n = 4, victim = 2, timeoutS = 20;
  setenv("WEFT_TIMEOUT_S", std::to_string(timeoutS).c_str(), 1);
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  int pipes[n][2];
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(pipe(pipes[r]), 0);
    std::fflush(stdout);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      weftComm_t comm = nullptr;
      if (weftCommInitRank(&comm, n, id, r) != weftSuccess) _exit(3);
      std::vector<float> x(4 << 20, 1.0f), y(4 << 20);
      char ready = 'r';
      if (write(pipes[r][1], &ready, 1) != 1) _exit(4);
      for (int i = 0; i < 100000; ++i) {
        if (weftAllReduce(x.data(), y.data(), x.size(), weftFloat32, weftSum, comm, nullptr) != weftSuccess) {
          std::string message = weftGetLastError(comm);
          if (write(pipes[r][1], message.c_str(), message.size()) < 0) _exit(5);
          _exit(contains(message, "rank 2") ? 0 : 1);
        }
      }
      _exit(2);  // never failed: the test expects a failure
    }
    close(pipes[r][1]);
    pids.push_back(pid);
  }
  for (int r = 0; r < n; ++r) {
    char c = 0;
    ASSERT_EQ(read(pipes[r][0], &c, 1), 1) << "rank " << r << " did not start";
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto killedAt = Clock::now();
  kill(pids[victim], SIGKILL);
  for (int r = 0; r < n; ++r) {
    int status = 0;
    // Bound the wait: a survivor that hangs is killed and reported.
    auto deadline = Clock::now() + std::chrono::seconds(timeoutS + 5);
    while (waitpid(pids[r], &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        kill(pids[r], SIGKILL);
        waitpid(pids[r], &status, 0);
        ADD_FAILURE() << "rank " << r << " hung after rank " << victim << " was killed";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (r == victim) continue;
    double took = secondsSince(killedAt);
    char message[1024] = {0};
    ssize_t got = read(pipes[r][0], message, sizeof(message) - 1);
    (void)got;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "rank " << r << " exit " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << ": " << message;
    EXPECT_LT(took, timeoutS + 5.0);
    std::printf("rank %d failed %.2f s after the kill: %s\n", r, took, message);
  }
  unsetenv("WEFT_TIMEOUT_S");
}

}  // namespace
}  // namespace weft_test
