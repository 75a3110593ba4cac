// A stand-in for libweft-cuda.so / libweft-hip.so, built by the loader tests at run time
// (device_test_util.h) with one of these modes, so that every way a module can be refused is
// exercised on a machine without a GPU:
//   FAKE_REFUSE="text"        the entry point refuses with that reason
//   FAKE_DEVICES=n            the entry point returns a runtime with n devices
//   FAKE_NO_ENTRY             the library has no entry point
//   FAKE_NEEDS_DEP            the library needs libweftfakedep.so (which the test then removes)
//   WEFT_GPU_MODULE_ABI=n     the module was built for another ABI (gpu_module.h's own check)
#include <cstdio>

#include "device/device.h"
#include "device/gpu_module.h"

#if defined(FAKE_NEEDS_DEP)
extern "C" int weftFakeDep();
#endif

#if !defined(FAKE_NO_ENTRY)
namespace {

using weft::Status;
using namespace weft::device;

class FakeRuntime final : public Runtime {
 public:
  explicit FakeRuntime(int devices) : devices_(devices) {}
  const char* name() const override { return "fake"; }
  std::string description() const override { return "fake runtime, " + std::to_string(devices_) + " devices"; }
  int deviceCount() const override { return devices_; }
  Status deviceProps(int, DeviceProps*) const override { return Status(); }
  Status setDevice(int) override { return Status(); }
  Status getDevice(int*) const override { return Status(); }
  Status canAccessPeer(int, int, bool*) const override { return Status(); }
  Status enablePeerAccess(int) override { return Status(); }
  Status allocDevice(size_t, void**) override { return Status(); }
  Status freeDevice(void*) override { return Status(); }
  Status allocHost(size_t, void**) override { return Status(); }
  Status allocDeviceShared(size_t, void**) override { return Status(); }
  Status allocHostShared(size_t, void**) override { return Status(); }
  Status freeHost(void*) override { return Status(); }
  Status pointerInfo(const void*, PointerInfo*) const override { return Status(); }
  Status copy(void*, const void*, size_t, CopyKind) override { return Status(); }
  Status copyAsync(void*, const void*, size_t, CopyKind, Stream) override { return Status(); }
  Status memset(void*, int, size_t) override { return Status(); }
  Status memsetAsync(void*, int, size_t, Stream) override { return Status(); }
  Status streamCreate(Stream*) override { return Status(); }
  Status streamDestroy(Stream) override { return Status(); }
  Status streamSynchronize(Stream) override { return Status(); }
  Status streamQuery(Stream, bool*) override { return Status(); }
  Status eventCreate(Event*, EventKind) override { return Status(); }
  Status eventDestroy(Event) override { return Status(); }
  Status eventRecord(Event, Stream) override { return Status(); }
  Status eventSynchronize(Event) override { return Status(); }
  Status eventQuery(Event, bool*) override { return Status(); }
  Status eventElapsedMs(Event, Event, float*) override { return Status(); }
  Status ipcExport(void*, IpcHandle*) override { return Status(); }
  Status ipcImport(const IpcHandle&, void**) override { return Status(); }
  Status ipcClose(void*) override { return Status(); }
  Status launchReduceCopy(const ReduceCopyArgs&, Stream) override { return Status(); }
  Status launchLanes(const LaneLaunch&, Stream) override { return Status(); }
  Status streamWaitEvent(Stream, Event) override { return Status(); }
  Status hostRegister(void*, size_t) override { return Status(); }
  Status hostUnregister(void*) override { return Status(); }
  Status streamIsCapturing(Stream, bool* capturing) override {
    *capturing = false;
    return Status();
  }
  Status graphCaptureBegin(Stream) override { return Status(); }
  Status graphCaptureEnd(Stream, Graph* out) override {
    *out = nullptr;
    return Status();
  }
  Status graphLaunch(Graph, Stream) override { return Status(); }
  Status graphDestroy(Graph) override { return Status(); }

 private:
  int devices_;
};

}  // namespace

extern "C" Runtime* weftCreateGpuRuntime(int abiVersion, char* whyNot, size_t whyNotBytes) {
  if (!gpuModuleAbiMatches(abiVersion, whyNot, whyNotBytes)) return nullptr;
#if defined(FAKE_NEEDS_DEP)
  if (weftFakeDep() != 42) return nullptr;
#endif
#if defined(FAKE_REFUSE)
  std::snprintf(whyNot, whyNotBytes, "%s", FAKE_REFUSE);
  return nullptr;
#elif defined(FAKE_DEVICES)
  return new FakeRuntime(FAKE_DEVICES);
#else
  return new FakeRuntime(1);
#endif
}
#else
extern "C" int weftSomethingElse() { return 0; }
#endif
