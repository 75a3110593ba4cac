// Rank descriptions (made, checked, compared) and the communicator's global system built from
// them, on the model machines of machines.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "topology/global_system.h"
#include "topology/machines.h"
#include "topology/rank_desc.h"
#include "topology/topo_file.h"

namespace weft {
namespace topo {
namespace {

constexpr uint64_t kHostA = 0x1111;
constexpr uint64_t kHostB = 0x2222;

// Rank `rank` on `host` using GPU `gpu` (by dev) of `sys`, or host memory (gpu -1).
RankDescription rankOn(const System& sys, int rank, uint64_t host, int gpu, int ordinal) {
  RankIdentity id;
  id.rank = rank;
  id.device = gpu < 0 ? -1 : ordinal;
  id.hostHash = host;
  if (gpu >= 0) id.gpuBusId = sys.nodes[static_cast<size_t>(sys.nodesOfType(NodeType::kGpu)[gpu])].pci.busId;
  return describeRank(sys, id);
}

TEST(RankDescription, DescribesGpuNumaAndNics) {
  const System sys = machines::dgxH100();
  RankDescription d = rankOn(sys, 3, kHostA, 5, 0);
  ASSERT_TRUE(checkRankDescription(d, 3).isOk());
  EXPECT_EQ(d.numaId, 1);  // GPUs 4-7 hang under socket 1
  EXPECT_STRNE(d.gpuBusId, "");
  EXPECT_EQ(d.nNics, 8);
  EXPECT_EQ(d.nicsOmitted, 0);
  EXPECT_STREQ(d.cpuVendor, "GenuineIntel");
  // Each H100 shares a PCIe switch with its NIC: GPU-direct's condition travels with the rank.
  ASSERT_GE(d.nic, 0);
  EXPECT_TRUE(d.nicPath == static_cast<int32_t>(PathType::kPix) || d.nicPath == static_cast<int32_t>(PathType::kPxb))
      << pathTypeName(static_cast<PathType>(d.nicPath));
  RankDescription bent = d;
  bent.nicPath = 99;
  EXPECT_FALSE(checkRankDescription(bent, 3).isOk()) << "a path class out of range is refused";
  RankDescription host = rankOn(sys, 0, kHostA, -1, 0);
  EXPECT_EQ(host.nicPath, -1) << "a host rank has no GPU-to-NIC path";
  EXPECT_EQ(host.numaId, -1);  // two sockets, no CPU set: a host rank's NUMA node is not known
  EXPECT_STREQ(host.gpuBusId, "");
  // A host rank bound inside one socket's CPUs is on that socket's NUMA node.
  const std::string socket1 = sys.nodes[static_cast<size_t>(sys.nodesOfType(NodeType::kCpu)[1])].cpu.affinity;
  RankIdentity bound;
  bound.rank = 1;
  bound.hostHash = kHostA;
  bound.cpuAffinity = socket1;
  RankDescription onSocket1 = describeRank(sys, bound);
  EXPECT_EQ(onSocket1.numaId, 1) << socket1;
  EXPECT_STREQ(onSocket1.cpuAffinity, socket1.c_str());
  bound.cpuAffinity = "ffffffff,ffffffff,ffffffff,ffffffff,ffffffff,ffffffff,ffffffff";  // both sockets
  EXPECT_EQ(describeRank(sys, bound).numaId, -1);
  bound.cpuAffinity = "not a mask";
  EXPECT_EQ(describeRank(sys, bound).numaId, -1);
}

TEST(RankDescription, RefusesMalformedBytes) {
  const System sys = machines::pcie4Gpu();
  const RankDescription good = rankOn(sys, 2, kHostA, 1, 1);
  ASSERT_TRUE(checkRankDescription(good, 2).isOk());
  EXPECT_FALSE(checkRankDescription(good, 1).isOk());  // says it is another rank
  auto broken = [&](auto&& change) {
    RankDescription d = good;
    change(d);
    return checkRankDescription(d, 2);
  };
  EXPECT_FALSE(broken([](RankDescription& d) { d.magic = 0; }).isOk());
  EXPECT_FALSE(broken([](RankDescription& d) { d.version = 99; }).isOk());
  EXPECT_FALSE(broken([](RankDescription& d) { d.bytes = 12; }).isOk());
  EXPECT_FALSE(broken([](RankDescription& d) { std::memset(d.gpuUuid, 'x', sizeof(d.gpuUuid)); }).isOk());
  EXPECT_FALSE(broken([](RankDescription& d) { std::strcpy(d.gpuBusId, "zz:00"); }).isOk());
  EXPECT_FALSE(broken([](RankDescription& d) { d.nNics = kRankDescMaxNics + 1; }).isOk());
  EXPECT_FALSE(broken([](RankDescription& d) { d.nics[0].speedMbps = std::nan(""); }).isOk());
  EXPECT_FALSE(broken([](RankDescription& d) { d.numaId = -7; }).isOk());
  EXPECT_FALSE(broken([](RankDescription& d) { d.failed = 2; }).isOk());
  EXPECT_FALSE(broken([](RankDescription& d) { d.nRings = kRankDescMaxRings + 1; }).isOk());
  EXPECT_FALSE(broken([](RankDescription& d) { d.nRings = 1, d.ringPositions[0] = -1; }).isOk());
  EXPECT_FALSE(broken([](RankDescription& d) { d.nRings = 1, d.ringPositions[0] = 4096; }).isOk());
  EXPECT_FALSE(broken([](RankDescription& d) { d.nRings = 0, d.ringPositions[3] = 2; }).isOk());
  EXPECT_FALSE(broken([](RankDescription& d) { d.nic = d.nNics; }).isOk());
  EXPECT_FALSE(broken([](RankDescription& d) { d.nic = -2; }).isOk());
  // A rank that could not describe itself says so in a well-formed record.
  RankDescription failed = failedRankDescription(4);
  EXPECT_TRUE(checkRankDescription(failed, 4).isOk());
  EXPECT_EQ(failed.failed, 1);
  EXPECT_EQ(good.failed, 0);
  Status s = broken([](RankDescription& d) { d.version = 99; });
  EXPECT_NE(s.message().find("version 99"), std::string::npos) << s.message();
}

// Two processes with different CUDA_VISIBLE_DEVICES both call their GPU device 0: by ordinal they
// would be one GPU, by bus id they are two. And one GPU seen as device 0 and device 3 is one.
TEST(RankDescription, GpusAreKnownByBusIdNotOrdinal) {
  const System sys = machines::dgxH100();
  std::vector<RankDescription> descs = {rankOn(sys, 0, kHostA, 0, 0), rankOn(sys, 1, kHostA, 1, 0),
                                        rankOn(sys, 2, kHostA, 1, 3)};
  EXPECT_EQ(descs[0].device, descs[1].device);
  EXPECT_FALSE(sameGpu(descs[0], descs[1]));
  EXPECT_TRUE(sameGpu(descs[1], descs[2]));
  GlobalSystem g;
  ASSERT_TRUE(buildGlobalSystem(descs, kHostA, &sys, &g).isOk());
  EXPECT_FALSE(g.sameGpu(0, 1));
  EXPECT_TRUE(g.sameGpu(1, 2));
  EXPECT_EQ(g.maxRanksPerGpu(), 2);  // ranks 1 and 2; by ordinal it would be 2 on "device 0"
  // UUIDs win over bus ids when both ends have one.
  std::strcpy(descs[0].gpuUuid, "GPU-aaaa");
  std::strcpy(descs[1].gpuUuid, "GPU-aaaa");
  EXPECT_TRUE(sameGpu(descs[0], descs[1]));
  // Another host's GPU with the same bus id is another GPU.
  RankDescription far = rankOn(sys, 3, kHostB, 1, 1);
  EXPECT_FALSE(sameGpu(descs[2], far));
}

// GPUs by bus id and UUID: slices of one GPU (one bus id, two UUIDs: MIG instances) share its
// place in the topology but are not one GPU; one UUID at two bus ids of a host is refused.
TEST(GlobalSystem, GpusAreKnownByBusIdAndUuid) {
  const System sys = machines::dgxH100();
  std::vector<RankDescription> descs = {rankOn(sys, 0, kHostA, 1, 0), rankOn(sys, 1, kHostA, 1, 0),
                                        rankOn(sys, 2, kHostB, 1, 0)};
  std::strcpy(descs[0].gpuUuid, "0a0a0a0a-0000-0000-0000-000000000001");
  std::strcpy(descs[1].gpuUuid, "0a0a0a0a-0000-0000-0000-000000000002");
  std::strcpy(descs[2].gpuUuid, "0a0a0a0a-0000-0000-0000-000000000003");
  GlobalSystem g;
  ASSERT_TRUE(buildGlobalSystem(descs, kHostA, &sys, &g).isOk());
  EXPECT_EQ(g.place(0).gpu, g.place(1).gpu);  // one place in the machine ...
  EXPECT_FALSE(g.sameGpu(0, 1));              // ... but two GPUs
  EXPECT_EQ(g.maxRanksPerGpu(), 1);
  EXPECT_EQ(g.place(2).gpuUuid, "0a0a0a0a-0000-0000-0000-000000000003");
  std::strcpy(descs[1].gpuUuid, descs[0].gpuUuid);
  ASSERT_TRUE(buildGlobalSystem(descs, kHostA, &sys, &g).isOk());
  EXPECT_TRUE(g.sameGpu(0, 1));
  EXPECT_EQ(g.maxRanksPerGpu(), 2);
  // Rank 1 says the GPU of rank 0's UUID sits at another bus id of the same host.
  descs[1] = rankOn(sys, 1, kHostA, 2, 0);
  std::strcpy(descs[1].gpuUuid, descs[0].gpuUuid);
  Status s = buildGlobalSystem(descs, kHostA, &sys, &g);
  EXPECT_EQ(s.code(), weftRemoteError);
  EXPECT_NE(s.message().find("ranks 0 and 1 describe GPU 0a0a0a0a-0000-0000-0000-000000000001 at two bus ids"),
            std::string::npos)
      << s.message();
  // The same UUID on another host is that host's business (hosts are told apart by hash).
  descs[1] = rankOn(sys, 1, kHostB, 2, 0);
  std::strcpy(descs[1].gpuUuid, descs[0].gpuUuid);
  EXPECT_TRUE(buildGlobalSystem(descs, kHostA, &sys, &g).isOk());
}

TEST(GlobalSystem, PlacesRanksOnTheirHosts) {
  const System dgx = machines::dgxH100();
  std::vector<RankDescription> descs;
  for (int r = 0; r < 16; ++r) descs.push_back(rankOn(dgx, r, r < 8 ? kHostA : kHostB, r % 8, 0));
  descs.push_back(rankOn(dgx, 16, kHostB, -1, 0));
  GlobalSystem g;
  ASSERT_TRUE(buildGlobalSystem(descs, kHostA, &dgx, &g).isOk());
  ASSERT_EQ(g.hosts.size(), 2u);
  EXPECT_EQ(g.hostHashes[1], kHostB);
  // Host A is the full local model; host B what its ranks described: 2 CPUs, 8 GPUs, 8 NICs.
  EXPECT_EQ(g.hosts[0].nodes.size(), dgx.nodes.size());
  const System& b = g.hosts[1];
  EXPECT_EQ(b.nodesOfType(NodeType::kCpu).size(), 2u);
  EXPECT_EQ(b.nodesOfType(NodeType::kGpu).size(), 8u);
  EXPECT_EQ(b.nodesOfType(NodeType::kNic).size(), 8u);
  for (int r = 0; r < 16; ++r) {
    const RankPlace& p = g.place(r);
    EXPECT_EQ(p.host, r < 8 ? 0 : 1);
    ASSERT_GE(p.gpu, 0);
    EXPECT_EQ(p.gpuPlaced, r < 8) << "only the local model knows where its GPUs hang";
    EXPECT_EQ(g.hosts[p.host].nodes[p.gpu].pci.busId, descs[r].gpuBusId);
    EXPECT_EQ(g.hosts[p.host].nodes[p.gpu].gpu.rank, r);
    EXPECT_EQ(g.hosts[p.host].nodes[p.cpu].cpu.numaId, (r % 8) < 4 ? 0 : 1);
  }
  EXPECT_EQ(g.place(16).gpu, -1);
  EXPECT_EQ(g.place(16).host, 1);
  EXPECT_EQ(g.maxRanksPerGpu(), 1);
  // A described host reads back from the file the dump writes: same GPUs by bus id.
  System back;
  ASSERT_TRUE(parseTopologyXml(writeTopologyXml(b, 1), "hostB.xml", &back).isOk());
  EXPECT_EQ(back.nodesOfType(NodeType::kGpu).size(), 8u);
  for (int r = 8; r < 16; ++r) EXPECT_GE(back.findByBusId(descs[r].gpuBusId), 0) << r;
}

// Without a local model (null), every host is what its ranks described; host ranks get the NUMA
// node they reported and no GPU.
TEST(GlobalSystem, EveryHostFromDescriptions) {
  const System pcie = machines::pcie4Gpu();
  std::vector<RankDescription> descs = {rankOn(pcie, 0, kHostA, -1, 0), rankOn(pcie, 1, kHostA, 2, 0),
                                        rankOn(pcie, 2, kHostB, -1, 0)};
  descs[0].numaId = 1;
  GlobalSystem g;
  ASSERT_TRUE(buildGlobalSystem(descs, kHostA, nullptr, &g).isOk());
  ASSERT_EQ(g.hosts.size(), 2u);
  EXPECT_EQ(g.place(0).gpu, -1);
  EXPECT_EQ(g.hosts[0].nodes[g.place(0).cpu].cpu.numaId, 1);
  EXPECT_EQ(g.place(0).cpu, g.place(1).cpu);  // GPU 2 hangs under socket 1 too
  EXPECT_EQ(g.hosts[0].nodesOfType(NodeType::kNic).size(), 2u);  // the 100 Gb/s NIC and the bond
  EXPECT_EQ(g.hosts[0].nodesOfType(NodeType::kCpu).size(), 2u);
  EXPECT_FALSE(buildGlobalSystem({}, kHostA, nullptr, &g).isOk());
}

// Host ranks bound to alternating sockets: the ring visits each socket's ranks together, host by
// host; ranks whose NUMA node is unknown keep their rank order, ahead of the placed ones.
TEST(GlobalSystem, RingOrderFollowsHostsThenGpuRingsOrNumaNodes) {
  const System dgx = machines::dgxH100();
  const std::vector<int> cpus = dgx.nodesOfType(NodeType::kCpu);
  std::vector<RankDescription> descs;
  for (int r = 0; r < 8; ++r) {
    RankIdentity id;
    id.rank = r;
    id.hostHash = r == 4 || r == 6 ? kHostB : kHostA;  // host B: ranks 4 and 6
    if (r != 7) id.cpuAffinity = dgx.nodes[static_cast<size_t>(cpus[r % 2])].cpu.affinity;
    descs.push_back(describeRank(dgx, id));
  }
  GlobalSystem g;
  ASSERT_TRUE(buildGlobalSystem(descs, kHostA, &dgx, &g).isOk());
  EXPECT_EQ(g.numaOf(1), 1);
  EXPECT_EQ(g.numaOf(2), 0);
  EXPECT_EQ(g.numaOf(7), -1);
  // Host A: 7 (unknown), then NUMA 0: 0 2, then NUMA 1: 1 3 5; host B: 4 6 (both NUMA 0).
  EXPECT_EQ(hostRingOrder(g), (std::vector<int>{7, 0, 2, 1, 3, 5, 4, 6}));
  // GPU ranks that described their place in their host's searched ring follow it, host by host.
  std::vector<RankDescription> gpuRanks;
  const std::vector<std::string> ring = searchedGpuRing(dgx);
  ASSERT_EQ(ring.size(), 8u);
  for (int r = 0; r < 4; ++r) {
    RankIdentity id;
    id.rank = r;
    id.device = 0;
    id.hostHash = kHostA;
    id.gpuBusId = ring[static_cast<size_t>(3 - r)];  // rank 0 on the ring's 4th GPU, ...
    id.hostRings = {ring};
    gpuRanks.push_back(describeRank(dgx, id));
    EXPECT_EQ(gpuRanks.back().nRings, 1);
    EXPECT_EQ(gpuRanks.back().ringPositions[0], 3 - r);
  }
  ASSERT_TRUE(buildGlobalSystem(gpuRanks, kHostA, &dgx, &g).isOk());
  EXPECT_EQ(hostRingOrder(g), (std::vector<int>{3, 2, 1, 0}));
  // One NUMA node everywhere: rank order, host by host.
  const System pcie = machines::pcie4Gpu();
  std::vector<RankDescription> plain = {rankOn(pcie, 0, kHostA, -1, 0), rankOn(pcie, 1, kHostB, -1, 0),
                                        rankOn(pcie, 2, kHostA, -1, 0)};
  ASSERT_TRUE(buildGlobalSystem(plain, kHostA, &pcie, &g).isOk());
  EXPECT_EQ(hostRingOrder(g), (std::vector<int>{0, 2, 1}));
}

// The ranks of one host on every GPU of `sys` (rank r on the machine's GPU perm[r]), each
// describing its place in the host's searched rings.
std::vector<RankDescription> ranksOnRings(const System& sys, uint64_t host, int firstRank, const std::vector<int>& perm) {
  const std::vector<int> gpus = sys.nodesOfType(NodeType::kGpu);
  const std::vector<std::vector<std::string>> rings = searchedGpuRings(sys);
  std::vector<RankDescription> descs;
  for (size_t i = 0; i < perm.size(); ++i) {
    RankIdentity id;
    id.rank = firstRank + static_cast<int>(i);
    id.device = 0;
    id.hostHash = host;
    id.gpuBusId = sys.nodes[static_cast<size_t>(gpus[static_cast<size_t>(perm[i])])].pci.busId;
    id.hostRings = rings;
    descs.push_back(describeRank(sys, id));
  }
  return descs;
}

// The rank order of bus-id ring `ring` over ranks whose GPU bus ids are `bus[rank]`.
std::vector<int> ranksOf(const std::vector<std::string>& ring, const std::vector<RankDescription>& descs) {
  std::vector<int> out;
  for (const std::string& b : ring) {
    for (const RankDescription& d : descs) {
      if (d.gpuBusId == normaliseBusId(b)) out.push_back(d.rank);
    }
  }
  return out;
}

// One host: every searched ring is a channel's ring (MI300X: 7 arc-disjoint rings), mapped to
// ranks however the ranks are numbered.
TEST(GlobalSystem, ChannelRingsAreTheHostsSearchedRings) {
  const System sys = machines::mi300x();
  const std::vector<std::vector<std::string>> rings = searchedGpuRings(sys);
  ASSERT_EQ(rings.size(), 7u);
  const std::vector<RankDescription> descs = ranksOnRings(sys, kHostA, 0, {0, 7, 1, 6, 2, 5, 3, 4});
  for (const RankDescription& d : descs) {
    ASSERT_TRUE(checkRankDescription(d, d.rank).isOk());
    EXPECT_EQ(d.nRings, 7);
    EXPECT_GE(d.nic, 0);  // its own NIC beside it
  }
  GlobalSystem g;
  ASSERT_TRUE(buildGlobalSystem(descs, kHostA, &sys, &g).isOk());
  const std::vector<std::vector<int>> channels = channelRings(g);
  ASSERT_EQ(channels.size(), 7u);
  for (size_t c = 0; c < channels.size(); ++c) EXPECT_EQ(channels[c], ranksOf(rings[c], descs)) << "ring " << c;
  EXPECT_EQ(channels[0], hostRingOrder(g));
  // A host whose ranks are not all in its rings (host ranks): one ring, NUMA node by NUMA node.
  std::vector<RankDescription> plain = {rankOn(sys, 0, kHostA, -1, 0), rankOn(sys, 1, kHostA, 2, 0)};
  ASSERT_TRUE(buildGlobalSystem(plain, kHostA, &sys, &g).isOk());
  EXPECT_EQ(channelRings(g), (std::vector<std::vector<int>>{hostRingOrder(g)}));
}

// Two DGX H100 hosts, 8 ranks each: every channel's ring visits host A's ranks, then host B's
// (crossing hosts once each way), inside each host a rotation of one of the host's rings, and
// over the channels each host sends from and receives on each of its 8 NICs equally.
TEST(GlobalSystem, ChannelRingsJoinHostsThroughTheirNics) {
  const System sys = machines::dgxH100();
  std::vector<RankDescription> descs = ranksOnRings(sys, kHostA, 0, {0, 1, 2, 3, 4, 5, 6, 7});
  for (RankDescription& d : ranksOnRings(sys, kHostB, 8, {7, 6, 5, 4, 3, 2, 1, 0})) descs.push_back(d);
  GlobalSystem g;
  ASSERT_TRUE(buildGlobalSystem(descs, kHostA, &sys, &g).isOk());
  const std::vector<std::vector<int>> channels = channelRings(g);
  ASSERT_GE(channels.size(), 8u);  // one per NIC at least
  const std::vector<std::vector<std::string>> rings = searchedGpuRings(sys);
  std::vector<std::vector<int>> sent(2, std::vector<int>(8, 0)), received(2, std::vector<int>(8, 0));
  for (size_t c = 0; c < channels.size(); ++c) {
    const std::vector<int>& ring = channels[c];
    ASSERT_EQ(ring.size(), 16u);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(g.place(ring[static_cast<size_t>(i)]).host, i < 8 ? 0 : 1) << c;
    for (int h = 0; h < 2; ++h) {
      // The host's stretch is a rotation of its ring c mod (its rings).
      const std::vector<int> stretch(ring.begin() + 8 * h, ring.begin() + 8 * h + 8);
      std::vector<RankDescription> hostDescs(descs.begin() + 8 * h, descs.begin() + 8 * h + 8);
      std::vector<int> want = ranksOf(rings[c % rings.size()], hostDescs);
      std::rotate(want.begin(), std::find(want.begin(), want.end(), stretch[0]), want.end());
      EXPECT_EQ(stretch, want) << "channel " << c << " host " << h;
      ++received[static_cast<size_t>(h)][static_cast<size_t>(g.place(stretch.front()).nic)];
      ++sent[static_cast<size_t>(h)][static_cast<size_t>(g.place(stretch.back()).nic)];
    }
  }
  const int each = static_cast<int>(channels.size()) / 8;
  for (int h = 0; h < 2; ++h) {
    for (int nic = 0; nic < 8; ++nic) {
      EXPECT_EQ(sent[static_cast<size_t>(h)][static_cast<size_t>(nic)], each) << "host " << h << " NIC " << nic;
      EXPECT_EQ(received[static_cast<size_t>(h)][static_cast<size_t>(nic)], each) << "host " << h << " NIC " << nic;
    }
  }
  // Rail-aligned: each rank uses the NIC beside its GPU (mlx5_i beside GPU i; host B's rank 8 + i
  // is on GPU 7 - i).
  for (int r = 0; r < 16; ++r) {
    const int gpu = r < 8 ? r : 15 - r;
    EXPECT_EQ(g.place(r).nic, gpu) << "rank " << r;
    EXPECT_EQ(g.place(r).nicName, "mlx5_" + std::to_string(gpu)) << "rank " << r;
  }
}

// Each rank lists the GPUs its process sees; a peer's GPU is reached under the viewer's own
// ordinal for it, and only where both see both (the same answer on both sides).
TEST(GlobalSystem, GpusAreSeenByBusIdUnderEachProcesssOrdinals) {
  const System sys = machines::pcie4Gpu();
  const std::vector<int> gpus = sys.nodesOfType(NodeType::kGpu);
  auto bus = [&](int g) { return sys.nodes[static_cast<size_t>(gpus[static_cast<size_t>(g)])].pci.busId; };
  auto rank = [&](int r, int gpu, std::vector<int> visible) {
    RankIdentity id;
    id.rank = r;
    id.hostHash = kHostA;
    id.device = 0;
    id.gpuBusId = bus(gpu);
    for (int v : visible) id.visibleGpus.push_back(bus(v));
    return describeRank(sys, id);
  };
  // Rank 0 sees GPUs 0 and 1 (its GPU 0 at ordinal 0); rank 1 sees GPU 1 only, as ordinal 0;
  // rank 2 sees GPUs 1, 2 (ordinals 0, 1) and uses GPU 2; rank 3 sees everything, uses GPU 3.
  std::vector<RankDescription> descs = {rank(0, 0, {0, 1}), rank(1, 1, {1}), rank(2, 2, {1, 2}),
                                        rank(3, 3, {0, 1, 2, 3})};
  for (int r = 0; r < 4; ++r) ASSERT_TRUE(checkRankDescription(descs[r], r).isOk()) << r;
  EXPECT_EQ(descs[3].nVisibleGpus, 4);
  GlobalSystem g;
  ASSERT_TRUE(buildGlobalSystem(descs, kHostA, &sys, &g).isOk());
  EXPECT_EQ(ordinalSeenBy(g, 0, 1), 1);   // rank 0 sees rank 1's GPU as its device 1 ...
  EXPECT_EQ(ordinalSeenBy(g, 1, 0), -1);  // ... but rank 1 does not see rank 0's: no peer access
  EXPECT_EQ(ordinalSeenBy(g, 2, 1), 0);
  EXPECT_EQ(ordinalSeenBy(g, 1, 2), -1);
  EXPECT_EQ(ordinalSeenBy(g, 3, 2), 2);
  EXPECT_EQ(ordinalSeenBy(g, 2, 3), -1);
  EXPECT_EQ(ordinalSeenBy(g, 3, 0), 0);
  EXPECT_EQ(ordinalSeenBy(g, 0, 3), -1);
  // Every device ordinal is 0, yet the four ranks are on four GPUs.
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) EXPECT_EQ(g.sameGpu(a, b), a == b) << a << " " << b;
  }
  // A malformed list from a peer is refused.
  RankDescription bad = descs[3];
  bad.nVisibleGpus = kRankDescMaxVisibleGpus + 1;
  EXPECT_FALSE(checkRankDescription(bad, 3).isOk());
  bad = descs[3];
  std::memset(bad.visibleGpus[1], 'x', sizeof(bad.visibleGpus[1]));
  EXPECT_FALSE(checkRankDescription(bad, 3).isOk());
  // More GPUs than a record lists: the listed ordinals stay right, the rest are not seen.
  RankIdentity many;
  many.rank = 4;
  many.hostHash = kHostA;
  for (int i = 0; i < kRankDescMaxVisibleGpus + 2; ++i) many.visibleGpus.push_back(bus(i % 4));
  RankDescription d = describeRank(sys, many);
  EXPECT_EQ(d.nVisibleGpus, kRankDescMaxVisibleGpus);
  EXPECT_EQ(d.visibleGpusOmitted, 2);
  EXPECT_TRUE(checkRankDescription(d, 4).isOk());
}

}  // namespace
}  // namespace topo
}  // namespace weft
