// The sysfs source and the System detection builds from it, on a fake tree
// (tests/fixtures/sysfs/basic): NUMA nodes 0 (CPUs 0-3) and 1 (CPUs 4-7) and a memory-only
// node 2; a PCIe Gen5 x16 bridge 0000:00:01.0 on NUMA 0 with a ConnectX-7 (mlx5_0, one
// 400 Gb/s port, IPoIB netdev ib0) behind it; an E810 (eth0, 25 Gb/s, Gen4 x8) on a second host
// bridge, NUMA 1; loopback.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "detect_test_util.h"
#include "topology/detect.h"
#include "topology/detect_sources.h"

namespace weft {
namespace topo {
namespace {

using testing::cpuWithNuma;
using testing::linkBetween;
using testing::nicNamed;
using testing::sysfsFixture;

TEST(DetectParse, CpuListsAndAffinity) {
  std::vector<int> cpus;
  ASSERT_TRUE(detect::parseCpuList("0-3,8,10-11", &cpus));
  EXPECT_EQ(cpus, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  ASSERT_TRUE(detect::parseCpuList("", &cpus));
  EXPECT_TRUE(cpus.empty());
  EXPECT_FALSE(detect::parseCpuList("3-1", &cpus));
  EXPECT_FALSE(detect::parseCpuList("a", &cpus));

  EXPECT_EQ(detect::cpusToAffinity({0, 1}), "00000003");
  EXPECT_EQ(detect::cpusToAffinity({4, 5, 6, 7}), "000000f0");
  std::vector<int> all64;
  for (int i = 0; i < 64; ++i) all64.push_back(i);
  EXPECT_EQ(detect::cpusToAffinity(all64), "ffffffff,ffffffff");
  EXPECT_EQ(detect::cpusToAffinity({32}), "00000001,00000000");
  EXPECT_EQ(detect::cpusToAffinity({}), "");
}

TEST(DetectParse, SpeedsAndNames) {
  EXPECT_DOUBLE_EQ(detect::parseLinkSpeedGTs("16.0 GT/s PCIe"), 16.0);
  EXPECT_DOUBLE_EQ(detect::parseLinkSpeedGTs("2.5 GT/s"), 2.5);
  EXPECT_DOUBLE_EQ(detect::parseLinkSpeedGTs("Unknown"), 0.0);
  EXPECT_DOUBLE_EQ(detect::parseIbRateMbps("400 Gb/sec (4X NDR)"), 400000.0);
  EXPECT_DOUBLE_EQ(detect::parseIbRateMbps("2.5 Gb/sec (1X SDR)"), 2500.0);
  EXPECT_DOUBLE_EQ(detect::parseIbRateMbps("Invalid argument"), 0.0);
  EXPECT_TRUE(detect::isPciDirName("0000:18:00.0"));
  EXPECT_TRUE(detect::isPciDirName("abcd:ff:1f.7"));
  EXPECT_FALSE(detect::isPciDirName("pci0000:00"));
  EXPECT_FALSE(detect::isPciDirName("18:00.0"));
  EXPECT_FALSE(detect::isPciDirName("virtio0"));
  EXPECT_TRUE(detect::isImportantPciClass(0x020700));   // InfiniBand controller
  EXPECT_TRUE(detect::isImportantPciClass(0x030200));   // 3D controller
  EXPECT_TRUE(detect::isImportantPciClass(0x120000));   // processing accelerator
  EXPECT_TRUE(detect::isImportantPciClass(0x0c0600));   // InfiniBand (serial class)
  EXPECT_FALSE(detect::isImportantPciClass(0x060000));  // host bridge function
  EXPECT_FALSE(detect::isImportantPciClass(0x0c0330));  // USB
  EXPECT_FALSE(detect::isImportantPciClass(0xffff00));
}

TEST(DetectSysfs, ReadsNumaCpuinfoAndPci) {
  std::string root = sysfsFixture("basic");
  std::vector<detect::NumaDomain> numa;
  ASSERT_TRUE(detect::readSysfsNuma(root, &numa));
  ASSERT_EQ(numa.size(), 2u);  // node2 has memory only
  EXPECT_EQ(numa[0].id, 0);
  EXPECT_EQ(numa[0].cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(numa[1].id, 1);

  detect::CpuIdentity cpu;
  ASSERT_TRUE(detect::readProcCpuinfo(root, &cpu));
  EXPECT_EQ(cpu.vendor, "GenuineIntel");
  EXPECT_EQ(cpu.familyId, 6);
  EXPECT_EQ(cpu.modelId, 143);

  std::vector<detect::PciFunction> pci;
  ASSERT_TRUE(detect::readSysfsPci(root, &pci));
  ASSERT_EQ(pci.size(), 3u);
  EXPECT_EQ(pci[0].busId, "0000:00:01.0");
  EXPECT_EQ(pci[0].parentBusId, "");
  EXPECT_EQ(pci[0].pciClass, 0x060400u);
  EXPECT_DOUBLE_EQ(pci[0].linkSpeedGTs, 32.0);
  EXPECT_EQ(pci[0].linkWidth, 16);
  EXPECT_EQ(pci[1].busId, "0000:01:00.0");
  EXPECT_EQ(pci[1].parentBusId, "0000:00:01.0");
  EXPECT_EQ(pci[1].vendor, 0x15b3u);
  EXPECT_EQ(pci[1].device, 0x1021u);
  EXPECT_EQ(pci[1].subsystemDevice, 0x0023u);
  EXPECT_EQ(pci[1].numaNode, 0);
  EXPECT_EQ(pci[2].busId, "0000:80:02.0");
  EXPECT_EQ(pci[2].parentBusId, "");
  EXPECT_EQ(pci[2].numaNode, 1);
  EXPECT_EQ(pci[2].linkWidth, 8);
  EXPECT_EQ(pci[2].localCpus, (std::vector<int>{4, 5, 6, 7}));
}

TEST(DetectSysfs, ReadsNetPorts) {
  std::vector<detect::NetPort> ports;
  std::vector<std::string> notes;
  detect::readSysfsNetPorts(sysfsFixture("basic"), &ports, &notes);
  ASSERT_EQ(ports.size(), 2u) << "mlx5_0 port 1 (with ib0) and eth0; lo is not a NIC";
  EXPECT_EQ(ports[0].name, "mlx5_0");
  EXPECT_EQ(ports[0].kind, detect::PortKind::kRdma);
  EXPECT_EQ(ports[0].busId, "0000:01:00.0");
  EXPECT_EQ(ports[0].port, 1);
  EXPECT_DOUBLE_EQ(ports[0].speedMbps, 400000.0);
  EXPECT_TRUE(ports[0].up);
  EXPECT_EQ(ports[0].guid, 0x0c42a10300659a6cull);
  EXPECT_EQ(ports[0].netdevs, (std::vector<std::string>{"ib0"}));
  EXPECT_EQ(ports[1].name, "eth0");
  EXPECT_EQ(ports[1].busId, "0000:80:02.0");
  EXPECT_DOUBLE_EQ(ports[1].speedMbps, 25000.0);
  EXPECT_TRUE(notes.empty());
}

DetectOptions fakeRoot(const std::string& root) {
  DetectOptions o;
  o.root = root;
  o.nvmlLibrary = "";
  o.rsmiLibrary = "";
  return o;
}

TEST(DetectSysfs, BuildsSystemFromFakeTree) {
  System s;
  DetectReport rep;
  ASSERT_TRUE(detectSystem(fakeRoot(sysfsFixture("basic")), &s, &rep).isOk());
  ASSERT_NE(rep.find("hwloc"), nullptr);
  EXPECT_EQ(rep.find("hwloc")->state, SourceState::kSkipped);  // a fake root: hwloc would read the real machine
  EXPECT_EQ(rep.find("sysfs")->state, SourceState::kUsed);
  EXPECT_EQ(rep.find("rocm-kfd")->state, SourceState::kAbsent);
  EXPECT_EQ(s.source, "detected");

  // Two CPU nodes joined by the inter-socket link.
  int cpu0 = cpuWithNuma(s, 0), cpu1 = cpuWithNuma(s, 1);
  ASSERT_GE(cpu0, 0);
  ASSERT_GE(cpu1, 0);
  EXPECT_EQ(s.nodesOfType(NodeType::kCpu).size(), 2u);
  EXPECT_EQ(s.nodes[cpu0].cpu.affinity, "0000000f");
  EXPECT_EQ(s.nodes[cpu1].cpu.affinity, "000000f0");
  EXPECT_EQ(s.nodes[cpu0].cpu.vendor, "GenuineIntel");
  EXPECT_EQ(s.nodes[cpu0].cpu.modelId, 143);
  int smp = linkBetween(s, cpu0, cpu1);
  ASSERT_GE(smp, 0);
  EXPECT_EQ(s.links[smp].type, LinkType::kSmp);
  EXPECT_DOUBLE_EQ(s.links[smp].bwGBs, 10.0);

  // The bridge under CPU0, the ConnectX under the bridge, the E810 under CPU1.
  int bridge = s.findByBusId("0000:00:01.0");
  ASSERT_GE(bridge, 0);
  EXPECT_EQ(s.nodes[bridge].type, NodeType::kPciBridge);
  EXPECT_EQ(s.nodes[bridge].pci.pciClass, 0x060400u);
  int mlx = nicNamed(s, "mlx5_0");
  ASSERT_GE(mlx, 0);
  EXPECT_EQ(s.nodes[mlx].pci.busId, "0000:01:00.0");
  EXPECT_DOUBLE_EQ(s.nodes[mlx].nic.speedMbps, 400000.0);
  EXPECT_EQ(s.nodes[mlx].nic.port, 1);
  EXPECT_EQ(s.nodes[mlx].nic.guid, 0x0c42a10300659a6cull);
  int eth = nicNamed(s, "eth0");
  ASSERT_GE(eth, 0);
  EXPECT_DOUBLE_EQ(s.nodes[eth].nic.speedMbps, 25000.0);
  EXPECT_EQ(nicNamed(s, "ib0"), -1) << "ib0 is mlx5_0's own port, not a second NIC";
  EXPECT_EQ(s.nodesOfType(NodeType::kNic).size(), 2u);

  int l = linkBetween(s, cpu0, bridge);
  ASSERT_GE(l, 0);
  EXPECT_EQ(s.links[l].type, LinkType::kPcie);
  EXPECT_DOUBLE_EQ(s.links[l].bwGBs, 50.0);  // Gen5 x16
  l = linkBetween(s, bridge, mlx);
  ASSERT_GE(l, 0);
  EXPECT_DOUBLE_EQ(s.links[l].bwGBs, 50.0);
  l = linkBetween(s, cpu1, eth);
  ASSERT_GE(l, 0);
  EXPECT_DOUBLE_EQ(s.links[l].bwGBs, 12.0);  // Gen4 x8
  EXPECT_EQ(linkBetween(s, cpu0, mlx), -1);
  EXPECT_EQ(s.nodes.size(), 5u);
  EXPECT_EQ(s.links.size(), 4u);
  EXPECT_TRUE(rep.notes.empty()) << rep.format();
}

TEST(DetectSysfs, EmptyRootStillGivesOneCpu) {
  std::string dir = ::testing::TempDir() + "/weft_detect_empty";
  std::filesystem::create_directories(dir);
  System s;
  DetectReport rep;
  ASSERT_TRUE(detectSystem(fakeRoot(dir), &s, &rep).isOk());
  EXPECT_EQ(rep.find("sysfs")->state, SourceState::kAbsent);
  EXPECT_EQ(rep.find("rocm-kfd")->state, SourceState::kAbsent);
  ASSERT_EQ(s.nodes.size(), 1u);
  EXPECT_EQ(s.nodes[0].type, NodeType::kCpu);
  EXPECT_FALSE(rep.notes.empty());
  EXPECT_NE(rep.format().find("sysfs"), std::string::npos);
}

TEST(DetectSysfs, NullOutputIsAnError) {
  Status st = detectSystem(nullptr, nullptr);
  EXPECT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), weftInvalidArgument);
}

}  // namespace
}  // namespace topo
}  // namespace weft
