// Counts, row sizes and bus-bandwidth factors per collective (formats.md §1's table).
#include "perf/collectives.h"

#include <gtest/gtest.h>

namespace weft::perf {
namespace {

const Collective kAll[] = {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                           Collective::kBroadcast, Collective::kReduce,    Collective::kAllToAll,
                           Collective::kSendRecv};

TEST(PerfCollectives, BusBwFactors) {
  for (int n : {1, 2, 3, 4, 8, 16}) {
    const double d = n;
    EXPECT_DOUBLE_EQ(busBwFactor(Collective::kAllReduce, n), 2 * (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBwFactor(Collective::kAllGather, n), (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBwFactor(Collective::kReduceScatter, n), (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBwFactor(Collective::kAllToAll, n), (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBwFactor(Collective::kBroadcast, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(busBwFactor(Collective::kReduce, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(busBwFactor(Collective::kSendRecv, n), 1.0) << n;
  }
  EXPECT_DOUBLE_EQ(busBwFactor(Collective::kAllReduce, 8), 1.75);
}

TEST(PerfCollectives, AlgBytesCountEveryRankForGatherScatterAllToAll) {
  EXPECT_DOUBLE_EQ(algBytes(Collective::kAllReduce, 1000, 4, 8), 4000);
  EXPECT_DOUBLE_EQ(algBytes(Collective::kBroadcast, 1000, 4, 8), 4000);
  EXPECT_DOUBLE_EQ(algBytes(Collective::kReduce, 1000, 4, 8), 4000);
  EXPECT_DOUBLE_EQ(algBytes(Collective::kSendRecv, 1000, 4, 8), 4000);
  EXPECT_DOUBLE_EQ(algBytes(Collective::kAllGather, 1000, 4, 8), 32000);
  EXPECT_DOUBLE_EQ(algBytes(Collective::kReduceScatter, 1000, 4, 8), 32000);
  EXPECT_DOUBLE_EQ(algBytes(Collective::kAllToAll, 1000, 4, 8), 32000);
}

// The row of formats.md: 1 MiB float all-reduce on 8 ranks in 35.61 us is 29.45 / 51.53 GB/s.
TEST(PerfCollectives, BandwidthOfTheReferenceRow) {
  double alg = 0, bus = 0;
  bandwidth(Collective::kAllReduce, 262144, 4, 8, 35.61e-6, &alg, &bus);
  EXPECT_NEAR(alg, 29.446, 0.001);
  EXPECT_NEAR(bus, 51.53, 0.005);
  bandwidth(Collective::kAllGather, 1000, 4, 4, 1e-3, &alg, &bus);
  EXPECT_DOUBLE_EQ(alg, 16000 / 1e9 / 1e-3);
  EXPECT_DOUBLE_EQ(bus, alg * 0.75);
  bandwidth(Collective::kBroadcast, 0, 4, 4, 0, &alg, &bus);  // size 0, time 0: no division by zero
  EXPECT_EQ(alg, 0);
  EXPECT_EQ(bus, 0);
}

TEST(PerfCollectives, CountsFollowNcclTests) {
  // 1 MiB of float on 4 ranks.
  const CollCounts ar = collCounts(Collective::kAllReduce, 1 << 20, 4, 4);
  EXPECT_EQ(ar.paramCount, 262144u);
  EXPECT_EQ(ar.sendCount, 262144u);
  EXPECT_EQ(ar.recvCount, 262144u);
  EXPECT_EQ(rowBytes(ar, 4), 1u << 20);

  const CollCounts ag = collCounts(Collective::kAllGather, 1 << 20, 4, 4);
  EXPECT_EQ(ag.paramCount, 65536u);  // per rank
  EXPECT_EQ(ag.sendCount, 65536u);
  EXPECT_EQ(ag.recvCount, 262144u);
  EXPECT_EQ(ag.sendInplaceOffset, 65536u);
  EXPECT_EQ(rowBytes(ag, 4), 1u << 20);

  const CollCounts rs = collCounts(Collective::kReduceScatter, 1 << 20, 4, 4);
  EXPECT_EQ(rs.paramCount, 65536u);
  EXPECT_EQ(rs.sendCount, 262144u);
  EXPECT_EQ(rs.recvCount, 65536u);
  EXPECT_EQ(rs.recvInplaceOffset, 65536u);
  EXPECT_EQ(rowBytes(rs, 4), 1u << 20);

  const CollCounts a2a = collCounts(Collective::kAllToAll, 1 << 20, 4, 4);
  EXPECT_EQ(a2a.paramCount, 65536u);
  EXPECT_EQ(a2a.sendCount, 262144u);
  EXPECT_EQ(a2a.recvCount, 262144u);

  for (Collective c : {Collective::kBroadcast, Collective::kReduce, Collective::kSendRecv}) {
    const CollCounts k = collCounts(c, 1000, 8, 3);
    EXPECT_EQ(k.paramCount, 125u);
    EXPECT_EQ(rowBytes(k, 8), 1000u);
  }
}

TEST(PerfCollectives, SizesRoundDownToWholeElementsPerRank) {
  // 8 bytes of float on 4 ranks: 2 elements, 0 per rank, so the row prints 0 bytes.
  const CollCounts ag = collCounts(Collective::kAllGather, 8, 4, 4);
  EXPECT_EQ(ag.paramCount, 0u);
  EXPECT_EQ(rowBytes(ag, 4), 0u);
  // 100 bytes of float on 3 ranks: 25 elements, 8 per rank, 96 bytes.
  const CollCounts rs = collCounts(Collective::kReduceScatter, 100, 4, 3);
  EXPECT_EQ(rs.paramCount, 8u);
  EXPECT_EQ(rowBytes(rs, 4), 96u);
  // 7 bytes of int32 all-reduce: 1 element.
  EXPECT_EQ(rowBytes(collCounts(Collective::kAllReduce, 7, 4, 2), 4), 4u);
  for (Collective c : kAll) EXPECT_EQ(rowBytes(collCounts(c, 0, 4, 5), 4), 0u);
}

TEST(PerfCollectives, Names) {
  for (Collective c : kAll) {
    Collective back = c == Collective::kAllReduce ? Collective::kReduce : Collective::kAllReduce;
    EXPECT_TRUE(collectiveFromName(collectiveName(c), &back));
    EXPECT_EQ(back, c);
    EXPECT_TRUE(collectiveFromName(collectiveProgram(c), &back));
    EXPECT_EQ(back, c);
  }
  EXPECT_STREQ(collectiveProgram(Collective::kReduceScatter), "reduce_scatter_perf");
  EXPECT_TRUE(collectiveReduces(Collective::kReduce));
  EXPECT_FALSE(collectiveReduces(Collective::kAllToAll));
  EXPECT_TRUE(collectiveRooted(Collective::kBroadcast));
  EXPECT_FALSE(collectiveRooted(Collective::kSendRecv));
}

}  // namespace
}  // namespace weft::perf
