// weftGroupSimulateEnd: the group's calls are dropped (nothing moves, the ranks stay in step)
// and the estimate grows with the size and the number of calls; simInfo and nesting are checked.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

// The estimate of one all-reduce of `count` floats (and, when `twice`, a second one and a
// broadcast), with the buffers checked untouched afterwards.
float simulate(Rank& r, size_t count, bool twice) {
  std::vector<float> send(count, 1.0f), recv(count, -5.0f);
  weftSimInfo_t info = WEFT_SIM_INFO_INITIALIZER;
  EXPECT_EQ(weftGroupStart(), weftSuccess);
  EXPECT_EQ(weftAllReduce(send.data(), recv.data(), count, weftFloat32, weftSum, r.comm, nullptr), weftSuccess);
  if (twice) {
    EXPECT_EQ(weftAllReduce(send.data(), recv.data(), count, weftFloat32, weftSum, r.comm, nullptr), weftSuccess);
    EXPECT_EQ(weftBroadcast(send.data(), recv.data(), count, weftFloat32, 0, r.comm, nullptr), weftSuccess);
  }
  EXPECT_EQ(weftGroupSimulateEnd(&info), weftSuccess) << weftGetLastError(nullptr);
  for (float v : recv) {
    if (v != -5.0f) {
      ADD_FAILURE() << "a simulated call wrote recvbuff";
      break;
    }
  }
  return info.estimatedTime;
}

class GroupSimulate : public ::testing::TestWithParam<std::tuple<Mode, int>> {};

TEST_P(GroupSimulate, EstimateGrowsWithSizeAndNothingRuns) {
  // With one algorithm for every size the estimate must grow with the size; with the tuner's
  // choice (small sizes use other algorithms, priced on their own schedules) from 1 MiB up.
  for (const char* algo : {"ring", ""}) {
    if (*algo) setenv("WEFT_ALGO", algo, 1);
    runRanks(std::get<0>(GetParam()), std::get<1>(GetParam()), [&](Rank& r) {
      float last = 0;
      for (size_t count : {size_t{1}, size_t{1} << 12, size_t{1} << 18, size_t{1} << 22}) {
        float t = simulate(r, count, false);
        EXPECT_TRUE(std::isfinite(t));
        EXPECT_GT(t, 0.0f);
        if (r.nranks > 1 && (*algo || count >= (size_t{1} << 18))) {
          EXPECT_GT(t, last) << algo << " count " << count;
        }
        last = t;
        if (r.nranks > 1) {
          EXPECT_GT(simulate(r, count, true), t) << "three calls cost more than one";
        }
      }
    });
    unsetenv("WEFT_ALGO");
  }
  runRanks(std::get<0>(GetParam()), std::get<1>(GetParam()), [](Rank& r) {
    // Point to point: a ring exchange.
    std::vector<int32_t> a(100000, r.rank), b(100000, -1);
    weftSimInfo_t info = WEFT_SIM_INFO_INITIALIZER;
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    ASSERT_EQ(weftSend(a.data(), a.size(), weftInt32, (r.rank + 1) % r.nranks, r.comm, nullptr), weftSuccess);
    ASSERT_EQ(weftRecv(b.data(), b.size(), weftInt32, (r.rank + r.nranks - 1) % r.nranks, r.comm, nullptr),
              weftSuccess);
    ASSERT_EQ(weftGroupSimulateEnd(&info), weftSuccess);
    EXPECT_GT(info.estimatedTime, 0.0f);
    EXPECT_EQ(b[0], -1);
    // Nothing was left half-done: every rank still agrees on the next real call.
    int x = r.rank + 1, y = 0;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftInt32, weftSum, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
    EXPECT_EQ(y, r.nranks * (r.nranks + 1) / 2);
    // An empty group costs nothing.
    weftSimInfo_t empty = WEFT_SIM_INFO_INITIALIZER;
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    ASSERT_EQ(weftGroupSimulateEnd(&empty), weftSuccess);
    EXPECT_EQ(empty.estimatedTime, 0.0f);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, GroupSimulate,
                         ::testing::Values(std::make_tuple(Mode::kThreads, 1), std::make_tuple(Mode::kThreads, 2),
                                           std::make_tuple(Mode::kThreads, 5), std::make_tuple(Mode::kProcesses, 3)));

TEST(GroupSimulateArguments, SimInfoAndNestingAreChecked) {
  weftSimInfo_t info = WEFT_SIM_INFO_INITIALIZER;
  EXPECT_EQ(weftGroupSimulateEnd(&info), weftInvalidUsage);
  EXPECT_NE(std::string(weftGetLastError(nullptr)).find("without a matching weftGroupStart"), std::string::npos);
  ASSERT_EQ(weftGroupStart(), weftSuccess);
  EXPECT_EQ(weftGroupSimulateEnd(nullptr), weftInvalidArgument);
  weftSimInfo_t bad = WEFT_SIM_INFO_INITIALIZER;
  bad.magic = 0;
  EXPECT_EQ(weftGroupSimulateEnd(&bad), weftInvalidArgument);
  EXPECT_NE(std::string(weftGetLastError(nullptr)).find("WEFT_SIM_INFO_INITIALIZER"), std::string::npos);
  bad = WEFT_SIM_INFO_INITIALIZER;
  bad.size = 4;
  EXPECT_EQ(weftGroupSimulateEnd(&bad), weftInvalidArgument);
  ASSERT_EQ(weftGroupStart(), weftSuccess);
  EXPECT_EQ(weftGroupSimulateEnd(&info), weftInvalidUsage);
  EXPECT_NE(std::string(weftGetLastError(nullptr)).find("nested group (depth 2)"), std::string::npos);
  ASSERT_EQ(weftGroupEnd(), weftSuccess);
  // The refused calls left the outer group open: it still ends.
  ASSERT_EQ(weftGroupSimulateEnd(&info), weftSuccess);
  EXPECT_EQ(info.estimatedTime, 0.0f);
  EXPECT_EQ(weftGroupEnd(), weftInvalidUsage);  // nothing open any more
}

}  // namespace
}  // namespace weft_test
