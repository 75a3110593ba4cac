// Size stepping: -f multiplies, -i adds, the end is inclusive, 0 is a size, nothing loops forever.
#include "perf/sizes.h"

#include <gtest/gtest.h>

#include <vector>

namespace weft::perf {
namespace {

using Sizes = std::vector<size_t>;

TEST(PerfSizes, FactorSteps) {
  EXPECT_EQ(sizeSteps(8, 64, 1 << 20, 2), (Sizes{8, 16, 32, 64}));
  EXPECT_EQ(sizeSteps(8, 8 << 20, 0, 4), (Sizes{8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288, 2097152, 8388608}));
}

TEST(PerfSizes, EndIsInclusiveButNotForced) {
  EXPECT_EQ(sizeSteps(8, 100, 1, 2), (Sizes{8, 16, 32, 64}));  // 128 > 100, and 100 itself is not a step
  EXPECT_EQ(sizeSteps(1024, 1024, 1, 2), (Sizes{1024}));
}

TEST(PerfSizes, ByteSteps) {
  EXPECT_EQ(sizeSteps(0, 3 << 20, 1 << 20, 1), (Sizes{0, 1 << 20, 2 << 20, 3 << 20}));
  EXPECT_EQ(sizeSteps(100, 350, 100, 1), (Sizes{100, 200, 300}));
  EXPECT_EQ(sizeSteps(32 << 20, 32 << 20, 1 << 20, 1), (Sizes{32 << 20}));  // the defaults: one size
}

TEST(PerfSizes, ZeroSizes) {
  EXPECT_EQ(sizeSteps(0, 0, 1 << 20, 2), (Sizes{0}));
  EXPECT_EQ(sizeSteps(0, 8, 0, 2), (Sizes{0, 1, 2, 4, 8}));
  EXPECT_EQ(sizeSteps(0, 0, 0, 1), (Sizes{0}));
}

TEST(PerfSizes, NoStepVisitsTheMinimumOnce) { EXPECT_EQ(sizeSteps(64, 1024, 0, 1), (Sizes{64})); }

TEST(PerfSizes, OverflowEndsTheList) {
  const size_t top = ~size_t{0};
  const Sizes f = sizeSteps(size_t{1} << 62, top, 0, 2);
  EXPECT_EQ(f, (Sizes{size_t{1} << 62, size_t{1} << 63}));
  const Sizes b = sizeSteps(top - 1, top, 5, 1);
  EXPECT_EQ(b, (Sizes{top - 1}));
}

}  // namespace
}  // namespace weft::perf
