// The segments of libfabric's shm provider (ofi_shm_names.h, issue 13 item 3: nothing left
// behind): a rank killed with a shm-provider endpoint open leaves its 16 MiB segment in
// /dev/shm; Weft names the endpoint so that a later process can tell its creator is dead and
// remove it, and leaves those of running processes alone.
#include "transports/net/ofi_shm_names.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "transports/net/ofi_domain.h"

namespace weft {
namespace net {
namespace {

// /dev/shm entries that are shm-provider segments Weft named for process `pid`.
std::vector<std::string> segmentsOf(pid_t pid) {
  std::vector<std::string> found;
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return found;
  const std::string mark = "-" + std::to_string(pid) + "-";
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("weft-ofi-", 0) == 0 && name.find(mark) != std::string::npos) found.push_back(name);
  }
  closedir(d);
  return found;
}

// A child that opens a libfabric domain on the shm provider and reports 1 (opened) or 0 (no
// shm provider here), then waits to be killed. Only the child loads libfabric: its state does
// not survive fork() in a process that used it.
struct ShmEndpointChild {
  pid_t pid = -1;
  int opened = -1;
  ShmEndpointChild() {
    int up[2];
    if (pipe(up) != 0) return;
    pid = fork();
    if (pid == 0) {
      close(up[0]);
      setenv("WEFT_OFI_PROVIDER", "shm", 1);
      std::shared_ptr<OfiDomain> domain;
      const int ok = OfiDomain::open(0, &domain).isOk() ? 1 : 0;
      (void)!write(up[1], &ok, sizeof(ok));
      for (;;) pause();
    }
    close(up[1]);
    if (read(up[0], &opened, sizeof(opened)) != sizeof(opened)) opened = -1;
    close(up[0]);
  }
  void kill9() {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
  ~ShmEndpointChild() { kill9(); }
};

TEST(OfiShmNames, KilledProcessesSegmentsAreRemovedLiveOnesKept) {
  ShmEndpointChild killed;
  ASSERT_GE(killed.opened, 0) << "the child failed";
  if (killed.opened == 0) GTEST_SKIP() << "libfabric or its shm provider is not available here";
  ShmEndpointChild living;
  ASSERT_EQ(living.opened, 1);
  const pid_t killedPid = killed.pid;
  ASSERT_EQ(segmentsOf(killedPid).size(), 1u) << "the endpoint's segment carries Weft's name";
  ASSERT_EQ(segmentsOf(living.pid).size(), 1u);
  killed.kill9();
  ASSERT_EQ(segmentsOf(killedPid).size(), 1u) << "a killed process leaves its segment";
  (void)removeOfiShmOfDeadProcesses();  // another process's sweep may have come first: the files tell
  EXPECT_TRUE(segmentsOf(killedPid).empty()) << "the killed process's segment is removed";
  EXPECT_EQ(segmentsOf(living.pid).size(), 1u) << "a running process's segment is kept";
  const pid_t livingPid = living.pid;
  living.kill9();
  (void)removeOfiShmOfDeadProcesses();
  EXPECT_TRUE(segmentsOf(livingPid).empty());
}

TEST(OfiShmNames, NamesAreUniqueAndOnlyForTheShmProvider) {
  EXPECT_NE(ofiShmSourceAddress(), ofiShmSourceAddress());
  EXPECT_EQ(ofiShmSourceAddress().rfind("fi_shm://weft-ofi-", 0), 0u);
  EXPECT_TRUE(ofiShmProvider("shm"));
  EXPECT_TRUE(ofiShmProvider("shm;ofi_rxm"));
  EXPECT_FALSE(ofiShmProvider("tcp;ofi_rxm"));
  EXPECT_FALSE(ofiShmProvider("sm2"));
}

}  // namespace
}  // namespace net
}  // namespace weft
