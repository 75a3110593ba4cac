// The FIFO of the shared-memory transport: nSlots slots of slotBytes bytes in one POSIX
// shared-memory segment, a ring of nDescs >= nSlots message descriptors (a message's sequence
// number, byte count and stamp, and the bytes themselves when they fit: SlotDesc) that the
// receiver polls, and a tail counter the receiver advances. Every message takes a descriptor;
// only one too large for its descriptor (or a 0-byte reference) takes a data slot too, so small
// messages may run up to nDescs ahead of the receiver while the large ones run nSlots ahead. The receiver creates the segment (ShmFifo::create, returns at once); the
// sender waits for it and attaches (ShmFifo::attach) and then unlinks its name, so nothing is
// left in /dev/shm once both sides have it mapped, whichever of them dies later.
//
// The hot paths (trySendSlot, postSend, tryRecv, releaseRecv) are inline: a few loads and
// stores, no syscalls, no locks. A message crosses between cores as one descriptor when it is
// small (the descriptor holds everything the receiver reads), and as the descriptor plus the
// slot's lines otherwise; there is no head counter for the receiver to read first (version 2's
// was one more serial cache miss per message). The sender keeps a cached copy of the receiver's tail and
// reads the real one only when its cached view says the FIFO is full: with 16 descriptors, once
// per 16 small messages rather than once per nSlots (4 by default). Each such read takes the tail's
// line from the receiver, whose next tail store must then take it back before the stores behind
// it (its own next message) are seen: the 2-rank 8 B all-reduce waited on that (RESULTS.md,
// session 11).
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
#include <vector>

#include "base/os.h"
#include "base/status.h"

namespace weft {
namespace shm {

constexpr uint64_t kFifoMagic = 0x314d485354464557ull;  // "WEFTSHM1" in memory order
// 6: a ring of nDescs message descriptors apart from the slots; 5: announced; 4: no head counter;
// 3: slot descriptors; 2: stamps after the sizes
constexpr uint32_t kFifoVersion = 6;
constexpr size_t kCacheLine = 64;
constexpr size_t kPageBytes = 4096;
constexpr size_t kMaxSlots = 1u << 16;
constexpr size_t kMaxSlotBytes = size_t{1} << 32;
// Descriptors per FIFO at least (nDescs = max(nSlots, kMinDescs)): 2 KiB of them.
constexpr size_t kMinDescs = 16;

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
  uint64_t nDescs;       // descriptors in the ring (descCount(nSlots))
  uint64_t descsOffset;  // the SlotDesc array
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

  // Slots released, and the stamp of the call the receiver runs now (announce(); 0 none):
  // written by the receiver only, read by the sender on one line. (What the sender posted is in
  // the slot descriptors' seq fields; nothing else counts it.)
  alignas(kCacheLine) std::atomic<uint64_t> tail;
  std::atomic<uint64_t> announced;
};
static_assert(sizeof(FifoHeader) % kCacheLine == 0, "the header ends on a cache line");

// One message's descriptor, two cache lines of its own (a 64 B all-reduce's message fits; the
// second line is the adjacent one, which the L2 fetches with the first on the CPUs measured).
// Message m (1, 2, ...) uses descriptor (m - 1) % nDescs. The sender writes bytes, stamp and (for
// a message of 1..kInlineBytes bytes) a copy of the bytes, then seq = m (release); the receiver
// waits for seq == its count of received messages + 1 (acquire). Any other message (more bytes,
// or 0: a ReferenceMessage, host_executor.cc) lies in the next data slot in turn: both ends count
// those messages, so the descriptor need not name the slot.
constexpr size_t kInlineBytes = 104;
struct alignas(2 * kCacheLine) SlotDesc {
  std::atomic<uint64_t> seq;
  uint64_t bytes;
  uint64_t stamp;
  unsigned char inlineData[kInlineBytes];
};
static_assert(sizeof(SlotDesc) == 2 * kCacheLine, "a slot descriptor is two cache lines");

// Whether a message of `bytes` bytes travels in its descriptor (else in a data slot).
inline bool travelsInline(uint64_t bytes) { return bytes != 0 && bytes <= kInlineBytes; }
// Descriptors in a FIFO of nSlots data slots.
inline size_t descCount(size_t nSlots) { return nSlots > kMinDescs ? nSlots : kMinDescs; }

// Where things lie in a segment of this geometry (byte offsets from the start of the segment).
struct FifoLayout {
  size_t slotStride = 0;
  size_t nDescs = 0;
  size_t descsOffset = 0;  // nDescs SlotDescs
  size_t dataOffset = 0;
  size_t totalBytes = 0;
};
FifoLayout fifoLayout(size_t nSlots, size_t slotBytes);

// "/weft-<commTag>-<sender>-<receiver>-<lane>", with characters that cannot appear in a
// shared-memory name replaced (and an over-long tag replaced by its hash).
std::string fifoName(const std::string& commTag, int sender, int receiver, int lane);

// Removes the FIFO segments in /dev/shm whose creator was a process of this pid namespace that
// no longer runs (a receiver killed, or ended by _exit, before its sender attached: nobody else
// would ever unlink them); returns how many. Segments of live processes, of other namespaces,
// half-made ones and anything that is not a FIFO (weftMemAlloc's /weft-mem-*) are left alone.
// ShmFifo::create runs it once per process.
size_t removeFifosOfDeadProcesses();

// Free bytes in /dev/shm, or UINT64_MAX when that cannot be told.
uint64_t shmFreeBytes();
// Ok when `needBytes` fit in `freeBytes`; otherwise an error saying what to do about it.
Status checkShmSpace(uint64_t freeBytes, uint64_t needBytes, int selfRank, int peerRank);

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

  // Sender: the slot to fill next, or nullptr while no descriptor or no data slot is free. A
  // message that then travels inline only borrows the slot (postSend copies it out), so the slot
  // must be free of earlier messages, not of later ones.
  void* trySendSlot() {
    if (!sendRoom()) {
      cachedTail_ = header_->tail.load(std::memory_order_acquire);  // the receiver is done reading
      if (!sendRoom()) return nullptr;
    }
    return data_ + sendSlot_ * stride_;
  }
  // Sender: publishes the slot from trySendSlot() holding `bytes` bytes.
  void postSend(size_t bytes, uint64_t stamp) {
    SlotDesc& d = descs_[sendDesc_];
    d.bytes = bytes;  // published by the seq store
    d.stamp = stamp;
    if (travelsInline(bytes)) {
      std::memcpy(d.inlineData, data_ + sendSlot_ * stride_, bytes);
    } else {
      slotUser_[sendSlot_] = head_ + 1;  // free again once the receiver released this message
      if (++sendSlot_ == nSlots_) sendSlot_ = 0;
    }
    if (++sendDesc_ == nDescs_) sendDesc_ = 0;
    d.seq.store(++head_, std::memory_order_release);
  }

  // Receiver: the oldest message's bytes and byte count, or nullptr when none is ready.
  const void* tryRecv(size_t* bytes, uint64_t* stamp) {
    const SlotDesc& d = descs_[recvDesc_];
    if (d.seq.load(std::memory_order_acquire) != tail_ + 1) return nullptr;  // the message's bytes are visible
    const uint64_t n = d.bytes;
    *bytes = n < slotBytes_ ? n : slotBytes_;  // never past the slot, whatever the peer wrote
    *stamp = d.stamp;
    recvInline_ = travelsInline(n);
    return recvInline_ ? static_cast<const void*>(d.inlineData) : data_ + recvSlot_ * stride_;
  }
  // Receiver: hands the message from tryRecv() (its descriptor, and its data slot) back to the
  // sender. Only after tryRecv() found it.
  void releaseRecv() {
    if (!recvInline_ && ++recvSlot_ == nSlots_) recvSlot_ = 0;
    if (++recvDesc_ == nDescs_) recvDesc_ = 0;
    header_->tail.store(++tail_, std::memory_order_release);
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
  // Sender: true when the receiver has released every message posted so far.
  bool allSendsConsumed() const { return header_->tail.load(std::memory_order_acquire) == head_; }
  // Receiver: this rank runs the call stamped `stamp` (call_stamp.h) and will read this FIFO in
  // it. Sender: whether the receiver last announced `stamp` (Connection::peerAnnounced).
  void announce(uint64_t stamp) { header_->announced.store(stamp, std::memory_order_release); }
  bool peerAnnounced(uint64_t stamp) const { return header_->announced.load(std::memory_order_acquire) == stamp; }
  // True once the peer set its abort flag (cheap: one load).
  bool peerAborted() const {
    const std::atomic<uint32_t>& peer = role_ == Role::kSender ? header_->receiverAbort : header_->senderAbort;
    return peer.load(std::memory_order_acquire) != 0;
  }

 private:
  ShmFifo(Role role, const FifoSpec& spec, void* base, size_t bytes);
  int peerPidToCheck() const;
  // Sender, by its cached view of the tail: a descriptor is free, and so is the next data slot.
  bool sendRoom() const { return head_ - cachedTail_ < nDescs_ && slotUser_[sendSlot_] <= cachedTail_; }

  Role role_;
  FifoSpec spec_;
  int placedNode_ = -1;
  void* base_ = nullptr;
  size_t mappedBytes_ = 0;
  FifoHeader* header_ = nullptr;
  SlotDesc* descs_ = nullptr;
  char* data_ = nullptr;
  size_t nSlots_ = 0;
  size_t nDescs_ = 0;
  size_t slotBytes_ = 0;
  size_t stride_ = 0;

  // Sender state: messages posted, the receiver's tail as last read, the next descriptor and data
  // slot, and per data slot the last message that used it (0: none).
  uint64_t head_ = 0;
  uint64_t cachedTail_ = 0;
  size_t sendDesc_ = 0;
  size_t sendSlot_ = 0;
  std::vector<uint64_t> slotUser_;
  // Receiver state (only the receiver writes tail): the next descriptor and data slot.
  uint64_t tail_ = 0;
  size_t recvDesc_ = 0;
  size_t recvSlot_ = 0;
  bool recvInline_ = false;  // the message tryRecv() found travels in its descriptor

  // Whether the peer's pid means something here (same pid namespace, another process).
  bool peerPidComparable_ = false;
};

}  // namespace shm
}  // namespace weft

#endif  // WEFT_TRANSPORTS_SHM_SHM_FIFO_H_
