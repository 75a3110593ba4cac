// What every network transport shares: the slot ring between the executor and the proxy, the
// link state the proxy reports failures through, and the Connection objects the executor sees.
//
// A NetLink is one direction of one edge, as the proxy sees it (a ProxyTask). Its ring has
// nSlots slots of slotBytes bytes in this process's memory:
//   sending link:   the executor produces (head = slots posted), the proxy consumes (tail =
//                   slots handed to the network, free to refill);
//   receiving link: the proxy produces (head = slots filled from the network), the executor
//                   consumes (tail = slots released).
// Each counter has one writer; the other side reads it with acquire loads, so a slot's bytes
// and size are visible once its counter moves. The socket and libfabric transports subclass
// NetLink with their own progress(); NetSendConnection / NetRecvConnection wrap any of them.
#ifndef WEFT_TRANSPORTS_NET_NET_LINK_H_
#define WEFT_TRANSPORTS_NET_NET_LINK_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "transports/net/proxy.h"
#include "transports/transport.h"

namespace weft {
namespace net {

// The frame that precedes every message on a byte stream (the socket transport, the plugin
// transport) and the control messages of the transports. 24 bytes, little-endian host order
// (peers run the same build on the same architecture; the magic catches anything else).
struct FrameHeader {
  uint32_t magic = 0;  // kFrameMagic
  uint32_t type = 0;   // FrameType
  uint64_t bytes = 0;  // payload bytes that follow (kData); culprit rank + 1 (kAbort); credits
  uint64_t stamp = 0;  // kData: the stamp posted with the message (Connection::postSend)
};
static_assert(sizeof(FrameHeader) == 24, "FrameHeader is a wire format");
constexpr uint32_t kFrameMagic = 0x32544657u;  // "WFT2": version 2 carries stamps
enum FrameType : uint32_t { kFrameData = 1, kFrameAbort = 2, kFrameCredit = 3 };

class SlotRing {
 public:
  // `spareBytes`: room after each slot's slotBytes that the transport may use (a trailer).
  SlotRing(size_t nSlots, size_t slotBytes, size_t spareBytes = 0);
  ~SlotRing();
  SlotRing(const SlotRing&) = delete;
  SlotRing& operator=(const SlotRing&) = delete;

  size_t nSlots() const { return nSlots_; }
  size_t slotBytes() const { return slotBytes_; }
  size_t stride() const { return stride_; }
  char* base() const { return data_; }
  size_t totalBytes() const { return nSlots_ * stride_; }
  char* slot(uint64_t counter) const { return data_ + (counter % nSlots_) * stride_; }
  std::atomic<uint64_t>& size(uint64_t counter) { return sizes_[counter % nSlots_]; }
  // The stamp posted with the slot; written and read like its size.
  std::atomic<uint64_t>& stamp(uint64_t counter) { return stamps_[counter % nSlots_]; }

  alignas(64) std::atomic<uint64_t> head{0};
  alignas(64) std::atomic<uint64_t> tail{0};

 private:
  size_t nSlots_;
  size_t slotBytes_;
  size_t stride_;
  char* data_ = nullptr;
  std::unique_ptr<std::atomic<uint64_t>[]> sizes_;
  std::unique_ptr<std::atomic<uint64_t>[]> stamps_;
};

// How a link failed, written once by whichever side notices first, read by the executor.
class LinkState {
 public:
  // Records the first failure; later ones are dropped. `byPeer`: the peer told us it failed
  // (an abort frame), which executors treat as a definite failure of the operation.
  void fail(Status status, bool byPeer);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  bool peerAborted() const { return peerAborted_.load(std::memory_order_acquire); }
  Status status() const;

  // The executor's side asked to tell the peer it failed (signalAbort()), and whom it blamed.
  std::atomic<bool> abortRequested{false};
  std::atomic<int> abortCulprit{-1};
  // The culprit the peer named in its abort message (-1: none or not known). Set before fail().
  void setPeerCulprit(int rank) { peerCulprit_.store(rank, std::memory_order_relaxed); }
  int peerCulprit() const { return peerCulprit_.load(std::memory_order_relaxed); }

 private:
  mutable std::mutex mutex_;
  Status status_;
  std::atomic<bool> failed_{false};
  std::atomic<bool> peerAborted_{false};
  std::atomic<int> peerCulprit_{-1};
};

class NetLink : public ProxyTask {
 public:
  // `spareBytes`: room after each slot for a transport's trailer (SlotRing).
  NetLink(const ConnectRequest& req, bool sending, size_t spareBytes = 0);
  ~NetLink() override = default;

  // Moves what can move now. Both the proxy and the executor's thread call it: the executor
  // drives the link itself while it waits on it (no thread hand-off on the latency path), the
  // proxy whenever the executor is elsewhere. Whoever comes second skips (returns false).
  bool tryDrive() {
    if (progressing_.exchange(true, std::memory_order_acquire)) return false;
    bool moved = drive();
    progressing_.store(false, std::memory_order_release);
    return moved;
  }
  // The proxy's turn. It finishes sends the executor could not complete, and receives only
  // for links whose executor does not drive them itself (see proxyReceives_).
  // A receiving link's abort request is the proxy's to send too: the executor that asked may
  // never drive the link again.
  bool progress() final {
    return (sending_ || proxyReceives_ || state_.abortRequested.load(std::memory_order_relaxed) || wantsDrive()) &&
           tryDrive();
  }
  bool proxyReceives() const { return proxyReceives_; }

  bool sending() const { return sending_; }
  SlotRing& ring() { return ring_; }
  LinkState& state() { return state_; }
  // "rank 3 (host b, 198.18.0.2:40112) lane 1": for messages.
  const std::string& peerText() const { return peerText_; }
  int peerRank() const { return peerRank_; }
  int selfRank() const { return selfRank_; }
  // Sending link: every posted slot has reached the peer's receive slots (or, for a stream
  // transport, the kernel's socket buffer; see the transport).
  virtual bool allSendsDelivered() const {
    return ring_.tail.load(std::memory_order_acquire) == ring_.head.load(std::memory_order_acquire);
  }
  // Sending link: drive() sends the bytes a ReferenceMessage slot names (Connection::
  // sendsReferencedBytes).
  virtual bool sendsReferencedBytes() const { return false; }
  // Receiving link: the proxy must hear of every released slot (it returns credits).
  virtual bool wantsWakeOnRelease() const { return false; }
  // Receiving link: drive() tells the sender of released slots (acknowledgements), so it must
  // run after every release, and whenever wantsDrive() says one is still to be told.
  virtual bool acksReleases() const { return false; }
  virtual bool wantsDrive() const { return false; }
  // Sets the peer part of the description once it is known (the address, after connecting).
  void setPeerText(std::string text) { peerText_ = std::move(text); }

 protected:
  // The transport's progress (one caller at a time).
  virtual bool drive() = 0;

  const bool sending_;
  // Receiving link: whether the proxy reads the network for it. The host executor polls its
  // receiving links and reads them itself when it finds them empty, which on a loaded host
  // beats waking a second thread for every message (measured: perf/RESULTS.md); a device
  // executor, which cannot make system calls, needs the proxy.
  bool proxyReceives_ = false;
  const int selfRank_;
  const int peerRank_;
  SlotRing ring_;
  LinkState state_;
  std::string peerText_;

 private:
  std::atomic<bool> progressing_{false};
};

// Registers `link` with `proxy` for the connection's lifetime and gives the executor the
// Connection interface over it. The destructor waits (up to `flushDeadline`) for the proxy to
// put posted slots on the wire, then removes the link.
std::unique_ptr<Connection> makeNetConnection(std::shared_ptr<NetLink> link, std::shared_ptr<Proxy> proxy,
                                              double flushSeconds);

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_NET_LINK_H_
