#include "transports/bridge/device_bridge.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/log.h"
#include "base/os.h"

namespace weft {
namespace bridge {
namespace {

constexpr size_t kLine = 128;
constexpr uint64_t kPeerCheckNs = 100ull * 1000 * 1000;  // checkPeer() at most every 100 ms
constexpr double kFlushSeconds = 30;  // the most a closing bridge waits to hand over its messages

size_t alignUp(size_t n, size_t a) { return (n + a - 1) / a * a; }

// The pinned block: counters and flags on their own lines, then sizes, then stamps, then the
// slots.
struct Layout {
  static constexpr size_t kHead = 0;
  static constexpr size_t kTail = kLine;
  static constexpr size_t kLaneAbort = 2 * kLine;  // written by the lane
  static constexpr size_t kFarAbort = 3 * kLine;   // written by the proxy: the far side failed
  static constexpr size_t kCursor = 4 * kLine;     // the lane's own count
  static constexpr size_t kSizes = 5 * kLine;
  size_t stamps = 0;
  size_t data = 0;
  size_t stride = 0;
  size_t total = 0;
  Layout(size_t nSlots, size_t slotBytes) {
    stride = alignUp(slotBytes, kLine);
    stamps = alignUp(kSizes + nSlots * sizeof(uint64_t), kLine);
    data = alignUp(stamps + nSlots * sizeof(uint64_t), kLine);
    total = data + nSlots * stride;
  }
};

uint64_t loadAcquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void storeRelease(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
uint32_t loadAcquire32(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void storeRelease32(uint32_t* p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

// The proxy's half: moves slots between the pinned FIFO and the host connection, and failures
// between the two sides.
class BridgeTask final : public net::ProxyTask {
 public:
  BridgeTask(Connection* host, bool sender, char* base, const Layout& layout, size_t nSlots, size_t slotBytes,
             int peer)
      : host_(host), sender_(sender), base_(base), layout_(layout), nSlots_(nSlots), slotBytes_(slotBytes), peer_(peer) {}

  bool progress() override {
    bool moved = sender_ ? forwardSends() : deliverReceives();
    relayFailures();
    return moved;
  }

 private:
  uint64_t* word(size_t offset) const { return reinterpret_cast<uint64_t*>(base_ + offset); }
  uint32_t* flag(size_t offset) const { return reinterpret_cast<uint32_t*>(base_ + offset); }
  uint64_t* sizes() const { return word(Layout::kSizes); }
  uint64_t* stamps() const { return word(layout_.stamps); }
  char* slot(uint64_t n) const { return base_ + layout_.data + (n % nSlots_) * layout_.stride; }

  // The lane posted slots: copy them into the host connection, then free them for the lane.
  bool forwardSends() {
    bool moved = false;
    const uint64_t posted = loadAcquire(word(Layout::kHead));
    while (done_ < posted) {
      void* out = host_->trySendSlot();
      if (out == nullptr) break;
      size_t bytes = std::min<size_t>(loadAcquire(&sizes()[done_ % nSlots_]), slotBytes_);
      std::memcpy(out, slot(done_), bytes);
      host_->postSend(bytes, loadAcquire(&stamps()[done_ % nSlots_]));
      storeRelease(word(Layout::kTail), ++done_);
      moved = true;
    }
    return moved;
  }

  // Messages arrived on the host connection: copy them into free pinned slots for the lane.
  bool deliverReceives() {
    bool moved = false;
    while (done_ - loadAcquire(word(Layout::kTail)) < nSlots_) {
      size_t bytes = 0;
      uint64_t stamp = 0;
      const void* in = host_->tryRecv(&bytes, &stamp);
      if (in == nullptr) break;
      bytes = std::min(bytes, slotBytes_);
      std::memcpy(slot(done_), in, bytes);
      storeRelease(&sizes()[done_ % nSlots_], bytes);
      storeRelease(&stamps()[done_ % nSlots_], stamp);
      host_->releaseRecv();
      storeRelease(word(Layout::kHead), ++done_);
      moved = true;
    }
    return moved;
  }

  void relayFailures() {
    if (!toldHost_) {
      uint32_t lane = loadAcquire32(flag(Layout::kLaneAbort));
      if (lane != 0) {
        host_->signalAbort(lane >= 2 ? static_cast<int>(lane - 2) : -1);
        toldHost_ = true;
      }
    }
    if (toldLane_) return;
    uint32_t far = 0;
    if (host_->peerAborted()) {
      int culprit = host_->peerAbortCulprit();
      far = culprit >= 0 ? static_cast<uint32_t>(culprit) + 2 : static_cast<uint32_t>(peer_) + 2;
    } else {
      uint64_t now = nowNs();
      if (now - lastCheckNs_ >= kPeerCheckNs) {
        lastCheckNs_ = now;
        if (!host_->checkPeer().isOk()) far = static_cast<uint32_t>(peer_) + 2;
      }
    }
    if (far != 0) {
      storeRelease32(flag(Layout::kFarAbort), far);
      toldLane_ = true;
    }
  }

  Connection* host_;
  bool sender_;
  char* base_;
  Layout layout_;
  size_t nSlots_;
  size_t slotBytes_;
  int peer_;
  uint64_t done_ = 0;  // slots forwarded (sender) or delivered (receiver)
  bool toldHost_ = false;
  bool toldLane_ = false;
  uint64_t lastCheckNs_ = 0;
};

class BridgeConnection final : public Connection {
 public:
  BridgeConnection(std::unique_ptr<Connection> host, bool sender, device::Runtime* runtime, void* base,
                   const Layout& layout, size_t nSlots, size_t slotBytes, int peer, net::Proxy* proxy)
      : host_(std::move(host)),
        sender_(sender),
        runtime_(runtime),
        base_(static_cast<char*>(base)),
        layout_(layout),
        nSlots_(nSlots),
        slotBytes_(slotBytes),
        peer_(peer),
        proxy_(proxy) {
    task_ = std::make_shared<BridgeTask>(host_.get(), sender, base_, layout_, nSlots, slotBytes, peer);
    proxy_->add(task_);
  }
  ~BridgeConnection() override {
    if (sender_) flush();
    proxy_->remove(task_.get());
    task_.reset();
    (void)runtime_->freeHost(base_);
  }

  size_t slotBytes() const override { return slotBytes_; }
  // The lane program is this connection's only user.
  void* trySendSlot() override { return nullptr; }
  void postSend(size_t, uint64_t) override {}
  const void* tryRecv(size_t*, uint64_t*) override { return nullptr; }
  void releaseRecv() override {}
  bool allSendsConsumed() const override {
    const uint64_t* tail = reinterpret_cast<const uint64_t*>(base_ + Layout::kTail);
    const uint64_t* cursor = reinterpret_cast<const uint64_t*>(base_ + Layout::kCursor);
    return loadAcquire(tail) == loadAcquire(cursor) && host_->allSendsConsumed();
  }
  Status checkPeer() const override { return host_->checkPeer(); }
  void signalAbort(int culprit) override {
    storeRelease32(reinterpret_cast<uint32_t*>(base_ + Layout::kLaneAbort),
                   culprit >= 0 ? static_cast<uint32_t>(culprit) + 2 : 1);
    host_->signalAbort(culprit);
  }
  bool peerAborted() const override { return host_->peerAborted(); }
  int peerAbortCulprit() const override { return host_->peerAbortCulprit(); }

  // A finished launch may have left messages in the pinned FIFO that the proxy has not handed to
  // the host connection yet: they must not be lost when the communicator goes away right after.
  void flush() {
    const uint64_t* head = reinterpret_cast<const uint64_t*>(base_ + Layout::kHead);
    const uint64_t* tail = reinterpret_cast<const uint64_t*>(base_ + Layout::kTail);
    const uint32_t* far = reinterpret_cast<const uint32_t*>(base_ + Layout::kFarAbort);
    Deadline deadline = Deadline::afterSeconds(kFlushSeconds);
    while (loadAcquire(tail) < loadAcquire(head)) {
      if (loadAcquire32(far) != 0) return;  // the peer is gone or failed: nobody will read them
      if (deadline.expired()) {
        WEFT_LOG(kWarn, kNet, "device bridge to rank %d: %llu messages still unsent after %.0f s; dropping them",
                 peer_, static_cast<unsigned long long>(loadAcquire(head) - loadAcquire(tail)), kFlushSeconds);
        return;
      }
      proxy_->wake();
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  bool deviceFifo(device::FifoView* out) override {
    out->data = base_ + layout_.data;
    out->stride = layout_.stride;
    out->nSlots = nSlots_;
    out->slotBytes = slotBytes_;
    out->sizes = reinterpret_cast<uint64_t*>(base_ + Layout::kSizes);
    out->stamps = reinterpret_cast<uint64_t*>(base_ + layout_.stamps);
    out->head = reinterpret_cast<uint64_t*>(base_ + Layout::kHead);
    out->tail = reinterpret_cast<uint64_t*>(base_ + Layout::kTail);
    out->cursor = reinterpret_cast<uint64_t*>(base_ + Layout::kCursor);
    out->selfAbort = reinterpret_cast<uint32_t*>(base_ + Layout::kLaneAbort);
    out->peerAbort = reinterpret_cast<const uint32_t*>(base_ + Layout::kFarAbort);
    out->peer = peer_;
    out->reserved = 0;
    return true;
  }

 private:
  std::unique_ptr<Connection> host_;
  bool sender_;
  device::Runtime* runtime_;
  char* base_;
  Layout layout_;
  size_t nSlots_;
  size_t slotBytes_;
  int peer_;
  net::Proxy* proxy_;
  std::shared_ptr<BridgeTask> task_;
};

}  // namespace

Status makeDeviceBridge(std::unique_ptr<Connection> host, bool sender, device::Runtime* runtime, size_t nSlots,
                        size_t slotBytes, int peer, net::Proxy* proxy, std::unique_ptr<Connection>* out) {
  if (host == nullptr || runtime == nullptr || proxy == nullptr || nSlots == 0 || slotBytes == 0) {
    return WEFT_ERROR(weftInternalError, "device bridge to rank %d: missing connection, runtime or proxy", peer);
  }
  if (slotBytes > host->slotBytes()) {
    return WEFT_ERROR(weftInternalError, "device bridge to rank %d: %zu-byte slots over a connection of %zu", peer,
                      slotBytes, host->slotBytes());
  }
  Layout layout(nSlots, slotBytes);
  void* base = nullptr;
  // The proxy thread and the lanes poll each other's counters in it while the lanes run.
  WEFT_TRY(runtime->allocHostShared(layout.total, &base));
  std::memset(base, 0, layout.total);
  *out = std::make_unique<BridgeConnection>(std::move(host), sender, runtime, base, layout, nSlots, slotBytes, peer,
                                            proxy);
  return Status::ok();
}

}  // namespace bridge
}  // namespace weft
