// The ROCm sources: gfx names from KFD's target versions, the KFD topology parser on a fake
// tree (tests/fixtures/sysfs/kfd_gfx942x2: a CPU node and two gfx942 GPUs at 0000:0c:00.0 and
// 0000:22:00.0 joined by one xGMI io_link of weight 15), a bundle counted from its bandwidths,
// and ROCm SMI missing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "detect_test_util.h"
#include "topology/detect.h"
#include "topology/detect_sources.h"

namespace weft {
namespace topo {
namespace {

using testing::linkBetween;
using testing::sysfsFixture;

TEST(DetectRocm, GfxNames) {
  EXPECT_EQ(detect::gfxArchFromTargetVersion(90010), "gfx90a");
  EXPECT_EQ(detect::gfxArchFromTargetVersion(90008), "gfx908");
  EXPECT_EQ(detect::gfxArchFromTargetVersion(90400), "gfx940");
  EXPECT_EQ(detect::gfxArchFromTargetVersion(90402), "gfx942");
  EXPECT_EQ(detect::gfxArchFromTargetVersion(90500), "gfx950");
  EXPECT_EQ(detect::gfxArchFromTargetVersion(100300), "gfx1030");
  EXPECT_EQ(detect::gfxArchFromTargetVersion(110000), "gfx1100");
  EXPECT_EQ(detect::gfxArchFromTargetVersion(0), "");
  EXPECT_EQ(detect::gfxArchFromTargetVersion(91600), "");  // minor 16 has no hex digit
}

TEST(DetectRocm, KfdFixtureGivesTwoGpusAndOneXgmiLink) {
  detect::Inventory inv;
  DetectSourceResult r = detect::readKfd(sysfsFixture("kfd_gfx942x2"), &inv);
  ASSERT_EQ(r.state, SourceState::kUsed) << r.detail;
  ASSERT_EQ(inv.gpus.size(), 2u);
  EXPECT_EQ(inv.gpus[0].busId, "0000:0c:00.0");  // location_id 3072 = bus 0x0c
  EXPECT_EQ(inv.gpus[1].busId, "0000:22:00.0");  // location_id 8704 = bus 0x22
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(inv.gpus[i].arch, "gfx942");
    EXPECT_EQ(inv.gpus[i].vendor, GpuVendor::kAmd);
    EXPECT_EQ(inv.gpus[i].dev, i);
  }
  // Each end lists the link; the PCIe io_links to the CPU node are not GPU links.
  ASSERT_EQ(inv.gpuLinks.size(), 1u);
  EXPECT_EQ(inv.gpuLinks[0].type, LinkType::kXgmi);
  EXPECT_EQ(inv.gpuLinks[0].count, 1);
  EXPECT_FALSE(inv.gpuLinks[0].toSwitch);
  EXPECT_TRUE(inv.hasGpuLink("0000:22:00.0", "0000:0c:00.0"));
}

TEST(DetectRocm, SystemFromKfdFixture) {
  DetectOptions o;
  o.root = sysfsFixture("kfd_gfx942x2");
  o.nvmlLibrary = "";
  o.rsmiLibrary = "";
  System s;
  DetectReport rep;
  ASSERT_TRUE(detectSystem(o, &s, &rep).isOk());
  EXPECT_EQ(rep.find("rocm-kfd")->state, SourceState::kUsed);
  std::vector<int> gpus = s.nodesOfType(NodeType::kGpu);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(s.nodes[gpus[0]].gpu.arch, "gfx942");
  int l = linkBetween(s, gpus[0], gpus[1]);
  ASSERT_GE(l, 0);
  EXPECT_EQ(s.links[l].type, LinkType::kXgmi);
  EXPECT_EQ(s.links[l].count, 1);
  EXPECT_DOUBLE_EQ(s.links[l].bwGBs, 48.0);  // gfx942: 48 usable per link
  EXPECT_EQ(s.version, 2);                   // RCCL's file format
  // No PCI tree in this fixture: the GPUs hang off the one CPU node, and the report says so.
  int cpu = s.nodesOfType(NodeType::kCpu).at(0);
  EXPECT_GE(linkBetween(s, cpu, gpus[0]), 0);
  bool noted = false;
  for (const std::string& n : rep.notes) noted |= n.find("0000:0c:00.0") != std::string::npos;
  EXPECT_TRUE(noted) << rep.format();
}

void writeFile(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// Two gfx90a GCDs of one MI250X package: one io_link each way whose max_bandwidth is four
// times its min_bandwidth, i.e. four xGMI links.
TEST(DetectRocm, BundleCountFromBandwidths) {
  std::string root = ::testing::TempDir() + "/weft_kfd_mi250x";
  std::filesystem::remove_all(root);
  std::string nodes = root + "/sys/class/kfd/kfd/topology/nodes";
  writeFile(nodes + "/0/properties", "cpu_cores_count 64\ngfx_target_version 0\n");
  for (int n = 1; n <= 2; ++n) {
    writeFile(nodes + "/" + std::to_string(n) + "/properties",
              "simd_count 440\ngfx_target_version 90010\nlocation_id " + std::to_string(n == 1 ? 0xc100 : 0xc600) +
                  "\ndomain 0\n");
    writeFile(nodes + "/" + std::to_string(n) + "/io_links/0/properties",
              "type 11\nnode_from " + std::to_string(n) + "\nnode_to " + std::to_string(3 - n) +
                  "\nweight 15\nmin_bandwidth 50000\nmax_bandwidth 200000\n");
  }
  detect::Inventory inv;
  ASSERT_EQ(detect::readKfd(root, &inv).state, SourceState::kUsed);
  ASSERT_EQ(inv.gpus.size(), 2u);
  EXPECT_EQ(inv.gpus[0].busId, "0000:c1:00.0");
  EXPECT_EQ(inv.gpus[0].arch, "gfx90a");
  ASSERT_EQ(inv.gpuLinks.size(), 1u);
  EXPECT_EQ(inv.gpuLinks[0].count, 4);

  DetectOptions o;
  o.root = root;
  o.nvmlLibrary = "";
  o.rsmiLibrary = "";
  System s;
  ASSERT_TRUE(detectSystem(o, &s, nullptr).isOk());
  std::vector<int> gpus = s.nodesOfType(NodeType::kGpu);
  ASSERT_EQ(gpus.size(), 2u);
  int l = linkBetween(s, gpus[0], gpus[1]);
  ASSERT_GE(l, 0);
  EXPECT_EQ(s.links[l].count, 4);
  EXPECT_DOUBLE_EQ(s.links[l].bwGBs, 160.0);  // 4 x 40 (gfx90a)
}

TEST(DetectRocm, NoKfdTreeIsAbsent) {
  detect::Inventory inv;
  DetectSourceResult r = detect::readKfd(::testing::TempDir() + "/weft_no_kfd_here", &inv);
  EXPECT_EQ(r.state, SourceState::kAbsent);
  EXPECT_NE(r.detail.find("no AMD GPUs"), std::string::npos) << r.detail;
  EXPECT_TRUE(inv.gpus.empty());
}

TEST(DetectRocm, MissingRocmSmiIsAbsent) {
  detect::Inventory inv;
  DetectSourceResult r = detect::readRocmSmi("/nonexistent/librocm_smi64.so", &inv);
  EXPECT_EQ(r.state, SourceState::kAbsent);
  EXPECT_NE(r.detail.find("ROCm SMI not found"), std::string::npos) << r.detail;
  EXPECT_TRUE(inv.gpus.empty());
}

TEST(DetectRocm, WrongLibraryFailsWithoutCrashing) {
  detect::Inventory inv;
  DetectSourceResult r = detect::readRocmSmi("libm.so.6", &inv);  // loads, but has no rsmi_* symbols
  EXPECT_EQ(r.state, SourceState::kFailed);
  EXPECT_NE(r.detail.find("rsmi_init"), std::string::npos) << r.detail;
  EXPECT_TRUE(inv.gpus.empty());
}

}  // namespace
}  // namespace topo
}  // namespace weft
