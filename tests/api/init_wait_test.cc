// A rank waiting in init says so: 4 ranks as processes, rank 3 gone before it calls init. Every
// rank that waits logs, within 10 s, a warning that names rank 3 as missing (the non-root ranks
// learn it from the root's progress reports), and at the time-out fails with an error naming it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/port_holder.h"
#include "weft/weft.h"

namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs rank `r` of `n` from the environment with its stderr in `log`; never returns.
[[noreturn]] void runRank(int r, int n, const std::string& addr, const std::string& log, const char* timeoutS = "14",
                          const char* reportS = "3") {
  if (std::freopen(log.c_str(), "w", stderr) == nullptr) _exit(3);
  setvbuf(stderr, nullptr, _IONBF, 0);
  setenv("WEFT_RANK", std::to_string(r).c_str(), 1);
  setenv("WEFT_NRANKS", std::to_string(n).c_str(), 1);
  setenv("WEFT_ROOT_ADDR", addr.c_str(), 1);
  setenv("WEFT_ROOT_SECRET", "00112233445566778899aabbccddeeff", 1);
  setenv("WEFT_TIMEOUT_S", timeoutS, 1);
  setenv("WEFT_INIT_REPORT_S", reportS, 1);
  weftComm_t comm = nullptr;
  if (weftCommInitFromEnv(&comm, nullptr) == weftSuccess) _exit(1);  // rank 3 never came
  std::fprintf(stderr, "init failed: %s\n", weftGetLastError(nullptr));
  _exit(2);
}

TEST(InitWait, RanksWaitingForAMissingRankNameIt) {
  const int n = 4;
  char dirTemplate[] = "/tmp/weft-init-wait-XXXXXX";
  ASSERT_NE(mkdtemp(dirTemplate), nullptr);
  const std::string dir = dirTemplate;
  weft_test::PortHolder port;
  const std::string addr = "127.0.0.1:" + std::to_string(port.port());
  port.release();  // rank 0 listens there
  std::vector<pid_t> pids;
  std::vector<std::string> logs;
  for (int r = 0; r < n - 1; ++r) {  // rank 3 is never started: killed before it called init
    logs.push_back(dir + "/rank" + std::to_string(r) + ".log");
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) runRank(r, n, addr, logs.back());
    pids.push_back(pid);
  }

  // Within 10 s every waiting rank has said whom it waits for.
  const auto start = std::chrono::steady_clock::now();
  const std::string named = "for rank 3 to join (ranks 0-2 joined";
  std::vector<bool> said(logs.size(), false);
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    bool all = true;
    for (size_t i = 0; i < logs.size(); ++i) all &= (said[i] = said[i] || readFile(logs[i]).find(named) != std::string::npos);
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (size_t i = 0; i < logs.size(); ++i) EXPECT_TRUE(said[i]) << "rank " << i << " said:\n" << readFile(logs[i]);

  // Then each fails at the time-out (14 s; the root answers a little before) naming rank 3.
  for (size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    pid_t got = 0;
    for (int t = 0; t < 300 && (got = waitpid(pids[i], &status, WNOHANG)) == 0; ++t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (got == 0) {
      kill(pids[i], SIGKILL);
      waitpid(pids[i], &status, 0);
      ADD_FAILURE() << "rank " << i << " still waited 30 s after its time-out";
      continue;
    }
    const std::string log = readFile(logs[i]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << "rank " << i << " status " << status << "\n" << log;
    EXPECT_NE(log.find("init failed: bootstrap: 3 of 4 ranks joined within"), std::string::npos) << log;
    EXPECT_NE(log.find("missing rank 3."), std::string::npos) << log;
    std::printf("---- rank %zu's stderr ----\n%s", i, log.c_str());
  }
  for (const std::string& log : logs) std::remove(log.c_str());
  rmdir(dir.c_str());
}

// WEFT_INIT_REPORT_S=0: the wait is silent until the time-out, which still names the missing rank.
TEST(InitWait, ReportsOffLeaveOnlyTheTimeOut) {
  char dirTemplate[] = "/tmp/weft-init-wait-XXXXXX";
  ASSERT_NE(mkdtemp(dirTemplate), nullptr);
  const std::string dir = dirTemplate, log = dir + "/rank0.log";
  weft_test::PortHolder port;
  const std::string addr = "127.0.0.1:" + std::to_string(port.port());
  port.release();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) runRank(0, 2, addr, log, "5", "0");  // rank 1 never comes
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const std::string text = readFile(log);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status << "\n" << text;
  EXPECT_EQ(text.find("waits in communicator init"), std::string::npos) << text;
  EXPECT_NE(text.find("missing rank 1."), std::string::npos) << text;
  std::remove(log.c_str());
  rmdir(dir.c_str());
}

}  // namespace
