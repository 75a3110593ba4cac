// The fixture dumps written as NCCL and RCCL write real machines (tests/fixtures/topo, facts from
// ../shared/reference/formats.md sections 2 and 7): they load, and the paths built on them are the
// machine's (nvidia-smi topo -m classes, bandwidths, the NIC each GPU uses). topo_file_test.cc
// checks their node and link counts and round trips.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topo_file_test_util.h"
#include "topology/link_bw.h"
#include "topology/paths.h"
#include "topology/topo_file.h"

namespace weft {
namespace topo {
namespace {

using testing::fixtureDir;

struct Loaded {
  explicit Loaded(const std::string& name) {
    Status st = readTopologyFile(fixtureDir("topo/") + name, &sys);
    EXPECT_TRUE(st.isOk()) << st.message();
    paths = computePaths(sys);
  }
  int gpu(int i) const { return paths.gpus()[static_cast<size_t>(i)]; }
  int nic(int i) const { return paths.nics()[static_cast<size_t>(i)]; }
  std::string gg(int a, int b) const { return pathLabel(paths, gpu(a), gpu(b)); }
  std::string gn(int a, int b) const { return pathLabel(paths, gpu(a), nic(b)); }
  // The GPU-by-GPU and GPU-by-NIC labels, for comparing two files of one machine.
  std::vector<std::string> matrix() const {
    std::vector<std::string> out;
    for (size_t a = 0; a < paths.gpus().size(); ++a) {
      for (size_t b = 0; b < paths.gpus().size(); ++b) out.push_back(gg(static_cast<int>(a), static_cast<int>(b)));
      for (size_t n = 0; n < paths.nics().size(); ++n) out.push_back(gn(static_cast<int>(a), static_cast<int>(n)));
    }
    return out;
  }
  System sys;
  PathMatrix paths;
};

TEST(TopoFileFixtures, HgxH100PlaceholderIsTheSameMachineAsNamedSwitches) {
  Loaded m("hgx-h100-nvswitch-placeholder.xml");
  ASSERT_EQ(m.paths.gpus().size(), 8u);
  ASSERT_EQ(m.paths.nics().size(), 8u);
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      EXPECT_EQ(m.gg(a, b), "NV18") << a << "-" << b;
      EXPECT_NEAR(m.paths.at(m.gpu(a), m.gpu(b)).bwGBs, 18 * bw::nvlinkPerLink(90), 1e-9);
      EXPECT_EQ(m.paths.at(m.gpu(a), m.gpu(b)).hops, 2) << "GPU, switch, GPU";
    }
    EXPECT_EQ(nearestNic(m.sys, m.paths, m.gpu(a)), m.nic(a)) << "GPU" << a << " uses its own rail";
  }
  EXPECT_EQ(m.gn(0, 1), "PIX");
  EXPECT_EQ(m.gn(0, 2), "NODE");
  EXPECT_EQ(m.gn(0, 4), "SYS");
  // DGX H100 written with the four switch chips' bus ids is the same machine to the paths.
  EXPECT_EQ(m.matrix(), Loaded("dgx-h100.xml").matrix());
}

TEST(TopoFileFixtures, Mi300xRepeatedSwitchesAreOneSwitchEach) {
  Loaded m("mi300x-rccl-repeated-switches.xml");
  ASSERT_EQ(m.paths.gpus().size(), 8u);
  for (int b : m.sys.nodesOfType(NodeType::kPciBridge)) {
    int gpus = 0, nics = 0;
    for (const Link& l : m.sys.links) {
      if (l.type != LinkType::kPcie || (l.from != b && l.to != b)) continue;
      NodeType t = m.sys.nodes[static_cast<size_t>(l.from == b ? l.to : l.from)].type;
      gpus += t == NodeType::kGpu;
      nics += t == NodeType::kNic;
    }
    EXPECT_EQ(gpus, 1) << m.sys.describe(b);
    EXPECT_EQ(nics, 1) << m.sys.describe(b);
  }
  for (int a = 0; a < 8; ++a) {
    EXPECT_EQ(m.sys.nodes[static_cast<size_t>(m.gpu(a))].gpu.arch, "gfx942");
    for (int b = 0; b < 8; ++b) {
      if (a != b) {
        EXPECT_EQ(m.gg(a, b), "XGMI1") << a << "-" << b;
      }
    }
    EXPECT_NEAR(m.paths.at(m.gpu(a), m.gpu((a + 1) % 8)).bwGBs, bw::xgmiPerLink("gfx942"), 1e-9);
    EXPECT_EQ(m.gn(a, a), "PIX");
    EXPECT_EQ(nearestNic(m.sys, m.paths, m.gpu(a)), m.nic(a));
  }
  // The same machine as mi300x.xml, which lists each switch once.
  EXPECT_EQ(m.matrix(), Loaded("mi300x.xml").matrix());
}

TEST(TopoFileFixtures, CloudVmFlatPciWithHiddenSwitches) {
  Loaded m("cloud-vm-h100-flat.xml");
  ASSERT_EQ(m.paths.gpus().size(), 8u);
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a != b) {
        EXPECT_EQ(m.gg(a, b), "NV18") << a << "-" << b;
      }
    }
  }
  // Straight under the root complex: through the host bridge on one socket, SYS across.
  EXPECT_EQ(m.gn(0, 3), "PHB");
  EXPECT_EQ(m.gn(0, 4), "SYS");
  EXPECT_EQ(m.gn(7, 4), "PHB");
  // Blank link speeds: the PCIe links take the unknown-speed bandwidth.
  for (const Link& l : m.sys.links) {
    if (l.type == LinkType::kPcie) {
      EXPECT_DOUBLE_EQ(l.bwGBs, bw::pcie(0, 0));
    }
  }
}

TEST(TopoFileFixtures, PcieServerPixPxbNodeSys) {
  Loaded m("pcie-8gpu-two-level.xml");
  ASSERT_EQ(m.paths.gpus().size(), 8u);
  ASSERT_EQ(m.paths.nics().size(), 2u);
  EXPECT_EQ(m.gg(0, 1), "PIX");  // one leaf switch
  EXPECT_EQ(m.gg(0, 2), "PXB");  // two leaf switches under one upstream switch
  EXPECT_EQ(m.gg(4, 5), "PIX");
  EXPECT_EQ(m.gg(4, 6), "NODE");  // two root ports of socket 1
  EXPECT_EQ(m.gg(0, 4), "SYS");
  EXPECT_EQ(m.gn(0, 0), "PIX");
  EXPECT_EQ(m.gn(3, 0), "PXB");
  EXPECT_EQ(m.gn(7, 1), "NODE");
  EXPECT_EQ(m.gn(0, 1), "SYS");
  EXPECT_NEAR(m.paths.at(m.gpu(0), m.gpu(1)).bwGBs, bw::pcie(16, 16), 1e-9);
  for (int g = 0; g < 8; ++g) EXPECT_EQ(nearestNic(m.sys, m.paths, m.gpu(g)), m.nic(g / 4)) << "GPU" << g;
}

}  // namespace
}  // namespace topo
}  // namespace weft
