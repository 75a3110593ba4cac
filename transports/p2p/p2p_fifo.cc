#include "transports/p2p/p2p_fifo.h"

#include <sys/stat.h>

#include <chrono>
#include <cinttypes>
#include <thread>
#include <utility>

#include "base/log.h"
#include "base/os.h"

namespace weft {
namespace p2p {
namespace {

size_t roundUp(size_t v, size_t to) { return (v + to - 1) / to * to; }

uint32_t abortValue(int culprit) { return culprit >= 0 ? static_cast<uint32_t>(culprit) + 2 : 1; }

// How long a closing sender waits for its receiver's last credits: a receiver that is still
// running posts them within microseconds of the sender's last slot; one that failed or went
// away never does, and its sender's block is then kept rather than released.
constexpr double kLastCreditsSeconds = 0.1;

}  // namespace

P2pLayout p2pLayout(size_t nSlots, size_t slotBytes) {
  P2pLayout l;
  l.stride = roundUp(slotBytes, kLineBytes);
  l.stampsOffset = roundUp(P2pLayout::kSizesOffset + nSlots * sizeof(uint64_t), kLineBytes);
  l.dataOffset = roundUp(l.stampsOffset + nSlots * sizeof(uint64_t), kLineBytes);
  l.llOffset = l.dataOffset + nSlots * l.stride;
  l.llStride = device::llSlotBytes(slotBytes);
  l.totalBytes = l.llOffset + nSlots * l.llStride;
  return l;
}

Status checkGeometry(size_t nSlots, size_t slotBytes, int selfRank) {
  if (nSlots < 1 || nSlots > kMaxSlots || slotBytes < 1 || slotBytes > kMaxSlotBytes) {
    return WEFT_ERROR(weftInvalidArgument,
                      "rank %d: a GPU peer-to-peer FIFO needs 1 to %zu slots of 1 B to %zu B, not %zu slots of %zu B; "
                      "check WEFT_BUFFSIZE and WEFT_NSLOTS",
                      selfRank, kMaxSlots, kMaxSlotBytes, nSlots, slotBytes);
  }
  return Status::ok();
}

Status checkOffer(const P2pOffer& offer, const ConnectRequest& req) {
  const int self = req.self.rank;
  const int peer = req.peer.rank;
  if (offer.magic != kOfferMagic) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: rank %d answered the GPU peer-to-peer handshake for lane %d with something else "
                      "(magic 0x%016" PRIx64 "); every rank must run the same Weft build",
                      self, peer, req.lane, offer.magic);
  }
  if (offer.version != kOfferVersion) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: rank %d speaks version %u of the GPU peer-to-peer handshake but this rank speaks "
                      "version %u; every rank must run the same Weft build",
                      self, peer, offer.version, kOfferVersion);
  }
  if (offer.failed != 0) {
    return WEFT_ERROR(weftRemoteError,
                      "rank %d could not make its end of the GPU peer-to-peer FIFO from rank %d (lane %d); see its "
                      "log for the cause",
                      peer, self, req.lane);
  }
  if (offer.receiverRank != peer || offer.senderRank != self || offer.lane != req.lane) {
    return WEFT_ERROR(weftInternalError,
                      "rank %d: the GPU peer-to-peer handshake from rank %d for lane %d names the FIFO from rank %d "
                      "to rank %d, lane %d; this is a bug in Weft",
                      self, peer, req.lane, offer.senderRank, offer.receiverRank, offer.lane);
  }
  if (offer.nSlots != req.nSlots || offer.slotBytes != req.slotBytes) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: rank %d made its GPU peer-to-peer FIFO with %" PRIu64 " slots of %" PRIu64
                      " B but this rank expects %zu slots of %zu B; every rank must use the same WEFT_BUFFSIZE and "
                      "WEFT_NSLOTS",
                      self, peer, offer.nSlots, offer.slotBytes, req.nSlots, req.slotBytes);
  }
  const P2pLayout layout = p2pLayout(req.nSlots, req.slotBytes);
  if (offer.stride != layout.stride || offer.totalBytes != layout.totalBytes) {
    return WEFT_ERROR(weftInternalError,
                      "rank %d: rank %d's GPU peer-to-peer FIFO has an inconsistent layout (stride %" PRIu64
                      " B, %" PRIu64 " B in all; expected %zu B and %zu B); every rank must run the same Weft build",
                      self, peer, offer.stride, offer.totalBytes, layout.stride, layout.totalBytes);
  }
  const bool sameProcess = req.self.processHash == req.peer.processHash;
  if (offer.sameProcess > 1 || (offer.sameProcess == 1) != sameProcess || offer.processHash != req.peer.processHash ||
      offer.device != req.peer.device) {
    return WEFT_ERROR(weftInternalError,
                      "rank %d: rank %d's GPU peer-to-peer handshake says it lives in %s (device %d) but the "
                      "bootstrap says %s (device %d); this is a bug in Weft",
                      self, peer, offer.sameProcess == 1 ? "this process" : "another process", offer.device,
                      sameProcess ? "this process" : "another process", req.peer.device);
  }
  if (sameProcess ? (offer.pointer == 0 || offer.pointer % kLineBytes != 0) : offer.pointer != 0) {
    return WEFT_ERROR(weftInternalError,
                      "rank %d: rank %d's GPU peer-to-peer handshake carries the address 0x%" PRIx64
                      ", which %s; this is a bug in Weft",
                      self, peer, offer.pointer,
                      sameProcess ? "is not the start of a device allocation" : "must be 0 across processes");
  }
  return Status::ok();
}

Status checkCredits(const P2pCredits& credits, const CreditsExpect& want) {
  if (credits.magic != kCreditsMagic || credits.version != kOfferVersion) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: rank %d answered the GPU peer-to-peer handshake for lane %d with something else "
                      "(magic 0x%016" PRIx64 ", version %u); every rank must run the same Weft build",
                      want.selfRank, want.peerRank, want.lane, credits.magic, credits.version);
  }
  if (credits.failed != 0) {
    return WEFT_ERROR(weftRemoteError,
                      "rank %d could not make its end of the GPU peer-to-peer FIFO to rank %d (lane %d); see its log "
                      "for the cause",
                      want.peerRank, want.selfRank, want.lane);
  }
  if (credits.senderRank != want.peerRank || credits.receiverRank != want.selfRank || credits.lane != want.lane ||
      credits.device != want.peerDevice) {
    return WEFT_ERROR(weftInternalError,
                      "rank %d: the GPU peer-to-peer credits from rank %d (device %d) for lane %d name the FIFO from "
                      "rank %d (device %d) to rank %d, lane %d; this is a bug in Weft",
                      want.selfRank, want.peerRank, want.peerDevice, want.lane, credits.senderRank, credits.device,
                      credits.receiverRank, credits.lane);
  }
  const bool bad = want.sameProcess ? credits.sameProcess != 1 || credits.pointer == 0 || credits.pointer % kLineBytes
                                    : credits.sameProcess != 0 || credits.pointer != 0;
  if (bad) {
    return WEFT_ERROR(weftInternalError,
                      "rank %d: rank %d's GPU peer-to-peer credits (sameProcess %u, address 0x%" PRIx64
                      ") do not describe a sender in %s, which needs %s; this is a bug in Weft",
                      want.selfRank, want.peerRank, credits.sameProcess, credits.pointer,
                      want.sameProcess ? "this process" : "another process",
                      want.sameProcess ? "a line-aligned address" : "an IPC handle and address 0");
  }
  return Status::ok();
}

Status DeviceScope::enter(int device) {
  WEFT_TRY(runtime_->getDevice(&saved_));
  if (saved_ == device) return Status::ok();
  WEFT_TRY(runtime_->setDevice(device));
  switched_ = saved_ >= 0;
  return Status::ok();
}

Status mapPeerMemory(device::Runtime* runtime, const PeerMemory& peer, const char* what, DeviceMemory* out) {
  if (peer.sameProcess) {
    void* ptr = reinterpret_cast<void*>(peer.pointer);
    device::PointerInfo info;
    Status s = runtime->pointerInfo(ptr, &info);
    if (!s.isOk() || info.kind != device::MemoryKind::kDevice || info.device != peer.peerDevice) {
      return WEFT_ERROR(weftInternalError,
                        "rank %d: rank %d's GPU peer-to-peer handshake names %p, which the %s runtime does not know "
                        "as memory of device %d (%s); this is a bug in Weft",
                        peer.selfRank, peer.peerRank, ptr, runtime->name(), peer.peerDevice,
                        s.isOk() ? device::memoryKindName(info.kind) : s.message().c_str());
    }
    *out = DeviceMemory(runtime, ptr, DeviceMemory::Kind::kBorrowed);
    return Status::ok();
  }
  void* ptr = nullptr;
  Status s = runtime->ipcImport(*peer.ipc, &ptr);
  if (!s.isOk()) {
    return std::move(s).withPrefix("rank " + std::to_string(peer.selfRank) + ": mapping rank " +
                                   std::to_string(peer.peerRank) + "'s GPU peer-to-peer " + what +
                                   " (IPC handle from pid " + std::to_string(peer.pid) + "): ");
  }
  *out = DeviceMemory(runtime, ptr, DeviceMemory::Kind::kImported);
  return Status::ok();
}

DeviceMemory::DeviceMemory(DeviceMemory&& o) noexcept
    : runtime_(o.runtime_), ptr_(std::exchange(o.ptr_, nullptr)), kind_(std::exchange(o.kind_, Kind::kNone)) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& o) noexcept {
  if (this != &o) {
    reset();
    runtime_ = o.runtime_;
    ptr_ = std::exchange(o.ptr_, nullptr);
    kind_ = std::exchange(o.kind_, Kind::kNone);
  }
  return *this;
}

char* DeviceMemory::retire() {
  kind_ = Kind::kNone;
  return static_cast<char*>(std::exchange(ptr_, nullptr));
}

void DeviceMemory::reset() {
  void* ptr = std::exchange(ptr_, nullptr);
  Kind kind = std::exchange(kind_, Kind::kNone);
  if (ptr == nullptr || kind == Kind::kNone || kind == Kind::kBorrowed) return;
  Status s = kind == Kind::kImported ? runtime_->ipcClose(ptr) : runtime_->freeDevice(ptr);
  if (!s.isOk()) {
    WEFT_LOG(kWarn, kP2p, "releasing GPU peer-to-peer FIFO memory %p failed: %s", ptr, s.message().c_str());
  }
}

P2pConnection::P2pConnection(const Setup& setup, DeviceMemory block, DeviceMemory own, DeviceMemory senderBlock)
    : setup_(setup),
      layout_(p2pLayout(setup.nSlots, setup.slotBytes)),
      block_(std::move(block)),
      own_(std::move(own)),
      senderBlock_(std::move(senderBlock)) {}

P2pConnection::~P2pConnection() {
  // The lane program must be done with the FIFO by now: the executor owns the launches.
  if (setup_.role == Role::kSender && !awaitLastCredits()) {
    // The receiver may still post into it (after a failure its lanes stop when they see it):
    // kept for the life of the process rather than released under a post.
    WEFT_LOG(kInfo, kP2p,
             "rank %d: rank %d has not read every message sent to it over GPU peer memory; keeping the FIFO's "
             "credits (%p, where it would post) until the process ends",
             setup_.selfRank, setup_.peerRank, static_cast<void*>(own_.retire()));
  }
  senderBlock_.reset();
  own_.reset();
  block_.reset();
}

bool P2pConnection::awaitLastCredits() const {
  // Only this side's memory is read: the receiver's block (abort flags included) may be gone.
  const Deadline deadline = Deadline::afterSeconds(kLastCreditsSeconds);
  while (!allSendsConsumed()) {
    if (deadline.expired()) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

uint64_t* P2pConnection::credits() const {
  char* base = setup_.role == Role::kSender ? own_.get() : senderBlock_.get();
  return base != nullptr ? reinterpret_cast<uint64_t*>(base + P2pSenderLayout::kCreditsOffset) : nullptr;
}

uint32_t* P2pConnection::selfAbortFlag() const {
  size_t off = setup_.role == Role::kSender ? P2pLayout::kSenderAbortOffset : P2pLayout::kReceiverAbortOffset;
  return reinterpret_cast<uint32_t*>(block_.get() + off);
}

uint32_t* P2pConnection::peerAbortFlag() const {
  size_t off = setup_.role == Role::kSender ? P2pLayout::kReceiverAbortOffset : P2pLayout::kSenderAbortOffset;
  return reinterpret_cast<uint32_t*>(block_.get() + off);
}

Status P2pConnection::readWord(const void* src, void* dst, size_t bytes, const char* what) const {
  Status s = setup_.runtime->copy(dst, src, bytes, device::CopyKind::kDeviceToHost);
  if (!s.isOk()) {
    return std::move(s).withPrefix("rank " + std::to_string(setup_.selfRank) + ": reading " + what +
                                   " of the GPU peer-to-peer FIFO with rank " + std::to_string(setup_.peerRank) + ": ");
  }
  return Status::ok();
}

uint32_t P2pConnection::peerAbortValue() const {
  uint32_t v = 0;
  Status s = readWord(peerAbortFlag(), &v, sizeof(v), "the peer's abort flag");
  if (!s.isOk()) {
    WEFT_LOG(kWarn, kP2p, "%s", s.message().c_str());
    return 0;
  }
  return v;
}

bool P2pConnection::allSendsConsumed() const {
  if (setup_.role != Role::kSender) return true;
  uint64_t tail = 0;
  uint64_t posted = 0;
  Status s = readWord(credits(), &tail, sizeof(tail), "this side's credits");
  if (s.isOk()) s = readWord(own_.get() + P2pSenderLayout::kCursorOffset, &posted, sizeof(posted), "this side's cursor");
  if (!s.isOk()) {
    WEFT_LOG(kWarn, kP2p, "%s", s.message().c_str());
    return false;
  }
  return tail == posted;
}

Status P2pConnection::checkPeer() const {
  uint32_t flag = 0;
  WEFT_TRY(readWord(peerAbortFlag(), &flag, sizeof(flag), "the peer's abort flag"));
  if (flag != 0) {
    return WEFT_ERROR(weftRemoteError, "rank %d reported a failure; see its log for the cause", setup_.peerRank);
  }
  // Threads of one process share a pid: for them the abort flag is the only signal.
  if (setup_.peerPid > 0 && !processAlive(setup_.peerPid)) {
    const std::string host = setup_.peerHost.empty() ? hostName() : setup_.peerHost;
    return WEFT_ERROR(weftRemoteError,
                      "rank %d (pid %d on host %s) exited while this rank was waiting for it; check rank %d's output "
                      "for the cause (a crash, the OOM killer, a kill)",
                      setup_.peerRank, setup_.peerPid, host.c_str(), setup_.peerRank);
  }
  return Status::ok();
}

void P2pConnection::signalAbort(int culprit) {
  // Keep the first culprit, like the shared-memory FIFO; a 1 the lane program left (culprit
  // unknown to the device) gives way to a known one.
  uint32_t current = 0;
  Status s = readWord(selfAbortFlag(), &current, sizeof(current), "this side's abort flag");
  const uint32_t value = abortValue(culprit);
  if (s.isOk() && (current == 0 || (current == 1 && value > 1))) {
    s = setup_.runtime->copy(selfAbortFlag(), &value, sizeof(value), device::CopyKind::kHostToDevice);
  }
  if (!s.isOk()) {
    WEFT_LOG(kWarn, kP2p, "rank %d: cannot tell rank %d about a failure through the GPU peer-to-peer FIFO: %s",
             setup_.selfRank, setup_.peerRank, s.message().c_str());
  }
}

int P2pConnection::peerAbortCulprit() const {
  uint32_t v = peerAbortValue();
  return v >= 2 ? static_cast<int>(v - 2) : -1;
}

bool P2pConnection::deviceFifo(device::FifoView* out) {
  char* base = block_.get();
  out->data = base + layout_.dataOffset;
  out->stride = layout_.stride;
  out->nSlots = setup_.nSlots;
  out->slotBytes = setup_.slotBytes;
  out->sizes = reinterpret_cast<uint64_t*>(base + P2pLayout::kSizesOffset);
  out->stamps = reinterpret_cast<uint64_t*>(base + layout_.stampsOffset);
  out->head = reinterpret_cast<uint64_t*>(base + P2pLayout::kHeadOffset);
  out->tail = credits();  // on the sender's GPU: the sender polls it, the receiver posts it
  out->cursor = reinterpret_cast<uint64_t*>(own_.get());  // P2pSenderLayout::kCursorOffset: 0
  out->selfAbort = selfAbortFlag();
  out->peerAbort = peerAbortFlag();
  out->peer = setup_.peerRank;
  out->reserved = 0;
  out->ll = reinterpret_cast<uint64_t*>(base + layout_.llOffset);
  out->llStride = layout_.llStride;
  out->llStage = setup_.role == Role::kSender ? own_.get() + P2pSenderLayout::kStageOffset : nullptr;
  return true;
}

}  // namespace p2p
}  // namespace weft
