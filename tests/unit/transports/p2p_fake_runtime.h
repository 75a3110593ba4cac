// A device runtime over host memory with pretend devices, for testing the GPU peer-to-peer
// transport on machines without a GPU: allocations remember their device, IPC handles carry
// the pointer (so "another process" is this one), peer access can be refused, allocations can
// be made to fail, and every allocation and IPC mapping is counted so tests can see leaks
// (memory freed while imported counts until its last import closes).
#ifndef WEFT_TESTS_UNIT_TRANSPORTS_P2P_FAKE_RUNTIME_H_
#define WEFT_TESTS_UNIT_TRANSPORTS_P2P_FAKE_RUNTIME_H_

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "device/device.h"

namespace weft {
namespace p2ptest {

class FakeRuntime final : public device::Runtime {
 public:
  explicit FakeRuntime(int devices = 2) : devices_(devices) {}
  ~FakeRuntime() override {
    for (auto& [ptr, a] : allocs_) std::free(ptr);
  }

  // Test knobs.
  void refusePeerAccess(bool refuse) { refusePeer_ = refuse; }
  void failAllocations(bool fail) { failAlloc_ = fail; }
  size_t liveAllocations() const {
    std::lock_guard<std::mutex> lock(mu_);
    return allocs_.size();
  }
  int liveImports() const {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (auto& [ptr, count] : imports_) n += count;
    return n;
  }
  int exports() const { return exports_; }
  bool peerEnabled(int from, int to) const {
    std::lock_guard<std::mutex> lock(mu_);
    return enabled_.count({from, to}) != 0;
  }
  // The device an allocation holding `p` lives on, or -1.
  int deviceOf(const void* p) const {
    std::lock_guard<std::mutex> lock(mu_);
    const char* c = static_cast<const char*>(p);
    for (auto& [ptr, a] : allocs_) {
      const char* base = static_cast<const char*>(ptr);
      if (c >= base && c < base + a.bytes) return a.device;
    }
    return -1;
  }
  bool allZero(const void* p, size_t bytes) const {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < bytes; ++i) {
      if (b[i] != 0) return false;
    }
    return true;
  }

  const char* name() const override { return "fake"; }
  std::string description() const override { return "fake devices over host memory"; }
  int deviceCount() const override { return devices_; }
  Status deviceProps(int device, device::DeviceProps* out) const override {
    WEFT_TRY(checkDevice(device));
    out->name = "fake";
    out->warpSize = 32;
    out->multiProcessors = 1;
    return Status::ok();
  }
  Status setDevice(int device) override {
    WEFT_TRY(checkDevice(device));
    current() = device;
    return Status::ok();
  }
  Status getDevice(int* device) const override {
    *device = current();
    return Status::ok();
  }
  Status canAccessPeer(int device, int peer, bool* out) const override {
    WEFT_TRY(checkDevice(device));
    WEFT_TRY(checkDevice(peer));
    *out = device == peer || !refusePeer_;
    return Status::ok();
  }
  Status enablePeerAccess(int peer) override {
    WEFT_TRY(checkDevice(peer));
    if (refusePeer_) return Status::error(weftUnhandledDeviceError, "fake: peer access refused");
    std::lock_guard<std::mutex> lock(mu_);
    enabled_.insert({current(), peer});
    return Status::ok();
  }

  Status allocDevice(size_t bytes, void** out) override {
    if (failAlloc_) return Status::error(weftUnhandledDeviceError, "fake: out of device memory");
    if (bytes == 0) {
      *out = nullptr;
      return Status::ok();
    }
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    std::memset(p, 0xa5, bytes);  // like fresh device memory: not zero
    std::lock_guard<std::mutex> lock(mu_);
    allocs_[p] = Alloc{bytes, current()};
    *out = p;
    return Status::ok();
  }
  Status freeDevice(void* ptr) override {
    if (ptr == nullptr) return Status::ok();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = allocs_.find(ptr);
    if (it == allocs_.end()) return Status::error(weftInvalidArgument, "fake: freeDevice of an unknown pointer");
    // Like a driver's reference count: memory still imported elsewhere goes when the last
    // importer closes it (each end of a p2p FIFO imports the other's block).
    if (imports_.count(ptr) != 0 && imports_[ptr] > 0) {
      if (it->second.freed) return Status::error(weftInvalidUsage, "fake: freeDevice twice");
      it->second.freed = true;
      return Status::ok();
    }
    std::free(ptr);
    allocs_.erase(it);
    return Status::ok();
  }
  Status allocHost(size_t bytes, void** out) override { return allocDevice(bytes, out); }
  // Remembered, so that tests can check what the transport asked for.
  Status allocDeviceShared(size_t bytes, void** out) override {
    WEFT_TRY(allocDevice(bytes, out));
    std::lock_guard<std::mutex> lock(mu_);
    shared_.insert(*out);
    return Status::ok();
  }
  Status allocHostShared(size_t bytes, void** out) override { return allocDeviceShared(bytes, out); }
  bool allocatedShared(const void* p) const {
    std::lock_guard<std::mutex> lock(mu_);
    return shared_.count(p) != 0;
  }
  Status freeHost(void* ptr) override { return freeDevice(ptr); }
  Status pointerInfo(const void* ptr, device::PointerInfo* out) const override {
    int d = deviceOf(ptr);
    *out = d >= 0 ? device::PointerInfo{device::MemoryKind::kDevice, d} : device::PointerInfo{};
    return Status::ok();
  }

  Status copy(void* dst, const void* src, size_t bytes, device::CopyKind) override {
    if (dst == nullptr || src == nullptr) return Status::error(weftInvalidArgument, "fake: copy of a null pointer");
    std::memmove(dst, src, bytes);
    return Status::ok();
  }
  Status copyAsync(void* dst, const void* src, size_t bytes, device::CopyKind kind, device::Stream) override {
    return copy(dst, src, bytes, kind);
  }
  Status memset(void* dst, int value, size_t bytes) override {
    if (dst == nullptr) return Status::error(weftInvalidArgument, "fake: memset of a null pointer");
    std::memset(dst, value, bytes);
    return Status::ok();
  }
  Status memsetAsync(void* dst, int value, size_t bytes, device::Stream) override { return memset(dst, value, bytes); }

  // Streams are tokens (the transport zeroes its FIFOs on one of its own); work is done at once.
  Status streamCreate(device::Stream* out) override {
    *out = reinterpret_cast<device::Stream>(new char);
    return Status::ok();
  }
  Status streamDestroy(device::Stream s) override {
    delete reinterpret_cast<char*>(s);
    return Status::ok();
  }
  Status streamSynchronize(device::Stream) override { return Status::ok(); }
  Status streamQuery(device::Stream, bool* done) override {
    *done = true;
    return Status::ok();
  }
  Status eventCreate(device::Event*, device::EventKind) override { return unsupported("eventCreate"); }
  Status eventDestroy(device::Event) override { return unsupported("eventDestroy"); }
  Status eventRecord(device::Event, device::Stream) override { return unsupported("eventRecord"); }
  Status eventSynchronize(device::Event) override { return unsupported("eventSynchronize"); }
  Status eventQuery(device::Event, bool*) override { return unsupported("eventQuery"); }
  Status eventElapsedMs(device::Event, device::Event, float*) override { return unsupported("eventElapsedMs"); }

  // The handle is "FAKEIPC!" and the pointer; importing gives the same pointer back.
  Status ipcExport(void* ptr, device::IpcHandle* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (allocs_.count(ptr) == 0) return Status::error(weftInvalidArgument, "fake: ipcExport of an unknown pointer");
    std::memset(out->bytes, 0, sizeof(out->bytes));
    std::memcpy(out->bytes, kIpcMagic, 8);
    std::memcpy(out->bytes + 8, &ptr, sizeof(ptr));
    ++exports_;
    return Status::ok();
  }
  Status ipcImport(const device::IpcHandle& handle, void** out) override {
    void* ptr = nullptr;
    std::memcpy(&ptr, handle.bytes + 8, sizeof(ptr));
    std::lock_guard<std::mutex> lock(mu_);
    if (std::memcmp(handle.bytes, kIpcMagic, 8) != 0 || allocs_.count(ptr) == 0) {
      return Status::error(weftUnhandledDeviceError, "fake: ipcImport: invalid handle");
    }
    ++imports_[ptr];
    *out = ptr;
    return Status::ok();
  }
  Status ipcClose(void* ptr) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = imports_.find(ptr);
    if (it == imports_.end() || it->second == 0) {
      return Status::error(weftInvalidArgument, "fake: ipcClose of a pointer that was not imported");
    }
    --it->second;
    auto a = allocs_.find(ptr);
    if (it->second == 0 && a != allocs_.end() && a->second.freed) {
      std::free(ptr);
      allocs_.erase(a);
    }
    return Status::ok();
  }

  Status launchReduceCopy(const device::ReduceCopyArgs&, device::Stream) override {
    return unsupported("launchReduceCopy");
  }
  Status launchLanes(const device::LaneLaunch&, device::Stream) override { return unsupported("launchLanes"); }
  Status streamWaitEvent(device::Stream, device::Event) override { return unsupported("streamWaitEvent"); }
  Status hostRegister(void*, size_t) override { return Status::ok(); }
  Status hostUnregister(void*) override { return Status::ok(); }
  Status streamIsCapturing(device::Stream, bool* capturing) override {
    *capturing = false;
    return Status::ok();
  }
  Status graphCaptureBegin(device::Stream) override { return unsupported("graphCaptureBegin"); }
  Status graphCaptureEnd(device::Stream, device::Graph*) override { return unsupported("graphCaptureEnd"); }
  Status graphLaunch(device::Graph, device::Stream) override { return unsupported("graphLaunch"); }
  Status graphDestroy(device::Graph) override { return unsupported("graphDestroy"); }

 private:
  struct Alloc {
    size_t bytes = 0;
    int device = -1;
    bool freed = false;  // freed by its owner while imported: goes at the last ipcClose
  };
  static constexpr char kIpcMagic[9] = "FAKEIPC!";

  static int& current() {
    thread_local int device = 0;
    return device;
  }
  Status checkDevice(int device) const {
    if (device < 0 || device >= devices_) return Status::error(weftInvalidArgument, "fake: no such device");
    return Status::ok();
  }
  static Status unsupported(const char* call) {
    return Status::error(weftInvalidUsage, std::string("fake runtime: ") + call + " is not supported");
  }

  int devices_;
  bool refusePeer_ = false;
  bool failAlloc_ = false;
  mutable std::mutex mu_;
  std::map<void*, Alloc> allocs_;
  std::map<void*, int> imports_;
  std::set<std::pair<int, int>> enabled_;
  std::set<const void*> shared_;  // allocated by allocDeviceShared / allocHostShared
  int exports_ = 0;
};

}  // namespace p2ptest
}  // namespace weft

#endif  // WEFT_TESTS_UNIT_TRANSPORTS_P2P_FAKE_RUNTIME_H_
