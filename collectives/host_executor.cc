// The host executor's step engine (host_executor.h): runs a connected plan's tracks on the
// calling thread, a slice at a time (run, tryStep, acquire, applyStep), and at the end waits for
// the peers to take what it sent. What it says when nothing moves, and the call checks beyond
// the stamps of the messages it reads, are the diagnosis's (host_diagnosis.h); the engine asks it
// every health-check interval while it waits.
#include "collectives/host_executor.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "base/log.h"
#include "base/params.h"
#include "collectives/call_stamp.h"
#include "collectives/host_diagnosis.h"
#include "collectives/slot_stores.h"

namespace weft {
namespace coll {
namespace {

// How often a waiting executor checks the deadline, the abort flag and the peers.
constexpr uint64_t kHealthCheckIntervalNs = 2'000'000;
// Steps one track may run before the executor turns to the next one (fairness).
constexpr int kStepsPerTurn = 16;

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

// One run of a plan: the tracks' cursors, the references it lent and received, and its diagnosis.
class Executor {
 public:
  Executor(const ExecPlan& plan, ConnectionProvider* provider)
      : plan_(plan), provider_(provider), blame_(plan, provider), calls_(plan, provider) {}

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
    bool toldStalled = false;  // plan_.observer heard stalled() since the latest progress
    for (;;) {
      bool progressed = false;
      bool allDone = true;
      for (auto& t : tracks) {
        for (int n = 0; n < kStepsPerTurn && !t.done; ++n) {
          StepResult r;
          WEFT_TRY(plan_.tracer ? tracedStep(t, static_cast<int>(&t - tracks.data()), &r) : tryStep(t, &r));
          if (r == StepResult::kBlocked) break;
          progressed = true;
          ++t.step;
          skipEmpty(t);
        }
        allDone = allDone && t.done;
      }
      if (allDone) return plan_.checks.waitForConsumers ? waitForConsumers(tracks) : waitForReferences(tracks);
      if (progressed) {
        if (backoff.rounds() > 0) {
          stallSince = 0;  // read the clock again at the next stall
          if (toldStalled) plan_.observer->moving(), toldStalled = false;
        }
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
        if (plan_.observer) tellStalled(tracks), toldStalled = true;
        if (!plan_.checks.probePeers.empty()) WEFT_TRY(calls_.probeStalled(tracks));
        else if (plan_.checks.findStraysWhenStalled) WEFT_TRY(calls_.findStrayMessage(true));
      }
    }
  }

 private:
  // The observer's stalled(): the first waiting track's peer and step, and the bytes of the lane
  // runs every track finished (a slice-exact count would cost the fast path).
  void tellStalled(const std::vector<TrackState>& tracks) {
    int peer = -1, stepIndex = -1;
    uint64_t bytes = 0;
    for (const auto& t : tracks) {
      for (size_t r = 0; r < t.run && r < t.track->runs.size(); ++r) {
        const LaneRun& run = t.track->runs[r];
        for (const Step& s : run.lane->steps) bytes += static_cast<uint64_t>(s.count) * run.elemSize;
      }
      if (peer >= 0 || t.done || (!t.waitingRecv && !t.waitingSend)) continue;
      const Step& step = currentStep(t);
      peer = t.waitingRecv ? step.recvPeer : step.sendPeer;
      stepIndex = static_cast<int>(t.step);
    }
    plan_.observer->stalled(peer, stepIndex, bytes);
  }

  // tryStep, timed for a level-2 timeline (plan_.tracer): the step, and the wait before it
  // since the track first found it blocked.
  Status tracedStep(TrackState& t, int index, StepResult* result) {
    if (waitSince_.size() != plan_.tracks.size()) {
      waitSince_.assign(plan_.tracks.size(), 0);
      waitedRecv_.assign(plan_.tracks.size(), 0);
    }
    const Step* step = t.done ? nullptr : &currentStep(t);
    const size_t bytes = step ? static_cast<size_t>(sliceOf(*step, t.iteration, currentRun(t).sliceElems).count) *
                                    currentRun(t).elemSize
                              : 0;
    const uint64_t start = nowNs();
    Status s = tryStep(t, result);
    if (!s.isOk() || step == nullptr) return s;
    uint64_t& since = waitSince_[static_cast<size_t>(index)];
    if (*result == StepResult::kBlocked) {
      if (since == 0) since = start, waitedRecv_[static_cast<size_t>(index)] = t.waitingRecv;
      return s;
    }
    const bool receiving = waitedRecv_[static_cast<size_t>(index)] != 0;
    if (since != 0) plan_.tracer->wait(index, receiving ? step->recvPeer : step->sendPeer, receiving, since, start);
    since = 0;
    plan_.tracer->step(index, step->kind, stepReceives(step->kind) ? step->recvPeer : -1,
                       stepSends(step->kind) ? step->sendPeer : -1, bytes, start, nowNs());
    return s;
  }

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
      return calls_.callMismatch(step.recvPeer, io.inStamp, run.recvStamp, where);
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
      if (plan_.checks.yieldToIncoming && calls_.messageWaiting()) return Status::ok();
      uint64_t now = nowNs();
      if (start == 0) start = now, nextCheck = now + kHealthCheckIntervalNs;
      if (now < nextCheck) continue;
      nextCheck = now + kHealthCheckIntervalNs;
      if (!plan_.checks.yieldToIncoming) WEFT_TRY(calls_.findStrayMessage(false));
      WEFT_TRY(calls_.readProbes());
      WEFT_TRY(blame_.check(tracks, false, 0));
      for (Connection* c : plan_.senders) {
        Status peer = c->checkPeer();
        if (!peer.isOk() && !c->allSendsConsumed()) return blame_.senderFailed(tracks, c, std::move(peer));
      }
      if (static_cast<double>(now - start) / 1e9 > plan_.timeoutS) {
        return WEFT_ERROR(weftTimeout,
                          "%s timed out after %.0f s waiting for peers to take the messages this rank sent; check "
                          "that every rank called the same collective, and raise WEFT_TIMEOUT_S if they are just slow",
                          plan_.what().c_str(), plan_.timeoutS);
      }
    }
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
        if (!peer.isOk() && !c->allSendsConsumed()) return blame_.senderFailed(tracks, c, std::move(peer));
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
  StallBlame blame_;            // whom a stall or a failure blames (host_diagnosis.h)
  CallChecker calls_;           // whether a peer made another call (host_diagnosis.h)
  ReferenceMessage reference_;  // the reference the current step received
  std::vector<char> bounce_;    // referenced bytes a reduction reads
  std::set<Connection*> lent_;  // connections that carried references
  // Level-2 timelines only: per track, when its blocked step first waited (0: not waiting).
  std::vector<uint64_t> waitSince_;
  std::vector<char> waitedRecv_;  // and whether it waited for a message (else for a slot)
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
