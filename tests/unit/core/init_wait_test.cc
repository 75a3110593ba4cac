// A rank's wait in init (core/init_wait.h): the schedule of its reports, the sentences they
// log, the list of waits in progress, and the root's progress report as the wire checks it.
#include "core/init_wait.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/bootstrap_check.h"

namespace weft {
namespace core {
namespace {

TEST(InitWait, ReportsComeAtAGrowingIntervalCappedAt60s) {
  std::vector<double> due;
  double last = 0;
  for (int i = 0; i < 9; ++i) due.push_back(last = nextInitReportS(last, 3));
  EXPECT_EQ(due, (std::vector<double>{3, 6, 12, 24, 48, 96, 156, 216, 276}));
  EXPECT_EQ(nextInitReportS(0, 0), 0) << "0 turns the reports off";
  EXPECT_EQ(nextInitReportS(10, 0), 0);
  EXPECT_EQ(nextInitReportS(0, 90), 90);
  EXPECT_EQ(nextInitReportS(90, 90), 150) << "the gap is capped, the first report is not";
}

InitWait waitingForRank3() {
  InitWait w;
  w.rank = 1;
  w.nRanks = 4;
  w.phase = InitWait::Phase::kWaitingForRanks;
  w.root = "127.0.0.1:5000";
  w.sinceNs = 1'000'000'000;
  w.heardNs = 6'500'000'000;
  w.joined = 3;
  w.missing = {3};
  w.missingTotal = 1;
  return w;
}

TEST(InitWait, MessageNamesTheMissingAndTheJoinedRanks) {
  const std::string m = initWaitMessage(waitingForRank3(), 7'000'000'000, 15);
  EXPECT_EQ(m,
            "rank 1 of 4 waits in communicator init for rank 3 to join (ranks 0-2 joined, as the root at "
            "127.0.0.1:5000 reported 0.5 s ago; waiting 6.0 s of WEFT_TIMEOUT_S 15): start rank 3 or check its log");
}

TEST(InitWait, MessageWithManyMissingSaysHowManyMore) {
  InitWait w = waitingForRank3();
  w.nRanks = 100;
  w.joined = 80;
  w.missingTotal = 20;
  w.missing.clear();
  for (int r = 80; r < 96; ++r) w.missing.push_back(r);
  const std::string m = initWaitMessage(w, 7'000'000'000, 15);
  EXPECT_NE(m.find("for ranks 80-95 and 4 more to join (80 of 100 ranks joined"), std::string::npos) << m;
  EXPECT_NE(m.find("check their log"), std::string::npos) << m;
}

TEST(InitWait, MessageBeforeTheRootSpeaks) {
  InitWait w = waitingForRank3();
  w.heardNs = 0;
  std::string m = initWaitMessage(w, 4'000'000'000, 1800);
  EXPECT_NE(m.find("for the root at 127.0.0.1:5000 to answer (no progress report from it yet; waiting 3.0 s of "
                   "WEFT_TIMEOUT_S 1800)"),
            std::string::npos)
      << m;
  w.phase = InitWait::Phase::kReachingRoot;
  m = initWaitMessage(w, 4'000'000'000, 1800);
  EXPECT_NE(m.find("rank 1 of 4 waits in communicator init to reach the root at 127.0.0.1:5000"), std::string::npos)
      << m;
}

TEST(InitWait, CurrentWaitsListsTheScopesAlive) {
  const size_t before = currentInitWaits().size();
  {
    InitWaitScope scope(waitingForRank3());
    InitWait w = waitingForRank3();
    w.joined = 2;
    scope.update(w);
    std::vector<InitWait> now = currentInitWaits();
    ASSERT_EQ(now.size(), before + 1);
    EXPECT_EQ(now.back().rank, 1);
    EXPECT_EQ(now.back().joined, 2);
  }
  EXPECT_EQ(currentInitWaits().size(), before);
}

wire::Progress goodProgress() {
  wire::Progress p{};
  p.magic = wire::kProgressMagic;
  p.nRanks = 4;
  p.joined = 3;
  p.missingTotal = 1;
  p.missingShown = 1;
  p.missing[0] = 3;
  return p;
}

TEST(InitWait, ProgressReportIsCheckedFieldByField) {
  EXPECT_TRUE(wire::checkProgress(goodProgress(), 1, 4).isOk());
  auto refused = [](wire::Progress p, int rank, const char* needle) {
    Status s = wire::checkProgress(p, rank, 4);
    EXPECT_FALSE(s.isOk()) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  wire::Progress p = goodProgress();
  p.magic = 1;
  refused(p, 1, "bad magic");
  p = goodProgress();
  p.nRanks = 5;
  refused(p, 1, "for 5 ranks, not 4");
  p = goodProgress();
  p.joined = 0;
  refused(p, 1, "0 of 4 ranks joined");
  p = goodProgress();
  p.missingTotal = 2;
  refused(p, 1, "and 2 missing");
  p = goodProgress();
  p.missingShown = 0;
  refused(p, 1, "lists 0 of its 1 missing");
  p = goodProgress();
  p.missing[0] = 4;
  refused(p, 1, "out of range");
  refused(goodProgress(), 3, "this rank");
  p = goodProgress();
  p.joined = 2;
  p.missingTotal = 2;
  p.missingShown = 2;
  p.missing[0] = 3;
  p.missing[1] = 2;
  refused(p, 1, "out of order");
}

}  // namespace
}  // namespace core
}  // namespace weft
