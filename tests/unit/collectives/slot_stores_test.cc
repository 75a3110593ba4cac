// How a host executor thread chooses between cached and non-temporal stores for the slots it
// fills (collectives/slot_stores.h), driven with made-up step times.
#include "collectives/slot_stores.h"

#include <gtest/gtest.h>

namespace weft::coll {
namespace {

constexpr size_t kBig = 256 * 1024;

// Runs `steps` eligible steps in which a cached step takes cachedNs and a streamed one
// streamedNs; returns how many of them streamed.
int drive(SlotStoreChooser& c, int steps, uint64_t cachedNs, uint64_t streamedNs) {
  int streamed = 0;
  for (int i = 0; i < steps; ++i) {
    const bool s = c.streamNext(kBig);
    c.record(s, kBig, s ? streamedNs : cachedNs);
    streamed += s ? 1 : 0;
  }
  return streamed;
}

TEST(SlotStores, Names) {
  SlotStores m = SlotStores::kAuto;
  ASSERT_TRUE(slotStoresFromName("cached", &m));
  EXPECT_EQ(m, SlotStores::kCached);
  ASSERT_TRUE(slotStoresFromName("streaming", &m));
  EXPECT_EQ(m, SlotStores::kStreaming);
  ASSERT_TRUE(slotStoresFromName("auto", &m));
  EXPECT_EQ(m, SlotStores::kAuto);
  for (const char* bad : {"", "Auto", "stream", "cached ", "nt"}) {
    m = SlotStores::kCached;
    EXPECT_FALSE(slotStoresFromName(bad, &m)) << bad;
    EXPECT_EQ(m, SlotStores::kCached) << bad;
  }
}

TEST(SlotStores, FixedModesIgnoreTimes) {
  SlotStoreChooser cached(SlotStores::kCached), streaming(SlotStores::kStreaming);
  EXPECT_EQ(drive(cached, 100, 1000000, 1), 0);
  EXPECT_EQ(drive(streaming, 100, 1, 1000000), 100);
  EXPECT_EQ(cached.nsPerKiB(false), 0.0);
  EXPECT_EQ(streaming.nsPerKiB(true), 0.0);
}

TEST(SlotStores, SmallStepsAlwaysCached) {
  for (SlotStores m : {SlotStores::kCached, SlotStores::kStreaming, SlotStores::kAuto}) {
    SlotStoreChooser c(m);
    EXPECT_FALSE(c.streamNext(SlotStoreChooser::kMinBytes - 1));
    c.record(false, SlotStoreChooser::kMinBytes - 1, 5);
    EXPECT_EQ(c.nsPerKiB(false), 0.0);  // not measured either
  }
  SlotStoreChooser s(SlotStores::kStreaming);
  EXPECT_TRUE(s.streamNext(SlotStoreChooser::kMinBytes));
}

TEST(SlotStores, AutoMeasuresBothThenKeepsTheFaster) {
  SlotStoreChooser c(SlotStores::kAuto);
  EXPECT_FALSE(c.streamNext(kBig));  // cached first
  c.record(false, kBig, 400000);
  EXPECT_TRUE(c.streamNext(kBig));  // then streaming
  c.record(true, kBig, 100000);
  // Streaming 4x faster: it is used, and cached is tried once per kExploreEvery x 4 steps.
  const int n = SlotStoreChooser::kExploreEvery * 4 * 10;
  EXPECT_EQ(drive(c, n, 400000, 100000), n - 10);
  EXPECT_NEAR(c.nsPerKiB(true), 100000.0 / 256, 1e-6);
}

// A writer sees only its own side of streaming: streaming that measures a little faster (less
// than kStreamMargin) leaves the slots cached, tried now and then; clearly faster takes over.
TEST(SlotStores, AutoStreamsOnlyWhenClearlyFaster) {
  SlotStoreChooser c(SlotStores::kAuto);
  drive(c, 2, 115000, 100000);  // streaming measured 1.15x faster
  const int n = SlotStoreChooser::kExploreEvery * 20;
  EXPECT_LE(drive(c, n, 115000, 100000), 20);
  SlotStoreChooser clear(SlotStores::kAuto);
  drive(clear, 2, 130000, 100000);  // 1.3x: above the margin
  EXPECT_GE(drive(clear, n, 130000, 100000), n - 20);
}

TEST(SlotStores, AutoTriesTheOtherWayAtARateSetByTheRatio) {
  SlotStoreChooser c(SlotStores::kAuto);
  drive(c, 2, 100000, 150000);  // measured: cached faster by 1.5x
  const int every = SlotStoreChooser::kExploreEvery * 3 / 2;
  EXPECT_EQ(drive(c, every * 20, 100000, 150000), 20);  // one try every kExploreEvery x 1.5 steps
  // However far apart, a try at least every kExploreEvery x kMaxRatio steps.
  SlotStoreChooser far(SlotStores::kAuto);
  drive(far, 2, 100, 1000000);
  const int most = static_cast<int>(SlotStoreChooser::kExploreEvery * SlotStoreChooser::kMaxRatio);
  EXPECT_EQ(drive(far, most * 4, 100, 1000000), 4);
}

TEST(SlotStores, AutoFollowsAChangeOfPlacement) {
  SlotStoreChooser c(SlotStores::kAuto);
  drive(c, 200, 100000, 140000);  // cores sharing a cache: cached wins
  EXPECT_LT(drive(c, 100, 100000, 140000), 10);
  // The cores move apart: cached steps now take 5x as long; within a few hundred steps (a
  // 64 MiB all-reduce has 256 per rank) streaming takes over.
  int streamedLate = 0;
  for (int round = 0; round < 4; ++round) streamedLate = drive(c, 128, 500000, 140000);
  EXPECT_GT(streamedLate, 120);
  // And back.
  for (int round = 0; round < 8; ++round) streamedLate = drive(c, 128, 100000, 140000);
  EXPECT_LT(streamedLate, 16);
}

// One stretched step (a preemption, the first step after a pause) does not flip the choice: with
// cached stores 2x faster, a cached step that took 100x as long leaves them preferred (before the
// cap, it lifted cached stores' average past streaming's and the next ~800 steps streamed).
TEST(SlotStores, OneStretchedStepDoesNotFlipTheChoice) {
  SlotStoreChooser c(SlotStores::kAuto);
  drive(c, 200, 100000, 200000);
  c.record(false, kBig, 10000000);
  EXPECT_LE(drive(c, 200, 100000, 200000), 2);
  EXPECT_LT(c.nsPerKiB(false), 2 * 100000.0 / 256);
}

// While ranks outnumber CPUs, auto writes cached and measures nothing; explicit modes stand.
TEST(SlotStores, AutoWritesCachedWhileRanksOutnumberCpus) {
  if (configuredSlotStores() != SlotStores::kAuto) GTEST_SKIP() << "WEFT_SLOT_STORES is set";
  EXPECT_TRUE(threadSlotStores().measures());
  setRanksOutnumberCpus(true);
  SlotStoreChooser& c = threadSlotStores();
  EXPECT_FALSE(c.measures());
  EXPECT_EQ(drive(c, 1000, 1000000, 1), 0);  // streaming a million times faster: still cached
  setRanksOutnumberCpus(false);
  EXPECT_TRUE(threadSlotStores().measures());
}

}  // namespace
}  // namespace weft::coll
