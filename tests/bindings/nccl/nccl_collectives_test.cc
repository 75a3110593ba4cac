// NCCL programs on Weft's libnccl.so.2 with host buffers and the NULL stream (Weft's host-path
// extension): every collective and send/receive, ranks as threads and as processes, 1 to 4
// ranks, inputs whose exact results are known.
#include <cstdint>
#include <string>
#include <vector>

#include "nccl_harness.h"

using nccl_test::Mode;
using nccl_test::Rank;

namespace {

constexpr size_t kCount = 5;  // odd, so no size is a multiple of a chunk

// Every collective of nccl.h that Weft has, on this rank, checked exactly.
void allCollectives(Rank& me) {
  const int r = me.rank, n = me.nranks;
  const size_t c = kCount;
  ncclComm_t comm = me.comm;

  int got = -1;
  NCCL_OK(ncclCommCount(comm, &got));
  EXPECT_EQ(got, n);
  NCCL_OK(ncclCommUserRank(comm, &got));
  EXPECT_EQ(got, r);
  NCCL_OK(ncclCommCuDevice(comm, &got));
  EXPECT_EQ(got, -1) << "host ranks have no device";

  // All-reduce: sum (int32), avg (int32, integer division), prod (int32), max / min (float).
  std::vector<int32_t> si(c), ri(c, -1);
  for (size_t i = 0; i < c; ++i) si[i] = r * 10 + static_cast<int32_t>(i);
  NCCL_OK(ncclAllReduce(si.data(), ri.data(), c, ncclInt32, ncclSum, comm, nullptr));
  for (size_t i = 0; i < c; ++i) EXPECT_EQ(ri[i], 10 * n * (n - 1) / 2 + n * static_cast<int>(i)) << i;
  NCCL_OK(ncclAllReduce(si.data(), ri.data(), c, ncclInt32, ncclAvg, comm, nullptr));
  for (size_t i = 0; i < c; ++i) EXPECT_EQ(ri[i], (10 * n * (n - 1) / 2 + n * static_cast<int>(i)) / n) << i;
  std::vector<int32_t> pi(c, r + 2);
  NCCL_OK(ncclAllReduce(pi.data(), pi.data(), c, ncclInt32, ncclProd, comm, nullptr));  // in place
  int32_t fact = 1;
  for (int k = 0; k < n; ++k) fact *= k + 2;
  for (size_t i = 0; i < c; ++i) EXPECT_EQ(pi[i], fact);
  std::vector<float> sf(c), rf(c);
  for (size_t i = 0; i < c; ++i) sf[i] = static_cast<float>(r) + static_cast<float>(i);
  NCCL_OK(ncclAllReduce(sf.data(), rf.data(), c, ncclFloat32, ncclMax, comm, nullptr));
  for (size_t i = 0; i < c; ++i) EXPECT_EQ(rf[i], static_cast<float>(n - 1 + static_cast<int>(i)));
  NCCL_OK(ncclAllReduce(sf.data(), rf.data(), c, ncclFloat, ncclMin, comm, nullptr));
  for (size_t i = 0; i < c; ++i) EXPECT_EQ(rf[i], static_cast<float>(i));
  std::vector<int64_t> s64(c, (int64_t{1} << 40) + r), r64(c);
  NCCL_OK(ncclAllReduce(s64.data(), r64.data(), c, ncclInt64, ncclSum, comm, nullptr));
  for (size_t i = 0; i < c; ++i) EXPECT_EQ(r64[i], n * (int64_t{1} << 40) + n * (n - 1) / 2);

  // Broadcast from the last rank; the in-place ncclBcast from rank 0.
  std::vector<double> bs(c), br(c, -1.0);
  for (size_t i = 0; i < c; ++i) bs[i] = r == n - 1 ? 100.0 + static_cast<double>(i) : -7.0;
  NCCL_OK(ncclBroadcast(bs.data(), br.data(), c, ncclFloat64, n - 1, comm, nullptr));
  for (size_t i = 0; i < c; ++i) EXPECT_EQ(br[i], 100.0 + static_cast<double>(i));
  std::vector<uint8_t> bb(c);
  for (size_t i = 0; i < c; ++i) bb[i] = r == 0 ? static_cast<uint8_t>(7 * i) : 0xff;
  NCCL_OK(ncclBcast(bb.data(), c, ncclUint8, 0, comm, nullptr));
  for (size_t i = 0; i < c; ++i) EXPECT_EQ(bb[i], static_cast<uint8_t>(7 * i));

  // Reduce to the middle rank; other ranks' recvbuff is untouched (and may be NULL).
  const int root = n / 2;
  std::vector<int32_t> red(c, -1);
  NCCL_OK(ncclReduce(si.data(), r == root ? red.data() : nullptr, c, ncclInt32, ncclSum, root, comm, nullptr));
  for (size_t i = 0; i < c; ++i) {
    EXPECT_EQ(red[i], r == root ? 10 * n * (n - 1) / 2 + n * static_cast<int>(i) : -1) << i;
  }

  // All-gather: rank p's block lands at p*c.
  std::vector<int32_t> ag(c * n, -1);
  for (size_t i = 0; i < c; ++i) si[i] = r * 100 + static_cast<int32_t>(i);
  NCCL_OK(ncclAllGather(si.data(), ag.data(), c, ncclInt32, comm, nullptr));
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < c; ++i) EXPECT_EQ(ag[p * c + i], p * 100 + static_cast<int>(i));
  }

  // Reduce-scatter: rank r gets the sum of every rank's block r.
  std::vector<int32_t> rs(c * n), rsOut(c, -1);
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < c; ++i) rs[p * c + i] = r + p * 10 + static_cast<int32_t>(i);
  }
  NCCL_OK(ncclReduceScatter(rs.data(), rsOut.data(), c, ncclInt32, ncclSum, comm, nullptr));
  for (size_t i = 0; i < c; ++i) EXPECT_EQ(rsOut[i], n * (n - 1) / 2 + n * (r * 10 + static_cast<int>(i)));

  // All-to-all: block p goes to rank p.
  std::vector<int32_t> a2a(c * n), a2aOut(c * n, -1);
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < c; ++i) a2a[p * c + i] = r * 1000 + p * 10 + static_cast<int32_t>(i);
  }
  NCCL_OK(ncclAlltoAll(a2a.data(), a2aOut.data(), c, ncclInt32, comm, nullptr));
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < c; ++i) EXPECT_EQ(a2aOut[p * c + i], p * 1000 + r * 10 + static_cast<int>(i));
  }

  // A ring of sends and receives in one group.
  if (n > 1) {
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    std::vector<float> out(c), in(c, -1.0f);
    for (size_t i = 0; i < c; ++i) out[i] = static_cast<float>(r * 7) + static_cast<float>(i);
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclSend(out.data(), c, ncclFloat32, next, comm, nullptr));
    NCCL_OK(ncclRecv(in.data(), c, ncclFloat32, prev, comm, nullptr));
    NCCL_OK(ncclGroupEnd());
    for (size_t i = 0; i < c; ++i) EXPECT_EQ(in[i], static_cast<float>(prev * 7) + static_cast<float>(i));
  }

  // Count 0 is a no-op that succeeds.
  NCCL_OK(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, comm, nullptr));

  NCCL_OK(ncclCommFinalize(comm));
  ncclResult_t async = ncclInternalError;
  NCCL_OK(ncclCommGetAsyncError(comm, &async));
  EXPECT_EQ(async, ncclSuccess);
}

class NcclCollectives : public ::testing::TestWithParam<std::tuple<Mode, int>> {};

TEST_P(NcclCollectives, ExactResultsOnHostBuffers) {
  nccl_test::runRanks(std::get<0>(GetParam()), std::get<1>(GetParam()), allCollectives);
}

INSTANTIATE_TEST_SUITE_P(Ranks, NcclCollectives,
                         ::testing::Combine(::testing::Values(Mode::kThreads, Mode::kProcesses),
                                            ::testing::Values(1, 2, 3, 4)),
                         [](const auto& p) {
                           return std::string(std::get<0>(p.param) == Mode::kThreads ? "threads" : "processes") +
                                  std::to_string(std::get<1>(p.param));
                         });

// Five ranks: colors split four of them in two, keys reverse their order, rank 4 opts out with
// NCCL_SPLIT_NOCOLOR; the children get a config (translated like an init's).
TEST(NcclSplit, ColorsKeysAndNoColor) {
  nccl_test::runRanks(Mode::kThreads, 5, [](Rank& me) {
    const int color = me.rank == 4 ? NCCL_SPLIT_NOCOLOR : me.rank % 2;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.commName = "split-child";
    ncclComm_t sub = nullptr;
    NCCL_OK(ncclCommSplit(me.comm, color, -me.rank, &sub, &config));
    if (color == NCCL_SPLIT_NOCOLOR) {
      EXPECT_EQ(sub, nullptr);
      return;
    }
    ASSERT_NE(sub, nullptr);
    int subRank = -1, subCount = -1;
    NCCL_OK(ncclCommUserRank(sub, &subRank));
    NCCL_OK(ncclCommCount(sub, &subCount));
    EXPECT_EQ(subCount, 2);
    // Ranks {0, 2} and {1, 3}; keys -rank put the higher old rank first.
    EXPECT_EQ(subRank, me.rank >= 2 ? 0 : 1);
    int32_t v = me.rank, sum = -1;
    NCCL_OK(ncclAllReduce(&v, &sum, 1, ncclInt32, ncclSum, sub, nullptr));
    EXPECT_EQ(sum, color == 0 ? 0 + 2 : 1 + 3);
    EXPECT_EQ(ncclCommDestroy(sub), ncclSuccess);
  });
}

// One thread drives every rank: inits inside a group complete at ncclGroupEnd, and a group of
// collectives on several communicators runs them together.
TEST(NcclGroups, OneThreadDrivesAllRanksThroughGroups) {
  constexpr int n = 3;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comms[n] = {};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) ASSERT_EQ(ncclCommInitRank(&comms[r], n, id, r), ncclSuccess) << r;
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  int32_t in[n], out[n];
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    in[r] = 1 << r;
    ASSERT_EQ(ncclAllReduce(&in[r], &out[r], 1, ncclInt32, ncclSum, comms[r], nullptr), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < n; ++r) EXPECT_EQ(out[r], 7);
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

// Non-blocking inits in a group: ncclGroupEnd may answer ncclInProgress, and each communicator
// is polled with ncclCommGetAsyncError until ready, as NCCL's documentation shows.
TEST(NcclGroups, NonBlockingInitsInAGroup) {
  constexpr int n = 2;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comms[n] = {};
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) ASSERT_EQ(ncclCommInitRankConfig(&comms[r], n, id, r, &config), ncclSuccess) << r;
  ncclResult_t end = ncclGroupEnd();
  ASSERT_TRUE(end == ncclSuccess || end == ncclInProgress) << end << ": " << ncclGetLastError(nullptr);
  for (ncclComm_t c : comms) {
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) ASSERT_EQ(ncclCommGetAsyncError(c, &state), ncclSuccess);
    ASSERT_EQ(state, ncclSuccess) << ncclGetLastError(c);
  }
  uint64_t in[n] = {40, 2}, out[n] = {};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r)
    ASSERT_EQ(ncclAllReduce(&in[r], &out[r], 1, ncclUint64, ncclSum, comms[r], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(out[0], 42u);
  EXPECT_EQ(out[1], 42u);
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST(NcclGroups, CommInitAllWithNullDevlist) {
  constexpr int n = 3;
  ncclComm_t comms[n] = {};
  ASSERT_EQ(ncclCommInitAll(comms, n, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  double in[n], out[n];
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    int rank = -1;
    ASSERT_EQ(ncclCommUserRank(comms[r], &rank), ncclSuccess);
    EXPECT_EQ(rank, r);
    in[r] = 0.5 * r;
    ASSERT_EQ(ncclAllReduce(&in[r], &out[r], 1, ncclDouble, ncclMax, comms[r], nullptr), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < n; ++r) EXPECT_EQ(out[r], 1.0);
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

// One thread splits every rank inside a group: the children exist after ncclGroupEnd.
TEST(NcclGroups, SplitInsideAGroup) {
  constexpr int n = 4;
  ncclComm_t comms[n] = {}, subs[n] = {};
  ASSERT_EQ(ncclCommInitAll(comms, n, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) ASSERT_EQ(ncclCommSplit(comms[r], r / 2, r, &subs[r], nullptr), ncclSuccess) << r;
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  int in[n], out[n];
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    ASSERT_NE(subs[r], nullptr) << r;
    int count = 0;
    ASSERT_EQ(ncclCommCount(subs[r], &count), ncclSuccess);
    EXPECT_EQ(count, 2);
    in[r] = 10 * r;
    ASSERT_EQ(ncclAllReduce(&in[r], &out[r], 1, ncclInt, ncclSum, subs[r], nullptr), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < n; ++r) EXPECT_EQ(out[r], r < 2 ? 10 : 50) << r;
  for (ncclComm_t c : subs) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

// Abort from every rank after some work: succeeds and frees the communicator.
TEST(NcclLifetime, AbortAfterWork) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      ncclComm_t comm = nullptr;
      NCCL_OK(ncclCommInitRank(&comm, 2, id, r));
      float v = 1.0f;
      NCCL_OK(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, comm, nullptr));
      EXPECT_EQ(v, 2.0f);
      EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace
