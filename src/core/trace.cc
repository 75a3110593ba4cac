// Timelines (trace.h): the events in memory, the JSON they are written as, and the files.
#include "core/trace.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <set>

#include "base/log.h"
#include "base/os.h"
#include "base/params.h"
#include "weft/weft.h"

namespace weft {
namespace core {
namespace {

// Tids: the n-th thread of the process that traced is n * kTidStride; its executor's tracks
// follow it (a level-2 timeline shows each track as a thread of its own, so that the steps of
// tracks that progress together never overlap on one row).
constexpr int64_t kTidStride = 100;
constexpr int kMaxTracks = 98;

int64_t threadOrdinal() {
  static std::atomic<int64_t> next{1};
  thread_local int64_t mine = next.fetch_add(1);
  return mine;
}

uint64_t realtimeOffsetNs() {
  static const uint64_t offset = [] {
    timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    const uint64_t real = static_cast<uint64_t>(rt.tv_sec) * 1000000000ull + static_cast<uint64_t>(rt.tv_nsec);
    return real - nowNs();
  }();
  return offset;
}

// Live tracers, written at exit by writeAll (their communicators may never be destroyed).
std::mutex& registryMutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}
std::set<Tracer*>& registry() {
  static std::set<Tracer*>* r = new std::set<Tracer*>;
  return *r;
}

// Length of the valid UTF-8 sequence at s (0: not one).
size_t utf8Length(const unsigned char* s) {
  if (s[0] < 0x80) return 1;
  size_t n = (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || (n == 2 && s[0] < 0xC2) || (n == 4 && s[0] > 0xF4)) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((s[i] & 0xC0) != 0x80) return 0;
  }
  // Overlong three-byte forms, surrogates, and four-byte ones beyond U+10FFFF.
  if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;
  if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
  return n;
}

// Microseconds with nanosecond decimals, exactly (no double on the way).
void appendMicros(std::string* out, uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
  *out += text;
}

void appendKey(std::string* out, const char* key) {
  out->push_back(',');
  appendJsonString(out, key);
  out->push_back(':');
}

void appendInt(std::string* out, const char* key, int64_t v) {
  appendKey(out, key);
  *out += std::to_string(v);
}

void appendText(std::string* out, const char* key, const char* v) {
  appendKey(out, key);
  appendJsonString(out, v);
}

const char* catName(TraceEvent::Cat c) {
  switch (c) {
    case TraceEvent::Cat::kCall: return "call";
    case TraceEvent::Cat::kStep: return "step";
    case TraceEvent::Cat::kWait: return "wait";
    case TraceEvent::Cat::kDevice: return "device";
  }
  return "call";
}

void appendArgs(std::string* out, const TraceEvent& e, const TraceHeader& h) {
  *out += ",\"args\":{";
  if (e.cat == TraceEvent::Cat::kCall || e.cat == TraceEvent::Cat::kDevice) {
    *out += "\"call\":" + std::to_string(e.call);
    appendInt(out, "count", static_cast<int64_t>(e.count));
    appendInt(out, "bytes", static_cast<int64_t>(e.bytes));
    if (e.datatype) appendText(out, "datatype", e.datatype);
    if (e.op) appendText(out, "op", e.op);
    if (e.root >= 0) appendInt(out, "root", e.root);
    if (e.algo) appendText(out, "algorithm", e.algo);
    appendText(out, "comm", h.commId.c_str());
    appendInt(out, "rank", h.rank);
    if (e.cat == TraceEvent::Cat::kCall) {
      appendText(out, "result", e.result == 0 ? "ok" : weftGetErrorString(static_cast<weftResult_t>(e.result)));
    }
  } else {
    *out += "\"bytes\":" + std::to_string(e.bytes);
    if (e.recvPeer >= 0) appendInt(out, "from", e.recvPeer);
    if (e.sendPeer >= 0) appendInt(out, "to", e.sendPeer);
    appendInt(out, "track", e.track);
    appendInt(out, "rank", h.rank);
  }
  out->push_back('}');
}

void appendEvent(std::string* out, const TraceEvent& e, const TraceHeader& h) {
  *out += "{\"name\":";
  appendJsonString(out, e.name);
  appendText(out, "cat", catName(e.cat));
  *out += ",\"ph\":\"";
  out->push_back(e.ph);
  *out += "\",\"ts\":";
  appendMicros(out, e.startNs + h.offsetNs);
  if (e.ph == 'X') {
    *out += ",\"dur\":";
    appendMicros(out, e.durNs);
  } else {
    *out += ",\"s\":\"t\"";  // an instant on its thread's row
  }
  appendInt(out, "pid", h.rank);
  appendInt(out, "tid", e.tid);
  appendArgs(out, e, h);
  out->push_back('}');
}

// A metadata event ("ph":"M"): the process's or a thread's name, or the process's sort index.
void appendMetadata(std::string* out, const char* what, int pid, int64_t tid, const std::string& name,
                    int64_t sortIndex) {
  *out += "{\"name\":";
  appendJsonString(out, what);
  *out += ",\"ph\":\"M\",\"ts\":0";
  appendInt(out, "pid", pid);
  appendInt(out, "tid", tid);
  *out += ",\"args\":{";
  if (sortIndex >= 0) {
    *out += "\"sort_index\":" + std::to_string(sortIndex);
  } else {
    *out += "\"name\":";
    appendJsonString(out, name.c_str());
  }
  *out += "}},\n";
}

}  // namespace

void appendJsonString(std::string* out, const char* s) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s ? s : "");
  while (*p) {
    const unsigned char c = *p;
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c == '\n') {
      *out += "\\n";
    } else if (c == '\t') {
      *out += "\\t";
    } else if (c == '\r') {
      *out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      *out += "\\u00";
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
    } else if (c >= 0x80) {
      const size_t n = utf8Length(p);
      if (n == 0) {
        *out += "\\ufffd";
        ++p;
        continue;
      }
      out->append(reinterpret_cast<const char*>(p), n);
      p += n;
      continue;
    } else {
      out->push_back(static_cast<char>(c));
    }
    ++p;
  }
  out->push_back('"');
}

std::string traceJson(const TraceHeader& h, const std::vector<TraceEvent>& events) {
  std::vector<const TraceEvent*> order;
  order.reserve(events.size());
  for (const auto& e : events) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(),
                   [](const TraceEvent* a, const TraceEvent* b) { return a->startNs < b->startNs; });
  std::string out = "{\"traceEvents\":[\n";
  appendMetadata(&out, "process_name", h.rank, 0, "rank " + std::to_string(h.rank) + " (host " + h.host + ")", -1);
  appendMetadata(&out, "process_sort_index", h.rank, 0, "", h.rank);
  for (const auto& [tid, name] : h.threads) {
    appendMetadata(&out, "thread_name", h.rank, tid, name, -1);
    appendMetadata(&out, "thread_sort_index", h.rank, tid, "", tid);
  }
  for (size_t i = 0; i < order.size(); ++i) {
    appendEvent(&out, *order[i], h);
    out += ",\n";
  }
  out.resize(out.size() - 2);  // the last ",\n" (there is always the process name before)
  out += "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"weft\"";
  appendText(&out, "version", (std::to_string(WEFT_MAJOR) + "." + std::to_string(WEFT_MINOR) + "." + std::to_string(WEFT_PATCH)).c_str());
  appendInt(&out, "rank", h.rank);
  appendInt(&out, "nRanks", h.nRanks);
  appendText(&out, "host", h.host.c_str());
  appendInt(&out, "pid", h.pid);
  appendText(&out, "comm", h.commId.c_str());
  appendInt(&out, "level", h.level);
  appendText(&out, "clock", "CLOCK_MONOTONIC plus the offset to CLOCK_REALTIME taken once per process");
  appendInt(&out, "eventCap", static_cast<int64_t>(h.eventCap));
  appendInt(&out, "droppedEvents", static_cast<int64_t>(h.droppedEvents));
  if (h.droppedEvents > 0) {
    appendText(&out, "note",
               (std::to_string(h.droppedEvents) + " events did not fit in WEFT_TRACE_EVENTS=" +
                std::to_string(h.eventCap) + " and were dropped; the timeline ends early")
                   .c_str());
  }
  out += "}}\n";
  return out;
}

bool expandTracePath(const std::string& pattern, int rank, const std::string& host, int pid, std::string* out,
                     std::string* error) {
  out->clear();
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      out->push_back(pattern[i]);
      continue;
    }
    const char c = i + 1 < pattern.size() ? pattern[++i] : '\0';
    if (c == 'r') *out += std::to_string(rank);
    else if (c == 'h') *out += host;
    else if (c == 'p') *out += std::to_string(pid);
    else if (c == '%') out->push_back('%');
    else {
      *error = c == '\0' ? std::string("it ends in a lone '%'")
                         : std::string("'%") + c + "' is not one of %r (rank), %h (host), %p (pid) or %%";
      return false;
    }
  }
  if (out->empty()) {
    *error = "it names no file";
    return false;
  }
  return true;
}

std::unique_ptr<Tracer> Tracer::fromParams(int rank, int nRanks, const std::string& commId) {
  const std::string pattern = params::TraceFile();
  if (pattern.empty()) return nullptr;
  TraceHeader h;
  h.rank = rank, h.nRanks = nRanks, h.host = hostName(), h.pid = static_cast<int>(getpid()), h.commId = commId;
  h.level = static_cast<int>(params::TraceLevel());
  h.eventCap = static_cast<uint64_t>(params::TraceEvents());
  h.offsetNs = realtimeOffsetNs();
  std::string path, error;
  if (!expandTracePath(pattern, rank, h.host, h.pid, &path, &error)) {
    WEFT_LOG(kWarn, kInit, "rank %d: WEFT_TRACE_FILE=%s is not usable (%s); this rank writes no timeline", rank,
             pattern.c_str(), error.c_str());
    return nullptr;
  }
  // Several ranks (or communicators) of this process must not write one file.
  static std::mutex namesMutex;
  static std::set<std::string> names;
  {
    std::lock_guard<std::mutex> lock(namesMutex);
    if (names.count(path) && pattern.find("%r") == std::string::npos) path += ".rank" + std::to_string(rank);
    for (int n = 2; names.count(path); ++n) path = path.substr(0, path.rfind(".comm")) + ".comm" + std::to_string(n);
    names.insert(path);
  }
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    WEFT_LOG(kWarn, kInit, "rank %d: cannot open the timeline file %s (WEFT_TRACE_FILE): %s; this rank writes none",
             rank, path.c_str(), std::strerror(errno));
    return nullptr;
  }
  return std::make_unique<Tracer>(f, path, std::move(h));
}

Tracer::Tracer(std::FILE* file, std::string path, TraceHeader header)
    : file_(file), path_(std::move(path)), header_(std::move(header)) {
  events_.reserve(static_cast<size_t>(std::min<uint64_t>(header_.eventCap, 4096)));
  static std::once_flag atExit;
  std::call_once(atExit, [] { std::atexit(&Tracer::writeAll); });
  std::lock_guard<std::mutex> lock(registryMutex());
  registry().insert(this);
}

Tracer::~Tracer() {
  {
    std::lock_guard<std::mutex> lock(registryMutex());
    registry().erase(this);
  }
  write();
}

void Tracer::writeAll() {
  std::lock_guard<std::mutex> lock(registryMutex());
  // A forked child inherits its parent's tracers (and their open files): only their owner writes.
  for (Tracer* t : registry()) {
    if (t->header_.pid == static_cast<int>(getpid())) t->write();
  }
}

int64_t Tracer::threadTid() { return threadOrdinal() * kTidStride; }

int64_t Tracer::trackTid(int track) { return threadTid() + 1 + std::min(track, kMaxTracks); }

void Tracer::add(const TraceEvent& e) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (written_) return;
  if (events_.size() >= header_.eventCap) {
    ++header_.droppedEvents;
    return;
  }
  events_.push_back(e);
  // The first event of a thread (or track) names it; a call runs on the thread that adds it.
  for (const auto& t : header_.threads) {
    if (t.first == e.tid) return;
  }
  std::string name = "thread " + std::to_string(gettid());
  name += e.track >= 0 ? ": track " + std::to_string(e.track) : std::string(": calls");
  header_.threads.emplace_back(e.tid, std::move(name));
}

void Tracer::step(int track, coll::StepKind kind, int recvPeer, int sendPeer, size_t bytes, uint64_t startNs,
                  uint64_t endNs) {
  TraceEvent e;
  e.cat = TraceEvent::Cat::kStep;
  e.name = coll::stepName(kind);
  e.tid = trackTid(track);
  e.startNs = startNs, e.durNs = endNs - startNs;
  e.bytes = bytes, e.recvPeer = recvPeer, e.sendPeer = sendPeer, e.track = track;
  add(e);
}

void Tracer::wait(int track, int peer, bool receiving, uint64_t startNs, uint64_t endNs) {
  TraceEvent e;
  e.cat = TraceEvent::Cat::kWait;
  e.name = receiving ? "wait for data" : "wait for a free slot";
  e.tid = trackTid(track);
  e.startNs = startNs, e.durNs = endNs - startNs;
  (receiving ? e.recvPeer : e.sendPeer) = peer;
  e.track = track;
  add(e);
}

void Tracer::write() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (written_) return;
  written_ = true;
  const std::string json = traceJson(header_, events_);
  const bool ok = std::fwrite(json.data(), 1, json.size(), file_) == json.size();
  if (std::fclose(file_) != 0 || !ok) {
    WEFT_LOG(kWarn, kInit, "rank %d: could not write the timeline %s (%zu bytes): %s", header_.rank, path_.c_str(),
             json.size(), std::strerror(errno));
  }
  file_ = nullptr;
  events_.clear();
  events_.shrink_to_fit();
}

TracedCall::TracedCall(Tracer* tracer) : tracer_(tracer) {
  if (tracer_ == nullptr) return;
  event_.tid = tracer_->threadTid();
  event_.startNs = nowNs();
}

TracedCall::~TracedCall() {
  if (tracer_ == nullptr) return;
  event_.durNs = nowNs() - event_.startNs;
  tracer_->add(event_);
}

}  // namespace core
}  // namespace weft
