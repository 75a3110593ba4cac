// The timeline reader (tools/timeline.h), its strict JSON parser (tools/json_value.h) and the
// SVG (tools/timeline_svg.h), on small hand-written traces whose answer is known.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "json_value.h"
#include "timeline.h"
#include "timeline_svg.h"

namespace weft {
namespace tools {
namespace {

size_t countOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(JsonParser, ParsesValuesExactly) {
  JsonValue v;
  std::string error;
  ASSERT_TRUE(parseJson(" {\"a\":[1,-2.5e1,true,false,null],\"s\":\"q\\\"\\\\\\n\\u00e9\\ud83d\\ude00\"} ", &v, &error))
      << error;
  ASSERT_EQ(v.type, JsonValue::Type::kObject);
  const JsonValue* a = v.find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items.size(), 5u);
  int64_t one = 0;
  EXPECT_TRUE(a->items[0].asInt(&one));
  EXPECT_EQ(one, 1);
  EXPECT_DOUBLE_EQ(a->items[1].number, -25.0);
  EXPECT_FALSE(a->items[1].asInt(&one));
  EXPECT_TRUE(a->items[2].boolean);
  EXPECT_EQ(a->items[4].type, JsonValue::Type::kNull);
  EXPECT_EQ(v.find("s")->text, "q\"\\\n\xC3\xA9\xF0\x9F\x98\x80");
}

TEST(JsonParser, MicrosecondsKeepNanoseconds) {
  JsonValue v;
  std::string error;
  ASSERT_TRUE(parseJson("1764770000123456.789", &v, &error)) << error;
  int64_t ns = 0;
  ASSERT_TRUE(microsToNs(v, &ns));
  EXPECT_EQ(ns, 1764770000123456789LL);  // beyond a double's precision
  ASSERT_TRUE(parseJson("-1", &v, &error));
  EXPECT_FALSE(microsToNs(v, &ns));
}

TEST(JsonParser, RefusesBadInputWithTheOffset) {
  struct Case {
    const char* text;
    size_t offset;
  };
  const Case cases[] = {
      {"", 0},          {"{", 1},           {"[1,]", 3},        {"{\"a\":1,}", 7},  {"{\"a\" 1}", 5},
      {"[01]", 2},      {"[1.]", 3},        {"[1e]", 3},        {"\"a\nb\"", 2},    {"\"\\x\"", 2},
      {"\"\\ud800\"", 7}, {"\"\\udc00\"", 7}, {"[tru]", 1},       {"{} x", 3},        {"{\"a\":1,\"a\":2}", 7},
      {"\"abc", 4},     {"[1 2]", 3},       {"nul", 0},         {"-", 1},           {"[1e999]", 1},
  };
  for (const Case& c : cases) {
    JsonValue v;
    std::string error;
    EXPECT_FALSE(parseJson(c.text, &v, &error)) << c.text;
    EXPECT_EQ(error.rfind("offset " + std::to_string(c.offset) + ":", 0), 0u) << c.text << " -> " << error;
  }
  // Nesting beyond the limit is refused, not a stack overflow.
  JsonValue v;
  std::string error;
  EXPECT_FALSE(parseJson(std::string(100000, '['), &v, &error));
  EXPECT_NE(error.find("deeper"), std::string::npos) << error;
}

// Two ranks, two allreduces; rank 1 enters #2 5 ms late, so rank 0 waits for it.
const char* const kRank0 = R"J({"traceEvents":[
{"name":"process_name","ph":"M","ts":0,"pid":0,"tid":0,"args":{"name":"rank 0 (host a)"}},
{"name":"allreduce","cat":"call","ph":"X","ts":1000.000,"dur":100.5,"pid":0,"tid":100,"args":{"call":1,"bytes":8,"comm":"c1","result":"ok"}},
{"name":"allreduce","cat":"call","ph":"B","ts":2000,"pid":0,"tid":100,"args":{"call":2,"bytes":8,"comm":"c1"}},
{"name":"wait for data","cat":"wait","ph":"X","ts":2001,"dur":4990,"pid":0,"tid":101,"args":{"from":1}},
{"ph":"E","ts":7100,"pid":0,"tid":100}
],"displayTimeUnit":"ns","otherData":{}})J";
const char* const kRank1 = R"J({"traceEvents":[
{"name":"process_name","ph":"M","ts":0,"pid":1,"tid":0,"args":{"name":"rank 1 (host a)"}},
{"name":"allreduce","cat":"call","ph":"X","ts":1001,"dur":99,"pid":1,"tid":100,"args":{"call":1,"bytes":8,"comm":"c1"}},
{"name":"allreduce","cat":"call","ph":"X","ts":7000,"dur":100,"pid":1,"tid":100,"args":{"call":2,"bytes":8,"comm":"c1"}}
],"displayTimeUnit":"ns"})J";

TEST(Timeline, ReadsCallsAndWaitsAndFindsTheStraggler) {
  std::vector<RankTimeline> ranks;
  std::string error;
  ASSERT_TRUE(parseTraceText("r0.json", kRank0, &ranks, &error)) << error;
  ASSERT_TRUE(parseTraceText("r1.json", kRank1, &ranks, &error)) << error;
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].label, "rank 0 (host a)");
  ASSERT_EQ(ranks[0].calls.size(), 2u);
  EXPECT_EQ(ranks[0].calls[0].endNs - ranks[0].calls[0].startNs, 100500);
  EXPECT_EQ(ranks[0].calls[1].call, 2);
  EXPECT_EQ(ranks[0].calls[1].endNs, 7100000);  // from its E
  ASSERT_EQ(ranks[0].waits.size(), 1u);
  EXPECT_EQ(ranks[0].waits[0].peer, 1);
  const Straggler s = findStraggler(ranks);
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.worstCall, "allreduce #2");
  EXPECT_EQ(s.worstLateNs, 5000000);
}

TEST(Timeline, RefusesMalformedEventsNamingFileAndEvent) {
  struct Case {
    const char* text;
    const char* says;
  };
  const Case cases[] = {
      {"{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"X\",\"ts\":1,\"pid\":0,\"tid\":0}]}", "event 0: an \"X\" event without"},
      {"{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"Q\",\"ts\":1,\"pid\":0,\"tid\":0}]}", "event 0: \"ph\""},
      {"{\"traceEvents\":[{\"ph\":\"E\",\"ts\":1,\"pid\":0,\"tid\":0}]}", "event 0: an \"E\" event with no \"B\""},
      {"{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"B\",\"ts\":1,\"pid\":0,\"tid\":0}]}", "never ended"},
      {"{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"i\",\"ts\":5,\"pid\":0,\"tid\":0},"
       "{\"name\":\"a\",\"ph\":\"i\",\"ts\":4,\"pid\":0,\"tid\":0}]}", "event 1: \"ts\" goes back"},
      {"{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"i\",\"ts\":1,\"pid\":\"0\",\"tid\":0}]}", "\"pid\""},
      {"{\"traceEvents\":[{\"name\":1,\"ph\":\"i\",\"ts\":1,\"pid\":0,\"tid\":0}]}", "\"name\""},
      {"{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"i\",\"ts\":-1,\"pid\":0,\"tid\":0}]}", "\"ts\""},
      {"{\"events\":[]}", "not a trace"},
      {"{\"traceEvents\":[}", "not valid JSON: offset 16"},
  };
  for (const Case& c : cases) {
    std::vector<RankTimeline> ranks;
    std::string error;
    EXPECT_FALSE(parseTraceText("bad.json", c.text, &ranks, &error)) << c.text;
    EXPECT_EQ(error.rfind("bad.json: ", 0), 0u) << error;
    EXPECT_NE(error.find(c.says), std::string::npos) << c.text << " -> " << error;
  }
}

TEST(TimelineSvg, RowsBarsWaitsAndTheStragglerMark) {
  std::vector<RankTimeline> ranks;
  std::string error;
  ASSERT_TRUE(parseTraceText("r0.json", kRank0, &ranks, &error)) << error;
  ASSERT_TRUE(parseTraceText("r1.json", kRank1, &ranks, &error)) << error;
  const std::string svg = timelineSvg(ranks, findStraggler(ranks));
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(countOf(svg, "<rect class=\"row\""), 2u);
  EXPECT_EQ(countOf(svg, "<g class=\"call\""), 4u);
  EXPECT_EQ(countOf(svg, "class=\"call\" data-rank=\"1\""), 2u);
  EXPECT_NE(svg.find("class=\"row\" data-rank=\"1\" x=\"0\" y=\"98.0\" width=\"1200.0\" height=\"34.0\" fill=\"#fde3e3\""),
            std::string::npos);
  EXPECT_EQ(countOf(svg, "class=\"straggler\""), 1u);
  EXPECT_NE(svg.find("straggler: rank 1"), std::string::npos);
  // Rank 0's wait for rank 1 in #2: shaded over its bar, and its executor's wait event.
  // (and 1 us in #1, which rank 1 entered 1 us after it).
  EXPECT_EQ(countOf(svg, "class=\"wait\""), 3u);
  EXPECT_NE(svg.find(">allreduce #2<"), std::string::npos);
  EXPECT_NE(svg.find(" ms</text>"), std::string::npos);  // axis ticks in ms
}

TEST(TimelineSvg, TicksAreRoundAndLabelledInTheirUnit) {
  EXPECT_EQ(tickStepNs(8000000), 1000000);
  EXPECT_EQ(tickStepNs(10000000), 2000000);
  EXPECT_EQ(tickStepNs(3000000000LL), 500000000);
  EXPECT_EQ(tickLabel(4000000, 2000000), "4 ms");
  EXPECT_EQ(tickLabel(1500000000, 500000000), "1.5 s");
  EXPECT_EQ(tickLabel(300, 100), "0.3 us");
}

}  // namespace
}  // namespace tools
}  // namespace weft
