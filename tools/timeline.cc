// Trace files read back and checked (timeline.h), the straggler, and the timeline command.
#include "timeline.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include "json_value.h"
#include "timeline_svg.h"

namespace weft {
namespace tools {
namespace {

// One event once its ph, ts and dur are known: what the timeline keeps of it.
struct Span {
  const JsonValue* event = nullptr;
  std::string name;
  int64_t pid = 0;
  int64_t startNs = 0;
  int64_t endNs = 0;
};

class TraceReader {
 public:
  TraceReader(const std::string& file, std::vector<RankTimeline>* ranks) : file_(file), ranks_(ranks) {}

  bool read(const JsonValue& root, std::string* error) {
    const JsonValue* events = root.type == JsonValue::Type::kArray ? &root : root.find("traceEvents");
    if (events == nullptr || events->type != JsonValue::Type::kArray) {
      *error = file_ + ": not a trace: neither an array of events nor an object with a \"traceEvents\" array";
      return false;
    }
    for (size_t i = 0; i < events->items.size(); ++i) {
      index_ = i;
      if (!event(events->items[i])) {
        *error = file_ + ": event " + std::to_string(i) + ": " + error_;
        return false;
      }
    }
    for (const auto& [thread, open] : open_) {
      if (!open.empty()) {
        *error = file_ + ": pid " + std::to_string(thread.first) + " tid " + std::to_string(thread.second) + ": " +
                 std::to_string(open.size()) + " \"B\" event(s) never ended (first: \"" + open.back().name + "\")";
        return false;
      }
    }
    return true;
  }

 private:
  bool fail(const std::string& why) {
    error_ = why;
    return false;
  }

  bool event(const JsonValue& e) {
    if (e.type != JsonValue::Type::kObject) return fail("not an object");
    const JsonValue* name = e.find("name");
    const JsonValue* ph = e.find("ph");
    int64_t pid = 0, tid = 0;
    if (ph == nullptr || !ph->isString() || ph->text.size() != 1 || std::string("XBEiIM").find(ph->text) == std::string::npos) {
      return fail("\"ph\" is missing or not one of \"X\", \"B\", \"E\", \"i\", \"I\", \"M\"");
    }
    const char kind = ph->text[0];
    if (kind != 'E' && (name == nullptr || !name->isString())) return fail("\"name\" is missing or not a string");
    const JsonValue* pidV = e.find("pid");
    const JsonValue* tidV = e.find("tid");
    if (pidV == nullptr || !pidV->asInt(&pid)) return fail("\"pid\" is missing or not an integer");
    if (tidV == nullptr || !tidV->asInt(&tid)) return fail("\"tid\" is missing or not an integer");
    const JsonValue* args = e.find("args");
    if (args != nullptr && args->type != JsonValue::Type::kObject) return fail("\"args\" is not an object");
    if (kind == 'M') return metadata(e, name->text, pid);
    int64_t ts = 0, dur = 0;
    const JsonValue* tsV = e.find("ts");
    if (tsV == nullptr || !microsToNs(*tsV, &ts)) return fail("\"ts\" is missing or not a non-negative number");
    const auto thread = std::make_pair(pid, tid);
    auto last = lastTs_.find(thread);
    if (last != lastTs_.end() && ts < last->second) {
      return fail("\"ts\" goes back in time on pid " + std::to_string(pid) + " tid " + std::to_string(tid));
    }
    lastTs_[thread] = ts;
    rankOf(pid);
    if (kind == 'X') {
      const JsonValue* durV = e.find("dur");
      if (durV == nullptr || !microsToNs(*durV, &dur)) return fail("an \"X\" event without a non-negative \"dur\"");
      return span(Span{&e, name->text, pid, ts, ts + dur});
    }
    if (kind == 'B') {
      open_[thread].push_back(Span{&e, name->text, pid, ts, ts});
      return true;
    }
    if (kind == 'E') {
      auto& open = open_[thread];
      if (open.empty()) return fail("an \"E\" event with no \"B\" open on its pid and tid");
      Span s = open.back();
      open.pop_back();
      if (name != nullptr && (!name->isString() || name->text != s.name)) {
        return fail("an \"E\" event named otherwise than the \"B\" it ends (\"" + s.name + "\")");
      }
      s.endNs = ts;
      return span(s);
    }
    return true;  // instants: well-formed, not drawn
  }

  bool metadata(const JsonValue& e, const std::string& what, int64_t pid) {
    const JsonValue* args = e.find("args");
    if (what != "process_name") return true;
    const JsonValue* label = args ? args->find("name") : nullptr;
    if (label == nullptr || !label->isString()) return fail("process_name without a string args.name");
    (*ranks_)[rankOf(pid)].label = label->text;
    return true;
  }

  size_t rankOf(int64_t pid) {
    auto it = byPid_.find(pid);
    if (it != byPid_.end()) return it->second;
    ranks_->emplace_back();
    ranks_->back().rank = static_cast<int>(pid);
    ranks_->back().file = file_;
    return byPid_[pid] = ranks_->size() - 1;
  }

  static std::string text(const JsonValue* args, const char* key) {
    const JsonValue* v = args ? args->find(key) : nullptr;
    return v && v->isString() ? v->text : std::string();
  }
  static int64_t integer(const JsonValue* args, const char* key, int64_t otherwise) {
    const JsonValue* v = args ? args->find(key) : nullptr;
    int64_t out = otherwise;
    return v && v->asInt(&out) ? out : otherwise;
  }

  bool span(const Span& s) {
    const JsonValue* cat = s.event->find("cat");
    const JsonValue* args = s.event->find("args");
    const std::string category = cat && cat->isString() ? cat->text : "";
    RankTimeline& r = (*ranks_)[rankOf(s.pid)];
    if (category == "call") {
      TimelineCall c;
      c.name = s.name, c.startNs = s.startNs, c.endNs = s.endNs;
      c.comm = text(args, "comm"), c.algo = text(args, "algorithm"), c.result = text(args, "result");
      c.call = integer(args, "call", -1);
      c.bytes = integer(args, "bytes", 0);
      r.calls.push_back(c);
    } else if (category == "wait") {
      TimelineWait w;
      w.startNs = s.startNs, w.endNs = s.endNs;
      w.peer = static_cast<int>(integer(args, "from", integer(args, "to", -1)));
      r.waits.push_back(w);
    }
    return true;
  }

  const std::string& file_;
  std::vector<RankTimeline>* ranks_;
  size_t index_ = 0;
  std::string error_;
  std::map<int64_t, size_t> byPid_;
  std::map<std::pair<int64_t, int64_t>, int64_t> lastTs_;
  std::map<std::pair<int64_t, int64_t>, std::vector<Span>> open_;
};

std::string millis(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f ms", static_cast<double>(ns) / 1e6);
  return text;
}

}  // namespace

bool parseTraceText(const std::string& file, const std::string& text, std::vector<RankTimeline>* ranks,
                    std::string* error) {
  JsonValue root;
  std::string why;
  if (!parseJson(text, &root, &why)) {
    *error = file + ": not valid JSON: " + why;
    return false;
  }
  std::vector<RankTimeline> found;
  TraceReader reader(file, &found);
  if (!reader.read(root, error)) return false;
  for (auto& r : found) {
    std::stable_sort(r.calls.begin(), r.calls.end(),
                     [](const TimelineCall& a, const TimelineCall& b) { return a.startNs < b.startNs; });
    ranks->push_back(std::move(r));
  }
  return true;
}

bool loadTraceFile(const std::string& file, std::vector<RankTimeline>* ranks, std::string* error) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    *error = file + ": cannot be opened";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  return parseTraceText(file, text.str(), ranks, error);
}

Straggler findStraggler(const std::vector<RankTimeline>& ranks) {
  // Per call (communicator, number, kind): each rank's start.
  std::map<std::tuple<std::string, int64_t, std::string>, std::vector<std::pair<size_t, int64_t>>> starts;
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (const auto& c : ranks[r].calls) {
      if (c.call >= 0) starts[{c.comm, c.call, c.name}].emplace_back(r, c.startNs);
    }
  }
  std::vector<int64_t> late(ranks.size(), 0), worst(ranks.size(), -1);
  std::vector<std::string> worstName(ranks.size());
  bool matched = false;
  for (const auto& [key, entries] : starts) {
    if (entries.size() < 2) continue;
    matched = true;
    int64_t first = entries[0].second;
    for (const auto& e : entries) first = std::min(first, e.second);
    for (const auto& [r, start] : entries) {
      late[r] += start - first;
      if (start - first > worst[r]) {
        worst[r] = start - first;
        worstName[r] = std::get<2>(key) + " #" + std::to_string(std::get<1>(key));
      }
    }
  }
  Straggler s;
  if (!matched) return s;
  size_t best = 0;
  for (size_t r = 1; r < ranks.size(); ++r) best = late[r] > late[best] ? r : best;
  s.rank = ranks[best].rank;
  s.lateNs = late[best];
  s.worstCall = worstName[best];
  s.worstLateNs = worst[best];
  return s;
}

int runTimelineCommand(int argc, char** argv) {
  std::vector<std::string> files;
  std::string svg;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--timeline") continue;
    if (a == "--svg") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "--svg needs a file name: --timeline FILES... --svg OUT.svg\n");
        return 2;
      }
      svg = argv[++i];
    } else if (a.size() > 1 && a[0] == '-') {
      std::fprintf(stderr, "unknown option %s; usage: --timeline FILES... --svg OUT.svg\n", a.c_str());
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "no trace files given; usage: --timeline FILES... --svg OUT.svg (files: WEFT_TRACE_FILE's)\n");
    return 2;
  }
  std::vector<RankTimeline> ranks;
  for (const auto& f : files) {
    std::string error;
    if (!loadTraceFile(f, &ranks, &error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
  }
  std::sort(ranks.begin(), ranks.end(), [](const RankTimeline& a, const RankTimeline& b) { return a.rank < b.rank; });
  const Straggler s = findStraggler(ranks);
  for (const auto& r : ranks) {
    int64_t busy = 0;
    for (const auto& c : r.calls) busy += c.endNs - c.startNs;
    std::printf("%s: %zu calls, %s in calls, %zu waits (%s)\n", r.label.empty() ? ("rank " + std::to_string(r.rank)).c_str() : r.label.c_str(),
                r.calls.size(), millis(busy).c_str(), r.waits.size(), r.file.c_str());
  }
  if (s.rank >= 0) {
    std::printf("straggler: rank %d entered its calls %s later than the first rank in all (most: %s, %s)\n", s.rank,
                millis(s.lateNs).c_str(), s.worstCall.c_str(), millis(s.worstLateNs).c_str());
  }
  if (!svg.empty()) {
    std::ofstream out(svg, std::ios::binary);
    out << timelineSvg(ranks, s);
    if (!out.flush()) {
      std::fprintf(stderr, "could not write %s\n", svg.c_str());
      return 1;
    }
    std::printf("wrote %s\n", svg.c_str());
  }
  return 0;
}

}  // namespace tools
}  // namespace weft
