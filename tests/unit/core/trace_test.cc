// The timeline writer (src/core/trace.h): its JSON escaping, the file as a whole (read back by
// the tools' strict parser), the bound on events, and the file-name pattern.
#include "core/trace.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "json_value.h"

namespace weft {
namespace core {
namespace {

std::string quoted(const char* s) {
  std::string out;
  appendJsonString(&out, s);
  return out;
}

TEST(TraceWriter, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(quoted("plain"), "\"plain\"");
  EXPECT_EQ(quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(quoted("l1\nl2\tx\r"), "\"l1\\nl2\\tx\\r\"");
  EXPECT_EQ(quoted("\x01\x1f\x7f"), "\"\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(quoted("h\xC3\xA9"), "\"h\xC3\xA9\"");       // valid UTF-8 kept
  EXPECT_EQ(quoted("bad\xFF\xC3"), "\"bad\\ufffd\\ufffd\"");  // invalid bytes replaced
  EXPECT_EQ(quoted("\xED\xA0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // a surrogate is not UTF-8
  // Every byte value, once: the result always parses back to a string.
  std::string all;
  for (int c = 1; c < 256; ++c) all.push_back(static_cast<char>(c));
  tools::JsonValue v;
  std::string error;
  ASSERT_TRUE(tools::parseJson(quoted(all.c_str()), &v, &error)) << error;
  EXPECT_EQ(v.text.substr(0, 127), all.substr(0, 127));
}

TEST(TraceWriter, WritesAFileTheStrictParserReads) {
  TraceHeader h;
  h.rank = 3, h.nRanks = 4, h.host = "host \"q\"", h.pid = 42, h.commId = "c\\1", h.level = 2;
  h.offsetNs = 1764770000000000000ull, h.eventCap = 10, h.droppedEvents = 5;
  h.threads = {{100, "thread 7: calls"}};
  std::vector<TraceEvent> events(2);
  events[0].name = "allreduce", events[0].tid = 100, events[0].startNs = 2000, events[0].durNs = 1500;
  events[0].call = 9, events[0].count = 2, events[0].bytes = 8, events[0].datatype = "float", events[0].op = "sum";
  events[0].algo = "ring";
  events[1].cat = TraceEvent::Cat::kStep, events[1].name = "send", events[1].tid = 101, events[1].startNs = 1000;
  events[1].bytes = 8, events[1].sendPeer = 2, events[1].track = 0;
  const std::string json = traceJson(h, events);
  tools::JsonValue root;
  std::string error;
  ASSERT_TRUE(tools::parseJson(json, &root, &error)) << error << "\n" << json;
  EXPECT_EQ(root.find("displayTimeUnit")->text, "ns");
  const tools::JsonValue* other = root.find("otherData");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->find("host")->text, "host \"q\"");
  EXPECT_EQ(other->find("droppedEvents")->text, "5");
  EXPECT_NE(other->find("note")->text.find("dropped"), std::string::npos);
  const auto& items = root.find("traceEvents")->items;
  ASSERT_EQ(items.size(), 6u);  // process name and sort index, thread name and sort index, 2 events
  EXPECT_EQ(items[0].find("args")->find("name")->text, "rank 3 (host host \"q\")");
  // Sorted by start: the step first.
  EXPECT_EQ(items[4].find("name")->text, "send");
  EXPECT_EQ(items[4].find("ts")->text, "1764770000000001.000");
  EXPECT_EQ(items[4].find("args")->find("to")->text, "2");
  const tools::JsonValue& call = items[5];
  EXPECT_EQ(call.find("ph")->text, "X");
  EXPECT_EQ(call.find("dur")->text, "1.500");
  EXPECT_EQ(call.find("pid")->text, "3");
  EXPECT_EQ(call.find("args")->find("call")->text, "9");
  EXPECT_EQ(call.find("args")->find("algorithm")->text, "ring");
  EXPECT_EQ(call.find("args")->find("comm")->text, "c\\1");
  EXPECT_EQ(call.find("args")->find("result")->text, "ok");
}

TEST(TraceWriter, KeepsAtMostTheCapAndCountsTheRest) {
  const std::string path = ::testing::TempDir() + "weft_trace_cap_" + std::to_string(getpid()) + ".json";
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  TraceHeader h;
  h.eventCap = 3;
  {
    Tracer tracer(f, path, h);
    for (int i = 0; i < 5; ++i) {
      TracedCall call(&tracer);
      call.event().name = "barrier";
    }
  }  // written here
  std::FILE* in = std::fopen(path.c_str(), "r");
  ASSERT_NE(in, nullptr);
  std::string text(1 << 16, '\0');
  text.resize(std::fread(&text[0], 1, text.size(), in));
  std::fclose(in);
  std::remove(path.c_str());
  tools::JsonValue root;
  std::string error;
  ASSERT_TRUE(tools::parseJson(text, &root, &error)) << error;
  EXPECT_EQ(root.find("otherData")->find("droppedEvents")->text, "2");
  size_t calls = 0;
  for (const auto& e : root.find("traceEvents")->items) calls += e.find("name")->text == "barrier";
  EXPECT_EQ(calls, 3u);
}

TEST(TracePath, ExpandsRankHostPidAndRefusesOtherEscapes) {
  std::string out, error;
  ASSERT_TRUE(expandTracePath("/tmp/t.%r.%h.%p.100%%.json", 3, "node1", 77, &out, &error)) << error;
  EXPECT_EQ(out, "/tmp/t.3.node1.77.100%.json");
  EXPECT_FALSE(expandTracePath("/tmp/t.%d.json", 0, "h", 1, &out, &error));
  EXPECT_NE(error.find("'%d'"), std::string::npos) << error;
  EXPECT_FALSE(expandTracePath("/tmp/t%", 0, "h", 1, &out, &error));
  EXPECT_NE(error.find("lone"), std::string::npos) << error;
}

}  // namespace
}  // namespace core
}  // namespace weft
