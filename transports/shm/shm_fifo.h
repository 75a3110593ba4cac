// The FIFO of the shared-memory transport: nSlots slots of slotBytes bytes in one POSIX
// shared-memory segment, a descriptor per slot (its sequence number, byte count and stamp,
// and the bytes themselves when they fit: SlotDesc) that the receiver polls, and a tail counter
// the receiver advances. The descriptors and the tail (the control block) sit on whichever of a
// few candidate blocks of the segment the receiver finds nearest in memory (near_pages.h): on a
// VM whose host spreads its memory over two sockets, that halves a small message's latency. The receiver creates the segment (ShmFifo::create, returns at once); the
// sender waits for it and attaches (ShmFifo::attach) and then unlinks its name, so nothing is
// left in /dev/shm once both sides have it mapped, whichever of them dies later. The /dev/shm
// side (names, making and opening segments, reserving space, the "-nospace" markers, sweeping
// what dead processes left) is shm_segments.h.
//
// The hot paths (trySendSlot, postSend, tryRecv, releaseRecv) are inline: a few loads and
// stores, no syscalls, no locks. A message crosses between cores as one descriptor when it is
// small (the descriptor holds everything the receiver reads), and as the descriptor plus the
// slot's lines otherwise; there is no head counter for the receiver to read first (version 2's
// was one more serial cache miss per message). The sender keeps a cached copy of the receiver's tail and
// reads the real one only when its cached view says the FIFO is full.
//
// ShmTransport (shm_transport.h) wraps one ShmFifo per connection; tests use it directly.
#ifndef WEFT_TRANSPORTS_SHM_SHM_FIFO_H_
#define WEFT_TRANSPORTS_SHM_SHM_FIFO_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "base/os.h"
#include "base/status.h"
#include "transports/shm/near_pages.h"
#include "transports/shm/shm_segments.h"

namespace weft {
namespace shm {

constexpr uint64_t kFifoMagic = 0x314d485354464557ull;  // "WEFTSHM1" in memory order
constexpr uint32_t kFifoVersion = 6;  // 6: the control block placed; 5: announced; 4: no head counter; 3: slot descriptors; 2: stamps after the sizes
constexpr size_t kCacheLine = 64;
constexpr size_t kPageBytes = 4096;
constexpr size_t kMaxSlots = 1u << 16;
constexpr size_t kMaxSlotBytes = size_t{1} << 32;

static_assert(std::atomic<uint64_t>::is_always_lock_free, "the FIFO needs lock-free 64-bit atomics");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "the FIFO needs lock-free 32-bit atomics");
static_assert(std::atomic<int32_t>::is_always_lock_free, "the FIFO needs lock-free 32-bit atomics");

// The start of the segment. The receiver fills in everything, then stores magic (release):
// a sender that reads magic == kFifoMagic (acquire) sees a complete header ("ready").
struct FifoHeader {
  std::atomic<uint64_t> magic;
  uint32_t version;
  uint32_t reserved0;
  uint64_t nSlots;
  uint64_t slotBytes;
  uint64_t slotStride;  // distance between slots: slotBytes rounded up to 64 B (4 KiB from 4 KiB on)
  uint64_t controlOffset;  // the FifoControl the receiver chose among the candidates (FifoLayout)
  uint64_t descsOffset;    // the SlotDesc array: controlOffset + kControlBytes
  uint64_t dataOffset;  // first slot, 4 KiB aligned
  uint64_t totalBytes;
  int32_t receiverRank;
  int32_t receiverPid;
  uint64_t receiverPidNs;          // inode of the receiver's pid namespace (0: unknown)
  int32_t senderRank;              // the rank the receiver expects (it is in the name too)
  std::atomic<int32_t> senderPid;  // written by the sender when it attaches
  std::atomic<uint64_t> senderPidNs;
  std::atomic<uint32_t> senderAttached;  // 1 once the sender has mapped and unlinked the segment

  // Failure flags: rarely written, read by the peer's checkPeer().
  alignas(kCacheLine) std::atomic<uint32_t> senderAbort;
  std::atomic<uint32_t> receiverAbort;
};
static_assert(sizeof(FifoHeader) % kCacheLine == 0, "the header ends on a cache line");

// Slots released, and the stamp of the call the receiver runs now (announce(); 0 none): written
// by the receiver only, read by the sender on one line, at the start of the control block. (What
// the sender posted is in the slot descriptors' seq fields; nothing else counts it.) The
// descriptors follow a line later, so that the adjacent-line prefetch pairs neither with it.
struct alignas(kCacheLine) FifoControl {
  std::atomic<uint64_t> tail;
  std::atomic<uint64_t> announced;
};
constexpr size_t kControlBytes = 2 * kCacheLine;

// One slot's descriptor, two cache lines of its own (a 64 B all-reduce's message fits; the
// second line is the adjacent one, which the L2 fetches with the first on the CPUs measured). The sender writes bytes, stamp and (for a
// message of 1..kInlineBytes bytes) a copy of the bytes, then seq = the message's number (1, 2,
// ...; release); the receiver waits for seq == its count of received messages + 1 (acquire).
// A byte count of 0 is a ReferenceMessage in the slot itself (host_executor.cc), never inline.
constexpr size_t kInlineBytes = 104;
struct alignas(2 * kCacheLine) SlotDesc {
  std::atomic<uint64_t> seq;
  uint64_t bytes;
  uint64_t stamp;
  unsigned char inlineData[kInlineBytes];
};
static_assert(sizeof(SlotDesc) == 2 * kCacheLine, "a slot descriptor is two cache lines");

// Where things lie in a segment of this geometry (byte offsets from the start of the segment).
// The control block (FifoControl, then a SlotDesc per slot) may sit in any of `controlCandidates`
// blocks of `controlBytes` (whole pages) from `controlsOffset`; the receiver picks one.
constexpr size_t kControlCandidates = 8;            // 32 KiB with the default 4 slots
constexpr size_t kMaxPlacedControlBytes = 1u << 16;  // larger blocks (> 511 slots) get one candidate
struct FifoLayout {
  size_t slotStride = 0;
  size_t controlsOffset = 0;
  size_t controlBytes = 0;
  size_t controlCandidates = 0;
  size_t dataOffset = 0;
  size_t totalBytes = 0;
};
FifoLayout fifoLayout(size_t nSlots, size_t slotBytes);

// Both ends of one edge as seen from this side.
struct FifoSpec {
  std::string name;  // from fifoName()
  size_t nSlots = 0;
  size_t slotBytes = 0;
  int selfRank = -1;
  int peerRank = -1;
  int peerPid = 0;       // as the peer reported it at init; 0: unknown
  std::string peerHost;  // for messages
  int numaNode = -1;     // receiver: NUMA node its pages are placed on (preferred); -1 no preference
  const std::atomic<bool>* abort = nullptr;  // attach() gives up when this becomes true
  bool nearPages = true;  // receiver: re-draw far pages and place the control block (WEFT_SHM_NEAR_PAGES)
  PageProbe probe;        // receiver: how near a candidate control block is (empty: reloadCycles; tests)
};

class ShmFifo {
 public:
  enum class Role { kSender, kReceiver };

  // Receiver: creates the segment `spec.name` (replacing a stale one left by a crashed run) and
  // marks it ready. Returns at once. `freeBytes` overrides the /dev/shm space check (tests).
  [[nodiscard]] static Status create(const FifoSpec& spec, std::unique_ptr<ShmFifo>* out,
                                     uint64_t freeBytes = shmFreeBytes());
  // Sender: waits until `deadline` for the receiver to create `spec.name` with the expected
  // geometry, maps it and unlinks the name.
  [[nodiscard]] static Status attach(const FifoSpec& spec, Deadline deadline, std::unique_ptr<ShmFifo>* out);

  ~ShmFifo();
  ShmFifo(const ShmFifo&) = delete;
  ShmFifo& operator=(const ShmFifo&) = delete;

  Role role() const { return role_; }
  size_t nSlots() const { return nSlots_; }
  size_t slotBytes() const { return slotBytes_; }
  const std::string& name() const { return spec_.name; }
  // Receiver: the NUMA node the kernel's policy for the segment prefers (as the kernel reports
  // it), or -1 (no node asked for, or the kernel refused it: the pages go where they fall).
  int placedNumaNode() const { return placedNode_; }
  // Which of the candidates (FifoLayout) holds the control block.
  size_t controlBlock() const;

  // Sender: the slot to fill next, or nullptr while all slots are in use.
  void* trySendSlot() {
    if (head_ - cachedTail_ >= nSlots_) {
      cachedTail_ = control_->tail.load(std::memory_order_acquire);  // the receiver is done reading
      if (head_ - cachedTail_ >= nSlots_) return nullptr;
    }
    return data_ + sendIndex_ * stride_;
  }
  // Sender: publishes the slot from trySendSlot() holding `bytes` bytes.
  void postSend(size_t bytes, uint64_t stamp) {
    SlotDesc& d = descs_[sendIndex_];
    d.bytes = bytes;  // published by the seq store
    d.stamp = stamp;
    if (bytes != 0 && bytes <= kInlineBytes) std::memcpy(d.inlineData, data_ + sendIndex_ * stride_, bytes);
    if (++sendIndex_ == nSlots_) sendIndex_ = 0;
    d.seq.store(++head_, std::memory_order_release);
  }

  // Receiver: the oldest filled slot and its byte count, or nullptr when none is ready.
  const void* tryRecv(size_t* bytes, uint64_t* stamp) {
    const SlotDesc& d = descs_[recvIndex_];
    if (d.seq.load(std::memory_order_acquire) != tail_ + 1) return nullptr;  // the slot's bytes are visible
    const uint64_t n = d.bytes;
    *bytes = n < slotBytes_ ? n : slotBytes_;  // never past the slot, whatever the peer wrote
    *stamp = d.stamp;
    return n != 0 && n <= kInlineBytes ? static_cast<const void*>(d.inlineData) : data_ + recvIndex_ * stride_;
  }
  // Receiver: hands the slot from tryRecv() back to the sender.
  void releaseRecv() {
    if (++recvIndex_ == nSlots_) recvIndex_ = 0;
    control_->tail.store(++tail_, std::memory_order_release);
  }

  // Ok while the peer lives and has not signalled a failure; weftRemoteError otherwise.
  [[nodiscard]] Status checkPeer() const;
  // Sets this side's abort flag, which the peer's checkPeer() reports.
  // The flag holds culprit + 2 (1: culprit unknown).
  void signalAbort(int culprit);
  int peerAbortCulprit() const {
    const std::atomic<uint32_t>& peer = role_ == Role::kSender ? header_->receiverAbort : header_->senderAbort;
    uint32_t v = peer.load(std::memory_order_acquire);
    return v >= 2 ? static_cast<int>(v - 2) : -1;
  }
  // Sender: true when the receiver has released every slot posted so far.
  bool allSendsConsumed() const { return control_->tail.load(std::memory_order_acquire) == head_; }
  // Receiver: this rank runs the call stamped `stamp` (call_stamp.h) and will read this FIFO in
  // it. Sender: whether the receiver last announced `stamp` (Connection::peerAnnounced).
  void announce(uint64_t stamp) { control_->announced.store(stamp, std::memory_order_release); }
  bool peerAnnounced(uint64_t stamp) const { return control_->announced.load(std::memory_order_acquire) == stamp; }
  // True once the peer set its abort flag (cheap: one load).
  bool peerAborted() const {
    const std::atomic<uint32_t>& peer = role_ == Role::kSender ? header_->receiverAbort : header_->senderAbort;
    return peer.load(std::memory_order_acquire) != 0;
  }

 private:
  ShmFifo(Role role, const FifoSpec& spec, void* base, size_t bytes);
  // Sender: one look for the receiver's segment; *out stays empty while it is not ready (yet).
  [[nodiscard]] static Status tryAttach(const FifoSpec& spec, std::unique_ptr<ShmFifo>* out);
  int peerPidToCheck() const;

  Role role_;
  FifoSpec spec_;
  int placedNode_ = -1;
  void* base_ = nullptr;
  size_t mappedBytes_ = 0;
  FifoHeader* header_ = nullptr;
  FifoControl* control_ = nullptr;
  SlotDesc* descs_ = nullptr;
  char* data_ = nullptr;
  size_t nSlots_ = 0;
  size_t slotBytes_ = 0;
  size_t stride_ = 0;

  // Sender state: messages posted, and the receiver's tail as last read.
  uint64_t head_ = 0;
  uint64_t cachedTail_ = 0;
  size_t sendIndex_ = 0;
  // Receiver state (only the receiver writes tail).
  uint64_t tail_ = 0;
  size_t recvIndex_ = 0;

  // Whether the peer's pid means something here (same pid namespace, another process).
  bool peerPidComparable_ = false;
};

}  // namespace shm
}  // namespace weft

#endif  // WEFT_TRANSPORTS_SHM_SHM_FIFO_H_
