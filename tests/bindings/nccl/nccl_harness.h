// Runs an NCCL-API test body on n ranks, as threads of this process or as forked processes, each
// rank with its own communicator from one ncclUniqueId. Uses nothing but nccl.h: these programs
// are what a framework would run, compiled against NVIDIA's header where it is installed.
#ifndef WEFT_TESTS_BINDINGS_NCCL_HARNESS_H_
#define WEFT_TESTS_BINDINGS_NCCL_HARNESS_H_

#include <gtest/gtest.h>
#include <nccl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

namespace nccl_test {

enum class Mode { kThreads, kProcesses };

struct Rank {
  int rank = 0;
  int nranks = 1;
  ncclComm_t comm = nullptr;
};

// Fails the current test (and returns from the enclosing void function) unless call succeeds.
#define NCCL_OK(call)                                                                                                 \
  do {                                                                                                                \
    ncclResult_t r_ = (call);                                                                                         \
    if (r_ != ncclSuccess) {                                                                                          \
      ADD_FAILURE() << #call << " -> " << r_ << " (" << ncclGetErrorString(r_) << "): " << ncclGetLastError(nullptr); \
      return;                                                                                                         \
    }                                                                                                                 \
  } while (0)

inline void runBody(int rank, int n, const ncclUniqueId& id, const std::function<void(Rank&)>& body) {
  Rank r;
  r.rank = rank;
  r.nranks = n;
  NCCL_OK(ncclCommInitRank(&r.comm, n, id, rank));
  body(r);
  EXPECT_EQ(ncclCommDestroy(r.comm), ncclSuccess);
}

// Processes: the parent makes the id (its listener serves the children) and waits for them;
// a child's failures reach the parent through its exit status.
inline void runRanks(Mode mode, int n, const std::function<void(Rank&)>& body, int timeoutS = 120) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
  if (mode == Mode::kThreads) {
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { runBody(r, n, id, body); });
    for (auto& t : threads) t.join();
    return;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      runBody(r, n, id, body);
      std::fflush(stdout);
      _exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    pids.push_back(pid);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutS);
  for (size_t r = 0; r < pids.size(); ++r) {
    int status = 0;
    while (waitpid(pids[r], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        for (pid_t p : pids) kill(p, SIGKILL);
        ADD_FAILURE() << "rank " << r << " still running after " << timeoutS << " s: killed";
        waitpid(pids[r], &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (WIFSIGNALED(status)) {
      ADD_FAILURE() << "rank " << r << " was killed by signal " << WTERMSIG(status);
    } else {
      EXPECT_EQ(WEXITSTATUS(status), 0) << "rank " << r << " failed (see its output above)";
    }
  }
}

}  // namespace nccl_test

#endif  // WEFT_TESTS_BINDINGS_NCCL_HARNESS_H_
