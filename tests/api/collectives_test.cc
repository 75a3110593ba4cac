// Every collective of the public API on host memory, element by element against an
// independently computed reference: every datatype and op, counts 0, 1, odd and large,
// in-place and out-of-place, ranks as threads and as processes.
#include <gtest/gtest.h>

#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

const weftDataType_t kAllTypes[] = {weftInt8,   weftUint8,   weftInt32,    weftUint32,
                                    weftInt64,  weftUint64,  weftFloat16,  weftFloat32,
                                    weftFloat64, weftBfloat16, weftFloat8e4m3, weftFloat8e5m2};
const weftRedOp_t kAllOps[] = {weftSum, weftProd, weftMax, weftMin, weftAvg};

using Bytes = std::vector<char>;

Bytes inputs(weftDataType_t type, weftRedOp_t op, int rank, size_t count, size_t offset = 0) {
  Bytes b(count * typeSize(type) + 1);
  for (size_t i = 0; i < count; ++i) storeValue(type, b.data(), i, inputValue(op, rank, offset + i));
  return b;
}

// A value identifying (rank, index) that is exact in every type: 0..7.
double tagValue(int rank, size_t i) { return static_cast<double>((static_cast<size_t>(rank) * 3 + i) % 8); }

Bytes tagged(weftDataType_t type, int rank, size_t count) {
  Bytes b(count * typeSize(type) + 1);
  for (size_t i = 0; i < count; ++i) storeValue(type, b.data(), i, tagValue(rank, i));
  return b;
}

// (how ranks run, how many, whether they talk over the socket transport instead of shared
// memory: WEFT_SHM_DISABLE=1 sends all traffic through TCP over the loopback interface).
class Collectives : public ::testing::TestWithParam<std::tuple<Mode, int, bool>> {
 protected:
  void SetUp() override {
    if (!overNetwork()) return;
    setenv("WEFT_SHM_DISABLE", "1", 1);
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  }
  void TearDown() override {
    if (!overNetwork()) return;
    unsetenv("WEFT_SHM_DISABLE");
    unsetenv("WEFT_SOCKET_IFNAME");
  }
  Mode mode() const { return std::get<0>(GetParam()); }
  int nranks() const { return std::get<1>(GetParam()); }
  bool overNetwork() const { return std::get<2>(GetParam()); }
  std::vector<size_t> counts() const {
    // Large counts cross many FIFO slots; keep them for a few cases so the suite stays quick.
    return {0, 1, 7, 1531};
  }
};

TEST_P(Collectives, AllReduceEveryTypeAndOp) {
  runRanks(mode(), nranks(), [&](Rank& r) {
    for (weftDataType_t type : kAllTypes) {
      for (weftRedOp_t op : kAllOps) {
        for (size_t count : counts()) {
          for (bool inPlace : {false, true}) {
            Bytes send = inputs(type, op, r.rank, count);
            Bytes recv(send.size(), 0x5a);
            void* out = inPlace ? send.data() : recv.data();
            ASSERT_EQ(weftAllReduce(send.data(), out, count, type, op, r.comm, nullptr), weftSuccess)
                << weftGetLastError(r.comm);
            Bytes expected(send.size());
            for (size_t i = 0; i < count; ++i) {
              storeExpected(type, op, r.nranks, i, expected.data() + i * typeSize(type));
            }
            EXPECT_EQ(countMismatches(type, out, expected.data(), count), 0u)
                << "rank " << r.rank << " type " << type << " op " << op << " count " << count
                << (inPlace ? " in-place" : "");
          }
        }
      }
    }
  });
}

// The communicator remembers the reduce functions of its latest (type, op): a call that changes
// only the type (same element size), or only the op, must not run the remembered functions.
TEST_P(Collectives, AllReduceChangingOnlyTypeOrOp) {
  const std::pair<weftDataType_t, weftRedOp_t> calls[] = {
      {weftFloat32, weftSum}, {weftInt32, weftSum},   {weftUint32, weftSum}, {weftFloat32, weftSum},
      {weftFloat32, weftMax}, {weftInt32, weftMax},   {weftInt32, weftProd}, {weftFloat32, weftProd},
      {weftFloat32, weftSum}, {weftFloat64, weftSum}, {weftInt64, weftSum},  {weftInt64, weftMin}};
  runRanks(mode(), nranks(), [&](Rank& r) {
    for (int pass = 0; pass < 2; ++pass) {
      for (const auto& [type, op] : calls) {
        const size_t count = 7;
        Bytes send = inputs(type, op, r.rank, count);
        Bytes recv(send.size(), 0x5a);
        ASSERT_EQ(weftAllReduce(send.data(), recv.data(), count, type, op, r.comm, nullptr), weftSuccess)
            << weftGetLastError(r.comm);
        Bytes expected(send.size());
        for (size_t i = 0; i < count; ++i) storeExpected(type, op, r.nranks, i, expected.data() + i * typeSize(type));
        EXPECT_EQ(countMismatches(type, recv.data(), expected.data(), count), 0u)
            << "rank " << r.rank << " type " << type << " op " << op << " pass " << pass;
      }
    }
  });
}

TEST_P(Collectives, AllReduceLargeBothAlgorithms) {
  for (const char* algo : {"ring", "tree", "doubling"}) {
    setenv("WEFT_ALGO", algo, 1);
    runRanks(mode(), nranks(), [&](Rank& r) {
      for (weftDataType_t type : {weftFloat32, weftInt64, weftBfloat16}) {
        size_t count = 300007;  // many slots, uneven blocks
        Bytes send = inputs(type, weftSum, r.rank, count);
        Bytes recv(send.size());
        ASSERT_EQ(weftAllReduce(send.data(), recv.data(), count, type, weftSum, r.comm, nullptr), weftSuccess)
            << weftGetLastError(r.comm);
        Bytes expected(send.size());
        for (size_t i = 0; i < count; ++i) storeExpected(type, weftSum, r.nranks, i, expected.data() + i * typeSize(type));
        EXPECT_EQ(countMismatches(type, recv.data(), expected.data(), count), 0u) << algo << " type " << type;
      }
    });
    unsetenv("WEFT_ALGO");
  }
}

TEST_P(Collectives, AllGather) {
  runRanks(mode(), nranks(), [&](Rank& r) {
    for (weftDataType_t type : {weftInt8, weftFloat16, weftFloat32, weftFloat64, weftFloat8e5m2}) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1531}, size_t{100003}}) {
        for (bool inPlace : {false, true}) {
          size_t es = typeSize(type);
          Bytes send = tagged(type, r.rank, count);
          Bytes recv(count * es * r.nranks + 1, 0x5a);
          const void* in = send.data();
          if (inPlace) {
            std::memcpy(recv.data() + r.rank * count * es, send.data(), count * es);
            in = recv.data() + r.rank * count * es;
          }
          ASSERT_EQ(weftAllGather(in, recv.data(), count, type, r.comm, nullptr), weftSuccess)
              << weftGetLastError(r.comm);
          for (int p = 0; p < r.nranks; ++p) {
            Bytes expected = tagged(type, p, count);
            EXPECT_EQ(countMismatches(type, recv.data() + p * count * es, expected.data(), count), 0u)
                << "block " << p << " type " << type << " count " << count << (inPlace ? " in-place" : "");
          }
        }
      }
    }
  });
}

TEST_P(Collectives, ReduceScatter) {
  runRanks(mode(), nranks(), [&](Rank& r) {
    for (weftDataType_t type : kAllTypes) {
      for (weftRedOp_t op : kAllOps) {
        for (size_t count : counts()) {
          for (bool inPlace : {false, true}) {
            size_t es = typeSize(type);
            Bytes send = inputs(type, op, r.rank, count * r.nranks);
            Bytes recv(count * es + 1, 0x5a);
            void* out = inPlace ? send.data() + r.rank * count * es : recv.data();
            ASSERT_EQ(weftReduceScatter(send.data(), out, count, type, op, r.comm, nullptr), weftSuccess)
                << weftGetLastError(r.comm);
            Bytes expected(count * es + 1);
            for (size_t i = 0; i < count; ++i) {
              storeExpected(type, op, r.nranks, r.rank * count + i, expected.data() + i * es);
            }
            EXPECT_EQ(countMismatches(type, out, expected.data(), count), 0u)
                << "type " << type << " op " << op << " count " << count << (inPlace ? " in-place" : "");
          }
        }
      }
    }
  });
}

TEST_P(Collectives, BroadcastEveryRoot) {
  runRanks(mode(), nranks(), [&](Rank& r) {
    for (int root = 0; root < r.nranks; ++root) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{1531}, size_t{200001}}) {
        for (bool inPlace : {false, true}) {
          weftDataType_t type = weftInt32;
          Bytes data = tagged(type, root, count);
          Bytes buf(data.size(), 0x5a);
          if (r.rank == root) buf = data;
          Bytes out(data.size(), 0x5a);
          void* recv = inPlace ? buf.data() : out.data();
          ASSERT_EQ(weftBroadcast(buf.data(), recv, count, type, root, r.comm, nullptr), weftSuccess)
              << weftGetLastError(r.comm);
          EXPECT_EQ(countMismatches(type, recv, data.data(), count), 0u) << "root " << root << " count " << count;
        }
      }
    }
  });
}

TEST_P(Collectives, ReduceEveryRoot) {
  runRanks(mode(), nranks(), [&](Rank& r) {
    for (int root = 0; root < r.nranks; ++root) {
      for (weftDataType_t type : {weftInt32, weftFloat16, weftFloat64, weftFloat8e4m3}) {
        for (weftRedOp_t op : kAllOps) {
          for (size_t count : {size_t{0}, size_t{1}, size_t{1531}, size_t{70001}}) {
            size_t es = typeSize(type);
            Bytes send = inputs(type, op, r.rank, count);
            Bytes recv(count * es + 1, 0x5a);
            Bytes untouched = recv;
            ASSERT_EQ(weftReduce(send.data(), recv.data(), count, type, op, root, r.comm, nullptr), weftSuccess)
                << weftGetLastError(r.comm);
            if (r.rank == root) {
              Bytes expected(count * es + 1);
              for (size_t i = 0; i < count; ++i) storeExpected(type, op, r.nranks, i, expected.data() + i * es);
              EXPECT_EQ(countMismatches(type, recv.data(), expected.data(), count), 0u)
                  << "root " << root << " type " << type << " op " << op << " count " << count;
            } else {
              EXPECT_EQ(recv, untouched) << "a non-root's recvbuff was written";
            }
          }
        }
      }
    }
  });
}

TEST_P(Collectives, AllToAll) {
  runRanks(mode(), nranks(), [&](Rank& r) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{40001}}) {
      weftDataType_t type = weftUint32;
      size_t n = static_cast<size_t>(r.nranks);
      std::vector<uint32_t> send(count * n), recv(count * n + 1, 0xdeadbeef);
      // Element i of the block for peer p encodes (sender, receiver, i).
      for (size_t p = 0; p < n; ++p) {
        for (size_t i = 0; i < count; ++i) send[p * count + i] = static_cast<uint32_t>((r.rank * 1000 + p) * 100000 + i);
      }
      ASSERT_EQ(weftAllToAll(send.data(), recv.data(), count, type, r.comm, nullptr), weftSuccess)
          << weftGetLastError(r.comm);
      size_t wrong = 0;
      for (size_t p = 0; p < n; ++p) {
        for (size_t i = 0; i < count; ++i) wrong += recv[p * count + i] != (p * 1000 + r.rank) * 100000 + i;
      }
      EXPECT_EQ(wrong, 0u) << "count " << count;
      EXPECT_EQ(recv[count * n], 0xdeadbeefu) << "wrote past the end";
    }
  });
}

TEST_P(Collectives, SendRecvRingInGroup) {
  runRanks(mode(), nranks(), [&](Rank& r) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{100003}}) {
      int next = (r.rank + 1) % r.nranks, prev = (r.rank + r.nranks - 1) % r.nranks;
      std::vector<int64_t> send(count), recv(count, -1), self(count, -1);
      for (size_t i = 0; i < count; ++i) send[i] = r.rank * 1000003LL + static_cast<int64_t>(i);
      ASSERT_EQ(weftGroupStart(), weftSuccess);
      ASSERT_EQ(weftSend(send.data(), count, weftInt64, next, r.comm, nullptr), weftSuccess);
      ASSERT_EQ(weftRecv(recv.data(), count, weftInt64, prev, r.comm, nullptr), weftSuccess);
      ASSERT_EQ(weftSend(send.data(), count, weftInt64, r.rank, r.comm, nullptr), weftSuccess);
      ASSERT_EQ(weftRecv(self.data(), count, weftInt64, r.rank, r.comm, nullptr), weftSuccess);
      ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(r.comm);
      size_t wrong = 0;
      for (size_t i = 0; i < count; ++i) {
        wrong += recv[i] != prev * 1000003LL + static_cast<int64_t>(i);
        wrong += self[i] != send[i];
      }
      EXPECT_EQ(wrong, 0u) << "count " << count;
    }
  });
}

TEST_P(Collectives, BarrierAndSplit) {
  runRanks(mode(), nranks(), [&](Rank& r) {
    for (int i = 0; i < 20; ++i) ASSERT_EQ(weftBarrier(r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
    // Two colours, keys reversing the order within each.
    weftComm_t sub = nullptr;
    int color = r.rank % 2;
    ASSERT_EQ(weftCommSplit(r.comm, color, -r.rank, &sub, nullptr), weftSuccess) << weftGetLastError(r.comm);
    ASSERT_NE(sub, nullptr);
    int subRank = -1, subCount = -1;
    ASSERT_EQ(weftCommUserRank(sub, &subRank), weftSuccess);
    ASSERT_EQ(weftCommCount(sub, &subCount), weftSuccess);
    std::vector<int> members;
    for (int p = 0; p < r.nranks; ++p) {
      if (p % 2 == color) members.push_back(p);
    }
    EXPECT_EQ(subCount, static_cast<int>(members.size()));
    // Keys are -rank: the highest old rank becomes rank 0.
    int expectedRank = 0;
    for (int p : members) expectedRank += p > r.rank;
    EXPECT_EQ(subRank, expectedRank);
    int64_t mine = r.rank, sum = -1;
    ASSERT_EQ(weftAllReduce(&mine, &sum, 1, weftInt64, weftSum, sub, nullptr), weftSuccess) << weftGetLastError(sub);
    int64_t expectedSum = 0;
    for (int p : members) expectedSum += p;
    EXPECT_EQ(sum, expectedSum);
    EXPECT_EQ(weftCommDestroy(sub), weftSuccess);
    // A rank that opts out gets no communicator.
    weftComm_t none = reinterpret_cast<weftComm_t>(0x1);
    int c2 = r.rank == 0 ? WEFT_SPLIT_NOCOLOR : 7;
    ASSERT_EQ(weftCommSplit(r.comm, c2, 0, &none, nullptr), weftSuccess) << weftGetLastError(r.comm);
    if (r.rank == 0) {
      EXPECT_EQ(none, nullptr);
    } else {
      ASSERT_NE(none, nullptr);
      EXPECT_EQ(weftBarrier(none, nullptr), weftSuccess);
      weftCommDestroy(none);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Threads, Collectives,
                         ::testing::Combine(::testing::Values(Mode::kThreads), ::testing::Values(1, 2, 3, 5, 8),
                                            ::testing::Values(false)),
                         [](const auto& p) { return "n" + std::to_string(std::get<1>(p.param)); });
INSTANTIATE_TEST_SUITE_P(Processes, Collectives,
                         ::testing::Combine(::testing::Values(Mode::kProcesses), ::testing::Values(2, 4),
                                            ::testing::Values(false)),
                         [](const auto& p) { return "n" + std::to_string(std::get<1>(p.param)); });
INSTANTIATE_TEST_SUITE_P(SocketThreads, Collectives,
                         ::testing::Combine(::testing::Values(Mode::kThreads), ::testing::Values(2, 3, 5),
                                            ::testing::Values(true)),
                         [](const auto& p) { return "n" + std::to_string(std::get<1>(p.param)); });
INSTANTIATE_TEST_SUITE_P(SocketProcesses, Collectives,
                         ::testing::Combine(::testing::Values(Mode::kProcesses), ::testing::Values(4),
                                            ::testing::Values(true)),
                         [](const auto& p) { return "n" + std::to_string(std::get<1>(p.param)); });

}  // namespace
}  // namespace weft_test

namespace weft_test {
namespace {

// Single-copy (a receiver reads the sender's buffer directly: memcpy between threads,
// process_vm_readv between processes with WEFT_CMA=1) and the plain two-copy path give the
// same bytes for the collectives that use it.
class SingleCopy : public ::testing::TestWithParam<std::tuple<Mode, const char*, const char*>> {};

TEST_P(SingleCopy, AllToAllBroadcastSendRecv) {
  Mode mode = std::get<0>(GetParam());
  setenv("WEFT_SINGLE_COPY", std::get<1>(GetParam()), 1);
  setenv("WEFT_CMA", std::get<2>(GetParam()), 1);
  runRanks(mode, 3, [&](Rank& r) {
    size_t count = 150001;  // many slots, above the single-copy threshold
    size_t n = static_cast<size_t>(r.nranks);
    std::vector<uint32_t> send(count * n), recv(count * n, 0);
    for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<uint32_t>(r.rank * 7919u + i);
    ASSERT_EQ(weftAllToAll(send.data(), recv.data(), count, weftUint32, r.comm, nullptr), weftSuccess)
        << weftGetLastError(r.comm);
    size_t wrong = 0;
    for (size_t p = 0; p < n; ++p) {
      for (size_t i = 0; i < count; ++i) wrong += recv[p * count + i] != p * 7919u + r.rank * count + i;
    }
    EXPECT_EQ(wrong, 0u) << "alltoall";
    std::vector<uint32_t> bcast(count, 0);
    ASSERT_EQ(weftBroadcast(send.data(), bcast.data(), count, weftUint32, 1, r.comm, nullptr), weftSuccess);
    wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += bcast[i] != 7919u + i;
    EXPECT_EQ(wrong, 0u) << "broadcast";
    int next = (r.rank + 1) % r.nranks, prev = (r.rank + r.nranks - 1) % r.nranks;
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    ASSERT_EQ(weftSend(send.data(), count, weftUint32, next, r.comm, nullptr), weftSuccess);
    ASSERT_EQ(weftRecv(recv.data(), count, weftUint32, prev, r.comm, nullptr), weftSuccess);
    ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(r.comm);
    wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += recv[i] != prev * 7919u + i;
    EXPECT_EQ(wrong, 0u) << "send/recv";
  });
  unsetenv("WEFT_SINGLE_COPY");
  unsetenv("WEFT_CMA");
}

INSTANTIATE_TEST_SUITE_P(Modes, SingleCopy,
                         ::testing::Values(std::make_tuple(Mode::kThreads, "1", "0"),
                                           std::make_tuple(Mode::kThreads, "0", "0"),
                                           std::make_tuple(Mode::kProcesses, "1", "1"),
                                           std::make_tuple(Mode::kProcesses, "1", "0")),
                         [](const auto& p) {
                           return std::string(modeName(std::get<0>(p.param))) + "_single" + std::get<1>(p.param) +
                                  "_cma" + std::get<2>(p.param);
                         });

}  // namespace
}  // namespace weft_test
