// The host executor's diagnosis (host_diagnosis.h): StallBlame's sentences for a stalled or
// failed operation, CallChecker's stray messages and probes.
#include "collectives/host_diagnosis.h"

#include <cstdio>

#include "collectives/call_stamp.h"

namespace weft {
namespace coll {

Status StallBlame::check(const std::vector<TrackState>& tracks, bool expired, double stalledS) {
  WEFT_TRY(provider_->healthCheck());
  // Any peer of this operation that failed ends it, even one this rank is not waiting for:
  // the data this rank waits for may never come because of it.
  for (const auto& key : plan_.keys) {
    Connection* conn = provider_->get(key);
    if (!conn->peerAborted()) continue;
    // What the peer posted before it failed is visible now (release/acquire): use it first.
    if (canAnyTrackMove(tracks)) return Status::ok();
    return blameAbortedPeer(tracks, key.peer, conn->peerAbortCulprit());
  }
  std::set<int> silentPeers;
  for (const auto& t : tracks) {
    if (t.done) continue;
    const Step& step = currentStep(t);
    const LaneRun& run = currentRun(t);
    Status peer;
    int culprit = -1;
    Connection* failed = nullptr;
    if (t.waitingRecv) {
      peer = run.recvConns[t.step]->checkPeer();
      silentPeers.insert(culprit = step.recvPeer);
      failed = run.recvConns[t.step];
    }
    if (peer.isOk() && t.waitingSend) {
      peer = run.sendConns[t.step]->checkPeer();
      silentPeers.insert(culprit = step.sendPeer);
      failed = run.sendConns[t.step];
    }
    if (!peer.isOk()) {
      // A peer that finished its part and exited may have posted what this rank waits for
      // just before it went: look once more before calling it a failure.
      if (canAnyTrackMove(tracks)) return Status::ok();
      // An abort that came after the loop above looked: name the rank the peer blamed.
      if (failed->peerAborted()) return blameAbortedPeer(tracks, culprit, failed->peerAbortCulprit());
      provider_->noteCulprit(culprit);
      return provider_->explainPeerFailure(std::move(peer).withPrefix(plan_.what() + ": "));
    }
  }
  if (!expired) return Status::ok();
  return timedOut(tracks, silentPeers, stalledS);
}

// `peer` reported a failure; `culprit` is the rank it blamed (-1: none).
Status StallBlame::blameAbortedPeer(const std::vector<TrackState>& tracks, int peer, int culprit) {
  if (culprit >= 0 && (culprit & kCulpritCallMismatch) != 0) {
    // The ranks' calls disagree: this rank fails as the one that saw it did (the provider
    // names both calls).
    int seenBy = culprit & ~kCulpritCallMismatch;
    // Seen by this rank's peer in this rank's own message (a send of another size): the peer
    // is the other side of the disagreement.
    provider_->noteCallMismatch(seenBy == provider_->selfRank() ? peer : seenBy, 0, 0);
    return WEFT_ERROR(weftInvalidUsage,
                      "%s: rank %d reported that the ranks made different calls (seen by rank %d); every rank must "
                      "make the same calls in the same order with the same count, type, op and root",
                      plan_.what().c_str(), peer, seenBy);
  }
  if (culprit >= 0 && culprit == provider_->selfRank()) {
    // The peer gave up waiting for this rank (a time-out), while this rank waits in turn:
    // the cause is further along, and this rank knows for whom it waits.
    std::set<int> waitedFor;
    std::string where = describeWaits(tracks, &waitedFor);
    int next = waitedFor.empty() ? -1 : *waitedFor.begin();
    provider_->noteCulprit(next);
    Status failed = WEFT_ERROR(weftRemoteError,
                               "%s: rank %d gave up waiting for this rank, which is itself still waiting (%s)%s",
                               plan_.what().c_str(), peer, where.c_str(),
                               next >= 0 ? "; the ranks this rank waits for are the likely cause" : "");
    return provider_->explainPeerFailure(std::move(failed));
  }
  Status failed = culprit >= 0 && culprit != peer
                      ? WEFT_ERROR(weftRemoteError,
                                   "%s: rank %d reported a failure caused by rank %d; see rank %d's log for "
                                   "the cause",
                                   plan_.what().c_str(), peer, culprit, culprit)
                      : WEFT_ERROR(weftRemoteError, "%s: rank %d reported a failure; see its log for the cause",
                                   plan_.what().c_str(), peer);
  provider_->noteCulprit(culprit >= 0 ? culprit : peer);
  return provider_->explainPeerFailure(std::move(failed));
}

// The receiver at the end of sending connection `c` failed after this rank's steps were done:
// the culprit is the rank it blamed (named in the message, as for an abort seen while the steps
// ran), or itself, so that the peers this rank tells name it.
Status StallBlame::senderFailed(const std::vector<TrackState>& tracks, Connection* c, Status peer) {
  const int told = c->peerAborted() ? c->peerAbortCulprit() : -1;
  int receiver = -1;
  for (const auto& key : plan_.keys) {
    if (key.send && provider_->get(key) == c) receiver = key.peer;
  }
  if (told >= 0 && (told & kCulpritCallMismatch) != 0) {
    const int seenBy = told & ~kCulpritCallMismatch;
    provider_->noteCallMismatch(seenBy == provider_->selfRank() ? receiver : seenBy, 0, 0);
  } else if (told >= 0 && told != provider_->selfRank()) {
    return blameAbortedPeer(tracks, receiver, told);
  } else {
    provider_->noteCulprit(receiver);
  }
  return provider_->explainPeerFailure(std::move(peer).withPrefix(plan_.what() + ": "));
}

// The deadline passed with nothing moving: the silent peers (the first is the culprit) and
// what each track waits for.
Status StallBlame::timedOut(const std::vector<TrackState>& tracks, const std::set<int>& silentPeers, double stalledS) {
  if (!silentPeers.empty()) provider_->noteCulprit(*silentPeers.begin());
  std::string peers;
  for (int p : silentPeers) peers += (peers.empty() ? "" : ", ") + std::to_string(p);
  std::string where = describeWaits(tracks, nullptr);
  return WEFT_ERROR(weftTimeout,
                    "%s timed out after %.0f s without progress: peers not heard from: %s (%s). Check that those "
                    "ranks are alive and called the same collective; raise WEFT_TIMEOUT_S if they are just slow",
                    plan_.what().c_str(), stalledS, peers.c_str(), where.c_str());
}

// "lane 0 step 2 (recv) of iteration 5 waits for data from rank 3; ..." for every track that
// waits, and the ranks waited for.
std::string StallBlame::describeWaits(const std::vector<TrackState>& tracks, std::set<int>* peers) const {
  std::string where;
  for (const auto& t : tracks) {
    if (t.done || (!t.waitingRecv && !t.waitingSend)) continue;
    const Step& step = currentStep(t);
    int peer = t.waitingRecv ? step.recvPeer : step.sendPeer;
    if (peers) peers->insert(peer);
    char line[256];
    std::snprintf(line, sizeof(line), "%slane %d step %zu (%s) of iteration %lld waits %s rank %d",
                  where.empty() ? "" : "; ", currentRun(t).fifoLane, t.step, stepName(step.kind),
                  static_cast<long long>(t.iteration), t.waitingRecv ? "for data from" : "for a free slot at", peer);
    where += line;
  }
  return where;
}

// True when some track's current step has its message or its free slot now.
bool StallBlame::canAnyTrackMove(const std::vector<TrackState>& tracks) {
  for (const auto& t : tracks) {
    if (t.done) continue;
    const Step& step = currentStep(t);
    const LaneRun& run = currentRun(t);
    size_t bytes = 0;
    uint64_t stamp = 0;
    bool inReady = !stepReceives(step.kind) || run.recvConns[t.step]->tryRecv(&bytes, &stamp) != nullptr;
    bool outReady = !stepSends(step.kind) || run.sendConns[t.step]->trySendSlot() != nullptr;
    if (inReady && outReady) return true;
  }
  return false;
}

// The mismatch's sentence names both calls by sequence and fingerprint.
Status CallChecker::callMismatch(int peer, uint64_t theirs, uint64_t ours, const char* where) {
  provider_->noteCallMismatch(peer, theirs, ours);
  return WEFT_ERROR(weftInvalidUsage,
                    "%s: rank %d sent a message of its call #%u (fingerprint %08x) where this rank expects one of "
                    "call #%u (fingerprint %08x) (%s): the ranks made different calls. Every rank must make the "
                    "same calls in the same order with the same count, type, op and root",
                    plan_.what().c_str(), peer, stampSeq(theirs) & ~kP2pSeqBit, stampFingerprint(theirs),
                    stampSeq(ours) & ~kP2pSeqBit, stampFingerprint(ours), where);
}

// Whether any message waits on a receiving end of this rank's host connections.
bool CallChecker::messageWaiting() {
  receivers_.clear();
  provider_->collectiveReceivers(&receivers_);
  for (const auto& [peer, conn] : receivers_) {
    size_t bytes = 0;
    uint64_t stamp = 0;
    if (conn->tryRecv(&bytes, &stamp) != nullptr) return true;
  }
  return false;
}

// A message of this call on a receiving end of this rank: its sender made another call. Once
// this rank's steps are done, on any end; while they run (skipOwn), on the ends the plan does
// not read.
Status CallChecker::findStrayMessage(bool skipOwn) {
  if (!plan_.checks.stamps) return Status::ok();
  receivers_.clear();
  provider_->collectiveReceivers(&receivers_);
  for (const auto& [peer, conn] : receivers_) {
    if (skipOwn && readsFrom(conn)) continue;
    size_t bytes = 0;
    uint64_t stamp = 0;
    if (conn->tryRecv(&bytes, &stamp) == nullptr || stampSeq(stamp) != plan_.checks.collectiveSeq) continue;
    return callMismatch(peer, stamp, plan_.checks.stamp,
                        skipOwn ? "a message on a FIFO this rank does not read in this call"
                                : "a message this rank, done with its part, did not expect");
  }
  return Status::ok();
}

// Whether the plan reads from connection `conn`.
bool CallChecker::readsFrom(const Connection* conn) const {
  for (const auto& key : plan_.keys) {
    if (!key.send && provider_->get(key) == conn) return true;
  }
  return false;
}

// Whether the plan sends to `peer`.
bool CallChecker::sendsTo(int peer) const {
  for (const auto& key : plan_.keys) {
    if (key.send && key.peer == peer) return true;
  }
  return false;
}

// The plan stalled for a health-check interval (CallChecks::probePeers): probe each peer this
// rank waits for data from (once per call), then read the peers' probes and look for messages
// of this call where this rank does not read. Why this completes the checks of a two-rank
// rooted collective: see CallChecks::probePeers and Communicator::runCachedPlan.
Status CallChecker::probeStalled(const std::vector<TrackState>& tracks) {
  if (probed_.size() != plan_.checks.probePeers.size()) probed_.assign(plan_.checks.probePeers.size(), 0);
  for (size_t i = 0; i < plan_.checks.probePeers.size(); ++i) {
    if (probed_[i] || !waitsForDataFrom(tracks, plan_.checks.probePeers[i])) continue;
    void* slot = plan_.checks.probeSends[i]->trySendSlot();
    if (slot == nullptr) continue;  // earlier probes fill the FIFO: the peer drops them when it looks
    *static_cast<char*>(slot) = 0;
    plan_.checks.probeSends[i]->postSend(1, plan_.checks.stamp);
    probed_[i] = 1;
  }
  WEFT_TRY(readProbes());
  return findStrayMessage(true);
}

// Whether some track waits for data from `peer`.
bool CallChecker::waitsForDataFrom(const std::vector<TrackState>& tracks, int peer) {
  for (const auto& t : tracks) {
    if (!t.done && t.waitingRecv && currentStep(t).recvPeer == peer) return true;
  }
  return false;
}

// Probes of earlier calls are dropped, so are those of this call from a peer this rank sends to
// (the peer waits for what this rank sends); one of this call from a peer this rank sends
// nothing to means that both wait for each other: their calls differ. Later calls' stay.
Status CallChecker::readProbes() {
  for (size_t i = 0; i < plan_.checks.probeRecvs.size(); ++i) {
    Connection* in = plan_.checks.probeRecvs[i];
    size_t bytes = 0;
    uint64_t stamp = 0;
    while (in->tryRecv(&bytes, &stamp) != nullptr) {
      const uint32_t seq = stampSeq(stamp);
      // Collective sequences count modulo 2^31 (call_stamp.h): earlier = behind by up to 2^30.
      const bool earlier = seq != plan_.checks.collectiveSeq && ((seq - plan_.checks.collectiveSeq) & 0x40000000u) != 0;
      if (!earlier && seq != plan_.checks.collectiveSeq) break;
      if (!earlier && !sendsTo(plan_.checks.probePeers[i])) {
        return callMismatch(plan_.checks.probePeers[i], stamp, plan_.checks.stamp,
                            "it waits for data from this rank, which sends it none in this call");
      }
      in->releaseRecv();
    }
  }
  return Status::ok();
}

}  // namespace coll
}  // namespace weft
