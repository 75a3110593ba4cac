// weftCommGetUniqueId / weftCommGrow: existing ranks keep their numbers and new ranks join after
// them (NCCL 2.32's usage: rank 0 passes the id it made, the other existing ranks NULL, the new
// ranks the id and their new rank); collectives on the grown communicator are right and the old
// one keeps working; an id is consumed by its grow and refused after; arguments are checked.
// Ranks as threads and as forked processes; rank 0 hands the id to the new ranks through pipes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

bool contains(const std::string& text, const std::string& words) { return text.find(words) != std::string::npos; }

// One participant: ranks below oldN have a communicator of oldN ranks; the others are new.
struct Member {
  int rank = 0;
  int oldN = 0;
  int newN = 0;
  weftComm_t comm = nullptr;
  std::vector<int> idWrite;  // rank 0 writes the grow id to each new rank
  int idRead = -1;           // a new rank reads it here
};

void writeId(int fd, const weftUniqueId& id) {
  ASSERT_EQ(write(fd, &id, sizeof(id)), static_cast<ssize_t>(sizeof(id)));
}

void readId(int fd, weftUniqueId* id) {
  size_t got = 0;
  while (got < sizeof(*id)) {
    ssize_t n = read(fd, reinterpret_cast<char*>(id) + got, sizeof(*id) - got);
    ASSERT_GT(n, 0) << "the id never came";
    got += static_cast<size_t>(n);
  }
}

// Runs body on newN participants (threads or processes); the first oldN join a communicator first.
void runGrowing(Mode mode, int oldN, int newN, const std::function<void(Member&)>& body) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::vector<int> fds(static_cast<size_t>(2 * (newN - oldN)));
  for (int i = 0; i < newN - oldN; ++i) ASSERT_EQ(pipe(&fds[static_cast<size_t>(2 * i)]), 0);
  auto run = [&](int r) {
    Member m;
    m.rank = r;
    m.oldN = oldN;
    m.newN = newN;
    for (int i = 0; i < newN - oldN; ++i) m.idWrite.push_back(fds[static_cast<size_t>(2 * i + 1)]);
    if (r >= oldN) m.idRead = fds[static_cast<size_t>(2 * (r - oldN))];
    if (r < oldN) ASSERT_EQ(weftCommInitRank(&m.comm, oldN, id, r), weftSuccess) << weftGetLastError(nullptr);
    body(m);
    if (m.comm) EXPECT_EQ(weftCommDestroy(m.comm), weftSuccess);
  };
  if (mode == Mode::kThreads) {
    std::vector<std::thread> threads;
    for (int r = 0; r < newN; ++r) threads.emplace_back(run, r);
    for (auto& t : threads) t.join();
  } else {
    std::fflush(stdout);
    std::fflush(stderr);
    std::vector<pid_t> pids;
    for (int r = 0; r < newN; ++r) {
      pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        alarm(120);  // a hung child ends instead of hanging the suite
        run(r);
        std::fflush(stdout);
        _exit(::testing::Test::HasFailure() ? 1 : 0);
      }
      pids.push_back(pid);
    }
    for (int r = 0; r < newN; ++r) {
      int status = 0;
      ASSERT_EQ(waitpid(pids[static_cast<size_t>(r)], &status, 0), pids[static_cast<size_t>(r)]);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << r << " failed (output above)";
    }
  }
  for (int fd : fds) close(fd);
}

// This participant's part of a grow to m.newN ranks; *grown is the new communicator.
void grow(Member& m, weftComm_t* grown) {
  if (m.rank == 0) {
    weftUniqueId id;
    ASSERT_EQ(weftCommGetUniqueId(m.comm, &id), weftSuccess) << weftGetLastError(m.comm);
    for (int fd : m.idWrite) writeId(fd, id);
    ASSERT_EQ(weftCommGrow(m.comm, m.newN, &id, -1, grown, nullptr), weftSuccess) << weftGetLastError(m.comm);
  } else if (m.rank < m.oldN) {
    ASSERT_EQ(weftCommGrow(m.comm, m.newN, nullptr, -1, grown, nullptr), weftSuccess) << weftGetLastError(m.comm);
  } else {
    weftUniqueId id;
    readId(m.idRead, &id);
    ASSERT_EQ(weftCommGrow(nullptr, m.newN, &id, m.rank, grown, nullptr), weftSuccess) << weftGetLastError(nullptr);
  }
}

// Size, rank, and an all-reduce and an all-gather of known values on the grown communicator.
void checkGrown(weftComm_t grown, int rank, int n) {
  int count = 0, me = -1;
  ASSERT_EQ(weftCommCount(grown, &count), weftSuccess);
  ASSERT_EQ(weftCommUserRank(grown, &me), weftSuccess);
  EXPECT_EQ(count, n);
  EXPECT_EQ(me, rank) << "ranks keep their numbers; new ranks follow";
  std::vector<float> mine(1000), sum(1000, -1);
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<float>(rank * 1000 + static_cast<int>(i % 97));
  ASSERT_EQ(weftAllReduce(mine.data(), sum.data(), mine.size(), weftFloat32, weftSum, grown, nullptr), weftSuccess)
      << weftGetLastError(grown);
  for (size_t i = 0; i < sum.size(); ++i) {
    const float want = static_cast<float>(1000 * n * (n - 1) / 2 + n * static_cast<int>(i % 97));
    ASSERT_EQ(sum[i], want) << i;
  }
  int32_t r = rank;
  std::vector<int32_t> all(static_cast<size_t>(n), -1);
  ASSERT_EQ(weftAllGather(&r, all.data(), 1, weftInt32, grown, nullptr), weftSuccess) << weftGetLastError(grown);
  for (int p = 0; p < n; ++p) EXPECT_EQ(all[static_cast<size_t>(p)], p);
}

struct Case {
  Mode mode;
  int oldN;
  int newN;
};

class Grow : public ::testing::TestWithParam<Case> {};

TEST_P(Grow, NewRanksJoinAfterTheExistingOnes) {
  const Case c = GetParam();
  runGrowing(c.mode, c.oldN, c.newN, [&](Member& m) {
    weftComm_t grown = nullptr;
    grow(m, &grown);
    ASSERT_NE(grown, nullptr);
    checkGrown(grown, m.rank, m.newN);
    if (m.comm) {
      // The old communicator still works, beside the new one.
      int32_t x = m.rank + 1, y = 0;
      ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, m.comm, nullptr), weftSuccess) << weftGetLastError(m.comm);
      EXPECT_EQ(y, m.oldN * (m.oldN + 1) / 2);
    }
    EXPECT_EQ(weftCommDestroy(grown), weftSuccess);
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, Grow,
                         ::testing::Values(Case{Mode::kThreads, 3, 4}, Case{Mode::kProcesses, 3, 4},
                                           Case{Mode::kThreads, 2, 4}, Case{Mode::kProcesses, 1, 3}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(modeName(i.param.mode)) + "_" + std::to_string(i.param.oldN) + "to" +
                                  std::to_string(i.param.newN);
                         });

// An id is consumed by its grow: rank 0 cannot grow with it again, and a rank that joins with it
// later is refused at once. One id is pending at a time.
TEST(GrowIds, AreConsumedAndOnePendingAtATime) {
  runGrowing(Mode::kThreads, 2, 3, [](Member& m) {
    weftComm_t grown = nullptr;
    if (m.rank == 0) {
      weftUniqueId id, second;
      ASSERT_EQ(weftCommGetUniqueId(m.comm, &id), weftSuccess);
      EXPECT_EQ(weftCommGetUniqueId(m.comm, &second), weftInvalidUsage);
      EXPECT_TRUE(contains(weftGetLastError(m.comm), "rank 0: weftCommGetUniqueId: the id made earlier"))
          << weftGetLastError(m.comm);
      writeId(m.idWrite[0], id);
      ASSERT_EQ(weftCommGrow(m.comm, 3, &id, -1, &grown, nullptr), weftSuccess) << weftGetLastError(m.comm);
      weftComm_t again = nullptr;
      EXPECT_EQ(weftCommGrow(m.comm, 3, &id, -1, &again, nullptr), weftInvalidArgument);
      EXPECT_TRUE(contains(weftGetLastError(m.comm), "consumed by an earlier grow")) << weftGetLastError(m.comm);
      EXPECT_EQ(again, nullptr);
      // A late rank with the consumed id is refused (the id made its communicator already).
      weftComm_t late = nullptr;
      weftConfig_t config = WEFT_CONFIG_INITIALIZER;
      config.timeoutS = 20;
      auto start = std::chrono::steady_clock::now();
      EXPECT_EQ(weftCommGrow(nullptr, 3, &id, 2, &late, &config), weftInvalidUsage);
      EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 15.0);
      EXPECT_TRUE(contains(weftGetLastError(nullptr), "already")) << weftGetLastError(nullptr);
      // After the grow a new id can be made.
      weftUniqueId third;
      EXPECT_EQ(weftCommGetUniqueId(m.comm, &third), weftSuccess) << weftGetLastError(m.comm);
    } else {
      grow(m, &grown);
    }
    ASSERT_NE(grown, nullptr);
    checkGrown(grown, m.rank, 3);
    EXPECT_EQ(weftCommDestroy(grown), weftSuccess);
  });
}

// Existing ranks that ask for different sizes all fail at once, naming the disagreement; the id
// is dropped and the communicator keeps working.
TEST(GrowArguments, RanksThatAskForDifferentSizesAllFail) {
  runGrowing(Mode::kThreads, 3, 3, [](Member& m) {
    weftUniqueId id;
    if (m.rank == 0) ASSERT_EQ(weftCommGetUniqueId(m.comm, &id), weftSuccess);
    weftComm_t out = nullptr;
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(weftCommGrow(m.comm, m.rank == 1 ? 5 : 4, m.rank == 0 ? &id : nullptr, -1, &out, nullptr),
              weftInvalidArgument);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
    EXPECT_TRUE(contains(weftGetLastError(m.comm), "every rank passes the same nRanks")) << weftGetLastError(m.comm);
    EXPECT_EQ(out, nullptr);
    int32_t x = 1, y = 0;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, m.comm, nullptr), weftSuccess) << weftGetLastError(m.comm);
    EXPECT_EQ(y, 3);
  });
}

TEST(GrowArguments, AreCheckedWithASentence) {
  runGrowing(Mode::kThreads, 2, 2, [](Member& m) {
    weftComm_t out = nullptr;
    weftUniqueId id;
    auto refused = [&](weftResult_t want, weftResult_t got, weftComm_t comm, const std::string& words) {
      EXPECT_EQ(got, want) << words;
      const std::string msg = weftGetLastError(comm);
      EXPECT_TRUE(contains(msg, words)) << msg;
      EXPECT_TRUE(contains(msg, "weftComm")) << msg;
      EXPECT_EQ(out, nullptr);
    };
    const std::string me = "rank " + std::to_string(m.rank) + ": ";
    if (m.rank == 1) {
      refused(weftInvalidUsage, weftCommGetUniqueId(m.comm, &id), m.comm, me + "weftCommGetUniqueId: only rank 0");
      refused(weftInvalidArgument, weftCommGrow(m.comm, 3, &id, -1, &out, nullptr), m.comm,
              "uniqueId is given on rank 1");
    } else {
      refused(weftInvalidArgument, weftCommGrow(m.comm, 3, nullptr, -1, &out, nullptr), m.comm,
              "uniqueId is NULL on rank 0");
      std::memset(&id, 0, sizeof(id));
      refused(weftInvalidArgument, weftCommGrow(m.comm, 3, &id, -1, &out, nullptr), m.comm,
              "is not the id weftCommGetUniqueId made");
      refused(weftInvalidArgument, weftCommGetUniqueId(m.comm, nullptr), m.comm, "uniqueId is NULL");
    }
    const weftUniqueId* mine = m.rank == 0 ? &id : nullptr;
    refused(weftInvalidArgument, weftCommGrow(m.comm, 2, mine, -1, &out, nullptr), m.comm,
            me + "weftCommGrow: nRanks 2 is not more than the communicator's 2 ranks");
    refused(weftInvalidArgument, weftCommGrow(m.comm, 3, mine, 2, &out, nullptr), m.comm,
            "rank is 2: a rank of the existing communicator keeps its number");
    refused(weftInvalidArgument, weftCommGrow(m.comm, 3, mine, -1, nullptr, nullptr), m.comm, "newcomm is NULL");
    // A new rank's own mistakes.
    refused(weftInvalidArgument, weftCommGrow(nullptr, 3, nullptr, 2, &out, nullptr), nullptr,
            "rank 2: weftCommGrow: comm and uniqueId are both NULL");
    refused(weftInvalidArgument, weftCommGrow(nullptr, 3, &id, 3, &out, nullptr), nullptr,
            "a new rank joins as rank 3 of 3");
    // Nothing was done: the communicator works.
    int32_t x = 1, y = 0;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, m.comm, nullptr), weftSuccess) << weftGetLastError(m.comm);
    EXPECT_EQ(y, 2);
  });
}

}  // namespace
}  // namespace weft_test
