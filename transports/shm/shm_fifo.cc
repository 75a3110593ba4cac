// The shared-memory FIFO (shm_fifo.h): its layout, the receiver's header and page placement
// (ShmFifo::create), the sender's checks of what it attaches to (ShmFifo::attach), and the
// peer checks. The /dev/shm side of both is shm_segments.cc.
#include "transports/shm/shm_fifo.h"

#include <unistd.h>

#include <cinttypes>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "base/log.h"

namespace weft {
namespace shm {
namespace {

size_t roundUp(size_t v, size_t to) { return (v + to - 1) / to * to; }

Status checkGeometry(const FifoSpec& spec) {
  if (spec.nSlots < 1 || spec.nSlots > kMaxSlots || spec.slotBytes < 1 || spec.slotBytes > kMaxSlotBytes) {
    return WEFT_ERROR(weftInvalidArgument,
                      "rank %d: a shared-memory FIFO needs 1 to %zu slots of 1 B to %zu B, not %zu slots of %zu B; "
                      "check WEFT_BUFFSIZE and WEFT_NSLOTS",
                      spec.selfRank, kMaxSlots, kMaxSlotBytes, spec.nSlots, spec.slotBytes);
  }
  return Status::ok();
}

// The segment of the FIFO `spec` names, for the /dev/shm side (shm_segments.h).
SegmentId segmentOf(const FifoSpec& spec) { return SegmentId{spec.name, spec.selfRank, spec.peerRank}; }

}  // namespace

FifoLayout fifoLayout(size_t nSlots, size_t slotBytes) {
  FifoLayout l;
  l.slotStride = roundUp(slotBytes, slotBytes >= kPageBytes ? kPageBytes : kCacheLine);
  l.controlsOffset = roundUp(sizeof(FifoHeader), kPageBytes);
  l.controlBytes = roundUp(kControlBytes + nSlots * sizeof(SlotDesc), kPageBytes);
  l.controlCandidates = l.controlBytes <= kMaxPlacedControlBytes ? kControlCandidates : 1;
  l.dataOffset = l.controlsOffset + l.controlCandidates * l.controlBytes;
  l.totalBytes = roundUp(l.dataOffset + nSlots * l.slotStride, kPageBytes);
  return l;
}

ShmFifo::ShmFifo(Role role, const FifoSpec& spec, void* base, size_t bytes)
    : role_(role), spec_(spec), base_(base), mappedBytes_(bytes) {
  header_ = static_cast<FifoHeader*>(base);
  nSlots_ = header_->nSlots;
  slotBytes_ = header_->slotBytes;
  stride_ = header_->slotStride;
  control_ = reinterpret_cast<FifoControl*>(static_cast<char*>(base) + header_->controlOffset);
  descs_ = reinterpret_cast<SlotDesc*>(static_cast<char*>(base) + header_->descsOffset);
  data_ = static_cast<char*>(base) + header_->dataOffset;
}

ShmFifo::~ShmFifo() {
  // The sender unlinks the name once it has mapped the segment; until then it is ours to remove.
  if (role_ == Role::kReceiver && header_->senderAttached.load(std::memory_order_acquire) == 0) {
    unlinkSegment(spec_.name, spec_.selfRank);
  }
  unmapSegment(base_, mappedBytes_);
}

namespace {

// The candidate control block nearest this CPU (near_pages.h); the segment's pages must exist.
size_t chooseControlBlock(const char* base, const FifoSpec& spec, const FifoLayout& layout) {
  if (layout.controlCandidates <= 1 || !spec.nearPages) return 0;
  const PageProbe probe = spec.probe ? spec.probe : [](size_t, const void* line) { return reloadCycles(line); };
  std::vector<uint64_t> costs;
  const size_t block =
      nearestBlock(base + layout.controlsOffset, layout.controlBytes, layout.controlCandidates, probe, &costs);
  std::string text;
  for (uint64_t c : costs) text += " " + std::to_string(c);
  WEFT_LOG(kTrace, kShm, "rank %d: the FIFO from rank %d keeps its control block on candidate %zu (reload cycles:%s)",
           spec.selfRank, spec.peerRank, block, text.c_str());
  return block;
}

// Writes a new FIFO's header, control block and slot descriptors into `base`; the magic last,
// so that a sender that sees it sees the rest.
void initHeader(void* base, const FifoSpec& spec, const FifoLayout& layout) {
  const size_t block = chooseControlBlock(static_cast<const char*>(base), spec, layout);
  auto* h = new (base) FifoHeader();
  h->version = kFifoVersion;
  h->nSlots = spec.nSlots;
  h->slotBytes = spec.slotBytes;
  h->slotStride = layout.slotStride;
  h->controlOffset = layout.controlsOffset + block * layout.controlBytes;
  h->descsOffset = h->controlOffset + kControlBytes;
  h->dataOffset = layout.dataOffset;
  h->totalBytes = layout.totalBytes;
  h->receiverRank = spec.selfRank;
  h->receiverPid = getpid();
  h->receiverPidNs = processPidNamespace();
  h->senderRank = spec.peerRank;
  new (static_cast<char*>(base) + h->controlOffset) FifoControl{{0}, {0}};
  auto* descs = reinterpret_cast<char*>(base) + h->descsOffset;
  for (size_t i = 0; i < spec.nSlots; ++i) new (descs + i * sizeof(SlotDesc)) SlotDesc{{0}, 0, 0, {}};
  h->magic.store(kFifoMagic, std::memory_order_release);
}

// Re-draws the far pages of the control candidates and the slots (near_pages.h), where there
// are not too many to probe.
Status settlePages(int fd, char* base, const FifoSpec& spec, const FifoLayout& layout) {
  constexpr size_t kMaxSettledBytes = size_t{16} << 20;
  constexpr int kMaxRounds = 12;  // on the VM measured, 256 pages settle in about 10
  const size_t bytes = layout.totalBytes - layout.controlsOffset;
  if (bytes > kMaxSettledBytes || !spec.nearPages) return Status::ok();
  SettleReport r;
  const PageProbe probe = [](size_t, const void* line) { return reloadCycles(line); };
  Status s = settleNear(fd, base, layout.controlsOffset, bytes, probe, kMaxRounds, &r);
  if (!s.isOk()) {
    markNoSpace(spec.name);
    return std::move(s).withPrefix("rank " + std::to_string(spec.selfRank) + ": the FIFO from rank " +
                                   std::to_string(spec.peerRank) + ": ");
  }
  WEFT_LOG(kTrace, kShm, "rank %d: the FIFO from rank %d: %zu of %zu pages were far, %zu after %d rounds",
           spec.selfRank, spec.peerRank, r.farBefore, r.pages, r.farAfter, r.rounds);
  return Status::ok();
}

// Asks for the segment's pages on spec.numaNode; returns the node the kernel then reports, -1
// when none was asked for or the kernel refused (logged: the FIFO still works, pages fall where
// they are first allocated).
int placeOnNode(void* base, size_t bytes, const FifoSpec& spec) {
  if (spec.numaNode < 0) return -1;
  int err = 0;
  if (!preferNumaNode(base, bytes, spec.numaNode, &err)) {
    WEFT_LOG(kInfo, kShm, "rank %d: cannot place the FIFO from rank %d on NUMA node %d (%s); left to first touch",
             spec.selfRank, spec.peerRank, spec.numaNode, errnoText(err).c_str());
    return -1;
  }
  return preferredNumaNode(base);
}

// Whether a header's control block is one of the layout's candidates, with the descriptors
// right after it (a sender must not trust offsets it did not check).
bool controlPlaced(const FifoHeader& h, const FifoLayout& layout) {
  if (h.controlOffset < layout.controlsOffset) return false;
  const uint64_t rel = h.controlOffset - layout.controlsOffset;
  return rel % layout.controlBytes == 0 && rel / layout.controlBytes < layout.controlCandidates &&
         h.descsOffset == h.controlOffset + kControlBytes;
}

// Whether the ready header `h` is the one the peer made for this sender: a ready segment made by
// another process than the peer is left over from a crashed run; the peer replaces it when it
// gets to connectRecv().
bool madeByPeer(const FifoSpec& spec, const FifoHeader& h) {
  if (h.magic.load(std::memory_order_acquire) != kFifoMagic) return false;
  const bool stale =
      spec.peerPid > 0 ? h.receiverPid != spec.peerPid : h.receiverPid != getpid() && !processAlive(h.receiverPid);
  return !stale;
}

// Ok when the peer's FIFO has this build's format, the geometry this rank expects and a layout
// that fits the `bytes` mapped.
Status checkPeersHeader(const FifoSpec& spec, const FifoHeader& h, size_t bytes) {
  const char* name = spec.name.c_str();
  if (h.version != kFifoVersion) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: rank %d made the shared-memory FIFO %s with format version %u but this rank "
                      "uses version %u; every rank must run the same Weft build",
                      spec.selfRank, spec.peerRank, name, h.version, kFifoVersion);
  }
  if (h.nSlots != spec.nSlots || h.slotBytes != spec.slotBytes) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: rank %d made the shared-memory FIFO %s with %" PRIu64 " slots of %" PRIu64
                      " B but this rank expects %zu slots of %zu B; every rank must use the same "
                      "WEFT_BUFFSIZE and WEFT_NSLOTS",
                      spec.selfRank, spec.peerRank, name, h.nSlots, h.slotBytes, spec.nSlots, spec.slotBytes);
  }
  const FifoLayout layout = fifoLayout(spec.nSlots, spec.slotBytes);
  if (h.totalBytes != bytes || layout.totalBytes != bytes || h.slotStride != layout.slotStride ||
      !controlPlaced(h, layout) || h.dataOffset != layout.dataOffset) {
    return WEFT_ERROR(weftInternalError,
                      "rank %d: the shared-memory FIFO %s from rank %d has an inconsistent layout "
                      "(%zu B mapped, header says %" PRIu64 " B, expected %zu B)",
                      spec.selfRank, name, spec.peerRank, bytes, h.totalBytes, layout.totalBytes);
  }
  return Status::ok();
}

// Ok while the sender may wait on for the receiver's FIFO: not aborted, the deadline not passed.
Status checkStillWaiting(const FifoSpec& spec, const Deadline& deadline, uint64_t startNs) {
  const char* name = spec.name.c_str();
  if (spec.abort && spec.abort->load(std::memory_order_relaxed)) {
    return WEFT_ERROR(weftRemoteError, "rank %d: aborted while waiting for rank %d's shared-memory FIFO %s",
                      spec.selfRank, spec.peerRank, name);
  }
  if (deadline.expired()) {
    double waited = static_cast<double>(nowNs() - startNs) / 1e9;
    return WEFT_ERROR(weftTimeout,
                      "rank %d: timed out after %.3g s waiting for rank %d to create its shared-memory FIFO %s; "
                      "is rank %d running and in the same communicator?",
                      spec.selfRank, waited, spec.peerRank, name, spec.peerRank);
  }
  return Status::ok();
}

}  // namespace

Status ShmFifo::create(const FifoSpec& spec, std::unique_ptr<ShmFifo>* out, uint64_t freeBytes) {
  WEFT_TRY(checkGeometry(spec));
  sweepDeadOwners(spec.selfRank);
  const FifoLayout layout = fifoLayout(spec.nSlots, spec.slotBytes);
  if (Status space = checkShmSpace(freeBytes, layout.totalBytes, spec.selfRank, spec.peerRank); !space.isOk()) {
    markNoSpace(spec.name);
    return space;
  }
  const SegmentId id = segmentOf(spec);
  Segment segment;  // unlinked again if anything below fails
  WEFT_TRY(Segment::create(id, layout.totalBytes, &segment));
  // The policy goes on the segment before its pages exist, so that the reservation below
  // allocates them on the reader's (this rank's) NUMA node.
  const int placed = placeOnNode(segment.base(), layout.totalBytes, spec);
  WEFT_TRY(segment.reserve(id));
  WEFT_TRY(settlePages(segment.fd(), segment.base(), spec, layout));

  // The header, byte counts and stamps are written here; the slots' pages already exist (the
  // reservation allocated them, on the preferred node where one was given).
  initHeader(segment.base(), spec, layout);

  std::unique_ptr<ShmFifo> fifo(new ShmFifo(Role::kReceiver, spec, segment.release(), layout.totalBytes));
  fifo->placedNode_ = placed;
  // Until the sender attaches, the pid the peer reported at init is all there is to watch.
  fifo->peerPidComparable_ = spec.peerPid > 0 && spec.peerPid != getpid() && processAlive(spec.peerPid);
  *out = std::move(fifo);
  WEFT_LOG(kTrace, kShm, "rank %d: created %s: %zu slots of %zu B, %s mapped", spec.selfRank, spec.name.c_str(),
           spec.nSlots, spec.slotBytes, formatBytes(layout.totalBytes).c_str());
  return Status::ok();
}

Status ShmFifo::attach(const FifoSpec& spec, Deadline deadline, std::unique_ptr<ShmFifo>* out) {
  WEFT_TRY(checkGeometry(spec));
  const uint64_t startNs = nowNs();
  Backoff backoff;
  for (;;) {
    std::unique_ptr<ShmFifo> fifo;
    WEFT_TRY(tryAttach(spec, &fifo));
    if (fifo) {
      *out = std::move(fifo);
      WEFT_LOG(kTrace, kShm, "rank %d: attached to %s after %.3f s", spec.selfRank, spec.name.c_str(),
               static_cast<double>(nowNs() - startNs) / 1e9);
      return Status::ok();
    }
    WEFT_TRY(checkStillWaiting(spec, deadline, startNs));
    backoff.pause();
  }
}

Status ShmFifo::tryAttach(const FifoSpec& spec, std::unique_ptr<ShmFifo>* out) {
  Segment segment;  // closed and unmapped again unless the FIFO takes it
  WEFT_TRY(Segment::open(segmentOf(spec), sizeof(FifoHeader), &segment));
  if (!segment.mapped()) return Status::ok();
  auto* h = reinterpret_cast<FifoHeader*>(segment.base());
  if (!madeByPeer(spec, *h)) return Status::ok();
  WEFT_TRY(checkPeersHeader(spec, *h, segment.bytes()));
  // Both sides have it mapped now: drop the name so that no crash can leak it.
  unlinkSegment(spec.name, spec.selfRank);
  h->senderPid.store(getpid(), std::memory_order_relaxed);
  h->senderPidNs.store(processPidNamespace(), std::memory_order_relaxed);
  h->senderAttached.store(1, std::memory_order_release);

  const size_t bytes = segment.bytes();
  std::unique_ptr<ShmFifo> fifo(new ShmFifo(Role::kSender, spec, segment.release(), bytes));
  fifo->peerPidComparable_ = h->receiverPid != getpid() && h->receiverPidNs == processPidNamespace();
  *out = std::move(fifo);
  return Status::ok();
}

size_t ShmFifo::controlBlock() const {
  const FifoLayout layout = fifoLayout(nSlots_, slotBytes_);
  return (header_->controlOffset - layout.controlsOffset) / layout.controlBytes;
}

int ShmFifo::peerPidToCheck() const {
  if (role_ == Role::kSender) return peerPidComparable_ ? header_->receiverPid : 0;
  if (header_->senderAttached.load(std::memory_order_acquire) != 0) {
    int pid = header_->senderPid.load(std::memory_order_relaxed);
    bool comparable = pid != getpid() && header_->senderPidNs.load(std::memory_order_relaxed) == processPidNamespace();
    return comparable ? pid : 0;
  }
  return peerPidComparable_ ? spec_.peerPid : 0;
}

Status ShmFifo::checkPeer() const {
  const std::atomic<uint32_t>& peerAbort = role_ == Role::kSender ? header_->receiverAbort : header_->senderAbort;
  if (peerAbort.load(std::memory_order_acquire) != 0) {
    return WEFT_ERROR(weftRemoteError, "rank %d reported a failure; see its log for the cause", spec_.peerRank);
  }
  // Threads of one process share a pid: for them the abort flag is the only signal.
  int pid = peerPidToCheck();
  if (pid > 0 && !processAlive(pid)) {
    const std::string host = spec_.peerHost.empty() ? hostName() : spec_.peerHost;
    return WEFT_ERROR(weftRemoteError,
                      "rank %d (pid %d on host %s) exited while this rank was waiting for it; check rank %d's output "
                      "for the cause (a crash, the OOM killer, a kill)",
                      spec_.peerRank, pid, host.c_str(), spec_.peerRank);
  }
  return Status::ok();
}

void ShmFifo::signalAbort(int culprit) {
  std::atomic<uint32_t>& mine = role_ == Role::kSender ? header_->senderAbort : header_->receiverAbort;
  uint32_t value = culprit >= 0 ? static_cast<uint32_t>(culprit) + 2 : 1;
  uint32_t expected = 0;
  mine.compare_exchange_strong(expected, value, std::memory_order_release);
}

}  // namespace shm
}  // namespace weft
