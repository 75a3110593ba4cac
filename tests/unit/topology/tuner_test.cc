#include <gtest/gtest.h>

#include "topology/tuner.h"

namespace weft {
namespace topo {
namespace {

coll::Algo pick(int nRanks, int64_t bytes, const std::string& forced = "") {
  TunerInput in;
  in.nRanks = nRanks;
  in.bytes = bytes;
  in.forcedAlgo = forced;
  in.treeMaxBytes = 65536;
  in.doublingMaxBytes = 8192;
  coll::Algo out = coll::Algo::kRing;
  Status s = chooseAllReduceAlgo(in, &out);
  EXPECT_TRUE(s.isOk()) << s.message();
  return out;
}

TEST(Tuner, SizeRulePicksDoublingThenTreeThenRing) {
  EXPECT_EQ(pick(8, 8), coll::Algo::kRecursiveDoubling);
  EXPECT_EQ(pick(8, 8192), coll::Algo::kRecursiveDoubling);
  EXPECT_EQ(pick(8, 8193), coll::Algo::kTree);
  EXPECT_EQ(pick(8, 65536), coll::Algo::kTree);
  EXPECT_EQ(pick(8, 65537), coll::Algo::kRing);
  // Two ranks: the tree gains nothing over the ring.
  EXPECT_EQ(pick(2, 16384), coll::Algo::kRing);
  EXPECT_EQ(pick(2, 64), coll::Algo::kRecursiveDoubling);
}

TEST(Tuner, ForcedAlgorithmWinsAndIsCaseInsensitive) {
  EXPECT_EQ(pick(8, 1 << 30, "Tree"), coll::Algo::kTree);
  EXPECT_EQ(pick(8, 8, "RING"), coll::Algo::kRing);
  EXPECT_EQ(pick(8, 1 << 30, "doubling"), coll::Algo::kRecursiveDoubling);
}

TEST(Tuner, UnknownForcedAlgorithmIsAnErrorNamingTheChoices) {
  TunerInput in;
  in.forcedAlgo = "NVLS";
  coll::Algo out;
  Status s = chooseAllReduceAlgo(in, &out);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("WEFT_ALGO=NVLS"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("ring, tree or doubling"), std::string::npos) << s.message();
}

// An algorithm that exists, but not for all-reduce, is refused the same way.
TEST(Tuner, ForcedAlgorithmOfAnotherCollectiveIsAnError) {
  TunerInput in;
  in.forcedAlgo = "pairwise";
  coll::Algo out = coll::Algo::kRing;
  Status s = chooseAllReduceAlgo(in, &out);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("WEFT_ALGO=pairwise names no all-reduce algorithm"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace topo
}  // namespace weft
