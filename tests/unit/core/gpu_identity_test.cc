// GPUs are told apart by PCI bus id, never by ordinal (issue 14 item 2): two processes whose one
// emulated GPU each is device 0 but at different bus ids (WEFT_EMULATED_FIRST_BUS, as two
// processes with different CUDA_VISIBLE_DEVICES) are on different GPUs that neither process sees
// the other of: their device FIFOs are staged through host memory, not taken for one GPU's
// peer memory; at the same bus id they share one GPU and its memory. The all-reduce is right
// either way.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/log.h"
#include "device/device.h"
#include "weft/weft.h"

namespace {

struct UseEmulatedDevice {
  UseEmulatedDevice() { setenv("WEFT_GPU_BACKEND", "emulated", 1); }
} useEmulatedDevice;

constexpr size_t kCount = 1 << 16;

std::string logPath(int rank) {
  return std::string(::testing::TempDir()) + "/weft_gpuid_" + std::to_string(getpid()) + "_" + std::to_string(rank);
}

// One rank in a forked process, its emulated device 0 at bus `bus`, its log in logPath(rank).
// 0 when the all-reduce of device memory is right.
int runRank(const weftUniqueId& id, int rank, int bus, const std::string& log) {
  setenv("WEFT_EMULATED_FIRST_BUS", std::to_string(bus).c_str(), 1);
  setenv("WEFT_DEBUG", "INFO", 1);
  setenv("WEFT_DEBUG_SUBSYS", "INIT,GRAPH", 1);  // the lanes' transports, the routes' reasons
  int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || dup2(fd, 2) < 0) return 10;
  weft::reloadLogSettings();
  weft::device::Runtime* rt = weft::device::gpuRuntime();
  void* buf = nullptr;
  if (!rt->setDevice(0).isOk() || !rt->allocDevice(kCount * sizeof(float), &buf).isOk()) return 11;
  std::vector<float> host(kCount);
  for (size_t i = 0; i < kCount; ++i) host[i] = static_cast<float>((rank + 1) * (i % 5));
  if (!rt->copy(buf, host.data(), kCount * sizeof(float), weft::device::CopyKind::kHostToDevice).isOk()) return 12;
  weftComm_t comm = nullptr;
  if (weftCommInitRank(&comm, 2, id, rank) != weftSuccess) return 13;
  int code = 0;
  if (weftAllReduce(buf, buf, kCount, weftFloat32, weftSum, comm, WEFT_STREAM_DEFAULT) != weftSuccess) code = 14;
  if (code == 0 && weftCommFinalize(comm) != weftSuccess) code = 15;
  if (!rt->copy(host.data(), buf, kCount * sizeof(float), weft::device::CopyKind::kDeviceToHost).isOk()) code = 16;
  for (size_t i = 0; i < kCount && code == 0; ++i) {
    if (host[i] != static_cast<float>(3 * (i % 5))) code = 17;
  }
  weftCommDestroy(comm);
  (void)rt->freeDevice(buf);
  return code;
}

// Runs ranks 0 and 1 with their GPUs at buses[0] and buses[1]; returns rank 0's and rank 1's
// logs (their device lane lines), failing the test when a rank did.
std::string runPair(const int (&buses)[2]) {
  weftUniqueId id;
  EXPECT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::vector<pid_t> children;
  for (int r = 0; r < 2; ++r) {
    const std::string log = logPath(r);  // named after this process, not the child
    pid_t pid = fork();
    if (pid == 0) _exit(runRank(id, r, buses[r], log));
    children.push_back(pid);
  }
  std::string lanes;
  for (int r = 0; r < 2; ++r) {
    int status = 0;
    EXPECT_EQ(waitpid(children[static_cast<size_t>(r)], &status, 0), children[static_cast<size_t>(r)]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "rank " << r << " exit " << WEXITSTATUS(status) << " (13 init, 14/15 all-reduce, 17 wrong sum)";
    std::ifstream in(logPath(r));
    std::stringstream text;
    text << in.rdbuf();
    std::istringstream lines(text.str());
    for (std::string line; std::getline(lines, line);) {
      if (line.find("device lane") != std::string::npos || line.find("staged") != std::string::npos) {
        lanes += line + "\n";
      }
    }
    std::remove(logPath(r).c_str());
  }
  return lanes;
}

TEST(GpuIdentity, SameOrdinalAtDifferentBusIdsIsTwoGpus) {
  const std::string lanes = runPair({3, 4});
  EXPECT_NE(lanes.find("staged through pinned host memory"), std::string::npos) << lanes;
  EXPECT_NE(lanes.find("does not see the peer's GPU"), std::string::npos) << lanes;
  EXPECT_EQ(lanes.find("via p2p"), std::string::npos) << lanes;
}

TEST(GpuIdentity, SameBusIdIsOneGpu) {
  const std::string lanes = runPair({3, 3});
  EXPECT_NE(lanes.find("via p2p"), std::string::npos) << lanes;
  EXPECT_EQ(lanes.find("staged"), std::string::npos) << lanes;
}

}  // namespace
