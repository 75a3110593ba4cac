// The comparison benchmarks' pure parts: the library list, the speed ratios and the fastest
// peer, the table's columns, and the flags taken out before weft-perf's parser sees the rest.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "perf/compare_options.h"
#include "perf/compare_report.h"

namespace weft::perf {
namespace {

std::vector<std::string> fields(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

// Where each whitespace-separated field ends.
std::vector<size_t> fieldEnds(const std::string& s) {
  std::vector<size_t> ends;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != ' ' && s[i] != '\n' && (i + 1 == s.size() || s[i + 1] == ' ' || s[i + 1] == '\n'))
      ends.push_back(i + 1);
  return ends;
}

LibSample ran(double seconds, int64_t wrong = 0) {
  LibSample s;
  s.seconds = seconds;
  s.wrong = wrong;
  return s;
}

LibSample inState(LibState state) {
  LibSample s;
  s.state = state;
  return s;
}

const std::vector<std::string> kThree = {"weft", "gloo", "mpi"};

TEST(PerfCompare, SpeedRatioIsTheOtherTimeOverTheSubjectTime) {
  EXPECT_DOUBLE_EQ(speedRatio(ran(1e-3), ran(2e-3)), 2.0);
  EXPECT_DOUBLE_EQ(speedRatio(ran(4e-3), ran(1e-3)), 0.25);
  // Not clean: failed, unsupported, wrong, or no time.
  EXPECT_EQ(speedRatio(ran(1e-3), inState(LibState::kFailed)), 0.0);
  EXPECT_EQ(speedRatio(inState(LibState::kUnsupported), ran(1e-3)), 0.0);
  EXPECT_EQ(speedRatio(ran(1e-3, 5), ran(1e-3)), 0.0);
  EXPECT_EQ(speedRatio(ran(0), ran(1e-3)), 0.0);
}

TEST(PerfCompare, FastestPeerSkipsTheSubjectAndUncleanSamples) {
  CompareRow row;
  row.libs = {ran(1e-6), ran(3e-3), ran(2e-3)};
  EXPECT_EQ(fastestPeer(row), 2);
  row.libs[2].wrong = 1;  // the fastest gave a wrong answer: it does not count
  EXPECT_EQ(fastestPeer(row), 1);
  row.libs[1] = inState(LibState::kFailed);
  EXPECT_EQ(fastestPeer(row), -1);
  row.libs = {ran(1e-3)};
  EXPECT_EQ(fastestPeer(row), -1);
}

TEST(PerfCompare, ParsesTheLibraryList) {
  std::vector<std::string> libs;
  std::string error;
  ASSERT_TRUE(parseLibList("gloo,mpi", kThree, &libs, &error)) << error;
  EXPECT_EQ(libs, (std::vector<std::string>{"gloo", "mpi"}));
  ASSERT_TRUE(parseLibList("mpi", kThree, &libs, &error));
  EXPECT_EQ(libs, (std::vector<std::string>{"mpi"}));

  EXPECT_FALSE(parseLibList("weft,nccl", kThree, &libs, &error));
  EXPECT_NE(error.find("unknown library 'nccl'"), std::string::npos) << error;
  EXPECT_FALSE(parseLibList("weft,weft", kThree, &libs, &error));
  EXPECT_NE(error.find("twice"), std::string::npos) << error;
  EXPECT_FALSE(parseLibList("", kThree, &libs, &error));
  EXPECT_FALSE(parseLibList("weft,", kThree, &libs, &error));
  EXPECT_EQ(libs, (std::vector<std::string>{"mpi"})) << "a failed parse leaves the list alone";
}

TEST(PerfCompare, HeaderHasTwoColumnsPerLibraryThenRatios) {
  const std::string h = formatCompareHeader(kThree);
  const size_t nl = h.find('\n');
  ASSERT_NE(nl, std::string::npos);
  const std::string top = h.substr(0, nl);
  EXPECT_EQ(fields(top), (std::vector<std::string>{"#", "size", "weft", "weft", "gloo", "gloo", "mpi", "mpi",
                                                   "weft/gloo", "weft/mpi", "weft/best", "check"}));
  // Two libraries: one ratio, no "best" column.
  const std::string two = formatCompareHeader({"gloo", "mpi"});
  EXPECT_NE(two.find("gloo/mpi"), std::string::npos);
  EXPECT_EQ(two.find("/best"), std::string::npos);
  // One library: no ratios at all.
  const std::string one = formatCompareHeader({"weft"});
  EXPECT_EQ(one.substr(0, one.find('\n')).find('/'), std::string::npos) << one;
}

TEST(PerfCompare, RowCarriesTimesBusBwRatiosAndCheck) {
  CompareRow row;
  row.bytes = 1 << 20;
  row.paramCount = (1 << 20) / 4;
  row.typeSize = 4;
  row.libs = {ran(500e-6), ran(1000e-6), ran(2000e-6)};
  const std::vector<std::string> f = fields(formatCompareRow(row, kThree, Collective::kAllReduce, 2));
  ASSERT_EQ(f.size(), 11u) << formatCompareRow(row, kThree, Collective::kAllReduce, 2);
  EXPECT_EQ(f[0], "1048576");
  EXPECT_EQ(f[1], "500.0");  // nccl-tests' time precision
  // busbw = bytes / time x 2(n-1)/n; n = 2: 1 MiB / 500 us.
  EXPECT_DOUBLE_EQ(std::stod(f[2]), 2.097);
  EXPECT_EQ(f[3], "1000.0");
  EXPECT_EQ(f[7], "2.000");  // weft/gloo
  EXPECT_EQ(f[8], "4.000");  // weft/mpi
  EXPECT_EQ(f[9], "2.000");  // weft/best: gloo is the faster peer
  EXPECT_EQ(f[10], "ok");
}

TEST(PerfCompare, RowShowsFailuresUnsupportedAndWrongResults) {
  CompareRow row;
  row.bytes = 1024;
  row.paramCount = 256;
  row.libs = {inState(LibState::kFailed), ran(10e-6, 3), inState(LibState::kUnsupported)};
  const std::vector<std::string> f = fields(formatCompareRow(row, kThree, Collective::kAllReduce, 2));
  ASSERT_EQ(f.size(), 12u);
  EXPECT_EQ(f[1], "failed");
  EXPECT_EQ(f[2], "-");
  EXPECT_EQ(f[5], "n/a");
  EXPECT_EQ(f[6], "n/a");
  EXPECT_EQ(f[7], "-");  // no ratio against a failed subject
  EXPECT_EQ(f[8], "-");
  EXPECT_EQ(f[9], "-");  // the only peer that ran was wrong: no best
  EXPECT_EQ(f[10], "WRONG");
  EXPECT_EQ(f[11], "gloo=3");
}

TEST(PerfCompare, ColumnsLineUpWithTheHeader) {
  CompareRow row;
  row.bytes = 67108864;
  row.paramCount = 16777216;
  row.libs = {ran(0.031), ran(0.061), ran(0.090)};
  const std::string h = formatCompareHeader(kThree);
  const std::string top = h.substr(0, h.find('\n'));
  const std::string r = formatCompareRow(row, kThree, Collective::kAllReduce, 2);
  // Every column ends at the same character in the header (after its "#") and the row.
  const std::vector<size_t> headerEnds = fieldEnds(top), rowEnds = fieldEnds(r);
  ASSERT_EQ(headerEnds.size(), 12u) << top;
  ASSERT_EQ(rowEnds.size(), 11u) << r;
  for (size_t i = 0; i + 1 < rowEnds.size(); ++i) EXPECT_EQ(headerEnds[i + 1], rowEnds[i]) << "column " << i;
}

TEST(PerfCompare, OwnFlagsComeOutTheRestStays) {
  const char* argv[] = {"weft-bench-net",
                        "-b",
                        "1K",
                        "--libs",
                        "gloo,mpi",
                        "--iface=eth0",
                        "-e",
                        "4M",
                        "--blocks",
                        "6",
                        "--in-place",
                        "--gloo-allreduce",
                        "bcube",
                        "--host",
                        "10.0.0.1",
                        "--gloo-store=/shared",
                        "--libsx",
                        "1"};
  CompareOptions o;
  const CompareParse p = parseCompareOptions(sizeof argv / sizeof argv[0], argv, &o);
  ASSERT_TRUE(p.ok) << p.error;
  // Not ours (--libsx is not --libs): left for weft-perf's parser to judge.
  EXPECT_EQ(p.rest, (std::vector<std::string>{"weft-bench-net", "-b", "1K", "-e", "4M", "--libsx", "1"}));
  EXPECT_TRUE(o.inPlace);
  EXPECT_EQ(o.libs, (std::vector<std::string>{"gloo", "mpi"}));
  EXPECT_EQ(o.blocks, 6);
  EXPECT_EQ(o.peers.iface, "eth0");
  EXPECT_EQ(o.peers.host, "10.0.0.1");
  EXPECT_EQ(o.peers.glooAllreduce, "bcube");
  EXPECT_EQ(o.peers.storeDir, "/shared");
}

TEST(PerfCompare, DefaultsCompareWeftWithGlooAndMpiOverLoopback) {
  const char* argv[] = {"weft-bench-net"};
  CompareOptions o;
  ASSERT_TRUE(parseCompareOptions(1, argv, &o).ok);
  EXPECT_EQ(o.libs, kThree);
  EXPECT_EQ(o.blocks, 4);
  EXPECT_EQ(o.peers.iface, "lo");
  EXPECT_EQ(o.peers.glooAllreduce, "ring");
  EXPECT_FALSE(o.inPlace);
}

TEST(PerfCompare, BadOwnFlagsSayWhy) {
  CompareOptions o;
  const char* noValue[] = {"p", "--libs"};
  CompareParse p = parseCompareOptions(2, noValue, &o);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "--libs needs a value");
  const char* badLib[] = {"p", "--libs=weft,ucc"};
  p = parseCompareOptions(2, badLib, &o);
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.error.find("unknown library 'ucc'"), std::string::npos) << p.error;
  const char* badBlocks[] = {"p", "--blocks", "0"};
  EXPECT_FALSE(parseCompareOptions(3, badBlocks, &o).ok);
  const char* valueOnASwitch[] = {"p", "--in-place=1"};
  p = parseCompareOptions(2, valueOnASwitch, &o);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "--in-place takes no value");
}

}  // namespace
}  // namespace weft::perf
