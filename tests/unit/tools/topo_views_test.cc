// weft-topo's views (tools/topo_report.h, tools/topo_svg.h) on the topology fixtures, whose
// matrices are known: DGX H100 (NV18 everywhere, PIX/NODE/SYS to the NICs), MI300X (XGMI1),
// a PCIe box with two GPUs per switch on two sockets.
#include <gtest/gtest.h>

#include <string>

#include "base/coll_traits.h"
#include "topo_report.h"
#include "topo_svg.h"
#include "topology/paths.h"
#include "topology/search.h"
#include "topology/topo_file.h"

namespace weft {
namespace tools {
namespace {

std::string fixture(const std::string& name) {
  return std::string(WEFT_TESTS_DIR) + "/fixtures/topo/" + name + ".xml";
}

topo::System load(const std::string& name) {
  topo::System sys;
  Status s = topo::readTopologyFile(fixture(name), &sys);
  EXPECT_TRUE(s.isOk()) << s.message();
  return sys;
}

// The cells of the matrix row that starts with `label`.
std::vector<std::string> row(const std::string& text, const std::string& label) {
  size_t at = text.find("\n" + label + " ");
  if (at == std::string::npos) return {};
  std::string line = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  std::vector<std::string> cells;
  size_t i = 0;
  while (i < line.size()) {
    size_t j = line.find(' ', i);
    if (j == std::string::npos) j = line.size();
    if (j > i) cells.push_back(line.substr(i, j - i));
    i = j + 1;
  }
  return cells;
}

TEST(CpuList, HexMasksBecomeRanges) {
  EXPECT_EQ(cpuListFromMask("ffffffff,0000ffff"), "0-15,32-63");
  EXPECT_EQ(cpuListFromMask("00000001"), "0");
  EXPECT_EQ(cpuListFromMask("80000000,00000005"), "0,2,63");
  EXPECT_EQ(cpuListFromMask(""), "");
  EXPECT_EQ(cpuListFromMask("zz"), "");
  EXPECT_EQ(cpuListFromMask("00000000"), "");
}

TEST(ConnectionMatrix, DgxH100) {
  topo::System sys = load("dgx-h100");
  std::string text = formatConnectionMatrix(sys, topo::computePaths(sys));
  // GPU0: itself, NV18 to the 7 others, PIX to the 2 NICs under its switch, NODE to the 2 of
  // the other switch on its socket, SYS to the 4 on the other socket, then affinities.
  std::vector<std::string> expect{"GPU0", "X",    "NV18", "NV18", "NV18", "NV18", "NV18", "NV18",         "NV18", "PIX",
                                  "PIX",  "NODE", "NODE", "SYS",  "SYS",  "SYS",  "SYS",  "0-55,112-167", "0"};
  EXPECT_EQ(row(text, "GPU0"), expect);
  EXPECT_EQ(row(text, "GPU7").back(), "1");
  EXPECT_NE(text.find("Legend:"), std::string::npos);
  EXPECT_NE(text.find("NIC0: mlx5_0"), std::string::npos);
}

TEST(RouteMatrix, StagedAcrossSocketsBeyondTheLevelAndP2pWithinIt) {
  topo::System pcie = load("pcie-4gpu");
  topo::PathMatrix paths = topo::computePaths(pcie);
  std::string text = formatRouteMatrix(pcie, paths, topo::P2pLevel::kPxb);
  std::vector<std::string> expect{"GPU1", "p2p", "X", "staged", "staged"};
  EXPECT_EQ(row(text, "GPU1"), expect) << text;
  EXPECT_NE(text.find("staged: PCIe across CPU sockets (SYS) beyond P2P level PXB"), std::string::npos) << text;
  expect = {"GPU1", "p2p", "X", "p2p", "p2p"};
  EXPECT_EQ(row(formatRouteMatrix(pcie, paths, topo::P2pLevel::kSys), "GPU1"), expect);
  expect = {"GPU1", "staged", "X", "staged", "staged"};
  EXPECT_EQ(row(formatRouteMatrix(pcie, paths, topo::P2pLevel::kNvl), "GPU1"), expect) << "PIX is beyond NVL";
  topo::System amd = load("mi300x");
  std::vector<std::string> r = row(formatRouteMatrix(amd, topo::computePaths(amd), topo::P2pLevel::kNvl), "GPU3");
  ASSERT_EQ(r.size(), 9u);
  for (size_t i = 1; i < r.size(); ++i) EXPECT_EQ(r[i], i == 4 ? "X" : "p2p") << "xGMI is within NVL";
}

TEST(ConnectionMatrix, Mi300xAndPcie) {
  topo::System amd = load("mi300x");
  std::vector<std::string> r = row(formatConnectionMatrix(amd, topo::computePaths(amd)), "GPU3");
  ASSERT_GE(r.size(), 9u);
  EXPECT_EQ(r[1], "XGMI1");
  EXPECT_EQ(r[4], "X");
  topo::System pcie = load("pcie-4gpu");
  r = row(formatConnectionMatrix(pcie, topo::computePaths(pcie)), "GPU1");
  std::vector<std::string> expect{"GPU1", "PIX", "X", "SYS", "SYS", "PHB", "SYS", "0-31,64-95", "0"};
  EXPECT_EQ(r, expect);
}

TEST(ConnectionMatrix, NoGpusListsCpusAndNics) {
  topo::System sys;
  topo::Node cpu;
  cpu.cpu.numaId = 0;
  cpu.cpu.affinity = "0000000f";
  int c = sys.addNode(cpu);
  topo::Node nic;
  nic.type = topo::NodeType::kNic;
  nic.nic.name = "eth0";
  nic.nic.speedMbps = 10000;
  int n = sys.addNode(nic);
  sys.addLink(c, n, topo::LinkType::kPcie, 1, 2);
  std::string text = formatConnectionMatrix(sys, topo::computePaths(sys));
  EXPECT_NE(text.find("No GPUs"), std::string::npos);
  EXPECT_NE(text.find("CPUs 0-3"), std::string::npos);
  EXPECT_NE(text.find("NIC0: eth0 (10 Gb/s"), std::string::npos);
  EXPECT_EQ(formatPredictions(topo::Cluster::uniform(sys, 1), topo::search(sys)), "No GPUs: no predictions.\n");
}

TEST(BandwidthMatrix, BottlenecksOfDgxH100) {
  topo::System sys = load("dgx-h100");
  std::vector<std::string> r = row(formatBandwidthMatrix(sys, topo::computePaths(sys)), "GPU0");
  ASSERT_EQ(r.size(), 17u);
  EXPECT_EQ(r[1], "-");
  EXPECT_EQ(r[2], "370.8");  // 18 NVLink4 links into the fabric
  EXPECT_EQ(r[9], "50.0");   // PCIe Gen5 x16 to the NIC beside it
}

TEST(RingsAndTrees, EveryRankOnceInEachRing) {
  topo::System sys = load("mi300x");
  topo::SearchResult result = topo::search(topo::Cluster::uniform(sys, 4));
  std::string text = formatRingsAndTrees(result);
  EXPECT_EQ(text.rfind("32 ranks on 4 nodes", 0), 0u) << text;
  std::vector<std::string> r = row("\n" + text.substr(text.find("ring 0:")), "ring");
  ASSERT_GE(r.size(), 2u + 32u);  // "ring", "0:", 32 ranks, "(bottleneck", ...
  std::vector<bool> seen(32, false);
  for (int i = 0; i < 32; ++i) seen[static_cast<size_t>(std::stoi(r[static_cast<size_t>(2 + i)]))] = true;
  for (int i = 0; i < 32; ++i) EXPECT_TRUE(seen[static_cast<size_t>(i)]) << "rank " << i;
  EXPECT_NE(text.find("tree 0a: root"), std::string::npos);
}

TEST(Predictions, OneRowPerSizeOneColumnPerCollective) {
  topo::System sys = load("dgx-h100");
  topo::Cluster cluster = topo::Cluster::uniform(sys, 1);
  std::string text = formatPredictions(cluster, topo::search(cluster));
  for (int64_t bytes : predictionSizes()) {
    std::vector<std::string> r = row(text, formatBytes(bytes).substr(0, formatBytes(bytes).find(' ')));
    EXPECT_EQ(r.size(), 2u + 6u * 3u) << formatBytes(bytes);  // size, unit, 6 x (busbw, algo/proto, xN)
  }
  EXPECT_EQ(formatBytes(1 << 30), "1 GiB");
  EXPECT_EQ(formatBytes(65536), "64 KiB");
}

TEST(Svg, OneRingPathPerDrawnRingAndEscapedText) {
  for (const char* name : {"dgx-h100", "mi300x", "pcie-4gpu", "cloud-vm-skeleton"}) {
    topo::System sys = load(name);
    topo::SearchResult rings = topo::search(sys);
    sys.source = "file:<a&b>";
    std::string svg = renderTopologySvg(sys, rings);
    size_t drawn = 0;
    for (size_t at = svg.find("class=\"ring\""); at != std::string::npos; at = svg.find("class=\"ring\"", at + 1))
      ++drawn;
    EXPECT_EQ(drawn, std::min<size_t>(kMaxRingsDrawn, rings.rings.size())) << name;
    EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
    EXPECT_NE(svg.find("viewBox=\"0 0 "), std::string::npos);
    EXPECT_NE(svg.find("file:&lt;a&amp;b&gt;"), std::string::npos);
    EXPECT_EQ(svg.find("<a&b>"), std::string::npos);
  }
  EXPECT_EQ(xmlEscape("\"x\" < 'y' & z\x01"), "&quot;x&quot; &lt; &apos;y&apos; &amp; z");
}

// --help's --schedule and --algo lines come from the tables: every scheduled collective, and
// each with exactly the algorithms it has, appear; sendrecv (not scheduled) does not.
TEST(Help, ScheduleLinesListEveryCollectiveAndItsAlgorithms) {
  std::string help = scheduleHelp();
  // Undo the wrapping so that "reduce: ring, tree" can be found whole.
  std::string flat;
  for (size_t i = 0; i < help.size(); ++i) {
    if (help[i] != '\n') {
      flat += help[i];
      continue;
    }
    while (i + 1 < help.size() && help[i + 1] == ' ') ++i;
    flat += ' ';
  }
  for (const coll::CollTraits& t : coll::kCollTraits) {
    EXPECT_EQ(flat.find(std::string(" ") + t.name + " ") != std::string::npos, t.scheduled) << t.name << "\n" << help;
    if (!t.scheduled) continue;
    std::string entry = std::string(" ") + t.name + ":";
    const char* sep = " ";
    for (const coll::AlgoTraits& a : coll::kAlgoTraits) {
      if (coll::algoSupported(t.kind, a.algo)) entry += sep + std::string(a.name), sep = ", ";
    }
    EXPECT_NE(flat.find(entry), std::string::npos) << entry << "\n" << help;
  }
  for (size_t at = 0; (at = help.find('\n', at)) != std::string::npos; ++at) {
    size_t next = help.find('\n', at + 1);
    if (next != std::string::npos) {
      EXPECT_LE(next - at - 1, 100u) << help;
    }
  }
}

}  // namespace
}  // namespace tools
}  // namespace weft
