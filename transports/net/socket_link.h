// One direction of one edge over one TCP connection (a NetLink): what SocketTransport
// (socket_transport.h) hands to makeNetConnection(). The sending link writes each posted slot
// as a FrameHeader plus the bytes and reads what the receiver sends back (acknowledgements, an
// abort); the receiving link reads a header, then the bytes straight into a free slot (leaving
// them in the kernel while none is free), and acknowledges every message the executor releases
// (a kFrameCredit frame carrying the count). The frame checks are socket_wire.h's.
#ifndef WEFT_TRANSPORTS_NET_SOCKET_LINK_H_
#define WEFT_TRANSPORTS_NET_SOCKET_LINK_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "base/socket.h"
#include "transports/net/net_link.h"

namespace weft {
namespace net {

class SocketLink final : public NetLink {
 public:
  SocketLink(const ConnectRequest& req, bool sending, Socket socket)
      : NetLink(req, sending), lane_(req.lane), socket_(std::move(socket)) {
    if (socket_.valid()) {
      describePeer();
      fd_.store(socket_.fd());
    }
  }

  // An abort the executor asked for that the proxy had no turn to send yet goes out before the
  // socket closes (a rank that failed tears its communicator down at once): the peer would
  // otherwise see only the close and take this rank, not the one it blames, for the cause.
  ~SocketLink() override {
    if (socket_.valid() && !state_.failed() && state_.abortRequested.load()) sendAbort();
  }

  int lane() const { return lane_; }
  bool sendsReferencedBytes() const override { return true; }
  // The receiver acknowledges every message it released (a kFrameCredit frame carrying the
  // count), so that a sender's allSendsConsumed() means consumed, not just written to the
  // kernel: a receiver that refuses a message (another call: collectives/call_stamp.h) never
  // releases it, and the sender fails instead of returning success.
  bool allSendsDelivered() const override {
    uint64_t head = ring_.head.load(std::memory_order_acquire);
    return ring_.tail.load(std::memory_order_acquire) == head && consumed_.load(std::memory_order_acquire) >= head;
  }
  bool acksReleases() const override { return !sending_; }
  bool wantsDrive() const override {
    return !sending_ && !ackClosed_.load(std::memory_order_relaxed) &&
           ring_.tail.load(std::memory_order_acquire) != ackSent_.load(std::memory_order_relaxed);
  }

  // Receiving link: the connection the sender opened, handed over by the listener (proxy
  // thread); drive() adopts it.
  void attach(Socket socket) {
    std::lock_guard<std::mutex> lock(handoverMutex_);
    handover_ = std::move(socket);
    handedOver_.store(true, std::memory_order_release);
  }

  bool drive() override;
  int pollFd() const override;
  short pollEvents() const override;

 private:
  enum class Read { kComplete, kWouldBlock, kFailed };

  void describePeer();
  bool roomForOne() const;
  void failIo(const char* doing, int err);
  void failClosed(bool midMessage);
  bool handleFrame(const FrameHeader& h);
  bool sendAbort();
  Read readInto(char* p, size_t bytes, size_t* done, bool midMessage, bool* moved);
  bool readControl();
  bool sendAck();
  bool progressSend();
  bool progressRecv();

  const int lane_;
  Socket socket_;             // touched by drive() only
  std::atomic<int> fd_{-1};   // socket_'s descriptor once it is set, for pollFd()
  std::mutex handoverMutex_;  // guards handover_
  Socket handover_;
  std::atomic<bool> handedOver_{false};
  FrameHeader header_;
  size_t headerDone_ = 0;
  size_t dataDone_ = 0;
  FrameHeader control_;
  size_t controlDone_ = 0;
  FrameHeader ack_;  // receiving: the acknowledgement on its way
  size_t ackDone_ = 0;
  std::atomic<uint64_t> ackSent_{0};    // receiving: released messages the sender knows of
  std::atomic<uint64_t> consumed_{0};   // sending: messages the receiver acknowledged
  std::atomic<bool> ackClosed_{false};  // receiving: the sender no longer takes acknowledgements
  std::atomic<bool> abortSent_{false};
};

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_SOCKET_LINK_H_
