// Communicator::recvAny (weftRecvAny): a receive whose sender is the first peer that sends to
// this rank. The senders make ordinary sends (weftSend), so nothing about them changes: this
// rank makes its receiving end of the point-to-point FIFO from every peer, watches their heads,
// and takes the first peer whose oldest message is a send (its stamp carries kP2pSeqBit; a
// collective's data that arrived early does not). That send is then received as weftRecv from
// that peer would receive it, stamp and size checks included. Peers are looked at in turn,
// starting after the latest source, so that one busy sender cannot starve the others.
#include <string>

#include "base/log.h"
#include "base/os.h"
#include "collectives/call_stamp.h"
#include "core/comm.h"

namespace weft {
namespace core {
namespace {

// The FIFO lane sends and receives use between a pair (host_calls.cc: kP2pLane).
constexpr int kP2pLane = 0;

}  // namespace

Status Communicator::recvAny(void* recvbuff, size_t bytes, int* source) {
  *source = -1;
  int from = -1;
  {
    // Any peer may be the sender: every rank is involved, so a failed or silent one ends the wait.
    opNumber_ = liveNumber(collSeq_, false);
    setLogRank(rank_);
    WatchedOp watched(liveness_.get(), opNumber_, nullptr);
    Status s = Status::ok();
    if (!recvAnyConnected_) s = connectEverySender();
    if (s.isOk()) s = waitForAnySender(&from);
    if (!s.isOk()) return fail(std::move(s));
  }
  P2pCall call;
  call.send = false;
  call.recvbuff = recvbuff;
  call.bytes = bytes;
  call.peer = from;
  WEFT_TRY(runP2p({call}));
  *source = from;
  return Status::ok();
}

// Receiving ends of host transports wait for nothing of their senders (transport.h), but some
// send their offer through the bootstrap: a peer that has destroyed its communicator (it finished
// its part of the job) can send nothing more and is left out, as long as some peer can still send.
Status Communicator::connectEverySender() {
  const Deadline deadline = Deadline::afterSeconds(settings_.timeoutS);
  int reachable = 0;
  for (int p = 0; p < nRanks_; ++p) {
    if (p == rank_ || recvAnyLeft_.count(p) != 0) continue;
    Status s = connections_.connect({{p, false, kP2pLane}}, deadline);
    if (s.isOk()) {
      ++reachable;
    } else if (bootstrap_->peerLeft(p, deadline)) {
      WEFT_LOG(kInfo, kColl, "rank %d: weftRecvAny leaves out rank %d, which has left: %s", rank_, p,
               s.message().c_str());
      recvAnyLeft_.insert(p);
    } else {
      return s;
    }
  }
  if (reachable == 0) return noSenderLeft();
  recvAnyConnected_ = true;
  return Status::ok();
}

Status Communicator::noSenderLeft() const {
  return WEFT_ERROR(weftInvalidUsage,
                    "rank %d: weftRecvAny: every other rank has destroyed its communicator or exited, so no "
                    "message can come",
                    rank_);
}

// A peer that left has written its last message before it went: its FIFO is looked at once more.
Status Communicator::leaveOutPeersThatLeft(const Deadline& deadline) {
  int senders = 0;
  for (int p = 0; p < nRanks_; ++p) {
    if (p == rank_ || recvAnyLeft_.count(p) != 0) continue;
    Connection* conn = connections_.get({p, false, kP2pLane});
    size_t n = 0;
    uint64_t stamp = 0;
    if (conn != nullptr && bootstrap_->peerLeft(p, deadline) && conn->tryRecv(&n, &stamp) == nullptr) {
      WEFT_LOG(kInfo, kColl, "rank %d: weftRecvAny leaves out rank %d, which has left", rank_, p);
      recvAnyLeft_.insert(p);
      continue;
    }
    ++senders;
  }
  return senders == 0 ? noSenderLeft() : Status::ok();
}

Status Communicator::waitForAnySender(int* from) {
  const Deadline deadline = Deadline::afterSeconds(settings_.timeoutS);
  Backoff backoff;
  for (uint64_t round = 0;; ++round) {
    for (int i = 0; i < nRanks_; ++i) {
      const int p = (recvAnyNext_ + i) % nRanks_;
      if (p == rank_ || recvAnyLeft_.count(p) != 0) continue;
      Connection* conn = connections_.get({p, false, kP2pLane});
      if (conn == nullptr) {
        return WEFT_ERROR(weftInternalError, "rank %d: weftRecvAny: the connection from rank %d is gone", rank_, p);
      }
      size_t n = 0;
      uint64_t stamp = 0;
      if (conn->tryRecv(&n, &stamp) != nullptr && (coll::stampSeq(stamp) & coll::kP2pSeqBit) != 0) {
        recvAnyNext_ = (p + 1) % nRanks_;
        *from = p;
        return Status::ok();
      }
      if (conn->peerAborted()) {
        connections_.noteCulprit(p);
        return WEFT_ERROR(weftRemoteError,
                          "rank %d: weftRecvAny: rank %d failed while this rank waited for a message from any peer; "
                          "destroy or shrink the communicator",
                          rank_, p);
      }
    }
    // The flags are cheap; the liveness verdict and the clock every few hundred polls, and
    // every few thousand whether the quiet peers have left.
    if (round % 4096 == 4095) WEFT_TRY(leaveOutPeersThatLeft(deadline));
    if (aborted_.load() || stopWaits_.load() || round % 256 == 255) {
      WEFT_TRY(connections_.healthCheck());
      if (deadline.expired()) {
        return WEFT_ERROR(weftTimeout,
                          "rank %d: weftRecvAny: no peer sent a message to this rank within %d s (WEFT_TIMEOUT_S); "
                          "check that some rank calls weftSend to rank %d, or raise WEFT_TIMEOUT_S",
                          rank_, settings_.timeoutS, rank_);
      }
    }
    backoff.pause();
  }
}

}  // namespace core
}  // namespace weft
