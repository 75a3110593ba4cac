// Memory and registration: weftMemAlloc / weftMemFree / weftMemQuery and weftCommRegister /
// weftCommDeregister.
//
// weftMemAlloc gives device memory of the calling thread's current GPU when a GPU backend is
// loaded and has a device, else page-aligned host memory; a process-wide table remembers what
// it gave so that weftMemFree refuses any other pointer (and a second free). Host memory is
// shared memory the other processes of the host can map (host_memory.h), so that collectives on
// it can run zero-copy (comm_zero_copy.cc); where /dev/shm cannot hold it, plain page-aligned
// memory. Handles of weftCommRegister are tracked per communicator, refused when unknown or
// deregistered twice, and freed with the communicator; the communicator also learns the range,
// which is what lets a collective on it go zero-copy.
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "base/log.h"
#include "base/os.h"
#include "core/api_entry.h"
#include "core/call_context.h"
#include "core/host_memory.h"
#include "device/device.h"

namespace weft {
namespace core {
namespace capi {
namespace {

struct Allocation {
  size_t bytes = 0;
  device::Runtime* runtime = nullptr;  // null: host memory
  bool shared = false;                 // host memory from allocSharedHost, else posix_memalign
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

Status allocate(const Call& call, void** ptr, size_t size) {
  WEFT_TRY(call.checkOutput(ptr, "ptr (the output pointer)"));
  *ptr = nullptr;
  if (size == 0) return call.error(weftInvalidArgument, "size is 0; ask for at least one byte");
  int dev = -1;
  Allocation a;
  a.bytes = size;
  a.runtime = currentGpu(&dev);
  void* p = nullptr;
  if (a.runtime != nullptr) {
    Status s = a.runtime->allocDevice(size, &p);
    if (!s.isOk()) return call.wrap(std::move(s), formatBytes(size) + " on device " + std::to_string(dev));
  } else if (allocSharedHost(size, &p).isOk()) {
    a.shared = true;
  } else {
    WEFT_LOG(kInfo, kInit, "weftMemAlloc: %s of shared host memory failed; plain memory (collectives on it copy)",
             formatBytes(size).c_str());
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t rounded = (size + page - 1) / page * page;
    int err = posix_memalign(&p, page, rounded);
    if (err != 0) {
      return call.error(weftSystemError, "%s of host memory failed: %s", formatBytes(size).c_str(),
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

Status release(const Call& call, void* ptr) {
  if (ptr == nullptr) return Status::ok();  // like free(NULL)
  Allocation a;
  {
    AllocationTable& t = allocations();
    std::lock_guard<std::mutex> lock(t.mutex);
    auto it = t.live.find(ptr);
    if (it == t.live.end()) {
      return call.error(weftInvalidArgument,
                        "%p was not returned by weftMemAlloc, or was freed already; free other memory with the call "
                        "that allocated it",
                        ptr);
    }
    a = it->second;
    t.live.erase(it);
  }
  if (a.runtime != nullptr) return a.runtime->freeDevice(ptr);
  if (a.shared) {
    freeSharedHost(ptr);
  } else {
    std::free(ptr);
  }
  return Status::ok();
}

Status query(const Call& call, const void* ptr, weftMemKind_t* kind, int* device) {
  WEFT_TRY(call.checkOutput(ptr, "ptr"));
  WEFT_TRY(call.checkOutput(kind, "kind"));
  WEFT_TRY(call.checkOutput(device, "device"));
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

}  // namespace

weftResult_t memAlloc(void** ptr, size_t size) {
  Call call(nullptr, "weftMemAlloc");
  return call.finish(allocate(call, ptr, size));
}

weftResult_t memFree(void* ptr) {
  Call call(nullptr, "weftMemFree");
  return call.finish(release(call, ptr));
}

weftResult_t memQuery(const void* ptr, weftMemKind_t* kind, int* device) {
  Call call(nullptr, "weftMemQuery");
  return call.finish(query(call, ptr, kind, device));
}

// Register and deregister work on any communicator that finished its init, failed or not.
weftResult_t commRegister(const Call& call, void* buff, size_t size, void** handle) {
  Status s = call.checkInitDone();
  if (s.isOk()) s = call.checkOutput(handle, "handle");
  if (!s.isOk()) return call.finish(s);
  *handle = nullptr;
  s = call.checkOutput(buff, "buff");
  if (s.isOk() && size == 0) s = call.error(weftInvalidArgument, "size is 0; register at least one byte");
  if (!s.isOk()) return call.finish(s);
  weftComm* comm = call.comm();
  auto reg = std::make_unique<weftComm::Registration>();
  reg->buff = buff;
  reg->size = size;
  void* key = reg.get();
  {
    std::lock_guard<std::mutex> lock(comm->mutex);
    comm->registrations[key] = std::move(reg);
  }
  if (comm->impl) comm->impl->noteRegistration(buff, size, true);
  WEFT_LOG(kTrace, kInit, "rank %d: registered %s at %p (handle %p)", comm->rank, formatBytes(size).c_str(), buff, key);
  *handle = key;
  return weftSuccess;
}

weftResult_t commDeregister(const Call& call, void* handle) {
  Status s = call.checkInitDone();
  if (s.isOk()) {
    weftComm* comm = call.comm();
    std::lock_guard<std::mutex> lock(comm->mutex);
    auto it = comm->registrations.find(handle);
    if (it == comm->registrations.end()) {
      s = call.error(weftInvalidArgument,
                     "handle %p is not registered on this communicator (never returned by its weftCommRegister, or "
                     "deregistered already)",
                     handle);
    } else {
      if (comm->impl) comm->impl->noteRegistration(it->second->buff, it->second->size, false);
      comm->registrations.erase(it);
    }
  }
  return call.finish(s);
}

}  // namespace capi
}  // namespace core
}  // namespace weft
