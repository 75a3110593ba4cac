// Timelines (WEFT_TRACE_FILE): each communicator's rank keeps its calls (and, at
// WEFT_TRACE_LEVEL=2, the host executor's steps and waits) as events in memory and writes them,
// when the communicator is destroyed or the process exits, as Chrome trace-event JSON (the "JSON
// Object Format") that Perfetto and chrome://tracing open; `weft-timeline` (tools/timeline.h)
// draws several ranks' files on one axis.
//
// Off by default, and then free: the communicator holds no Tracer and tests one pointer per call.
// On, a call costs two clock reads and an append under a mutex; the buffer is bounded
// (WEFT_TRACE_EVENTS) and what does not fit is counted, not kept.
//
// Times are CLOCK_MONOTONIC plus one offset per process taken from CLOCK_REALTIME at the first
// Tracer, written in microseconds (the format's unit) with nanosecond decimals: the ranks of one
// host share the monotonic clock, and the offset lines up hosts as well as their clocks agree.
#ifndef WEFT_CORE_TRACE_H_
#define WEFT_CORE_TRACE_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collectives/step_tracer.h"

namespace weft {
namespace core {

// One event as kept in memory: static strings only, so appending allocates nothing.
struct TraceEvent {
  enum class Cat : uint8_t { kCall, kStep, kWait, kDevice };
  Cat cat = Cat::kCall;
  char ph = 'X';                // 'X' complete (ts + dur), 'i' instant
  const char* name = "";        // collective kind, step kind, "wait"
  int64_t tid = 0;
  uint64_t startNs = 0;         // monotonic (nowNs)
  uint64_t durNs = 0;
  // kCall / kDevice: the call's facts. kStep / kWait: bytes, peers, track.
  uint64_t call = 0;            // call number (collectives and send/recv groups, one sequence)
  uint64_t count = 0;
  uint64_t bytes = 0;
  const char* datatype = nullptr;
  const char* op = nullptr;     // null: the kind does not reduce
  int32_t root = -1;            // -1: not rooted
  const char* algo = nullptr;
  int32_t result = 0;           // weftResult_t
  int32_t recvPeer = -1;
  int32_t sendPeer = -1;
  int32_t track = -1;
};

// What the file says about its rank (otherData, the process name).
struct TraceHeader {
  int rank = 0;
  int nRanks = 0;
  std::string host;
  int pid = 0;
  std::string commId;
  int level = 1;
  uint64_t offsetNs = 0;        // added to every monotonic time
  uint64_t droppedEvents = 0;
  uint64_t eventCap = 0;
  // Names for the tids the events use: (tid, name).
  std::vector<std::pair<int64_t, std::string>> threads;
};

// `s` as a JSON string literal (quotes included): ", \ and control characters escaped, bytes
// that are not valid UTF-8 replaced by U+FFFD so the file always parses.
void appendJsonString(std::string* out, const char* s);
// The whole file: {"traceEvents":[metadata..., events...], "displayTimeUnit":"ns", "otherData":{...}},
// events sorted by start time (stable), so every thread's timestamps only grow.
std::string traceJson(const TraceHeader& header, const std::vector<TraceEvent>& events);
// WEFT_TRACE_FILE's pattern with %r, %h, %p (and %% for a '%') replaced; false with *error set
// for another '%' sequence.
bool expandTracePath(const std::string& pattern, int rank, const std::string& host, int pid, std::string* out,
                     std::string* error);

class Tracer final : public coll::StepTracer {
 public:
  // The communicator's tracer from WEFT_TRACE_FILE and WEFT_TRACE_LEVEL; null when the file is
  // not set, or (warned about) when its name is invalid or cannot be opened.
  static std::unique_ptr<Tracer> fromParams(int rank, int nRanks, const std::string& commId);
  Tracer(std::FILE* file, std::string path, TraceHeader header);
  ~Tracer() override;  // writes the file (once)
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  int level() const { return header_.level; }
  // The tid of the calling thread (calls).
  static int64_t threadTid();
  // Appends an event, or counts it dropped once the buffer is full.
  void add(const TraceEvent& e);
  void step(int track, coll::StepKind kind, int recvPeer, int sendPeer, size_t bytes, uint64_t startNs,
            uint64_t endNs) override;
  void wait(int track, int peer, bool receiving, uint64_t startNs, uint64_t endNs) override;
  // Writes the file now (at most once: later calls do nothing).
  void write();
  // Writes every live tracer's file (at process exit).
  static void writeAll();

 private:
  // The tid of the calling thread's executor track `track` (steps, waits).
  static int64_t trackTid(int track);
  std::mutex mutex_;
  std::FILE* file_;
  std::string path_;
  TraceHeader header_;
  std::vector<TraceEvent> events_;
  bool written_ = false;
};

// Times one host call on its tracer (a no-op without one): the event is added when it ends.
class TracedCall {
 public:
  explicit TracedCall(Tracer* tracer);
  ~TracedCall();
  TraceEvent& event() { return event_; }
  void setResult(int result) { event_.result = result; }

 private:
  Tracer* tracer_;
  TraceEvent event_;
};

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_TRACE_H_
