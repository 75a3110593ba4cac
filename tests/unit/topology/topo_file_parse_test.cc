// Topology files: malformed input is a clean weftInvalidArgument naming file, line and what was
// expected; partial and unusual-but-valid input is accepted.
#include <gtest/gtest.h>
#include <unistd.h>

#include "topo_file_test_util.h"
#include "topology/link_bw.h"
#include "topology/topo_file.h"
#include "topology/xml.h"

namespace weft {
namespace topo {
namespace {

using testing::countLinks;
using testing::countNodes;

Status parse(const std::string& text, System* s) { return parseTopologyXml(text, "topo.xml", s); }

System parseOk(const std::string& text) {
  System s;
  Status st = parse(text, &s);
  EXPECT_TRUE(st.isOk()) << st.message();
  return s;
}

struct BadInput {
  const char* name;
  const char* text;
  const char* message;  // expected substring
};

const BadInput kBad[] = {
    {"bad_bus_id",
     "<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"zz:00\" class=\"0x060400\"/>\n</cpu>\n</system>",
     "topo.xml:3: attribute busid=\"zz:00\" of <pci> is not a PCI bus id"},
    {"unclosed_pci", "<system version=\"1\">\n<cpu>\n\n\n<pci busid=\"0000:01:00.0\">\n<pci busid=\"0000:02:00.0\"/>\n",
     "unclosed <pci> opened at line 5"},
    {"gpu_tag_not_closed", "<system>\n<cpu>\n<pci>\n<gpu dev=\"0\" sm=\"90\"",
     "topo.xml:4: expected '>' to close <gpu ...>"},
    {"gpu_tag_runs_into_child", "<system>\n<cpu>\n<pci>\n<gpu dev=\"0\" sm=\"90\"<nvlink/></gpu></pci></cpu></system>",
     "topo.xml:4: expected '>' to close <gpu ...>, found '<nvlink/>"},
    {"mismatched_close", "<system>\n<cpu>\n<pci>\n</cpu>\n</system>",
     "topo.xml:4: </cpu> does not match <pci> opened at line 3"},
    {"wrong_root", "<topology version=\"1\"/>",
     "topo.xml:1: expected <system version=\"1\"> as the root element, found <topology>"},
    {"sm_not_a_number", "<system>\n<cpu><pci><gpu sm=\"ninety\"/></pci></cpu></system>",
     "topo.xml:2: attribute sm=\"ninety\" of <gpu> is not an integer"},
    {"numaid_overflows", "<system><cpu numaid=\"99999999999999999999\"/></system>", "attribute numaid"},
    {"count_out_of_range",
     "<system><cpu><pci><gpu><nvlink target=\"0000:05:00.0\" count=\"-2\"/></gpu></pci></cpu></system>",
     "attribute count=\"-2\" of <nvlink> is not an integer in 0..1024"},
    {"class_not_hex", "<system><cpu><pci class=\"bridge\"/></cpu></system>",
     "attribute class=\"bridge\" of <pci> is not a hex id"},
    {"link_speed_words", "<system><cpu><pci link_speed=\"fast\"/></cpu></system>", "is not a PCIe link speed"},
    {"speed_infinite", "<system><cpu><nic><net speed=\"inf\"/></nic></cpu></system>", "is not a non-negative number"},
    {"affinity_not_a_mask", "<system><cpu affinity=\"0-15\"/></system>", "is not a CPU mask"},
    {"bus_id_twice",
     "<system>\n<cpu>\n<pci busid=\"0000:18:00.0\" class=\"0x030200\"/>\n<pci busid=\"18:00.0\" "
     "class=\"0x030200\"/>\n</cpu>\n</system>",
     "topo.xml:4: bus id 0000:18:00.0 is already used by the element at line 3"},
    {"empty", "", "topo.xml:1: no root element"},
    {"comments_only", "<!-- nothing -->\n\n", "no root element"},
    {"two_roots", "<system/>\n<system/>", "topo.xml:2: unexpected '<system/>' after the root element <system> ended"},
    {"text_before_root", "hello <system/>", "topo.xml:1: expected '<' and an element name"},
    {"duplicate_attribute", "<system>\n<cpu numaid=\"0\"\n numaid=\"1\"/></system>",
     "topo.xml:3: attribute numaid appears twice in <cpu ...> (first at line 2)"},
    {"unquoted_value", "<system version=1/>", "expected a quoted value for attribute version in <system ...>"},
    {"missing_equals", "<system version \"1\"/>", "expected '=' after attribute name version"},
    {"unterminated_value", "<system version=\"1/>\n\n", "topo.xml:1: unterminated value of attribute version"},
    {"lt_in_value", "<system version=\"<1\"/>", "'<' in the value of attribute version"},
    {"unknown_entity", "<system><cpu vendor=\"A&nbsp;B\"/></system>", "unknown entity &nbsp; in attribute vendor"},
    {"bare_ampersand", "<system><cpu vendor=\"A & B\"/></system>", "does not start an entity"},
    {"bad_char_ref", "<system><cpu vendor=\"&#0;\"/></system>", "is not a valid character"},
    {"unclosed_comment", "<system>\n<!-- open\n</system>", "topo.xml:2: unclosed comment <!--"},
    {"unclosed_pi", "<?xml version=\"1.0\"\n<system/>", "topo.xml:1: unclosed processing instruction"},
    {"control_character", "<system>\n<cpu\x01/></system>", "topo.xml:2: control character 0x01"},
    {"lone_lt", "<system>< cpu/></system>", "expected an element name after '<' inside <system>"},
    {"close_tag_garbage", "<system></system x>", "expected '>' to close </system"},
};

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, IsACleanInvalidArgument) {
  const BadInput& b = GetParam();
  System s;
  s.source = "untouched";
  Status st = parse(b.text, &s);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), weftInvalidArgument);
  EXPECT_NE(st.message().find(b.message), std::string::npos) << "message: " << st.message();
  EXPECT_NE(st.message().find("topo.xml"), std::string::npos) << st.message();
  EXPECT_EQ(s.source, "untouched") << "the output is written only on success";
}

INSTANTIATE_TEST_SUITE_P(Malformed, BadInputTest, ::testing::ValuesIn(kBad),
                         [](const ::testing::TestParamInfo<BadInput>& p) { return std::string(p.param.name); });

TEST(TopoFileParse, NestingDepthIsBounded) {
  std::string text = "<system><cpu>";
  for (int i = 0; i < 100; ++i) text += "<pci>";
  for (int i = 0; i < 100; ++i) text += "</pci>";
  text += "</cpu></system>";
  System s;
  Status st = parse(text, &s);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("nested 65 levels deep; more than 64 is refused"), std::string::npos) << st.message();
  // 60 levels are fine.
  text = "<system><cpu>";
  for (int i = 0; i < 60; ++i) text += "<pci>";
  for (int i = 0; i < 60; ++i) text += "</pci>";
  text += "</cpu></system>";
  EXPECT_TRUE(parse(text, &s).isOk());
  EXPECT_EQ(countNodes(s, NodeType::kPciBridge), 60);
}

TEST(TopoFileParse, SizeAndElementCountAreBounded) {
  XmlElement root;
  XmlLimits limits;
  limits.maxBytes = 64;
  Status st = parseXml(std::string(65, ' '), "big.xml", &root, limits);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("big.xml: 65 bytes"), std::string::npos) << st.message();
  limits = XmlLimits();
  limits.maxElements = 3;
  st = parseXml("<a><b/><c/><d/></a>", "many.xml", &root, limits);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("more than 3 elements"), std::string::npos) << st.message();
  std::string cpus = "<system>";
  for (int i = 0; i < 300; ++i) cpus += "<cpu/>";
  System s;
  st = parse(cpus + "</system>", &s);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("more than 256 <cpu> elements"), std::string::npos) << st.message();
}

TEST(TopoFileParse, XmlSyntaxOfEveryKind) {
  const char* text =
      "\xef\xbb\xbf<?xml version='1.0' encoding='UTF-8'?>\n"
      "<!DOCTYPE system [ <!ENTITY x 'y'> ]>\n"
      "<!-- a comment with <tags> & ampersands -->\n"
      "<system version='1'>\n"
      "  text between elements is ignored\n"
      "  <![CDATA[ <cpu> inside CDATA is not an element ]]>\n"
      "  <?weft hint?>\n"
      "  <cpu numaid = '0' vendor=\"Authentic&#65;MD\" arch='x86&#x5f;64' affinity='ffff,ffff'\n"
      "       host_hash=\"0xABC\" >\n"
      "    <pci busid='0000:18:00.0' class='0x030200' vendor='0x10DE'><gpu dev='0' sm='90'></gpu></pci>\n"
      "  </cpu >\n"
      "</system>\n"
      "<!-- trailing comment -->\n";
  System s = parseOk(text);
  ASSERT_EQ(countNodes(s, NodeType::kCpu), 1);
  const CpuInfo& cpu = s.nodes[0].cpu;
  EXPECT_EQ(cpu.vendor, "AuthenticAMD");
  EXPECT_EQ(cpu.arch, "x86_64");
  EXPECT_EQ(cpu.hostHash, 0xabcu);
  EXPECT_EQ(countNodes(s, NodeType::kGpu), 1);
  EXPECT_EQ(s.findByBusId("18:00.0"), 1);
  EXPECT_EQ(s.nodes[1].gpu.vendor, GpuVendor::kNvidia);
}

TEST(TopoFileParse, WindowsLineEndingsAndLineNumbers) {
  System s;
  Status st = parse("<system>\r\n<cpu>\r\n<pci busid=\"0000:01:00.0\"\r\n     class=\"bridge\"/>\r\n</cpu></system>", &s);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("topo.xml:4: attribute class=\"bridge\""), std::string::npos) << st.message();
  s = parseOk("<system>\r\n<cpu numaid=\"0\"\r\n vendor=\"GenuineIntel\"/>\r\n</system>\r\n");
  EXPECT_EQ(s.nodes[0].cpu.vendor, "GenuineIntel");
}

TEST(TopoFileParse, EntitiesRoundTripThroughTheWriter) {
  System s = parseOk("<system><cpu vendor=\"&lt;a&amp;b&gt; &quot;c&quot; &apos;d&apos; &#233;\"/></system>");
  EXPECT_EQ(s.nodes[0].cpu.vendor, "<a&b> \"c\" 'd' \xc3\xa9");
  System back = parseOk(writeTopologyXml(s, 1));
  EXPECT_EQ(back.nodes[0].cpu.vendor, s.nodes[0].cpu.vendor);
}

TEST(TopoFileParse, MissingAttributesTakeDefaults) {
  System s = parseOk("<system><cpu><pci><gpu/></pci><pci/></cpu></system>");
  EXPECT_EQ(s.version, 1);
  ASSERT_EQ(countNodes(s, NodeType::kGpu), 1);
  const Node& gpu = s.nodes[static_cast<size_t>(s.nodesOfType(NodeType::kGpu)[0])];
  EXPECT_EQ(gpu.gpu.dev, -1);
  EXPECT_EQ(gpu.gpu.sm, 0);
  EXPECT_EQ(gpu.gpu.vendor, GpuVendor::kUnknown);
  EXPECT_TRUE(gpu.pci.busId.empty());
  EXPECT_EQ(countNodes(s, NodeType::kPciBridge), 1);  // a <pci> of no class is a bridge, as in NCCL
  EXPECT_EQ(countLinks(s, LinkType::kPcie), 2);
  for (const Link& l : s.links) EXPECT_DOUBLE_EQ(l.bwGBs, bw::pcie(0, 0));
  EXPECT_EQ(s.nodes[0].cpu.numaId, -1);
}

TEST(TopoFileParse, CpuOnlySkeletonIsValid) {
  System s = parseOk("<system version=\"1\"><cpu numaid=\"0\"/><cpu numaid=\"1\" vendor=\"AuthenticAMD\"/></system>");
  EXPECT_EQ(countNodes(s, NodeType::kCpu), 2);
  ASSERT_EQ(s.links.size(), 1u);
  EXPECT_EQ(s.links[0].type, LinkType::kSmp);
  EXPECT_DOUBLE_EQ(s.links[0].bwGBs, bw::smp(""));  // the slower of the two ends
  System empty = parseOk("<system/>");
  EXPECT_TRUE(empty.nodes.empty());
}

TEST(TopoFileParse, UnknownElementsAndAttributesAreSkipped) {
  System s = parseOk(
      "<system version=\"1\" flavour=\"x\">\n"
      "  <cpu numaid=\"0\" cores=\"64\"><widget a=\"b\"><pci busid=\"0000:01:00.0\"/></widget>\n"
      "    <pci busid=\"0000:18:00.0\" class=\"0x030200\" vendor=\"0x10de\" numa=\"0\">\n"
      "      <gpu dev=\"0\" sm=\"90\" hwid=\"7\"><nvlink target=\"0000:05:00.0\" count=\"2\" tclass=\"0x068000\" "
      "bw=\"1\"/>"
      "<magic/></gpu>\n"
      "    </pci>\n"
      "  </cpu>\n"
      "  <banana/>\n"
      "</system>\n");
  EXPECT_EQ(countNodes(s, NodeType::kGpu), 1);
  EXPECT_EQ(countNodes(s, NodeType::kPciBridge), 0) << "the <pci> inside <widget> is skipped with it";
  EXPECT_EQ(countNodes(s, NodeType::kNvSwitch), 1);
  EXPECT_EQ(countLinks(s, LinkType::kNvLink), 1);
}

TEST(TopoFileParse, VersionsAndGpuVendor) {
  // gcn (or a gfx arch) makes an AMD GPU without a PCI vendor; numeric arch is not a name.
  System s = parseOk(
      "<system version=\"2\"><cpu>"
      "<pci busid=\"0000:01:00.0\"><gpu dev=\"0\" gcn=\"gfx942\" arch=\"169983\"/></pci>"
      "<pci busid=\"0000:02:00.0\"><gpu dev=\"1\" arch=\"gfx90a\"/></pci>"
      "<pci busid=\"0000:03:00.0\"><gpu dev=\"2\" sm=\"94\"/></pci>"
      "</cpu></system>");
  EXPECT_EQ(s.version, 2);
  EXPECT_EQ(s.nodes[1].gpu.vendor, GpuVendor::kAmd);
  EXPECT_EQ(s.nodes[1].gpu.arch, "gfx942");
  EXPECT_EQ(s.nodes[2].gpu.vendor, GpuVendor::kAmd);
  EXPECT_EQ(s.nodes[2].gpu.arch, "gfx90a");
  EXPECT_EQ(s.nodes[3].gpu.vendor, GpuVendor::kUnknown) << "an sm alone in an RCCL file says nothing";
  // In NCCL's dialect an sm means NVIDIA.
  System v1 = parseOk("<system version=\"1\"><cpu><pci><gpu sm=\"80\"/></pci></cpu></system>");
  EXPECT_EQ(v1.nodes[1].gpu.vendor, GpuVendor::kNvidia);
  EXPECT_EQ(v1.nodes[1].gpu.arch, "sm_80");
  System v3 = parseOk("<system version=\"3\"/>");
  EXPECT_EQ(v3.version, 2);
}

TEST(TopoFileParse, BothEndsOfALinkBecomeOneLinkWithTheLargerCount) {
  System s = parseOk(
      "<system version=\"2\"><cpu>"
      "<pci busid=\"0000:01:00.0\" vendor=\"0x10de\"><gpu sm=\"90\"><nvlink target=\"0000:02:00.0\" "
      "count=\"4\"/></gpu></pci>"
      "<pci busid=\"0000:02:00.0\" vendor=\"0x10de\"><gpu sm=\"90\"><nvlink target=\"0000:01:00.0\" "
      "count=\"6\"/></gpu></pci>"
      "<pci busid=\"0000:03:00.0\" vendor=\"0x1002\"><gpu gcn=\"gfx90a\"><xgmi target=\"0000:04:00.0\" "
      "count=\"2\"/></gpu></pci>"
      "<pci busid=\"0000:04:00.0\" vendor=\"0x1002\"><gpu gcn=\"gfx90a\"/></pci>"
      "</cpu></system>");
  ASSERT_EQ(countLinks(s, LinkType::kNvLink), 1);
  ASSERT_EQ(countLinks(s, LinkType::kXgmi), 1);
  for (const Link& l : s.links) {
    if (l.type == LinkType::kNvLink) {
      EXPECT_EQ(l.count, 6);
      EXPECT_DOUBLE_EQ(l.bwGBs, 6 * bw::nvlinkPerLink(90));
    } else if (l.type == LinkType::kXgmi) {
      EXPECT_EQ(l.count, 2) << "listed at one end only";
      EXPECT_DOUBLE_EQ(l.bwGBs, 2 * bw::xgmiPerLink("gfx90a"));
    }
  }
}

TEST(TopoFileParse, LinksToUnknownOrWrongTargetsAreSkipped) {
  System s = parseOk(
      "<system><cpu>"
      "<pci busid=\"0000:01:00.0\" class=\"0x060400\"/>"
      "<pci busid=\"0000:02:00.0\"><gpu sm=\"90\">"
      "<nvlink target=\"0000:09:00.0\" count=\"2\"/>"  // not in the file, not a switch
      "<nvlink target=\"0000:01:00.0\" count=\"2\"/>"  // a bridge
      "<nvlink target=\"0000:02:00.0\" count=\"2\"/>"  // itself
      "<xgmi target=\"0000:0a:00.0\" count=\"1\" tclass=\"0x068000\"/>"
      "<nvlink count=\"3\"/>"  // no target
      "<nvlink target=\"0000:0b:00.0\" count=\"0\" tclass=\"0x068000\"/>"
      "</gpu></pci></cpu></system>");
  EXPECT_EQ(countLinks(s, LinkType::kNvLink), 0);
  EXPECT_EQ(countLinks(s, LinkType::kXgmi), 0);
  EXPECT_EQ(countNodes(s, NodeType::kNvSwitch), 0);
}

TEST(TopoFileParse, C2cPciLinkAndMultiPortNic) {
  System s = parseOk(
      "<system version=\"1\"><cpu numaid=\"0\" arch=\"arm64\">"
      "<pci busid=\"0009:01:00.0\" class=\"0x030200\" vendor=\"0x10de\"><gpu dev=\"0\" sm=\"90\">"
      "<c2c count=\"10\" bw=\"45000\"/></gpu></pci>"
      "<pci busid=\"0009:02:00.0\" class=\"0x030200\" vendor=\"0x10de\"><gpu dev=\"1\" sm=\"90\"><c2c "
      "count=\"2\"/></gpu></pci>"
      "<pci busid=\"0000:10:00.0\" class=\"0x060400\"><pcilink target=\"0000:20:00.0\"/></pci>"
      "<pci busid=\"0000:20:00.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\"/>"
      "<pci busid=\"0000:30:00.0\" class=\"0x020700\"><nic>"
      "<net name=\"mlx5_0\" dev=\"0\" port=\"1\" speed=\"200000\"/><net name=\"mlx5_1\" dev=\"1\" port=\"2\" "
      "speed=\"200000\"/>"
      "</nic></pci>"
      "</cpu></system>");
  std::vector<double> c2c;
  for (const Link& l : s.links) {
    if (l.type == LinkType::kC2c) c2c.push_back(l.bwGBs);
  }
  EXPECT_EQ(c2c, (std::vector<double>{450.0, 2 * bw::kC2cPerLink}));
  EXPECT_EQ(countLinks(s, LinkType::kPcie), 7);  // 2 GPUs, 2 bridges, 2 NIC ports to the CPU; the pcilink
  PciTree tree = pciTree(s);
  int a = s.findByBusId("0000:10:00.0"), b = s.findByBusId("0000:20:00.0");
  EXPECT_EQ(s.nodes[static_cast<size_t>(tree.parent[static_cast<size_t>(b)])].type, NodeType::kCpu)
      << "the pcilink is an extra, not the tree link";
  EXPECT_EQ(s.nodes[static_cast<size_t>(tree.parent[static_cast<size_t>(a)])].type, NodeType::kCpu);
  ASSERT_EQ(countNodes(s, NodeType::kNic), 2);
  std::vector<int> nics = s.nodesOfType(NodeType::kNic);
  EXPECT_EQ(s.nodes[static_cast<size_t>(nics[0])].pci.busId, s.nodes[static_cast<size_t>(nics[1])].pci.busId);
  EXPECT_EQ(s.nodes[static_cast<size_t>(nics[1])].nic.port, 2);
  // All of it survives the writer.
  System back = parseOk(writeTopologyXml(s, 1));
  EXPECT_EQ(testing::canonical(back), testing::canonical(s)) << writeTopologyXml(s, 1);
}

TEST(TopoFileParse, PciLinkAcrossTreesIsSkipped) {
  // Made a tree link, it would move one CPU's devices under the other's.
  System s = parseOk(
      "<system><cpu numaid=\"0\"><pci busid=\"0000:10:00.0\" class=\"0x060400\"><pcilink "
      "target=\"0000:90:00.0\"/></pci></cpu>"
      "<cpu numaid=\"1\"><pci busid=\"0000:90:00.0\" class=\"0x060400\"/></cpu>"
      "<pci busid=\"0000:a0:00.0\" class=\"0x060400\"><pcilink target=\"0000:10:00.0\"/></pci></system>");
  EXPECT_EQ(countLinks(s, LinkType::kPcie), 2);
}

TEST(TopoFileParse, AttributeCountIsBounded) {
  std::string text = "<system><cpu";
  for (int i = 0; i < 300; ++i) text += " a" + std::to_string(i) + "=\"\"";
  System s;
  Status st = parse(text + "/></system>", &s);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("<cpu> has more than 256 attributes"), std::string::npos) << st.message();
}

TEST(TopoFileParse, DevicesUnderNoCpu) {
  System s = parseOk(
      "<system><pci busid=\"0000:01:00.0\" class=\"0x060400\"><pci busid=\"0000:02:00.0\"><gpu dev=\"0\"/></pci></pci>"
      "<nic><net name=\"virt0\"/></nic></system>");
  EXPECT_EQ(countNodes(s, NodeType::kGpu), 1);
  EXPECT_EQ(countNodes(s, NodeType::kNic), 1);
  EXPECT_EQ(countLinks(s, LinkType::kPcie), 1);
  System back = parseOk(writeTopologyXml(s, 1));
  EXPECT_EQ(testing::canonical(back), testing::canonical(s)) << writeTopologyXml(s, 1);
}

TEST(TopoFileRead, MissingFileAndDirectoryAreNamed) {
  System s;
  Status st = readTopologyFile("/nonexistent/weft/topo.xml", &s);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), weftInvalidArgument);
  EXPECT_NE(st.message().find("/nonexistent/weft/topo.xml"), std::string::npos) << st.message();
  st = readTopologyFile("/tmp", &s);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("not a regular file"), std::string::npos) << st.message();
}

TEST(TopoFileRead, ErrorsNameThePath) {
  char path[] = "/tmp/weft-topo-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const char text[] = "<system>\n<cpu numaid=\"x\"/>\n</system>\n";
  ASSERT_EQ(write(fd, text, sizeof(text) - 1), static_cast<ssize_t>(sizeof(text) - 1));
  close(fd);
  System s;
  Status st = readTopologyFile(path, &s);
  unlink(path);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find(std::string(path) + ":2: attribute numaid=\"x\""), std::string::npos) << st.message();
}

}  // namespace
}  // namespace topo
}  // namespace weft
