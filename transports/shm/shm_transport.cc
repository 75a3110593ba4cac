#include "transports/shm/shm_transport.h"

#include <cstring>
#include <utility>

#include "base/log.h"
#include "base/params.h"

namespace weft {
namespace shm {
namespace {

// The sending end of an edge: only the sender methods do anything.
class ShmSendConnection final : public Connection {
 public:
  explicit ShmSendConnection(std::unique_ptr<ShmFifo> fifo) : fifo_(std::move(fifo)) {}
  size_t slotBytes() const override { return fifo_->slotBytes(); }
  void* trySendSlot() override { return fifo_->trySendSlot(); }
  void postSend(size_t bytes, uint64_t stamp) override { fifo_->postSend(bytes, stamp); }
  const void* tryRecv(size_t*, uint64_t*) override { return nullptr; }
  void releaseRecv() override {}
  Status checkPeer() const override { return fifo_->checkPeer(); }
  void signalAbort(int culprit) override { fifo_->signalAbort(culprit); }
  bool peerAborted() const override { return fifo_->peerAborted(); }
  int peerAbortCulprit() const override { return fifo_->peerAbortCulprit(); }
  bool allSendsConsumed() const override { return fifo_->allSendsConsumed(); }
  bool peerAnnounced(uint64_t stamp) const override { return fifo_->peerAnnounced(stamp); }

 private:
  std::unique_ptr<ShmFifo> fifo_;
};

// The receiving end of an edge: only the receiver methods do anything.
class ShmRecvConnection final : public Connection {
 public:
  explicit ShmRecvConnection(std::unique_ptr<ShmFifo> fifo) : fifo_(std::move(fifo)) {}
  size_t slotBytes() const override { return fifo_->slotBytes(); }
  void* trySendSlot() override { return nullptr; }
  void postSend(size_t, uint64_t) override {}
  const void* tryRecv(size_t* bytes, uint64_t* stamp) override { return fifo_->tryRecv(bytes, stamp); }
  void releaseRecv() override { fifo_->releaseRecv(); }
  Status checkPeer() const override { return fifo_->checkPeer(); }
  void signalAbort(int culprit) override { fifo_->signalAbort(culprit); }
  bool peerAborted() const override { return fifo_->peerAborted(); }
  int peerAbortCulprit() const override { return fifo_->peerAbortCulprit(); }
  bool allSendsConsumed() const override { return fifo_->allSendsConsumed(); }
  void announceCall(uint64_t stamp) override { fifo_->announce(stamp); }

 private:
  std::unique_ptr<ShmFifo> fifo_;
};

Status checkRequest(const ConnectRequest& req) {
  if (req.commTag.empty() || req.self.rank < 0 || req.peer.rank < 0 || req.lane < 0) {
    return WEFT_ERROR(weftInvalidArgument,
                      "shm transport: bad connect request (tag \"%s\", rank %d, peer %d, lane %d); this is a bug in "
                      "the caller",
                      req.commTag.c_str(), req.self.rank, req.peer.rank, req.lane);
  }
  return Status::ok();
}

struct Registrar {
  Registrar() {
    registerTransport("shm", 100, [] { return std::unique_ptr<Transport>(new ShmTransport()); });
  }
} registrar;

}  // namespace

FifoSpec fifoSpecFor(const ConnectRequest& req, ShmFifo::Role role) {
  FifoSpec spec;
  bool sender = role == ShmFifo::Role::kSender;
  spec.name =
      fifoName(req.commTag, sender ? req.self.rank : req.peer.rank, sender ? req.peer.rank : req.self.rank, req.lane);
  spec.nSlots = req.nSlots;
  spec.slotBytes = req.slotBytes;
  spec.selfRank = req.self.rank;
  spec.peerRank = req.peer.rank;
  spec.peerPid = req.peer.pid;
  spec.numaNode = req.numaNode;
  spec.nearPages = params::ShmNearPages();
  spec.abort = req.abort;
  spec.peerHost.assign(req.peer.hostName, strnlen(req.peer.hostName, sizeof(req.peer.hostName)));
  return spec;
}

bool ShmTransport::canConnect(const PeerInfo& self, const PeerInfo& peer) const {
  return self.hostHash == peer.hostHash && !params::ShmDisable();
}

Status ShmTransport::connectRecv(const ConnectRequest& req, std::unique_ptr<Connection>* out) {
  WEFT_TRY(checkRequest(req));
  std::unique_ptr<ShmFifo> fifo;
  WEFT_TRY(ShmFifo::create(fifoSpecFor(req, ShmFifo::Role::kReceiver), &fifo));
  WEFT_LOG(kInfo, kShm, "rank %d: receiving from rank %d lane %d over shared memory (%s, %zu slots of %s)",
           req.self.rank, req.peer.rank, req.lane, fifo->name().c_str(), req.nSlots,
           formatBytes(req.slotBytes).c_str());
  *out = std::make_unique<ShmRecvConnection>(std::move(fifo));
  return Status::ok();
}

Status ShmTransport::connectSend(const ConnectRequest& req, std::unique_ptr<Connection>* out) {
  WEFT_TRY(checkRequest(req));
  std::unique_ptr<ShmFifo> fifo;
  WEFT_TRY(ShmFifo::attach(fifoSpecFor(req, ShmFifo::Role::kSender), req.deadline, &fifo));
  WEFT_LOG(kInfo, kShm, "rank %d: sending to rank %d lane %d over shared memory (%zu slots of %s)", req.self.rank,
           req.peer.rank, req.lane, req.nSlots, formatBytes(req.slotBytes).c_str());
  *out = std::make_unique<ShmSendConnection>(std::move(fifo));
  return Status::ok();
}

}  // namespace shm
}  // namespace weft
