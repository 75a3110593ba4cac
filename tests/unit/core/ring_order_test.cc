// Rings follow the topology (issue 14). Host-memory ranks: four processes on a machine that a
// topology file describes as two NUMA nodes of one CPU each, each process bound to one CPU,
// ranks 0 and 2 on node 0 and ranks 1 and 3 on node 1: the ring visits node 0's ranks, then
// node 1's (0 2 1 3). GPU ranks: four ranks on emulated GPUs that a PCIe topology file places
// two per switch, devices 0 and 2 under one socket's switch, 1 and 3 under the other's: the ring
// keeps each switch's GPUs adjacent (the search's ring). Every rank agrees on the order, and an
// all-reduce over it is right.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/os.h"
#include "device/device.h"
#include "core/api_internal.h"
#include "core/comm.h"
#include "topology/machines.h"
#include "topology/rank_desc.h"
#include "topology/topo_file.h"
#include "weft/weft.h"

namespace {

using weft::topo::NodeType;
using weft::topo::RouteKind;

constexpr int kRanks = 4;

// The two-socket PCIe server with socket 0 holding CPU 0 only and socket 1 CPU 1 only.
std::string writeTwoNodeFile() {
  weft::topo::System sys = weft::topo::machines::pcie4Gpu();
  const std::vector<int> cpus = sys.nodesOfType(NodeType::kCpu);
  sys.nodes[static_cast<size_t>(cpus[0])].cpu.affinity = "00000001";
  sys.nodes[static_cast<size_t>(cpus[1])].cpu.affinity = "00000002";
  const std::string path = std::string(::testing::TempDir()) + "/weft_numa_" + std::to_string(getpid()) + ".xml";
  std::ofstream(path) << weft::topo::writeTopologyXml(sys, 1);
  return path;
}

// One rank in a forked process: 0 when its ring order is 0 2 1 3 and the all-reduce is right,
// otherwise a code saying what went wrong.
int runRank(const weftUniqueId& id, int rank) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(rank % 2, &one);
  if (sched_setaffinity(0, sizeof(one), &one) != 0) return 10;
  weftComm_t comm = nullptr;
  if (weftCommInitRank(&comm, kRanks, id, rank) != weftSuccess) return 11;
  int code = 0;
  const std::vector<int> order = comm->impl->ringOrder();
  if (order != std::vector<int>{0, 2, 1, 3}) code = 12;
  if (comm->impl->topology()->global.numaOf(rank) != rank % 2) code = 13;
  const size_t count = 1 << 18;  // many slots each way
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>((rank + 1) * (i % 7));
  if (weftAllReduce(v.data(), v.data(), count, weftFloat32, weftSum, comm, nullptr) != weftSuccess) code = 14;
  for (size_t i = 0; i < count && code == 0; ++i) {
    if (v[i] != static_cast<float>(10 * (i % 7))) code = 15;
  }
  weftCommDestroy(comm);
  return code;
}

TEST(RingOrder, HostRanksFollowNumaNodes) {
  if (weft::usableCpus() < 2) GTEST_SKIP() << "needs two CPUs to bind ranks to two NUMA nodes";
  const std::string file = writeTwoNodeFile();
  setenv("WEFT_TOPO_FILE", file.c_str(), 1);
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::vector<pid_t> children;
  for (int r = 1; r < kRanks; ++r) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(runRank(id, r));
    children.push_back(pid);
  }
  // Rank 0 in a child too: this process's own affinity stays as it was.
  pid_t zero = fork();
  ASSERT_GE(zero, 0);
  if (zero == 0) _exit(runRank(id, 0));
  children.insert(children.begin(), zero);
  unsetenv("WEFT_TOPO_FILE");
  for (int r = 0; r < kRanks; ++r) {
    int status = 0;
    ASSERT_EQ(waitpid(children[static_cast<size_t>(r)], &status, 0), children[static_cast<size_t>(r)]);
    ASSERT_TRUE(WIFEXITED(status)) << "rank " << r;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "rank " << r
                                      << ": 11 init failed, 12 ring order is not 0 2 1 3, 13 wrong NUMA node, "
                                         "14 all-reduce failed, 15 wrong sum";
  }
  std::remove(file.c_str());
}

// The 4-GPU PCIe server with its GPUs at the bus ids of emulated devices 0, 2, 1, 3: devices 0
// and 2 share socket 0's switch, 1 and 3 socket 1's.
std::string writeInterleavedGpuFile() {
  weft::topo::System sys = weft::topo::machines::pcie4Gpu();
  const std::vector<int> gpus = sys.nodesOfType(NodeType::kGpu);
  const int device[4] = {0, 2, 1, 3};
  for (size_t i = 0; i < gpus.size(); ++i) {
    char bus[32];
    std::snprintf(bus, sizeof(bus), "0000:%02x:00.0", device[i]);
    sys.nodes[static_cast<size_t>(gpus[i])].pci.busId = bus;
  }
  const std::string path = std::string(::testing::TempDir()) + "/weft_ring_" + std::to_string(getpid()) + ".xml";
  std::ofstream(path) << weft::topo::writeTopologyXml(sys, 1);
  return path;
}

// Whether a and b are neighbours in the cyclic order.
bool adjacent(const std::vector<int>& order, int a, int b) {
  for (size_t i = 0; i < order.size(); ++i) {
    const int next = order[(i + 1) % order.size()];
    if ((order[i] == a && next == b) || (order[i] == b && next == a)) return true;
  }
  return false;
}

TEST(RingOrder, GpuRanksFollowTheSearchedRing) {
  setenv("WEFT_GPU_BACKEND", "emulated", 1);
  setenv("WEFT_EMULATED_DEVICES", "4", 1);
  const std::string file = writeInterleavedGpuFile();
  setenv("WEFT_TOPO_FILE", file.c_str(), 1);
  std::vector<weftComm_t> comms(kRanks, nullptr);
  std::vector<std::vector<int>> orders(kRanks);
  std::vector<std::string> errors(kRanks);
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::vector<std::thread> threads;
  const size_t count = 1 << 16;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      weft::device::Runtime* rt = weft::device::gpuRuntime();
      void* buf = nullptr;
      if (!rt->setDevice(r).isOk() || !rt->allocDevice(count * sizeof(float), &buf).isOk()) {
        errors[r] = "no device memory";
        return;
      }
      weftComm_t comm = nullptr;
      if (weftCommInitRank(&comm, kRanks, id, r) != weftSuccess) {
        errors[r] = weftGetLastError(nullptr);
        return;
      }
      orders[r] = comm->impl->ringOrder();
      float* v = static_cast<float*>(buf);
      for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>(r + 1);
      if (weftAllReduce(v, v, count, weftFloat32, weftSum, comm, WEFT_STREAM_DEFAULT) != weftSuccess ||
          weftCommFinalize(comm) != weftSuccess) {
        errors[r] = weftGetLastError(comm);
      }
      for (size_t i = 0; i < count && errors[r].empty(); ++i) {
        if (v[i] != 10.0f) errors[r] = "element " + std::to_string(i) + " is " + std::to_string(v[i]);
      }
      weftCommDestroy(comm);
      (void)rt->freeDevice(buf);
    });
  }
  for (auto& t : threads) t.join();
  unsetenv("WEFT_TOPO_FILE");
  unsetenv("WEFT_EMULATED_DEVICES");
  std::remove(file.c_str());
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  ASSERT_EQ(orders[0].size(), 4u) << "rank order would be an empty list: the ring must differ from it";
  EXPECT_TRUE(adjacent(orders[0], 0, 2) && adjacent(orders[0], 1, 3))
      << orders[0][0] << orders[0][1] << orders[0][2] << orders[0][3];
  for (int r = 1; r < kRanks; ++r) EXPECT_EQ(orders[r], orders[0]) << "rank " << r;
}

// Trees follow the searched ring too: on the interleaved PCIe server (devices 0 and 2 under one
// socket's switch, 1 and 3 under the other's) each tree of the all-reduce's double binary tree
// crosses between the sockets over one edge (in rank order each would cross over two), and
// tree all-reduce and broadcast are right.
TEST(RingOrder, TreesFollowTheSearchedRing) {
  setenv("WEFT_GPU_BACKEND", "emulated", 1);
  setenv("WEFT_EMULATED_DEVICES", "4", 1);
  setenv("WEFT_ALGO", "tree", 1);
  const std::string file = writeInterleavedGpuFile();
  setenv("WEFT_TOPO_FILE", file.c_str(), 1);
  std::vector<std::string> errors(kRanks);
  std::vector<std::array<int, 2>> parents(kRanks, {-2, -2});  // per rank, in trees 0 and 1 of channel 0
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::vector<std::thread> threads;
  const size_t count = (1 << 15) + 5;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      weft::device::Runtime* rt = weft::device::gpuRuntime();
      void* buf = nullptr;
      weftComm_t comm = nullptr;
      if (!rt->setDevice(r).isOk() || !rt->allocDevice(count * sizeof(float), &buf).isOk() ||
          weftCommInitRank(&comm, kRanks, id, r) != weftSuccess) {
        errors[r] = "init failed";
        return;
      }
      weft::core::CollCall call;
      call.count = count;
      const weft::coll::RankSchedule s = comm->impl->scheduleFor(call);
      for (int t = 0; t < 2; ++t) {
        const std::vector<weft::coll::Step>& down = s.lanes[static_cast<size_t>(t * 2 + 1)].steps;
        parents[r][t] = down.empty() ? -1 : down[0].recvPeer;  // the root's down lane is empty
      }
      float* v = static_cast<float*>(buf);
      for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>(r + 1 + i % 3);
      if (weftAllReduce(v, v, count, weftFloat32, weftSum, comm, WEFT_STREAM_DEFAULT) != weftSuccess ||
          weftBroadcast(v, v, count, weftFloat32, 3, comm, WEFT_STREAM_DEFAULT) != weftSuccess ||
          weftCommFinalize(comm) != weftSuccess) {
        errors[r] = weftGetLastError(comm);
      }
      for (size_t i = 0; i < count && errors[r].empty(); ++i) {
        if (v[i] != static_cast<float>(10 + 4 * (i % 3))) errors[r] = "element " + std::to_string(i) + " wrong";
      }
      weftCommDestroy(comm);
      (void)rt->freeDevice(buf);
    });
  }
  for (auto& t : threads) t.join();
  unsetenv("WEFT_TOPO_FILE");
  unsetenv("WEFT_ALGO");
  unsetenv("WEFT_EMULATED_DEVICES");
  std::remove(file.c_str());
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  for (int t = 0; t < 2; ++t) {
    int roots = 0, crossings = 0;
    for (int r = 0; r < kRanks; ++r) {
      const int p = parents[r][t];
      ASSERT_GE(p, -1) << "rank " << r;
      if (p < 0) ++roots;
      if (p >= 0 && p % 2 != r % 2) ++crossings;  // devices 0, 2: socket 0; 1, 3: socket 1
    }
    EXPECT_EQ(roots, 1) << "tree " << t;
    EXPECT_EQ(crossings, 1) << "tree " << t << ": parents " << parents[0][t] << " " << parents[1][t] << " "
                            << parents[2][t] << " " << parents[3][t];
  }
}

// Emulated GPUs posing as the GPUs of a model machine (written as a topology file): emulated
// device d is the machine's GPU perm[d], so rank order is not the machine's order. Every rank
// of an 8-rank (4 on the 4-GPU PCIe server) communicator takes the rings the search builds for
// that machine, mapped to ranks, its routes follow the machine's paths, and every collective is
// right over it.
struct MachineCase {
  const char* name;
  weft::topo::System (*make)();
  int nGpus;
  int fileVersion;  // 1: NCCL's format; 2: RCCL's (xGMI links)
  // GPUs i and j (the machine's order) use peer access iff i / p2pGroup == j / p2pGroup; other
  // pairs are staged through host memory. NVLink / xGMI machines: all of them. The PCIe servers
  // (Intel: WEFT_P2P_LEVEL defaults to PXB): the two GPUs under one switch.
  int p2pGroup;
};

// Two Intel sockets, two PCIe switches each, two GPUs under each switch, no NVLink.
weft::topo::System pcieTwoSockets8Gpu() { return weft::topo::machines::pcieServer(2, 2, 2); }

constexpr int kFirstBus = 0xf0;

// One rank of RingOfMachine on emulated device r: every collective on device buffers (all-reduce
// and broadcast in place, all-gather, reduce-scatter, reduce to rank 0, all-to-all), results
// checked. "" when all is right, else what went wrong; *order: the communicator's ring order.
std::string runMachineRank(int r, int n, const weftUniqueId& id, size_t count, std::vector<std::vector<int>>* order,
                           std::vector<RouteKind>* routes) {
  weft::device::Runtime* rt = weft::device::gpuRuntime();
  const size_t nc = static_cast<size_t>(n) * count;
  std::vector<void*> bufs(6, nullptr);  // v, all, rs, red: count or n*count floats; src, dst: n*count
  const size_t sizes[6] = {count, nc, count, count, nc, nc};
  if (!rt->setDevice(r).isOk()) return "setDevice failed";
  for (size_t b = 0; b < bufs.size(); ++b) {
    if (!rt->allocDevice(sizes[b] * sizeof(float), &bufs[b]).isOk()) return "no device memory";
  }
  float* v = static_cast<float*>(bufs[0]);
  float* all = static_cast<float*>(bufs[1]);
  float* rs = static_cast<float*>(bufs[2]);
  float* red = static_cast<float*>(bufs[3]);
  float* src = static_cast<float*>(bufs[4]);
  float* dst = static_cast<float*>(bufs[5]);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>(r + 1 + i % 3);
  for (size_t i = 0; i < nc; ++i) src[i] = static_cast<float>(r * 1000 + static_cast<int>(i / count) + i % 5);
  weftComm_t comm = nullptr;
  if (weftCommInitRank(&comm, n, id, r) != weftSuccess) return weftGetLastError(nullptr);
  *order = comm->impl->ringOrders();
  for (int q = 0; q < n; ++q) routes->push_back(comm->impl->topology()->routeBetween(r, q).kind);
  const weftStream_t s = WEFT_STREAM_DEFAULT;
  const bool ok = weftAllReduce(v, v, count, weftFloat32, weftSum, comm, s) == weftSuccess &&
                  weftAllGather(v, all, count, weftFloat32, comm, s) == weftSuccess &&
                  weftBroadcast(v, v, count, weftFloat32, n - 1, comm, s) == weftSuccess &&
                  weftReduceScatter(all, rs, count, weftFloat32, weftSum, comm, s) == weftSuccess &&
                  weftReduce(v, red, count, weftFloat32, weftSum, 0, comm, s) == weftSuccess &&
                  weftAllToAll(src, dst, count, weftFloat32, comm, s) == weftSuccess &&
                  weftCommFinalize(comm) == weftSuccess;
  std::string err = ok ? "" : weftGetLastError(comm);
  const float sumRanks = static_cast<float>(n * (n + 1) / 2);
  for (size_t i = 0; i < count && err.empty(); ++i) {
    const float want = sumRanks + static_cast<float>(n * (i % 3));
    if (v[i] != want) err = "all-reduce/broadcast element " + std::to_string(i) + " is " + std::to_string(v[i]);
    for (int q = 0; q < n && err.empty(); ++q) {
      if (all[static_cast<size_t>(q) * count + i] != want) err = "all-gather block " + std::to_string(q) + " wrong";
    }
    if (err.empty() && rs[i] != n * want) err = "reduce-scatter element " + std::to_string(i) + " wrong";
    if (err.empty() && r == 0 && red[i] != n * want) err = "reduce element " + std::to_string(i) + " wrong";
    for (int q = 0; q < n && err.empty(); ++q) {  // block q came from rank q's block r
      const size_t there = static_cast<size_t>(r) * count + i;  // its index in rank q's src
      if (dst[static_cast<size_t>(q) * count + i] != static_cast<float>(q * 1000 + r + there % 5)) {
        err = "all-to-all block " + std::to_string(q) + " wrong";
      }
    }
  }
  weftCommDestroy(comm);
  for (void* b : bufs) (void)rt->freeDevice(b);
  return err;
}

class RingOfMachine : public ::testing::TestWithParam<MachineCase> {};

TEST_P(RingOfMachine, RanksFollowTheSearchedRingAndCollectivesAreRight) {
  const MachineCase& m = GetParam();
  const int n = m.nGpus;
  weft::topo::System sys = m.make();
  const std::vector<int> gpus = sys.nodesOfType(NodeType::kGpu);
  ASSERT_EQ(static_cast<int>(gpus.size()), n);
  std::vector<int> perm(static_cast<size_t>(n));  // device d is GPU perm[d]: 0, n-1, 1, n-2, ...
  for (int d = 0; d < n; ++d) perm[static_cast<size_t>(d)] = d % 2 == 0 ? d / 2 : n - 1 - d / 2;
  for (int d = 0; d < n; ++d) {
    char bus[32];
    std::snprintf(bus, sizeof(bus), "0000:%02x:00.0", kFirstBus + d);  // a bus the model does not use
    sys.nodes[static_cast<size_t>(gpus[static_cast<size_t>(perm[static_cast<size_t>(d)])])].pci.busId = bus;
  }
  // The expected rings: the search's rings over this machine, bus ids mapped back to devices.
  std::vector<std::vector<int>> expected;
  for (const std::vector<std::string>& ring : weft::topo::searchedGpuRings(sys)) {
    expected.emplace_back();
    for (const std::string& bus : ring) expected.back().push_back(std::stoi(bus.substr(5, 2), nullptr, 16) - kFirstBus);
    ASSERT_EQ(static_cast<int>(expected.back().size()), n);
  }
  ASSERT_FALSE(expected.empty());
  bool identity = expected.size() == 1;
  for (int i = 0; identity && i < n; ++i) identity = expected[0][static_cast<size_t>(i)] == i;
  // A path per machine: a process reads each WEFT_TOPO_FILE path once.
  const std::string path = std::string(::testing::TempDir()) + "/weft_machine_" + m.name + "_" +
                           std::to_string(getpid()) + ".xml";
  std::ofstream(path) << weft::topo::writeTopologyXml(sys, m.fileVersion);
  setenv("WEFT_GPU_BACKEND", "emulated", 1);
  setenv("WEFT_EMULATED_DEVICES", std::to_string(n).c_str(), 1);
  setenv("WEFT_EMULATED_FIRST_BUS", std::to_string(kFirstBus).c_str(), 1);
  setenv("WEFT_TOPO_FILE", path.c_str(), 1);
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::vector<std::vector<std::vector<int>>> orders(static_cast<size_t>(n));
  std::vector<std::vector<RouteKind>> routes(static_cast<size_t>(n));
  std::vector<std::string> errors(static_cast<size_t>(n));
  const size_t count = 4096 * static_cast<size_t>(n) + 3;  // uneven slices
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      errors[static_cast<size_t>(r)] =
          runMachineRank(r, n, id, count, &orders[static_cast<size_t>(r)], &routes[static_cast<size_t>(r)]);
    });
  }
  for (auto& t : threads) t.join();
  unsetenv("WEFT_TOPO_FILE");
  unsetenv("WEFT_EMULATED_DEVICES");
  unsetenv("WEFT_EMULATED_FIRST_BUS");
  std::remove(path.c_str());
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << m.name << " rank " << r;
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(orders[static_cast<size_t>(r)], identity ? std::vector<std::vector<int>>{} : expected)
        << m.name << " rank " << r;
  }
  // Routes: rank r is on GPU perm[r]; staged exactly where the machine's paths leave the group.
  int staged = 0;
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(routes[static_cast<size_t>(r)].size(), static_cast<size_t>(n)) << m.name << " rank " << r;
    for (int q = 0; q < n; ++q) {
      if (q == r) continue;
      const bool together = perm[static_cast<size_t>(r)] / m.p2pGroup == perm[static_cast<size_t>(q)] / m.p2pGroup;
      const RouteKind got = routes[static_cast<size_t>(r)][static_cast<size_t>(q)];
      EXPECT_EQ(got, together ? RouteKind::kP2p : RouteKind::kStaged)
          << m.name << ": rank " << r << " (GPU " << perm[static_cast<size_t>(r)] << ") to rank " << q << " (GPU "
          << perm[static_cast<size_t>(q)] << ") is " << weft::topo::routeKindName(got);
      staged += got == RouteKind::kStaged;
    }
  }
  EXPECT_EQ(staged > 0, m.p2pGroup < n) << m.name;
}

INSTANTIATE_TEST_SUITE_P(Machines, RingOfMachine,
                         ::testing::Values(MachineCase{"dgx_h100", &weft::topo::machines::dgxH100, 8, 1, 8},
                                           MachineCase{"mi300x", &weft::topo::machines::mi300x, 8, 2, 8},
                                           MachineCase{"pcie_4gpu", &weft::topo::machines::pcie4Gpu, 4, 1, 2},
                                           MachineCase{"pcie_2socket_8gpu", &pcieTwoSockets8Gpu, 8, 1, 2}),
                         [](const ::testing::TestParamInfo<MachineCase>& info) { return info.param.name; });

}  // namespace
