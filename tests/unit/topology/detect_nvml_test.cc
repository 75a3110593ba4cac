// The NVML source without NVIDIA's library: a missing library is "absent" (an INFO line, no
// GPUs), a library that is not NVML is "failed", and neither crashes or adds anything.
#include <gtest/gtest.h>

#include "topology/detect.h"
#include "topology/detect_sources.h"

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

}  // namespace
}  // namespace topo
}  // namespace weft
