// Timelines end to end (WEFT_TRACE_FILE, src/core/trace.h): three ranks make four calls at
// level 2, rank 2 late into the third; every rank's file is then checked event by event (the
// format Perfetto and chrome://tracing read), its calls in order with their facts, its steps and
// waits, and the picture `weft-timeline` draws of them names rank 2 the straggler.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/harness.h"
#include "json_value.h"
#include "timeline.h"
#include "timeline_svg.h"

namespace weft_test {
namespace {

namespace fs = std::filesystem;
using weft::tools::JsonValue;

constexpr int kRanks = 3;
constexpr int kLateMs = 40;

class Trace : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("weft_trace_" + std::to_string(getpid()) + "_" + modeName(GetParam()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    unsetenv("WEFT_TRACE_FILE");
    unsetenv("WEFT_TRACE_LEVEL");
    fs::remove_all(dir_);
  }
  std::string file(int rank) const { return (dir_ / ("trace." + std::to_string(rank) + ".json")).string(); }
  fs::path dir_;
};

// allreduce #1, broadcast #2 (root 1), allreduce #3 (rank 2 late), a send/recv ring #4.
void fourCalls(Rank& r) {
  std::vector<float> f(1024, 1.0f), g(1024);
  ASSERT_EQ(weftAllReduce(f.data(), g.data(), f.size(), weftFloat32, weftSum, r.comm, nullptr), weftSuccess);
  std::vector<char> b(4096, 'x');
  ASSERT_EQ(weftBroadcast(b.data(), b.data(), b.size(), weftUint8, 1, r.comm, nullptr), weftSuccess);
  if (r.rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(kLateMs));
  std::vector<int32_t> i(256, r.rank), j(256);
  ASSERT_EQ(weftAllReduce(i.data(), j.data(), i.size(), weftInt32, weftMax, r.comm, nullptr), weftSuccess);
  std::vector<char> out(512, 'a'), in(512);
  ASSERT_EQ(weftGroupStart(), weftSuccess);
  ASSERT_EQ(weftSend(out.data(), out.size(), weftUint8, (r.rank + 1) % r.nranks, r.comm, nullptr), weftSuccess);
  ASSERT_EQ(weftRecv(in.data(), in.size(), weftUint8, (r.rank + r.nranks - 1) % r.nranks, r.comm, nullptr),
            weftSuccess);
  ASSERT_EQ(weftGroupEnd(), weftSuccess);
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string textOf(const JsonValue* v) { return v && v->isString() ? v->text : std::string("<missing>"); }
int64_t intOf(const JsonValue* v) {
  int64_t out = -999;
  return v && v->asInt(&out) ? out : -999;
}

// The format's rules, event by event: what Perfetto and chrome://tracing need to open the file.
void checkWellFormed(const JsonValue& root, int rank) {
  ASSERT_EQ(root.type, JsonValue::Type::kObject);
  EXPECT_EQ(textOf(root.find("displayTimeUnit")), "ns");
  ASSERT_NE(root.find("otherData"), nullptr);
  EXPECT_EQ(intOf(root.find("otherData")->find("rank")), rank);
  EXPECT_EQ(intOf(root.find("otherData")->find("droppedEvents")), 0);
  const JsonValue* events = root.find("traceEvents");
  ASSERT_TRUE(events && events->type == JsonValue::Type::kArray);
  std::map<int64_t, int64_t> lastTs;
  std::map<int64_t, int> open;
  for (const JsonValue& e : events->items) {
    ASSERT_TRUE(e.find("name") && e.find("name")->isString());
    const std::string ph = textOf(e.find("ph"));
    ASSERT_TRUE(ph == "X" || ph == "B" || ph == "E" || ph == "i" || ph == "M") << ph;
    ASSERT_NE(e.find("ts"), nullptr);
    int64_t ts = 0, dur = 0;
    ASSERT_TRUE(weft::tools::microsToNs(*e.find("ts"), &ts));
    EXPECT_EQ(intOf(e.find("pid")), rank);
    const int64_t tid = intOf(e.find("tid"));
    ASSERT_GE(tid, 0);
    if (ph == "M") continue;
    if (ph == "X") ASSERT_TRUE(e.find("dur") && weft::tools::microsToNs(*e.find("dur"), &dur));
    if (ph == "B") ++open[tid];
    if (ph == "E") ASSERT_GT(open[tid]--, 0) << "an E without its B on tid " << tid;
    EXPECT_GE(ts, lastTs[tid]) << "ts goes back on tid " << tid;
    lastTs[tid] = ts;
  }
  for (const auto& [tid, n] : open) EXPECT_EQ(n, 0) << "B without E on tid " << tid;
}

struct Found {
  std::vector<const JsonValue*> calls, steps, waits;
};

Found byCategory(const JsonValue& root) {
  Found f;
  for (const JsonValue& e : root.find("traceEvents")->items) {
    const std::string cat = textOf(e.find("cat"));
    if (cat == "call") f.calls.push_back(&e);
    if (cat == "step") f.steps.push_back(&e);
    if (cat == "wait") f.waits.push_back(&e);
  }
  return f;
}

void checkCalls(const Found& f, int rank, std::string* comm) {
  ASSERT_EQ(f.calls.size(), 4u);
  const char* kinds[] = {"allreduce", "broadcast", "allreduce", "sendrecv"};
  const int64_t bytes[] = {4096, 4096, 1024, 1024};
  for (size_t c = 0; c < 4; ++c) {
    const JsonValue& e = *f.calls[c];
    const JsonValue* args = e.find("args");
    ASSERT_NE(args, nullptr);
    EXPECT_EQ(textOf(e.find("name")), kinds[c]);
    EXPECT_EQ(intOf(args->find("call")), static_cast<int64_t>(c + 1));
    EXPECT_EQ(intOf(args->find("bytes")), bytes[c]);
    EXPECT_EQ(intOf(args->find("rank")), rank);
    EXPECT_EQ(textOf(args->find("result")), "ok");
    if (comm->empty()) *comm = textOf(args->find("comm"));
    EXPECT_EQ(textOf(args->find("comm")), *comm);
    if (c < 3) EXPECT_NE(textOf(args->find("algorithm")), "<missing>");
  }
  EXPECT_EQ(textOf(f.calls[0]->find("args")->find("datatype")), "float");
  EXPECT_EQ(textOf(f.calls[0]->find("args")->find("op")), "sum");
  EXPECT_EQ(intOf(f.calls[1]->find("args")->find("root")), 1);
  EXPECT_EQ(textOf(f.calls[2]->find("args")->find("op")), "max");
  EXPECT_EQ(intOf(f.calls[3]->find("args")->find("count")), 2);  // one send, one receive
}

TEST_P(Trace, EveryRankWritesAWellFormedTimelineOfItsCalls) {
  setenv("WEFT_TRACE_FILE", (dir_ / "trace.%r.json").c_str(), 1);
  setenv("WEFT_TRACE_LEVEL", "2", 1);
  runRanks(GetParam(), kRanks, fourCalls, 60);
  std::string comm;
  bool waitedForRank2 = false;
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    JsonValue root;
    std::string error;
    ASSERT_TRUE(weft::tools::parseJson(readAll(file(r)), &root, &error)) << file(r) << ": " << error;
    checkWellFormed(root, r);
    const Found f = byCategory(root);
    checkCalls(f, r, &comm);
    // Level 2: the executor's steps, each with a peer and bytes.
    // (Local steps, a root's copy into its own buffer, have no peer.)
    size_t withPeer = 0;
    for (const JsonValue* s : f.steps) {
      const JsonValue* args = s->find("args");
      withPeer += args->find("from") || args->find("to");
      EXPECT_GT(intOf(args->find("bytes")), 0);
    }
    EXPECT_GT(withPeer, 0u);
    for (const JsonValue* w : f.waits) {
      int64_t dur = 0;
      ASSERT_TRUE(weft::tools::microsToNs(*w->find("dur"), &dur));
      if (intOf(w->find("args")->find("from")) == 2 && dur >= kLateMs * 1000000 / 2) waitedForRank2 = true;
    }
  }
  EXPECT_TRUE(waitedForRank2) << "no rank recorded a wait for rank 2 in the call it entered late";
  // The picture: a row per rank, a bar per call, rank 2 marked.
  std::vector<weft::tools::RankTimeline> ranks;
  for (int r = 0; r < kRanks; ++r) {
    std::string error;
    ASSERT_TRUE(weft::tools::loadTraceFile(file(r), &ranks, &error)) << error;
  }
  const weft::tools::Straggler s = weft::tools::findStraggler(ranks);
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.worstCall, "allreduce #3");
  const std::string svg = weft::tools::timelineSvg(ranks, s);
  size_t rows = 0, bars = 0;
  for (size_t at = svg.find("<rect class=\"row\""); at != std::string::npos; at = svg.find("<rect class=\"row\"", at + 1)) ++rows;
  for (size_t at = svg.find("<g class=\"call\""); at != std::string::npos; at = svg.find("<g class=\"call\"", at + 1)) ++bars;
  EXPECT_EQ(rows, 3u);
  EXPECT_EQ(bars, 12u);
  EXPECT_NE(svg.find("class=\"straggler\">rank 2"), std::string::npos);
  if (const char* keep = std::getenv("WEFT_TEST_KEEP_SVG")) std::ofstream(keep) << svg;
}

// A name with an escape other than %r, %h, %p, %% is refused (warned about): no file under any
// spelling of it, and the calls still work.
TEST_P(Trace, AnInvalidFileNameWritesNothing) {
  setenv("WEFT_TRACE_FILE", (dir_ / "trace.%d.json").c_str(), 1);
  runRanks(GetParam(), 2, [](Rank& r) {
    float x = 1, y = 0;
    ASSERT_EQ(weftAllReduce(&x, &y, 1, weftFloat32, weftSum, r.comm, nullptr), weftSuccess);
    EXPECT_EQ(y, 2.0f);
  }, 60);
  EXPECT_TRUE(fs::is_empty(dir_));
}

INSTANTIATE_TEST_SUITE_P(Modes, Trace, ::testing::Values(Mode::kThreads, Mode::kProcesses),
                         [](const ::testing::TestParamInfo<Mode>& p) { return std::string(modeName(p.param)); });

}  // namespace
}  // namespace weft_test
