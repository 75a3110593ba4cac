// NCCL 2.28's newer functions through the shim: pre-multiplied sums, gather, scatter, memory,
// registration, group simulation, shrink, scalable init.
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "nccl_harness.h"

using nccl_test::Mode;
using nccl_test::Rank;

namespace {

TEST(NcclNewer, PreMulSumScalesEveryInput) {
  nccl_test::runRanks(Mode::kThreads, 3, [](Rank& me) {
    float scalar = 0.5f;
    ncclRedOp_t op;
    NCCL_OK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, me.comm));
    EXPECT_GE(static_cast<int>(op), static_cast<int>(ncclNumOps));
    scalar = 100.0f;  // read at creation: later changes do not matter
    float in[4], out[4];
    for (int i = 0; i < 4; ++i) in[i] = static_cast<float>(2 * (me.rank + i));
    NCCL_OK(ncclAllReduce(in, out, 4, ncclFloat32, op, me.comm, nullptr));
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], static_cast<float>(3 + 3 * i)) << i;  // sum(r + i), r = 0..2
    NCCL_OK(ncclRedOpDestroy(op, me.comm));
  });
}

TEST(NcclNewer, GatherAndScatter) {
  nccl_test::runRanks(Mode::kThreads, 3, [](Rank& me) {
    const int n = me.nranks, root = 1;
    int32_t mine[2] = {me.rank * 10, me.rank * 10 + 1};
    std::vector<int32_t> all(2 * n, -1);
    NCCL_OK(ncclGather(mine, all.data(), 2, ncclInt32, root, me.comm, nullptr));
    for (int p = 0; p < n; ++p) {
      EXPECT_EQ(all[2 * p], me.rank == root ? p * 10 : -1);
      EXPECT_EQ(all[2 * p + 1], me.rank == root ? p * 10 + 1 : -1);
    }
    std::vector<int32_t> blocks(2 * n);
    for (int p = 0; p < n; ++p) blocks[2 * p] = blocks[2 * p + 1] = me.rank == root ? 100 + p : -5;
    int32_t got[2] = {-1, -1};
    NCCL_OK(ncclScatter(blocks.data(), got, 2, ncclInt32, root, me.comm, nullptr));
    EXPECT_EQ(got[0], 100 + me.rank);
    EXPECT_EQ(got[1], 100 + me.rank);
  });
}

TEST(NcclNewer, MemAllocAndRegistration) {
  void* p = nullptr;
  ASSERT_EQ(ncclMemAlloc(&p, 1 << 20), ncclSuccess) << ncclGetLastError(nullptr);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(ncclMemFree(p), ncclSuccess);
  nccl_test::runRanks(Mode::kThreads, 2, [](Rank& me) {
    std::vector<float> buf(256, 1.0f);
    void* handle = nullptr;
    NCCL_OK(ncclCommRegister(me.comm, buf.data(), buf.size() * sizeof(float), &handle));
    NCCL_OK(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, me.comm, nullptr));
    EXPECT_EQ(buf[255], 2.0f);
    NCCL_OK(ncclCommDeregister(me.comm, handle));
  });
}

TEST(NcclNewer, GroupSimulateEndEstimatesWithoutRunning) {
  nccl_test::runRanks(Mode::kThreads, 2, [](Rank& me) {
    std::vector<float> in(1024, 1.0f), out(1024, -1.0f);
    ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat, ncclSum, me.comm, nullptr));
    NCCL_OK(ncclGroupSimulateEnd(&sim));
    EXPECT_GE(sim.estimatedTime, 0.0f);
    EXPECT_EQ(out[0], -1.0f) << "a simulated group runs nothing";
  });
}

TEST(NcclNewer, ShrinkExcludesARank) {
  nccl_test::runRanks(Mode::kThreads, 3, [](Rank& me) {
    if (me.rank == 1) return;  // excluded: takes no part
    int exclude[1] = {1};
    ncclComm_t small = nullptr;
    NCCL_OK(ncclCommShrink(me.comm, exclude, 1, &small, nullptr, NCCL_SHRINK_DEFAULT));
    int count = 0, rank = -1;
    NCCL_OK(ncclCommCount(small, &count));
    NCCL_OK(ncclCommUserRank(small, &rank));
    EXPECT_EQ(count, 2);
    EXPECT_EQ(rank, me.rank == 0 ? 0 : 1);
    int v = me.rank, sum = -1;
    NCCL_OK(ncclAllReduce(&v, &sum, 1, ncclInt, ncclSum, small, nullptr));
    EXPECT_EQ(sum, 2);
    EXPECT_EQ(ncclCommDestroy(small), ncclSuccess);
  });
}

TEST(NcclNewer, InitRankScalableWithTwoIds) {
  ncclUniqueId ids[2];
  ASSERT_EQ(ncclGetUniqueId(&ids[0]), ncclSuccess);
  ASSERT_EQ(ncclGetUniqueId(&ids[1]), ncclSuccess);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 1;
      ncclComm_t comm = nullptr;
      NCCL_OK(ncclCommInitRankScalable(&comm, 4, r, 2, ids, &config));
      int v = 1 << r, sum = 0;
      NCCL_OK(ncclAllReduce(&v, &sum, 1, ncclInt, ncclSum, comm, nullptr));
      EXPECT_EQ(sum, 15);
      EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace
