#include "transports/net/ofi_link.h"

#include <rdma/fi_errno.h>
#include <sched.h>

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "base/os.h"

namespace weft {
namespace net {
namespace {

// How long a closing link waits for the provider to finish or cancel what it posted.
constexpr double kDrainSeconds = 2.0;
// How long a closing link retries an abort the provider has no room for: a live peer's takes
// milliseconds, and one that cannot go in this long is to an unreachable (or dead) peer, which
// has no one to tell; a rank closes several links in a row, and each would add it to its exit.
constexpr double kAbortPostSeconds = 0.25;

FrameHeader frame(FrameType type, uint64_t value) {
  FrameHeader h;
  h.magic = kFrameMagic;
  h.type = type;
  h.bytes = value;
  return h;
}

}  // namespace

OfiLink::OfiLink(const ConnectRequest& req, bool sending, std::shared_ptr<OfiDomain> domain, fi_addr_t peer)
    : NetLink(req, sending, kStampTrailerBytes),
      domain_(std::move(domain)),
      lane_(req.lane),
      peerAddr_(peer),
      peerKnown_(sending),
      control_(new Control()),
      dataOps_(req.nSlots),
      dataDone_(req.nSlots, 0),
      dataBytes_(req.nSlots, 0) {
  for (size_t i = 0; i < dataOps_.size(); ++i) initOp(&dataOps_[i], kOpData, static_cast<uint32_t>(i));
  initOp(&helloOp_, kOpHello, 0);
  for (int i = 0; i < kControlRecvs; ++i) initOp(&controlOps_[i], kOpControlRecv, static_cast<uint32_t>(i));
  initOp(&creditOp_, kOpCredit, 0);
  initOp(&abortOp_, kOpAbort, 0);
  helloPending_ = sending;
}

void OfiLink::initOp(OfiOp* op, uint32_t kind, uint32_t index) {
  op->owner = this;
  op->kind = kind;
  op->index = index;
  op->posted = false;
}

Status OfiLink::start() {
  auto guard = domain_->lock();
  WEFT_TRY(domain_->registerMemoryLocked(ring_.base(), ring_.totalBytes(), &ringDesc_));
  Status s = domain_->registerMemoryLocked(control_.get(), sizeof(Control), &controlDesc_);
  if (!s.isOk()) {
    domain_->releaseMemoryLocked(ring_.base(), ring_.totalBytes());
    return s;
  }
  registered_ = true;
  if (sending_) {
    OfiHello& h = control_->hello;
    h.magic = kOfiHelloMagic;
    h.senderRank = selfRank_;
    h.lane = lane_;
    h.nSlots = ring_.nSlots();
    h.slotBytes = ring_.slotBytes();
    const std::vector<char>& name = domain_->address();
    h.nameBytes = static_cast<uint32_t>(std::min(name.size(), kOfiMaxName));
    std::memcpy(h.name, name.data(), h.nameBytes);
  }
  domain_->attachLocked(this);
  // The first receives are posted before the offer leaves, so the sender's first slots find them.
  post();
  return state_.status();
}

OfiLink::~OfiLink() {
  auto guard = domain_->lock();
  // An abort the executor asked for may not have gone out yet (the proxy sends it, and the
  // communicator can be torn down first, as a rank that failed does before it exits). Send it
  // now (bounded): a peer that sees this link close instead would take this rank for the cause
  // of the failure rather than the rank this one blames.
  for (Deadline sending = Deadline::afterSeconds(kAbortPostSeconds);;) {
    handleAbortRequest();
    if (!abortPending_ || !peerKnown_ || sending.expired()) break;
    if (!domain_->pollCompletionsLocked()) sched_yield();
  }
  closing_ = true;
  if (!sending_) {
    for (OfiOp& op : dataOps_) domain_->cancelLocked(&op);
    domain_->cancelLocked(&helloOp_);
  }
  for (OfiOp& op : controlOps_) domain_->cancelLocked(&op);
  // Until the provider lets go of the slots (completed or cancelled), it may still touch them.
  Deadline deadline = Deadline::afterSeconds(kDrainSeconds);
  while (outstanding() > 0 && !deadline.expired()) {
    if (!domain_->pollCompletionsLocked()) sched_yield();
  }
  if (outstanding() > 0) {
    WEFT_LOG(kWarn, kNet,
             "rank %d: %d libfabric operations with %s were still pending %.0f s after closing the link (provider "
             "%s cannot cancel them); their slots are released anyway",
             selfRank_, outstanding(), peerText_.c_str(), kDrainSeconds, domain_->provider().c_str());
  }
  domain_->detachLocked(this);
  if (registered_) {
    domain_->releaseMemoryLocked(ring_.base(), ring_.totalBytes());
    domain_->releaseMemoryLocked(control_.get(), sizeof(Control));
  }
}

int OfiLink::outstanding() const {
  int n = helloOp_.posted + creditOp_.posted + abortOp_.posted;
  for (const OfiOp& op : controlOps_) n += op.posted;
  for (const OfiOp& op : dataOps_) n += op.posted;
  return n;
}

bool OfiLink::allSendsDelivered() const {
  uint64_t head = ring_.head.load(std::memory_order_acquire);
  return ring_.tail.load(std::memory_order_acquire) == head && released_.load(std::memory_order_acquire) >= head;
}

bool OfiLink::post() {
  if (closing_) return false;
  bool moved = handleAbortRequest();
  if (state_.failed()) return moved;
  moved = postControlReceives() || moved;
  if (sending_) return postSends() || moved;
  moved = postReceives() || moved;
  return postCredit() || moved;
}

bool OfiLink::needsProgress() const {
  if (closing_ || (state_.failed() && !abortPending_)) return false;
  if (abortPending_ || abortOp_.posted || creditOp_.posted || helloPending_ || helloOp_.posted) return true;
  if (sending_) {
    // Sends in flight or waiting for credits, or credits still out (allSendsDelivered()).
    uint64_t head = ring_.head.load(std::memory_order_acquire);
    return completed_ < head || released_.load(std::memory_order_relaxed) < head;
  }
  // The hello still to come (credits wait for it), or credits owed.
  return !peerKnown_ || creditSent_ < ring_.tail.load(std::memory_order_acquire);
}

bool OfiLink::handleAbortRequest() {
  if (!abortHandled_ && state_.abortRequested.load(std::memory_order_relaxed)) {
    abortHandled_ = true;
    // A link that failed already (its peer aborted, the network failed) has no one to tell. A
    // receiving link that has not heard the hello yet tells the peer once it arrives.
    abortPending_ = !state_.failed();
    state_.fail(
        WEFT_ERROR(weftRemoteError, "rank %d: this rank aborted its connection to %s", selfRank_, peerText_.c_str()),
        false);
  }
  return abortPending_ && peerKnown_ && sendAbort();
}

bool OfiLink::sendAbort() {
  if (abortOp_.posted) return false;
  // The rank this side blames travels along (+1, so that 0 means nobody), as on the socket transport.
  int culprit = state_.abortCulprit.load();
  control_->abort = frame(kFrameAbort, culprit >= 0 ? static_cast<uint64_t>(culprit) + 1 : 0);
  uint64_t tag = ofiTag(sending_ ? kOfiTagToReceiver : kOfiTagToSender, selfRank_, lane_, 0);
  ssize_t rc = domain_->sendLocked(&control_->abort, sizeof(FrameHeader), controlDesc_, peerAddr_, tag, &abortOp_);
  if (rc == -FI_EAGAIN) return false;
  abortPending_ = false;  // sent, or refused: either way there is nothing more to do
  return true;
}

bool OfiLink::postControlReceives() {
  bool moved = false;
  uint64_t tag = ofiTag(sending_ ? kOfiTagToSender : kOfiTagToReceiver, peerRank_, lane_, 0);
  for (int i = 0; i < kControlRecvs; ++i) {
    if (controlOps_[i].posted) continue;
    ssize_t rc = domain_->recvLocked(&control_->received[i], sizeof(FrameHeader), controlDesc_, tag, &controlOps_[i]);
    if (rc == -FI_EAGAIN) return moved;
    if (rc != 0) {
      failPost("a control receive from", rc);
      return true;
    }
    moved = true;
  }
  if (!sending_ && !peerKnown_ && !helloOp_.posted) {
    ssize_t rc = domain_->recvLocked(&control_->hello, sizeof(OfiHello), controlDesc_,
                                     ofiTag(kOfiTagHello, peerRank_, lane_, 0), &helloOp_);
    if (rc == -FI_EAGAIN) return moved;
    if (rc != 0) {
      failPost("the introduction receive from", rc);
      return true;
    }
    moved = true;
  }
  return moved;
}

bool OfiLink::postSends() {
  bool moved = false;
  if (helloPending_) {
    ssize_t rc = domain_->sendLocked(&control_->hello, sizeof(OfiHello), controlDesc_, peerAddr_,
                                     ofiTag(kOfiTagHello, selfRank_, lane_, 0), &helloOp_);
    if (rc == 0) {
      helloPending_ = false;
      moved = true;
    } else if (rc != -FI_EAGAIN) {
      failPost("the introduction to", rc);
      return true;
    }
  }
  const uint64_t n = ring_.nSlots();
  uint64_t head = ring_.head.load(std::memory_order_acquire);
  // Credits: the receiver has a receive posted for every slot below released + nSlots.
  uint64_t limit = released_.load(std::memory_order_relaxed) + n;
  while (posted_ < head && posted_ < limit) {
    size_t payload = std::min<size_t>(ring_.size(posted_).load(std::memory_order_relaxed), ring_.slotBytes());
    if (payload == 0 && !inlineReference(ring_.slot(posted_), &payload)) return true;
    // The stamp travels as a trailer right after the payload (the ring leaves room for it).
    uint64_t stamp = ring_.stamp(posted_).load(std::memory_order_relaxed);
    std::memcpy(ring_.slot(posted_) + payload, &stamp, kStampTrailerBytes);
    size_t bytes = payload + kStampTrailerBytes;
    uint64_t tag = ofiTag(kOfiTagData, selfRank_, lane_, posted_);
    // Small messages are injected: the slot is free again at once, no completion to wait for.
    bool inject = bytes <= domain_->injectBytes();
    ssize_t rc =
        inject ? domain_->injectLocked(ring_.slot(posted_), bytes, peerAddr_, tag)
               : domain_->sendLocked(ring_.slot(posted_), bytes, ringDesc_, peerAddr_, tag, &dataOps_[posted_ % n]);
    if (rc == -FI_EAGAIN) break;
    if (rc != 0) {
      failPost("a slot to", rc);
      return true;
    }
    ++posted_;
    if (inject) slotDone(static_cast<uint32_t>((posted_ - 1) % n), bytes);
    moved = true;
  }
  return moved;
}

bool OfiLink::postReceives() {
  bool moved = false;
  const uint64_t n = ring_.nSlots();
  uint64_t tail = ring_.tail.load(std::memory_order_acquire);
  // A slot takes its next message once the executor released the one before it.
  while (posted_ < tail + n) {
    ssize_t rc = domain_->recvLocked(ring_.slot(posted_), ring_.slotBytes() + kStampTrailerBytes, ringDesc_,
                                     ofiTag(kOfiTagData, peerRank_, lane_, posted_), &dataOps_[posted_ % n]);
    if (rc == -FI_EAGAIN) break;
    if (rc != 0) {
      failPost("a slot receive from", rc);
      return true;
    }
    ++posted_;
    moved = true;
  }
  return moved;
}

bool OfiLink::postCredit() {
  if (!peerKnown_ || creditOp_.posted) return false;
  const uint64_t n = ring_.nSlots();
  uint64_t tail = ring_.tail.load(std::memory_order_acquire);
  // Only as far as receives are posted: every credit stands for a receive waiting for its message.
  uint64_t grant = posted_ >= n ? std::min(tail, posted_ - n) : 0;
  if (grant <= creditSent_) return false;
  // Batched: credits wait while the executor still holds received slots, up to half the ring;
  // the sender keeps at least half of its window meanwhile, and a caught-up receiver flushes.
  bool caughtUp = tail >= completed_;
  if (!caughtUp && grant - creditSent_ < (n + 1) / 2) return false;
  uint64_t tag = ofiTag(kOfiTagToSender, selfRank_, lane_, 0);
  ssize_t rc;
  if (domain_->injectBytes() >= sizeof(FrameHeader)) {
    // Injected: no completion to wait for before the next credit can go.
    FrameHeader credit = frame(kFrameCredit, grant);
    rc = domain_->injectLocked(&credit, sizeof(credit), peerAddr_, tag);
  } else {
    control_->credit = frame(kFrameCredit, grant);
    rc = domain_->sendLocked(&control_->credit, sizeof(FrameHeader), controlDesc_, peerAddr_, tag, &creditOp_);
  }
  if (rc == -FI_EAGAIN) return false;
  if (rc != 0) {
    failPost("credits to", rc);
    return true;
  }
  creditSent_ = grant;
  return true;
}

void OfiLink::onCompletion(OfiOp* op, size_t bytes, uint64_t tag) {
  (void)tag;
  switch (op->kind) {
    case kOpData:
      slotDone(op->index, bytes);
      break;
    case kOpHello:
      if (!sending_) helloReceived(bytes);
      break;
    case kOpControlRecv:
      controlReceived(op, bytes);
      break;
    default:
      break;  // a credit or an abort went out
  }
}

void OfiLink::slotDone(uint32_t index, size_t bytes) {
  const uint64_t n = ring_.nSlots();
  dataDone_[index] = 1;
  dataBytes_[index] = bytes;
  // Completions come in any order; the ring moves over the contiguous ones.
  uint64_t before = completed_;
  while (completed_ < posted_ && dataDone_[completed_ % n]) {
    if (!sending_) publishReceived(completed_, dataBytes_[completed_ % n]);
    dataDone_[completed_ % n] = 0;
    ++completed_;
  }
  if (completed_ == before || closing_) return;
  (sending_ ? ring_.tail : ring_.head).store(completed_, std::memory_order_release);
}

void OfiLink::publishReceived(uint64_t counter, size_t bytes) {
  // A message shorter than the trailer is not one of ours: take it as empty with stamp 0, which
  // the executor refuses (no call has stamp 0) with a message naming both sides.
  uint64_t stamp = 0;
  size_t payload = 0;
  if (bytes >= kStampTrailerBytes) {
    payload = bytes - kStampTrailerBytes;
    std::memcpy(&stamp, ring_.slot(counter) + payload, kStampTrailerBytes);
  }
  ring_.size(counter).store(payload, std::memory_order_relaxed);
  ring_.stamp(counter).store(stamp, std::memory_order_relaxed);
}

void OfiLink::controlReceived(OfiOp* op, size_t bytes) {
  const FrameHeader& f = control_->received[op->index];
  if (bytes != sizeof(FrameHeader) || f.magic != kFrameMagic) {
    failProtocol("a control message that is not a Weft frame");
    return;
  }
  if (f.type == kFrameAbort) {
    if (f.bytes >= 1 && f.bytes <= (1u << 30)) state_.setPeerCulprit(static_cast<int>(f.bytes - 1));
    state_.fail(WEFT_ERROR(weftRemoteError, "rank %d: %s reported a failure; see its log for the cause", selfRank_,
                           peerText_.c_str()),
                true);
    return;
  }
  if (f.type != kFrameCredit || !sending_) {
    failProtocol("a control message of an unknown type");
    return;
  }
  if (f.bytes > posted_) {
    failProtocol("credits for slots never sent");
    return;
  }
  if (f.bytes > released_.load(std::memory_order_relaxed)) released_.store(f.bytes, std::memory_order_release);
}

void OfiLink::helloReceived(size_t bytes) {
  const OfiHello& h = control_->hello;
  if (bytes != sizeof(OfiHello) || h.magic != kOfiHelloMagic || h.nameBytes == 0 || h.nameBytes > kOfiMaxName) {
    failProtocol("an introduction that is not a Weft hello");
    return;
  }
  if (h.senderRank != peerRank_ || h.lane != lane_ || h.nSlots != ring_.nSlots() || h.slotBytes != ring_.slotBytes()) {
    state_.fail(
        WEFT_ERROR(weftInvalidUsage,
                   "rank %d: %s introduced itself as rank %d lane %d with %llu slots of %llu bytes, where this "
                   "rank expects %zu slots of %zu bytes; every rank must run the same Weft with the same "
                   "WEFT_BUFFSIZE and WEFT_NSLOTS",
                   selfRank_, peerText_.c_str(), h.senderRank, h.lane, static_cast<unsigned long long>(h.nSlots),
                   static_cast<unsigned long long>(h.slotBytes), ring_.nSlots(), ring_.slotBytes()),
        false);
    return;
  }
  Status inserted = domain_->insertAddressLocked(h.name, h.nameBytes, &peerAddr_);
  if (!inserted.isOk()) {
    state_.fail(std::move(inserted), false);
    return;
  }
  peerKnown_ = true;
  WEFT_LOG(kInfo, kNet, "rank %d: receiving from %s over libfabric %s from %s", selfRank_, peerText_.c_str(),
           domain_->provider().c_str(), domain_->addressText(h.name, h.nameBytes).c_str());
}

void OfiLink::onError(OfiOp* op, int err, const std::string& text) {
  if (err == FI_ECANCELED || closing_) return;
  if (err == FI_ETRUNC && op->kind == kOpData && !sending_) {
    state_.fail(WEFT_ERROR(weftInvalidUsage,
                           "rank %d: %s sent a message larger than this rank's %zu-byte slots; every rank must run "
                           "with the same WEFT_BUFFSIZE and WEFT_NSLOTS",
                           selfRank_, peerText_.c_str(), ring_.slotBytes()),
                false);
    return;
  }
  const char* doing = op->kind == kOpData ? (sending_ ? "sending a slot to" : "receiving a slot from")
                                          : "exchanging control messages with";
  state_.fail(WEFT_ERROR(weftRemoteError,
                         "rank %d: libfabric (provider %s) failed %s %s: %s; its process probably exited or the "
                         "network between the hosts failed",
                         selfRank_, domain_->provider().c_str(), doing, peerText_.c_str(), text.c_str()),
              false);
}

void OfiLink::failProtocol(const char* what) {
  state_.fail(WEFT_ERROR(weftRemoteError,
                         "rank %d: %s sent %s; another program or another Weft version uses this endpoint, or every "
                         "rank does not use the same WEFT_NET and WEFT_OFI_PROVIDER",
                         selfRank_, peerText_.c_str(), what),
              false);
}

bool OfiLink::inlineReference(char* slot, size_t* payload) {
  const char* data = slot;
  size_t bytes = 0;
  resolveReferencedBytes(&data, &bytes);
  if (data == slot) return true;  // an empty message, not a reference
  if (bytes > ring_.slotBytes()) {
    state_.fail(WEFT_ERROR(weftInternalError,
                           "rank %d: a reference to %zu bytes posted to %s, whose slots hold %zu; report this as a "
                           "Weft bug",
                           selfRank_, bytes, peerText_.c_str(), ring_.slotBytes()),
                false);
    return false;
  }
  std::memcpy(slot, data, bytes);
  *payload = bytes;
  // A post the provider refuses for now (EAGAIN) is retried from the slot, which is now data.
  ring_.size(posted_).store(bytes, std::memory_order_relaxed);
  return true;
}

void OfiLink::failPost(const char* what, ssize_t rc) {
  state_.fail(
      WEFT_ERROR(weftSystemError, "rank %d: libfabric (provider %s) refused to post %s %s: %s", selfRank_,
                 domain_->provider().c_str(), what, peerText_.c_str(), domain_->errorText(static_cast<int>(rc))),
      false);
}

}  // namespace net
}  // namespace weft
