#include "collectives/host_executor.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "base/log.h"
#include "base/params.h"
#include "collectives/call_stamp.h"
#include "collectives/slot_stores.h"

namespace weft {
namespace coll {
namespace {

// How often a waiting executor checks the deadline, the abort flag and the peers.
constexpr uint64_t kHealthCheckIntervalNs = 2'000'000;
// Steps one track may run before the executor turns to the next one (fairness).
constexpr int kStepsPerTurn = 16;

struct TrackState {
  const Track* track = nullptr;
  size_t run = 0;
  int64_t iteration = 0;
  size_t step = 0;
  bool done = false;
  // What the track waits for, for the time-out message.
  bool waitingRecv = false;
  bool waitingSend = false;
};

const LaneRun& currentRun(const TrackState& t) { return t.track->runs[t.run]; }
const Step& currentStep(const TrackState& t) { return currentRun(t).lane->steps[t.step]; }

// Moves the cursor to the next step with a non-empty slice (or marks the track done).
void skipEmpty(TrackState& t) {
  while (!t.done) {
    if (t.run >= t.track->runs.size()) {
      t.done = true;
      return;
    }
    const LaneRun& run = currentRun(t);
    if (t.iteration >= run.iterations || run.lane->steps.empty()) {
      ++t.run, t.iteration = 0, t.step = 0;
      continue;
    }
    if (t.step >= run.lane->steps.size()) {
      ++t.iteration, t.step = 0;
      continue;
    }
    if (sliceOf(currentStep(t), t.iteration, run.sliceElems).count > 0) return;
    ++t.step;
  }
}

char* regionPointer(const LaneRun& run, Buf buf, int64_t offset, int64_t first) {
  char* base = buf == Buf::kSend ? const_cast<char*>(run.sendbuff) : buf == Buf::kRecv ? run.recvbuff : run.scratch;
  return base + static_cast<size_t>(offset + first) * run.elemSize;
}

enum class StepResult { kDone, kBlocked };

// What a step holds once it may run: its slice, the incoming message (or a reference to it) and
// the outgoing slot.
struct StepIo {
  Slice slice;
  size_t bytes = 0;
  Connection* in = nullptr;
  Connection* out = nullptr;
  const void* inData = nullptr;
  size_t inBytes = 0;  // 0: inData is a ReferenceMessage
  uint64_t inStamp = 0;
  void* outSlot = nullptr;
};

// Whether a step writes the receive buffer with stores that bypass the caches: its region there
// (all its slices) is at least WEFT_STREAM_STORE_BYTES (0: never). Applies to copies and to
// reductions alike; never to the slot that forwards the output (a peer reads that next), nor in
// place (the receive buffer is this rank's input, whose lines it has just read: they are in the
// cache, and normal stores to them need no read for ownership).
bool streamsRegion(const LaneRun& run, const Step& step) {
  static const int64_t threshold = params::StreamStoreBytes();
  if (threshold <= 0 || !stepWrites(step.kind) || step.dstBuf != Buf::kRecv) return false;
  if (run.sendbuff == run.recvbuff) return false;
  return static_cast<int64_t>(static_cast<size_t>(step.count) * run.elemSize) >= threshold;
}

// A copy streams into dst when its step's region does, dst is not the outgoing slot, and
// source and output are apart.
bool streamsInto(const LaneRun& run, const Step& step, const void* dst, const void* src, const StepIo& io) {
  if (dst == io.outSlot || !streamsRegion(run, step)) return false;
  const char* d = static_cast<const char*>(dst);
  const char* s = static_cast<const char*>(src);
  return d + io.bytes <= s || s + io.bytes <= d;
}

// Moves one slice the way the step kind says (step_kind.h): the operands as the device lanes
// see them; two sources reduce into every destination, one source is copied to each.
// A premul-sum multiplies this rank's own input (scalesOwn: the step reads the send buffer).
// streamSlot: write the outgoing slot with non-temporal stores (never for a premul-sum); a
// reduction that does so keeps normal stores for its other output.
void applyStep(const LaneRun& run, const Step& step, const StepIo& io, const char* src, char* dst, bool scalesOwn,
               bool streamSlot) {
  const StepOperands o = stepOperands(step.kind, src, io.inData, dst, io.outSlot);
  const size_t n = static_cast<size_t>(io.slice.count);
  const uint32_t divisor = step.final ? run.avgDivisor : 0;
  streamSlot = streamSlot && !scalesOwn;
  if (scalesOwn) {
    run.preMul(o.dsts[0], o.nDsts > 1 ? o.dsts[1] : nullptr, o.srcs[0], o.nSrcs > 1 ? o.srcs[1] : nullptr, n,
               run.scalar);
  } else if (stepReduces(step.kind)) {
    if (streamSlot) {
      reduceStreamingSlot(run.reduce, o.nDsts > 1 ? o.dsts[0] : nullptr, io.outSlot, o.srcs[0], o.srcs[1], n, io.bytes,
                          divisor);
    } else if (streamsRegion(run, step)) {
      void* kept = o.nDsts > 1 ? o.dsts[1] : nullptr;
      if (run.reduceStream != nullptr) {
        run.reduceStream(o.dsts[0], kept, o.srcs[0], o.srcs[1], n, divisor);
      } else {
        reduceStreaming(run.reduce, o.dsts[0], kept, o.srcs[0], o.srcs[1], n, run.elemSize, divisor);
      }
    } else if (o.nDsts > 1) {
      run.reduceCopy(o.dsts[0], o.dsts[1], o.srcs[0], o.srcs[1], n, divisor);
    } else {
      run.reduce(o.dsts[0], o.srcs[0], o.srcs[1], n, divisor);
    }
  } else {
    // A copy onto itself (the same memory) moves nothing; a local copy may overlap. Each
    // destination is one copy.
    for (int d = 0; d < o.nDsts; ++d) {
      if (isNoOpCopy(StepKind::kCopy, o.dsts[d] == o.srcs[0], scalesOwn)) continue;
      if ((streamSlot && o.dsts[d] == io.outSlot) || streamsInto(run, step, o.dsts[d], o.srcs[0], io)) {
        copyStreaming(o.dsts[d], o.srcs[0], io.bytes);
      } else {
        std::memmove(o.dsts[d], o.srcs[0], io.bytes);
      }
    }
  }
}

// Finds who is to blame when nothing moves: a failed peer, a silent one, or (after the
// deadline) the peers this rank waits for. Called every few milliseconds while the executor
// waits; the sentences name the operation, the step and the peer.
class StallBlame {
 public:
  StallBlame(const ExecPlan& plan, ConnectionProvider* provider) : plan_(plan), provider_(provider) {}

  Status check(const std::vector<TrackState>& tracks, bool expired, double stalledS) {
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
  Status blameAbortedPeer(const std::vector<TrackState>& tracks, int peer, int culprit) {
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

 private:
  Status timedOut(const std::vector<TrackState>& tracks, const std::set<int>& silentPeers, double stalledS) {
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
  std::string describeWaits(const std::vector<TrackState>& tracks, std::set<int>* peers) const {
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
  static bool canAnyTrackMove(const std::vector<TrackState>& tracks) {
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

  const ExecPlan& plan_;
  ConnectionProvider* provider_;
};

class Executor {
 public:
  Executor(const ExecPlan& plan, ConnectionProvider* provider)
      : plan_(plan), provider_(provider), blame_(plan, provider) {}

  Status run() {
    // Reused across calls on this thread: no allocation on the path of a small collective.
    static thread_local std::vector<TrackState> tracks;
    tracks.assign(plan_.tracks.size(), TrackState());
    if (plan_.checks.waitForConsumers && plan_.checks.stamp != 0) {
      for (Connection* c : plan_.receivers) c->announceCall(plan_.checks.stamp);
    }
    for (size_t i = 0; i < tracks.size(); ++i) {
      tracks[i].track = &plan_.tracks[i];
      skipEmpty(tracks[i]);
    }
    Backoff backoff;
    // The clock is read only once a stall lasts a while; the first check comes one interval
    // into a stall: most waits end long before.
    uint64_t stallSince = 0;
    uint64_t nextCheck = 0;
    for (;;) {
      bool progressed = false;
      bool allDone = true;
      for (auto& t : tracks) {
        for (int n = 0; n < kStepsPerTurn && !t.done; ++n) {
          StepResult r;
          WEFT_TRY(tryStep(t, &r));
          if (r == StepResult::kBlocked) break;
          progressed = true;
          ++t.step;
          skipEmpty(t);
        }
        allDone = allDone && t.done;
      }
      if (allDone) return plan_.checks.waitForConsumers ? waitForConsumers(tracks) : waitForReferences(tracks);
      if (progressed) {
        if (backoff.rounds() > 0) stallSince = 0;  // read the clock again at the next stall
        backoff.reset();
        continue;
      }
      backoff.pause();
      // The clock every 16th pause only, the first after 16: a small call waits for its peer's
      // message a few pauses, and a clock read (tens of ns in a VM) at the first one cost every
      // call.
      if ((backoff.rounds() & 15) != 0) continue;
      uint64_t now = nowNs();
      if (stallSince == 0) stallSince = now, nextCheck = now + kHealthCheckIntervalNs;
      if (now >= nextCheck) {
        nextCheck = now + kHealthCheckIntervalNs;
        bool expired = static_cast<double>(now - stallSince) / 1e9 > plan_.timeoutS;
        WEFT_TRY(blame_.check(tracks, expired, static_cast<double>(now - stallSince) / 1e9));
        if (!plan_.checks.probePeers.empty()) WEFT_TRY(probeStalled(tracks));
        else if (plan_.checks.findStraysWhenStalled) WEFT_TRY(findStrayMessage(true));
      }
    }
  }

 private:
  // One step of one slice: acquire its message and slot, resolve a reference to the peer's
  // memory, apply the step, then post and release. Blocked (nothing changed) when the message
  // or the slot is not there yet.
  Status tryStep(TrackState& t, StepResult* result) {
    *result = StepResult::kBlocked;
    StepIo io;
    bool ready = false;
    WEFT_TRY(acquire(t, &io, &ready));
    if (!ready) return Status::ok();
    const LaneRun& run = currentRun(t);
    const Step& step = currentStep(t);
    const char* src = stepReads(step.kind) ? regionPointer(run, step.srcBuf, step.srcOffset, io.slice.first) : nullptr;
    char* dst = stepWrites(step.kind) ? regionPointer(run, step.dstBuf, step.dstOffset, io.slice.first) : nullptr;
    // A premul-sum multiplies this rank's own input where it enters the data flow: whatever
    // step reads the send buffer (so never sends it by reference).
    const bool scalesOwn = run.preMul != nullptr && src != nullptr && step.srcBuf == Buf::kSend;
    bool finished = false;
    WEFT_TRY(resolveReference(step, &io, dst, &finished));
    if (finished) {
      // A plain receive read the bytes straight into its destination (the single copy).
    } else if (!scalesOwn && lendsSource(t, io)) {
      lend(io, src, run.sendStamp);
    } else {
      // Large steps that fill a slot are timed for the choice of stores (slot_stores.h).
      // (The chooser is a thread-local: not looked up for the small steps, which never ask it.)
      const bool fillsSlot = io.out != nullptr && io.bytes >= SlotStoreChooser::kMinBytes;
      SlotStoreChooser* stores = fillsSlot ? &threadSlotStores() : nullptr;
      const bool stream = fillsSlot && stores->streamNext(io.bytes);
      const bool timed = fillsSlot && stores->measures();
      const uint64_t start = timed ? nowNs() : 0;
      applyStep(run, step, io, src, dst, scalesOwn, stream);
      if (timed) stores->record(stream, io.bytes, nowNs() - start);
      if (io.out) io.out->postSend(io.bytes, run.sendStamp);
    }
    if (io.in) io.in->releaseRecv();
    *result = StepResult::kDone;
    return Status::ok();
  }

  // The incoming message (of the size the schedule expects, or a reference to that many bytes)
  // and a free outgoing slot, as far as the step's kind needs them; *ready false while either
  // is missing.
  Status acquire(TrackState& t, StepIo* io, bool* ready) {
    const LaneRun& run = currentRun(t);
    const Step& step = currentStep(t);
    io->slice = sliceOf(step, t.iteration, run.sliceElems);
    io->bytes = static_cast<size_t>(io->slice.count) * run.elemSize;
    t.waitingRecv = t.waitingSend = false;
    if (stepReceives(step.kind)) {
      io->in = run.recvConns[t.step];
      io->inData = io->in->tryRecv(&io->inBytes, &io->inStamp);
      if (io->inData == nullptr) {
        t.waitingRecv = true;
        return Status::ok();
      }
      WEFT_TRY(checkMessage(t, *io));
    }
    if (stepSends(step.kind)) {
      io->out = run.sendConns[t.step];
      io->outSlot = io->out->trySendSlot();
      if (io->outSlot == nullptr) {
        t.waitingSend = true;
        return Status::ok();
      }
    }
    *ready = true;
    return Status::ok();
  }

  // A message of another call, or of another size than the schedule's, means the ranks called
  // different things. The message stays unreleased: its sender must not take it as consumed.
  Status checkMessage(const TrackState& t, const StepIo& io) {
    const LaneRun& run = currentRun(t);
    const Step& step = currentStep(t);
    if (plan_.checks.stamps && io.inStamp != run.recvStamp) {
      char where[96];
      std::snprintf(where, sizeof(where), "lane %d, step %zu %s, iteration %lld", run.fifoLane, t.step,
                    stepName(step.kind), static_cast<long long>(t.iteration));
      return callMismatch(step.recvPeer, io.inStamp, run.recvStamp, where);
    }
    if (io.inBytes == 0) {
      // A reference: the bytes are still in the sender's memory; read them when the step runs
      // (resolveReference), once its outgoing slot is free too.
      std::memcpy(&reference_, io.inData, sizeof(reference_));
      if (reference_.magic != kReferenceMagic || reference_.bytes != io.bytes) {
        return WEFT_ERROR(weftInvalidUsage,
                          "%s: rank %d sent a reference to %llu bytes where the schedule expects %zu (lane %d, "
                          "step %zu); every rank must call the same collectives with the same count and datatype",
                          plan_.what().c_str(), step.recvPeer, static_cast<unsigned long long>(reference_.bytes),
                          io.bytes, run.fifoLane, t.step);
      }
    } else if (io.inBytes != io.bytes) {
      return WEFT_ERROR(weftInvalidUsage,
                        "%s: received %zu bytes from rank %d where the schedule expects %zu (lane %d, step %zu "
                        "%s, iteration %lld); every rank must call the same collectives in the same order with "
                        "the same count and datatype",
                        plan_.what().c_str(), io.inBytes, step.recvPeer, io.bytes, run.fifoLane, t.step,
                        stepName(step.kind), static_cast<long long>(t.iteration));
    }
    return Status::ok();
  }

  // A reference received: a plain receive reads straight into its destination (*finished);
  // anything else reads into a bounce buffer and carries on as with a slot.
  Status resolveReference(const Step& step, StepIo* io, char* dst, bool* finished) {
    if (io->in == nullptr || io->inBytes != 0) return Status::ok();
    if (step.kind == StepKind::kRecv) {
      WEFT_TRY(provider_->readPeerMemory(step.recvPeer, reference_.address, dst, io->bytes));
      *finished = true;
      return Status::ok();
    }
    if (bounce_.size() < io->bytes) bounce_.resize(io->bytes);
    WEFT_TRY(provider_->readPeerMemory(step.recvPeer, reference_.address, bounce_.data(), io->bytes));
    io->inData = bounce_.data();
    return Status::ok();
  }

  // Whether this send passes a reference to its source instead of the bytes (single copy).
  bool lendsSource(const TrackState& t, const StepIo& io) const {
    if (currentStep(t).kind != StepKind::kSend) return false;
    char byReference = currentRun(t).sendByReference[t.step];
    return plan_.sendBufferStable && io.bytes >= plan_.referenceMinBytes &&
           (byReference == LaneRun::kTransportReads ||
            (byReference == LaneRun::kPeerReads && plan_.peersReadReferences));
  }

  void lend(const StepIo& io, const char* src, uint64_t stamp) {
    ReferenceMessage ref;
    ref.magic = kReferenceMagic;
    ref.address = reinterpret_cast<uint64_t>(src);
    ref.bytes = io.bytes;
    std::memcpy(io.outSlot, &ref, sizeof(ref));
    io.out->postSend(0, stamp);
    lent_.insert(io.out);
  }

  Status callMismatch(int peer, uint64_t theirs, uint64_t ours, const char* where) {
    provider_->noteCallMismatch(peer, theirs, ours);
    return WEFT_ERROR(weftInvalidUsage,
                      "%s: rank %d sent a message of its call #%u (fingerprint %08x) where this rank expects one of "
                      "call #%u (fingerprint %08x) (%s): the ranks made different calls. Every rank must make the "
                      "same calls in the same order with the same count, type, op and root",
                      plan_.what().c_str(), peer, stampSeq(theirs) & ~kP2pSeqBit, stampFingerprint(theirs),
                      stampSeq(ours) & ~kP2pSeqBit, stampFingerprint(ours), where);
  }

  // A collective's part is done here, but it returns only once the peers took every message it
  // sent, or announced this very call (then they will take them: the same call reads the same
  // FIFOs; not where this rank lent memory, which must be read before it returns): a peer that
  // made another call refuses one and aborts, and this rank fails with it instead of returning
  // success. Meanwhile a message of this very call arriving means that its
  // sender made another call (both ranks think they are the root of a broadcast, say).
  Status waitForConsumers(const std::vector<TrackState>& tracks) {
    Backoff backoff;
    uint64_t start = 0, nextCheck = 0;
    for (;;) {
      bool pending = false;
      for (Connection* c : plan_.senders) {
        if (!c->allSendsConsumed() && !(plan_.checks.stamp != 0 && c->peerAnnounced(plan_.checks.stamp) && lent_.count(c) == 0)) {
          pending = true;
          break;
        }
      }
      if (!pending) return Status::ok();
      backoff.pause();
      if ((backoff.rounds() & 15) != 1) continue;
      if (plan_.checks.yieldToIncoming && messageWaiting()) return Status::ok();
      uint64_t now = nowNs();
      if (start == 0) start = now, nextCheck = now + kHealthCheckIntervalNs;
      if (now < nextCheck) continue;
      nextCheck = now + kHealthCheckIntervalNs;
      if (!plan_.checks.yieldToIncoming) WEFT_TRY(findStrayMessage(false));
      WEFT_TRY(readProbes());
      WEFT_TRY(blame_.check(tracks, false, 0));
      for (Connection* c : plan_.senders) {
        Status peer = c->checkPeer();
        if (!peer.isOk() && !c->allSendsConsumed()) return senderFailed(tracks, c, std::move(peer));
      }
      if (static_cast<double>(now - start) / 1e9 > plan_.timeoutS) {
        return WEFT_ERROR(weftTimeout,
                          "%s timed out after %.0f s waiting for peers to take the messages this rank sent; check "
                          "that every rank called the same collective, and raise WEFT_TIMEOUT_S if they are just slow",
                          plan_.what().c_str(), plan_.timeoutS);
      }
    }
  }

  // Whether any message waits on a receiving end of this rank's host connections.
  bool messageWaiting() {
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
  Status findStrayMessage(bool skipOwn) {
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

  bool readsFrom(const Connection* conn) const {
    for (const auto& key : plan_.keys) {
      if (!key.send && provider_->get(key) == conn) return true;
    }
    return false;
  }

  bool sendsTo(int peer) const {
    for (const auto& key : plan_.keys) {
      if (key.send && key.peer == peer) return true;
    }
    return false;
  }

  // The plan stalled for a health-check interval (CallChecks::probePeers): probe each peer this
  // rank waits for data from (once per call), then read the peers' probes and look for messages
  // of this call where this rank does not read. Why this completes the checks of a two-rank
  // rooted collective: see CallChecks::probePeers and Communicator::runCachedPlan.
  Status probeStalled(const std::vector<TrackState>& tracks) {
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

  static bool waitsForDataFrom(const std::vector<TrackState>& tracks, int peer) {
    for (const auto& t : tracks) {
      if (!t.done && t.waitingRecv && currentStep(t).recvPeer == peer) return true;
    }
    return false;
  }

  // Probes of earlier calls are dropped, so are those of this call from a peer this rank sends to
  // (the peer waits for what this rank sends); one of this call from a peer this rank sends
  // nothing to means that both wait for each other: their calls differ. Later calls' stay.
  Status readProbes() {
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

  // The receiver at the end of sending connection `c` failed after this rank's steps were done:
  // the culprit is the rank it blamed (named in the message, as for an abort seen while the steps
  // ran), or itself, so that the peers this rank tells name it.
  Status senderFailed(const std::vector<TrackState>& tracks, Connection* c, Status peer) {
    const int told = c->peerAborted() ? c->peerAbortCulprit() : -1;
    int receiver = -1;
    for (const auto& key : plan_.keys) {
      if (key.send && provider_->get(key) == c) receiver = key.peer;
    }
    if (told >= 0 && (told & kCulpritCallMismatch) != 0) {
      const int seenBy = told & ~kCulpritCallMismatch;
      provider_->noteCallMismatch(seenBy == provider_->selfRank() ? receiver : seenBy, 0, 0);
    } else if (told >= 0 && told != provider_->selfRank()) {
      return blame_.blameAbortedPeer(tracks, receiver, told);
    } else {
      provider_->noteCulprit(receiver);
    }
    return provider_->explainPeerFailure(std::move(peer).withPrefix(plan_.what() + ": "));
  }

  // Memory this rank lent by reference must stay as it is until the peers have read it: the
  // caller may change its buffers once the call returns. Meanwhile a peer of this operation that
  // reports a failure ends the wait as it ends a stalled step (StallBlame::check): the reader of
  // the lent memory may be the very rank that died, and a transport may not see that itself.
  Status waitForReferences(const std::vector<TrackState>& tracks) {
    if (lent_.empty()) return Status::ok();
    Backoff backoff;
    uint64_t start = nowNs(), nextCheck = start + kHealthCheckIntervalNs;
    for (;;) {
      bool pending = false;
      for (Connection* c : lent_) pending = pending || !c->allSendsConsumed();
      if (!pending) return Status::ok();
      backoff.pause();
      if ((backoff.rounds() & 15) != 1) continue;
      uint64_t now = nowNs();
      if (now < nextCheck) continue;
      nextCheck = now + kHealthCheckIntervalNs;
      WEFT_TRY(blame_.check(tracks, false, 0));
      for (Connection* c : lent_) {
        Status peer = c->checkPeer();
        if (!peer.isOk() && !c->allSendsConsumed()) return senderFailed(tracks, c, std::move(peer));
      }
      if (static_cast<double>(now - start) / 1e9 > plan_.timeoutS) {
        return WEFT_ERROR(weftTimeout,
                          "%s timed out after %.0f s waiting for peers to read the data this rank lent them "
                          "(single-copy); raise WEFT_TIMEOUT_S if they are just slow",
                          plan_.what().c_str(), plan_.timeoutS);
      }
    }
  }

  const ExecPlan& plan_;
  ConnectionProvider* provider_;
  StallBlame blame_;
  ReferenceMessage reference_;       // the reference the current step received
  std::vector<char> bounce_;         // referenced bytes a reduction reads
  std::set<Connection*> lent_;       // connections that carried references
  std::vector<std::pair<int, Connection*>> receivers_;  // findStrayMessage's
  std::vector<char> probed_;         // per probe peer: probed in this call
};

}  // namespace

Status runHostPlan(const ExecPlan& plan, ConnectionProvider* provider) {
  if (!plan.connected) {
    return WEFT_ERROR(weftInternalError, "%s: the plan was run before connectPlan()", plan.what().c_str());
  }
  Executor executor(plan, provider);
  return executor.run();
}

}  // namespace coll
}  // namespace weft
