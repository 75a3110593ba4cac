// The host runtime: the device interface over plain memory, for host buffers and for machines
// without a GPU. Allocation is malloc (aligned like cudaMalloc, 256 bytes), copies are memmove,
// and streams and events are tokens whose work is done before the call returns, so code
// written against the interface runs, and is tested, unchanged on a CPU-only machine.
#include <cstdlib>
#include <cstring>
#include <new>

#include "base/os.h"
#include "device/device.h"

namespace weft {
namespace device {
namespace {

constexpr size_t kAlignment = 256;

struct HostStream {};
struct HostEvent {
  bool recorded = false;
  uint64_t atNs = 0;
};

HostEvent* hostEvent(Event e) { return reinterpret_cast<HostEvent*>(e); }

Status noDevices(const char* call, int device) {
  return WEFT_ERROR(weftInvalidArgument, "host runtime: %s(%d): there are no devices, only host memory", call, device);
}

Status nullPointer(const char* call, size_t bytes) {
  return WEFT_ERROR(weftInvalidArgument, "host runtime: %s(%s): null pointer", call, formatBytes(bytes).c_str());
}

class HostRuntime final : public Runtime {
 public:
  const char* name() const override { return "host"; }
  std::string description() const override { return "host memory, no devices"; }
  int deviceCount() const override { return 0; }
  Status deviceProps(int device, DeviceProps*) const override { return noDevices("deviceProps", device); }
  Status setDevice(int device) override { return noDevices("setDevice", device); }
  Status getDevice(int* device) const override {
    *device = -1;
    return Status::ok();
  }
  Status canAccessPeer(int device, int, bool*) const override { return noDevices("canAccessPeer", device); }
  Status enablePeerAccess(int peer) override { return noDevices("enablePeerAccess", peer); }

  Status allocDevice(size_t bytes, void** out) override { return allocate("allocDevice", bytes, out); }
  Status freeDevice(void* ptr) override {
    std::free(ptr);
    return Status::ok();
  }
  Status allocHost(size_t bytes, void** out) override { return allocate("allocHost", bytes, out); }
  Status freeHost(void* ptr) override {
    std::free(ptr);
    return Status::ok();
  }
  Status pointerInfo(const void* ptr, PointerInfo* out) const override {
    if (ptr == nullptr) return WEFT_ERROR(weftInvalidArgument, "host runtime: pointerInfo(null)");
    *out = PointerInfo{MemoryKind::kHost, -1};
    return Status::ok();
  }

  Status copy(void* dst, const void* src, size_t bytes, CopyKind) override {
    if (bytes == 0) return Status::ok();
    if (dst == nullptr || src == nullptr) return nullPointer("copy", bytes);
    std::memmove(dst, src, bytes);
    return Status::ok();
  }
  Status copyAsync(void* dst, const void* src, size_t bytes, CopyKind kind, Stream) override {
    return copy(dst, src, bytes, kind);
  }
  Status memset(void* dst, int value, size_t bytes) override {
    if (bytes == 0) return Status::ok();
    if (dst == nullptr) return nullPointer("memset", bytes);
    std::memset(dst, value, bytes);
    return Status::ok();
  }
  Status memsetAsync(void* dst, int value, size_t bytes, Stream) override { return memset(dst, value, bytes); }

  Status streamCreate(Stream* out) override {
    *out = reinterpret_cast<Stream>(new HostStream);
    return Status::ok();
  }
  Status streamDestroy(Stream stream) override {
    if (stream == nullptr) return WEFT_ERROR(weftInvalidArgument, "host runtime: streamDestroy(default stream)");
    delete reinterpret_cast<HostStream*>(stream);
    return Status::ok();
  }
  Status streamSynchronize(Stream) override { return Status::ok(); }
  Status streamQuery(Stream, bool* done) override {
    *done = true;
    return Status::ok();
  }

  Status eventCreate(Event* out) override {
    *out = reinterpret_cast<Event>(new HostEvent);
    return Status::ok();
  }
  Status eventDestroy(Event event) override {
    if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "host runtime: eventDestroy(null)");
    delete hostEvent(event);
    return Status::ok();
  }
  Status eventRecord(Event event, Stream) override {
    if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "host runtime: eventRecord(null)");
    *hostEvent(event) = HostEvent{true, nowNs()};
    return Status::ok();
  }
  Status eventSynchronize(Event event) override {
    if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "host runtime: eventSynchronize(null)");
    return Status::ok();
  }
  Status eventQuery(Event event, bool* done) override {
    if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "host runtime: eventQuery(null)");
    *done = true;
    return Status::ok();
  }
  Status eventElapsedMs(Event start, Event end, float* ms) override {
    if (start == nullptr || end == nullptr) {
      return WEFT_ERROR(weftInvalidArgument, "host runtime: eventElapsedMs: null event");
    }
    if (!hostEvent(start)->recorded || !hostEvent(end)->recorded) {
      return WEFT_ERROR(weftInvalidUsage, "host runtime: eventElapsedMs: %s event was never recorded",
                        hostEvent(start)->recorded ? "the end" : "the start");
    }
    *ms = static_cast<float>(static_cast<double>(static_cast<int64_t>(hostEvent(end)->atNs - hostEvent(start)->atNs)) /
                             1e6);
    return Status::ok();
  }

  Status ipcExport(void*, IpcHandle*) override { return noIpc("ipcExport"); }
  Status ipcImport(const IpcHandle&, void**) override { return noIpc("ipcImport"); }
  Status ipcClose(void*) override { return noIpc("ipcClose"); }

  Status launchReduceCopy(const ReduceCopyArgs& args, Stream) override {
    WEFT_TRY(checkReduceCopyArgs(args));
    return WEFT_ERROR(weftInvalidUsage,
                      "host runtime: launchReduceCopy: there are no kernels for host memory; the host executor "
                      "reduces host buffers on CPU threads");
  }

  // The lane program on host threads (collectives/device/lanes_host.cc registers the runner). It
  // runs to its end before the call returns; like a kernel's, the lanes' failures stay in
  // *launch.error and the launch itself succeeds.
  Status launchLanes(const LaneLaunch& launch, Stream) override {
    WEFT_TRY(checkLaneLaunch(launch));
    HostLaneRunner run = hostLaneRunner();
    if (run == nullptr) {
      return WEFT_ERROR(weftInternalError,
                        "host runtime: launchLanes: the host lane runner is not registered (link libweft's "
                        "collectives)");
    }
    (void)run(launch);
    return Status::ok();
  }
  // Streams complete their work at once, so there is never anything to wait for.
  Status streamWaitEvent(Stream, Event event) override {
    if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "host runtime: streamWaitEvent(null event)");
    return Status::ok();
  }
  // Host memory is already reachable by everything this runtime runs.
  Status hostRegister(void* ptr, size_t bytes) override {
    if (ptr == nullptr && bytes > 0) return nullPointer("hostRegister", bytes);
    return Status::ok();
  }
  Status hostUnregister(void*) override { return Status::ok(); }

  // Work runs before the call returns, so no stream is ever being recorded.
  Status streamIsCapturing(Stream, bool* capturing) override {
    *capturing = false;
    return Status::ok();
  }
  Status graphCaptureBegin(Stream) override { return noGraphs("graphCaptureBegin"); }
  Status graphCaptureEnd(Stream, Graph* out) override {
    *out = nullptr;
    return noGraphs("graphCaptureEnd");
  }
  Status graphLaunch(Graph, Stream) override { return noGraphs("graphLaunch"); }
  Status graphDestroy(Graph graph) override { return graph == nullptr ? Status::ok() : noGraphs("graphDestroy"); }

 private:
  static Status allocate(const char* call, size_t bytes, void** out) {
    *out = nullptr;
    if (bytes == 0) return Status::ok();
    int err = posix_memalign(out, kAlignment, bytes);
    if (err != 0) {
      *out = nullptr;
      return WEFT_ERROR(weftSystemError, "host runtime: %s(%s): %s", call, formatBytes(bytes).c_str(),
                        errnoText(err).c_str());
    }
    return Status::ok();
  }
  static Status noGraphs(const char* call) {
    return WEFT_ERROR(weftInvalidUsage,
                      "host runtime: %s: graphs need a GPU runtime (libweft-cuda.so or libweft-hip.so); the host "
                      "runtime runs work before the call returns, so there is nothing to capture",
                      call);
  }
  static Status noIpc(const char* call) {
    return WEFT_ERROR(weftInvalidUsage,
                      "host runtime: %s: IPC handles need a GPU runtime (libweft-cuda.so or libweft-hip.so); host "
                      "buffers reach other processes through the shared-memory transport",
                      call);
  }
};

}  // namespace

Runtime& hostRuntime() {
  static HostRuntime runtime;
  return runtime;
}

}  // namespace device
}  // namespace weft
