// The GPU runtime (gpu_runtime.h): the device interface (device.h) over the CUDA or the HIP
// runtime, written once against gpu_api.h. nvcc builds it into libweft-cuda.so and hipcc into
// libweft-hip.so, with gpu_call.cu and gpu_module_entry.cu and the kernels of
// collectives/device/*.cu beside it; libweft.so loads them at run time (gpu_loader.cc)
// through the module's one entry point (gpu_module_entry.cu).
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "device/device.h"
#include "device/gpu_api.h"
#include "device/gpu_call.h"
#include "device/gpu_runtime.h"
#include "device/own_allocations.h"

namespace weft {
namespace device {
namespace {

class GpuRuntime final : public Runtime {
 public:
  using DeviceLimits = GpuDeviceLimits;

  GpuRuntime(std::vector<DeviceLimits> devices, std::string description)
      : devices_(std::move(devices)), description_(std::move(description)) {}

  const char* name() const override { return WEFT_GPU_BACKEND_NAME; }
  std::string description() const override { return description_; }
  int deviceCount() const override { return static_cast<int>(devices_.size()); }

  Status deviceProps(int device, DeviceProps* out) const override {
    GpuDeviceProp p;
    WEFT_GPU_TRY(GetDeviceProperties, (&p, device), "device %d", device);
    char bus[64] = "";
    WEFT_GPU_TRY(DeviceGetPCIBusId, (bus, sizeof(bus), device), "device %d", device);
    out->name = p.name;
    out->arch = gpuArchName(p);
    out->pciBusId = bus;
    out->uuid = gpuUuid(p, device);
    out->warpSize = p.warpSize;
    out->multiProcessors = p.multiProcessorCount;
    out->laneBlocksPerUnit = laneOccupancy(device);
    out->totalMemoryBytes = p.totalGlobalMem;
    return Status::ok();
  }
  // The lane kernels' occupancy on `device` when it is the current one (asking about another
  // would create a context there); 0, "not known", otherwise or when the query fails.
  int laneOccupancy(int device) const {
#if WEFT_HAVE_KERNELS
    int current = -1;
    if (WEFT_GPU(GetDevice)(&current) != kGpuSuccess || current != device || !setLaunchLimits().isOk()) {
      (void)WEFT_GPU(GetLastError)();
      return 0;
    }
    int blocks = 0;
    if (weftKernelLaneOccupancy(0, &blocks) != 0) {
      (void)WEFT_GPU(GetLastError)();
      return 0;
    }
    return blocks;
#else
    (void)device;
    return 0;
#endif
  }
  Status setDevice(int device) override {
    WEFT_GPU_TRY(SetDevice, (device), "%d", device);
    return Status::ok();
  }
  Status getDevice(int* device) const override {
    WEFT_GPU_TRY(GetDevice, (device), "%s", "");
    return Status::ok();
  }
  Status canAccessPeer(int device, int peer, bool* out) const override {
    int can = 0;
    WEFT_GPU_TRY(DeviceCanAccessPeer, (&can, device, peer), "device %d, peer %d", device, peer);
    *out = can != 0;
    return Status::ok();
  }
  Status enablePeerAccess(int peer) override {
    GpuError err = WEFT_GPU(DeviceEnablePeerAccess)(peer, 0);
    if (err == WEFT_GPU(ErrorPeerAccessAlreadyEnabled)) {
      (void)WEFT_GPU(GetLastError)();
      return Status::ok();
    }
    if (err != kGpuSuccess) {
      return gpuFailure(err, WEFT_GPU_NAME(DeviceEnablePeerAccess), __FILE__, __LINE__, "peer %d", peer);
    }
    return Status::ok();
  }

  Status allocDevice(size_t bytes, void** out) override {
    *out = nullptr;
    if (bytes == 0) return Status::ok();
    WEFT_GPU_TRY(Malloc, (out, bytes), "%s", bytesText(bytes).c_str());
    ownDevice_.add(*out, bytes);
    return Status::ok();
  }
  Status freeDevice(void* ptr) override {
    if (ptr != nullptr) ownDevice_.remove(ptr);
    WEFT_GPU_TRY(Free, (ptr), "%p", ptr);
    return Status::ok();
  }
  Status allocHost(size_t bytes, void** out) override {
    *out = nullptr;
    if (bytes == 0) return Status::ok();
    GpuError err = gpuHostAlloc(out, bytes);
    if (err != kGpuSuccess) {
      return gpuFailure(err, kGpuHostAllocName, __FILE__, __LINE__, "%s", bytesText(bytes).c_str());
    }
    ownPinned_.add(*out, bytes);
    return Status::ok();
  }
  Status allocDeviceShared(size_t bytes, void** out) override {
    *out = nullptr;
    if (bytes == 0) return Status::ok();
    GpuError err = gpuDeviceAllocShared(out, bytes);
    if (err != kGpuSuccess) {
      return gpuFailure(err, kGpuSharedDeviceAllocName, __FILE__, __LINE__, "%s", bytesText(bytes).c_str());
    }
    return Status::ok();
  }
  Status allocHostShared(size_t bytes, void** out) override {
    *out = nullptr;
    if (bytes == 0) return Status::ok();
    GpuError err = gpuHostAllocShared(out, bytes);
    if (err != kGpuSuccess) {
      return gpuFailure(err, kGpuSharedHostAllocName, __FILE__, __LINE__, "%s", bytesText(bytes).c_str());
    }
    return Status::ok();
  }
  Status freeHost(void* ptr) override {
    if (ptr == nullptr) return Status::ok();
    ownPinned_.remove(ptr);
    GpuError err = gpuHostFree(ptr);
    if (err != kGpuSuccess) return gpuFailure(err, kGpuHostFreeName, __FILE__, __LINE__, "%p", ptr);
    return Status::ok();
  }
  Status pointerInfo(const void* ptr, PointerInfo* out) const override {
    if (ptr == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s runtime: pointerInfo(null)", name());
    GpuPointerAttributes a;
    std::memset(&a, 0, sizeof(a));
    GpuError err = WEFT_GPU(PointerGetAttributes)(&a, ptr);
    if (err != kGpuSuccess && gpuIsUnregisteredHostError(err)) {
      (void)WEFT_GPU(GetLastError)();
      *out = PointerInfo{MemoryKind::kHost, -1};
      return Status::ok();
    }
    if (err != kGpuSuccess) return gpuFailure(err, WEFT_GPU_NAME(PointerGetAttributes), __FILE__, __LINE__, "%p", ptr);
    MemoryKind kind = gpuMemoryKind(a);
    bool onDevice = kind == MemoryKind::kDevice || kind == MemoryKind::kManaged;
    *out = PointerInfo{kind, onDevice ? a.device : -1};
    return Status::ok();
  }

  Status copy(void* dst, const void* src, size_t bytes, CopyKind kind) override {
    if (bytes == 0) return Status::ok();
    if (dst == nullptr || src == nullptr) return nullPointer("copy", bytes);
    WEFT_GPU_TRY(Memcpy, (dst, src, bytes, gpuCopyKind(kind)), "%p <- %p, %s", dst, src, bytesText(bytes).c_str());
    return Status::ok();
  }
  Status copyAsync(void* dst, const void* src, size_t bytes, CopyKind kind, Stream stream) override {
    if (bytes == 0) return Status::ok();
    if (dst == nullptr || src == nullptr) return nullPointer("copyAsync", bytes);
    WEFT_GPU_TRY(MemcpyAsync, (dst, src, bytes, gpuCopyKind(kind), gpuStream(stream)), "%p <- %p, %s, stream %p", dst,
                 src, bytesText(bytes).c_str(), static_cast<void*>(stream));
    return Status::ok();
  }
  Status memset(void* dst, int value, size_t bytes) override {
    if (bytes == 0) return Status::ok();
    if (dst == nullptr) return nullPointer("memset", bytes);
    WEFT_GPU_TRY(Memset, (dst, value, bytes), "%p, %d, %s", dst, value, bytesText(bytes).c_str());
    return Status::ok();
  }
  Status memsetAsync(void* dst, int value, size_t bytes, Stream stream) override {
    if (bytes == 0) return Status::ok();
    if (dst == nullptr) return nullPointer("memsetAsync", bytes);
    WEFT_GPU_TRY(MemsetAsync, (dst, value, bytes, gpuStream(stream)), "%p, %d, %s, stream %p", dst, value,
                 bytesText(bytes).c_str(), static_cast<void*>(stream));
    return Status::ok();
  }

  Status streamCreate(Stream* out) override {
    GpuStream s = nullptr;
    WEFT_GPU_TRY(StreamCreateWithFlags, (&s, WEFT_GPU(StreamNonBlocking)), "non-blocking");
    *out = reinterpret_cast<Stream>(s);
    return Status::ok();
  }
  Status streamDestroy(Stream stream) override {
    if (stream == nullptr || isDefaultStreamHandle(stream)) {
      return WEFT_ERROR(weftInvalidArgument, "%s runtime: streamDestroy(default stream): it is not destroyed", name());
    }
    WEFT_GPU_TRY(StreamDestroy, (gpuStream(stream)), "%p", static_cast<void*>(stream));
    return Status::ok();
  }
  Status streamSynchronize(Stream stream) override {
    WEFT_GPU_TRY(StreamSynchronize, (gpuStream(stream)), "%p", static_cast<void*>(stream));
    return Status::ok();
  }
  Status streamQuery(Stream stream, bool* done) override {
    GpuError err = WEFT_GPU(StreamQuery)(gpuStream(stream));
    return readiness(err, WEFT_GPU_NAME(StreamQuery), static_cast<void*>(stream), done);
  }

  Status eventCreate(Event* out, EventKind kind) override {
    GpuEvent e = nullptr;
    if (kind == EventKind::kTiming) {
      WEFT_GPU_TRY(EventCreateWithFlags, (&e, WEFT_GPU(EventDefault)), "timing");
    } else {
      WEFT_GPU_TRY(EventCreateWithFlags, (&e, WEFT_GPU(EventDisableTiming)), "without timing");
    }
    *out = reinterpret_cast<Event>(e);
    return Status::ok();
  }
  Status eventDestroy(Event event) override {
    if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s runtime: eventDestroy(null)", name());
    WEFT_GPU_TRY(EventDestroy, (gpuEvent(event)), "%p", static_cast<void*>(event));
    return Status::ok();
  }
  Status eventRecord(Event event, Stream stream) override {
    if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s runtime: eventRecord(null)", name());
    WEFT_GPU_TRY(EventRecord, (gpuEvent(event), gpuStream(stream)), "%p, stream %p", static_cast<void*>(event),
                 static_cast<void*>(stream));
    return Status::ok();
  }
  Status eventSynchronize(Event event) override {
    if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s runtime: eventSynchronize(null)", name());
    WEFT_GPU_TRY(EventSynchronize, (gpuEvent(event)), "%p", static_cast<void*>(event));
    return Status::ok();
  }
  Status eventQuery(Event event, bool* done) override {
    if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s runtime: eventQuery(null)", name());
    GpuError err = WEFT_GPU(EventQuery)(gpuEvent(event));
    return readiness(err, WEFT_GPU_NAME(EventQuery), static_cast<void*>(event), done);
  }
  Status eventElapsedMs(Event start, Event end, float* ms) override {
    if (start == nullptr || end == nullptr) {
      return WEFT_ERROR(weftInvalidArgument, "%s runtime: eventElapsedMs: null event", name());
    }
    WEFT_GPU_TRY(EventElapsedTime, (ms, gpuEvent(start), gpuEvent(end)), "%p, %p", static_cast<void*>(start),
                 static_cast<void*>(end));
    return Status::ok();
  }

  Status ipcExport(void* ptr, IpcHandle* out) override {
    static_assert(sizeof(GpuIpcMemHandle) == sizeof(IpcHandle), "the runtime's IPC handle is 64 bytes");
    GpuIpcMemHandle h;
    WEFT_GPU_TRY(IpcGetMemHandle, (&h, ptr), "%p", ptr);
    std::memcpy(out->bytes, &h, sizeof(h));
    return Status::ok();
  }
  Status ipcImport(const IpcHandle& handle, void** out) override {
    GpuIpcMemHandle h;
    std::memcpy(&h, handle.bytes, sizeof(h));
    WEFT_GPU_TRY(IpcOpenMemHandle, (out, h, WEFT_GPU(IpcMemLazyEnablePeerAccess)), "handle from another process");
    return Status::ok();
  }
  Status ipcClose(void* ptr) override {
    WEFT_GPU_TRY(IpcCloseMemHandle, (ptr), "%p", ptr);
    return Status::ok();
  }

  Status launchReduceCopy(const ReduceCopyArgs& args, Stream stream) override {
    WEFT_TRY(checkReduceCopyArgs(args));
    if (args.count == 0) return Status::ok();
    for (int i = 0; i < args.nSrcs; ++i) WEFT_TRY(checkReachable(args.srcs[i], "srcs", i));
    for (int j = 0; j < args.nDsts; ++j) WEFT_TRY(checkReachable(args.dsts[j], "dsts", j));
#if WEFT_HAVE_KERNELS
    WEFT_TRY(setLaunchLimits());
    const int rc = weftKernelReduceCopy(&args, reinterpret_cast<void*>(gpuStream(stream)));
    if (rc != 0) {
      return gpuFailure(static_cast<GpuError>(rc), "weftKernelReduceCopy", __FILE__, __LINE__,
                        "type %d, op %d, %d srcs, %d dsts, %llu elements, stream %p", static_cast<int>(args.type),
                        static_cast<int>(args.op), args.nSrcs, args.nDsts, static_cast<unsigned long long>(args.count),
                        static_cast<void*>(stream));
    }
    return Status::ok();
#else
    (void)stream;
    return WEFT_ERROR(
        weftInternalError,
        "%s runtime: launchReduceCopy: this libweft-%s.so was built without collectives/device/kernels.cu", name(),
        name());
#endif
  }

  Status launchLanes(const LaneLaunch& launch, Stream stream) override {
    // checkLaneLaunch reads the lane table on the host (hostLanes, else lanes), so that must be
    // memory the host reads. The tables the library made (allocHost, allocDevice) are known
    // without asking the driver.
    const LaneDesc* checked = launch.hostLanes != nullptr ? launch.hostLanes : launch.lanes;
    if (checked != nullptr && !ownPinned_.contains(checked)) {
      PointerInfo lanes;
      WEFT_TRY(pointerInfo(checked, &lanes));
      if (lanes.kind == MemoryKind::kDevice) {
        return WEFT_ERROR(weftInvalidArgument,
                          "lane launch: the lane table %p is in device memory, which the runtime cannot check before "
                          "the launch; give a copy in pinned host memory (allocHost) as hostLanes",
                          static_cast<const void*>(checked));
      }
      if (launch.hostLanes == nullptr) WEFT_TRY(checkReachable(launch.lanes, lanes, "lane launch", "lanes"));
    }
    WEFT_TRY(checkLaneLaunch(launch));
    if (launch.hostLanes != nullptr) WEFT_TRY(checkReachable(launch.lanes, "lane launch", "lanes"));
    WEFT_TRY(checkReachable(launch.steps, "lane launch", "steps"));
    if (launch.nFifos > 0) WEFT_TRY(checkReachable(launch.fifos, "lane launch", "fifos"));
    WEFT_TRY(checkReachable(launch.error, "lane launch", "error"));
    if (launch.abortFlag != nullptr) WEFT_TRY(checkReachable(launch.abortFlag, "lane launch", "abortFlag"));
#if WEFT_HAVE_KERNELS
    WEFT_TRY(setLaunchLimits());
    const int rc = weftKernelLaunchLanes(&launch, reinterpret_cast<void*>(gpuStream(stream)));
    if (rc != 0) {
      return gpuFailure(static_cast<GpuError>(rc), "weftKernelLaunchLanes", __FILE__, __LINE__,
                        "type %d, op %d, %d lanes, %d threads per lane, stream %p", static_cast<int>(launch.type),
                        static_cast<int>(launch.op), launch.nLanes, launch.threadsPerLane, static_cast<void*>(stream));
    }
    return Status::ok();
#else
    (void)stream;
    return WEFT_ERROR(weftInternalError,
                      "%s runtime: launchLanes: this libweft-%s.so was built without collectives/device/kernels.cu",
                      name(), name());
#endif
  }

  Status streamWaitEvent(Stream stream, Event event) override {
    if (event == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s runtime: streamWaitEvent(null event)", name());
    WEFT_GPU_TRY(StreamWaitEvent, (gpuStream(stream), gpuEvent(event), 0), "stream %p, event %p",
                 static_cast<void*>(stream), static_cast<void*>(event));
    return Status::ok();
  }

  Status hostRegister(void* ptr, size_t bytes) override {
    if (bytes == 0) return Status::ok();
    if (ptr == nullptr) return nullPointer("hostRegister", bytes);
    WEFT_GPU_TRY(HostRegister, (ptr, bytes, WEFT_GPU(HostRegisterPortable) | WEFT_GPU(HostRegisterMapped)), "%p, %s",
                 ptr, bytesText(bytes).c_str());
    // Callers hand the same pointer to kernels: the devices must see the memory where the host does.
    void* onDevice = nullptr;
    GpuError err = WEFT_GPU(HostGetDevicePointer)(&onDevice, ptr, 0);
    if (err != kGpuSuccess || onDevice != ptr) {
      Status why = err != kGpuSuccess
                       ? gpuFailure(err, WEFT_GPU_NAME(HostGetDevicePointer), __FILE__, __LINE__, "%p", ptr)
                       : WEFT_ERROR(weftUnhandledDeviceError,
                                    "%s runtime: hostRegister(%p, %s): the devices see the memory at %p, not at the "
                                    "host's address",
                                    name(), ptr, bytesText(bytes).c_str(), onDevice);
      (void)WEFT_GPU(HostUnregister)(ptr);
      (void)WEFT_GPU(GetLastError)();
      return why;
    }
    return Status::ok();
  }
  Status hostUnregister(void* ptr) override {
    if (ptr == nullptr) return Status::ok();
    WEFT_GPU_TRY(HostUnregister, (ptr), "%p", ptr);
    return Status::ok();
  }

  Status streamIsCapturing(Stream stream, bool* capturing) override {
    WEFT_GPU(StreamCaptureStatus) status = WEFT_GPU(StreamCaptureStatusNone);
    WEFT_GPU_TRY(StreamIsCapturing, (gpuStream(stream), &status), "stream %p", static_cast<void*>(stream));
    // An invalidated capture still records (and refuses) until it is ended.
    *capturing = status != WEFT_GPU(StreamCaptureStatusNone);
    return Status::ok();
  }
  Status graphCaptureBegin(Stream stream) override {
    if (stream == nullptr) {
      return WEFT_ERROR(weftInvalidArgument,
                        "%s runtime: graphCaptureBegin: the default stream cannot be captured; capture a stream from "
                        "streamCreate",
                        name());
    }
    // Global mode, PyTorch's default (torch.cuda.graph(capture_error_mode="global")): while the
    // capture lasts, a call capture forbids fails in every thread, not only in this one. Relaxed
    // or thread-local mode would let our own tests pass where a PyTorch capture then fails.
    WEFT_GPU_TRY(StreamBeginCapture, (gpuStream(stream), WEFT_GPU(StreamCaptureModeGlobal)), "stream %p, global mode",
                 static_cast<void*>(stream));
    return Status::ok();
  }
  Status graphCaptureEnd(Stream stream, Graph* out) override {
    *out = nullptr;
    GpuGraph g;
    WEFT_GPU_TRY(StreamEndCapture, (gpuStream(stream), &g.graph), "stream %p", static_cast<void*>(stream));
    GpuError err = WEFT_GPU(GraphInstantiateWithFlags)(&g.exec, g.graph, 0);
    if (err != kGpuSuccess) {
      Status why = gpuFailure(err, WEFT_GPU_NAME(GraphInstantiateWithFlags), __FILE__, __LINE__, "graph of stream %p",
                              static_cast<void*>(stream));
      (void)WEFT_GPU(GraphDestroy)(g.graph);
      return why;
    }
    GpuGraph* made = new (std::nothrow) GpuGraph(g);
    if (made == nullptr) {
      (void)WEFT_GPU(GraphExecDestroy)(g.exec);
      (void)WEFT_GPU(GraphDestroy)(g.graph);
      return WEFT_ERROR(weftSystemError, "%s runtime: graphCaptureEnd: out of host memory", name());
    }
    *out = reinterpret_cast<Graph>(made);
    return Status::ok();
  }
  Status graphLaunch(Graph graph, Stream stream) override {
    if (graph == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s runtime: graphLaunch(null graph)", name());
    WEFT_GPU_TRY(GraphLaunch, (gpuGraph(graph)->exec, gpuStream(stream)), "graph %p, stream %p",
                 static_cast<void*>(graph), static_cast<void*>(stream));
    return Status::ok();
  }
  Status graphDestroy(Graph graph) override {
    if (graph == nullptr) return Status::ok();
    GpuGraph* g = gpuGraph(graph);
    const GpuError execErr = WEFT_GPU(GraphExecDestroy)(g->exec);
    const GpuError graphErr = WEFT_GPU(GraphDestroy)(g->graph);
    Status s = execErr != kGpuSuccess    ? gpuFailure(execErr, WEFT_GPU_NAME(GraphExecDestroy), __FILE__, __LINE__,
                                                      "graph %p", static_cast<void*>(graph))
               : graphErr != kGpuSuccess ? gpuFailure(graphErr, WEFT_GPU_NAME(GraphDestroy), __FILE__, __LINE__,
                                                      "graph %p", static_cast<void*>(graph))
                                         : Status::ok();
    delete g;
    return s;
  }

 private:
  Status nullPointer(const char* call, size_t bytes) const {
    return WEFT_ERROR(weftInvalidArgument, "%s runtime: %s(%s): null pointer", name(), call, bytesText(bytes).c_str());
  }

  // A query's answer: finished, still running (not an error), or the failure.
  Status readiness(GpuError err, const char* call, void* what, bool* done) const {
    if (err == WEFT_GPU(ErrorNotReady)) {
      (void)WEFT_GPU(GetLastError)();
      *done = false;
      return Status::ok();
    }
    if (err != kGpuSuccess) return gpuFailure(err, call, __FILE__, __LINE__, "%p", what);
    *done = true;
    return Status::ok();
  }

  // A kernel on the current device can read and write the buffer: device or managed memory,
  // pinned host memory, or any host memory where the device reads pageable memory (HMM, ATS).
  Status checkReachable(const void* ptr, const char* array, int index) const {
    char what[64];
    std::snprintf(what, sizeof(what), "%s[%d]", array, index);
    return checkReachable(ptr, "reduce-copy", what);
  }
  Status checkReachable(const void* ptr, const char* launch, const char* what) const {
    if (ownPinned_.contains(ptr) || ownDevice_.contains(ptr)) return Status::ok();  // our allocHost / allocDevice
    PointerInfo info;
    WEFT_TRY(pointerInfo(ptr, &info));
    return checkReachable(ptr, info, launch, what);
  }
  Status checkReachable(const void* ptr, const PointerInfo& info, const char* launch, const char* what) const {
    if (info.kind != MemoryKind::kHost) return Status::ok();
    int device = 0;
    WEFT_TRY(getDevice(&device));
    if (device >= 0 && device < deviceCount() && devices_[device].pageableAccess) return Status::ok();
    return WEFT_ERROR(weftInvalidArgument,
                      "%s: %s = %p is pageable host memory, which device %d cannot reach; allocate it with "
                      "allocDevice or allocHost, or register it with hostRegister",
                      launch, what, ptr, device);
  }

#if WEFT_HAVE_KERNELS
  // Tells the kernels the current device's warp size and block count before a launch.
  Status setLaunchLimits() const {
    int device = 0;
    WEFT_TRY(getDevice(&device));
    if (device < 0 || device >= deviceCount()) {
      return WEFT_ERROR(weftInternalError, "%s runtime: current device %d is not one of the %d this runtime found",
                        name(), device, deviceCount());
    }
    const DeviceLimits& limits = devices_[static_cast<size_t>(device)];
    const int rc = weftKernelSetLaunchLimits(limits.warpSize, limits.multiProcessors);
    if (rc != 0) {
      return gpuFailure(static_cast<GpuError>(rc), "weftKernelSetLaunchLimits", __FILE__, __LINE__,
                        "warp size %d, %d blocks", limits.warpSize, limits.multiProcessors);
    }
    return Status::ok();
  }
#endif

  std::vector<DeviceLimits> devices_;
  std::string description_;
  OwnAllocations ownPinned_;  // allocHost's, until freeHost
  OwnAllocations ownDevice_;  // allocDevice's, until freeDevice (the lane tables among them)
};

}  // namespace

Runtime* newGpuRuntime(std::vector<GpuDeviceLimits> devices, std::string description) {
  return new GpuRuntime(std::move(devices), std::move(description));
}

}  // namespace device
}  // namespace weft
