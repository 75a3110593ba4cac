#include "device/host_memory_runtime.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/os.h"

namespace weft {
namespace device {
namespace {

struct TokenStream {};
struct TokenEvent {
  bool timing = false;  // EventKind::kTiming
  bool recorded = false;
  uint64_t atNs = 0;
  Stream on = nullptr;  // where it was recorded (null: the legacy default stream)
};

// Queued work is keyed by stream; every handle of the legacy default stream is null.
Stream queueKey(Stream s) { return isDefaultStreamHandle(s) ? nullptr : s; }

struct QueuedMemset {
  Stream stream;  // null: the legacy default stream
  void* dst;
  int value;
  size_t bytes;
};

// The process's queued memsets (defersMemsets()), in issue order; never destroyed, as lanes and
// static destructors may still free memory late.
struct MemsetQueue {
  std::mutex mutex;
  std::vector<QueuedMemset> items;
};
MemsetQueue& memsetQueue() {
  static MemsetQueue* const q = new MemsetQueue;
  return *q;
}

TokenEvent* tokenEvent(Event e) { return reinterpret_cast<TokenEvent*>(e); }

}  // namespace

Status HostMemoryRuntime::nullPointer(const char* call, size_t bytes) const {
  return WEFT_ERROR(weftInvalidArgument, "%s: %s(%s): null pointer", label_, call, formatBytes(bytes).c_str());
}

Status HostMemoryRuntime::noGraphs(const char* call) const {
  return WEFT_ERROR(weftInvalidUsage,
                    "%s: %s: graphs need a GPU runtime (libweft-cuda.so or libweft-hip.so); this runtime runs work "
                    "before the call returns, so there is nothing to capture",
                    label_, call);
}

void HostMemoryRuntime::drain(Stream stream) {
  const Stream key = queueKey(stream);
  MemsetQueue& q = memsetQueue();
  std::lock_guard<std::mutex> lock(q.mutex);
  size_t kept = 0;
  for (const QueuedMemset& m : q.items) {
    if (m.stream == key) {
      std::memset(m.dst, m.value, m.bytes);
    } else {
      q.items[kept++] = m;
    }
  }
  q.items.resize(kept);
}

void HostMemoryRuntime::drainAll() {
  MemsetQueue& q = memsetQueue();
  std::lock_guard<std::mutex> lock(q.mutex);
  for (const QueuedMemset& m : q.items) std::memset(m.dst, m.value, m.bytes);
  q.items.clear();
}

Status HostMemoryRuntime::copy(void* dst, const void* src, size_t bytes, CopyKind) {
  drain(nullptr);  // a synchronous copy follows the legacy stream's work
  if (bytes == 0) return Status::ok();
  if (dst == nullptr || src == nullptr) return nullPointer("copy", bytes);
  std::memmove(dst, src, bytes);
  return Status::ok();
}

Status HostMemoryRuntime::copyAsync(void* dst, const void* src, size_t bytes, CopyKind, Stream stream) {
  drain(stream);
  if (bytes == 0) return Status::ok();
  if (dst == nullptr || src == nullptr) return nullPointer("copyAsync", bytes);
  std::memmove(dst, src, bytes);
  return Status::ok();
}

Status HostMemoryRuntime::memset(void* dst, int value, size_t bytes) {
  return memsetAsync(dst, value, bytes, nullptr);
}

Status HostMemoryRuntime::memsetAsync(void* dst, int value, size_t bytes, Stream stream) {
  if (bytes == 0) return Status::ok();
  if (dst == nullptr) return nullPointer("memset", bytes);
  if (defersMemsets()) {
    MemsetQueue& q = memsetQueue();
    std::lock_guard<std::mutex> lock(q.mutex);
    q.items.push_back(QueuedMemset{queueKey(stream), dst, value, bytes});
  } else {
    std::memset(dst, value, bytes);
  }
  return Status::ok();
}

Status HostMemoryRuntime::streamCreate(Stream* out) {
  *out = reinterpret_cast<Stream>(new TokenStream);
  return Status::ok();
}

Status HostMemoryRuntime::streamDestroy(Stream stream) {
  if (stream == nullptr || isDefaultStreamHandle(stream)) {
    return WEFT_ERROR(weftInvalidArgument, "%s: streamDestroy(default stream): the default stream is not destroyed",
                      label_);
  }
  drain(stream);
  delete reinterpret_cast<TokenStream*>(stream);
  return Status::ok();
}

Status HostMemoryRuntime::streamSynchronize(Stream stream) {
  drain(stream);
  return Status::ok();
}

Status HostMemoryRuntime::streamQuery(Stream stream, bool* done) {
  drain(stream);  // the device gets to it eventually; a query that polls must see it end
  *done = true;
  return Status::ok();
}

Status HostMemoryRuntime::streamWaitEvent(Stream, Event event) {
  if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s: streamWaitEvent(null event)", label_);
  drain(tokenEvent(event)->on);  // the waiting stream's later work, done at once here, follows it
  return Status::ok();
}

namespace {
std::atomic<uint64_t> gTimingEvents{0};
}  // namespace

Status HostMemoryRuntime::eventCreate(Event* out, EventKind kind) {
  auto* e = new TokenEvent;
  e->timing = kind == EventKind::kTiming;
  if (e->timing) gTimingEvents.fetch_add(1, std::memory_order_relaxed);
  *out = reinterpret_cast<Event>(e);
  return Status::ok();
}

uint64_t HostMemoryRuntime::timingEventsCreated() { return gTimingEvents.load(std::memory_order_relaxed); }

Status HostMemoryRuntime::eventDestroy(Event event) {
  if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s: eventDestroy(null)", label_);
  delete tokenEvent(event);
  return Status::ok();
}

Status HostMemoryRuntime::eventRecord(Event event, Stream stream) {
  if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s: eventRecord(null)", label_);
  TokenEvent* e = tokenEvent(event);
  *e = TokenEvent{e->timing, true, nowNs(), queueKey(stream)};
  return Status::ok();
}

Status HostMemoryRuntime::eventSynchronize(Event event) {
  if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s: eventSynchronize(null)", label_);
  drain(tokenEvent(event)->on);
  return Status::ok();
}

Status HostMemoryRuntime::eventQuery(Event event, bool* done) {
  if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s: eventQuery(null)", label_);
  drain(tokenEvent(event)->on);
  *done = true;
  return Status::ok();
}

Status HostMemoryRuntime::eventElapsedMs(Event start, Event end, float* ms) {
  if (start == nullptr || end == nullptr) {
    return WEFT_ERROR(weftInvalidArgument, "%s: eventElapsedMs: null event", label_);
  }
  // As CUDA and HIP refuse an event made with cudaEventDisableTiming.
  if (!tokenEvent(start)->timing || !tokenEvent(end)->timing) {
    return WEFT_ERROR(weftInvalidUsage, "%s: eventElapsedMs: the %s event was created without timing; create it with "
                      "EventKind::kTiming", label_, tokenEvent(start)->timing ? "end" : "start");
  }
  if (!tokenEvent(start)->recorded || !tokenEvent(end)->recorded) {
    return WEFT_ERROR(weftInvalidUsage, "%s: eventElapsedMs: %s event was never recorded", label_,
                      tokenEvent(start)->recorded ? "the end" : "the start");
  }
  const int64_t ns = static_cast<int64_t>(tokenEvent(end)->atNs - tokenEvent(start)->atNs);
  *ms = static_cast<float>(static_cast<double>(ns) / 1e6);
  return Status::ok();
}

Status HostMemoryRuntime::launchLanes(const LaneLaunch& launch, Stream stream) {
  WEFT_TRY(checkLaneLaunch(launch));
  WEFT_TRY(checkLaneMemory(launch));
  drain(stream);
  HostLaneRunner run = hostLaneRunner();
  if (run == nullptr) {
    return WEFT_ERROR(weftInternalError,
                      "%s: launchLanes: the host lane runner is not registered (link libweft's collectives)", label_);
  }
  (void)run(launch, blockSlots());
  return Status::ok();
}

Status HostMemoryRuntime::streamIsCapturing(Stream, bool* capturing) {
  *capturing = false;
  return Status::ok();
}

Status HostMemoryRuntime::graphCaptureBegin(Stream) { return noGraphs("graphCaptureBegin"); }

Status HostMemoryRuntime::graphCaptureEnd(Stream, Graph* out) {
  *out = nullptr;
  return noGraphs("graphCaptureEnd");
}

Status HostMemoryRuntime::graphLaunch(Graph, Stream) { return noGraphs("graphLaunch"); }

Status HostMemoryRuntime::graphDestroy(Graph graph) {
  return graph == nullptr ? Status::ok() : noGraphs("graphDestroy");
}

}  // namespace device
}  // namespace weft
