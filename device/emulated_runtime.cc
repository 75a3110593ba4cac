// The emulated device: host memory posing as one GPU, so that the device executor's whole path
// (src/core with a stream, the p2p transport, IPC handles between processes) runs and is tested
// on a machine without a GPU. WEFT_GPU_BACKEND=emulated selects it (gpu_loader.cc); "auto"
// never does.
//
// Device memory is a memfd mapped MAP_SHARED, so that another process can map the same pages
// from an IPC handle, through /proc/<pid>/fd/<fd>. Copies are memmove; streams and events are
// tokens whose work is done before the call returns, as in the host runtime, except memsets,
// which wait on their stream (memset(): the legacy default stream) until something must have
// finished them (HostMemoryRuntime::defersMemsets), as on a GPU; the lane blocks of a launch
// start as the emulated SMs have room for them (WEFT_EMULATED_SMS, WEFT_EMULATED_BLOCKS_PER_SM); the lane program
// runs on host threads through the runner the collectives layer registers (hostLaneRunner()).
// Where CUDA refuses something (an IPC handle opened in the process that made it, freeing a
// pointer it does not know, registering memory twice), this runtime refuses it too, so that
// code tested here does not fail first on a GPU.
//
// Like a GPU driver's, the device's state belongs to the process: every EmulatedRuntime object
// is a view of the one registry below, so emulatedRuntime() and gpuRuntime() agree on every
// pointer.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "base/os.h"
#include "base/params.h"
#include "device/device.h"
#include "device/host_memory_runtime.h"
#include "device/gpu_loader.h"

namespace weft {
namespace device {
namespace {

constexpr size_t kHostAlignment = 256;                 // allocHost, like cudaMallocHost

// An emulated GPU's UUID: a function of its host and bus id, so that, as with real GPUs, the same
// bus id on two hosts (network namespaces, WEFT_HOSTID) is two GPUs, and one GPU seen from two
// processes of a host is one.
std::string emulatedUuid(const std::string& busId) {
  const uint64_t host = hostHash();
  const uint64_t lo = hashBytes(busId.data(), busId.size(), host);
  const uint64_t hi = hashBytes(&lo, sizeof(lo), host ^ 0x9e3779b97f4a7c15ull);
  unsigned char bytes[16];
  for (int i = 0; i < 8; ++i) {
    bytes[i] = static_cast<unsigned char>(hi >> (8 * i));
    bytes[8 + i] = static_cast<unsigned char>(lo >> (8 * i));
  }
  return formatUuid(bytes);
}
constexpr uint64_t kIpcMagic = 0x31554d4554464557ull;  // "WEFTEMU1" in memory order

// What the 64 bytes of an IpcHandle hold here. The memfd's inode and device tell its file from
// another that later took the same fd number in the exporting process.
struct EmulatedIpcHandle {
  uint64_t magic;
  int32_t pid;     // the exporting process
  int32_t fd;      // its memfd
  uint64_t bytes;  // the allocation's size, as asked for
  uint64_t inode;
  uint64_t fsDevice;
  uint64_t device;  // the emulated device that allocated it
  uint64_t shared;  // 1: allocDeviceShared, the importer polls it as its exporter does
  uint64_t reserved;
};
static_assert(sizeof(EmulatedIpcHandle) == sizeof(IpcHandle), "the emulated IPC handle is 64 bytes");

enum class Region {
  kDevice,      // allocDevice: a memfd of this process
  kImported,    // ipcImport: another process's memfd, mapped here
  kPinnedHost,  // allocHost
  kRegistered,  // hostRegister: memory this runtime did not allocate
};

struct Allocation {
  Region region = Region::kDevice;
  size_t bytes = 0;   // as asked for: pointerInfo answers for [base, base + bytes)
  size_t mapped = 0;  // the mapping's length (kDevice, kImported)
  int fd = -1;        // the memfd (kDevice)
  int device = 0;     // the emulated device it belongs to (kDevice, kImported)
  // Asked for as memory other agents poll while kernels run (allocDeviceShared,
  // allocHostShared, or imported from such an allocation): what a lane launch may poll.
  bool shared = false;
};

// Which addresses are the device's, keyed by base address.
class Registry {
 public:
  void add(const void* base, const Allocation& a) {
    std::lock_guard<std::mutex> lock(mu_);
    map_[address(base)] = a;
  }
  // The allocation that starts exactly at `base`.
  bool findBase(const void* base, Allocation* out) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(address(base));
    if (it == map_.end()) return false;
    *out = it->second;
    return true;
  }
  // The allocation holding `ptr` anywhere in [base, base + bytes).
  bool findContaining(const void* ptr, Allocation* out) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.upper_bound(address(ptr));
    if (it == map_.begin()) return false;
    --it;
    if (address(ptr) - it->first >= it->second.bytes) return false;
    *out = it->second;
    return true;
  }
  // Whether [ptr, ptr + bytes) shares an address with any allocation.
  bool overlaps(const void* ptr, size_t bytes) const {
    std::lock_guard<std::mutex> lock(mu_);
    uintptr_t begin = address(ptr), end = begin + bytes;
    auto it = map_.lower_bound(begin);
    if (it != map_.end() && it->first < end) return true;
    if (it == map_.begin()) return false;
    --it;
    return it->first + it->second.bytes > begin;
  }
  // Removes the allocation at `base` if it is of `region`; false (nothing removed) otherwise.
  bool take(const void* base, Region region, Allocation* out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(address(base));
    if (it == map_.end() || it->second.region != region) return false;
    *out = it->second;
    map_.erase(it);
    return true;
  }

 private:
  static uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }
  mutable std::mutex mu_;
  std::map<uintptr_t, Allocation> map_;
};

// Never destroyed: a static destructor elsewhere may still free device memory at exit.
Registry& registry() {
  static Registry* const r = new Registry;
  return *r;
}

size_t pageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}
size_t roundToPage(size_t bytes) { return (bytes + pageSize() - 1) / pageSize() * pageSize(); }

const char* regionName(Region r) {
  switch (r) {
    case Region::kDevice:
      return "device memory from allocDevice";
    case Region::kImported:
      return "device memory from ipcImport";
    case Region::kPinnedHost:
      return "pinned host memory from allocHost";
    case Region::kRegistered:
      return "host memory registered with hostRegister";
  }
  return "unknown";
}
// The call that releases a region.
const char* releaseCall(Region r) {
  switch (r) {
    case Region::kDevice:
      return "freeDevice";
    case Region::kImported:
      return "ipcClose";
    case Region::kPinnedHost:
      return "freeHost";
    case Region::kRegistered:
      return "hostUnregister";
  }
  return "unknown";
}

// Why `ptr` cannot be released by `call`, which releases `wanted`.
Status cannotRelease(const char* call, const void* ptr, Region wanted) {
  Allocation a;
  if (registry().findBase(ptr, &a)) {
    return WEFT_ERROR(weftInvalidUsage, "emulated runtime: %s(%p): that is %s; release it with %s", call, ptr,
                      regionName(a.region), releaseCall(a.region));
  }
  if (registry().findContaining(ptr, &a)) {
    return WEFT_ERROR(weftInvalidArgument, "emulated runtime: %s(%p): points inside %s, not at its start", call, ptr,
                      regionName(a.region));
  }
  return WEFT_ERROR(weftInvalidArgument, "emulated runtime: %s(%p): not %s (never allocated, or already released)",
                    call, ptr, regionName(wanted));
}

// Memory a lane launch polls while it runs must have been asked for as shared with other agents
// (device.h, Sharing): on an AMD GPU the other kinds are cached, and a flag written by the peer
// or the host may never reach the polling lane. Memory this runtime does not know (host memory)
// and registered host memory (coherent: hipHostRegister's default) pass.
Status checkPolled(const char* what, int fifo, int peer, const void* ptr) {
  Allocation a;
  if (ptr == nullptr || !registry().findContaining(ptr, &a) || a.region == Region::kRegistered || a.shared) {
    return Status::ok();
  }
  std::string where = fifo >= 0 ? "FIFO " + std::to_string(fifo) + " (rank " + std::to_string(peer) + "): " : "";
  return WEFT_ERROR(weftInvalidUsage,
                    "emulated runtime: launchLanes: %s%s at %p is %s, private to one agent, but another agent polls "
                    "it while the lanes run; on AMD GPUs such memory is cached (coarse-grained) and the lanes may "
                    "never see the peer's writes: allocate it with allocDeviceShared / allocHostShared",
                    where.c_str(), what, ptr, regionName(a.region));
}

Status checkLaunchPolls(const LaneLaunch& launch) {
  WEFT_TRY(checkPolled("the abort flag", -1, -1, launch.abortFlag));
  WEFT_TRY(checkPolled("the error record", -1, -1, launch.error));
  for (int i = 0; i < launch.nFifos; ++i) {
    const FifoView& f = launch.fifos[i];
    const std::pair<const char*, const void*> fields[] = {
        {"the slots", f.data},       {"the sizes", f.sizes},    {"the stamps", f.stamps},
        {"head", f.head},            {"tail", f.tail},          {"the cursor", f.cursor},
        {"its abort flag", f.selfAbort}, {"the peer's abort flag", f.peerAbort}, {"the LL lines", f.ll}};
    for (const auto& [what, ptr] : fields) WEFT_TRY(checkPolled(what, i, f.peer, ptr));
  }
  return Status::ok();
}

// How many devices the emulated backend poses as (WEFT_EMULATED_DEVICES, read at each call so
// that a test may change it), and the calling thread's current one (device 0 until setDevice,
// as a CUDA thread starts).
int emulatedDevices() { return static_cast<int>(std::clamp<int64_t>(params::EmulatedDevices(), 1, 8)); }
thread_local int tCurrentDevice = 0;

Status oneDevice(const char* call, int device) {
  const int n = emulatedDevices();
  if (n == 1) {
    return WEFT_ERROR(weftInvalidArgument,
                      "emulated runtime: %s(%d): there is one device, 0 (WEFT_EMULATED_DEVICES poses as more)", call,
                      device);
  }
  return WEFT_ERROR(weftInvalidArgument,
                    "emulated runtime: %s(%d): the emulated devices are 0..%d (WEFT_EMULATED_DEVICES=%d)", call, device,
                    n - 1, n);
}
bool validDevice(int device) { return device >= 0 && device < emulatedDevices(); }

int cpuCount() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

// The emulated GPU's SMs and how many lane blocks each holds at once (WEFT_EMULATED_SMS,
// WEFT_EMULATED_BLOCKS_PER_SM), read at each call so that a test may change them.
int emulatedSms() {
  const int64_t sms = params::EmulatedSms();
  return sms > 0 ? static_cast<int>(std::min<int64_t>(sms, 1024)) : cpuCount() * 4;
}
int emulatedBlocksPerSm() { return static_cast<int>(std::clamp<int64_t>(params::EmulatedBlocksPerSm(), 1, 64)); }

// One emulated GPU's block scheduler: at most SMs x blocks per SM lane blocks run at once in
// this process; a block past that starts when a running one ends. Lanes spin for their peers,
// so a launch that over-subscribes the device hangs here as on hardware (until the lanes'
// time-out). Per process, as one process's context on a GPU without MPS: other processes'
// kernels take turns with it rather than share its SMs.
class DeviceSlots final : public BlockSlots {
 public:
  void acquire() override {
    std::unique_lock<std::mutex> lock(mu_);
    room_.wait(lock, [this] { return running_ < emulatedSms() * emulatedBlocksPerSm(); });
    ++running_;
  }
  void release() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
    }
    room_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable room_;
  int running_ = 0;
};

// Never destroyed, like the registry: lanes of a launch may outlive static destructors' order.
DeviceSlots& deviceSlots(int device) {
  static DeviceSlots* const slots = new DeviceSlots[8];
  return slots[std::clamp(device, 0, 7)];
}

class EmulatedRuntime final : public HostMemoryRuntime {
 public:
  EmulatedRuntime() : HostMemoryRuntime("emulated runtime") {}
  const char* name() const override { return "emulated"; }
  std::string description() const override {
    return "emulated device: host memory posing as one GPU, for tests (" + std::to_string(cpuCount()) + " CPUs, " +
           std::to_string(emulatedSms()) + " SMs of " + std::to_string(emulatedBlocksPerSm()) + " lane blocks)";
  }
  int deviceCount() const override { return emulatedDevices(); }
  Status deviceProps(int device, DeviceProps* out) const override {
    if (!validDevice(device)) return oneDevice("deviceProps", device);
    DeviceProps p;
    p.name = "Weft emulated device";
    p.arch = "emulated";
    char busId[16];
    // Bus numbers follow WEFT_EMULATED_FIRST_BUS, as a process's GPUs follow CUDA_VISIBLE_DEVICES.
    const int bus = static_cast<int>(params::EmulatedFirstBus()) + device;
    std::snprintf(busId, sizeof(busId), "0000:%02x:00.0", bus & 0xff);
    p.pciBusId = busId;
    p.uuid = emulatedUuid(busId);
    p.warpSize = 1;
    p.multiProcessors = emulatedSms();
    p.laneBlocksPerUnit = emulatedBlocksPerSm();
    long pages = sysconf(_SC_PHYS_PAGES);
    p.totalMemoryBytes = pages > 0 ? static_cast<uint64_t>(pages) * pageSize() : 0;
    *out = p;
    return Status::ok();
  }
  Status setDevice(int device) override {
    if (!validDevice(device)) return oneDevice("setDevice", device);
    tCurrentDevice = device;
    return Status::ok();
  }
  Status getDevice(int* device) const override {
    *device = validDevice(tCurrentDevice) ? tCurrentDevice : 0;
    return Status::ok();
  }
  Status canAccessPeer(int device, int peer, bool* out) const override {
    if (!validDevice(device)) return oneDevice("canAccessPeer", device);
    if (!validDevice(peer)) return oneDevice("canAccessPeer", peer);
    *out = true;
    return Status::ok();
  }
  Status enablePeerAccess(int peer) override {
    return validDevice(peer) ? Status::ok() : oneDevice("enablePeerAccess", peer);
  }

  Status allocDevice(size_t bytes, void** out) override { return allocDeviceOf(bytes, Sharing::kPrivate, out); }
  Status allocDeviceShared(size_t bytes, void** out) override { return allocDeviceOf(bytes, Sharing::kAgents, out); }
  // A memfd, so that ipcExport can hand the same pages to another process.
  Status allocDeviceOf(size_t bytes, Sharing sharing, void** out) {
    *out = nullptr;
    if (bytes == 0) return Status::ok();
    const size_t mapped = roundToPage(bytes);
    int fd = memfd_create("weft-emulated-device", MFD_CLOEXEC);
    if (fd < 0) return systemError("allocDevice", bytes, "memfd_create", errno);
    if (ftruncate(fd, static_cast<off_t>(mapped)) != 0) {
      int err = errno;
      close(fd);
      return systemError("allocDevice", bytes, "ftruncate", err);
    }
    void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      close(fd);
      return systemError("allocDevice", bytes, "mmap", err);
    }
    int device = 0;
    (void)getDevice(&device);
    registry().add(p, Allocation{Region::kDevice, bytes, mapped, fd, device, sharing == Sharing::kAgents});
    *out = p;
    return Status::ok();
  }
  // Freeing synchronizes the device, as cudaFree does: queued memsets run first.
  Status freeDevice(void* ptr) override {
    drainAll();
    if (ptr == nullptr) return Status::ok();
    Allocation a;
    if (!registry().take(ptr, Region::kDevice, &a)) return cannotRelease("freeDevice", ptr, Region::kDevice);
    munmap(ptr, a.mapped);
    close(a.fd);
    return Status::ok();
  }
  Status allocHost(size_t bytes, void** out) override { return allocHostOf(bytes, Sharing::kPrivate, out); }
  Status allocHostShared(size_t bytes, void** out) override { return allocHostOf(bytes, Sharing::kAgents, out); }
  Status allocHostOf(size_t bytes, Sharing sharing, void** out) {
    *out = nullptr;
    if (bytes == 0) return Status::ok();
    int err = posix_memalign(out, kHostAlignment, bytes);
    if (err != 0) {
      *out = nullptr;
      return systemError("allocHost", bytes, "posix_memalign", err);
    }
    registry().add(*out, Allocation{Region::kPinnedHost, bytes, 0, -1, 0, sharing == Sharing::kAgents});
    return Status::ok();
  }
  Status freeHost(void* ptr) override {
    drainAll();
    if (ptr == nullptr) return Status::ok();
    Allocation a;
    if (!registry().take(ptr, Region::kPinnedHost, &a)) return cannotRelease("freeHost", ptr, Region::kPinnedHost);
    std::free(ptr);
    return Status::ok();
  }
  Status pointerInfo(const void* ptr, PointerInfo* out) const override {
    if (ptr == nullptr) return WEFT_ERROR(weftInvalidArgument, "emulated runtime: pointerInfo(null)");
    Allocation a;
    if (!registry().findContaining(ptr, &a)) {
      *out = PointerInfo{MemoryKind::kHost, -1};
    } else if (a.region == Region::kDevice || a.region == Region::kImported) {
      *out = PointerInfo{MemoryKind::kDevice, a.device};
    } else {
      *out = PointerInfo{MemoryKind::kPinnedHost, -1};
    }
    return Status::ok();
  }




  Status ipcExport(void* ptr, IpcHandle* out) override {
    Allocation a;
    if (ptr == nullptr || !registry().findBase(ptr, &a) || a.region != Region::kDevice) {
      return WEFT_ERROR(weftInvalidArgument,
                        "emulated runtime: ipcExport(%p): not the start of an allocDevice "
                        "allocation of this process",
                        ptr);
    }
    struct stat st;
    if (fstat(a.fd, &st) != 0) {
      return WEFT_ERROR(weftSystemError, "emulated runtime: ipcExport(%p): fstat of its memfd: %s", ptr,
                        errnoText(errno).c_str());
    }
    EmulatedIpcHandle h{};
    h.magic = kIpcMagic;
    h.pid = static_cast<int32_t>(getpid());
    h.fd = a.fd;
    h.bytes = a.bytes;
    h.inode = st.st_ino;
    h.fsDevice = st.st_dev;
    h.device = static_cast<uint64_t>(a.device);
    h.shared = a.shared ? 1 : 0;
    std::memcpy(out->bytes, &h, sizeof(h));
    return Status::ok();
  }
  Status ipcImport(const IpcHandle& handle, void** out) override {
    *out = nullptr;
    EmulatedIpcHandle h;
    std::memcpy(&h, handle.bytes, sizeof(h));
    if (h.magic != kIpcMagic) {
      return WEFT_ERROR(weftInvalidArgument,
                        "emulated runtime: ipcImport: not an IPC handle of the emulated runtime (it starts with "
                        "%016llx); both processes must run with WEFT_GPU_BACKEND=emulated",
                        static_cast<unsigned long long>(h.magic));
    }
    if (h.pid <= 0 || h.fd < 0 || h.bytes == 0) {
      return WEFT_ERROR(weftInvalidArgument,
                        "emulated runtime: ipcImport: corrupted handle (pid %d, fd %d, %llu bytes)", h.pid, h.fd,
                        static_cast<unsigned long long>(h.bytes));
    }
    // cudaIpcOpenMemHandle fails in the process that exported the handle; so does this.
    if (h.pid == static_cast<int32_t>(getpid())) {
      return WEFT_ERROR(weftInvalidUsage,
                        "emulated runtime: ipcImport: IPC handles are for other processes; in the same process use "
                        "the pointer (this handle is from this process, pid %d)",
                        h.pid);
    }
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", h.pid, h.fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return openFailure(h, path, errno);
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_ino != h.inode || st.st_dev != h.fsDevice ||
        static_cast<uint64_t>(st.st_size) < h.bytes) {
      close(fd);
      return freedByExporter(h);
    }
    const size_t mapped = roundToPage(h.bytes);
    void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = errno;
    close(fd);  // the mapping keeps the memory
    if (p == MAP_FAILED) return systemError("ipcImport", h.bytes, "mmap", err);
    registry().add(p, Allocation{Region::kImported, h.bytes, mapped, -1, static_cast<int>(h.device), h.shared == 1});
    *out = p;
    return Status::ok();
  }
  Status ipcClose(void* ptr) override {
    drainAll();
    Allocation a;
    if (ptr == nullptr || !registry().take(ptr, Region::kImported, &a)) {
      return cannotRelease("ipcClose", ptr, Region::kImported);
    }
    munmap(ptr, a.mapped);
    return Status::ok();
  }

  Status launchReduceCopy(const ReduceCopyArgs& args, Stream) override {
    WEFT_TRY(checkReduceCopyArgs(args));
    return WEFT_ERROR(weftInternalError,
                      "emulated runtime: launchReduceCopy: the emulated device runs only the lane program "
                      "(launchLanes); the reduce-copy kernel needs libweft-cuda.so or libweft-hip.so");
  }

  // Host memory is already reachable by the emulated device; the registry only remembers it, for
  // pointerInfo and to refuse what cudaHostRegister refuses.
  Status hostRegister(void* ptr, size_t bytes) override {
    if (bytes == 0) return Status::ok();
    if (ptr == nullptr) return nullPointer("hostRegister", bytes);
    if (registry().overlaps(ptr, bytes)) {
      return WEFT_ERROR(weftInvalidUsage,
                        "emulated runtime: hostRegister(%p, %s): the range overlaps memory the runtime already "
                        "knows (allocated by it, or registered before); CUDA refuses this too",
                        ptr, formatBytes(bytes).c_str());
    }
    registry().add(ptr, Allocation{Region::kRegistered, bytes, 0, -1});
    return Status::ok();
  }
  Status hostUnregister(void* ptr) override {
    if (ptr == nullptr) return Status::ok();
    drainAll();
    Allocation a;
    if (!registry().take(ptr, Region::kRegistered, &a))
      return cannotRelease("hostUnregister", ptr, Region::kRegistered);
    return Status::ok();
  }


 protected:
  bool defersMemsets() const override { return true; }
  Status checkLaneMemory(const LaneLaunch& launch) const override { return checkLaunchPolls(launch); }
  BlockSlots* blockSlots() override {
    int device = 0;
    (void)getDevice(&device);
    return &deviceSlots(device);
  }

 private:
  static Status systemError(const char* call, size_t bytes, const char* what, int err) {
    return WEFT_ERROR(weftSystemError, "emulated runtime: %s(%s): %s: %s", call, formatBytes(bytes).c_str(), what,
                      errnoText(err).c_str());
  }
  static Status freedByExporter(const EmulatedIpcHandle& h) {
    return WEFT_ERROR(weftRemoteError,
                      "emulated runtime: ipcImport: process %d no longer holds the allocation this handle names (fd "
                      "%d, %s): it was freed",
                      h.pid, h.fd, formatBytes(h.bytes).c_str());
  }
  static Status openFailure(const EmulatedIpcHandle& h, const char* path, int err) {
    if (!processAlive(h.pid)) {
      return WEFT_ERROR(weftRemoteError,
                        "emulated runtime: ipcImport: process %d, which exported the handle, has exited", h.pid);
    }
    if (err == ENOENT) return freedByExporter(h);
    return WEFT_ERROR(weftSystemError,
                      "emulated runtime: ipcImport: open(%s): %s; both processes must run as the same user, and "
                      "the exporting one must be dumpable",
                      path, errnoText(err).c_str());
  }
};

}  // namespace

Runtime& emulatedRuntime() {
  static EmulatedRuntime runtime;
  return runtime;
}

std::unique_ptr<Runtime> makeEmulatedRuntime() { return std::make_unique<EmulatedRuntime>(); }

}  // namespace device
}  // namespace weft
