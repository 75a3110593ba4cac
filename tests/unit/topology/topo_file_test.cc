// Topology files: every fixture machine parses to the expected nodes and links (counts and
// bandwidths from link_bw.h), and survives write -> parse unchanged in both XML dialects.
#include "topology/topo_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "topo_file_test_util.h"
#include "topology/link_bw.h"

namespace weft {
namespace topo {
namespace {

using testing::canonical;
using testing::countLinks;
using testing::countNodes;
using testing::fixtureDir;

struct Expected {
  const char* file;
  int version;
  int cpus, bridges, gpus, nics, nvswitches;
  int pcie, smp, nvlink, xgmi;
};

const Expected kFixtures[] = {
    {"dgx-h100.xml", 1, 2, 4, 8, 8, 4, 20, 1, 32, 0},
    {"dgx-a100.xml", 1, 2, 5, 8, 8, 6, 27, 1, 48, 0},
    {"mi300x.xml", 2, 2, 8, 8, 8, 0, 24, 1, 0, 28},
    {"mi250x.xml", 2, 4, 4, 8, 4, 0, 16, 6, 0, 12},
    {"pcie-4gpu.xml", 1, 2, 2, 4, 2, 0, 8, 1, 0, 0},
    {"cloud-vm-skeleton.xml", 1, 4, 4, 8, 8, 0, 20, 6, 0, 0},
    // Dumps with the quirks of real NCCL/RCCL files (topo_file_fixtures_test.cc checks their paths).
    {"hgx-h100-nvswitch-placeholder.xml", 1, 2, 4, 8, 8, 1, 20, 1, 8, 0},
    {"mi300x-rccl-repeated-switches.xml", 2, 2, 8, 8, 8, 0, 24, 1, 0, 28},
    {"cloud-vm-h100-flat.xml", 1, 2, 0, 8, 8, 1, 16, 1, 8, 0},
    {"pcie-8gpu-two-level.xml", 1, 2, 5, 8, 2, 0, 15, 1, 0, 0},
};

System load(const std::string& name) {
  System s;
  Status st = readTopologyFile(fixtureDir("topo/") + name, &s);
  EXPECT_TRUE(st.isOk()) << st.message();
  return s;
}

// The links of one node of a type, as (far end, link).
std::vector<std::pair<int, Link>> linksOf(const System& s, int node, LinkType type) {
  std::vector<std::pair<int, Link>> out;
  for (const Link& l : s.links) {
    if (l.type != type || (l.from != node && l.to != node)) continue;
    out.push_back({l.from == node ? l.to : l.from, l});
  }
  return out;
}

class FixtureTest : public ::testing::TestWithParam<Expected> {};

TEST_P(FixtureTest, ParsesToTheExpectedMachine) {
  const Expected& e = GetParam();
  System s = load(e.file);
  EXPECT_EQ(s.version, e.version);
  EXPECT_EQ(s.source, "file:" + fixtureDir("topo/") + e.file);
  EXPECT_EQ(countNodes(s, NodeType::kCpu), e.cpus);
  EXPECT_EQ(countNodes(s, NodeType::kPciBridge), e.bridges);
  EXPECT_EQ(countNodes(s, NodeType::kGpu), e.gpus);
  EXPECT_EQ(countNodes(s, NodeType::kNic), e.nics);
  EXPECT_EQ(countNodes(s, NodeType::kNvSwitch), e.nvswitches);
  EXPECT_EQ(countLinks(s, LinkType::kPcie), e.pcie);
  EXPECT_EQ(countLinks(s, LinkType::kSmp), e.smp);
  EXPECT_EQ(countLinks(s, LinkType::kNvLink), e.nvlink);
  EXPECT_EQ(countLinks(s, LinkType::kXgmi), e.xgmi);
  EXPECT_EQ(countLinks(s, LinkType::kC2c), 0);
  EXPECT_EQ(countLinks(s, LinkType::kNet), 0);
  EXPECT_EQ(static_cast<int>(s.links.size()), e.pcie + e.smp + e.nvlink + e.xgmi);
  // Every node but a CPU hangs in the PCI tree under a CPU (NVSwitches made from NVLink targets aside).
  PciTree tree = pciTree(s);
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    if (s.nodes[i].type == NodeType::kCpu) continue;
    int top = static_cast<int>(i);
    while (tree.parent[static_cast<size_t>(top)] >= 0) top = tree.parent[static_cast<size_t>(top)];
    if (s.nodes[i].type == NodeType::kNvSwitch && top == static_cast<int>(i)) continue;
    EXPECT_EQ(s.nodes[static_cast<size_t>(top)].type, NodeType::kCpu) << s.describe(static_cast<int>(i));
  }
}

// write -> parse gives the same System; writing that again gives the same text.
TEST_P(FixtureTest, RoundTripsThroughItsOwnDialect) {
  const Expected& e = GetParam();
  System s = load(e.file);
  std::string text = writeTopologyXml(s, s.version);
  System again;
  Status st = parseTopologyXml(text, "written.xml", &again);
  ASSERT_TRUE(st.isOk()) << st.message() << "\n" << text;
  EXPECT_EQ(again.version, s.version);
  EXPECT_EQ(canonical(again), canonical(s)) << text;
  EXPECT_EQ(writeTopologyXml(again, again.version), text);
}

TEST_P(FixtureTest, JsonListsEveryNodeAndLink) {
  const Expected& e = GetParam();
  System s = load(e.file);
  std::string json = writeTopologyJson(s);
  auto occurrences = [&](const std::string& what) {
    int n = 0;
    for (size_t at = json.find(what); at != std::string::npos; at = json.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(occurrences("\"type\": \"gpu\""), e.gpus);
  EXPECT_EQ(occurrences("\"type\": \"cpu\""), e.cpus);
  EXPECT_EQ(occurrences("\"type\": \"nvlink\""), e.nvlink);
  EXPECT_EQ(occurrences("\"from\""), static_cast<int>(s.links.size()));
  EXPECT_EQ(occurrences("{"), occurrences("}"));
  EXPECT_EQ(occurrences("["), occurrences("]"));
  EXPECT_EQ(json.front(), '{');
}

INSTANTIATE_TEST_SUITE_P(Machines, FixtureTest, ::testing::ValuesIn(kFixtures),
                         [](const ::testing::TestParamInfo<Expected>& p) {
                           std::string name = p.param.file;
                           name = name.substr(0, name.find('.'));
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(TopoFileFixtures, DgxH100NvLinkFiveFourFourFiveOverFourSwitches) {
  System s = load("dgx-h100.xml");
  std::vector<int> gpus = s.nodesOfType(NodeType::kGpu);
  ASSERT_EQ(gpus.size(), 8u);
  std::set<int> switchesSeen;
  for (size_t g = 0; g < gpus.size(); ++g) {
    const Node& gpu = s.nodes[static_cast<size_t>(gpus[g])];
    EXPECT_EQ(gpu.gpu.dev, static_cast<int>(g));
    EXPECT_EQ(gpu.gpu.rank, static_cast<int>(g));
    EXPECT_EQ(gpu.gpu.sm, 90);
    EXPECT_EQ(gpu.gpu.arch, "sm_90");
    EXPECT_EQ(gpu.gpu.vendor, GpuVendor::kNvidia);
    EXPECT_TRUE(gpu.gpu.gdr);
    EXPECT_EQ(gpu.pci.pciClass, 0x030200u);
    EXPECT_EQ(gpu.pci.linkSpeedGTs, 32.0);
    EXPECT_EQ(gpu.pci.linkWidth, 16);
    std::vector<int> counts;
    double total = 0;
    for (const auto& [other, l] : linksOf(s, gpus[g], LinkType::kNvLink)) {
      EXPECT_EQ(s.nodes[static_cast<size_t>(other)].type, NodeType::kNvSwitch);
      switchesSeen.insert(other);
      counts.push_back(l.count);
      EXPECT_NEAR(l.bwGBs, l.count * bw::nvlinkPerLink(90), 1e-9);
      total += l.bwGBs;
    }
    EXPECT_EQ(counts, (std::vector<int>{5, 4, 4, 5}));
    EXPECT_NEAR(total, 18 * bw::nvlinkPerLink(90), 1e-9);
    // PCIe Gen5 x16 to its switch; the switch holds 2 GPUs and 2 NICs and hangs off CPU g/4.
    auto pcie = linksOf(s, gpus[g], LinkType::kPcie);
    ASSERT_EQ(pcie.size(), 1u);
    EXPECT_DOUBLE_EQ(pcie[0].second.bwGBs, bw::pcie(32, 16));
    int sw = pcie[0].first;
    EXPECT_EQ(s.nodes[static_cast<size_t>(sw)].type, NodeType::kPciBridge);
    std::map<NodeType, int> under;
    int cpu = -1;
    for (const auto& [other, l] : linksOf(s, sw, LinkType::kPcie)) {
      if (s.nodes[static_cast<size_t>(other)].type == NodeType::kCpu)
        cpu = other;
      else
        under[s.nodes[static_cast<size_t>(other)].type]++;
    }
    EXPECT_EQ(under[NodeType::kGpu], 2);
    EXPECT_EQ(under[NodeType::kNic], 2);
    ASSERT_GE(cpu, 0);
    EXPECT_EQ(s.nodes[static_cast<size_t>(cpu)].cpu.numaId, static_cast<int>(g / 4));
  }
  EXPECT_EQ(switchesSeen.size(), 4u);
  for (int nic : s.nodesOfType(NodeType::kNic)) {
    const NicInfo& n = s.nodes[static_cast<size_t>(nic)].nic;
    EXPECT_EQ(n.speedMbps, 400000);
    EXPECT_EQ(n.name.rfind("mlx5_", 0), 0u);
    EXPECT_EQ(n.maxConn, 131072);
    EXPECT_TRUE(n.gdr);
    EXPECT_NE(n.guid, 0u);
  }
  const CpuInfo& cpu0 = s.nodes[static_cast<size_t>(s.nodesOfType(NodeType::kCpu)[0])].cpu;
  EXPECT_EQ(cpu0.vendor, "GenuineIntel");
  EXPECT_EQ(cpu0.familyId, 6);
  EXPECT_EQ(cpu0.modelId, 143);
  EXPECT_EQ(cpu0.hostHash, 0x6a3f1e2d9c8b7a61u);
  for (const Link& l : s.links) {
    if (l.type == LinkType::kSmp) {
      EXPECT_DOUBLE_EQ(l.bwGBs, bw::smp("GenuineIntel"));
    }
  }
}

TEST(TopoFileFixtures, DgxA100SwitchesFromPciElements) {
  System s = load("dgx-a100.xml");
  for (int g : s.nodesOfType(NodeType::kGpu)) {
    auto links = linksOf(s, g, LinkType::kNvLink);
    ASSERT_EQ(links.size(), 6u);
    for (const auto& [other, l] : links) {
      EXPECT_EQ(s.nodes[static_cast<size_t>(other)].type, NodeType::kNvSwitch);
      EXPECT_EQ(l.count, 2);
      EXPECT_DOUBLE_EQ(l.bwGBs, 2 * bw::nvlinkPerLink(80));
    }
  }
  for (int sw : s.nodesOfType(NodeType::kNvSwitch)) {
    const Node& n = s.nodes[static_cast<size_t>(sw)];
    EXPECT_EQ(n.pci.device, 0x1af1u);  // declared by its own <pci>, not only as a target
    auto pcie = linksOf(s, sw, LinkType::kPcie);
    ASSERT_EQ(pcie.size(), 1u);
    EXPECT_DOUBLE_EQ(pcie[0].second.bwGBs, bw::pcie(16, 4));
  }
  for (const Link& l : s.links) {
    if (l.type == LinkType::kSmp) {
      EXPECT_DOUBLE_EQ(l.bwGBs, bw::smp("AuthenticAMD"));
    }
  }
  for (int nic : s.nodesOfType(NodeType::kNic)) EXPECT_EQ(s.nodes[static_cast<size_t>(nic)].nic.speedMbps, 200000);
}

TEST(TopoFileFixtures, Mi300xFullyConnectedXgmi) {
  System s = load("mi300x.xml");
  std::vector<int> gpus = s.nodesOfType(NodeType::kGpu);
  ASSERT_EQ(gpus.size(), 8u);
  std::set<std::pair<int, int>> pairs;
  for (const Link& l : s.links) {
    if (l.type != LinkType::kXgmi) continue;
    EXPECT_EQ(l.count, 1);
    EXPECT_DOUBLE_EQ(l.bwGBs, bw::xgmiPerLink("gfx942"));
    pairs.insert({std::min(l.from, l.to), std::max(l.from, l.to)});
  }
  EXPECT_EQ(pairs.size(), 28u);  // every pair once, though both ends list it
  for (int g : gpus) {
    const GpuInfo& info = s.nodes[static_cast<size_t>(g)].gpu;
    EXPECT_EQ(info.vendor, GpuVendor::kAmd);
    EXPECT_EQ(info.arch, "gfx942");
    EXPECT_EQ(linksOf(s, g, LinkType::kXgmi).size(), 7u);
    // Behind its own switch, shared with exactly one NIC.
    auto up = linksOf(s, g, LinkType::kPcie);
    ASSERT_EQ(up.size(), 1u);
    int nicsUnder = 0;
    for (const auto& [other, l] : linksOf(s, up[0].first, LinkType::kPcie)) {
      nicsUnder += s.nodes[static_cast<size_t>(other)].type == NodeType::kNic;
    }
    EXPECT_EQ(nicsUnder, 1);
  }
}

TEST(TopoFileFixtures, Mi250xPackagesAndNumaDomains) {
  System s = load("mi250x.xml");
  std::map<int, int> byCount;
  for (const Link& l : s.links) {
    if (l.type != LinkType::kXgmi) continue;
    byCount[l.count]++;
    EXPECT_DOUBLE_EQ(l.bwGBs, l.count * bw::xgmiPerLink("gfx90a"));
    int a = s.nodes[static_cast<size_t>(l.from)].gpu.dev, b = s.nodes[static_cast<size_t>(l.to)].gpu.dev;
    bool samePackage = std::min(a, b) / 2 == std::max(a, b) / 2;
    EXPECT_EQ(samePackage, l.count == 4) << a << "-" << b << ": 4 links join exactly the GCDs of one package";
  }
  EXPECT_EQ(byCount, (std::map<int, int>{{1, 4}, {2, 4}, {4, 4}}));
  std::set<int> numas;
  for (int c : s.nodesOfType(NodeType::kCpu)) numas.insert(s.nodes[static_cast<size_t>(c)].cpu.numaId);
  EXPECT_EQ(numas, (std::set<int>{0, 1, 2, 3}));
  for (int n : s.nodesOfType(NodeType::kNic)) {
    EXPECT_EQ(s.nodes[static_cast<size_t>(n)].nic.name.rfind("cxi", 0), 0u);
    EXPECT_EQ(s.nodes[static_cast<size_t>(n)].nic.speedMbps, 200000);
  }
  // RCCL's numeric arch attribute does not replace the gfx name.
  for (int g : s.nodesOfType(NodeType::kGpu)) EXPECT_EQ(s.nodes[static_cast<size_t>(g)].gpu.arch, "gfx90a");
}

TEST(TopoFileFixtures, PcieServerNicsWithAndWithoutPciFunction) {
  System s = load("pcie-4gpu.xml");
  int withPci = -1, bare = -1;
  for (int n : s.nodesOfType(NodeType::kNic)) (s.nodes[static_cast<size_t>(n)].pci.busId.empty() ? bare : withPci) = n;
  ASSERT_GE(withPci, 0);
  ASSERT_GE(bare, 0);
  EXPECT_EQ(s.nodes[static_cast<size_t>(bare)].nic.name, "bond0");
  EXPECT_EQ(s.nodes[static_cast<size_t>(bare)].nic.port, 0);
  auto up = linksOf(s, bare, LinkType::kPcie);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(s.nodes[static_cast<size_t>(up[0].first)].cpu.numaId, 1);
  EXPECT_DOUBLE_EQ(up[0].second.bwGBs, bw::pcie(0, 0));
  up = linksOf(s, withPci, LinkType::kPcie);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(s.nodes[static_cast<size_t>(up[0].first)].type, NodeType::kCpu);
  EXPECT_DOUBLE_EQ(up[0].second.bwGBs, bw::pcie(16, 16));
  for (int g : s.nodesOfType(NodeType::kGpu)) EXPECT_FALSE(s.nodes[static_cast<size_t>(g)].gpu.gdr);
}

TEST(TopoFileFixtures, CloudSkeletonHasPlaceholdersOnly) {
  System s = load("cloud-vm-skeleton.xml");
  for (int g : s.nodesOfType(NodeType::kGpu)) {
    const Node& n = s.nodes[static_cast<size_t>(g)];
    EXPECT_EQ(n.gpu.dev, -1);
    EXPECT_EQ(n.gpu.sm, 0);
    EXPECT_EQ(n.gpu.vendor, GpuVendor::kUnknown);
    EXPECT_EQ(n.pci.linkSpeedGTs, 16.0);  // "16 GT/s" without the PCIe suffix
  }
  for (int n : s.nodesOfType(NodeType::kNic)) EXPECT_TRUE(s.nodes[static_cast<size_t>(n)].nic.name.empty());
  // Written back, a placeholder stays a bare <pci>: no <gpu> or <nic> appears.
  std::string text = writeTopologyXml(s, 1);
  EXPECT_EQ(text.find("<gpu"), std::string::npos);
  EXPECT_EQ(text.find("<nic"), std::string::npos);
}

TEST(TopoFileWrite, NcclDialectDropsXgmiAndGcn) {
  System s = load("mi300x.xml");
  std::string v1 = writeTopologyXml(s, 1);
  EXPECT_NE(v1.find("<system version=\"1\">"), std::string::npos);
  EXPECT_EQ(v1.find("<xgmi"), std::string::npos);
  EXPECT_EQ(v1.find("gcn="), std::string::npos);
  std::string v2 = writeTopologyXml(s, 2);
  EXPECT_NE(v2.find("gcn=\"gfx942\""), std::string::npos);
  System back;
  ASSERT_TRUE(parseTopologyXml(v1, "v1.xml", &back).isOk());
  EXPECT_EQ(countLinks(back, LinkType::kXgmi), 0);
  EXPECT_EQ(countNodes(back, NodeType::kGpu), 8);
  for (int g : back.nodesOfType(NodeType::kGpu))
    EXPECT_EQ(back.nodes[static_cast<size_t>(g)].gpu.vendor, GpuVendor::kAmd);
}

TEST(TopoFileWrite, NvidiaFixturesRoundTripThroughRcclDialectToo) {
  for (const char* name : {"dgx-h100.xml", "dgx-a100.xml", "pcie-4gpu.xml"}) {
    System s = load(name);
    System back;
    Status st = parseTopologyXml(writeTopologyXml(s, 2), name, &back);
    ASSERT_TRUE(st.isOk()) << st.message();
    EXPECT_EQ(back.version, 2);
    EXPECT_EQ(canonical(back), canonical(s)) << name;
  }
}

TEST(TopoFileWrite, JsonEscapesAndReplacesInvalidUtf8) {
  System s;
  Node n;
  n.type = NodeType::kNic;
  n.nic.name = std::string("a\"b\\c\n\xff\xc3\xa9", 9);
  s.addNode(n);
  std::string json = writeTopologyJson(s);
  EXPECT_NE(json.find("\"a\\\"b\\\\c\\u000a\\ufffd\xc3\xa9\""), std::string::npos) << json;
}

}  // namespace
}  // namespace topo
}  // namespace weft
