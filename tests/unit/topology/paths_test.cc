// Path classes, bandwidths and NIC choice on the model machines (topology/machines.h), against
// what nvidia-smi topo -m / rocm-smi print on the real ones (formats.md sections 3 and 7).
#include <gtest/gtest.h>

#include <string>

#include "topology/link_bw.h"
#include "topology/machines.h"
#include "topology/paths.h"

namespace weft {
namespace topo {
namespace {

class Machine {
 public:
  explicit Machine(System s) : sys(std::move(s)), paths(computePaths(sys)) {}
  int gpu(int i) const { return paths.gpus()[static_cast<size_t>(i)]; }
  int nic(int i) const { return paths.nics()[static_cast<size_t>(i)]; }
  std::string gg(int a, int b) const { return pathLabel(paths, gpu(a), gpu(b)); }
  std::string gn(int a, int b) const { return pathLabel(paths, gpu(a), nic(b)); }
  const Path& pathGG(int a, int b) const { return paths.at(gpu(a), gpu(b)); }
  System sys;
  PathMatrix paths;
};

TEST(Paths, DgxH100NvSwitchAndPcieSwitches) {
  Machine m(machines::dgxH100());
  ASSERT_EQ(m.paths.gpus().size(), 8u);
  ASSERT_EQ(m.paths.nics().size(), 8u);
  for (int a = 0; a < 8; ++a) {
    EXPECT_EQ(m.gg(a, a), "X");
    for (int b = 0; b < 8; ++b) {
      if (a != b) {
        EXPECT_EQ(m.gg(a, b), "NV18") << a << "-" << b;
      }
    }
  }
  // Through the switches every pair gets the GPU's full NVLink bandwidth, two hops.
  EXPECT_NEAR(m.pathGG(0, 4).bwGBs, 18 * bw::nvlinkPerLink(90), 1e-9);
  EXPECT_EQ(m.pathGG(0, 4).hops, 2);
  EXPECT_EQ(m.gn(0, 0), "PIX");
  EXPECT_EQ(m.gn(0, 1), "PIX");
  EXPECT_EQ(m.gn(0, 2), "NODE");  // the other switch of socket 0
  EXPECT_EQ(m.gn(0, 4), "SYS");
  EXPECT_EQ(pathLabel(m.paths, m.nic(0), m.nic(7)), "SYS");
  for (int g = 0; g < 8; ++g) EXPECT_EQ(nearestNic(m.sys, m.paths, m.gpu(g)), m.nic(g)) << "GPU" << g;
}

TEST(Paths, DgxH100PcieFallbackIsSysAcrossSocketsWithTheSmpLinkAsBottleneck) {
  // Without NVLink the same GPUs talk over PCIe: GPU0-GPU1 one switch, GPU0-GPU4 across sockets.
  System s = machines::dgxH100();
  std::vector<Link> kept;
  for (const Link& l : s.links) {
    if (l.type != LinkType::kNvLink) kept.push_back(l);
  }
  s.links = kept;
  Machine m(s);
  EXPECT_EQ(m.gg(0, 1), "PIX");
  EXPECT_EQ(m.gg(0, 2), "NODE");
  EXPECT_EQ(m.gg(0, 4), "SYS");
  EXPECT_NEAR(m.pathGG(0, 4).bwGBs, bw::smp("GenuineIntel"), 1e-9);
  EXPECT_NEAR(m.pathGG(0, 1).bwGBs, bw::pcie(32, 16), 1e-9);
  EXPECT_EQ(m.pathGG(0, 1).hops, 2);
  EXPECT_EQ(m.pathGG(0, 4).hops, 5);  // gpu-switch-cpu-cpu-switch-gpu
}

TEST(Paths, DgxA100) {
  Machine m(machines::dgxA100());
  EXPECT_EQ(m.gg(0, 1), "NV12");
  EXPECT_EQ(m.gg(0, 7), "NV12");
  EXPECT_NEAR(m.pathGG(0, 7).bwGBs, 12 * bw::nvlinkPerLink(80), 1e-9);
  EXPECT_EQ(m.gn(0, 0), "PIX");
  EXPECT_EQ(m.gn(0, 1), "PIX");
  EXPECT_EQ(m.gn(0, 2), "NODE");
  EXPECT_EQ(m.gn(0, 5), "SYS");
  EXPECT_EQ(nearestNic(m.sys, m.paths, m.gpu(5)), m.nic(5));
}

TEST(Paths, TwoLevelSwitchIsPxb) {
  // CPU - top switch - {switch A - GPU0, GPU1; switch B - GPU2}.
  System s;
  Node cpu, bridge, gpu;
  cpu.type = NodeType::kCpu;
  bridge.type = NodeType::kPciBridge;
  gpu.type = NodeType::kGpu;
  int c = s.addNode(cpu);
  int top = s.addNode(bridge), a = s.addNode(bridge), b = s.addNode(bridge);
  s.addLink(top, c, LinkType::kPcie, 1, 24);
  s.addLink(a, top, LinkType::kPcie, 1, 24);
  s.addLink(b, top, LinkType::kPcie, 1, 12);
  int g[3];
  for (int i = 0; i < 3; ++i) {
    gpu.gpu.dev = i;
    g[i] = s.addNode(gpu);
    s.addLink(g[i], i < 2 ? a : b, LinkType::kPcie, 1, 24);
  }
  PathMatrix m = computePaths(s);
  EXPECT_EQ(pathLabel(m, g[0], g[1]), "PIX");
  EXPECT_EQ(pathLabel(m, g[0], g[2]), "PXB");
  EXPECT_EQ(m.at(g[0], g[2]).hops, 4);
  EXPECT_NEAR(m.at(g[0], g[2]).bwGBs, 12, 1e-9);
}

TEST(Paths, Mi300xFullyConnectedXgmi) {
  Machine m(machines::mi300x());
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      EXPECT_EQ(m.gg(a, b), "XGMI1");
      EXPECT_EQ(m.pathGG(a, b).hops, 1);
      EXPECT_NEAR(m.pathGG(a, b).bwGBs, bw::xgmiPerLink("gfx942"), 1e-9);
      EXPECT_EQ(m.pathGG(a, b).resources.size(), 1u);
    }
    EXPECT_EQ(m.gn(a, a), "PIX");
    EXPECT_EQ(nearestNic(m.sys, m.paths, m.gpu(a)), m.nic(a));
  }
  EXPECT_EQ(m.gn(0, 1), "NODE");
  EXPECT_EQ(m.gn(0, 4), "SYS");
}

TEST(Paths, Mi250xPackagesAndBridgedXgmi) {
  Machine m(machines::mi250x());
  EXPECT_EQ(m.gg(0, 1), "XGMI4");
  EXPECT_EQ(m.gg(0, 6), "XGMI2");
  EXPECT_EQ(m.gg(0, 2), "XGMI1");
  // No direct link: through one GCD, at the slower of its two bundles (via GCD1: 4 then 2).
  EXPECT_EQ(m.gg(0, 3), "NVB");
  EXPECT_NEAR(m.pathGG(0, 3).bwGBs, 2 * bw::xgmiPerLink("gfx90a"), 1e-9);
  EXPECT_EQ(m.pathGG(0, 3).hops, 2);
  // No GCD neighbours both: PCIe across NUMA domains.
  EXPECT_EQ(m.gg(0, 5), "SYS");
  // Each package's NIC hangs on its switch; NUMA 3 holds GCDs 0-1 and the fourth NIC.
  EXPECT_EQ(m.gn(0, 3), "PIX");
  EXPECT_EQ(m.gn(4, 0), "PIX");
  EXPECT_EQ(m.gn(0, 0), "SYS");
  EXPECT_EQ(nearestNic(m.sys, m.paths, m.gpu(3)), m.nic(1));
  EXPECT_EQ(nearestNic(m.sys, m.paths, m.gpu(1)), m.nic(3));
}

TEST(Paths, PcieServerPixNodeSys) {
  Machine four(machines::pcie4Gpu());
  EXPECT_EQ(four.gg(0, 1), "PIX");
  EXPECT_EQ(four.gg(2, 3), "PIX");
  EXPECT_EQ(four.gg(0, 2), "SYS");
  EXPECT_EQ(four.gg(1, 3), "SYS");
  EXPECT_EQ(four.gn(0, 0), "PHB");  // the NIC hangs on socket 0's root complex
  EXPECT_EQ(four.gn(3, 0), "SYS");
  EXPECT_EQ(four.gn(3, 1), "PHB");  // the bond of socket 1 (no PCI function)
  EXPECT_EQ(nearestNic(four.sys, four.paths, four.gpu(1)), four.nic(0));
  EXPECT_EQ(nearestNic(four.sys, four.paths, four.gpu(2)), four.nic(1));
  EXPECT_NEAR(four.pathGG(0, 1).bwGBs, bw::pcie(16, 16), 1e-9);
  Machine eight(machines::pcieServer(2, 2, 2));
  EXPECT_EQ(eight.gg(0, 1), "PIX");
  EXPECT_EQ(eight.gg(0, 2), "NODE");
  EXPECT_EQ(eight.gg(0, 4), "SYS");
  EXPECT_EQ(eight.gg(7, 0), "SYS");
  EXPECT_EQ(eight.gn(0, 0), "NODE");  // the NIC has its own root port on socket 0
}

TEST(Paths, CloudVmIsFlatButKeepsNvLink) {
  Machine m(machines::cloudVm());
  EXPECT_EQ(m.gg(0, 7), "NV18");
  EXPECT_EQ(m.gn(0, 0), "PHB");
  EXPECT_EQ(m.gn(0, 5), "PHB");
  // All NICs tie: GPUs are spread over them in order.
  for (int g = 0; g < 8; ++g) EXPECT_EQ(nearestNic(m.sys, m.paths, m.gpu(g)), m.nic(g));
  System noLinks = machines::cloudVm();
  std::vector<Link> kept;
  for (const Link& l : noLinks.links) {
    if (l.type != LinkType::kNvLink) kept.push_back(l);
  }
  noLinks.links = kept;
  Machine flat(noLinks);
  EXPECT_EQ(flat.gg(0, 1), "PHB");
}

TEST(Paths, ResourcesAreDirectedAndCapacitiesMatchLinks) {
  Machine m(machines::pcie4Gpu());
  const Path& there = m.pathGG(0, 1);
  const Path& back = m.pathGG(1, 0);
  ASSERT_EQ(there.resources.size(), 2u);
  ASSERT_EQ(back.resources.size(), 2u);
  // The same links, the other direction of each.
  EXPECT_EQ(there.resources[0] / 2, back.resources[1] / 2);
  EXPECT_NE(there.resources[0], back.resources[1]);
  for (int r : there.resources) EXPECT_NEAR(m.paths.capacity(r), bw::pcie(16, 16), 1e-9);
  int nic = m.nic(0);
  EXPECT_NEAR(m.paths.nicGBs(nic), bw::net(100000), 1e-9);
  EXPECT_EQ(m.paths.nicRx(nic), m.paths.nicTx(nic) + 1);
  EXPECT_EQ(m.paths.nicTx(m.gpu(0)), -1);
  EXPECT_NE(m.paths.resourceName(m.paths.nicTx(nic)).find("tx"), std::string::npos);
}

TEST(Paths, NoNicNoPathAndEmptySystem) {
  EXPECT_EQ(computePaths(System()).nNodes(), 0);
  // One CPU with a GPU under it, and a second GPU hanging on nothing.
  System s;
  Node cpu;
  cpu.type = NodeType::kCpu;
  Node gpu;
  gpu.type = NodeType::kGpu;
  int c = s.addNode(cpu);
  int g0 = s.addNode(gpu);
  int g1 = s.addNode(gpu);
  s.addLink(g0, c, LinkType::kPcie, 1, 24);
  PathMatrix m = computePaths(s);
  EXPECT_EQ(nearestNic(s, m, g0), -1);
  EXPECT_EQ(pathLabel(m, g0, g1), "DIS");
  EXPECT_TRUE(m.at(g0, g1).resources.empty());
  EXPECT_EQ(pathLabel(m, g1, g1), "X");
}

}  // namespace
}  // namespace topo
}  // namespace weft
