// weftGather and weftScatter on host memory: every root, counts 0, 1, odd and large, in place
// and not, alone and inside a group with other calls; ranks as threads and as processes; and
// their argument checks.
#include <gtest/gtest.h>

#include <cstring>
#include <tuple>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

using Bytes = std::vector<char>;

// A value naming (rank, index), exact in the type: distinct for neighbouring ranks and indices.
double tagValue(int rank, size_t i) { return static_cast<double>((static_cast<size_t>(rank) * 7 + i * 3) % 61); }

Bytes tagged(weftDataType_t type, int rank, size_t count, size_t offset = 0) {
  Bytes b(count * typeSize(type) + 1, 0);
  for (size_t i = 0; i < count; ++i) storeValue(type, b.data(), i, tagValue(rank, offset + i));
  return b;
}

class GatherScatter : public ::testing::TestWithParam<std::tuple<Mode, int>> {
 protected:
  Mode mode() const { return std::get<0>(GetParam()); }
  int nranks() const { return std::get<1>(GetParam()); }
};

TEST_P(GatherScatter, GatherEveryRootAndCount) {
  runRanks(mode(), nranks(), [&](Rank& r) {
    for (weftDataType_t type : {weftInt8, weftFloat32, weftFloat64}) {
      const size_t es = typeSize(type);
      for (int root = 0; root < r.nranks; ++root) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1531}, size_t{70001}}) {
          for (bool inPlace : {false, true}) {
            Bytes send = tagged(type, r.rank, count);
            Bytes recv(count * es * r.nranks + 1, 0x5a);
            const void* in = send.data();
            if (inPlace && r.rank == root) {
              std::memcpy(recv.data() + root * count * es, send.data(), count * es);
              in = recv.data() + root * count * es;
            }
            Bytes before = recv;
            ASSERT_EQ(weftGather(in, recv.data(), count, type, root, r.comm, nullptr), weftSuccess)
                << weftGetLastError(r.comm);
            if (r.rank != root) {
              EXPECT_EQ(recv, before) << "a non-root's recvbuff was written";
              continue;
            }
            for (int p = 0; p < r.nranks; ++p) {
              Bytes want = tagged(type, p, count);
              EXPECT_EQ(countMismatches(type, recv.data() + p * count * es, want.data(), count), 0u)
                  << "root " << root << " block " << p << " type " << type << " count " << count
                  << (inPlace ? " in-place" : "");
            }
            EXPECT_EQ(recv.back(), before.back()) << "written past the end";
          }
        }
      }
    }
  });
}

TEST_P(GatherScatter, ScatterEveryRootAndCount) {
  runRanks(mode(), nranks(), [&](Rank& r) {
    for (weftDataType_t type : {weftUint8, weftInt32, weftBfloat16}) {
      const size_t es = typeSize(type);
      for (int root = 0; root < r.nranks; ++root) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1531}, size_t{70001}}) {
          for (bool inPlace : {false, true}) {
            // The root's sendbuff: block p holds tagged(root, p*count ...), so every block differs.
            Bytes send(count * es * r.nranks + 1, 0x33);
            if (r.rank == root) send = tagged(type, root, count * r.nranks);
            Bytes sendBefore = send;
            Bytes recv(count * es + 1, 0x5a);
            void* out = recv.data();
            if (inPlace && r.rank == root) out = send.data() + root * count * es;
            ASSERT_EQ(weftScatter(send.data(), out, count, type, root, r.comm, nullptr), weftSuccess)
                << weftGetLastError(r.comm);
            Bytes want = tagged(type, root, count, r.rank * count);
            EXPECT_EQ(countMismatches(type, out, want.data(), count), 0u)
                << "rank " << r.rank << " root " << root << " type " << type << " count " << count
                << (inPlace ? " in-place" : "");
            EXPECT_EQ(send, sendBefore) << "sendbuff was modified";
            if (out == recv.data()) {
              EXPECT_EQ(static_cast<unsigned char>(recv.back()), 0x5a) << "written past the end";
            }
          }
        }
      }
    }
  });
}

// Inside a group with an all-reduce and with each other: the group runs them all.
TEST_P(GatherScatter, InsideAGroup) {
  runRanks(mode(), nranks(), [&](Rank& r) {
    const size_t count = 513;
    const int root = r.nranks - 1;
    std::vector<int32_t> mine(count), all(count * r.nranks, -1), block(count, -1), spread(count * r.nranks);
    for (size_t i = 0; i < count; ++i) mine[i] = r.rank * 1000 + static_cast<int32_t>(i);
    for (size_t i = 0; i < spread.size(); ++i) spread[i] = 5000000 + static_cast<int32_t>(i);
    std::vector<int32_t> sum(count, 0);
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    ASSERT_EQ(weftGather(mine.data(), all.data(), count, weftInt32, root, r.comm, nullptr), weftSuccess);
    ASSERT_EQ(weftAllReduce(mine.data(), sum.data(), count, weftInt32, weftSum, r.comm, nullptr), weftSuccess);
    ASSERT_EQ(weftScatter(spread.data(), block.data(), count, weftInt32, 0, r.comm, nullptr), weftSuccess);
    // Nothing runs before the group ends.
    EXPECT_EQ(block[0], -1);
    ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(r.comm);
    for (size_t i = 0; i < count; ++i) {
      int32_t s = 0;
      for (int p = 0; p < r.nranks; ++p) s += p * 1000 + static_cast<int32_t>(i);
      ASSERT_EQ(sum[i], s) << i;
      ASSERT_EQ(block[i], 5000000 + static_cast<int32_t>(r.rank * count + i)) << i;
      if (r.rank == root) {
        for (int p = 0; p < r.nranks; ++p) ASSERT_EQ(all[p * count + i], p * 1000 + static_cast<int32_t>(i));
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Threads, GatherScatter,
                         ::testing::Combine(::testing::Values(Mode::kThreads), ::testing::Values(1, 2, 3, 5)));
INSTANTIATE_TEST_SUITE_P(Processes, GatherScatter,
                         ::testing::Combine(::testing::Values(Mode::kProcesses), ::testing::Values(2, 3)));

TEST(GatherScatterArguments, RefusedWithAMessageAndNothingMoves) {
  runRanks(Mode::kThreads, 2, [](Rank& r) {
    std::vector<float> a(8, 1.0f), b(16, 2.0f);
    auto bAfter = b;
    EXPECT_EQ(weftGather(a.data(), b.data(), 8, weftFloat32, 2, r.comm, nullptr), weftInvalidArgument);
    EXPECT_NE(
        std::string(weftGetLastError(r.comm)).find("weftGather: root 2 is not a rank of this communicator (0..1)"),
        std::string::npos)
        << weftGetLastError(r.comm);
    EXPECT_EQ(weftScatter(a.data(), b.data(), 8, weftFloat32, -1, r.comm, nullptr), weftInvalidArgument);
    EXPECT_NE(std::string(weftGetLastError(r.comm)).find("weftScatter: root -1"), std::string::npos);
    EXPECT_EQ(weftGather(a.data(), b.data(), 8, static_cast<weftDataType_t>(42), 0, r.comm, nullptr),
              weftInvalidArgument);
    EXPECT_NE(std::string(weftGetLastError(r.comm)).find("datatype 42"), std::string::npos);
    // Every rank's sendbuff for gather; the root's recvbuff (and only the root's).
    EXPECT_EQ(weftGather(nullptr, b.data(), 8, weftFloat32, 0, r.comm, nullptr), weftInvalidArgument);
    EXPECT_NE(std::string(weftGetLastError(r.comm)).find("weftGather: sendbuff is NULL but count is 8"),
              std::string::npos)
        << weftGetLastError(r.comm);
    // Scatter: the root's sendbuff; every rank's recvbuff.
    EXPECT_EQ(weftScatter(a.data(), nullptr, 8, weftFloat32, 0, r.comm, nullptr), weftInvalidArgument);
    EXPECT_NE(std::string(weftGetLastError(r.comm)).find("weftScatter: recvbuff is NULL but count is 8"),
              std::string::npos);
    if (r.rank == 0) {
      EXPECT_EQ(weftGather(a.data(), nullptr, 8, weftFloat32, 0, r.comm, nullptr), weftInvalidArgument);
      EXPECT_NE(std::string(weftGetLastError(r.comm)).find("rank 0: weftGather: recvbuff is NULL but count is 16"),
                std::string::npos)
          << weftGetLastError(r.comm);
      EXPECT_EQ(weftScatter(nullptr, b.data(), 8, weftFloat32, 0, r.comm, nullptr), weftInvalidArgument);
      EXPECT_NE(std::string(weftGetLastError(r.comm)).find("weftScatter: sendbuff is NULL but count is 16"),
                std::string::npos);
    }
    EXPECT_EQ(weftGather(a.data(), b.data(), 8, weftFloat32, 0, nullptr, nullptr), weftInvalidArgument);
    EXPECT_EQ(b, bAfter);
    // A stream without a GPU backend.
    EXPECT_EQ(weftGather(a.data(), b.data(), 8, weftFloat32, 0, r.comm, WEFT_STREAM_DEFAULT), weftInvalidArgument);
    EXPECT_NE(std::string(weftGetLastError(r.comm)).find("no GPU backend is loaded"), std::string::npos);
    // The communicator still works after refused calls: a gather to root 1.
    std::vector<float> mine(3, static_cast<float>(r.rank + 1)), got(6, 0.0f);
    ASSERT_EQ(weftGather(mine.data(), got.data(), 3, weftFloat32, 1, r.comm, nullptr), weftSuccess)
        << weftGetLastError(r.comm);
    if (r.rank == 1) {
      EXPECT_EQ(got, (std::vector<float>{1, 1, 1, 2, 2, 2}));
    }
  });
}

}  // namespace
}  // namespace weft_test
