#include "device/host_memory_runtime.h"

#include <cstring>

#include "base/os.h"

namespace weft {
namespace device {
namespace {

struct TokenStream {};
struct TokenEvent {
  bool recorded = false;
  uint64_t atNs = 0;
};

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

Status HostMemoryRuntime::copy(void* dst, const void* src, size_t bytes, CopyKind) {
  if (bytes == 0) return Status::ok();
  if (dst == nullptr || src == nullptr) return nullPointer("copy", bytes);
  std::memmove(dst, src, bytes);
  return Status::ok();
}

Status HostMemoryRuntime::copyAsync(void* dst, const void* src, size_t bytes, CopyKind kind, Stream) {
  return copy(dst, src, bytes, kind);
}

Status HostMemoryRuntime::memset(void* dst, int value, size_t bytes) {
  if (bytes == 0) return Status::ok();
  if (dst == nullptr) return nullPointer("memset", bytes);
  std::memset(dst, value, bytes);
  return Status::ok();
}

Status HostMemoryRuntime::memsetAsync(void* dst, int value, size_t bytes, Stream) { return memset(dst, value, bytes); }

Status HostMemoryRuntime::streamCreate(Stream* out) {
  *out = reinterpret_cast<Stream>(new TokenStream);
  return Status::ok();
}

Status HostMemoryRuntime::streamDestroy(Stream stream) {
  if (stream == nullptr || isDefaultStreamHandle(stream)) {
    return WEFT_ERROR(weftInvalidArgument, "%s: streamDestroy(default stream): the default stream is not destroyed",
                      label_);
  }
  delete reinterpret_cast<TokenStream*>(stream);
  return Status::ok();
}

Status HostMemoryRuntime::streamQuery(Stream, bool* done) {
  *done = true;
  return Status::ok();
}

Status HostMemoryRuntime::streamWaitEvent(Stream, Event event) {
  if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s: streamWaitEvent(null event)", label_);
  return Status::ok();
}

Status HostMemoryRuntime::eventCreate(Event* out) {
  *out = reinterpret_cast<Event>(new TokenEvent);
  return Status::ok();
}

Status HostMemoryRuntime::eventDestroy(Event event) {
  if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s: eventDestroy(null)", label_);
  delete tokenEvent(event);
  return Status::ok();
}

Status HostMemoryRuntime::eventRecord(Event event, Stream) {
  if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s: eventRecord(null)", label_);
  *tokenEvent(event) = TokenEvent{true, nowNs()};
  return Status::ok();
}

Status HostMemoryRuntime::eventSynchronize(Event event) {
  if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s: eventSynchronize(null)", label_);
  return Status::ok();
}

Status HostMemoryRuntime::eventQuery(Event event, bool* done) {
  if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s: eventQuery(null)", label_);
  *done = true;
  return Status::ok();
}

Status HostMemoryRuntime::eventElapsedMs(Event start, Event end, float* ms) {
  if (start == nullptr || end == nullptr) {
    return WEFT_ERROR(weftInvalidArgument, "%s: eventElapsedMs: null event", label_);
  }
  if (!tokenEvent(start)->recorded || !tokenEvent(end)->recorded) {
    return WEFT_ERROR(weftInvalidUsage, "%s: eventElapsedMs: %s event was never recorded", label_,
                      tokenEvent(start)->recorded ? "the end" : "the start");
  }
  const int64_t ns = static_cast<int64_t>(tokenEvent(end)->atNs - tokenEvent(start)->atNs);
  *ms = static_cast<float>(static_cast<double>(ns) / 1e6);
  return Status::ok();
}

Status HostMemoryRuntime::launchLanes(const LaneLaunch& launch, Stream) {
  WEFT_TRY(checkLaneLaunch(launch));
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
