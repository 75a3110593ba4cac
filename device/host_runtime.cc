// The host runtime: the device interface over plain memory, for host buffers and for machines
// without a GPU. Allocation is malloc (aligned like cudaMalloc, 256 bytes), copies are memmove,
// and streams and events are tokens whose work is done before the call returns, so code
// written against the interface runs, and is tested, unchanged on a CPU-only machine.
#include <cstdlib>
#include <cstring>
#include <new>

#include "base/os.h"
#include "device/device.h"
#include "device/host_memory_runtime.h"

namespace weft {
namespace device {
namespace {

constexpr size_t kAlignment = 256;

Status noDevices(const char* call, int device) {
  return WEFT_ERROR(weftInvalidArgument, "host runtime: %s(%d): there are no devices, only host memory", call, device);
}

class HostRuntime final : public HostMemoryRuntime {
 public:
  HostRuntime() : HostMemoryRuntime("host runtime") {}
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
  // One agent, the host: every kind of memory is the same here.
  Status allocDeviceShared(size_t bytes, void** out) override { return allocate("allocDeviceShared", bytes, out); }
  Status allocHostShared(size_t bytes, void** out) override { return allocate("allocHostShared", bytes, out); }
  Status pointerInfo(const void* ptr, PointerInfo* out) const override {
    if (ptr == nullptr) return WEFT_ERROR(weftInvalidArgument, "host runtime: pointerInfo(null)");
    *out = PointerInfo{MemoryKind::kHost, -1};
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

  // Host memory is already reachable by everything this runtime runs.
  Status hostRegister(void* ptr, size_t bytes) override {
    if (ptr == nullptr && bytes > 0) return nullPointer("hostRegister", bytes);
    return Status::ok();
  }
  Status hostUnregister(void*) override { return Status::ok(); }


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
