// The results files (--json, --csv): every field of every row comes back exactly from both
// formats, tricky strings and awkward doubles included, and broken files are refused with a
// message that says where and what.
#include "perf/results.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace weft::perf {
namespace {

bool sameDouble(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;  // -0.0 differs from 0.0
}

void expectSame(const RunSummary& a, const RunSummary& b) {
  EXPECT_EQ(a.program, b.program);
  EXPECT_EQ(a.collective, b.collective);
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.date, b.date);
  EXPECT_EQ(a.memory, b.memory);
  EXPECT_EQ(a.topology, b.topology);
  EXPECT_EQ(a.weftVersion, b.weftVersion);
  EXPECT_EQ(a.nranks, b.nranks);
  EXPECT_EQ(a.libraries, b.libraries);
  EXPECT_EQ(a.notes, b.notes);
}

void expectSame(const std::vector<Measurement>& a, const std::vector<Measurement>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i));
    EXPECT_EQ(a[i].library, b[i].library);
    EXPECT_EQ(a[i].collective, b[i].collective);
    EXPECT_EQ(a[i].type, b[i].type);
    EXPECT_EQ(a[i].op, b[i].op);
    EXPECT_EQ(a[i].root, b[i].root);
    EXPECT_EQ(a[i].bytes, b[i].bytes);
    EXPECT_EQ(a[i].count, b[i].count);
    EXPECT_EQ(a[i].inPlace, b[i].inPlace);
    EXPECT_TRUE(sameDouble(a[i].timeUs, b[i].timeUs)) << a[i].timeUs << " vs " << b[i].timeUs;
    EXPECT_TRUE(sameDouble(a[i].algBw, b[i].algBw)) << a[i].algBw << " vs " << b[i].algBw;
    EXPECT_TRUE(sameDouble(a[i].busBw, b[i].busBw)) << a[i].busBw << " vs " << b[i].busBw;
    EXPECT_EQ(a[i].wrong, b[i].wrong);
    EXPECT_EQ(a[i].checked, b[i].checked);
    EXPECT_EQ(a[i].status, b[i].status);
  }
}

Measurement row(const std::string& lib, size_t bytes, bool inPlace, double timeUs, double busBw) {
  Measurement m;
  m.library = lib;
  m.collective = "allreduce";
  m.type = "float";
  m.op = "sum";
  m.bytes = bytes;
  m.count = bytes / 4;
  m.inPlace = inPlace;
  m.timeUs = timeUs;
  m.algBw = busBw / 2;
  m.busBw = busBw;
  return m;
}

RunSummary plainSummary() {
  RunSummary s;
  s.program = "weft-perf";
  s.collective = "allreduce";
  s.host = "vm";
  s.date = "2025-01-02T03:04:05Z";
  s.memory = "host";
  s.topology = "2 ranks on 1 host (vm), 2 CPUs, no GPU";
  s.weftVersion = "0.4.0";
  s.nranks = 2;
  s.libraries = {"weft", "mpi"};
  s.notes = {"nccl: skipped: no GPU found"};
  return s;
}

// Strings that break naive writers of either format.
RunSummary trickySummary() {
  RunSummary s = plainSummary();
  s.host = "host \"a\", b\\c";
  s.topology = "line one\nline two\r\nend\twith tab, = sign # hash";
  s.date = "";
  s.weftVersion = " padded ";
  s.libraries = {"weft", "#hash-first", "comma,lib", "µ-lib ∑ 😀", ""};
  s.notes = {"a\\nb is not a newline", "ctl \x01\x1f end", "", "=leading equals", "trailing backslash \\"};
  s.nranks = std::numeric_limits<int>::min();
  return s;
}

std::vector<Measurement> trickyRows() {
  std::vector<Measurement> rows;
  rows.push_back(row("weft", 8, false, 35.61, 51.53));
  rows.push_back(row("weft", 1048576, true, 0.1, 1.0 / 3.0));
  Measurement m = row("#hash-first", std::numeric_limits<size_t>::max(), false, -0.0, 1e-300);
  m.count = std::numeric_limits<size_t>::max() - 1;
  m.root = std::numeric_limits<int>::max();
  m.wrong = std::numeric_limits<int64_t>::min();
  m.checked = false;
  m.algBw = 5e-324;  // the smallest subnormal
  m.status = "failed: \"quoted\", comma\nnewline\r\nCRLF";
  rows.push_back(m);
  m = row("comma,lib", 0, false, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity());
  m.algBw = -std::numeric_limits<double>::infinity();
  m.status = "n/a: comma,lib has no bfloat16";
  m.op = "none";
  m.root = -1;
  m.wrong = std::numeric_limits<int64_t>::max();
  rows.push_back(m);
  m = row(" spaced ", 3, false, 1.7976931348623157e308, 2.2250738585072014e-308);
  m.type = "";
  m.collective = "\"";
  rows.push_back(m);
  return rows;
}

TEST(PerfResultsJson, RoundTripsEveryField) {
  const RunSummary run = trickySummary();
  const std::vector<Measurement> rows = trickyRows();
  const std::string text = formatResultsJson(run, rows);
  RunSummary run2;
  std::vector<Measurement> rows2;
  std::string error;
  ASSERT_TRUE(parseResultsJson(text, &run2, &rows2, &error)) << error << "\n" << text;
  expectSame(run, run2);
  expectSame(rows, rows2);
  // And the second generation is byte for byte the first.
  EXPECT_EQ(formatResultsJson(run2, rows2), text);
}

TEST(PerfResultsCsv, RoundTripsEveryField) {
  const RunSummary run = trickySummary();
  const std::vector<Measurement> rows = trickyRows();
  const std::string text = formatResultsCsv(run, rows);
  RunSummary run2;
  std::vector<Measurement> rows2;
  std::string error;
  ASSERT_TRUE(parseResultsCsv(text, &run2, &rows2, &error)) << error << "\n" << text;
  expectSame(run, run2);
  expectSame(rows, rows2);
  EXPECT_EQ(formatResultsCsv(run2, rows2), text);
}

TEST(PerfResults, EmptyRunRoundTrips) {
  RunSummary run;
  for (bool csv : {false, true}) {
    const std::string text = csv ? formatResultsCsv(run, {}) : formatResultsJson(run, {});
    RunSummary run2 = plainSummary();
    std::vector<Measurement> rows2 = trickyRows();
    std::string error;
    ASSERT_TRUE(csv ? parseResultsCsv(text, &run2, &rows2, &error) : parseResultsJson(text, &run2, &rows2, &error))
        << error << "\n"
        << text;
    expectSame(run, run2);
    EXPECT_TRUE(rows2.empty());
  }
}

TEST(PerfResults, RandomDoublesRoundTripExactly) {
  std::mt19937_64 rng(12345);
  std::vector<Measurement> rows;
  for (int i = 0; i < 300; ++i) {
    Measurement m = row("weft", rng(), i % 2, 0, 0);
    uint64_t bits[3] = {rng(), rng(), rng()};
    std::memcpy(&m.timeUs, &bits[0], 8);
    std::memcpy(&m.algBw, &bits[1], 8);
    std::memcpy(&m.busBw, &bits[2], 8);
    m.wrong = static_cast<int64_t>(rng());
    rows.push_back(m);
    // And ordinary measured values, whose decimal text should stay short.
    rows.push_back(row("mpi", 1u << (i % 30), false, (i + 1) * 0.01, 1.0 / (i + 1)));
  }
  const RunSummary run = plainSummary();
  for (bool csv : {false, true}) {
    SCOPED_TRACE(csv ? "csv" : "json");
    const std::string text = csv ? formatResultsCsv(run, rows) : formatResultsJson(run, rows);
    RunSummary run2;
    std::vector<Measurement> rows2;
    std::string error;
    ASSERT_TRUE(csv ? parseResultsCsv(text, &run2, &rows2, &error) : parseResultsJson(text, &run2, &rows2, &error))
        << error;
    expectSame(rows, rows2);
  }
}

TEST(PerfResultsJson, LayoutIsSummaryThenOneRowPerLine) {
  const std::string text = formatResultsJson(plainSummary(), {row("weft", 1024, false, 35.61, 51.53)});
  EXPECT_EQ(text.rfind("{\n  \"summary\": {\n    \"program\": \"weft-perf\",\n", 0), 0u) << text;
  EXPECT_NE(text.find("\n    \"libraries\": [\"weft\", \"mpi\"],\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  \"rows\": [\n    {\"library\": \"weft\", \"collective\": \"allreduce\", \"type\": "
                      "\"float\", \"redop\": \"sum\", \"root\": -1, \"size\": 1024, \"count\": 256, \"in_place\": "
                      "false, \"time_us\": 35.61, \"algbw_gbs\": 25.765, \"busbw_gbs\": 51.53, \"wrong\": 0, "
                      "\"checked\": true, \"status\": \"\"}\n  ]\n}\n"),
            std::string::npos)
      << text;
}

TEST(PerfResultsCsv, LayoutIsCommentsHeaderRows) {
  RunSummary run = plainSummary();
  std::vector<Measurement> rows = {row("weft", 1024, false, 35.61, 51.53)};
  rows.push_back(row("gloo", 1024, false, 0, 0));
  rows.back().status = "n/a: gloo has no \"bfloat16\", sorry";
  const std::string text = formatResultsCsv(run, rows);
  EXPECT_EQ(text,
            "# weft-perf results\n"
            "# program=weft-perf\n"
            "# collective=allreduce\n"
            "# host=vm\n"
            "# date=2025-01-02T03:04:05Z\n"
            "# memory=host\n"
            "# topology=2 ranks on 1 host (vm), 2 CPUs, no GPU\n"
            "# weft_version=0.4.0\n"
            "# nranks=2\n"
            "# library=weft\n"
            "# library=mpi\n"
            "# note=nccl: skipped: no GPU found\n"
            "library,collective,type,redop,root,size,count,in_place,time_us,algbw_gbs,busbw_gbs,wrong,checked,status\n"
            "weft,allreduce,float,sum,-1,1024,256,false,35.61,25.765,51.53,0,true,\n"
            "gloo,allreduce,float,sum,-1,1024,256,false,0,0,0,0,true,\"n/a: gloo has no \"\"bfloat16\"\", sorry\"\n");
}

TEST(PerfResultsCsv, ReadsCrlfAndColumnsInAnyOrder) {
  const std::string text =
      "# weft-perf results\r\n# program=p\r\n# collective=allreduce\r\n# host=h\r\n# date=d\r\n# memory=host\r\n"
      "# topology=t\r\n# weft_version=1\r\n# nranks=4\r\n# library=weft\r\n"
      "status,checked,wrong,busbw_gbs,algbw_gbs,time_us,in_place,count,size,root,redop,type,collective,library\r\n"
      "\"two\r\nlines\",false,3,2.5,1.25,10,true,2,8,0,max,int32,reduce,weft\r\n"
      "\r\n";
  RunSummary run;
  std::vector<Measurement> rows;
  std::string error;
  ASSERT_TRUE(parseResultsCsv(text, &run, &rows, &error)) << error;
  EXPECT_EQ(run.nranks, 4);
  EXPECT_EQ(run.libraries, std::vector<std::string>{"weft"});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, "two\r\nlines");
  EXPECT_FALSE(rows[0].checked);
  EXPECT_EQ(rows[0].wrong, 3);
  EXPECT_EQ(rows[0].busBw, 2.5);
  EXPECT_EQ(rows[0].bytes, 8u);
  EXPECT_EQ(rows[0].op, "max");
  EXPECT_EQ(rows[0].collective, "reduce");
  EXPECT_TRUE(rows[0].inPlace);
}

struct BadInput {
  const char* name;
  std::string text;
  std::string expected;  // a part of the message
};

std::string goodJson() { return formatResultsJson(plainSummary(), {row("weft", 1024, false, 35.61, 51.53)}); }

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(PerfResultsJson, RefusesBrokenFilesSayingWhere) {
  const std::string good = goodJson();
  const BadInput cases[] = {
      {"empty", "", "line 1, column 1: expected a value"},
      {"not an object", "[1, 2]", "line 1, column 1: expected an object"},
      {"trailing comma", replaced(good, "\"status\": \"\"}", "\"status\": \"\",}"), "line 15, column"},
      {"trailing comma says what", replaced(good, "\"status\": \"\"}", "\"status\": \"\",}"), "expected a key"},
      {"null", replaced(good, "\"host\": \"vm\"", "\"host\": null"), "line 5, column 13: found null"},
      {"unterminated string", "{\"summary\": \"abc", "ends inside a string"},
      {"bad escape", replaced(good, "\"vm\"", "\"v\\qm\""), "line 5, column 16: unknown escape \\q"},
      {"raw newline in string", replaced(good, "\"vm\"", "\"v\nm\""), "control characters must be escaped"},
      {"lone surrogate", replaced(good, "\"vm\"", "\"\\udc00\""), "low surrogate"},
      {"leading zero", replaced(good, "\"size\": 1024", "\"size\": 01024"), "leading zero"},
      {"garbage after", good + "x", "line 18, column 1: found 'x' after the end"},
      {"unknown key", replaced(good, "\"host\": \"vm\"", "\"hostname\": \"vm\""),
       "line 5, column 17: summary: unknown key \"hostname\""},
      {"unknown top key", replaced(good, "\"rows\":", "\"rowz\":"), "unknown key \"rowz\""},
      {"missing key", replaced(good, "\"wrong\": 0, ", ""), "rows[0]: the key \"wrong\" is missing"},
      {"string for number", replaced(good, "\"size\": 1024", "\"size\": \"1024\""),
       "rows[0].size: expected an unsigned integer, found a string"},
      {"negative size", replaced(good, "\"size\": 1024", "\"size\": -1"),
       "rows[0].size: expected an unsigned integer, found -1"},
      {"fraction for int", replaced(good, "\"root\": -1", "\"root\": 1.5"),
       "rows[0].root: expected an integer that fits in 32 bits, found 1.5"},
      {"int overflow", replaced(good, "\"nranks\": 2", "\"nranks\": 4294967296"),
       "summary.nranks: expected an integer"},
      {"bool for string", replaced(good, "\"status\": \"\"", "\"status\": false"),
       "rows[0].status: expected a string, found true or false"},
      {"number list", replaced(good, "[\"weft\", \"mpi\"]", "[\"weft\", 3]"),
       "summary.libraries[1]: expected a string, found a number"},
      {"bad double string", replaced(good, "\"time_us\": 35.61", "\"time_us\": \"fast\""),
       "rows[0].time_us: expected a number (or \"NaN\""},
      {"duplicate key", replaced(good, "\"host\": \"vm\"", "\"host\": \"vm\", \"host\": \"x\""),
       "duplicate key \"host\""},
      {"row not object", replaced(good, "\n  ]", ", 7\n  ]"), "rows[1]: expected an object, found a number"},
      {"deep nesting", std::string(100, '[') + std::string(100, ']'), "nest deeper than 64"},
  };
  for (const BadInput& c : cases) {
    RunSummary run = plainSummary();
    std::vector<Measurement> rows;
    std::string error;
    EXPECT_FALSE(parseResultsJson(c.text, &run, &rows, &error)) << c.name;
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.name << ": " << error;
    EXPECT_EQ(run.host, "vm") << c.name << ": a failed parse leaves the outputs alone";
  }
}

TEST(PerfResultsCsv, RefusesBrokenFilesSayingWhere) {
  const std::string good = formatResultsCsv(plainSummary(), {row("weft", 1024, false, 35.61, 51.53)});
  const std::string rowLine = "weft,allreduce,float,sum,-1,1024,256,false,35.61,25.765,51.53,0,true,\n";
  const BadInput cases[] = {
      {"empty", "", "line 1: expected the first line \"# weft-perf results\""},
      {"no magic", replaced(good, "# weft-perf results\n", "# something else\n"), "line 1: expected the first line"},
      {"unknown key", replaced(good, "# host=vm", "# hostname=vm"), "line 4: unknown summary key \"hostname\""},
      {"no equals", replaced(good, "# host=vm", "# host vm"), "line 4: expected a summary line"},
      {"twice", replaced(good, "# host=vm", "# host=vm\n# host=x"), "line 5: the summary key \"host\" appears twice"},
      {"bad escape", replaced(good, "# host=vm", "# host=v\\m"), "line 4: the value of host has a '\\'"},
      {"bad nranks", replaced(good, "# nranks=2", "# nranks=two"), "line 9: nranks: expected an integer"},
      {"missing key", replaced(good, "# memory=host\n", ""), "the summary line \"# memory=...\" is missing"},
      {"no header", replaced(good, good.substr(good.find("library,")), ""), "the header line"},
      {"unknown column", replaced(good, ",status\n", ",state\n"), "line 13, field 14: unknown column \"state\""},
      {"missing column", replaced(replaced(good, ",status\n", "\n"), ",true,\n", ",true\n"),
       "line 13: the header has no column \"status\""},
      {"short row", replaced(good, rowLine, "weft,allreduce\n"), "line 14: the row has 2 fields but the header has 14"},
      {"bad number", replaced(good, ",1024,", ",1k,"),
       "line 14, field 6 (size): expected an unsigned integer, found \"1k\""},
      {"hex double", replaced(good, ",35.61,", ",0x1p5,"), "line 14, field 9 (time_us): expected a number"},
      {"bad bool", replaced(good, ",false,", ",no,"), "line 14, field 8 (in_place): expected true or false"},
      {"unclosed quote", good + "\"weft,", "line 15, field 1: a quoted field is not closed"},
      {"quote inside", replaced(good, "weft,allreduce,float", "we\"ft,allreduce,float"),
       "line 14, field 1: a '\"' inside an unquoted field"},
      {"after quote", replaced(good, "weft,allreduce,float", "\"weft\"x,allreduce,float"),
       "line 14, field 1: a closing quote must be followed by ','"},
  };
  for (const BadInput& c : cases) {
    RunSummary run = plainSummary();
    std::vector<Measurement> rows;
    std::string error;
    EXPECT_FALSE(parseResultsCsv(c.text, &run, &rows, &error)) << c.name;
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.name << ": " << error;
    EXPECT_EQ(run.host, "vm") << c.name << ": a failed parse leaves the outputs alone";
  }
}

}  // namespace
}  // namespace weft::perf
