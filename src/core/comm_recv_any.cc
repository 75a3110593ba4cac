// Communicator::recvAny (weftRecvAny): a receive whose sender is the first peer that sends to
// this rank. The senders make ordinary sends (weftSend), so nothing about them changes: this
// rank makes its receiving end of the point-to-point FIFO from every peer, watches their heads,
// and takes the first peer whose oldest message is a send (its stamp carries kP2pSeqBit; a
// collective's data that arrived early does not). That send is then received as weftRecv from
// that peer would receive it, stamp and size checks included. Peers are looked at in turn,
// starting after the latest source, so that one busy sender cannot starve the others.
#include <string>
#include <vector>

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
    if (!recvAnyConnected_) {
      std::vector<coll::ConnectionKey> keys;
      for (int p = 0; p < nRanks_; ++p) {
        if (p != rank_) keys.push_back({p, false, kP2pLane});
      }
      // Receiving ends of host transports wait for nothing of their senders (transport.h).
      s = connections_.connect(keys, Deadline::afterSeconds(settings_.timeoutS));
      recvAnyConnected_ = s.isOk();
    }
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

Status Communicator::waitForAnySender(int* from) {
  const Deadline deadline = Deadline::afterSeconds(settings_.timeoutS);
  Backoff backoff;
  for (uint64_t round = 0;; ++round) {
    for (int i = 0; i < nRanks_; ++i) {
      const int p = (recvAnyNext_ + i) % nRanks_;
      if (p == rank_) continue;
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
    // The flags are cheap; the liveness verdict and the clock every few hundred polls.
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
