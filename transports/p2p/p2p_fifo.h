// The FIFO of the GPU peer-to-peer transport: one block of device memory on the receiver's GPU
// holding the counters, the per-slot byte counts and the slots, which the lane program of both
// ranks reads and writes directly (collectives/device/lane_program.cuh). Only the device
// executor uses it: the host never touches a slot, it reads and writes the counters and abort
// flags through the runtime's copies (device memory is not host-addressable).
//
// The receiver allocates the block and tells the sender where it is in a P2pOffer sent through
// the bootstrap: the raw pointer when both ranks live in one process, an IPC handle otherwise.
// Each side keeps its own count (FifoView::cursor) in a small allocation on its own GPU.
//
// P2pTransport (p2p_transport.h) makes the connections; tests use the layout and the offer to
// check the block and to corrupt the handshake.
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
constexpr uint32_t kOfferVersion = 2;  // 2: the block holds per-slot stamps

// Byte offsets within the block. Header lines: head (sender writes), tail (receiver writes),
// the sender's abort flag, the receiver's abort flag; then sizes[nSlots]; then stamps[nSlots]
// (what each slot was posted with, FifoView::stamps); then the slots.
struct P2pLayout {
  static constexpr size_t kHeadOffset = 0 * kLineBytes;
  static constexpr size_t kTailOffset = 1 * kLineBytes;
  static constexpr size_t kSenderAbortOffset = 2 * kLineBytes;
  static constexpr size_t kReceiverAbortOffset = 3 * kLineBytes;
  static constexpr size_t kSizesOffset = 4 * kLineBytes;
  size_t stride = 0;  // slotBytes rounded up to a line
  size_t stampsOffset = 0;
  size_t dataOffset = 0;
  size_t totalBytes = 0;
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

// The inode of this process's pid namespace (0: unknown): pids of two processes mean something
// to each other only when it is equal.
uint64_t pidNamespace();

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

 private:
  device::Runtime* runtime_ = nullptr;
  void* ptr_ = nullptr;
  Kind kind_ = Kind::kNone;
};

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
  P2pConnection(const Setup& setup, DeviceMemory block, DeviceMemory cursor);
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

  Setup setup_;
  P2pLayout layout_;
  DeviceMemory block_;
  DeviceMemory cursor_;
};

}  // namespace p2p
}  // namespace weft

#endif  // WEFT_TRANSPORTS_P2P_P2P_FIFO_H_
