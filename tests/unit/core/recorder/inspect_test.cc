// weft-inspect (tools/weft_inspect.cc) on live jobs: 4 ranks as processes make 5 all-reduces,
// then one rank stops (SIGSTOP), spins in its own code, or makes another call than the others;
// weft-inspect, run as a person would, must name that rank and the call the others wait in. The
// dump signal writes every rank's recorder into WEFT_RECORDER_DIR, and `weft-inspect DIR` reads
// them back. The netns scenario `inspect` (tests/netns) covers two hosts, one killed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/recorder.h"
#include "json_value.h"
#include "weft/weft.h"

namespace weft_test {
namespace {

using weft::tools::JsonValue;

constexpr int kRanks = 4;
constexpr int kCount = 1024;

bool contains(const std::string& text, const std::string& words) { return text.find(words) != std::string::npos; }

// What a rank does after its five all-reduces; `go` is a flag the test raises when it may go on.
using Act = std::function<void(int rank, weftComm_t comm, const std::atomic<int>* go)>;

// 4 rank processes, each: init, 5 all-reduces, "ready", then `act`, then exit. The parent owns
// them: it stops, signals and kills them, and runs weft-inspect meanwhile.
class Job {
 public:
  Job(const Act& act, const std::vector<std::string>& env = {}) {
    void* m = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(m, MAP_FAILED);
    shared_ = new (m) Shared();
    weftUniqueId id;
    EXPECT_EQ(weftGetUniqueId(&id), weftSuccess);
    std::fflush(stdout);
    std::fflush(stderr);
    for (int r = 0; r < kRanks; ++r) {
      const pid_t pid = fork();
      if (pid == 0) {
        for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
        _exit(runRank(r, id, act));
      }
      EXPECT_GT(pid, 0) << "fork failed";
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~Job() {
    for (pid_t pid : pids_) {
      if (pid > 0) kill(pid, SIGKILL), waitpid(pid, nullptr, 0);  // -1: joined (and kill(-1) hits everything)
    }
    weft::core::sweepRecorderSegments();  // the killed ranks' segments
    munmap(shared_, sizeof(Shared));
  }
  // True once every rank made its 5 all-reduces (within 60 s).
  bool waitReady() const {
    for (int i = 0; i < 6000 && shared_->ready.load() < kRanks; ++i) usleep(10000);
    return shared_->ready.load() == kRanks;
  }
  // True once `n` ranks reached the end of their act (within 60 s).
  bool waitActed(int n) const {
    for (int i = 0; i < 6000 && shared_->acted.load() < n; ++i) usleep(10000);
    return shared_->acted.load() >= n;
  }
  void go() { shared_->go.store(1); }
  pid_t pid(int rank) const { return pids_[static_cast<size_t>(rank)]; }
  // Waits for every rank to exit; true when each exited 0.
  bool join() {
    bool ok = true;
    for (pid_t& pid : pids_) {
      int status = 0;
      ok = waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok;
      pid = -1;
    }
    return ok;
  }

 private:
  struct Shared {
    std::atomic<int> ready{0};
    std::atomic<int> acted{0};
    std::atomic<int> go{0};
  };
  int runRank(int rank, const weftUniqueId& id, const Act& act) {
    weftComm_t comm = nullptr;
    if (weftCommInitRank(&comm, kRanks, id, rank) != weftSuccess) return 2;
    std::vector<float> in(kCount, 1.0f), out(kCount);
    for (int i = 0; i < 5; ++i) {
      if (weftAllReduce(in.data(), out.data(), kCount, weftFloat32, weftSum, comm, nullptr) != weftSuccess) return 3;
    }
    shared_->ready.fetch_add(1);
    act(rank, comm, &shared_->go);
    shared_->acted.fetch_add(1);
    while (shared_->go.load() == 0) usleep(1000);
    weftCommDestroy(comm);
    return 0;
  }

  Shared* shared_ = nullptr;
  std::vector<pid_t> pids_;
};

// Runs weft-inspect with `args`; its standard output.
std::string inspect(const std::string& args) {
  const std::string command = std::string(WEFT_INSPECT_BIN) + " " + args + " 2>&1";
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return "";
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// The findings and rank lines weft-inspect --json gives for the communicator of the job's ranks.
struct Seen {
  bool found = false;
  std::vector<int> stragglers;
  std::string text;  // every line and finding, one per line
};

Seen lookAt(const Job& job, const std::string& args = "") {
  Seen seen;
  JsonValue doc;
  std::string error;
  const std::string out = inspect("--json " + args);
  if (!weft::tools::parseJson(out, &doc, &error)) {
    ADD_FAILURE() << "weft-inspect --json printed no JSON (" << error << "):\n" << out;
    return seen;
  }
  std::set<int64_t> pids;
  for (int r = 0; r < kRanks; ++r) pids.insert(job.pid(r));
  const JsonValue* comms = doc.find("communicators");
  for (const JsonValue& c : comms ? comms->items : std::vector<JsonValue>{}) {
    const JsonValue* states = c.find("rank_states");
    int64_t pid = 0;
    if (!states || states->items.empty() || !states->items[0].find("pid")->asInt(&pid) || !pids.count(pid)) continue;
    seen.found = true;
    for (const JsonValue& s : c.find("stragglers")->items) {
      int64_t r = 0;
      if (s.asInt(&r)) seen.stragglers.push_back(static_cast<int>(r));
    }
    for (const char* key : {"lines", "findings"}) {
      for (const JsonValue& line : c.find(key)->items) seen.text += line.text + "\n";
    }
  }
  return seen;
}

// Looks until the finding `words` appears (at most 10 s); the seconds it took.
double lookUntil(const Job& job, const std::string& words, Seen* seen) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    *seen = lookAt(job);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (contains(seen->text, words) || s > 10) return s;
    usleep(20000);
  }
}

const std::vector<std::string> kHungEnv = {"WEFT_TIMEOUT_S=60", "WEFT_HEARTBEAT_TIMEOUT_S=60"};

void allReduceOnce(weftComm_t comm, int count) {
  std::vector<float> in(static_cast<size_t>(count), 1.0f), out(static_cast<size_t>(count));
  (void)weftAllReduce(in.data(), out.data(), static_cast<size_t>(count), weftFloat32, weftSum, comm, nullptr);
}

TEST(WeftInspect, NamesAStoppedRankAndTheCallTheOthersWaitIn) {
  Job job(
      [](int rank, weftComm_t comm, const std::atomic<int>* go) {
        // Rank 3 is stopped before its call #6, which the others wait in; it makes it once resumed.
        while (rank == 3 && go->load() == 0) usleep(1000);
        allReduceOnce(comm, kCount);
      },
      kHungEnv);
  ASSERT_TRUE(job.waitReady());
  ASSERT_EQ(kill(job.pid(3), SIGSTOP), 0);
  Seen seen;
  const double took = lookUntil(job, "ranks 0-2 wait in allreduce #6 for rank 3", &seen);
  std::printf("weft-inspect named the stopped rank %.2f s after SIGSTOP; what it prints:\n%s", took, inspect("").c_str());
  ASSERT_TRUE(seen.found);
  EXPECT_TRUE(contains(seen.text, "ranks 0-2 wait in allreduce #6 for rank 3; rank 3 finished allreduce #5")) << seen.text;
  EXPECT_TRUE(contains(seen.text, "its process is stopped (SIGSTOP, Ctrl-Z or a debugger): kill -CONT " +
                                      std::to_string(job.pid(3))))
      << seen.text;
  EXPECT_EQ(seen.stragglers, std::vector<int>{3});
  kill(job.pid(3), SIGCONT);
  job.go();
  EXPECT_TRUE(job.join());  // rank 3's call #6 frees the others
}

TEST(WeftInspect, NamesARankThatSpinsInItsOwnCode) {
  Job job(
      [](int rank, weftComm_t comm, const std::atomic<int>* go) {
        if (rank == 3) {
          while (go->load() == 0) {
          }  // the application's own loop, between two calls
        }
        allReduceOnce(comm, kCount);
      },
      kHungEnv);
  ASSERT_TRUE(job.waitReady());
  Seen seen;
  lookUntil(job, "ranks 0-2 wait in allreduce #6 for rank 3", &seen);
  ASSERT_TRUE(seen.found);
  EXPECT_TRUE(contains(seen.text, "ranks 0-2 wait in allreduce #6 for rank 3; rank 3 finished allreduce #5")) << seen.text;
  EXPECT_TRUE(contains(seen.text, "and has not called since")) << seen.text;
  EXPECT_FALSE(contains(seen.text, "stopped")) << seen.text;
  EXPECT_TRUE(contains(seen.text, "rank 3 (pid " + std::to_string(job.pid(3)))) << seen.text;
  job.go();
  EXPECT_TRUE(job.join());
}

TEST(WeftInspect, NamesBothCallsOfAMismatch) {
  Job job([](int rank, weftComm_t comm, const std::atomic<int>*) { allReduceOnce(comm, rank == 3 ? 2 * kCount : kCount); },
          kHungEnv);
  ASSERT_TRUE(job.waitReady());
  ASSERT_TRUE(job.waitActed(kRanks));  // every rank's call #6 failed (the call checks)
  Seen seen = lookAt(job);
  ASSERT_TRUE(seen.found);
  std::printf("%s", seen.text.c_str());
  EXPECT_TRUE(contains(seen.text, "call #6 disagrees between ranks: ranks 0-2 called allreduce (1024 x float, sum); "
                                  "rank 3 called allreduce (2048 x float, sum)"))
      << seen.text;
  job.go();
  EXPECT_TRUE(job.join());
}

TEST(WeftInspect, ReadsTheDumpsTheSignalWrote) {
  char dirTemplate[] = "/tmp/weft-inspect-test-XXXXXX";
  ASSERT_NE(mkdtemp(dirTemplate), nullptr);
  const std::string dir = dirTemplate;
  std::vector<std::string> env = kHungEnv;
  env.push_back("WEFT_RECORDER_DIR=" + dir);
  env.push_back("WEFT_RECORDER_FRONT_END=weft-perf");
  Job job([](int, weftComm_t, const std::atomic<int>*) {}, env);
  ASSERT_TRUE(job.waitReady());
  ASSERT_TRUE(job.waitActed(kRanks));
  for (int r = 0; r < kRanks; ++r) ASSERT_EQ(kill(job.pid(r), SIGUSR2), 0);
  std::string out;
  for (int i = 0; i < 500; ++i) {  // the heartbeat thread writes them within ~0.1 s
    out = inspect(dir);
    if (contains(out, "every rank found finished call #5")) break;
    usleep(20000);
  }
  EXPECT_TRUE(contains(out, "(4 ranks, made by weft-perf)")) << out;
  EXPECT_TRUE(contains(out, "as dumped, dumped on the dump signal): allreduce #5 (1024 x float, sum")) << out;
  EXPECT_TRUE(contains(out, "no rank is in a call: every rank found finished call #5")) << out;
  job.go();
  EXPECT_TRUE(job.join());
  EXPECT_EQ(system(("rm -rf " + dir).c_str()), 0);
}

TEST(WeftInspect, RefusesBadOptionsAndSaysWhenNothingIsThere) {
  EXPECT_TRUE(contains(inspect("--frobnicate"), "unknown option --frobnicate")) << inspect("--frobnicate");
  EXPECT_TRUE(contains(inspect("--shm /nonexistent-dir"), "no Weft flight recorder found in /nonexistent-dir"));
  EXPECT_TRUE(contains(inspect("--help"), "usage: weft-inspect"));
}

}  // namespace
}  // namespace weft_test
