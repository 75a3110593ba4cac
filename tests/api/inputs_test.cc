// Hostile inputs (issue 13, item 4): partially overlapping send and receive buffers are refused
// (only the in-place layouts weft.h documents are allowed), and destroying a communicator inside
// an open group neither crashes weftGroupEnd nor runs calls on a freed communicator.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Overlap, PartialOverlapIsRefusedAndTouchesNothing) {
  runRanks(Mode::kThreads, 2, [](Rank& r) {
    std::vector<float> buf(64);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i);
    const std::vector<float> before = buf;
    // recvbuff starts 3 elements into sendbuff: the classic "about 6% wrong" case.
    EXPECT_EQ(weftAllReduce(buf.data(), buf.data() + 3, 16, weftFloat32, weftSum, r.comm, nullptr),
              weftInvalidArgument);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "partially overlap")) << weftGetLastError(r.comm);
    EXPECT_TRUE(contains(weftGetLastError(r.comm), "rank " + std::to_string(r.rank) + ": weftAllReduce: "))
        << weftGetLastError(r.comm);
    EXPECT_EQ(weftAllReduce(buf.data() + 5, buf.data(), 16, weftFloat32, weftSum, r.comm, nullptr),
              weftInvalidArgument);
    EXPECT_EQ(weftBroadcast(buf.data(), buf.data() + 1, 16, weftFloat32, r.rank, r.comm, nullptr),
              weftInvalidArgument);
    EXPECT_EQ(weftReduce(buf.data(), buf.data() + 1, 16, weftFloat32, weftSum, r.rank, r.comm, nullptr),
              weftInvalidArgument);
    // All-gather: sendbuff inside recvbuff but not at block `rank`.
    const int wrongBlock = 1 - r.rank;
    EXPECT_EQ(weftAllGather(buf.data() + 8 * wrongBlock, buf.data(), 8, weftFloat32, r.comm, nullptr),
              weftInvalidArgument);
    EXPECT_EQ(weftAllGather(buf.data() + 3, buf.data(), 8, weftFloat32, r.comm, nullptr), weftInvalidArgument);
    // Reduce-scatter: recvbuff inside sendbuff but not at block `rank`.
    EXPECT_EQ(weftReduceScatter(buf.data(), buf.data() + 8 * wrongBlock, 8, weftFloat32, weftSum, r.comm, nullptr),
              weftInvalidArgument);
    EXPECT_EQ(weftAllToAll(buf.data(), buf.data() + 4, 8, weftFloat32, r.comm, nullptr), weftInvalidArgument);
    // Gather / scatter on the root: own block not at block `root`.
    if (r.rank == 0) {
      EXPECT_EQ(weftGather(buf.data() + 8, buf.data(), 8, weftFloat32, 0, r.comm, nullptr), weftInvalidArgument);
      EXPECT_EQ(weftScatter(buf.data(), buf.data() + 2, 8, weftFloat32, 0, r.comm, nullptr), weftInvalidArgument);
    }
    EXPECT_EQ(buf, before) << "a refused call wrote a buffer";

    // The documented layouts still work, and give the right answer.
    std::vector<float> a(16, static_cast<float>(r.rank + 1));
    ASSERT_EQ(weftAllReduce(a.data(), a.data(), 16, weftFloat32, weftSum, r.comm, nullptr), weftSuccess)
        << weftGetLastError(r.comm);
    EXPECT_EQ(a[15], 3.0f);
    std::vector<float> g(16, -1.0f);
    for (int i = 0; i < 8; ++i) g[8 * r.rank + i] = static_cast<float>(r.rank);
    ASSERT_EQ(weftAllGather(g.data() + 8 * r.rank, g.data(), 8, weftFloat32, r.comm, nullptr), weftSuccess)
        << weftGetLastError(r.comm);
    EXPECT_EQ(g[0], 0.0f);
    EXPECT_EQ(g[15], 1.0f);
    std::vector<float> rs(16, 1.0f);
    ASSERT_EQ(weftReduceScatter(rs.data(), rs.data() + 8 * r.rank, 8, weftFloat32, weftSum, r.comm, nullptr),
              weftSuccess)
        << weftGetLastError(r.comm);
    EXPECT_EQ(rs[8 * r.rank + 7], 2.0f);
    // Disjoint neighbours (recvbuff starts where sendbuff ends) are not an overlap.
    std::vector<float> n(32, 1.0f);
    ASSERT_EQ(weftAllReduce(n.data(), n.data() + 16, 16, weftFloat32, weftSum, r.comm, nullptr), weftSuccess)
        << weftGetLastError(r.comm);
    EXPECT_EQ(n[16], 2.0f);
    EXPECT_EQ(n[15], 1.0f);
  });
}

TEST(Groups, DestroyInsideAnOpenGroupIsRefusedWhileItHasCalls) {
  runRanks(Mode::kThreads, 1, [](Rank& r) {
    weftComm_t extra = nullptr;
    weftUniqueId id;
    ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
    ASSERT_EQ(weftCommInitRank(&extra, 1, id, 0), weftSuccess);
    std::vector<float> a(8, 1.0f), b(8, 0.0f);
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    ASSERT_EQ(weftAllReduce(a.data(), b.data(), 8, weftFloat32, weftSum, extra, nullptr), weftSuccess);
    EXPECT_EQ(weftCommDestroy(extra), weftInvalidUsage);
    EXPECT_TRUE(contains(weftGetLastError(extra), "weftGroupEnd first")) << weftGetLastError(extra);
    // The group still runs (the communicator is alive), then destroy works.
    ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(extra);
    EXPECT_EQ(b[7], 1.0f);
    EXPECT_EQ(weftCommDestroy(extra), weftSuccess);
    // With nothing recorded on it, destroy inside a group is fine.
    ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
    ASSERT_EQ(weftCommInitRank(&extra, 1, id, 0), weftSuccess);
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    EXPECT_EQ(weftCommDestroy(extra), weftSuccess);
    ASSERT_EQ(weftGroupEnd(), weftSuccess);
  });
}

TEST(Groups, AbortInsideAnOpenGroupDropsItsCalls) {
  runRanks(Mode::kThreads, 1, [](Rank& r) {
    weftComm_t extra = nullptr;
    weftUniqueId id;
    ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
    ASSERT_EQ(weftCommInitRank(&extra, 1, id, 0), weftSuccess);
    std::vector<float> a(8, 1.0f), b(8, 0.0f), c(8, 0.0f);
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    ASSERT_EQ(weftAllReduce(a.data(), b.data(), 8, weftFloat32, weftSum, extra, nullptr), weftSuccess);
    ASSERT_EQ(weftAllReduce(a.data(), c.data(), 8, weftFloat32, weftSum, r.comm, nullptr), weftSuccess);
    EXPECT_EQ(weftCommAbort(extra), weftSuccess);
    // weftGroupEnd runs the calls on the live communicator only (no crash, no use after free).
    ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(r.comm);
    EXPECT_EQ(b[0], 0.0f);
    EXPECT_EQ(c[0], 1.0f);
  });
}

}  // namespace
}  // namespace weft_test

namespace weft_test {
namespace {

struct Env {
  Env(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~Env() { unsetenv(name_); }
  const char* name_;
};

TEST(Parameters, TimeoutOfZeroOrLessIsRejectedWithItsOwnMessage) {
  for (const char* value : {"0", "-5"}) {
    Env t("WEFT_TIMEOUT_S", value);
    weftUniqueId id;
    EXPECT_EQ(weftGetUniqueId(&id), weftInvalidArgument) << value;
    const std::string err = weftGetLastError(nullptr);
    EXPECT_TRUE(contains(err, std::string("WEFT_TIMEOUT_S=") + value + " is not a time-out")) << err;
    weftComm_t comm = nullptr;
    EXPECT_EQ(weftCommInitRank(&comm, 1, id, 0), weftInvalidArgument);
    EXPECT_TRUE(contains(weftGetLastError(nullptr), "WEFT_TIMEOUT_S")) << weftGetLastError(nullptr);
    EXPECT_EQ(comm, nullptr);
  }
}

TEST(Parameters, RankCountsAreBounded) {
  weftUniqueId id{};
  weftComm_t comm = nullptr;
  EXPECT_EQ(weftCommInitRank(&comm, (1 << 20) + 1, id, 0), weftInvalidArgument);
  EXPECT_TRUE(contains(weftGetLastError(nullptr), "at most")) << weftGetLastError(nullptr);
  std::vector<weftComm_t> comms(1025, nullptr);
  EXPECT_EQ(weftCommInitAll(comms.data(), 1025, nullptr), weftInvalidArgument);
  EXPECT_TRUE(contains(weftGetLastError(nullptr), "at most 1024")) << weftGetLastError(nullptr);
}

// Issue 13, item 5: ranks forked after weftGetUniqueId (the root listener thread running in the
// parent) under every parameter-warning path finish, rather than deadlock in the child.
TEST(Parameters, RanksForkedAfterGetUniqueIdUnderEveryWarningPath) {
  const std::pair<const char*, const char*> paths[] = {
      {"WEFT_TIMEOUT_S", "ten"},      // not a valid integer (read by the root listener too)
      {"WEFT_NSLOTS", "0"},           // out of range
      {"WEFT_MIN_NCHANNELS", "1000"}, // out of range
      {"WEFT_TIMEOUTT", "5"},         // unknown variable
      {"WEFT_DEBUG", "garbage"},      // unknown log level
  };
  for (const auto& [name, value] : paths) {
    Env e(name, value);
    for (int round = 0; round < 3; ++round) {
      runRanks(
          Mode::kProcesses, 3,
          [](Rank& r) {
            std::vector<float> a(64, 1.0f);
            ASSERT_EQ(weftAllReduce(a.data(), a.data(), 64, weftFloat32, weftSum, r.comm, nullptr), weftSuccess)
                << weftGetLastError(r.comm);
            EXPECT_EQ(a[63], 3.0f);
          },
          60);
    }
  }
}

}  // namespace
}  // namespace weft_test
