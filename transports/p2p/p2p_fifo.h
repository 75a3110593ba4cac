// The FIFO of the GPU peer-to-peer transport: one block of device memory on the receiver's GPU
// holding head, the per-slot byte counts and stamps and the slots, and a small block on the
// sender's GPU holding the sender's cursor and its credits (FifoView::tail: the slots the
// receiver released), which the lane program of both ranks reads and writes directly
// (collectives/device/lane_program.cuh). Each side polls only counters in its own GPU's memory
// and writes the peer's remotely, as NCCL does: the receiver polls head, which the sender
// posts across NVLink/PCIe; the sender polls its credits, which the receiver posts back. A
// poll across the link costs a round trip each time; a remote store is posted and forgotten.
// Only the device executor uses the FIFO: the host never touches a slot, it reads and writes
// the counters and abort flags through the runtime's copies (device memory is not
// host-addressable).
//
// The receiver allocates the block and tells the sender where it is in a P2pOffer sent through
// the bootstrap: the raw pointer when both ranks live in one process, an IPC handle otherwise.
// The sender's block goes the other way first, in a P2pCredits (P2pTransport::prepareSend,
// before any receiving end is made, never waiting); the receiver maps it before it offers its
// block, so that no sender writes a FIFO whose receiver cannot yet post its credits (a sender
// that finished and exited would leave its block unmappable). Each side keeps its own count
// (FifoView::cursor) in memory on its own GPU.
//
// P2pTransport (p2p_transport.h) makes the connections; tests use the layout and the offer to
// check the block and to corrupt the handshake. A sending end, when it goes, waits until its
// receiver posted the last credits into its block: the receiver posts them after the sender's
// lanes are done, and a post into released memory would fault its GPU. When that does not come
// within 0.1 s (a failure on either side, the peer gone or late), the block is kept for the life
// of the process rather than released (256 bytes of device memory and the LL stage, 8 KiB).
#ifndef WEFT_TRANSPORTS_P2P_P2P_FIFO_H_
#define WEFT_TRANSPORTS_P2P_P2P_FIFO_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "device/device.h"
#include "device/kernel_api.h"
#include "transports/transport.h"

namespace weft {
namespace p2p {

constexpr size_t kLineBytes = 128;  // one counter per line: the two GPUs never share a line
constexpr size_t kMaxSlots = 1u << 16;
constexpr size_t kMaxSlotBytes = size_t{1} << 32;
// Lanes the tags below leave room for (the device executor's FIFO lanes start at 1 << 16).
constexpr int kMaxLanes = 1 << 20;

// Bootstrap tag of the offer for lane L: kOfferTagBase + L, clear of the other users' ranges
// (the communicator's split 0x5000 and up, the network transports 0x6e000 + lane).
constexpr int kOfferTagBase = 1 << 20;
constexpr uint64_t kOfferMagic = 0x3150325054464557ull;  // "WEFTP2P1" in memory order
// 2: the block holds per-slot stamps; 3: the credits (tail) live on the sender's GPU; 4: the
// block ends with an LL region, the sender's block with its LL stage.
constexpr uint32_t kOfferVersion = 4;
// Bootstrap tag of the sender's P2pCredits for lane L: kCreditsTagBase + L, above the offers'.
constexpr int kCreditsTagBase = kOfferTagBase + kMaxLanes;
constexpr uint64_t kCreditsMagic = 0x3143325054464557ull;  // "WEFTP2C1" in memory order

// Byte offsets within the receiver's block. Header lines: head (sender writes), the sender's
// abort flag, the receiver's abort flag; then sizes[nSlots]; then stamps[nSlots] (what each
// slot was posted with, FifoView::stamps); then the slots; then the LL region (FifoView::ll:
// nSlots LL slots of device::llSlotBytes(slotBytes)), which the sender writes lines into and
// the receiver polls, in its own memory like head.
struct P2pLayout {
  static constexpr size_t kHeadOffset = 0 * kLineBytes;
  static constexpr size_t kSenderAbortOffset = 1 * kLineBytes;
  static constexpr size_t kReceiverAbortOffset = 2 * kLineBytes;
  static constexpr size_t kSizesOffset = 3 * kLineBytes;
  size_t stride = 0;  // slotBytes rounded up to a line
  size_t stampsOffset = 0;
  size_t dataOffset = 0;
  size_t llOffset = 0;
  size_t llStride = 0;
  size_t totalBytes = 0;
};
// The sender's block on its own GPU: its cursor, and its credits (FifoView::tail), which the
// receiver writes and the sender polls; each on its own line; then its LL stage
// (FifoView::llStage, device::llSliceBytes(slotBytes)).
struct P2pSenderLayout {
  static constexpr size_t kCursorOffset = 0;
  static constexpr size_t kCreditsOffset = kLineBytes;
  static constexpr size_t kStageOffset = 2 * kLineBytes;
  static size_t bytes(size_t slotBytes) {
    return kStageOffset + (device::llSliceBytes(slotBytes) + kLineBytes - 1) / kLineBytes * kLineBytes;
  }
};
// The layout for this geometry; the caller has checked it (checkGeometry).
P2pLayout p2pLayout(size_t nSlots, size_t slotBytes);
// Ok for 1..kMaxSlots slots of 1 B..kMaxSlotBytes; otherwise an error naming the settings.
Status checkGeometry(size_t nSlots, size_t slotBytes, int selfRank);

// Receiver -> sender through the bootstrap: where the block is. Plain old data; the sender
// trusts none of it (checkOffer).
struct P2pOffer {
  uint64_t magic = 0;  // kOfferMagic
  uint32_t version = 0;
  uint32_t failed = 0;  // 1: the receiver could not make its end; nothing else is valid
  int32_t receiverRank = -1;
  int32_t senderRank = -1;
  int32_t lane = -1;
  int32_t pid = 0;
  uint64_t pidNamespace = 0;  // inode of the receiver's pid namespace (0: unknown)
  uint64_t processHash = 0;
  int32_t device = -1;       // the receiver's GPU, which holds the block
  uint32_t sameProcess = 0;  // 1: `pointer` is valid, 0: `ipc` is
  uint64_t nSlots = 0;
  uint64_t slotBytes = 0;
  uint64_t stride = 0;
  uint64_t totalBytes = 0;
  uint64_t pointer = 0;
  device::IpcHandle ipc = {};
};

// Ok when `offer` is what the receiver of `req` (the sender's request) must have sent: magic,
// version, ranks, lane, geometry and the way the block is shared all agree with the request.
Status checkOffer(const P2pOffer& offer, const ConnectRequest& req);

// Sender -> receiver through the bootstrap: where the sender's block (P2pSenderLayout) is.
struct P2pCredits {
  uint64_t magic = 0;  // kCreditsMagic
  uint32_t version = 0;  // kOfferVersion
  uint32_t failed = 0;   // 1: the sender could not make its end; nothing else is valid
  int32_t senderRank = -1;
  int32_t receiverRank = -1;
  int32_t lane = -1;
  int32_t device = -1;       // the sender's GPU, which holds the block
  uint32_t sameProcess = 0;  // 1: `pointer` is valid, 0: `ipc` is
  int32_t pid = 0;
  uint64_t pointer = 0;
  device::IpcHandle ipc = {};
};

// What the receiver of a P2pCredits must know to check it: the pair, the lane, where the
// sender lives.
struct CreditsExpect {
  int selfRank = -1;  // the receiver
  int peerRank = -1;  // the sender
  int lane = -1;
  int peerDevice = -1;
  bool sameProcess = false;
};
// Ok when `credits` is what the sender described by `want` must have sent.
Status checkCredits(const P2pCredits& credits, const CreditsExpect& want);

// Makes `device` the calling thread's current device for the scope (allocations, IPC imports
// and peer access all act on it), and restores the previous one on the way out.
class DeviceScope {
 public:
  explicit DeviceScope(device::Runtime* runtime) : runtime_(runtime) {}
  ~DeviceScope() {
    if (switched_) (void)runtime_->setDevice(saved_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  [[nodiscard]] Status enter(int device);

 private:
  device::Runtime* runtime_;
  int saved_ = -1;
  bool switched_ = false;
};

// A device allocation (or an imported IPC mapping) released on every path out unless released.
class DeviceMemory {
 public:
  enum class Kind { kNone, kAllocated, kImported, kBorrowed /* another connection's: not released */ };
  DeviceMemory() = default;
  DeviceMemory(device::Runtime* runtime, void* ptr, Kind kind) : runtime_(runtime), ptr_(ptr), kind_(kind) {}
  ~DeviceMemory() { reset(); }
  DeviceMemory(DeviceMemory&& o) noexcept;
  DeviceMemory& operator=(DeviceMemory&& o) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  char* get() const { return static_cast<char*>(ptr_); }
  void reset();
  // Lets go of the memory without releasing it (it stays for the life of the process).
  char* retire();

 private:
  device::Runtime* runtime_ = nullptr;
  void* ptr_ = nullptr;
  Kind kind_ = Kind::kNone;
};

// Memory of the peer's GPU (its FIFO block, `what`, described by an offer): the same pointer
// within a process, checked to be memory of peerDevice; an IPC mapping across processes.
struct PeerMemory {
  int selfRank = -1;
  int peerRank = -1;
  int peerDevice = -1;
  bool sameProcess = false;
  uint64_t pointer = 0;
  const device::IpcHandle* ipc = nullptr;
  int pid = 0;  // the peer's, for messages
};
Status mapPeerMemory(device::Runtime* runtime, const PeerMemory& peer, const char* what, DeviceMemory* out);

// One end of one edge. Made by P2pTransport; the lane program uses it through deviceFifo(),
// the host only to watch the peer, to abort, and to see that every send was consumed.
class P2pConnection final : public Connection {
 public:
  enum class Role { kSender, kReceiver };
  struct Setup {
    Role role = Role::kSender;
    device::Runtime* runtime = nullptr;
    int selfRank = -1;
    int peerRank = -1;
    int selfDevice = -1;
    size_t nSlots = 0;
    size_t slotBytes = 0;
    int peerPid = 0;  // > 0: a process of this host whose exit checkPeer() reports
    std::string peerHost;
  };
  // block: the receiver's block (the sender's mapping of it); own: this side's block on its
  // own GPU (the sender's P2pSenderLayout, the receiver's cursor); senderBlock: the receiver's
  // mapping of the sender's block (none for the sender).
  P2pConnection(const Setup& setup, DeviceMemory block, DeviceMemory own, DeviceMemory senderBlock);
  ~P2pConnection() override;

  size_t slotBytes() const override { return setup_.slotBytes; }
  // The host executor's methods: a p2p FIFO lives in device memory, which only the lane
  // program touches.
  void* trySendSlot() override { return nullptr; }
  void postSend(size_t, uint64_t) override {}
  const void* tryRecv(size_t*, uint64_t*) override { return nullptr; }
  void releaseRecv() override {}

  bool allSendsConsumed() const override;
  Status checkPeer() const override;
  void signalAbort(int culprit) override;
  bool peerAborted() const override { return peerAbortValue() != 0; }
  int peerAbortCulprit() const override;
  bool deviceFifo(device::FifoView* out) override;

 private:
  uint32_t* selfAbortFlag() const;
  uint32_t* peerAbortFlag() const;
  // The peer's abort flag, read through the runtime (0 when the read fails: logged).
  uint32_t peerAbortValue() const;
  Status readWord(const void* src, void* dst, size_t bytes, const char* what) const;
  // Where the sender's credits are: in own_ (sender) or in the mapping of the sender's block.
  uint64_t* credits() const;
  // Sender, before its block goes: the receiver posts credits into it after reading each slot,
  // so wait (briefly) until it posted the last one: true; false when it has not (it failed,
  // went away, or is late), and may still post.
  bool awaitLastCredits() const;

  Setup setup_;
  P2pLayout layout_;
  DeviceMemory block_;
  DeviceMemory own_;
  DeviceMemory senderBlock_;  // receiver: the sender's block
};

}  // namespace p2p
}  // namespace weft

#endif  // WEFT_TRANSPORTS_P2P_P2P_FIFO_H_
