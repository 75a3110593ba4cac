// Elastic, end to end: a training-like loop over the public API that loses a worker and gains a
// new one. Four workers all-reduce (weftAvg) a gradient that depends on (step, worker) and apply
// it to a parameter vector each holds. At kKillStep one worker dies (a process: the agent, this
// test's parent, SIGKILLs it while the others wait for it in an all-reduce; a thread: it stops
// taking part and a failure detector tells the others). The survivors see their all-reduce fail,
// revoke the communicator, shrink the dead rank away and go on at three ranks; at kGrowStep a new
// worker joins through weftCommGetUniqueId / weftCommGrow (the id comes through a pipe), gets the
// step and the parameters by broadcast, and the four go on to kSteps. Every rank's final parameters
// must equal, bit for bit, a host run of the same steps with the same workers: gradients are
// small integers times the world size, so every average and update is exact in float.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

constexpr int kWorkers = 4;  // workers 0..3 start; worker 4 is the one that joins
constexpr int kJoiner = kWorkers;
constexpr int kKillStep = 5;  // the victim takes no part from this step on
constexpr int kGrowStep = 9;  // the joiner takes part from this step on
constexpr int kSteps = 13;
constexpr size_t kParams = 10007;  // not a multiple of any world size
constexpr double kDeadlineS = 20;  // any wait in this test; the whole run must end well before 30 s

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Polls pred every millisecond until it holds or seconds pass; returns whether it held.
bool waitUntil(const std::function<bool()>& pred, double seconds) {
  const auto start = Clock::now();
  while (!pred()) {
    if (secondsSince(start) > seconds) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A small integer in [-5, 5]: worker w's gradient at step s, element i, before scaling.
int64_t gradient(int step, int worker, size_t i) {
  return static_cast<int64_t>((static_cast<size_t>(step) * 7 + static_cast<size_t>(worker) * 13 + i * 3) % 11) - 5;
}

float initialParam(size_t i) { return static_cast<float>(i % 101); }

// The workers that take part in step s when `victim` dies at kKillStep and kJoiner joins at kGrowStep.
std::vector<int> workersAt(int step, int victim) {
  std::vector<int> w;
  for (int r = 0; r < kWorkers; ++r) {
    if (step < kKillStep || r != victim) w.push_back(r);
  }
  if (step >= kGrowStep) w.push_back(kJoiner);
  return w;
}

// The uninterrupted run of the same steps with the same workers, in exact integers on the host.
std::vector<float> referenceParams(int victim) {
  std::vector<int64_t> p(kParams);
  for (size_t i = 0; i < kParams; ++i) p[i] = static_cast<int64_t>(initialParam(i));
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<int> workers = workersAt(step, victim);
    for (size_t i = 0; i < kParams; ++i) {
      int64_t sum = 0;
      for (int w : workers) sum += gradient(step, w, i);
      p[i] -= sum;  // the average of (world size x gradient)
    }
  }
  return std::vector<float>(p.begin(), p.end());
}

// What the participants share: a pipe for the grow id, and (in memory that forked processes share)
// each worker's progress, the agent's word that the victim is dead, and who checked its result.
struct Control {
  std::atomic<int> stepsDone[kWorkers + 1];
  std::atomic<int> dead;
  std::atomic<int> checked[kWorkers + 1];
  int idPipe[2];
};

// One step of training on comm: all-reduce the gradient, apply the average. params change only
// when the all-reduce succeeds.
weftResult_t trainStep(weftComm_t comm, int step, int worker, std::vector<float>* params) {
  int n = 0;
  if (weftCommCount(comm, &n) != weftSuccess) return weftInvalidArgument;
  std::vector<float> grad(kParams), avg(kParams, NAN);
  for (size_t i = 0; i < kParams; ++i) grad[i] = static_cast<float>(n * gradient(step, worker, i));
  const weftResult_t res = weftAllReduce(grad.data(), avg.data(), kParams, weftFloat32, weftAvg, comm, nullptr);
  if (res != weftSuccess) return res;
  for (size_t i = 0; i < kParams; ++i) (*params)[i] -= avg[i];
  return weftSuccess;
}

// Steps [first, end) on comm, publishing progress; fails the test on the first step that fails.
void train(weftComm_t comm, int first, int end, int worker, std::vector<float>* params, Control* ctl) {
  for (int step = first; step < end; ++step) {
    ASSERT_EQ(trainStep(comm, step, worker, params), weftSuccess)
        << "worker " << worker << ", step " << step << ": " << weftGetLastError(comm);
    ctl->stepsDone[worker].store(step + 1);
  }
}

void expectRank(weftComm_t comm, int rank, int n) {
  int count = 0, me = -1;
  ASSERT_EQ(weftCommCount(comm, &count), weftSuccess);
  ASSERT_EQ(weftCommUserRank(comm, &me), weftSuccess);
  EXPECT_EQ(count, n);
  EXPECT_EQ(me, rank);
}

// The end of every worker's run: the step and parameters from rank 0, then the rest at 4 ranks and
// the check against the host's run.
void finish(weftComm_t grown, int worker, int victim, std::vector<float>* params, Control* ctl) {
  int32_t step = kGrowStep;
  ASSERT_EQ(weftBroadcast(&step, &step, 1, weftInt32, 0, grown, nullptr), weftSuccess) << weftGetLastError(grown);
  ASSERT_EQ(step, kGrowStep);
  ASSERT_EQ(weftBroadcast(params->data(), params->data(), kParams, weftFloat32, 0, grown, nullptr), weftSuccess)
      << weftGetLastError(grown);
  train(grown, step, kSteps, worker, params, ctl);
  if (::testing::Test::HasFatalFailure()) return;
  const std::vector<float> want = referenceParams(victim);
  const size_t wrong = countMismatches(weftFloat32, params->data(), want.data(), kParams);
  EXPECT_EQ(wrong, 0u) << "worker " << worker << ": " << wrong << " of " << kParams
                       << " parameters differ from the uninterrupted run";
  for (size_t i = 0; i < kParams && wrong; ++i) {
    if ((*params)[i] != want[i]) {
      ADD_FAILURE() << "first difference at " << i << ": " << (*params)[i] << ", want " << want[i];
      break;
    }
  }
  ctl->checked[worker].store(1);
}

// A survivor: 4 ranks until the victim dies, revoke and shrink, 3 ranks, grow, 4 ranks again.
void survivor(Mode mode, weftComm_t comm, int worker, int victim, Control* ctl) {
  std::vector<float> params(kParams);
  for (size_t i = 0; i < kParams; ++i) params[i] = initialParam(i);
  // Threads: the failure detector's word revokes the communicator from another thread, which
  // releases the all-reduce that waits for the victim. Processes: the all-reduce fails by itself.
  std::atomic<bool> stop{false};
  std::thread detector;
  if (mode == Mode::kThreads) {
    detector = std::thread([&] {
      if (waitUntil([&] { return stop.load() || ctl->dead.load() >= 0; }, kDeadlineS) && !stop.load()) {
        EXPECT_EQ(weftCommRevoke(comm, 0), weftSuccess) << weftGetLastError(comm);
      }
    });
  }
  auto joinDetector = [&] {
    stop.store(true);
    if (detector.joinable()) detector.join();
  };
  train(comm, 0, kKillStep, worker, &params, ctl);
  if (::testing::Test::HasFatalFailure()) return joinDetector();

  // The victim is gone: this step cannot complete.
  const auto start = Clock::now();
  EXPECT_NE(trainStep(comm, kKillStep, worker, &params), weftSuccess) << "worker " << worker;
  EXPECT_LT(secondsSince(start), 4.0) << "the failure was seen at once, not at the 5 s deadline";
  EXPECT_GE(ctl->dead.load(), 0) << "the step failed only once the victim was dead";
  joinDetector();
  // Revoke (again, where the detector did): nothing more runs on the old communicator.
  ASSERT_EQ(weftCommRevoke(comm, 0), weftSuccess) << weftGetLastError(comm);
  weftResult_t state = weftInProgress;
  ASSERT_TRUE(waitUntil([&] { return weftCommGetAsyncError(comm, &state) == weftSuccess && state != weftInProgress; },
                        kDeadlineS));
  int excluded[] = {victim};
  weftComm_t shrunk = nullptr;
  ASSERT_EQ(weftCommShrink(comm, excluded, 1, &shrunk, nullptr, WEFT_SHRINK_DEFAULT), weftSuccess)
      << "worker " << worker << ": " << weftGetLastError(comm);
  EXPECT_EQ(weftCommDestroy(comm), weftSuccess);
  const int rank = worker < victim ? worker : worker - 1;  // ranks keep their order
  expectRank(shrunk, rank, kWorkers - 1);
  if (::testing::Test::HasFatalFailure()) return (void)weftCommDestroy(shrunk);

  // The failed step again, without the victim.
  train(shrunk, kKillStep, kGrowStep, worker, &params, ctl);
  if (::testing::Test::HasFatalFailure()) return (void)weftCommDestroy(shrunk);

  weftComm_t grown = nullptr;
  if (rank == 0) {
    weftUniqueId id;
    ASSERT_EQ(weftCommGetUniqueId(shrunk, &id), weftSuccess) << weftGetLastError(shrunk);
    ASSERT_EQ(write(ctl->idPipe[1], &id, sizeof(id)), static_cast<ssize_t>(sizeof(id)));
    ASSERT_EQ(weftCommGrow(shrunk, kWorkers, &id, -1, &grown, nullptr), weftSuccess) << weftGetLastError(shrunk);
  } else {
    ASSERT_EQ(weftCommGrow(shrunk, kWorkers, nullptr, -1, &grown, nullptr), weftSuccess) << weftGetLastError(shrunk);
  }
  EXPECT_EQ(weftCommDestroy(shrunk), weftSuccess);
  expectRank(grown, rank, kWorkers);
  if (!::testing::Test::HasFatalFailure()) finish(grown, worker, victim, &params, ctl);
  EXPECT_EQ(weftCommDestroy(grown), weftSuccess);
}

// The victim: takes part until kKillStep, then waits for the agent to kill it (a process) or to
// declare it dead (a thread, which then stops taking part).
void victimRun(Mode mode, weftComm_t comm, int worker, Control* ctl) {
  std::vector<float> params(kParams);
  for (size_t i = 0; i < kParams; ++i) params[i] = initialParam(i);
  train(comm, 0, kKillStep, worker, &params, ctl);
  if (mode == Mode::kProcesses) {
    std::this_thread::sleep_for(std::chrono::seconds(static_cast<int>(kDeadlineS)));
    ADD_FAILURE() << "never killed";
    return;
  }
  EXPECT_TRUE(waitUntil([&] { return ctl->dead.load() == worker; }, kDeadlineS)) << "never declared dead";
}

// The new worker: waits for the id, joins as rank kWorkers - 1 + 1, gets the state, trains.
void joinerRun(int victim, Control* ctl) {
  weftUniqueId id;
  size_t got = 0;
  const auto start = Clock::now();
  while (got < sizeof(id)) {
    pollfd pfd{ctl->idPipe[0], POLLIN, 0};
    const int left = static_cast<int>((kDeadlineS - secondsSince(start)) * 1000);
    ASSERT_GT(left, 0) << "the grow id never came";
    if (poll(&pfd, 1, left) <= 0) continue;
    const ssize_t n = read(ctl->idPipe[0], reinterpret_cast<char*>(&id) + got, sizeof(id) - got);
    ASSERT_GT(n, 0) << "the id pipe closed before the id came";
    got += static_cast<size_t>(n);
  }
  weftComm_t grown = nullptr;
  ASSERT_EQ(weftCommGrow(nullptr, kWorkers, &id, kWorkers - 1, &grown, nullptr), weftSuccess)
      << weftGetLastError(nullptr);
  expectRank(grown, kWorkers - 1, kWorkers);
  std::vector<float> params(kParams, NAN);  // all from the broadcast
  if (!::testing::Test::HasFatalFailure()) finish(grown, kJoiner, victim, &params, ctl);
  EXPECT_EQ(weftCommDestroy(grown), weftSuccess);
}

// The agent's part, the same for threads and processes: once every survivor has finished the steps
// before kKillStep (and so waits for the victim in the next), kill the victim, then start the joiner.
void killWhenOthersWait(int victim, Control* ctl, const std::function<void()>& kill) {
  ASSERT_TRUE(waitUntil(
      [&] {
        for (int w = 0; w < kWorkers; ++w) {
          if (ctl->stepsDone[w].load() < kKillStep) return false;
        }
        return true;
      },
      kDeadlineS))
      << "the workers never reached step " << kKillStep;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the survivors are in the all-reduce
  ctl->dead.store(victim);
  kill();
}

void runThreads(int victim, Control* ctl) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::vector<weftComm_t> comms(kWorkers, nullptr);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      ASSERT_EQ(weftCommInitRank(&comms[w], kWorkers, id, w), weftSuccess) << weftGetLastError(nullptr);
      if (w == victim) {
        victimRun(Mode::kThreads, comms[w], w, ctl);
      } else {
        survivor(Mode::kThreads, comms[w], w, victim, ctl);
      }
    });
  }
  killWhenOthersWait(victim, ctl, [] {});
  threads.emplace_back([&] { joinerRun(victim, ctl); });
  for (auto& t : threads) t.join();
  // A dead rank's communicator: what a process would leave behind, freed once the others are done.
  if (comms[victim]) {
    EXPECT_EQ(weftCommDestroy(comms[victim]), weftSuccess);
  }
}

// Forks a process that runs body and exits with its result (alarm: a hung child ends itself).
pid_t spawn(const std::function<void()>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(static_cast<unsigned>(kDeadlineS) + 5);
    body();
    std::fflush(stdout);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  return pid;
}

void runProcesses(int victim, Control* ctl) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::vector<pid_t> pids;
  for (int w = 0; w < kWorkers; ++w) {
    pids.push_back(spawn([&, w] {
      weftComm_t comm = nullptr;
      ASSERT_EQ(weftCommInitRank(&comm, kWorkers, id, w), weftSuccess) << weftGetLastError(nullptr);
      if (w == victim) {
        victimRun(Mode::kProcesses, comm, w, ctl);
        _exit(2);  // not reached: the agent kills this process while it waits
      }
      survivor(Mode::kProcesses, comm, w, victim, ctl);
    }));
    ASSERT_GT(pids.back(), 0) << "fork failed";
  }
  killWhenOthersWait(victim, ctl, [&] { kill(pids[victim], SIGKILL); });
  int status = 0;
  ASSERT_EQ(waitpid(pids[victim], &status, 0), pids[victim]);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the victim was to die of SIGKILL";
  // The replacement, started once the victim is known dead, as an elastic agent would.
  pids.push_back(spawn([&] { joinerRun(victim, ctl); }));
  ASSERT_GT(pids.back(), 0) << "fork failed";
  const auto start = Clock::now();
  for (size_t p = 0; p < pids.size(); ++p) {
    if (static_cast<int>(p) == victim) continue;
    const int worker = static_cast<int>(p);
    while (waitpid(pids[p], &status, WNOHANG) == 0) {
      if (secondsSince(start) > kDeadlineS + 5) {
        for (size_t q = p; q < pids.size(); ++q) kill(pids[q], SIGKILL), waitpid(pids[q], nullptr, 0);
        FAIL() << "worker " << worker << " still running after " << kDeadlineS + 5 << " s: killed";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "worker " << worker << " failed (output above)";
  }
}

struct Case {
  Mode mode;
  int victim;
};

class Elastic : public ::testing::TestWithParam<Case> {};

TEST_P(Elastic, LoseAWorkerShrinkGrowAndMatchTheUninterruptedRun) {
  const Case c = GetParam();
  // Nothing waits long: a lost rank that only a deadline could reveal fails the test in 5 s.
  setenv("WEFT_TIMEOUT_S", "5", 1);
  void* mem = mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  Control* ctl = new (mem) Control;
  for (int w = 0; w <= kWorkers; ++w) ctl->stepsDone[w].store(0), ctl->checked[w].store(0);
  ctl->dead.store(-1);
  ASSERT_EQ(pipe(ctl->idPipe), 0);
  const auto start = Clock::now();
  if (c.mode == Mode::kThreads) {
    runThreads(c.victim, ctl);
  } else {
    runProcesses(c.victim, ctl);
  }
  EXPECT_LT(secondsSince(start), 30.0);
  // Every worker that ends the job compared its parameters (a rank that skipped it fails here).
  for (int w = 0; w <= kWorkers; ++w) EXPECT_EQ(ctl->checked[w].load(), w == c.victim ? 0 : 1) << "worker " << w;
  close(ctl->idPipe[0]);
  close(ctl->idPipe[1]);
  ctl->~Control();
  munmap(mem, sizeof(Control));
  unsetenv("WEFT_TIMEOUT_S");
}

// The host model itself: who took part moves the result (losing worker 2 and losing worker 0 give
// different parameters), and the workers of each phase are the ones the scenario runs.
TEST(ElasticReference, DependsOnWhoTookPart) {
  EXPECT_NE(referenceParams(2), referenceParams(0));
  EXPECT_EQ(workersAt(kKillStep - 1, 2), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(workersAt(kKillStep, 2), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(workersAt(kGrowStep, 2), (std::vector<int>{0, 1, 3, 4}));
}

INSTANTIATE_TEST_SUITE_P(Runs, Elastic,
                         ::testing::Values(Case{Mode::kThreads, 2}, Case{Mode::kProcesses, 2}, Case{Mode::kThreads, 0},
                                           Case{Mode::kProcesses, 0}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(modeName(i.param.mode)) + "_kill" + std::to_string(i.param.victim);
                         });

}  // namespace
}  // namespace weft_test
