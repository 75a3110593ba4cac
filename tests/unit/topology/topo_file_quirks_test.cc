// Topology files as NCCL and RCCL really write them (../shared/reference/formats.md, section 2,
// "Real dumps have quirks"): NVLinks to an NVSwitch placeholder target, a PCI switch listed twice
// under one parent, empty attribute values and other forms the reader must take as NCCL does.
#include <gtest/gtest.h>

#include "topo_file_test_util.h"
#include "topology/link_bw.h"
#include "topology/paths.h"
#include "topology/topo_file.h"

namespace weft {
namespace topo {
namespace {

using testing::canonical;
using testing::countLinks;
using testing::countNodes;

Status parse(const std::string& text, System* s) { return parseTopologyXml(text, "topo.xml", s); }

System parseOk(const std::string& text) {
  System s;
  Status st = parse(text, &s);
  EXPECT_TRUE(st.isOk()) << st.message();
  return s;
}

std::string refusal(const std::string& text) {
  System s;
  Status st = parse(text, &s);
  EXPECT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), weftInvalidArgument);
  return st.message();
}

// An H100 at bus `bus` whose NVLinks are the given <nvlink> elements.
std::string h100(int bus, const std::string& links) {
  char id[32];
  std::snprintf(id, sizeof(id), "0000:%02x:00.0", bus);
  return std::string("<pci busid=\"") + id + "\" class=\"0x030200\" vendor=\"0x10de\"><gpu dev=\"" +
         std::to_string(bus) + "\" sm=\"90\">" + links + "</gpu></pci>\n";
}

const char kPlaceholder18[] = "<nvlink target=\"fffffff:ffff:ff\" count=\"18\" tclass=\"0x068000\"/>";

TEST(TopoFileQuirks, NvSwitchPlaceholderTargetIsOneSharedSwitch) {
  std::string text = "<system version=\"1\"><cpu numaid=\"0\">\n";
  for (int g = 0; g < 4; ++g) text += h100(g + 1, kPlaceholder18);
  System s = parseOk(text + "</cpu></system>");
  ASSERT_EQ(countNodes(s, NodeType::kGpu), 4);
  ASSERT_EQ(countNodes(s, NodeType::kNvSwitch), 1) << "one switch per machine, shared by every GPU";
  int sw = s.nodesOfType(NodeType::kNvSwitch)[0];
  EXPECT_TRUE(s.nodes[static_cast<size_t>(sw)].pci.busId.empty()) << "a placeholder is not a bus id";
  ASSERT_EQ(countLinks(s, LinkType::kNvLink), 4);
  for (const Link& l : s.links) {
    if (l.type != LinkType::kNvLink) continue;
    EXPECT_TRUE(l.from == sw || l.to == sw);
    EXPECT_EQ(l.count, 18);
    EXPECT_NEAR(l.bwGBs, 18 * bw::nvlinkPerLink(90), 1e-9);
  }
  // Every GPU reaches every other through the switch at its full NVLink bandwidth.
  PathMatrix m = computePaths(s);
  EXPECT_EQ(pathLabel(m, m.gpus()[0], m.gpus()[3]), "NV18");
  EXPECT_NEAR(m.at(m.gpus()[1], m.gpus()[2]).bwGBs, 18 * bw::nvlinkPerLink(90), 1e-9);
  // Written back, the links name the placeholder again and read back the same.
  std::string out = writeTopologyXml(s, 1);
  EXPECT_NE(out.find("tclass=\"0x068000\""), std::string::npos) << out;
  EXPECT_EQ(canonical(parseOk(out)), canonical(s)) << out;
  EXPECT_EQ(canonical(parseOk(writeTopologyXml(s, 2))), canonical(s));
}

TEST(TopoFileQuirks, PlaceholderLinksOfOneGpuAddUp) {
  // One element per switch chip, all naming the placeholder: 5+4+4+5 links to the one switch.
  std::string links;
  for (int c : {5, 4, 4, 5}) {
    links += "<nvlink target=\"ffffffff:ff:ff.f\" count=\"" + std::to_string(c) + "\" tclass=\"0x068000\"/>";
  }
  System s = parseOk("<system><cpu>" + h100(1, links) +
                     h100(2, "<nvlink target=\"\" count=\"18\" tclass=\"0x68000\"/>") + "</cpu></system>");
  ASSERT_EQ(countNodes(s, NodeType::kNvSwitch), 1);
  ASSERT_EQ(countLinks(s, LinkType::kNvLink), 2);
  for (const Link& l : s.links) {
    if (l.type == LinkType::kNvLink) {
      EXPECT_EQ(l.count, 18);
    }
  }
}

TEST(TopoFileQuirks, PlaceholderNeedsTheSwitchClass) {
  std::string m =
      refusal("<system><cpu>\n" + h100(1, "<nvlink target=\"fffffff:ffff:ff\" count=\"18\"/>") + "</cpu></system>");
  EXPECT_NE(m.find("topo.xml:2: attribute target=\"fffffff:ffff:ff\" of <nvlink> is not a PCI bus id"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("tclass=\"0x068000\""), std::string::npos) << m;
}

TEST(TopoFileQuirks, PlaceholderSwitchMatchesInAMerge) {
  std::string text = "<system><cpu numaid=\"0\">";
  for (int g = 0; g < 2; ++g) text += h100(g + 1, kPlaceholder18);
  System f = parseOk(text + "</cpu></system>");
  System m;
  ASSERT_TRUE(mergeTopology(f, f, &m).isOk());
  EXPECT_EQ(countNodes(m, NodeType::kNvSwitch), 1) << "the placeholder switch of each side is the same switch";
  EXPECT_EQ(countLinks(m, LinkType::kNvLink), 2);
}

TEST(TopoFileQuirks, PlaceholderFileOverDetectedSwitchChips) {
  // Detection names the four switch chips; the file has NCCL's placeholder: one fabric, 18 links.
  std::string chips;
  for (int c = 0; c < 4; ++c) {
    chips += "<nvlink target=\"0000:0" + std::to_string(5 + c) + ":00.0\" count=\"" + (c == 0 || c == 3 ? "5" : "4") +
             "\" tclass=\"0x068000\"/>";
  }
  System detected = parseOk("<system><cpu numaid=\"0\">" + h100(1, chips) + h100(2, chips) + "</cpu></system>");
  System file =
      parseOk("<system><cpu numaid=\"0\">" + h100(1, kPlaceholder18) + h100(2, kPlaceholder18) + "</cpu></system>");
  System m;
  ASSERT_TRUE(mergeTopology(detected, file, &m).isOk());
  ASSERT_EQ(countLinks(m, LinkType::kNvLink), 2) << "the file's links only";
  PathMatrix paths = computePaths(m);
  EXPECT_EQ(pathLabel(paths, paths.gpus()[0], paths.gpus()[1]), "NV18");
  EXPECT_NEAR(paths.at(paths.gpus()[0], paths.gpus()[1]).bwGBs, 18 * bw::nvlinkPerLink(90), 1e-9);
  // Without NVLinks in the file, detection's are kept.
  System bare = parseOk("<system><cpu numaid=\"0\">" + h100(1, "") + h100(2, "") + "</cpu></system>");
  ASSERT_TRUE(mergeTopology(detected, bare, &m).isOk());
  EXPECT_EQ(countLinks(m, LinkType::kNvLink), 8);
}

// RCCL lists a switch once per device path through it; the elements are one switch.
const char kRepeatedSwitch[] =
    "<system version=\"2\">\n"
    "<cpu numaid=\"0\" vendor=\"AuthenticAMD\">\n"
    "<pci busid=\"0000:05:00.0\" class=\"0x060400\" vendor=\"0x1000\" link_speed=\"32.0 GT/s PCIe\" "
    "link_width=\"16\">\n"
    "<pci busid=\"0000:0c:00.0\" class=\"0x120000\" vendor=\"0x1002\"><gpu dev=\"0\" gcn=\"gfx942\"/></pci>\n"
    "</pci>\n"
    "<pci busid=\"0000:05:00.0\" class=\"0x060400\" vendor=\"0x1000\">\n"
    "<pci busid=\"0000:07:00.0\" class=\"0x020000\" vendor=\"0x15b3\"><nic><net name=\"rdma0\"/></nic></pci>\n"
    "</pci>\n"
    "</cpu>\n"
    "</system>\n";

TEST(TopoFileQuirks, PciSwitchListedTwiceUnderOneParentMerges) {
  System s = parseOk(kRepeatedSwitch);
  ASSERT_EQ(countNodes(s, NodeType::kPciBridge), 1);
  ASSERT_EQ(countNodes(s, NodeType::kGpu), 1);
  ASSERT_EQ(countNodes(s, NodeType::kNic), 1);
  EXPECT_EQ(countLinks(s, LinkType::kPcie), 3);
  int sw = s.findByBusId("0000:05:00.0");
  PciTree tree = pciTree(s);
  EXPECT_EQ(tree.parent[static_cast<size_t>(s.nodesOfType(NodeType::kGpu)[0])], sw);
  EXPECT_EQ(tree.parent[static_cast<size_t>(s.nodesOfType(NodeType::kNic)[0])], sw);
  EXPECT_EQ(s.nodes[static_cast<size_t>(sw)].pci.linkWidth, 16);
  PathMatrix m = computePaths(s);
  EXPECT_EQ(pathLabel(m, m.gpus()[0], m.nics()[0]), "PIX");
  EXPECT_EQ(canonical(parseOk(writeTopologyXml(s, 2))), canonical(s));
}

TEST(TopoFileQuirks, RepeatFillsInWhatTheFirstLeftOut) {
  System s = parseOk(
      "<system><cpu>"
      "<pci busid=\"0000:05:00.0\"><pci busid=\"0000:06:00.0\" class=\"0x060400\"/></pci>"
      "<pci busid=\"0000:05:00.0\" class=\"0x060400\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">"
      "<pci busid=\"0000:06:00.0\" class=\"0x060400\"><pci busid=\"0000:07:00.0\" class=\"0x030200\"/></pci>"
      "</pci></cpu></system>");
  EXPECT_EQ(countNodes(s, NodeType::kPciBridge), 2) << "the nested repeat merges too";
  EXPECT_EQ(countNodes(s, NodeType::kGpu), 1);
  int sw = s.findByBusId("0000:05:00.0");
  EXPECT_EQ(s.nodes[static_cast<size_t>(sw)].pci.pciClass, 0x060400u);
  for (const Link& l : s.links) {
    if (l.from == sw || l.to == sw) {
      int other = l.from == sw ? l.to : l.from;
      if (s.nodes[static_cast<size_t>(other)].type == NodeType::kCpu) {
        EXPECT_DOUBLE_EQ(l.bwGBs, bw::pcie(16, 16));
      }
    }
  }
}

TEST(TopoFileQuirks, TheFirstElementDecidesWhatARepeatedSwitchIs) {
  // The GPU was placed under a bridge; a class the repeat adds does not make that an NVSwitch.
  System s = parseOk(
      "<system><cpu><pci busid=\"0000:08:00.0\"><pci busid=\"0000:09:00.0\" class=\"0x030200\"/></pci>"
      "<pci busid=\"0000:08:00.0\" class=\"0x068000\"/></cpu></system>");
  EXPECT_EQ(countNodes(s, NodeType::kPciBridge), 1);
  EXPECT_EQ(countNodes(s, NodeType::kNvSwitch), 0);
  EXPECT_EQ(s.nodes[static_cast<size_t>(s.findByBusId("0000:08:00.0"))].pci.pciClass, 0x068000u);
}

TEST(TopoFileQuirks, RepeatThatDisagreesNamesBothLines) {
  std::string m = refusal(
      "<system><cpu>\n"
      "<pci busid=\"0000:05:00.0\" class=\"0x060400\" link_width=\"16\"/>\n"
      "<pci busid=\"0000:05:00.0\" class=\"0x060400\" link_width=\"8\"/>\n"
      "</cpu></system>");
  EXPECT_NE(m.find("topo.xml:3:"), std::string::npos) << m;
  EXPECT_NE(m.find("line 2"), std::string::npos) << m;
  EXPECT_NE(m.find("link_width"), std::string::npos) << m;
  // The same bus id under another parent is one device in two places: refused.
  m = refusal(
      "<system><cpu numaid=\"0\">\n<pci busid=\"0000:05:00.0\" class=\"0x060400\"/>\n</cpu>\n"
      "<cpu numaid=\"1\">\n<pci busid=\"0000:05:00.0\" class=\"0x060400\"/>\n</cpu></system>");
  EXPECT_NE(m.find("topo.xml:5: bus id 0000:05:00.0 is already used by the element at line 2"), std::string::npos) << m;
  // A GPU listed twice is not a switch seen twice.
  m = refusal("<system><cpu>\n" + h100(1, "") + h100(1, "") + "</cpu></system>");
  EXPECT_NE(m.find("already used by the element at line 2"), std::string::npos) << m;
}

TEST(TopoFileQuirks, BlankAttributeValuesAreUnset) {
  System s = parseOk(
      "<system version=\"\">\n"
      "<cpu numaid=\"\" affinity=\"\" arch=\"\" vendor=\"\" familyid=\"\" modelid=\"\" host_hash=\"\">\n"
      "<pci busid=\"0000:01:00.0\" class=\"0x060400\" vendor=\"\" device=\"\" subsystem_vendor=\"\" "
      "subsystem_device=\"\" link_speed=\"\" link_width=\" \">\n"
      "<pci busid=\"0000:02:00.0\" class=\"0x030200\" vendor=\"0x10de\"><gpu dev=\"\" sm=\"\" rank=\"\" gdr=\"\">"
      "<nvlink target=\"0000:03:00.0\" count=\"\" tclass=\"\"/><c2c count=\"\" bw=\"\"/></gpu></pci>\n"
      "<pci busid=\"0000:03:00.0\" class=\"0x030200\" vendor=\"0x10de\"><gpu dev=\"1\" sm=\"90\"/></pci>\n"
      "<pci busid=\"\" class=\"\"><nic><net name=\"mlx5_0\" dev=\"\" speed=\"\" port=\"\" latency=\"\" guid=\"\" "
      "maxconn=\"\" gdr=\"\"/></nic></pci>\n"
      "</pci></cpu></system>");
  EXPECT_EQ(s.version, 1);
  EXPECT_EQ(countNodes(s, NodeType::kGpu), 2);
  EXPECT_EQ(countNodes(s, NodeType::kNic), 1);
  EXPECT_EQ(s.nodes[0].cpu.numaId, -1);
  int gpu = s.findByBusId("0000:02:00.0");
  EXPECT_EQ(s.nodes[static_cast<size_t>(gpu)].gpu.dev, -1);
  EXPECT_EQ(s.nodes[static_cast<size_t>(gpu)].gpu.sm, 0);
  EXPECT_EQ(countLinks(s, LinkType::kNvLink), 1);
  EXPECT_EQ(countLinks(s, LinkType::kC2c), 1);
  for (const Link& l : s.links) {
    if (l.type == LinkType::kNvLink || l.type == LinkType::kC2c) {
      EXPECT_EQ(l.count, 1) << "a blank count is the default, one link";
    }
  }
  const NicInfo& nic = s.nodes[static_cast<size_t>(s.nodesOfType(NodeType::kNic)[0])].nic;
  EXPECT_EQ(nic.name, "mlx5_0");
  EXPECT_EQ(nic.port, 1);
  EXPECT_EQ(nic.speedMbps, 0);
}

TEST(TopoFileQuirks, GcnWithTargetFeaturesIsTheGfxName) {
  // HIP names a device "gfx90a:sramecc+:xnack-"; the features say nothing about links.
  System s = parseOk(
      "<system version=\"2\"><cpu>"
      "<pci busid=\"0000:c1:00.0\"><gpu dev=\"0\" gcn=\"gfx90a:sramecc+:xnack-\" arch=\"9010\">"
      "<xgmi target=\"0000:c6:00.0\" count=\"4\" tclass=\"0x038000\"/></gpu></pci>"
      "<pci busid=\"0000:c6:00.0\"><gpu dev=\"1\" gcn=\"gfx90a:sramecc+:xnack-\"/></pci>"
      "</cpu></system>");
  for (int g : s.nodesOfType(NodeType::kGpu)) {
    EXPECT_EQ(s.nodes[static_cast<size_t>(g)].gpu.arch, "gfx90a");
    EXPECT_EQ(s.nodes[static_cast<size_t>(g)].gpu.vendor, GpuVendor::kAmd);
  }
  ASSERT_EQ(countLinks(s, LinkType::kXgmi), 1);
  for (const Link& l : s.links) {
    if (l.type == LinkType::kXgmi) {
      EXPECT_DOUBLE_EQ(l.bwGBs, 4 * bw::xgmiPerLink("gfx90a"));
    }
  }
}

TEST(TopoFileQuirks, HexCaseBlanksAndLongDomains) {
  // Upper-case hex, blanks around values, NVML's 8-digit domain in a target, "x16" widths,
  // "Unknown" link speeds: all forms that tools write.
  System s = parseOk(
      "<system version=\" 1 \"><cpu numaid=\" 0 \" affinity=\"0000FFFF,FFFFFFFF\" host_hash=\"0XABCDEF\">"
      "<pci busid=\" 0000:1A:00.0 \" class=\"0X060400\" vendor=\"0x1000\" link_speed=\"Unknown\" link_width=\"x16\">"
      "<pci busid=\"0000:1B:00.0\" class=\"0x030200\" vendor=\"0x10DE\"><gpu dev=\"0\" sm=\"80\">"
      "<nvlink target=\"00000000:1C:00.0\" count=\" 12 \" tclass=\"0x030200\"/></gpu></pci>"
      "<pci busid=\"0000:1c:00.0\" class=\"0x030200\" vendor=\"0x10de\"><gpu dev=\"1\" sm=\"80\"/></pci>"
      "</pci></cpu></system>");
  EXPECT_EQ(s.nodes[0].cpu.hostHash, 0xabcdefu);
  int sw = s.findByBusId("0000:1a:00.0");
  ASSERT_GE(sw, 0);
  EXPECT_EQ(s.nodes[static_cast<size_t>(sw)].type, NodeType::kPciBridge);
  EXPECT_EQ(s.nodes[static_cast<size_t>(sw)].pci.linkWidth, 16);
  ASSERT_EQ(countLinks(s, LinkType::kNvLink), 1);
  PathMatrix m = computePaths(s);
  EXPECT_EQ(pathLabel(m, m.gpus()[0], m.gpus()[1]), "NV12");
}

TEST(TopoFileQuirks, NicWithoutNet) {
  // NCCL writes <nic/> for an adapter whose ports it did not list; it is one NIC either way.
  System s = parseOk(
      "<system><cpu numaid=\"0\">"
      "<pci busid=\"0000:18:00.0\" class=\"0x020700\" vendor=\"0x15b3\"><nic/></pci>"
      "<pci busid=\"0000:19:00.0\" class=\"0x020000\"/>"
      "<nic/></cpu></system>");
  EXPECT_EQ(countNodes(s, NodeType::kNic), 3);
  EXPECT_EQ(countLinks(s, LinkType::kPcie), 3);
}

}  // namespace
}  // namespace topo
}  // namespace weft
