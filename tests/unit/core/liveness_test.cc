// Liveness (src/core/liveness.h): ranks as forked processes on one communicator, with
// WEFT_TIMEOUT_S=1800 so that only the heartbeat and the published failures can end a wait
// early. A stopped rank (SIGSTOP) is named by every survivor within seconds; a slow rank is not
// blamed; a rank that refuses its arguments is named at once; a frozen heartbeat (the process runs
// but beats no more, as a host behind a silent network would look) is named as silent.
#include "core/liveness.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/os.h"
#include "weft/weft.h"

namespace weft {
namespace core {
namespace {

// What a rank process reports to the test (in memory shared with the parent).
struct RankResult {
  int done = 0;  // 1 once the rank wrote its result
  int pid = 0;   // the rank's process
  int code = -1;
  double seconds = 0;  // how long the checked call took
  char message[2048] = {0};
};

struct Ranks {
  std::vector<pid_t> pids;
  RankResult* results = nullptr;
  pid_t root = -1;  // the process that holds the bootstrap root, when not this one
};

double secondsSince(uint64_t startNs) { return static_cast<double>(nowNs() - startNs) / 1e9; }

// The unique id of a bootstrap root that runs in a child process (*root), which stays until
// killed. weftGetUniqueId fixes the calling process's host identity (base/os.h hostHash, made
// once), which every rank forked from it would inherit whatever WEFT_HOSTID it sets.
weftUniqueId uniqueIdFromChild(pid_t* root) {
  weftUniqueId id;
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  *root = fork();
  if (*root == 0) {
    bool made = weftGetUniqueId(&id) == weftSuccess;
    if (!made || write(fds[1], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) _exit(1);
    for (;;) pause();
  }
  close(fds[1]);
  EXPECT_EQ(read(fds[0], &id, sizeof(id)), static_cast<ssize_t>(sizeof(id)));
  close(fds[0]);
  return id;
}

// Forks n ranks that join one communicator (heartbeat time-out hbS, WEFT_TIMEOUT_S=1800) and run
// body(rank, comm, result); a rank reports through `result` and exits. With separateHosts every
// rank names a host of its own (WEFT_HOSTID): they talk over sockets and beat over UDP.
Ranks launch(int n, int hbS, const std::function<void(int, weftComm_t, RankResult*)>& body,
             bool separateHosts = false) {
  Ranks ranks;
  void* shared = mmap(nullptr, sizeof(RankResult) * n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(shared, MAP_FAILED);
  ranks.results = new (shared) RankResult[n];
  weftUniqueId id;
  if (separateHosts) {
    id = uniqueIdFromChild(&ranks.root);
  } else {
    EXPECT_EQ(weftGetUniqueId(&id), weftSuccess);
  }
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      setenv("WEFT_TIMEOUT_S", "1800", 1);
      setenv("WEFT_HEARTBEAT_TIMEOUT_S", std::to_string(hbS).c_str(), 1);
      if (separateHosts) setenv("WEFT_HOSTID", ("liveness-host-" + std::to_string(r)).c_str(), 1);
      weftComm_t comm = nullptr;
      RankResult* mine = &ranks.results[r];
      mine->pid = static_cast<int>(getpid());
      if (weftCommInitRank(&comm, n, id, r) != weftSuccess) {
        std::snprintf(mine->message, sizeof(mine->message), "init failed: %s", weftGetLastError(nullptr));
        mine->done = 1;
        _exit(1);
      }
      body(r, comm, mine);
      mine->done = 1;
      _exit(0);
    }
    ranks.pids.push_back(pid);
  }
  return ranks;
}

// Waits for every rank but `skip` to exit (at most limitS), then kills and reaps all of them:
// nothing is left behind. False when a rank had to be killed.
bool reap(Ranks& ranks, int skip, double limitS) {
  uint64_t start = nowNs();
  bool allExited = true;
  for (size_t r = 0; r < ranks.pids.size(); ++r) {
    if (static_cast<int>(r) == skip) continue;
    int status = 0;
    while (waitpid(ranks.pids[r], &status, WNOHANG) == 0) {
      if (secondsSince(start) > limitS) {
        allExited = false;
        kill(ranks.pids[r], SIGKILL);
        waitpid(ranks.pids[r], &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (skip >= 0) {
    kill(ranks.pids[skip], SIGKILL);
    kill(ranks.pids[skip], SIGCONT);
    waitpid(ranks.pids[skip], nullptr, 0);
  }
  if (ranks.root > 0) {
    kill(ranks.root, SIGKILL);
    waitpid(ranks.root, nullptr, 0);
  }
  return allExited;
}

void release(Ranks& ranks) { munmap(ranks.results, sizeof(RankResult) * ranks.pids.size()); }

// One all-reduce of each rank's number + 1; records the result and how long it took.
void allReduceOnce(weftComm_t comm, int rank, RankResult* out) {
  int32_t x = rank + 1, y = 0;
  uint64_t start = nowNs();
  out->code = weftAllReduce(&x, &y, 1, weftInt32, weftSum, comm, nullptr);
  out->seconds = secondsSince(start);
  std::snprintf(out->message, sizeof(out->message), "%s (sum %d)",
                out->code == weftSuccess ? "ok" : weftGetLastError(comm), y);
}

// True when `message` blames `rank`: named with its host, as the culprit another rank reported, or
// as the rank that reported its own failure.
bool names(const std::string& message, int rank) {
  for (const char* form : {"rank %d (host", "caused by rank %d", "blaming rank %d", "rank %d reported a failure;"}) {
    char text[64];
    std::snprintf(text, sizeof(text), form, rank);
    if (message.find(text) != std::string::npos) return true;
  }
  return false;
}

// Same host (records in memory) or one host per rank (UDP heartbeats to the nearest neighbours:
// the others learn the culprit from the neighbours' aborts).
class LivenessHosts : public ::testing::TestWithParam<bool> {};

TEST_P(LivenessHosts, EverySurvivorNamesTheStoppedRank) {
  constexpr int kRanks = 4;
  for (int victim = 0; victim < kRanks; ++victim) {
    Ranks ranks = launch(
        kRanks, 1,
        [victim](int rank, weftComm_t comm, RankResult* out) {
          allReduceOnce(comm, rank, out);  // every connection is made
          if (out->code != weftSuccess) return;
          if (rank == victim) raise(SIGSTOP);
          allReduceOnce(comm, rank, out);
          weftCommAbort(comm);
        },
        GetParam());
    ASSERT_TRUE(reap(ranks, victim, 60)) << "a survivor of stopping rank " << victim << " did not finish in 60 s";
    for (int r = 0; r < kRanks; ++r) {
      if (r == victim) continue;
      const RankResult& res = ranks.results[r];
      ASSERT_EQ(res.done, 1) << "rank " << r;
      EXPECT_NE(res.code, weftSuccess) << "rank " << r << ": " << res.message;
      EXPECT_LT(res.seconds, 10.0) << "rank " << r << ": " << res.message;
      EXPECT_TRUE(names(res.message, victim)) << "rank " << r << " should name rank " << victim << ": " << res.message;
      std::printf("stopped rank %d: rank %d failed after %.2f s\n", victim, r, res.seconds);
    }
    release(ranks);
  }
}

TEST(Liveness, SlowRankIsNotBlamed) {
  // Rank 1 computes for 5 s before its call; the heartbeat time-out is 2 s.
  Ranks ranks = launch(3, 2, [](int rank, weftComm_t comm, RankResult* out) {
    if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(5));
    allReduceOnce(comm, rank, out);
    weftCommDestroy(comm);
  });
  ASSERT_TRUE(reap(ranks, -1, 60));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(ranks.results[r].code, weftSuccess) << "rank " << r << ": " << ranks.results[r].message;
    EXPECT_NE(std::string(ranks.results[r].message).find("sum 6"), std::string::npos) << ranks.results[r].message;
  }
  EXPECT_GT(ranks.results[0].seconds, 4.0) << "rank 0 waited for rank 1's sleep";
  release(ranks);
}

TEST(Liveness, RefusingRankIsNamedAtOnce) {
  // A heartbeat time-out of 60 s: only the published refusal can end the peers' wait early.
  Ranks ranks = launch(3, 60, [](int rank, weftComm_t comm, RankResult* out) {
    allReduceOnce(comm, rank, out);
    if (out->code != weftSuccess) return;
    if (rank == 2) {
      int32_t x = 1;
      uint64_t start = nowNs();
      out->code = weftAllReduce(&x, nullptr, 1, weftInt32, weftSum, comm, nullptr);  // recvbuff NULL
      out->seconds = secondsSince(start);
      weftResult_t async = weftInternalError;
      weftCommGetAsyncError(comm, &async);
      std::snprintf(out->message, sizeof(out->message), "async %d: %s", static_cast<int>(async),
                    weftGetLastError(comm));
      // Alive while the peers decide: its exit must not be what they report.
      std::this_thread::sleep_for(std::chrono::seconds(4));
      return;
    }
    allReduceOnce(comm, rank, out);
    weftCommAbort(comm);
  });
  ASSERT_TRUE(reap(ranks, -1, 60));
  EXPECT_EQ(ranks.results[2].code, weftInvalidArgument) << ranks.results[2].message;
  EXPECT_EQ(std::string(ranks.results[2].message).rfind("async 0:", 0), 0u)
      << "the refusal leaves rank 2's communicator usable: " << ranks.results[2].message;
  for (int r = 0; r < 2; ++r) {
    const RankResult& res = ranks.results[r];
    EXPECT_NE(res.code, weftSuccess) << "rank " << r;
    EXPECT_LT(res.seconds, 5.0) << res.message;
    EXPECT_TRUE(names(res.message, 2)) << res.message;
    EXPECT_NE(std::string(res.message).find("recvbuff"), std::string::npos) << "the reason travels: " << res.message;
  }
  release(ranks);
}

// A rank that refused a call and then makes it with valid arguments takes part again: its next
// operation withdraws the published refusal (LivenessWatch::beginOp), so peers that reach the
// call afterwards complete it with that rank instead of failing it as refused.
TEST(Liveness, ARefusalIsWithdrawnWhenTheRankMakesTheCall) {
  Ranks ranks = launch(3, 60, [](int rank, weftComm_t comm, RankResult* out) {
    allReduceOnce(comm, rank, out);
    if (out->code != weftSuccess) return;
    int32_t x = rank + 1, sum = 0;
    if (rank == 2) {
      // recvbuff NULL: refused, and published for the call its peers have yet to make.
      out->code = weftAllReduce(&x, nullptr, 1, weftInt32, weftSum, comm, nullptr) == weftInvalidArgument
                      ? weftSuccess
                      : weftInternalError;
      if (out->code != weftSuccess) return;
    } else {
      // Rank 2 corrects its call meanwhile; rank 0 then waits in it 1.5 s for rank 1, long
      // enough to see a refusal left standing (the heartbeat's verdicts come every 100 ms).
      std::this_thread::sleep_for(std::chrono::milliseconds(rank == 0 ? 1500 : 3000));
    }
    out->code = weftAllReduce(&x, &sum, 1, weftInt32, weftSum, comm, nullptr);
    std::snprintf(out->message, sizeof(out->message), "%s (sum %d)",
                  out->code == weftSuccess ? "ok" : weftGetLastError(comm), static_cast<int>(sum));
    if (out->code == weftSuccess && sum != 6) out->code = weftInternalError;
  });
  ASSERT_TRUE(reap(ranks, -1, 60));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(ranks.results[r].code, weftSuccess) << "rank " << r << ": " << ranks.results[r].message;
  }
  release(ranks);
}

TEST(Liveness, ASendToItselfOutsideAGroupIsNamedAtOnce) {
  // Rank 1 sends to itself without a receive (a usage error that ends its communicator): its
  // peers, waiting in the next all-reduce for it, fail at once with its reason.
  Ranks ranks = launch(3, 60, [](int rank, weftComm_t comm, RankResult* out) {
    allReduceOnce(comm, rank, out);
    if (out->code != weftSuccess) return;
    if (rank == 1) {
      int32_t x = 1;
      out->code = weftSend(&x, 1, weftInt32, 1, comm, nullptr);
      std::snprintf(out->message, sizeof(out->message), "%s", weftGetLastError(comm));
      std::this_thread::sleep_for(std::chrono::seconds(4));  // alive while the peers decide
      return;
    }
    allReduceOnce(comm, rank, out);
    weftCommAbort(comm);
  });
  ASSERT_TRUE(reap(ranks, -1, 60));
  EXPECT_EQ(ranks.results[1].code, weftInvalidUsage) << ranks.results[1].message;
  for (int r : {0, 2}) {
    const RankResult& res = ranks.results[r];
    EXPECT_NE(res.code, weftSuccess) << "rank " << r;
    EXPECT_LT(res.seconds, 3.0) << res.message;
    EXPECT_TRUE(names(res.message, 1)) << res.message;
    EXPECT_NE(std::string(res.message).find("to this rank itself"), std::string::npos)
        << "the reason travels: " << res.message;
  }
  release(ranks);
}

// Ranks may group the same sends and receives differently (one group of two receives against
// two sends of their own): liveness numbers operations by collectives, as every rank does alike.
// Counting every operation, rank 0's group below took the number of rank 1's refused all-reduce
// and failed, blaming rank 1, although rank 1 had sent all it had to send.
TEST(Liveness, ARefusalDoesNotFailAGroupTheRefuserDidItsPartIn) {
  Ranks ranks = launch(3, 60, [](int rank, weftComm_t comm, RankResult* out) {
    int32_t a = 10 + rank, b = 20 + rank, c = 30 + rank;
    int32_t gotB = -1, gotC = -1;
    if (rank == 1) {
      weftGroupStart();
      weftSend(&a, 1, weftInt32, 0, comm, nullptr);
      weftSend(&b, 1, weftInt32, 0, comm, nullptr);
      out->code = weftGroupEnd();
      if (out->code == weftSuccess) {
        int32_t x = 1;
        out->code = weftAllReduce(&x, nullptr, 1, weftInt32, weftSum, comm, nullptr) == weftInvalidArgument
                        ? weftSuccess
                        : weftInternalError;  // recvbuff NULL: refused, and published
      }
      std::snprintf(out->message, sizeof(out->message), "%s", weftGetLastError(comm));
      std::this_thread::sleep_for(std::chrono::seconds(3));  // the refusal stays published
      return;
    }
    if (rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // rank 0 waits through beats
      out->code = weftSend(&c, 1, weftInt32, 0, comm, nullptr);
      std::snprintf(out->message, sizeof(out->message), "%s", weftGetLastError(comm));
      return;
    }
    out->code = weftRecv(&a, 1, weftInt32, 1, comm, nullptr);
    if (out->code == weftSuccess) {
      weftGroupStart();
      weftRecv(&gotB, 1, weftInt32, 1, comm, nullptr);
      weftRecv(&gotC, 1, weftInt32, 2, comm, nullptr);
      out->code = weftGroupEnd();
    }
    std::snprintf(out->message, sizeof(out->message), "%s (got %d %d)",
                  out->code == weftSuccess ? "ok" : weftGetLastError(comm), gotB, gotC);
  });
  ASSERT_TRUE(reap(ranks, -1, 60));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(ranks.results[r].code, weftSuccess) << "rank " << r << ": " << ranks.results[r].message;
  }
  EXPECT_NE(std::string(ranks.results[0].message).find("ok (got 21 32)"), std::string::npos)
      << ranks.results[0].message;
  release(ranks);
}

// The other way round: the refusing rank's count ran ahead of its peers' (two sends of its own
// against one group of two receives). Its all-reduce is still the one its peers are in: they fail
// at once naming it, not when it exits.
TEST(Liveness, RefusingRankIsNamedAtOnceWhenRanksGroupedSendsDifferently) {
  Ranks ranks = launch(3, 60, [](int rank, weftComm_t comm, RankResult* out) {
    int32_t a = 1, b = 2;
    if (rank == 0) {
      weftSend(&a, 1, weftInt32, 1, comm, nullptr);
      weftSend(&b, 1, weftInt32, 1, comm, nullptr);
    } else if (rank == 1) {
      weftGroupStart();
      weftRecv(&a, 1, weftInt32, 0, comm, nullptr);
      weftRecv(&b, 1, weftInt32, 0, comm, nullptr);
      weftGroupEnd();
    }
    if (rank == 1) {
      int32_t x = 1;
      out->code = weftAllReduce(&x, nullptr, 1, weftInt32, weftSum, comm, nullptr);  // recvbuff NULL
      std::snprintf(out->message, sizeof(out->message), "%s", weftGetLastError(comm));
      std::this_thread::sleep_for(std::chrono::seconds(8));  // alive while the peers decide
      return;
    }
    allReduceOnce(comm, rank, out);
    weftCommAbort(comm);
  });
  ASSERT_TRUE(reap(ranks, -1, 60));
  EXPECT_EQ(ranks.results[1].code, weftInvalidArgument) << ranks.results[1].message;
  for (int r : {0, 2}) {
    const RankResult& res = ranks.results[r];
    EXPECT_NE(res.code, weftSuccess) << "rank " << r;
    EXPECT_LT(res.seconds, 5.0) << "rank " << r << " waited for rank 1's exit: " << res.message;
    EXPECT_TRUE(names(res.message, 1)) << res.message;
  }
  release(ranks);
}

TEST_P(LivenessHosts, FrozenHeartbeatIsNamedAsSilent) {
  // Rank 1's process keeps running but beats no more, as a host behind a silent network looks.
  Ranks ranks = launch(
      3, 1,
      [](int rank, weftComm_t comm, RankResult* out) {
        allReduceOnce(comm, rank, out);
        if (out->code != weftSuccess) return;
        if (rank == 1) {
          freezeHeartbeatForTest(true);
          pause();  // until killed
        }
        allReduceOnce(comm, rank, out);
        weftCommAbort(comm);
      },
      GetParam());
  ASSERT_TRUE(reap(ranks, 1, 60));
  for (int r : {0, 2}) {
    const RankResult& res = ranks.results[r];
    EXPECT_NE(res.code, weftSuccess) << "rank " << r;
    EXPECT_LT(res.seconds, 10.0) << res.message;
    EXPECT_TRUE(names(res.message, 1)) << res.message;
  }
  release(ranks);
}

// A rank that failed because of another is only the messenger, even once it has exited: rank 1
// fails its receive from the stopped rank 2 (naming it), tears its communicator down and exits; rank 0
// only then waits for rank 1, with no connection to it that could carry rank 1's abort. It must
// name rank 2, whom rank 1 blamed, not rank 1, whose exit (or silence) it sees: on one host from
// rank 1's record, which outlives its communicator and process; from another host through rank
// 1's beats, which announce its failure. Before, rank 0 waited for WEFT_TIMEOUT_S on one host
// and named the silent rank 1 across hosts.
TEST_P(LivenessHosts, AMessengerThatExitedIsNotBlamedForTheFailureItReported) {
  Ranks ranks = launch(
      3, 1,
      [](int rank, weftComm_t comm, RankResult* out) {
        int32_t x = rank, y = -1;
        if (rank != 0) {
          // Ranks 1 and 2 connect both ways (rank 1's receive below must not wait to connect to
          // the stopped rank); rank 0 connects to no one.
          weftGroupStart();
          weftSend(&x, 1, weftInt32, 3 - rank, comm, nullptr);
          weftRecv(&y, 1, weftInt32, 3 - rank, comm, nullptr);
          out->code = weftGroupEnd();
          std::snprintf(out->message, sizeof(out->message), "exchange: %s", weftGetLastError(comm));
          if (out->code != weftSuccess) return;
        }
        if (rank == 2) raise(SIGSTOP);
        if (rank == 1) {
          out->code = weftRecv(&y, 1, weftInt32, 2, comm, nullptr);
          std::snprintf(out->message, sizeof(out->message), "%s", weftGetLastError(comm));
          weftCommDestroy(comm);
          return;  // and exits
        }
        // Rank 0: waits (bounded) until rank 1 is gone (its result is next to this one's), then
        // receives from it.
        const RankResult& messenger = out[1];
        uint64_t start = nowNs();
        while ((messenger.done == 0 || processAlive(messenger.pid)) && secondsSince(start) < 30) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        out->code = weftRecv(&x, 1, weftInt32, 1, comm, nullptr);
        std::snprintf(out->message, sizeof(out->message), "%s", weftGetLastError(comm));
        weftCommAbort(comm);
      },
      GetParam());
  ASSERT_TRUE(reap(ranks, 2, 60));
  const RankResult& messenger = ranks.results[1];
  EXPECT_NE(messenger.code, weftSuccess) << messenger.message;
  ASSERT_TRUE(names(messenger.message, 2)) << "rank 1 should name the stopped rank 2: " << messenger.message;
  const RankResult& survivor = ranks.results[0];
  EXPECT_NE(survivor.code, weftSuccess) << survivor.message;
  EXPECT_TRUE(names(survivor.message, 2)) << "rank 0 should name rank 2, whom rank 1 blamed: " << survivor.message;
  release(ranks);
}

TEST(Liveness, SendsBetweenOthersOutliveAStoppedRank) {
  // Rank 2 stops; ranks 0 and 1 keep exchanging for longer than the heartbeat time-out (the
  // operation does not involve rank 2), then an all-reduce (which does) fails naming it.
  Ranks ranks = launch(3, 1, [](int rank, weftComm_t comm, RankResult* out) {
    allReduceOnce(comm, rank, out);
    if (out->code != weftSuccess) return;
    if (rank == 2) raise(SIGSTOP);
    // The same number of exchanges on both ranks (about 2.5 s of them).
    int32_t mine = rank, theirs = -1;
    for (int i = 0; i < 250; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      weftGroupStart();
      weftSend(&mine, 1, weftInt32, 1 - rank, comm, nullptr);
      weftRecv(&theirs, 1, weftInt32, 1 - rank, comm, nullptr);
      out->code = weftGroupEnd();
      if (out->code != weftSuccess || theirs != 1 - rank) {
        std::snprintf(out->message, sizeof(out->message), "exchange: %s (got %d)", weftGetLastError(comm), theirs);
        out->code = weftInternalError;
        return;
      }
    }
    allReduceOnce(comm, rank, out);
    weftCommAbort(comm);
  });
  ASSERT_TRUE(reap(ranks, 2, 60));
  for (int r : {0, 1}) {
    const RankResult& res = ranks.results[r];
    EXPECT_EQ(std::string(res.message).find("exchange"), std::string::npos) << res.message;
    EXPECT_NE(res.code, weftSuccess) << "rank " << r;
    EXPECT_TRUE(names(res.message, 2)) << res.message;
  }
  release(ranks);
}

TEST(Liveness, HeartbeatThreadLivesWithTheCommunicatorsAndStartsOverInAForkedChild) {
  weftComm_t comms[2] = {nullptr, nullptr};
  ASSERT_EQ(weftCommInitAll(comms, 2, nullptr), weftSuccess);
  EXPECT_TRUE(heartbeatRunningForTest());
  // Forked while the thread runs: the child has none, and its own communicator starts its own.
  pid_t pid = fork();
  if (pid == 0) {
    bool before = heartbeatRunningForTest();
    weftComm_t mine = nullptr;
    bool made = weftCommInitAll(&mine, 1, nullptr) == weftSuccess;
    bool during = heartbeatRunningForTest();
    int32_t x = 5, y = 0;
    bool works = made && weftAllReduce(&x, &y, 1, weftInt32, weftSum, mine, nullptr) == weftSuccess && y == 5;
    if (made) weftCommDestroy(mine);
    bool after = heartbeatRunningForTest();
    _exit(!before && during && works && !after ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_EQ(weftCommDestroy(comms[0]), weftSuccess);
  EXPECT_TRUE(heartbeatRunningForTest()) << "one communicator is left";
  EXPECT_EQ(weftCommDestroy(comms[1]), weftSuccess);
  EXPECT_FALSE(heartbeatRunningForTest());
}

// A rank at a real-time priority that polls without yielding would starve a heartbeat thread of
// the same priority on its CPU, and look stopped to its peers: the thread takes one step above.
TEST(Liveness, TheHeartbeatThreadOutranksARealTimeCreator) {
  // In a child: the test process keeps its own policy whatever happens.
  pid_t pid = fork();
  if (pid == 0) {
    sched_param param{};
    param.sched_priority = 10;
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) != 0) _exit(77);  // not allowed here
    weftComm_t comm = nullptr;
    if (weftCommInitAll(&comm, 1, nullptr) != weftSuccess) _exit(2);
    int policy = -1, priority = -1;
    bool known = heartbeatSchedulingForTest(&policy, &priority);
    weftCommDestroy(comm);
    if (!known) _exit(3);
    _exit(policy == SCHED_FIFO && priority == 11 ? 0 : 10 + priority);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "this process may not take a real-time policy";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "exit 2: init failed; 3: no heartbeat thread; 10 + p: its priority was p, "
                                       "or its policy not SCHED_FIFO";
  // Under the ordinary policy the thread keeps it.
  weftComm_t comm = nullptr;
  ASSERT_EQ(weftCommInitAll(&comm, 1, nullptr), weftSuccess);
  int policy = -1, priority = -1;
  EXPECT_TRUE(heartbeatSchedulingForTest(&policy, &priority));
  EXPECT_EQ(policy, SCHED_OTHER);
  EXPECT_EQ(weftCommDestroy(comm), weftSuccess);
}

INSTANTIATE_TEST_SUITE_P(Liveness, LivenessHosts, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "OneHostPerRank" : "OneHost";
                         });

}  // namespace
}  // namespace core
}  // namespace weft
