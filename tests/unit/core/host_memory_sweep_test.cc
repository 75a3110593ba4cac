// weftMemAlloc's shared segments (/dev/shm/weft-mem-*, host_memory.h) that a killed process
// leaves (issue 13, item 3: nothing left behind): a later process removes them, and never a
// segment whose creator runs or that a running process maps.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/host_memory.h"

namespace weft {
namespace core {
namespace {

std::string pathOf(const SharedSpan& span) {
  char path[96];
  std::snprintf(path, sizeof(path), "/dev/shm/weft-mem-%016" PRIx64 "-%" PRIu64, span.owner, span.id);
  return path;
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// A child process that runs `body` (which writes what it has to say to fd), then waits until its
// pipe from the test closes, and _exits without any clean-up, as a killed process would.
struct Child {
  pid_t pid = -1;
  int toChild = -1;
  int fromChild = -1;

  template <typename Body>
  explicit Child(Body body) {
    int down[2], up[2];
    if (pipe(down) != 0 || pipe(up) != 0) return;
    pid = fork();
    if (pid == 0) {
      close(down[1]);
      close(up[0]);
      body(up[1]);
      char c;
      while (read(down[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    close(down[0]);
    close(up[1]);
    toChild = down[1];
    fromChild = up[0];
  }
  template <typename T>
  bool receive(T* value) {
    return read(fromChild, value, sizeof(T)) == static_cast<ssize_t>(sizeof(T));
  }
  void kill9() {
    if (pid > 0) ::kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close(toChild);
    close(fromChild);
    pid = -1;
  }
  ~Child() {
    if (pid > 0) kill9();
  }
};

// A child that allocates shared host memory and reports the segment.
Child allocatingChild() {
  return Child([](int out) {
    void* p = nullptr;
    SharedSpan span;
    const bool ok = allocSharedHost(5000, &p).isOk() && findSharedHost(p, 5000, &span);
    if (ok) std::memset(p, 0x5a, 5000);
    if (!ok) span = SharedSpan();
    (void)!write(out, &span, sizeof(span));
  });
}

TEST(HostMemorySweep, KilledCreatorsSegmentIsRemovedLiveOnesAreKept) {
  void* mine = nullptr;
  ASSERT_TRUE(allocSharedHost(100, &mine).isOk());
  SharedSpan mySpan;
  ASSERT_TRUE(findSharedHost(mine, 100, &mySpan));
  Child killed = allocatingChild();
  Child living = allocatingChild();
  SharedSpan dead, live;
  ASSERT_TRUE(killed.receive(&dead) && dead.owner != 0);
  ASSERT_TRUE(living.receive(&live) && live.owner != 0);
  killed.kill9();
  ASSERT_TRUE(exists(pathOf(dead))) << "a killed process leaves its segment";
  (void)removeHostMemoryOfDeadProcesses();  // another process's sweep may have come first: the file tells
  EXPECT_FALSE(exists(pathOf(dead))) << "the killed process's segment is removed";
  EXPECT_TRUE(exists(pathOf(live))) << "a running process's segment is kept";
  EXPECT_TRUE(exists(pathOf(mySpan))) << "this process's own segment is kept";
  // A process that ends by _exit (weft-perf's forked ranks) leaves it too; the next sweep removes it.
  close(living.toChild);
  waitpid(living.pid, nullptr, 0);
  living.pid = -1;
  close(living.fromChild);
  ASSERT_TRUE(exists(pathOf(live)));
  (void)removeHostMemoryOfDeadProcesses();
  EXPECT_FALSE(exists(pathOf(live)));
  EXPECT_TRUE(freeSharedHost(mine));
  EXPECT_FALSE(exists(pathOf(mySpan))) << "freed: unlinked";
}

// A peer that mapped the segment (a zero-copy collective) keeps it after its creator died: the
// sweep leaves it while any process maps it, and removes it once none does.
TEST(HostMemorySweep, SegmentMappedByALivePeerIsKept) {
  Child creator = allocatingChild();
  SharedSpan span;
  ASSERT_TRUE(creator.receive(&span) && span.owner != 0);
  span.offset = 0;
  span.bytes = 5000;
  Child peer([span](int out) {
    char* p = nullptr;
    const int ok = mapSharedHost(span, &p).isOk() && p[4999] == 0x5a ? 1 : 0;
    (void)!write(out, &ok, sizeof(ok));
  });
  int mapped = 0;
  ASSERT_TRUE(peer.receive(&mapped));
  ASSERT_EQ(mapped, 1) << "the peer maps the creator's segment and sees its bytes";
  creator.kill9();
  (void)removeHostMemoryOfDeadProcesses();
  EXPECT_TRUE(exists(pathOf(span))) << "a running peer maps it";
  peer.kill9();
  (void)removeHostMemoryOfDeadProcesses();
  EXPECT_FALSE(exists(pathOf(span))) << "nobody maps it any more and its creator is dead";
}

// A file that only looks like a segment (no creator recorded) is not Weft's to remove.
TEST(HostMemorySweep, SegmentsWithoutACreatorAreLeftAlone) {
  const std::string name = "/weft-mem-0000000000000000-" + std::to_string(getpid());
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  close(fd);
  (void)removeHostMemoryOfDeadProcesses();
  EXPECT_TRUE(exists("/dev/shm" + name));
  shm_unlink(name.c_str());
}

}  // namespace
}  // namespace core
}  // namespace weft
