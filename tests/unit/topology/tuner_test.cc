#include <gtest/gtest.h>

#include "topology/tuner.h"

namespace weft {
namespace topo {
namespace {

AllReduceAlgo pick(int nRanks, int64_t bytes, const std::string& forced = "") {
  TunerInput in;
  in.nRanks = nRanks;
  in.bytes = bytes;
  in.forcedAlgo = forced;
  in.treeMaxBytes = 65536;
  in.doublingMaxBytes = 8192;
  AllReduceAlgo out = AllReduceAlgo::kRing;
  Status s = chooseAllReduceAlgo(in, &out);
  EXPECT_TRUE(s.isOk()) << s.message();
  return out;
}

TEST(Tuner, SizeRulePicksDoublingThenTreeThenRing) {
  EXPECT_EQ(pick(8, 8), AllReduceAlgo::kDoubling);
  EXPECT_EQ(pick(8, 8192), AllReduceAlgo::kDoubling);
  EXPECT_EQ(pick(8, 8193), AllReduceAlgo::kTree);
  EXPECT_EQ(pick(8, 65536), AllReduceAlgo::kTree);
  EXPECT_EQ(pick(8, 65537), AllReduceAlgo::kRing);
  // Two ranks: the tree gains nothing over the ring.
  EXPECT_EQ(pick(2, 16384), AllReduceAlgo::kRing);
  EXPECT_EQ(pick(2, 64), AllReduceAlgo::kDoubling);
}

TEST(Tuner, ForcedAlgorithmWinsAndIsCaseInsensitive) {
  EXPECT_EQ(pick(8, 1 << 30, "Tree"), AllReduceAlgo::kTree);
  EXPECT_EQ(pick(8, 8, "RING"), AllReduceAlgo::kRing);
  EXPECT_EQ(pick(8, 1 << 30, "doubling"), AllReduceAlgo::kDoubling);
}

TEST(Tuner, UnknownForcedAlgorithmIsAnErrorNamingTheChoices) {
  TunerInput in;
  in.forcedAlgo = "NVLS";
  AllReduceAlgo out;
  Status s = chooseAllReduceAlgo(in, &out);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("WEFT_ALGO=NVLS"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("Ring, Tree or Doubling"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace topo
}  // namespace weft
