#include "collectives/host_executor.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "base/log.h"

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

// The FIFO lane a step sends on: its own lane's, unless the step names another lane of the
// same collective (schedule.h: the tree root feeding its broadcast-down lane).
int sendFifoLane(const LaneRun& run, const Step& step) { return step.sendLane >= 0 ? step.sendLane : run.fifoLane; }

char* regionPointer(const LaneRun& run, Buf buf, int64_t offset, int64_t first) {
  char* base = buf == Buf::kSend ? const_cast<char*>(run.sendbuff) : buf == Buf::kRecv ? run.recvbuff : run.scratch;
  return base + static_cast<size_t>(offset + first) * run.elemSize;
}

enum class StepResult { kDone, kBlocked };

class Executor {
 public:
  Executor(const ExecPlan& plan, ConnectionProvider* provider) : plan_(plan), provider_(provider) {}

  Status run() {
    // Reused across calls on this thread: no allocation on the path of a small collective.
    static thread_local std::vector<TrackState> tracks;
    tracks.assign(plan_.tracks.size(), TrackState());
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
      if (allDone) return waitForReferences();
      if (progressed) {
        if (backoff.rounds() > 0) stallSince = 0;  // read the clock again at the next stall
        backoff.reset();
        continue;
      }
      backoff.pause();
      if ((backoff.rounds() & 15) != 1) continue;  // read the clock every 16th pause only
      uint64_t now = nowNs();
      if (stallSince == 0) stallSince = now, nextCheck = now + kHealthCheckIntervalNs;
      if (now >= nextCheck) {
        nextCheck = now + kHealthCheckIntervalNs;
        bool expired = static_cast<double>(now - stallSince) / 1e9 > plan_.timeoutS;
        WEFT_TRY(checkWhileWaiting(tracks, expired, static_cast<double>(now - stallSince) / 1e9));
      }
    }
  }

 private:
  Status tryStep(TrackState& t, StepResult* result) {
    const LaneRun& run = currentRun(t);
    const Step& step = currentStep(t);
    Slice slice = sliceOf(step, t.iteration, run.sliceElems);
    size_t bytes = static_cast<size_t>(slice.count) * run.elemSize;
    *result = StepResult::kBlocked;

    Connection* in = nullptr;
    Connection* out = nullptr;
    const void* inData = nullptr;
    size_t inBytes = 0;
    void* outSlot = nullptr;
    t.waitingRecv = t.waitingSend = false;
    if (stepReceives(step.kind)) {
      in = run.recvConns[t.step];
      inData = in->tryRecv(&inBytes);
      if (inData == nullptr) {
        t.waitingRecv = true;
        return Status::ok();
      }
      if (inBytes == 0) {
        // A reference: the bytes are still in the sender's memory; read them when the step
        // runs (below), once its outgoing slot is free too.
        std::memcpy(&reference_, inData, sizeof(reference_));
        if (reference_.magic != kReferenceMagic || reference_.bytes != bytes) {
          return WEFT_ERROR(weftInvalidUsage,
                            "%s: rank %d sent a reference to %llu bytes where the schedule expects %zu (lane %d, "
                            "step %zu); every rank must call the same collectives with the same count and datatype",
                            plan_.what().c_str(), step.recvPeer, static_cast<unsigned long long>(reference_.bytes),
                            bytes, run.fifoLane, t.step);
        }
      } else if (inBytes != bytes) {
        return WEFT_ERROR(weftInvalidUsage,
                          "%s: received %zu bytes from rank %d where the schedule expects %zu (lane %d, step %zu "
                          "%s, iteration %lld); every rank must call the same collectives in the same order with "
                          "the same count and datatype",
                          plan_.what().c_str(), inBytes, step.recvPeer, bytes, run.fifoLane, t.step,
                          stepName(step.kind), static_cast<long long>(t.iteration));
      }
    }
    if (stepSends(step.kind)) {
      out = run.sendConns[t.step];
      outSlot = out->trySendSlot();
      if (outSlot == nullptr) {
        t.waitingSend = true;
        return Status::ok();
      }
    }

    const char* src = stepReads(step.kind) ? regionPointer(run, step.srcBuf, step.srcOffset, slice.first) : nullptr;
    char* dst = stepWrites(step.kind) ? regionPointer(run, step.dstBuf, step.dstOffset, slice.first) : nullptr;
    uint32_t divisor = step.final ? run.avgDivisor : 0;
    size_t n = static_cast<size_t>(slice.count);
    // A premul-sum multiplies this rank's own input where it enters the data flow: whatever
    // step reads the send buffer (so never sends it by reference).
    const bool scalesOwn = run.preMul != nullptr && src != nullptr && step.srcBuf == Buf::kSend;
    char byReference = run.sendByReference[t.step];
    bool sendReference =
        !scalesOwn && plan_.sendBufferStable && bytes >= plan_.referenceMinBytes &&
        (byReference == LaneRun::kTransportReads || (byReference == LaneRun::kPeerReads && plan_.peersReadReferences));
    if (in && inBytes == 0) {
      // A reference: a plain receive reads straight into its destination (the single copy);
      // anything else reads into a bounce buffer and carries on as with a slot.
      if (step.kind == StepKind::kRecv) {
        WEFT_TRY(provider_->readPeerMemory(step.recvPeer, reference_.address, dst, bytes));
        in->releaseRecv();
        *result = StepResult::kDone;
        return Status::ok();
      }
      if (bounce_.size() < bytes) bounce_.resize(bytes);
      WEFT_TRY(provider_->readPeerMemory(step.recvPeer, reference_.address, bounce_.data(), bytes));
      inData = bounce_.data();
    }
    if (scalesOwn) {
      applyPreMul(run, step.kind, dst, outSlot, src, inData, n);
      if (out) out->postSend(bytes);
      if (in) in->releaseRecv();
      *result = StepResult::kDone;
      return Status::ok();
    }
    switch (step.kind) {
      case StepKind::kSend:
        if (sendReference) {
          ReferenceMessage ref;
          ref.magic = kReferenceMagic;
          ref.address = reinterpret_cast<uint64_t>(src);
          ref.bytes = bytes;
          std::memcpy(outSlot, &ref, sizeof(ref));
          out->postSend(0);
          lent_.insert(out);
          *result = StepResult::kDone;
          return Status::ok();
        }
        std::memcpy(outSlot, src, bytes);
        break;
      case StepKind::kRecv:
        std::memcpy(dst, inData, bytes);
        break;
      case StepKind::kRecvReduceSend:
        run.reduce(outSlot, src, inData, n, divisor);
        break;
      case StepKind::kRecvReduceCopy:
        run.reduce(dst, src, inData, n, divisor);
        break;
      case StepKind::kRecvReduceCopySend:
        run.reduceCopy(dst, outSlot, src, inData, n, divisor);
        break;
      case StepKind::kRecvCopySend:
        std::memcpy(dst, inData, bytes);
        std::memcpy(outSlot, inData, bytes);
        break;
      case StepKind::kCopy:
        if (dst != src) std::memmove(dst, src, bytes);
        break;
    }
    if (out) out->postSend(bytes);
    if (in) in->releaseRecv();
    *result = StepResult::kDone;
    return Status::ok();
  }

  // A step that reads the send buffer, for a premul-sum: its results are the products (with the
  // incoming data added, for the reducing kinds), stored where the step stores.
  static void applyPreMul(const LaneRun& run, StepKind kind, char* dst, void* outSlot, const char* src,
                          const void* inData, size_t n) {
    switch (kind) {
      case StepKind::kSend:
        run.preMul(outSlot, nullptr, src, nullptr, n, run.scalar);
        return;
      case StepKind::kRecvReduceSend:
        run.preMul(outSlot, nullptr, src, inData, n, run.scalar);
        return;
      case StepKind::kRecvReduceCopy:
        run.preMul(dst, nullptr, src, inData, n, run.scalar);
        return;
      case StepKind::kRecvReduceCopySend:
        run.preMul(dst, outSlot, src, inData, n, run.scalar);
        return;
      case StepKind::kCopy:  // in place too: the input becomes its product
        run.preMul(dst, nullptr, src, nullptr, n, run.scalar);
        return;
      case StepKind::kRecv:
      case StepKind::kRecvCopySend:
        return;  // they read no source
    }
  }

  // Called every few milliseconds while nothing moves.
  Status checkWhileWaiting(std::vector<TrackState>& tracks, bool expired, double stalledS) {
    WEFT_TRY(provider_->healthCheck());
    // Any peer of this operation that failed ends it, even one this rank is not waiting for:
    // the data this rank waits for may never come because of it.
    for (const auto& key : plan_.keys) {
      Connection* conn = provider_->get(key);
      if (conn->peerAborted()) {
        // What the peer posted before it failed is visible now (release/acquire): use it first.
        if (canAnyTrackMove(tracks)) return Status::ok();
        int culprit = conn->peerAbortCulprit();
        if (culprit >= 0 && culprit == provider_->selfRank()) {
          // The peer gave up waiting for this rank (a time-out), while this rank waits in turn:
          // the cause is further along, and this rank knows for whom it waits.
          std::set<int> waitedFor;
          std::string where = describeWaits(tracks, &waitedFor);
          int next = waitedFor.empty() ? -1 : *waitedFor.begin();
          provider_->noteCulprit(next);
          Status failed = WEFT_ERROR(weftRemoteError,
                                     "%s: rank %d gave up waiting for this rank, which is itself still waiting (%s)%s",
                                     plan_.what().c_str(), key.peer, where.c_str(),
                                     next >= 0 ? "; the ranks this rank waits for are the likely cause" : "");
          return provider_->explainPeerFailure(std::move(failed));
        }
        Status failed = culprit >= 0 && culprit != key.peer
                            ? WEFT_ERROR(weftRemoteError,
                                         "%s: rank %d reported a failure caused by rank %d; see rank %d's log for "
                                         "the cause",
                                         plan_.what().c_str(), key.peer, culprit, culprit)
                            : WEFT_ERROR(weftRemoteError, "%s: rank %d reported a failure; see its log for the cause",
                                         plan_.what().c_str(), key.peer);
        provider_->noteCulprit(culprit >= 0 ? culprit : key.peer);
        return provider_->explainPeerFailure(std::move(failed));
      }
    }
    std::set<int> silentPeers;
    for (const auto& t : tracks) {
      if (t.done) continue;
      const Step& step = currentStep(t);
      const LaneRun& run = currentRun(t);
      Status peer;
      int culprit = -1;
      if (t.waitingRecv) {
        peer = run.recvConns[t.step]->checkPeer();
        silentPeers.insert(culprit = step.recvPeer);
      }
      if (peer.isOk() && t.waitingSend) {
        peer = run.sendConns[t.step]->checkPeer();
        silentPeers.insert(culprit = step.sendPeer);
      }
      if (!peer.isOk()) {
        // A peer that finished its part and exited may have posted what this rank waits for
        // just before it went: look once more before calling it a failure.
        if (canAnyTrackMove(tracks)) return Status::ok();
        provider_->noteCulprit(culprit);
        return provider_->explainPeerFailure(std::move(peer).withPrefix(plan_.what() + ": "));
      }
    }
    if (!expired) return Status::ok();
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

  // Memory this rank lent by reference must stay as it is until the peers have read it: the
  // caller may change its buffers once the call returns.
  Status waitForReferences() {
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
      WEFT_TRY(provider_->healthCheck());
      for (Connection* c : lent_) {
        Status peer = c->checkPeer();
        if (!peer.isOk() && !c->allSendsConsumed()) {
          return provider_->explainPeerFailure(std::move(peer).withPrefix(plan_.what() + ": "));
        }
      }
      if (static_cast<double>(now - start) / 1e9 > plan_.timeoutS) {
        return WEFT_ERROR(weftTimeout,
                          "%s timed out after %.0f s waiting for peers to read the data this rank lent them "
                          "(single-copy); raise WEFT_TIMEOUT_S if they are just slow",
                          plan_.what().c_str(), plan_.timeoutS);
      }
    }
  }

  // True when some track's current step has its message or its free slot now.
  bool canAnyTrackMove(const std::vector<TrackState>& tracks) {
    for (const auto& t : tracks) {
      if (t.done) continue;
      const Step& step = currentStep(t);
      const LaneRun& run = currentRun(t);
      size_t bytes = 0;
      bool inReady = !stepReceives(step.kind) || run.recvConns[t.step]->tryRecv(&bytes) != nullptr;
      bool outReady = !stepSends(step.kind) || run.sendConns[t.step]->trySendSlot() != nullptr;
      if (inReady && outReady) return true;
    }
    return false;
  }

  const ExecPlan& plan_;
  ConnectionProvider* provider_;
  ReferenceMessage reference_;       // the reference tryStep is working on
  std::vector<char> bounce_;         // referenced bytes a reduction reads
  std::set<Connection*> lent_;       // connections that carried references
};

}  // namespace

std::vector<ConnectionKey> connectionsOf(const ExecPlan& plan) {
  std::set<ConnectionKey> keys;
  for (const auto& track : plan.tracks) {
    for (const auto& run : track.runs) {
      if (run.iterations == 0) continue;
      for (const auto& step : run.lane->steps) {
        if (step.count == 0) continue;
        if (stepReceives(step.kind)) keys.insert({step.recvPeer, false, run.fifoLane});
        if (stepSends(step.kind)) keys.insert({step.sendPeer, true, sendFifoLane(run, step)});
      }
    }
  }
  return std::vector<ConnectionKey>(keys.begin(), keys.end());
}

Status connectPlan(ExecPlan* plan, ConnectionProvider* provider) {
  plan->keys = connectionsOf(*plan);
  Status connected = provider->connect(plan->keys, Deadline::afterSeconds(plan->timeoutS));
  if (!connected.isOk()) return std::move(connected).withPrefix(plan->what() + ": ");
  for (auto& track : plan->tracks) {
    for (auto& run : track.runs) {
      size_t n = run.lane->steps.size();
      run.recvConns.assign(n, nullptr);
      run.sendConns.assign(n, nullptr);
      run.sendByReference.assign(n, 0);
      for (size_t i = 0; i < n; ++i) {
        const Step& step = run.lane->steps[i];
        if (step.count == 0 || run.iterations == 0) continue;
        if (stepReceives(step.kind)) run.recvConns[i] = provider->get({step.recvPeer, false, run.fifoLane});
        if (stepSends(step.kind)) run.sendConns[i] = provider->get({step.sendPeer, true, sendFifoLane(run, step)});
        if (step.kind == StepKind::kSend && step.srcBuf == Buf::kSend) {
          run.sendByReference[i] = run.sendConns[i]->sendsReferencedBytes()        ? LaneRun::kTransportReads
                                   : provider->peerReadsMyMemory(step.sendPeer) ? LaneRun::kPeerReads
                                                                                : 0;
        }
      }
    }
  }
  plan->connected = true;
  return Status::ok();
}

Status runHostPlan(const ExecPlan& plan, ConnectionProvider* provider) {
  if (!plan.connected) {
    return WEFT_ERROR(weftInternalError, "%s: the plan was run before connectPlan()", plan.what().c_str());
  }
  Executor executor(plan, provider);
  return executor.run();
}

ExecPlan planCollective(const RankSchedule& schedule, size_t elemSize, size_t slotBytes) {
  ExecPlan plan;
  int64_t sliceElems = std::max<int64_t>(1, static_cast<int64_t>(slotBytes / elemSize));
  int64_t iterations = iterationsFor(schedule.maxStepCount, sliceElems);
  for (size_t l = 0; l < schedule.lanes.size(); ++l) {
    LaneRun run;
    run.lane = &schedule.lanes[l];
    run.fifoLane = static_cast<int>(l);
    run.elemSize = elemSize;
    run.sliceElems = sliceElems;
    run.iterations = iterations;
    plan.tracks.push_back(Track{{run}});
  }
  return plan;
}

void bindBuffers(ExecPlan* plan, const void* sendbuff, void* recvbuff, void* scratch, ReduceFn reduce,
                 ReduceCopyFn reduceCopy, uint32_t avgDivisor, PreMulFn preMul, const void* scalar) {
  for (auto& track : plan->tracks) {
    for (auto& run : track.runs) {
      run.sendbuff = static_cast<const char*>(sendbuff);
      run.recvbuff = static_cast<char*>(recvbuff);
      run.scratch = static_cast<char*>(scratch);
      run.reduce = reduce;
      run.reduceCopy = reduceCopy;
      run.avgDivisor = avgDivisor;
      run.preMul = preMul;
      run.scalar = scalar;
    }
  }
}

}  // namespace coll
}  // namespace weft
