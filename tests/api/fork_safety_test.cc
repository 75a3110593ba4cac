// Issue 13, item 5: a process that forks its ranks while Weft's own threads run (the root
// listener of weftGetUniqueId, the thread of a non-blocking init) must not hand the children a
// lock or a static initialisation held by one of those threads. Each parameter-warning path
// runs in a fresh process (this binary re-executed), so that every once-per-process
// initialisation happens for the first time while the fork happens: that process makes an id,
// starts its own rank's non-blocking init and forks the other ranks at once; every rank must
// finish init and an all-reduce. A deadlock fails the run at its time-out.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace {

constexpr int kRanks = 3;
constexpr const char* kJobVar = "WEFT_TEST_FORK_JOB";

// A rank forked by the job: blocking init, one all-reduce; the exit code says how it went.
int forkedRank(const weftUniqueId& id, int rank) {
  weftComm_t comm = nullptr;
  if (weftCommInitRank(&comm, kRanks, id, rank) != weftSuccess) return 2;
  float x = 1.0f;
  weftResult_t r = weftAllReduce(&x, &x, 1, weftFloat32, weftSum, comm, nullptr);
  weftCommDestroy(comm);
  return r == weftSuccess && x == kRanks ? 0 : 3;
}

// The job (run in the re-executed binary): rank 0 initialises without blocking while ranks
// 1..n-1 are forked from it. Returns 0 when every rank finished.
int runJob() {
  weftUniqueId id;
  if (weftGetUniqueId(&id) != weftSuccess) return 10;
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.blocking = 0;
  weftComm_t comm = nullptr;
  if (weftCommInitRankConfig(&comm, kRanks, id, 0, &config) != weftInProgress) return 11;
  std::vector<pid_t> pids;
  for (int r = 1; r < kRanks; ++r) {
    pid_t pid = fork();
    if (pid == 0) _exit(forkedRank(id, r));
    pids.push_back(pid);
  }
  weftResult_t state = weftInProgress;
  while (state == weftInProgress) {
    if (weftCommGetAsyncError(comm, &state) != weftSuccess) return 12;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (state != weftSuccess) return 13;
  float x = 1.0f;
  int result = weftAllReduce(&x, &x, 1, weftFloat32, weftSum, comm, nullptr) == weftSuccess && x == kRanks ? 0 : 14;
  weftCommDestroy(comm);
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) result = 20 + (WIFEXITED(status) ? WEXITSTATUS(status) : 9);
  }
  return result;
}

// Entry of the re-executed binary; skipped in an ordinary run.
TEST(ForkSafetyJob, Run) {
  if (std::getenv(kJobVar) == nullptr) GTEST_SKIP() << "runs only as the job of ForkSafety tests";
  std::fflush(stdout);
  _exit(runJob());
}

// Runs the job in a fresh process with `name`=`value` set; returns its exit code (or a
// description of how it was stopped).
std::string runJobWith(const char* name, const char* value, int timeoutS) {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // the job and its ranks: one group, killed together on a hang
    setenv(kJobVar, "1", 1);
    setenv(name, value, 1);
    setenv("WEFT_TIMEOUT_S", std::getenv("WEFT_TIMEOUT_S") ? std::getenv("WEFT_TIMEOUT_S") : "60", 0);
    execl("/proc/self/exe", "test_api", "--gtest_filter=ForkSafetyJob.Run", static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutS);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      return "hung (killed after " + std::to_string(timeoutS) + " s)";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "exit " + std::to_string(WEXITSTATUS(status));
}

// Every WEFT_* value that makes Weft warn: not a number, out of range, not a boolean, not a
// log level, not a Weft variable.
class ForkSafety : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(ForkSafety, RanksForkedWhileWeftThreadsRunFinish) {
  const auto& [name, value] = GetParam();
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(runJobWith(name, value, 90), "exit 0") << name << "=" << value << ", round " << round;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryWarningPath, ForkSafety,
    ::testing::Values(std::make_pair("WEFT_TIMEOUT_S", "ten"), std::make_pair("WEFT_NSLOTS", "0"),
                      std::make_pair("WEFT_NSLOTS", "many"), std::make_pair("WEFT_BUFFSIZE", "1"),
                      std::make_pair("WEFT_MIN_NCHANNELS", "1000"), std::make_pair("WEFT_MAX_NCHANNELS", "0"),
                      std::make_pair("WEFT_TREE_MAX_BYTES", "-5"), std::make_pair("WEFT_DOUBLING_MAX_BYTES", "-1"),
                      std::make_pair("WEFT_EMULATED_DEVICES", "99"), std::make_pair("WEFT_SHM_DISABLE", "maybe"),
                      std::make_pair("WEFT_SINGLE_COPY", "perhaps"), std::make_pair("WEFT_TIMEOUTT", "5"),
                      std::make_pair("WEFT_DEBUG", "garbage"), std::make_pair("WEFT_DEBUG", "INFO")));

}  // namespace
