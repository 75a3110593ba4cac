// The table weft-perf prints, checked against formats.md's nccl-tests sample and read back the
// way scripts in the wild read it; and the exit status (wrong elements, minimum bandwidth).
#include "perf/report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace weft::perf {
namespace {

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<std::string> fields(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

Row referenceRow() {
  Row r;
  r.bytes = 1048576;
  r.count = 262144;
  r.type = "float";
  r.op = "sum";
  r.root = -1;
  r.outOfPlace = {35.61, 29.45, 51.53, 0};
  r.inPlace = {35.02, 29.94, 52.40, 0};
  return r;
}

TEST(PerfReport, MatchesTheNcclTestsSample) {
  Options o;
  o.minBytes = 8;
  o.maxBytes = 134217728;
  o.stepFactor = 2;
  const std::vector<std::string> pre = lines(formatPreamble(o, "all_reduce_perf"));
  ASSERT_EQ(pre.size(), 4u);
  EXPECT_EQ(pre[0], "# Collective test starting: all_reduce_perf");
  EXPECT_EQ(pre[1],
            "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
            "validation: 1 graph: 0");
  EXPECT_EQ(pre[2], "#");
  EXPECT_EQ(pre[3], "# Using devices");

  EXPECT_EQ(formatDeviceLine(0, 0, 12345, "host-a", 0, "0000:18:00", "NVIDIA H100 80GB HBM3"),
            "#  Rank  0 Group  0 Pid  12345 on     host-a device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n");
  EXPECT_EQ(formatDeviceLine(3, 1, 777, "host-b", -1, "host", "host memory"),
            "#  Rank  3 Group  1 Pid    777 on     host-b device -1 [host] host memory\n");

  const std::vector<std::string> head = lines(formatColumnHeader(false));
  ASSERT_EQ(head.size(), 4u);
  EXPECT_EQ(head[0], "#");
  EXPECT_EQ(
      head[1],
      "#                                                              out-of-place                       in-place");
  EXPECT_EQ(head[2],
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
            "busbw #wrong");
  EXPECT_EQ(head[3],
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
            "(GB/s)");
  EXPECT_NE(formatColumnHeader(true).find("cputime"), std::string::npos);

  EXPECT_EQ(formatRow(referenceRow()),
            "     1048576        262144     float     sum      -1    35.61   29.45   51.53      0    35.02   29.94   "
            "52.40      0\n");

  const std::vector<std::string> foot = lines(formatFooter(0, 51.965, "all_reduce_perf"));
  ASSERT_GE(foot.size(), 2u);
  EXPECT_EQ(foot[0], "# Out of bounds values : 0 OK");
  EXPECT_EQ(foot[1], "# Avg bus bandwidth    : 51.965");
  EXPECT_EQ(lines(formatFooter(3, 1, "x"))[0], "# Out of bounds values : 3 FAILED");
}

TEST(PerfReport, TimeColumnPrecision) {
  EXPECT_EQ(formatTime(5.123), "   5.12");
  EXPECT_EQ(formatTime(99.994), "  99.99");
  EXPECT_EQ(formatTime(123.45), "  123.5");  // 123.45 is stored a hair below .45
  EXPECT_EQ(formatTime(9999.9), " 9999.9");
  EXPECT_EQ(formatTime(123456.7), " 123457");
}

TEST(PerfReport, UncheckedRowsPrintNA) {
  Row r = referenceRow();
  r.checked = false;
  const std::vector<std::string> f = fields(formatRow(r));
  ASSERT_EQ(f.size(), 13u);
  EXPECT_EQ(f[8], "N/A");
  EXPECT_EQ(f[12], "N/A");
}

// A whole table, parsed as scripts do: grep "# Avg bus bandwidth" and take the last field;
// rows are the lines without '#', 13 whitespace-separated columns.
TEST(PerfReport, ParsesLikeScriptsInTheWild) {
  Options o;
  o.minBytes = 0;
  o.maxBytes = 1 << 20;
  o.stepFactor = 1024;
  std::string out = formatPreamble(o, "all_gather_perf");
  out += formatDeviceLine(0, 0, 100, "h", -1, "host", "host memory");
  out += formatDeviceLine(1, 0, 101, "h", -1, "host", "host memory");
  out += formatColumnHeader(false);
  BusBwAverage avg;
  const size_t sizes[] = {0, 1024, 1048576};
  std::vector<Row> rows;
  for (size_t i = 0; i < 3; ++i) {
    Row r;
    r.bytes = sizes[i];
    r.count = sizes[i] / 8;
    r.type = "float";
    r.op = "none";
    r.root = -1;
    r.outOfPlace = {10.0 * static_cast<double>(i + 1), 1.0, 0.5 * static_cast<double>(i), 0};
    r.inPlace = {12345.6, 2.0, 1.5 * static_cast<double>(i), static_cast<int64_t>(i)};
    avg.add(r);
    rows.push_back(r);
    out += formatRow(r);
  }
  out += formatFooter(3, avg.value(), "all_gather_perf");

  std::string avgLine;
  std::vector<std::vector<std::string>> parsed;
  for (const std::string& l : lines(out)) {
    if (l.rfind("# Avg bus bandwidth", 0) == 0) avgLine = l;
    if (!l.empty() && l[0] != '#') parsed.push_back(fields(l));
  }
  ASSERT_FALSE(avgLine.empty());
  // (0 + 0.5 + 1 + 0 + 1.5 + 3) / 6 = 1
  EXPECT_DOUBLE_EQ(std::stod(fields(avgLine).back()), 1.0);
  EXPECT_DOUBLE_EQ(avg.value(), 1.0);
  ASSERT_EQ(parsed.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const std::vector<std::string>& f = parsed[i];
    ASSERT_EQ(f.size(), 13u) << i;
    EXPECT_EQ(std::stoull(f[0]), sizes[i]);
    EXPECT_EQ(std::stoull(f[1]), sizes[i] / 8);
    EXPECT_EQ(f[2], "float");
    EXPECT_EQ(f[3], "none");
    EXPECT_EQ(f[4], "-1");
    EXPECT_DOUBLE_EQ(std::stod(f[5]), 10.0 * static_cast<double>(i + 1));
    EXPECT_DOUBLE_EQ(std::stod(f[7]), 0.5 * static_cast<double>(i));
    EXPECT_EQ(f[8], "0");
    EXPECT_EQ(f[9], "12346");
    EXPECT_DOUBLE_EQ(std::stod(f[11]), 1.5 * static_cast<double>(i));
    EXPECT_EQ(std::stoll(f[12]), static_cast<long long>(i));
  }
  // Wide numbers keep the columns separate.
  Row big = rows[2];
  big.bytes = size_t{8} << 40;
  big.count = size_t{2} << 40;
  big.outOfPlace.algBw = 123456.78;
  big.inPlace.wrong = 123456789;
  EXPECT_EQ(fields(formatRow(big)).size(), 13u);
}

TEST(PerfReport, VerdictOnWrongElements) {
  EXPECT_EQ(finalVerdict(0, 10, nullptr, nullptr).exitCode, 0);
  EXPECT_TRUE(finalVerdict(0, 10, nullptr, nullptr).message.empty());
  const Verdict v = finalVerdict(5, 10, nullptr, nullptr);
  EXPECT_EQ(v.exitCode, 1);
  EXPECT_NE(v.message.find("5 wrong"), std::string::npos);
}

TEST(PerfReport, VerdictOnMinimumBandwidth) {
  // Fails below 0.9 x the minimum, passes at or above it.
  EXPECT_EQ(finalVerdict(0, 9.0, "10", nullptr).exitCode, 0);
  EXPECT_EQ(finalVerdict(0, 8.99, "10", nullptr).exitCode, 1);
  EXPECT_NE(finalVerdict(0, 8.99, "10", nullptr).message.find("WEFT_PERF_MIN_BW"), std::string::npos);
  EXPECT_EQ(finalVerdict(0, 8.99, nullptr, "10").exitCode, 1);  // the nccl-tests name works too
  EXPECT_NE(finalVerdict(0, 8.99, nullptr, "10").message.find("NCCL_TESTS_MIN_BW"), std::string::npos);
  EXPECT_EQ(finalVerdict(0, 8.99, "5", "10").exitCode, 0);  // WEFT_PERF_MIN_BW wins
  EXPECT_EQ(finalVerdict(0, 8.99, "", "10").exitCode, 1);   // empty counts as unset
  EXPECT_EQ(finalVerdict(0, 0.5, "0.5", nullptr).exitCode, 0);
  EXPECT_EQ(finalVerdict(0, 100, "1.1e2", nullptr).exitCode, 0);
  EXPECT_EQ(finalVerdict(0, 100, "abc", nullptr).exitCode, 2);
  EXPECT_EQ(finalVerdict(0, 100, "10GB", nullptr).exitCode, 2);
  EXPECT_EQ(finalVerdict(0, 100, "-1", nullptr).exitCode, 2);
  // Both failures at once still exit 1 and say both.
  const Verdict both = finalVerdict(2, 1, "10", nullptr);
  EXPECT_EQ(both.exitCode, 1);
  EXPECT_NE(both.message.find("2 wrong"), std::string::npos);
  EXPECT_NE(both.message.find("below"), std::string::npos);
  // The verdict never touches the line scripts grep.
  for (const std::string& l : lines(both.message)) EXPECT_NE(l.rfind("# Avg bus bandwidth", 0), 0u);
}

// Each library's row becomes two Measurements (out of place, in place) carrying the same
// numbers the table prints; a library that did not run keeps its reason and no numbers.
TEST(PerfReport, RowsBecomeMeasurements) {
  LibRow ran;
  ran.row = referenceRow();
  ran.row.outOfPlace.wrong = 3;
  LibRow na;
  na.row = referenceRow();
  na.state = LibState::kUnsupported;
  na.status = "n/a: Gloo has no bfloat16 type";
  std::vector<Measurement> m;
  appendMeasurements("weft", Collective::kAllReduce, ran, &m);
  appendMeasurements("gloo", Collective::kAllReduce, na, &m);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].library, "weft");
  EXPECT_EQ(m[0].collective, "allreduce");
  EXPECT_EQ(m[0].type, "float");
  EXPECT_EQ(m[0].op, "sum");
  EXPECT_EQ(m[0].root, -1);
  EXPECT_EQ(m[0].bytes, 1048576u);
  EXPECT_EQ(m[0].count, 262144u);
  EXPECT_FALSE(m[0].inPlace);
  EXPECT_DOUBLE_EQ(m[0].timeUs, 35.61);
  EXPECT_DOUBLE_EQ(m[0].algBw, 29.45);
  EXPECT_DOUBLE_EQ(m[0].busBw, 51.53);
  EXPECT_EQ(m[0].wrong, 3);
  EXPECT_TRUE(m[0].status.empty());
  EXPECT_TRUE(m[1].inPlace);
  EXPECT_DOUBLE_EQ(m[1].timeUs, 35.02);
  EXPECT_EQ(m[1].wrong, 0);
  EXPECT_EQ(m[2].library, "gloo");
  EXPECT_EQ(m[2].status, "n/a: Gloo has no bfloat16 type");
  EXPECT_EQ(m[2].timeUs, 0.0);
  EXPECT_EQ(m[2].busBw, 0.0);
  EXPECT_TRUE(m[3].inPlace);
}

LibRow sideRow(double outUs, double inUs, double busBw, int64_t wrong = 0) {
  LibRow l;
  l.row = referenceRow();
  l.row.outOfPlace = {outUs, busBw / 2, busBw, wrong};
  l.row.inPlace = {inUs, busBw / 2, busBw, 0};
  return l;
}

// The side-by-side table: every line a comment (nccl-tests parsers skip it), two lines per size,
// columns that line up with the header, Weft's speed relative to each library, the check.
TEST(PerfReport, SideBySideTable) {
  const std::vector<std::string> names = {"weft", "mpi", "gloo"};
  LibRow na;
  na.row = referenceRow();
  na.state = LibState::kUnsupported;
  const std::string head = formatSideBySideHeader(names);
  const std::string rows = formatSideBySideRows({sideRow(10, 20, 1.5), sideRow(40, 10, 0.25), na}, names);
  const std::vector<std::string> h = lines(head), r = lines(rows);
  ASSERT_EQ(h.size(), 2u);
  ASSERT_EQ(r.size(), 2u);
  for (const std::string& l : h) EXPECT_EQ(l[0], '#') << l;
  for (const std::string& l : r) EXPECT_EQ(l[0], '#') << l;
  EXPECT_EQ(fields(h[0]), (std::vector<std::string>{"#", "size", "place", "weft", "weft", "mpi", "mpi", "gloo", "gloo",
                                                    "weft/mpi", "weft/gloo", "check"}));
  EXPECT_EQ(h[1],
            "#       (B)           time (us)   busbw GB/s    time (us)   busbw GB/s    time (us)   busbw GB/s        "
            "speed        speed");
  EXPECT_EQ(r[0],
            "#   1048576    out        10.00        1.500        40.00        0.250          n/a          n/a        "
            "4.000            -  ok");
  // In place, MPI was twice as fast as Weft: a ratio below 1.
  EXPECT_EQ(fields(r[1]), (std::vector<std::string>{"#", "1048576", "in", "20.00", "1.500", "10.00", "0.250", "n/a",
                                                    "n/a", "0.500", "-", "ok"}));
  // Every value ends where a header word of its column ends.
  auto ends = [](const std::string& s) {
    std::vector<size_t> e;
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] != ' ' && (i + 1 == s.size() || s[i + 1] == ' ')) e.push_back(i + 1);
    return e;
  };
  std::vector<size_t> he = ends(h[0]);
  for (size_t e : ends(h[1])) he.push_back(e);
  for (const std::string& row : r) {
    const std::vector<size_t> re = ends(row);
    for (size_t i = 0; i + 1 < re.size(); ++i)  // the check column is free-form
      EXPECT_NE(std::find(he.begin(), he.end(), re[i]), he.end()) << "a value ends at " << re[i] << " in\n" << row;
  }

  // A wrong result names the library and blanks its ratio; a failed library shows "failed".
  LibRow failed;
  failed.row = referenceRow();
  failed.state = LibState::kFailed;
  const std::vector<std::string> w =
      lines(formatSideBySideRows({sideRow(10, 10, 1), sideRow(20, 20, 1, 7), failed}, names));
  EXPECT_EQ(fields(w[0]), (std::vector<std::string>{"#", "1048576", "out", "10.00", "1.000", "20.00", "1.000", "failed",
                                                    "-", "-", "-", "WRONG", "mpi=7"}));
  EXPECT_EQ(fields(w[1]).back(), "ok");
  // -c 0: nothing was checked.
  LibRow unchecked = sideRow(10, 10, 1);
  unchecked.row.checked = false;
  EXPECT_EQ(fields(lines(formatSideBySideRows({unchecked}, {"weft"}))[0]).back(), "N/A");
  EXPECT_EQ(formatSideBySideRows({}, names), "");
  // Two libraries: one ratio column.
  EXPECT_EQ(fields(lines(formatSideBySideHeader({"weft", "nccl"}))[0]),
            (std::vector<std::string>{"#", "size", "place", "weft", "weft", "nccl", "nccl", "weft/nccl", "check"}));
}

TEST(PerfReport, TopologySummary) {
  EXPECT_EQ(topologySummary(2, 1, true, 2, 0, "NVIDIA"), "2 ranks on 1 host (vm), 2 CPUs, no GPU");
  EXPECT_EQ(topologySummary(1, 1, false, 1, 1, "NVIDIA"), "1 rank on 1 host, 1 CPU, 1 NVIDIA GPU");
  EXPECT_EQ(topologySummary(16, 2, false, 224, 8, "NVIDIA"),
            "16 ranks on 2 hosts, 224 CPUs on rank 0's host, 8 NVIDIA GPUs");
}

TEST(PerfReport, WriteTextFile) {
  const std::string path = ::testing::TempDir() + "/weft_perf_report_test.txt";
  std::string error;
  ASSERT_TRUE(writeTextFile(path, "one\ntwo\n", &error)) << error;
  std::ifstream in(path);
  std::stringstream got;
  got << in.rdbuf();
  EXPECT_EQ(got.str(), "one\ntwo\n");
  std::remove(path.c_str());
  EXPECT_FALSE(writeTextFile("/nonexistent-dir/x.json", "x", &error));
  EXPECT_NE(error.find("/nonexistent-dir/x.json"), std::string::npos) << error;
}

}  // namespace
}  // namespace weft::perf
