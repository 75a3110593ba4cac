// Issue 13, item 3: nothing is left behind on a failure path. Each test runs one failure (init
// time-out, a peer killed in the middle of a collective, abort, a bad argument, destroy after
// a failure) through the public API, then checks that this process holds no more file
// descriptors and threads than before, that no /dev/shm segment of the failed communicator
// remains, and that no child process is left. The baseline is taken after a communicator has
// run once, so that what Weft keeps for the life of the process (started on first use) counts
// as the baseline.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "weft/weft.h"

namespace weft {
namespace core {
namespace {

std::vector<std::string> listDir(const char* path, const std::string& prefix = "") {
  std::vector<std::string> names;
  DIR* d = opendir(path);
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (name.compare(0, prefix.size(), prefix) == 0) names.push_back(name);
  }
  closedir(d);
  return names;
}

// Live children of this process (zombies included: a child nobody reaped is left behind too).
std::vector<int> children() {
  std::vector<int> pids;
  for (const std::string& name : listDir("/proc")) {
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    FILE* f = std::fopen(("/proc/" + name + "/stat").c_str(), "r");
    if (f == nullptr) continue;
    char buf[512] = {0};
    size_t got = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    // "pid (comm) state ppid ...": comm may hold spaces, so start after its last ')'.
    const char* close = std::strrchr(buf, ')');
    char state = 0;
    int ppid = 0;
    if (got > 0 && close != nullptr && std::sscanf(close + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid()) {
      pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

struct Resources {
  size_t fds = 0;
  size_t threads = 0;
  std::vector<std::string> segments;  // /dev/shm/weft-<tag>-*
  std::vector<int> children;

  static Resources now(const std::string& tag) {
    Resources r;
    r.fds = listDir("/proc/self/fd").size();
    r.threads = listDir("/proc/self/task").size();
    r.segments = listDir("/dev/shm", "weft-" + tag + "-");
    r.children = core::children();
    return r;
  }
  std::string describe() const {
    std::string s = std::to_string(fds) + " fds, " + std::to_string(threads) + " threads, " +
                    std::to_string(children.size()) + " children, segments:";
    for (const auto& seg : segments) s += " " + seg;
    return s;
  }
};

// Waits up to waitMs for this process to be back at `before` (threads end and fds close a
// little after the call that failed returns); describes what is left otherwise.
std::string leftBehind(const Resources& before, const std::string& tag, int waitMs = 5000) {
  Resources after;
  for (int i = 0; i <= waitMs / 10; ++i) {
    after = Resources::now(tag);
    if (after.fds <= before.fds && after.threads <= before.threads && after.segments.empty() &&
        after.children.empty()) {
      return "";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "before: " + before.describe() + "; after: " + after.describe();
}

weftConfig_t withTimeout(int seconds) {
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutS = seconds;
  return config;
}

// Two ranks as threads of this process.
void initPair(const weftUniqueId& id, weftComm_t comms[2], int timeoutS = 20) {
  weftConfig_t config = withTimeout(timeoutS);
  std::thread other([&] { ASSERT_EQ(weftCommInitRankConfig(&comms[1], 2, id, 1, &config), weftSuccess); });
  ASSERT_EQ(weftCommInitRankConfig(&comms[0], 2, id, 0, &config), weftSuccess) << weftGetLastError(nullptr);
  other.join();
}

class Leftovers : public ::testing::Test {
 protected:
  // What Weft starts once per process (on first use) is part of the baseline.
  static void SetUpTestSuite() {
    weftUniqueId id;
    ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
    weftComm_t comms[2] = {nullptr, nullptr};
    initPair(id, comms);
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.emplace_back([&, r] {
        std::vector<float> x(1 << 16, 1.0f);
        EXPECT_EQ(weftAllReduce(x.data(), x.data(), x.size(), weftFloat32, weftSum, comms[r], nullptr), weftSuccess);
      });
    }
    for (auto& t : ranks) t.join();
    for (weftComm_t c : comms) weftCommDestroy(c);
  }

  void SetUp() override {
    ASSERT_EQ(weftGetUniqueId(&id_), weftSuccess);
    tag_ = commTagFromId(id_);
    before_ = Resources::now(tag_);
    // The new root's listener and thread belong to the scenario: what it must release.
    before_.fds -= 1;
    before_.threads -= 1;
  }

  weftUniqueId id_;
  std::string tag_;
  Resources before_;
};

// The check itself: live communicators hold threads and descriptors, and it sees them.
TEST_F(Leftovers, TheCheckSeesWhatLiveCommunicatorsHold) {
  weftComm_t comms[2] = {nullptr, nullptr};
  initPair(id_, comms);
  EXPECT_NE(leftBehind(before_, tag_, 100), "");
  for (weftComm_t c : comms) weftCommDestroy(c);
  EXPECT_EQ(leftBehind(before_, tag_), "");
}

TEST_F(Leftovers, InitTimeOut) {
  weftConfig_t config = withTimeout(1);
  weftComm_t comm = nullptr;
  EXPECT_EQ(weftCommInitRankConfig(&comm, 2, id_, 0, &config), weftTimeout);
  EXPECT_EQ(leftBehind(before_, tag_), "");
}

TEST_F(Leftovers, AbortThenDestroy) {
  weftComm_t comms[2] = {nullptr, nullptr};
  initPair(id_, comms);
  std::thread worker([&] {
    std::vector<float> x(1 << 20, 1.0f);
    // Rank 1 never joins: only the abort ends this.
    EXPECT_NE(weftAllReduce(x.data(), x.data(), x.size(), weftFloat32, weftSum, comms[0], nullptr), weftSuccess);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(weftCommAbort(comms[0]), weftSuccess);
  worker.join();
  weftCommDestroy(comms[1]);
  EXPECT_EQ(leftBehind(before_, tag_), "");
}

TEST_F(Leftovers, BadArgumentThenDestroy) {
  weftComm_t comms[2] = {nullptr, nullptr};
  initPair(id_, comms);
  float x = 1;
  EXPECT_EQ(weftAllReduce(nullptr, &x, 1, weftFloat32, weftSum, comms[0], nullptr), weftInvalidArgument);
  EXPECT_EQ(weftAllReduce(&x, &x, 1, static_cast<weftDataType_t>(99), weftSum, comms[1], nullptr), weftInvalidArgument);
  for (weftComm_t c : comms) EXPECT_EQ(weftCommDestroy(c), weftSuccess);
  EXPECT_EQ(leftBehind(before_, tag_), "");
}

// A collective that times out (the peer never calls it), then destroy on both ranks.
TEST_F(Leftovers, CollectiveTimeOutThenDestroy) {
  weftComm_t comms[2] = {nullptr, nullptr};
  initPair(id_, comms, 1);
  std::vector<float> x(1 << 18, 1.0f);
  EXPECT_EQ(weftAllReduce(x.data(), x.data(), x.size(), weftFloat32, weftSum, comms[0], nullptr), weftTimeout);
  EXPECT_NE(weftAllReduce(x.data(), x.data(), x.size(), weftFloat32, weftSum, comms[1], nullptr), weftSuccess);
  for (weftComm_t c : comms) weftCommDestroy(c);
  EXPECT_EQ(leftBehind(before_, tag_), "");
}

// This process is rank 0; rank 1, a forked child, is killed in the middle of all-reduces over
// shared memory. After the failure and destroy, nothing of the pair stays here or in /dev/shm
// (the child's own segments included: it could not remove them).
TEST_F(Leftovers, PeerKilledMidCollectiveThenDestroy) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    weftConfig_t config = withTimeout(20);
    weftComm_t comm = nullptr;
    if (weftCommInitRankConfig(&comm, 2, id_, 1, &config) != weftSuccess) _exit(3);
    char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(4);
    std::vector<float> x(1 << 20, 1.0f);
    // Runs until killed; should the parent fail first, this ends too instead of spinning on.
    while (weftAllReduce(x.data(), x.data(), x.size(), weftFloat32, weftSum, comm, nullptr) == weftSuccess) {
    }
    _exit(5);
  }
  close(ready[1]);
  // Whatever fails below, the child does not outlive the test.
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);
    }
  } reaper{child};
  weftConfig_t config = withTimeout(20);
  weftComm_t comm = nullptr;
  ASSERT_EQ(weftCommInitRankConfig(&comm, 2, id_, 0, &config), weftSuccess) << weftGetLastError(nullptr);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  // One all-reduce connects the pair through shared memory (segments are unlinked once both
  // sides have mapped them; the kill may still catch later lanes half made).
  std::vector<float> x(1 << 20, 1.0f);
  ASSERT_EQ(weftAllReduce(x.data(), x.data(), x.size(), weftFloat32, weftSum, comm, nullptr), weftSuccess);
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(child, SIGKILL);
  });
  weftResult_t r = weftSuccess;
  for (int i = 0; i < 100000 && r == weftSuccess; ++i) {
    r = weftAllReduce(x.data(), x.data(), x.size(), weftFloat32, weftSum, comm, nullptr);
  }
  killer.join();
  EXPECT_NE(r, weftSuccess);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  weftCommDestroy(comm);
  EXPECT_EQ(leftBehind(before_, tag_), "");
}

}  // namespace
}  // namespace core
}  // namespace weft
