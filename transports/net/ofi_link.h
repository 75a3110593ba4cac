// One direction of one edge over libfabric tagged messages (a NetLink): what OfiTransport
// hands to makeNetConnection().
//
// Every message's tag says what it is and whose: (kind, rank of the endpoint that sends it,
// lane, sequence number). Data carries the slot's sequence number, so the receiver posts one
// fi_trecv per free slot for exactly the message that belongs there: the provider may deliver
// and complete messages in any order, and the ring counters advance only over contiguous
// completed slots.
//
// Flow control is by credits. The sender may have nSlots messages the receiver has not
// released yet; the receiver returns credits (a kFrameCredit control message carrying the
// total released so far, injected when the provider can) as the executor releases slots:
// batched while the executor still holds received slots (up to half the ring), at once when it
// has caught up. Half the window always stays open, so a schedule that needs one free slot per
// link to move never waits on a withheld credit. The receiver learns the sender's
// address from a tagged hello the sender sends first; the sender learns the receiver's from
// the offer the receiver sends through the bootstrap (ofi_transport.cc). signalAbort() sends
// a kFrameAbort control message, and the peer fails at once.
#ifndef WEFT_TRANSPORTS_NET_OFI_LINK_H_
#define WEFT_TRANSPORTS_NET_OFI_LINK_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "transports/net/net_link.h"
#include "transports/net/ofi_domain.h"

namespace weft {
namespace net {

// Tag layout: kind (4 bits) | lane (12 bits) | rank (24 bits) | sequence (24 bits).
enum OfiTagKind : uint64_t {
  kOfiTagData = 1,        // sender -> receiver: a slot's bytes
  kOfiTagHello = 2,       // sender -> receiver: the sender's address (OfiHello)
  kOfiTagToSender = 3,    // receiver -> sender: credit or abort (FrameHeader)
  kOfiTagToReceiver = 4,  // sender -> receiver: abort (FrameHeader)
};
constexpr int kOfiMaxLanes = 1 << 12;
constexpr int kOfiMaxRanks = 1 << 24;
constexpr uint64_t kOfiSeqMask = (uint64_t{1} << 24) - 1;
constexpr uint64_t ofiTag(OfiTagKind kind, int rank, int lane, uint64_t seq) {
  return (static_cast<uint64_t>(kind) << 60) | ((static_cast<uint64_t>(lane) & 0xfff) << 48) |
         ((static_cast<uint64_t>(rank) & 0xffffff) << 24) | (seq & kOfiSeqMask);
}

// Every data message ends with the stamp its slot was posted with (Connection::postSend): the
// payload, then these 8 bytes. The slot ring leaves room for them after each slot.
constexpr size_t kStampTrailerBytes = sizeof(uint64_t);

// Longest endpoint name carried (fi_getname: 16 bytes for tcp, 32 for efa, a path for shm).
constexpr size_t kOfiMaxName = 256;

// Sender -> receiver, the first tagged message of a link.
struct OfiHello {
  uint64_t magic = 0;  // kOfiHelloMagic
  int32_t senderRank = 0;
  int32_t lane = 0;
  uint64_t nSlots = 0;
  uint64_t slotBytes = 0;
  uint32_t nameBytes = 0;
  uint32_t reserved = 0;
  char name[kOfiMaxName] = {0};
};
constexpr uint64_t kOfiHelloMagic = 0x4f4c4c4549464f57ull;  // "WOFIELLO"

class OfiLink final : public NetLink, private OfiOpOwner {
 public:
  // `peer`: the receiver's address for a sending link; a receiving link learns its peer's from
  // the hello.
  OfiLink(const ConnectRequest& req, bool sending, std::shared_ptr<OfiDomain> domain, fi_addr_t peer);
  // Cancels what is still posted and waits (bounded) for the provider to let go of the slots.
  ~OfiLink() override;

  // Registers the slots, posts the first receives (and the hello), and joins the domain.
  Status start();

  bool drive() override { return domain_->tryProgress(); }
  // The domain is the proxy's task; links have nothing of their own to sleep on.
  int pollFd() const override { return kNothingToWaitFor; }
  bool wantsWakeOnRelease() const override { return true; }
  // A reference posted to a sending link is sent as its bytes, copied into the registered slot
  // when the slot is posted (a peer in another process cannot read this one's memory).
  bool sendsReferencedBytes() const override { return sending_; }
  // Every posted slot has been sent and released by the receiver (all credits are back).
  bool allSendsDelivered() const override;

 private:
  enum OpKind : uint32_t { kOpData = 1, kOpHello, kOpControlRecv, kOpCredit, kOpAbort };
  static constexpr int kControlRecvs = 2;

  // Buffers of the small messages, registered once with the slots.
  struct Control {
    OfiHello hello;
    FrameHeader received[kControlRecvs];
    FrameHeader credit;
    FrameHeader abort;
  };

  void onCompletion(OfiOp* op, size_t bytes, uint64_t tag) override;
  void onError(OfiOp* op, int err, const std::string& text) override;
  bool post() override;
  bool needsProgress() const override;

  bool postSends();
  bool postReceives();
  bool postControlReceives();
  bool postCredit();
  bool handleAbortRequest();
  bool sendAbort();
  // A data operation finished (or a slot was injected): moves the ring over contiguous ones.
  void slotDone(uint32_t index, size_t bytes);
  // Receiving: makes a completed message of `bytes` (payload and stamp trailer) visible to the
  // executor as slot `counter`'s size and stamp.
  void publishReceived(uint64_t counter, size_t bytes);
  void controlReceived(OfiOp* op, size_t bytes);
  void helloReceived(size_t bytes);
  void failProtocol(const char* what);
  void failPost(const char* what, ssize_t rc);
  // Sending: a slot posted as a ReferenceMessage gets the referenced bytes (*payload their
  // count); false when the link failed instead.
  bool inlineReference(char* slot, size_t* payload);
  void initOp(OfiOp* op, uint32_t kind, uint32_t index);
  int outstanding() const;

  std::shared_ptr<OfiDomain> domain_;
  const int lane_;
  fi_addr_t peerAddr_;
  bool peerKnown_;
  std::unique_ptr<Control> control_;
  void* ringDesc_ = nullptr;
  void* controlDesc_ = nullptr;
  bool registered_ = false;
  bool closing_ = false;

  std::vector<OfiOp> dataOps_;       // one per slot
  std::vector<uint8_t> dataDone_;    // completed, not yet counted
  std::vector<uint64_t> dataBytes_;  // receiving: bytes of each completed slot
  OfiOp helloOp_;
  OfiOp controlOps_[kControlRecvs];
  OfiOp creditOp_;
  OfiOp abortOp_;

  // Sending: slots handed to fi_tsend, slots completed (ring tail), total released by the peer.
  // Receiving: receives posted, slots completed (ring head), credits sent.
  uint64_t posted_ = 0;
  uint64_t completed_ = 0;
  uint64_t creditSent_ = 0;
  std::atomic<uint64_t> released_{0};
  bool helloPending_ = false;
  bool abortHandled_ = false;  // signalAbort() seen
  bool abortPending_ = false;  // the abort message is still to go out
};

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_OFI_LINK_H_
