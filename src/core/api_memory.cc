// Memory and registration: weftMemAlloc / weftMemFree / weftMemQuery and weftCommRegister /
// weftCommDeregister.
//
// weftMemAlloc gives device memory of the calling thread's current GPU when a GPU backend is
// loaded and has a device, else page-aligned host memory; a process-wide table remembers what
// it gave so that weftMemFree refuses any other pointer (and a second free). Registration is a
// hint Weft does not need yet: handles are tracked per communicator, refused when unknown or
// deregistered twice, and freed with the communicator.
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "base/log.h"
#include "base/os.h"
#include "core/api_internal.h"
#include "device/device.h"

using weft::Status;

namespace weft {
namespace core {
namespace capi {
namespace {

struct Allocation {
  size_t bytes = 0;
  device::Runtime* runtime = nullptr;  // null: host memory from posix_memalign
};

struct AllocationTable {
  std::mutex mutex;
  std::map<void*, Allocation> live;
};

AllocationTable& allocations() {
  static AllocationTable* t = new AllocationTable();  // never destroyed: frees may come at exit
  return *t;
}

// The GPU runtime when it has a device current on this thread, else null.
device::Runtime* currentGpu(int* dev) {
  device::Runtime* runtime = device::gpuRuntime();
  *dev = -1;
  if (runtime == nullptr || runtime->deviceCount() == 0) return nullptr;
  if (!runtime->getDevice(dev).isOk() || *dev < 0) return nullptr;
  return runtime;
}

Status memAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return WEFT_ERROR(weftInvalidArgument, "weftMemAlloc: ptr (the output pointer) is NULL");
  *ptr = nullptr;
  if (size == 0) return WEFT_ERROR(weftInvalidArgument, "weftMemAlloc: size is 0; ask for at least one byte");
  int dev = -1;
  Allocation a;
  a.bytes = size;
  a.runtime = currentGpu(&dev);
  void* p = nullptr;
  if (a.runtime != nullptr) {
    Status s = a.runtime->allocDevice(size, &p);
    if (!s.isOk())
      return std::move(s).withPrefix("weftMemAlloc(" + formatBytes(size) + ") on device " + std::to_string(dev) + ": ");
  } else {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t rounded = (size + page - 1) / page * page;
    int err = posix_memalign(&p, page, rounded);
    if (err != 0) {
      return WEFT_ERROR(weftSystemError, "weftMemAlloc(%s) of host memory failed: %s", formatBytes(size).c_str(),
                        errnoText(err).c_str());
    }
  }
  {
    AllocationTable& t = allocations();
    std::lock_guard<std::mutex> lock(t.mutex);
    t.live[p] = a;
  }
  *ptr = p;
  return Status::ok();
}

Status memFree(void* ptr) {
  if (ptr == nullptr) return Status::ok();  // like free(NULL)
  Allocation a;
  {
    AllocationTable& t = allocations();
    std::lock_guard<std::mutex> lock(t.mutex);
    auto it = t.live.find(ptr);
    if (it == t.live.end()) {
      return WEFT_ERROR(weftInvalidArgument,
                        "weftMemFree: %p was not returned by weftMemAlloc, or was freed already; free other memory "
                        "with the call that allocated it",
                        ptr);
    }
    a = it->second;
    t.live.erase(it);
  }
  if (a.runtime != nullptr) return a.runtime->freeDevice(ptr);
  std::free(ptr);
  return Status::ok();
}

Status memQuery(const void* ptr, weftMemKind_t* kind, int* device) {
  if (ptr == nullptr || kind == nullptr || device == nullptr) {
    return WEFT_ERROR(weftInvalidArgument, "weftMemQuery: %s is NULL",
                      ptr == nullptr    ? "ptr"
                      : kind == nullptr ? "kind"
                                        : "device");
  }
  *kind = weftMemHost;
  *device = -1;
  device::Runtime* runtime = device::gpuRuntime();
  if (runtime == nullptr) return Status::ok();  // no GPU runtime knows any memory
  device::PointerInfo info;
  WEFT_TRY(runtime->pointerInfo(ptr, &info));
  switch (info.kind) {
    case device::MemoryKind::kDevice:
      *kind = weftMemDevice;
      break;
    case device::MemoryKind::kManaged:
      *kind = weftMemManaged;
      break;
    case device::MemoryKind::kPinnedHost:
      *kind = weftMemPinnedHost;
      break;
    case device::MemoryKind::kHost:
      *kind = weftMemHost;
      break;
  }
  *device = info.kind == device::MemoryKind::kDevice ? info.device : -1;
  return Status::ok();
}

// Register and deregister work on any communicator that finished its init, failed or not.
Status checkRegistrationComm(weftComm* comm, const char* fn) {
  if (comm == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s: comm is NULL", fn);
  if (comm->state.load() == weftInProgress) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: %s: the communicator is still initialising (non-blocking init); poll "
                      "weftCommGetAsyncError until it returns weftSuccess",
                      comm->rank, fn);
  }
  return Status::ok();
}

Status commRegister(weftComm* comm, void* buff, size_t size, void** handle) {
  const char* fn = "weftCommRegister";
  WEFT_TRY(checkRegistrationComm(comm, fn));
  if (handle == nullptr) return WEFT_ERROR(weftInvalidArgument, "rank %d: %s: handle is NULL", comm->rank, fn);
  *handle = nullptr;
  if (buff == nullptr) return WEFT_ERROR(weftInvalidArgument, "rank %d: %s: buff is NULL", comm->rank, fn);
  if (size == 0)
    return WEFT_ERROR(weftInvalidArgument, "rank %d: %s: size is 0; register at least one byte", comm->rank, fn);
  auto reg = std::make_unique<weftComm::Registration>();
  reg->buff = buff;
  reg->size = size;
  void* key = reg.get();
  {
    std::lock_guard<std::mutex> lock(comm->mutex);
    comm->registrations[key] = std::move(reg);
  }
  WEFT_LOG(kTrace, kInit, "rank %d: registered %s at %p (handle %p)", comm->rank, formatBytes(size).c_str(), buff, key);
  *handle = key;
  return Status::ok();
}

Status commDeregister(weftComm* comm, void* handle) {
  const char* fn = "weftCommDeregister";
  WEFT_TRY(checkRegistrationComm(comm, fn));
  std::lock_guard<std::mutex> lock(comm->mutex);
  auto it = comm->registrations.find(handle);
  if (it == comm->registrations.end()) {
    return WEFT_ERROR(weftInvalidArgument,
                      "rank %d: %s: handle %p is not registered on this communicator (never returned by its "
                      "weftCommRegister, or deregistered already)",
                      comm->rank, fn, handle);
  }
  comm->registrations.erase(it);
  return Status::ok();
}

}  // namespace
}  // namespace capi
}  // namespace core
}  // namespace weft

extern "C" {

weftResult_t weftMemAlloc(void** ptr, size_t size) {
  weft::Status s = weft::core::capi::memAlloc(ptr, size);
  return s.isOk() ? weftSuccess : weft::core::capi::report(nullptr, s);
}

weftResult_t weftMemFree(void* ptr) {
  weft::Status s = weft::core::capi::memFree(ptr);
  return s.isOk() ? weftSuccess : weft::core::capi::report(nullptr, s);
}

weftResult_t weftMemQuery(const void* ptr, weftMemKind_t* kind, int* device) {
  weft::Status s = weft::core::capi::memQuery(ptr, kind, device);
  return s.isOk() ? weftSuccess : weft::core::capi::report(nullptr, s);
}

weftResult_t weftCommRegister(const weftComm_t comm, void* buff, size_t size, void** handle) {
  weft::Status s = weft::core::capi::commRegister(comm, buff, size, handle);
  return s.isOk() ? weftSuccess : weft::core::capi::report(comm, s);
}

weftResult_t weftCommDeregister(const weftComm_t comm, void* handle) {
  weft::Status s = weft::core::capi::commDeregister(comm, handle);
  return s.isOk() ? weftSuccess : weft::core::capi::report(comm, s);
}

}  // extern "C"
