#include "transports/net/net_link.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "base/os.h"

namespace weft {
namespace net {
namespace {

constexpr size_t kSlotAlign = 4096;

size_t strideFor(size_t slotBytes) {
  size_t align = slotBytes >= kSlotAlign ? kSlotAlign : 64;
  return (slotBytes + align - 1) / align * align;
}

// What both ends share: the link, its proxy, and the failure reporting.
class NetConnection : public Connection {
 public:
  NetConnection(std::shared_ptr<NetLink> link, std::shared_ptr<Proxy> proxy)
      : link_(std::move(link)), proxy_(std::move(proxy)), ring_(link_->ring()) {}
  size_t slotBytes() const override { return ring_.slotBytes(); }
  Status checkPeer() const override { return link_->state().status(); }
  void signalAbort(int culprit) override {
    link_->state().abortCulprit.store(culprit);
    link_->state().abortRequested.store(true);
    proxy_->wake();
  }
  bool peerAborted() const override { return link_->state().peerAborted(); }
  int peerAbortCulprit() const override { return link_->state().peerCulprit(); }

 protected:
  std::shared_ptr<NetLink> link_;
  std::shared_ptr<Proxy> proxy_;
  SlotRing& ring_;
};

// The sending end, as the executor sees it.
class NetSendConnection final : public NetConnection {
 public:
  NetSendConnection(std::shared_ptr<NetLink> link, std::shared_ptr<Proxy> proxy, double flushSeconds)
      : NetConnection(std::move(link), std::move(proxy)), flushSeconds_(flushSeconds) {}

  ~NetSendConnection() override {
    // Slots posted by the last operation may still be on their way: let the proxy send them
    // (bounded) so the peer gets them even when this side tears down at once.
    Deadline deadline = Deadline::afterSeconds(flushSeconds_);
    while (!link_->state().failed() && !link_->state().abortRequested.load() &&
           ring_.tail.load(std::memory_order_acquire) != head_ && !deadline.expired()) {
      proxy_->wake();
      sched_yield();
    }
    proxy_->remove(link_.get());
  }

  void* trySendSlot() override {
    if (head_ - cachedTail_ >= ring_.nSlots()) {
      cachedTail_ = ring_.tail.load(std::memory_order_acquire);
      if (head_ - cachedTail_ >= ring_.nSlots()) {
        link_->tryDrive();
        cachedTail_ = ring_.tail.load(std::memory_order_acquire);
        if (head_ - cachedTail_ >= ring_.nSlots()) return nullptr;
      }
    }
    return ring_.slot(head_);
  }
  void postSend(size_t bytes, uint64_t stamp) override {
    ring_.size(head_).store(bytes, std::memory_order_relaxed);
    ring_.stamp(head_).store(stamp, std::memory_order_relaxed);
    ring_.head.store(++head_, std::memory_order_release);
    // Put it on the wire now; what does not fit is the proxy's to finish.
    link_->tryDrive();
    if (ring_.tail.load(std::memory_order_acquire) != head_) proxy_->wake();
  }
  const void* tryRecv(size_t*, uint64_t*) override { return nullptr; }
  void releaseRecv() override {}
  bool allSendsConsumed() const override {
    if (link_->allSendsDelivered()) return true;
    link_->tryDrive();  // the caller waits for this: move it along
    return link_->allSendsDelivered();
  }
  bool sendsReferencedBytes() const override { return link_->sendsReferencedBytes(); }

 private:
  double flushSeconds_;
  uint64_t head_ = 0;
  uint64_t cachedTail_ = 0;
};

// The receiving end, as the executor sees it.
class NetRecvConnection final : public NetConnection {
 public:
  NetRecvConnection(std::shared_ptr<NetLink> link, std::shared_ptr<Proxy> proxy)
      : NetConnection(std::move(link), std::move(proxy)) {}
  ~NetRecvConnection() override { proxy_->remove(link_.get()); }

  void* trySendSlot() override { return nullptr; }
  void postSend(size_t, uint64_t) override {}
  const void* tryRecv(size_t* bytes, uint64_t* stamp) override {
    if (cachedHead_ == tail_) {
      cachedHead_ = ring_.head.load(std::memory_order_acquire);
      if (cachedHead_ == tail_) {
        link_->tryDrive();
        cachedHead_ = ring_.head.load(std::memory_order_acquire);
        if (cachedHead_ == tail_) return nullptr;
      }
    }
    size_t n = ring_.size(tail_).load(std::memory_order_relaxed);
    *bytes = n < ring_.slotBytes() ? n : ring_.slotBytes();
    *stamp = ring_.stamp(tail_).load(std::memory_order_relaxed);
    return ring_.slot(tail_);
  }
  void releaseRecv() override {
    bool wasFull = cachedHead_ - tail_ >= ring_.nSlots();
    ring_.tail.store(++tail_, std::memory_order_release);
    if (link_->acksReleases()) {
      // Tell the sender now, on this thread; what cannot go at once is the proxy's to send.
      link_->tryDrive();
      if (link_->wantsDrive()) proxy_->wake();
    }
    // A proxy with no free slot stops reading and may sleep; one just freed needs it awake.
    if (wasFull || link_->wantsWakeOnRelease()) proxy_->wake();
  }
  bool allSendsConsumed() const override { return true; }

 private:
  uint64_t tail_ = 0;
  uint64_t cachedHead_ = 0;
};

}  // namespace

SlotRing::SlotRing(size_t nSlots, size_t slotBytes, size_t spareBytes)
    : nSlots_(nSlots),
      slotBytes_(slotBytes),
      stride_(strideFor(slotBytes + spareBytes)),
      sizes_(new std::atomic<uint64_t>[nSlots]),
      stamps_(new std::atomic<uint64_t>[nSlots]) {
  // aligned_alloc wants a multiple of the alignment (small slots make totalBytes() smaller).
  size_t allocBytes = (std::max<size_t>(totalBytes(), 1) + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
  data_ = static_cast<char*>(std::aligned_alloc(kSlotAlign, allocBytes));
  if (data_ == nullptr) throw std::bad_alloc();
  for (size_t i = 0; i < nSlots_; ++i) sizes_[i].store(0, std::memory_order_relaxed);
  for (size_t i = 0; i < nSlots_; ++i) stamps_[i].store(0, std::memory_order_relaxed);
}

SlotRing::~SlotRing() { std::free(data_); }

void LinkState::fail(Status status, bool byPeer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_.load(std::memory_order_relaxed)) return;
  status_ = std::move(status);
  if (byPeer) peerAborted_.store(true, std::memory_order_release);
  failed_.store(true, std::memory_order_release);
}

Status LinkState::status() const {
  if (!failed()) return Status::ok();
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

NetLink::NetLink(const ConnectRequest& req, bool sending, size_t spareBytes)
    : sending_(sending),
      selfRank_(req.self.rank),
      peerRank_(req.peer.rank),
      ring_(req.nSlots, req.slotBytes, spareBytes) {
  char text[160];
  std::snprintf(text, sizeof(text), "rank %d (host %.64s) lane %d", req.peer.rank, req.peer.hostName, req.lane);
  peerText_ = text;
}

std::unique_ptr<Connection> makeNetConnection(std::shared_ptr<NetLink> link, std::shared_ptr<Proxy> proxy,
                                              double flushSeconds) {
  proxy->add(link);
  if (link->sending()) return std::make_unique<NetSendConnection>(std::move(link), std::move(proxy), flushSeconds);
  return std::make_unique<NetRecvConnection>(std::move(link), std::move(proxy));
}

}  // namespace net
}  // namespace weft
