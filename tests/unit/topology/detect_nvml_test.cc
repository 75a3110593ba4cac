// The NVML source without NVIDIA's library: a missing library is "absent" (an INFO line, no
// GPUs), a library that is not NVML is "failed", and neither crashes or adds anything. With a
// stand-in library (fakes/fake_nvml.cc): an HGX H100 whose NVSwitches NVML cannot name (links to
// one placeholder switch, as NCCL's files have them), and two A100s with direct NVLinks.
#include <gtest/gtest.h>

#include <cstdlib>

#include "topology/detect.h"
#include "topology/detect_sources.h"
#include "topology/paths.h"

namespace weft {
namespace topo {
namespace {

TEST(DetectNvml, MissingLibraryIsAbsent) {
  detect::Inventory inv;
  DetectSourceResult r = detect::readNvml("/nonexistent/libnvidia-ml.so.1", &inv);
  EXPECT_EQ(r.name, "nvml");
  EXPECT_EQ(r.state, SourceState::kAbsent);
  EXPECT_NE(r.detail.find("NVML not found"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("no NVIDIA GPUs/NVLinks detected"), std::string::npos) << r.detail;
  EXPECT_TRUE(inv.gpus.empty());
  EXPECT_TRUE(inv.gpuLinks.empty());
}

TEST(DetectNvml, WrongLibraryFailsWithoutCrashing) {
  detect::Inventory inv;
  DetectSourceResult r = detect::readNvml("libm.so.6", &inv);  // loads, but has no nvml* symbols
  EXPECT_EQ(r.state, SourceState::kFailed);
  EXPECT_NE(r.detail.find("nvmlInit_v2"), std::string::npos) << r.detail;
  EXPECT_TRUE(inv.gpus.empty());
}

TEST(DetectNvml, DefaultLibraryOnThisMachine) {
  detect::Inventory inv;
  DetectSourceResult r = detect::readNvml("libnvidia-ml.so.1", &inv);
  if (r.state == SourceState::kUsed) {
    // An NVIDIA machine: every GPU has a bus id and a compute capability.
    for (const detect::GpuEntry& g : inv.gpus) {
      EXPECT_FALSE(g.busId.empty());
      EXPECT_GT(g.sm, 0);
    }
    GTEST_SKIP() << "NVML present: " << r.detail;
  }
  EXPECT_NE(r.state, SourceState::kSkipped);
  EXPECT_FALSE(r.detail.empty());
  EXPECT_TRUE(inv.gpus.empty());
}

TEST(DetectNvml, DetectionGoesOnWithoutIt) {
  DetectOptions o;
  o.nvmlLibrary = "/nonexistent/libnvidia-ml.so.1";
  o.rsmiLibrary = "/nonexistent/librocm_smi64.so";
  System s;
  DetectReport rep;
  ASSERT_TRUE(detectSystem(o, &s, &rep).isOk());
  ASSERT_NE(rep.find("nvml"), nullptr);
  EXPECT_EQ(rep.find("nvml")->state, SourceState::kAbsent);
  EXPECT_EQ(rep.find("rocm-smi")->state, SourceState::kAbsent);
  EXPECT_FALSE(s.nodesOfType(NodeType::kCpu).empty());
}

struct FakeMachine {
  explicit FakeMachine(const char* name, bool hideType = false) {
    setenv("FAKE_NVML_MACHINE", name, 1);
    if (hideType) setenv("FAKE_NVML_NO_TYPE", "1", 1);
  }
  ~FakeMachine() {
    unsetenv("FAKE_NVML_MACHINE");
    unsetenv("FAKE_NVML_NO_TYPE");
  }
};

TEST(DetectNvml, NvSwitchWithoutBusIdIsOnePlaceholderSwitch) {
  for (bool hideType : {false, true}) {
    FakeMachine fake("hgx-h100", hideType);
    detect::Inventory inv;
    DetectSourceResult r = detect::readNvml(WEFT_FAKE_NVML, &inv);
    ASSERT_EQ(r.state, SourceState::kUsed) << r.detail;
    EXPECT_NE(r.detail.find("8 GPU(s), 8 NVLink bundle(s)"), std::string::npos) << r.detail;
    ASSERT_EQ(inv.gpus.size(), 8u);
    EXPECT_EQ(inv.gpus[0].busId, "0000:18:00.0");
    EXPECT_EQ(inv.gpus[7].sm, 90);
    ASSERT_EQ(inv.gpuLinks.size(), 8u) << "hideType " << hideType;
    for (const detect::GpuLink& l : inv.gpuLinks) {
      EXPECT_TRUE(l.toSwitch);
      EXPECT_EQ(l.to, "");
      EXPECT_EQ(l.count, 18);
    }
  }
  // The system: one NVSwitch that every GPU reaches with its 18 links, so every pair is NVLink.
  FakeMachine fake("hgx-h100");
  DetectOptions o;
  o.nvmlLibrary = WEFT_FAKE_NVML;
  o.rsmiLibrary = "";
  System s;
  DetectReport rep;
  ASSERT_TRUE(detectSystem(o, &s, &rep).isOk());
  const std::vector<int> switches = s.nodesOfType(NodeType::kNvSwitch);
  ASSERT_EQ(switches.size(), 1u);
  const std::vector<int> gpus = s.nodesOfType(NodeType::kGpu);
  ASSERT_EQ(gpus.size(), 8u);
  int nvlinks = 0;
  for (const Link& l : s.links) {
    if (l.type == LinkType::kNvLink && (l.from == switches[0] || l.to == switches[0])) {
      ++nvlinks;
      EXPECT_EQ(l.count, 18);
    }
  }
  EXPECT_EQ(nvlinks, 8);  // one bundle per GPU
  const PathMatrix paths = computePaths(s);
  EXPECT_EQ(paths.at(gpus[0], gpus[7]).type, PathType::kNvl);
}

TEST(DetectNvml, DirectNvLinksBetweenTwoGpus) {
  FakeMachine fake("a100-pair");
  detect::Inventory inv;
  DetectSourceResult r = detect::readNvml(WEFT_FAKE_NVML, &inv);
  ASSERT_EQ(r.state, SourceState::kUsed) << r.detail;
  ASSERT_EQ(inv.gpus.size(), 2u);
  ASSERT_EQ(inv.gpuLinks.size(), 1u) << "both ends list the bundle; it is kept once";
  EXPECT_FALSE(inv.gpuLinks[0].toSwitch);
  EXPECT_EQ(inv.gpuLinks[0].count, 12);
  EXPECT_TRUE(inv.hasGpuLink("0000:07:00.0", "0000:0f:00.0"));
}

}  // namespace
}  // namespace topo
}  // namespace weft
