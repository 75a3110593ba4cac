// The communicator's topology at init (src/core/comm_topology.h), ranks as threads on the
// emulated device (which poses as GPUs 0000:00:00.0, 0000:01:00.0, ... by ordinal): GPUs placed by
// bus id, routes from WEFT_TOPO_FILE's paths and WEFT_P2P_LEVEL, WEFT_TOPO_DUMP_FILE read back, a
// bad topology file refused naming it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/api_internal.h"
#include "base/log.h"
#include "core/comm.h"
#include "core/comm_topology.h"
#include "topology/rank_desc.h"
#include "device/device.h"
#include "topology/machines.h"
#include "topology/topo_file.h"
#include "weft/weft.h"

namespace {

using weft::topo::NodeType;
using weft::topo::RouteKind;

struct UseEmulatedDevice {
  UseEmulatedDevice() { setenv("WEFT_GPU_BACKEND", "emulated", 1); }
} useEmulatedDevice;

std::string tempPath(const char* name) {
  return std::string(::testing::TempDir()) + "/weft_" + std::to_string(getpid()) + "_" + name;
}

// The 4-GPU PCIe server (two per switch, one switch per Intel socket) with its GPUs at the bus
// ids the emulated device reports, as a topology file.
std::string writePcieServerFile() {
  weft::topo::System sys = weft::topo::machines::pcie4Gpu();
  const std::vector<int> gpus = sys.nodesOfType(NodeType::kGpu);
  for (size_t i = 0; i < gpus.size(); ++i) {
    char bus[32];
    std::snprintf(bus, sizeof(bus), "0000:%02zx:00.0", i);
    sys.nodes[static_cast<size_t>(gpus[i])].pci.busId = bus;
  }
  const std::string path = tempPath("pcie4.xml");
  std::ofstream(path) << weft::topo::writeTopologyXml(sys, 1);
  return path;
}

struct Comms {
  explicit Comms(int n) : comms(static_cast<size_t>(n)) {
    result = weftCommInitAll(comms.data(), n, nullptr);
    if (result != weftSuccess) comms.clear();
  }
  ~Comms() {
    for (auto c : comms) weftCommDestroy(c);
  }
  const weft::core::CommTopology& topo(int r) const { return *comms[static_cast<size_t>(r)]->impl->topology(); }
  std::vector<weftComm_t> comms;
  weftResult_t result;
};

struct EnvGuard {
  ~EnvGuard() {
    for (const char* v : {"WEFT_TOPO_FILE", "WEFT_TOPO_DUMP_FILE", "WEFT_P2P_LEVEL", "WEFT_EMULATED_DEVICES"}) {
      unsetenv(v);
    }
  }
};

TEST(CommTopology, RoutesFollowTheFilesPaths) {
  EnvGuard guard;
  setenv("WEFT_EMULATED_DEVICES", "4", 1);
  setenv("WEFT_TOPO_FILE", writePcieServerFile().c_str(), 1);
  {
    Comms c(4);
    ASSERT_EQ(c.result, weftSuccess) << weftGetLastError(nullptr);
    for (int r = 0; r < 4; ++r) {
      const auto& t = c.topo(r);
      EXPECT_EQ(&t, &c.topo(0)) << "ranks of one process share one topology";
      EXPECT_EQ(t.routeBetween(r, r ^ 1).kind, RouteKind::kP2p) << t.routeBetween(r, r ^ 1).reason;  // one switch
      EXPECT_EQ(t.routeBetween(r, r ^ 2).kind, RouteKind::kStaged) << t.routeBetween(r, r ^ 2).reason;  // sockets
    }
    EXPECT_FALSE(c.topo(0).global.sameGpu(0, 1));
    EXPECT_EQ(c.topo(0).global.maxRanksPerGpu(), 1);
  }
  setenv("WEFT_P2P_LEVEL", "sys", 1);
  Comms c(4);
  ASSERT_EQ(c.result, weftSuccess) << weftGetLastError(nullptr);
  EXPECT_EQ(c.topo(0).routeBetween(0, 2).kind, RouteKind::kP2p) << c.topo(0).routeBetween(0, 2).reason;
}

// The routes decide the device transports: on the PCIe server, GPU pairs under one switch use
// peer memory, pairs across the sockets are staged through host memory (the emulated runtime
// itself would allow peer access between any of its devices), and the all-reduce is right.
TEST(CommTopology, DeviceFifosFollowTheRoutes) {
  EnvGuard guard;
  setenv("WEFT_EMULATED_DEVICES", "4", 1);
  setenv("WEFT_TOPO_FILE", writePcieServerFile().c_str(), 1);
  setenv("WEFT_DEBUG", "INFO", 1);
  setenv("WEFT_DEBUG_SUBSYS", "INIT", 1);
  weft::reloadLogSettings();
  testing::internal::CaptureStderr();
  const size_t count = 1 << 16;  // large enough for the ring: every rank talks to both neighbours
  {
    Comms c(4);
    ASSERT_EQ(c.result, weftSuccess) << weftGetLastError(nullptr);
    std::vector<std::thread> threads;
    std::vector<std::string> errors(4);
    for (int r = 0; r < 4; ++r) {
      threads.emplace_back([&, r] {
        weft::device::Runtime* rt = weft::device::gpuRuntime();
        void* buf = nullptr;
        if (!rt->setDevice(r).isOk() || !rt->allocDevice(count * sizeof(float), &buf).isOk()) {
          errors[r] = "no device memory";
          return;
        }
        float* v = static_cast<float*>(buf);
        for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>(r + 1);
        weftComm_t comm = c.comms[static_cast<size_t>(r)];
        if (weftAllReduce(v, v, count, weftFloat32, weftSum, comm, WEFT_STREAM_DEFAULT) != weftSuccess ||
            weftCommFinalize(comm) != weftSuccess) {
          errors[r] = weftGetLastError(comm);
        }
        for (size_t i = 0; i < count && errors[r].empty(); ++i) {
          if (v[i] != 10.0f) errors[r] = "element " + std::to_string(i) + " is " + std::to_string(v[i]);
        }
        (void)rt->freeDevice(buf);
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < 4; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  }
  const std::string log = testing::internal::GetCapturedStderr();
  unsetenv("WEFT_DEBUG_SUBSYS");
  setenv("WEFT_DEBUG", "WARN", 1);
  weft::reloadLogSettings();
  // "rank 1 -> rank 2 (host vm) device lane 0 via shm (staged through pinned host memory)"
  int staged = 0, direct = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    int from = -1, to = -1;
    const size_t at = line.find(" -> rank ");
    if (line.find("device lane") == std::string::npos || at == std::string::npos) continue;
    ASSERT_EQ(std::sscanf(line.c_str() + line.rfind("rank ", at) + 5, "%d -> rank %d", &from, &to), 2) << line;
    const bool acrossSockets = from / 2 != to / 2;
    EXPECT_EQ(line.find("staged through pinned host memory") != std::string::npos, acrossSockets) << line;
    (acrossSockets ? staged : direct) += 1;
  }
  EXPECT_GT(staged, 0) << log;
  EXPECT_GT(direct, 0) << log;
}

TEST(CommTopology, RanksSharingAGpuAreFoundByBusId) {
  EnvGuard guard;
  setenv("WEFT_EMULATED_DEVICES", "2", 1);
  Comms c(4);  // ranks on devices 0, 1, 0, 1
  ASSERT_EQ(c.result, weftSuccess) << weftGetLastError(nullptr);
  const auto& g = c.topo(0).global;
  EXPECT_TRUE(g.sameGpu(0, 2));
  EXPECT_FALSE(g.sameGpu(0, 1));
  EXPECT_EQ(g.maxRanksPerGpu(), 2);
  EXPECT_EQ(c.topo(1).routeBetween(1, 3).kind, RouteKind::kP2p);
}

TEST(CommTopology, DumpReadsBack) {
  EnvGuard guard;
  setenv("WEFT_EMULATED_DEVICES", "4", 1);
  setenv("WEFT_TOPO_FILE", writePcieServerFile().c_str(), 1);
  const std::string dump = tempPath("dump.xml");
  std::remove(dump.c_str());
  setenv("WEFT_TOPO_DUMP_FILE", dump.c_str(), 1);
  {
    Comms c(3);
    ASSERT_EQ(c.result, weftSuccess) << weftGetLastError(nullptr);
  }
  weft::topo::System back;
  ASSERT_TRUE(weft::topo::readTopologyFile(dump, &back).isOk());
  for (int r = 0; r < 3; ++r) {
    char bus[32];
    std::snprintf(bus, sizeof(bus), "0000:%02x:00.0", r);
    int node = back.findByBusId(bus);
    ASSERT_GE(node, 0) << bus;
    EXPECT_EQ(back.nodes[static_cast<size_t>(node)].type, NodeType::kGpu);
    EXPECT_EQ(back.nodes[static_cast<size_t>(node)].gpu.rank, r);
  }
  EXPECT_EQ(back.nodesOfType(NodeType::kCpu).size(), 2u);  // the file's two sockets
  std::remove(dump.c_str());
}

TEST(CommTopology, BadTopologyFileFailsInitNamingIt) {
  EnvGuard guard;
  const std::string path = tempPath("bad.xml");
  std::ofstream(path) << "<system version=\"1\"><cpu numaid=\"zero\"></system>";
  setenv("WEFT_TOPO_FILE", path.c_str(), 1);
  Comms c(2);
  EXPECT_NE(c.result, weftSuccess);
  const std::string why = weftGetLastError(nullptr);
  EXPECT_NE(why.find("WEFT_TOPO_FILE=" + path), std::string::npos) << why;
  setenv("WEFT_TOPO_FILE", (path + ".missing").c_str(), 1);
  Comms missing(1);
  EXPECT_NE(missing.result, weftSuccess);
  EXPECT_NE(std::string(weftGetLastError(nullptr)).find(".missing"), std::string::npos);
  std::remove(path.c_str());
}

// Ranks `first` and `first + 1` of a 4-rank communicator, as threads of this process, each on
// emulated GPU `rank`; `check` runs on the two communicators before they are destroyed. The
// result: 0 when both inits succeeded and `check` returned true.
int twoRanks(const weftUniqueId& id, int first, const std::function<bool(weftComm_t, weftComm_t)>& check) {
  weftComm_t comms[2] = {nullptr, nullptr};
  weftResult_t results[2] = {weftInternalError, weftInternalError};
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      (void)weft::device::gpuRuntime()->setDevice(first + i);
      results[i] = weftCommInitRank(&comms[i], 4, id, first + i);
    });
  }
  for (auto& t : threads) t.join();
  int code = results[0] != weftSuccess || results[1] != weftSuccess ? 1 : (check(comms[0], comms[1]) ? 0 : 2);
  for (weftComm_t c : comms) {
    if (c != nullptr) weftCommDestroy(c);
  }
  return code;
}

// Two processes of two ranks each: each process builds one global system that its two ranks
// share, both processes see the same placement, and rank 0's dump lists every rank's GPU.
TEST(CommTopology, TwoProcessesAgree) {
  EnvGuard guard;
  setenv("WEFT_EMULATED_DEVICES", "4", 1);
  const std::string dump = tempPath("procs.xml");
  std::remove(dump.c_str());
  setenv("WEFT_TOPO_DUMP_FILE", dump.c_str(), 1);
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  // Both processes check the same facts about the whole communicator.
  auto agreed = [](weftComm_t a, weftComm_t b) {
    const weft::core::CommTopology* t = a->impl->topology();
    if (t == nullptr || t != b->impl->topology() || t->global.nRanks() != 4) return false;
    for (int r = 0; r < 4; ++r) {
      for (int q = 0; q < 4; ++q) {
        if (t->global.sameGpu(r, q) != (r == q)) return false;
      }
      if (t->global.place(r).host != 0 || t->global.place(r).gpu < 0) return false;
    }
    // The host's lowest rank (0, in the parent) sets the P2P level for every rank of the host.
    if (t->p2pLevel == weft::topo::P2pLevel::kLoc) return false;
    return t->global.hosts.size() == 1 && t->routeBetween(0, 3).kind == t->routeBetween(3, 0).kind;
  };
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setenv("WEFT_P2P_LEVEL", "LOC", 1);  // the child's own setting must not win: rank 0's does
    _exit(twoRanks(id, 2, agreed));
  }
  const int here = twoRanks(id, 0, agreed);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(here, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: init failed in the child, 2: its topology differs";
  weft::topo::System back;
  ASSERT_TRUE(weft::topo::readTopologyFile(dump, &back).isOk());
  EXPECT_EQ(back.nodesOfType(NodeType::kGpu).size(), 4u);
  std::remove(dump.c_str());
}

}  // namespace

namespace {

// The GRAPH log's ring lines: two DGX H100 hosts with two ranks each (GPUs 0 and 1): every ring
// shows host 0's ranks, "|", host 1's, and the rank and NIC each host sends from (the NIC beside
// that rank's GPU: mlx5_0 for GPU 0, mlx5_1 for GPU 1).
TEST(CommTopology, RingLinesNameTheHostsAndTheNicsEachSendsFrom) {
  const weft::topo::System dgx = weft::topo::machines::dgxH100();
  const std::vector<int> gpus = dgx.nodesOfType(NodeType::kGpu);
  const std::vector<std::vector<std::string>> rings = weft::topo::searchedGpuRings(dgx);
  std::vector<weft::topo::RankDescription> descs;
  for (int r = 0; r < 4; ++r) {
    weft::topo::RankIdentity id;
    id.rank = r;
    id.device = r % 2;
    id.hostHash = r < 2 ? 0x1111 : 0x2222;
    id.gpuBusId = dgx.nodes[static_cast<size_t>(gpus[static_cast<size_t>(r % 2)])].pci.busId;
    id.hostRings = rings;
    descs.push_back(weft::topo::describeRank(dgx, id));
  }
  weft::topo::GlobalSystem g;
  ASSERT_TRUE(weft::topo::buildGlobalSystem(descs, 0x1111, &dgx, &g).isOk());
  const std::vector<std::vector<int>> channels = weft::topo::channelRings(g);
  ASSERT_EQ(channels.size(), 2u);  // two NICs in use per host
  const std::vector<std::string> lines = weft::core::channelRingLines(g, channels, 4);
  ASSERT_EQ(lines.size(), 2u);
  for (size_t c = 0; c < 2; ++c) {
    const std::vector<int>& ring = channels[c];
    const std::string want = "ring " + std::to_string(c) + " (channels " + std::to_string(c) + "; reversed: " +
                             std::to_string(c + 2) + "): " + std::to_string(ring[0]) + " " + std::to_string(ring[1]) +
                             " | " + std::to_string(ring[2]) + " " + std::to_string(ring[3]) +
                             "; host 0 sends from rank " + std::to_string(ring[1]) + " via NIC mlx5_" +
                             std::to_string(ring[1] % 2) + "; host 1 sends from rank " + std::to_string(ring[3]) +
                             " via NIC mlx5_" + std::to_string(ring[3] % 2);
    EXPECT_EQ(lines[c], want);
  }
  // Trees: NCCL's double binary tree over positions, tree 1 the mirror of tree 0 (4 ranks:
  // tree 0 rooted at position 1 with 0>1 2>3 3>1, tree 1 at position 2 with 0>2 1>0 3>2).
  const std::vector<std::string> trees = weft::core::channelTreeLines(channels, 4);
  ASSERT_EQ(trees.size(), 2u);
  for (size_t c = 0; c < 2; ++c) {
    const std::vector<int>& ring = channels[c];
    auto e = [&](int child, int parent) {
      return " " + std::to_string(ring[static_cast<size_t>(child)]) + ">" +
             std::to_string(ring[static_cast<size_t>(parent)]);
    };
    const std::string want = "all-reduce trees of ring " + std::to_string(c) + " (channels " + std::to_string(c) +
                             "; reversed: " + std::to_string(c + 2) +
                             "; a reversed channel builds them over the reversed ring): tree 0 root " +
                             std::to_string(ring[1]) + ":" + e(0, 1) + e(2, 3) + e(3, 1) + "; tree 1 root " +
                             std::to_string(ring[2]) + ":" + e(0, 2) + e(1, 0) + e(3, 2);
    EXPECT_EQ(trees[c], want);
  }
  // The two channels leave each host from different GPUs, so through different NICs.
  EXPECT_NE(channels[0][1], channels[1][1]);
  EXPECT_NE(channels[0][3], channels[1][3]);
}

}  // namespace
