#include "transports/p2p/p2p_transport.h"

#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>

#include "base/log.h"
#include "base/os.h"
#include "base/params.h"
#include "device/device.h"
#include "transports/p2p/p2p_fifo.h"

namespace weft {
namespace p2p {
namespace {

std::string hostOf(const PeerInfo& p) { return std::string(p.hostName, strnlen(p.hostName, sizeof(p.hostName))); }

Status checkRequest(const ConnectRequest& req, bool sender) {
  const char* side = sender ? "sending" : "receiving";
  if (req.runtime == nullptr) {
    return WEFT_ERROR(weftInternalError,
                      "rank %d: the GPU peer-to-peer transport was asked for a host-executor connection (%s, rank %d, "
                      "lane %d); it serves the device executor only. This is a bug in Weft: please report it",
                      req.self.rank, side, req.peer.rank, req.lane);
  }
  if (req.exchange == nullptr || req.self.rank < 0 || req.peer.rank < 0 || req.lane < 0 || req.lane >= kMaxLanes) {
    return WEFT_ERROR(weftInvalidArgument,
                      "p2p transport: bad connect request (rank %d, peer %d, lane %d, exchange %s); this is a bug in "
                      "the caller",
                      req.self.rank, req.peer.rank, req.lane, req.exchange ? "set" : "missing");
  }
  if (req.self.device < 0 || req.peer.device < 0 || req.self.hostHash != req.peer.hostHash) {
    return WEFT_ERROR(weftInternalError,
                      "rank %d: the GPU peer-to-peer transport cannot connect to rank %d (devices %d and %d, %s); "
                      "canConnect() refuses such pairs, this is a bug in Weft",
                      req.self.rank, req.peer.rank, req.self.device, req.peer.device,
                      req.self.hostHash == req.peer.hostHash ? "same host" : "different hosts");
  }
  return checkGeometry(req.nSlots, req.slotBytes, req.self.rank);
}

// Ok when `senderDevice` can write `receiverDevice`'s memory (the same device always can). The
// sender of a pair within one process also turns peer access on (across processes the IPC
// import does it).
Status checkPeerPath(const ConnectRequest& req, int senderDevice, int receiverDevice, bool enable) {
  if (senderDevice == receiverDevice) return Status::ok();
  bool can = false;
  Status asked = req.runtime->canAccessPeer(senderDevice, receiverDevice, &can);
  if (!asked.isOk()) {
    return std::move(asked).withPrefix("rank " + std::to_string(req.self.rank) + ": asking whether device " +
                                       std::to_string(senderDevice) + " reaches device " +
                                       std::to_string(receiverDevice) + ": ");
  }
  if (!can) {
    const int sender = enable ? req.self.rank : req.peer.rank;
    const int receiver = enable ? req.peer.rank : req.self.rank;
    return WEFT_ERROR(weftSystemError,
                      "rank %d: rank %d (device %d) and rank %d (device %d) on host %s have no GPU peer path: the %s "
                      "runtime says device %d cannot access device %d (no NVLink/xGMI, and PCIe peer-to-peer "
                      "unsupported or disabled, e.g. by the IOMMU or a virtual machine); such a pair must stage "
                      "through host shared memory (the shm transport) instead of the p2p transport",
                      req.self.rank, sender, senderDevice, receiver, receiverDevice, hostOf(req.self).c_str(),
                      req.runtime->name(), senderDevice, receiverDevice);
  }
  if (enable && req.self.processHash == req.peer.processHash) {
    Status enabled = req.runtime->enablePeerAccess(receiverDevice);
    if (!enabled.isOk()) {
      return std::move(enabled).withPrefix("rank " + std::to_string(req.self.rank) +
                                           ": enabling peer access from device " + std::to_string(senderDevice) +
                                           " to device " + std::to_string(receiverDevice) + ": ");
    }
  }
  return Status::ok();
}

// Device memory of `bytes` bytes on the current device, zeroed by a memset queued on `stream`
// (the caller synchronizes it before anyone else sees the memory). Shared with other agents
// (device.h, Sharing): the peer GPU writes the slots and counters while this one's lanes poll
// them, and the host reads the counters.
Status allocZeroed(device::Runtime* runtime, size_t bytes, device::Stream stream, DeviceMemory* out) {
  void* ptr = nullptr;
  WEFT_TRY(runtime->allocDeviceShared(bytes, &ptr));
  DeviceMemory mem(runtime, ptr, DeviceMemory::Kind::kAllocated);
  WEFT_TRY(runtime->memsetAsync(ptr, 0, bytes, stream));
  *out = std::move(mem);
  return Status::ok();
}

// The FIFO block and cursor, zeroed and synchronized before they are offered: a memset on the
// legacy default stream (cudaMemset) could run after the peer's first writes, in a job whose
// default stream is busy, and wipe them. A stream of our own, non-blocking, waits for nothing
// else: no device-wide synchronization while lanes of this process may be spinning.
// The sender's own block (cursor and credits, P2pSenderLayout) goes the same way (block: null).
Status allocFifoMemory(device::Runtime* runtime, size_t blockBytes, DeviceMemory* block, size_t ownBytes,
                       DeviceMemory* own) {
  device::Stream stream = nullptr;
  WEFT_TRY(runtime->streamCreate(&stream));
  Status s = block != nullptr ? allocZeroed(runtime, blockBytes, stream, block) : Status::ok();
  if (s.isOk()) s = allocZeroed(runtime, ownBytes, stream, own);
  Status synced = runtime->streamSynchronize(stream);
  Status destroyed = runtime->streamDestroy(stream);
  if (s.isOk()) s = std::move(synced);
  if (s.isOk()) s = std::move(destroyed);
  return s;
}

// The receiver's mapping of the sender's block (its credits), from the P2pCredits the sender
// offered in prepareSend (or its connectSend), waiting for it until req.deadline.
Status takeSenderCredits(const ConnectRequest& req, DeviceMemory* senderBlock) {
  if (req.abort != nullptr && req.abort->load(std::memory_order_relaxed)) {
    return WEFT_ERROR(weftRemoteError, "rank %d: aborted while waiting for rank %d's GPU peer-to-peer credits",
                      req.self.rank, req.peer.rank);
  }
  P2pCredits credits;
  Status got = req.exchange->recv(req.peer.rank, kCreditsTagBase + req.lane, &credits, sizeof(credits), req.deadline, req.abort);
  if (!got.isOk()) return std::move(got).withPrefix("p2p transport: waiting for the FIFO credits' address: ");
  const bool sameProcess = req.self.processHash == req.peer.processHash;
  WEFT_TRY(checkCredits(credits, {req.self.rank, req.peer.rank, req.lane, req.peer.device, sameProcess}));
  PeerMemory peer{req.self.rank, req.peer.rank, req.peer.device, sameProcess, credits.pointer, &credits.ipc,
                  credits.pid};
  return mapPeerMemory(req.runtime, peer, "FIFO credits", senderBlock);
}

// The receiver's end: the FIFO block and cursor on this rank's device, the sender's block
// mapped, and the offer that describes the FIFO to the sender.
Status makeReceiverEnd(const ConnectRequest& req, P2pOffer* offer, DeviceMemory* block, DeviceMemory* cursor,
                       DeviceMemory* senderBlock) {
  DeviceScope scope(req.runtime);
  WEFT_TRY(scope.enter(req.self.device));
  WEFT_TRY(checkPeerPath(req, req.peer.device, req.self.device, false));
  // The receiver posts the sender's credits on the sender's GPU.
  WEFT_TRY(checkPeerPath(req, req.self.device, req.peer.device, true));
  const P2pLayout layout = p2pLayout(req.nSlots, req.slotBytes);
  WEFT_TRY(allocFifoMemory(req.runtime, layout.totalBytes, block, sizeof(uint64_t), cursor));
  WEFT_TRY(takeSenderCredits(req, senderBlock));
  const bool sameProcess = req.self.processHash == req.peer.processHash;
  if (sameProcess) {
    offer->pointer = reinterpret_cast<uint64_t>(block->get());
  } else {
    WEFT_TRY(req.runtime->ipcExport(block->get(), &offer->ipc));
  }
  offer->sameProcess = sameProcess ? 1 : 0;
  offer->stride = layout.stride;
  offer->totalBytes = layout.totalBytes;
  return Status::ok();
}

// The sender's view of the receiver's block: the same pointer within a process, an IPC mapping
// across processes.
Status mapReceiverBlock(const ConnectRequest& req, const P2pOffer& offer, DeviceMemory* block) {
  PeerMemory peer{req.self.rank, req.peer.rank, req.peer.device, offer.sameProcess == 1, offer.pointer, &offer.ipc,
                  offer.pid};
  return mapPeerMemory(req.runtime, peer, "FIFO", block);
}

// The sender's block (cursor and credits) on its own GPU, and the P2pCredits that tells the
// receiver where it is; on failure the receiver is told at once (failed = 1), rather than left
// to wait for its credits until its deadline.
Status makeSenderEnd(const ConnectRequest& req, bool sameProcess, DeviceMemory* own) {
  P2pCredits credits;
  credits.magic = kCreditsMagic;
  credits.version = kOfferVersion;
  credits.senderRank = req.self.rank;
  credits.receiverRank = req.peer.rank;
  credits.lane = req.lane;
  credits.device = req.self.device;
  credits.pid = static_cast<int32_t>(getpid());
  Status made = allocFifoMemory(req.runtime, 0, nullptr, P2pSenderLayout::bytes(req.slotBytes), own);
  if (made.isOk() && sameProcess) {
    credits.sameProcess = 1;
    credits.pointer = reinterpret_cast<uint64_t>(own->get());
  } else if (made.isOk()) {
    made = req.runtime->ipcExport(own->get(), &credits.ipc);
  }
  if (!made.isOk()) credits.failed = 1;
  Status sent = req.exchange->send(req.peer.rank, kCreditsTagBase + req.lane, &credits, sizeof(credits));
  WEFT_TRY(made);
  if (!sent.isOk()) return std::move(sent).withPrefix("p2p transport: sending the FIFO credits' address: ");
  return Status::ok();
}

struct Registrar {
  Registrar() {
    registerTransport("p2p", kP2pPriority, [] { return std::unique_ptr<Transport>(new P2pTransport()); });
  }
} registrar;

}  // namespace

bool P2pTransport::canConnect(const PeerInfo& self, const PeerInfo& peer) const {
  if (params::P2pDisable() || self.device < 0 || peer.device < 0 || self.hostHash != peer.hostHash) return false;
  if (self.device == peer.device) return true;
  // Both ends ask the same symmetric question, so they agree; a pair without a peer path is
  // staged through host memory instead (src/core bridges the shm transport). peer.device is this
  // process's ordinal for the peer's GPU: src/core translates it by bus id (Communicator::
  // pickTransport) and asks only for pairs whose processes both see both GPUs.
  device::Runtime* runtime = device::gpuRuntime();
  bool there = false, back = false;
  return runtime != nullptr && runtime->canAccessPeer(self.device, peer.device, &there).isOk() &&
         runtime->canAccessPeer(peer.device, self.device, &back).isOk() && there && back;
}

Status P2pTransport::connectRecv(const ConnectRequest& req, std::unique_ptr<Connection>* out) {
  WEFT_TRY(checkRequest(req, false));
  P2pOffer offer;
  offer.magic = kOfferMagic;
  offer.version = kOfferVersion;
  offer.receiverRank = req.self.rank;
  offer.senderRank = req.peer.rank;
  offer.lane = req.lane;
  offer.pid = static_cast<int32_t>(getpid());
  offer.pidNamespace = processPidNamespace();
  offer.processHash = req.self.processHash;
  offer.device = req.self.device;
  offer.nSlots = req.nSlots;
  offer.slotBytes = req.slotBytes;
  DeviceMemory block;
  DeviceMemory cursor;
  DeviceMemory senderBlock;
  Status made = makeReceiverEnd(req, &offer, &block, &cursor, &senderBlock);
  if (!made.isOk()) {
    // Tell the sender at once rather than let it wait for an offer until its deadline.
    P2pOffer refusal;
    refusal.magic = kOfferMagic;
    refusal.version = kOfferVersion;
    refusal.failed = 1;
    refusal.receiverRank = req.self.rank;
    refusal.senderRank = req.peer.rank;
    refusal.lane = req.lane;
    (void)req.exchange->send(req.peer.rank, kOfferTagBase + req.lane, &refusal, sizeof(refusal));
    return made;
  }
  Status sent = req.exchange->send(req.peer.rank, kOfferTagBase + req.lane, &offer, sizeof(offer));
  if (!sent.isOk()) return std::move(sent).withPrefix("p2p transport: sending the FIFO's address: ");

  P2pConnection::Setup setup;
  setup.role = P2pConnection::Role::kReceiver;
  setup.runtime = req.runtime;
  setup.selfRank = req.self.rank;
  setup.peerRank = req.peer.rank;
  setup.selfDevice = req.self.device;
  setup.nSlots = req.nSlots;
  setup.slotBytes = req.slotBytes;
  // The pid the peer reported at init, when it means something here (like the shm FIFO before
  // its sender attaches: a live process of that pid in this namespace).
  const int pid = req.peer.pid;
  if (offer.sameProcess == 0 && pid > 0 && pid != getpid() && processAlive(pid)) setup.peerPid = pid;
  setup.peerHost = hostOf(req.peer);
  WEFT_LOG(kInfo, kP2p,
           "rank %d: receiving from rank %d lane %d over GPU peer memory (device %d <- device %d, %s, %zu "
           "slots of %s)",
           req.self.rank, req.peer.rank, req.lane, req.self.device, req.peer.device,
           offer.sameProcess ? "same process" : "IPC", req.nSlots, formatBytes(req.slotBytes).c_str());
  *out = std::make_unique<P2pConnection>(setup, std::move(block), std::move(cursor), std::move(senderBlock));
  return Status::ok();
}

Status P2pTransport::prepareSend(const ConnectRequest& req) {
  WEFT_TRY(checkRequest(req, true));
  DeviceScope scope(req.runtime);
  WEFT_TRY(scope.enter(req.self.device));
  DeviceMemory own;
  WEFT_TRY(makeSenderEnd(req, req.self.processHash == req.peer.processHash, &own));
  std::lock_guard<std::mutex> lock(mu_);
  prepared_[{req.self.rank, req.peer.rank, req.lane}] = std::move(own);
  return Status::ok();
}

Status P2pTransport::connectSend(const ConnectRequest& req, std::unique_ptr<Connection>* out) {
  WEFT_TRY(checkRequest(req, true));
  DeviceMemory own;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = prepared_.find({req.self.rank, req.peer.rank, req.lane});
    if (it != prepared_.end()) {
      own = std::move(it->second);
      prepared_.erase(it);
    }
  }
  // Not prepared (a caller that connects one end at a time): offer the credits now; the
  // receiver, in another thread or process, waits for them before it offers its block.
  if (own.get() == nullptr) {
    WEFT_TRY(prepareSend(req));
    return connectSend(req, out);
  }
  DeviceScope scope(req.runtime);
  WEFT_TRY(scope.enter(req.self.device));
  WEFT_TRY(checkPeerPath(req, req.self.device, req.peer.device, true));

  if (req.abort != nullptr && req.abort->load(std::memory_order_relaxed)) {
    return WEFT_ERROR(weftRemoteError, "rank %d: aborted while waiting for rank %d's GPU peer-to-peer FIFO",
                      req.self.rank, req.peer.rank);
  }
  P2pOffer offer;
  Status got = req.exchange->recv(req.peer.rank, kOfferTagBase + req.lane, &offer, sizeof(offer), req.deadline, req.abort);
  if (!got.isOk()) return std::move(got).withPrefix("p2p transport: waiting for the FIFO's address: ");
  WEFT_TRY(checkOffer(offer, req));
  DeviceMemory block;
  WEFT_TRY(mapReceiverBlock(req, offer, &block));

  P2pConnection::Setup setup;
  setup.role = P2pConnection::Role::kSender;
  setup.runtime = req.runtime;
  setup.selfRank = req.self.rank;
  setup.peerRank = req.peer.rank;
  setup.selfDevice = req.self.device;
  setup.nSlots = req.nSlots;
  setup.slotBytes = req.slotBytes;
  const bool comparable = offer.sameProcess == 0 && offer.pid > 0 && offer.pid != getpid() && offer.pidNamespace != 0 &&
                          offer.pidNamespace == processPidNamespace();
  setup.peerPid = comparable ? offer.pid : 0;
  setup.peerHost = hostOf(req.peer);
  WEFT_LOG(kInfo, kP2p,
           "rank %d: sending to rank %d lane %d over GPU peer memory (device %d -> device %d, %s, %zu "
           "slots of %s)",
           req.self.rank, req.peer.rank, req.lane, req.self.device, req.peer.device,
           offer.sameProcess ? "same process" : "IPC", req.nSlots, formatBytes(req.slotBytes).c_str());
  *out = std::make_unique<P2pConnection>(setup, std::move(block), std::move(own), DeviceMemory());
  return Status::ok();
}

}  // namespace p2p
}  // namespace weft
