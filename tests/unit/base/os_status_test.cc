// Status propagation, deadlines, process checks and reading another process's memory.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "base/os.h"
#include "base/status.h"

namespace weft {
namespace {

Status inner() { return WEFT_ERROR(weftSystemError, "shm_open(%s) failed", "/x"); }
Status outer() {
  WEFT_TRY(inner());
  return Status::ok();
}

TEST(Status, TryPropagatesCodeMessageAndCallSites) {
  Status s = outer();
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), weftSystemError);
  EXPECT_EQ(s.message(), "shm_open(/x) failed");
  EXPECT_NE(s.trace().find("os_status_test.cc"), std::string::npos) << s.trace();
  EXPECT_NE(s.trace().find(" <- "), std::string::npos) << s.trace();
  Status p = std::move(s).withPrefix("rank 3: ");
  EXPECT_EQ(p.message(), "rank 3: shm_open(/x) failed");
  EXPECT_TRUE(Status::ok().isOk());
  // An "error" with code success still counts as an error: nothing silently succeeds.
  EXPECT_EQ(Status::error(weftSuccess, "x").code(), weftInternalError);
}

TEST(Deadline, ExpiresAndReportsRemainingTime) {
  Deadline d = Deadline::afterSeconds(0.05);
  EXPECT_FALSE(d.expired());
  EXPECT_GT(d.remainingMs(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_TRUE(d.expired());
  EXPECT_EQ(d.remainingMs(), 0);
  EXPECT_FALSE(Deadline::never().expired());
  EXPECT_TRUE(Deadline::afterSeconds(-1).expired());
}

TEST(Os, ProcessAliveSeesExitedAndUnreapedChildren) {
  EXPECT_TRUE(processAlive(getpid()));
  EXPECT_FALSE(processAlive(0));
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  EXPECT_TRUE(processAlive(child));
  kill(child, SIGKILL);
  // Until reaped the child is a zombie: it answers kill(pid, 0) but is not alive.
  for (int i = 0; i < 200 && processAlive(child); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(processAlive(child));
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(processAlive(child));
}

TEST(Os, ProcessHashDiffersInAForkedChild) {
  uint64_t parent = processHash();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    uint64_t mine = processHash();
    _exit(write(fds[1], &mine, sizeof(mine)) == sizeof(mine) ? 0 : 1);
  }
  uint64_t fromChild = 0;
  ASSERT_EQ(read(fds[0], &fromChild, sizeof(fromChild)), static_cast<ssize_t>(sizeof(fromChild)));
  waitpid(child, nullptr, 0);
  EXPECT_NE(parent, fromChild);
  EXPECT_EQ(hostHash(), hostHash());
}

TEST(Os, ReadProcessMemoryFromThisProcessAndAChild) {
  uint64_t value = 0;
  int err = 0;
  ASSERT_TRUE(readProcessMemory(getpid(), memoryProbeAddress(), &value, sizeof(value), &err));
  EXPECT_EQ(value, kMemoryProbeValue);
  // A child has the same probe address (fork): read it across processes when the OS allows
  // cross-memory attach; otherwise the call must fail cleanly with an errno.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    (void)!read(fds[0], &c, 1);
    _exit(0);
  }
  value = 0;
  bool ok = readProcessMemory(child, memoryProbeAddress(), &value, sizeof(value), &err);
  if (ok) {
    EXPECT_EQ(value, kMemoryProbeValue);
  } else {
    EXPECT_NE(err, 0);
  }
  (void)!write(fds[1], "x", 1);
  waitpid(child, nullptr, 0);
  // A process that is gone cannot be read.
  EXPECT_FALSE(readProcessMemory(child, memoryProbeAddress(), &value, sizeof(value), &err));
}

TEST(Os, FormatBytes) {
  EXPECT_EQ(formatBytes(12), "12 B");
  EXPECT_EQ(formatBytes(64 << 10), "64 KiB");
  EXPECT_EQ(formatBytes(3 << 19), "1.5 MiB");
}

}  // namespace
}  // namespace weft
