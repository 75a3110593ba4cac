// The host call path of the communicator (comm.h): a collective or a send/recv group on host
// buffers, from the call the C API validated to the host executor (collectives/host_executor.h)
// over the communicator's connections (connections.h). Its steps: the tuner's parameters
// (paramsFor), the reduce functions (hostReducer), the cached schedule and plan of the call's
// shape (cachedOp), the call bound to that plan (bindCall), then connect and run (runCachedPlan,
// comm_call_tokens.cc). Zero-copy (comm_zero_copy.cc) and gather/scatter (comm_rooted.cc) branch
// off from runCollective.
#include <algorithm>
#include <cstring>
#include <list>

#include "base/log.h"
#include "collectives/datatypes.h"
#include "collectives/reduce.h"
#include "core/comm.h"
#include "topology/tuner.h"

namespace weft {
namespace core {
namespace {

// Point-to-point traffic uses FIFO lane 0 between a pair; collectives use lanes 0..k. They
// share FIFOs safely because every rank runs its operations in the same order and each FIFO
// delivers in order.
constexpr int kP2pLane = 0;
// Schedules kept per communicator (they are rebuilt cheaply when evicted).
constexpr size_t kMaxCachedSchedules = 64;

}  // namespace

const coll::ScheduleParams& Communicator::paramsFor(const CollCall& call, size_t elemSize, bool hostMemory) {
  ParamsMemo& m = paramsMemo_;
  if (m.valid && m.params.kind == call.kind && m.params.count == static_cast<int64_t>(call.count) &&
      m.params.root == call.root && m.elemSize == elemSize && m.hostMemory == hostMemory) {
    return m.params;
  }
  m.valid = false;
  coll::ScheduleParams p;
  p.kind = call.kind;
  p.nRanks = nRanks_;
  p.root = call.root;
  p.count = static_cast<int64_t>(call.count);
  // Parts on 16-byte boundaries, on every rank alike (host or device buffers): the device
  // executor's packs then cover every part, whatever the count.
  p.align = coll::partitionAlign(elemSize);
  // The tuner's table for this size class (topology/tuner.h): the cost model's least time, or
  // the size rule, under WEFT_ALGO and the other overrides agreed at init.
  const topo::TunerChoice choice =
      topology_->tuner.choose(call.kind, p.count * static_cast<int64_t>(elemSize), hostMemory);
  p.algo = coll::algoSupported(call.kind, choice.algo) ? choice.algo : coll::collTraits(call.kind).defaultAlgo;
  p.nChannels = choice.channels;
  m = ParamsMemo{true, elemSize, hostMemory, p};
  return m.params;
}

const Communicator::ReduceMemo& Communicator::reduceFunctions(weftDataType_t type, weftRedOp_t op) {
  ReduceMemo& m = reduceMemo_;
  if (!m.valid || m.type != type || m.op != op) {
    m = ReduceMemo{true,
                   type,
                   op,
                   coll::reduceFunction(type, op),
                   coll::reduceCopyFunction(type, op),
                   coll::reduceStreamFunction(type, op)};
  }
  return m;
}

void Communicator::makeRoomForOps(size_t n) {
  if (ops_.size() + n <= kMaxCachedSchedules) return;
  ops_.clear();
  lastOp_ = nullptr;
}

Communicator::CachedOp* Communicator::cachedOp(const coll::ScheduleParams& p, size_t elemSize) {
  OpKey key{static_cast<int>(p.kind),      static_cast<int>(p.algo), p.root, p.nChannels, p.count,
            static_cast<int64_t>(elemSize)};
  // Training loops repeat one shape: check the last one before the map.
  if (lastOp_ && lastOpKey_ == key) return lastOp_;
  auto it = ops_.find(key);
  if (it != ops_.end()) {
    lastOpKey_ = key;
    return lastOp_ = it->second.get();
  }
  lastOp_ = nullptr;
  if (ops_.size() >= kMaxCachedSchedules) ops_.clear();
  auto op = std::make_unique<CachedOp>();
  coll::ScheduleParams ordered = p;
  ordered.ringOrders = ringOrders_;
  op->schedule = coll::buildSchedule(ordered, rank_);
  op->plan = coll::planCollective(op->schedule, elemSize, static_cast<size_t>(settings_.slotBytes));
  op->plan.timeoutS = settings_.timeoutS;
  op->scratchBytes = static_cast<size_t>(coll::scratchBufferCount(p)) * elemSize;
  op->sendBytes = static_cast<size_t>(coll::sendBufferCount(p)) * elemSize;
  op->recvBytes = static_cast<size_t>(coll::recvBufferCount(p)) * elemSize;
  lastOpKey_ = key;
  return lastOp_ = ops_.emplace(key, std::move(op)).first->second.get();
}

std::string Communicator::describe(const CollCall& call, const std::string& algo, uint64_t seq) const {
  char text[256];
  bool reduces = coll::collReduces(call.kind);
  std::snprintf(text, sizeof(text), "rank %d: %s #%llu (%s, %zu x %s%s%s)", rank_, coll::collName(call.kind),
                static_cast<unsigned long long>(seq), algo.c_str(), call.count, coll::dataTypeName(call.type),
                reduces ? " " : "", reduces ? coll::redOpName(call.op) : "");
  return text;
}

// What the schedule sends from: the caller's buffer, or, in place where the blocks a rank
// receives would overwrite blocks it has yet to send (all-to-all), a copy of its first bytes.
const void* Communicator::stagedSendBuffer(const CollCall& call, size_t bytes) {
  if (!coll::collStagesSend(call.kind, call.sendbuff, call.recvbuff, static_cast<int64_t>(call.count))) {
    return call.sendbuff;
  }
  staging_.resize(std::max(staging_.size(), bytes));
  std::memcpy(staging_.data(), call.sendbuff, bytes);
  return staging_.data();
}

void Communicator::takeRequestedTimeout() {
  const int32_t asked = requestedTimeoutS_.load(std::memory_order_relaxed);
  if (asked <= 0 || asked == settings_.timeoutS) return;
  settings_.timeoutS = asked;
  ops_.clear();  // their plans hold the old timeout
  lastOp_ = nullptr;
}

Status Communicator::runCollectiveCall(const CollCall& call) {
  RecordingScope recording(this);
  takeRequestedTimeout();
  if (!coll::collTraits(call.kind).scheduled) return runRootedExchange(call);  // gather, scatter
  ++seq_;
  opNumber_ = liveNumber(collSeq_ + 1, true);  // stampCollective below takes that number
  setLogRank(rank_);
  // No rank finishes a collective without every other: all of them are involved.
  WatchedOp watched(liveness_.get(), opNumber_, nullptr);
  size_t elemSize = coll::dataTypeSize(call.type);
  const coll::ScheduleParams& params = paramsFor(call, elemSize, true);
  HostReducer fns;
  Status found = hostReducer(call, &fns);
  if (!found.isOk()) return fail(std::move(found));
  const uint64_t stamp = stampCollective(call, static_cast<int>(params.algo));
  // Buffers every rank registered and can address: no FIFO copies (comm_zero_copy.cc).
  if (zeroCopyCandidate(call, params, elemSize, fns.preMul != nullptr)) {
    bool done = false;
    Status s = runZeroCopy(call, params, elemSize, ZeroCopyOps{fns.reduce, fns.reduceCopy, fns.divisor}, stamp, &done);
    if (!s.isOk()) return fail(std::move(s));
    if (done) return Status::ok();
  }
  CachedOp* cached = cachedOp(params, elemSize);
  bindCall(call, cached, fns, stamp, coll::algoName(params.algo));
  // A rooted collective's ranks may finish without hearing from every peer: with call checks,
  // the token lane (or, with two ranks, the probes) makes each rank's completion depend on every
  // rank's stamp (runCachedPlan). The others need it where the data cannot: a call of count 0
  // (nothing moves: it would return at once whatever its peers called) and, among host ranks on
  // one host, the first call of a shape (before its FIFOs connect, so that a peer in a call of count 0 finds
  // this rank on the token lane instead of leaving it waiting in connect).
  const bool rooted = coll::collRooted(call.kind);
  const bool withTokens = checkCalls_ && nRanks_ > 1 && (rooted || hostRanksOnOneHost_);
  Status s = runCachedPlan(cached, withTokens, rooted);
  if (!s.isOk()) return fail(std::move(s));
  return Status::ok();
}

Status Communicator::hostReducer(const CollCall& call, HostReducer* out) {
  *out = HostReducer();
  if (!coll::collReduces(call.kind)) return Status::ok();
  // A premul-sum multiplies each rank's input where it enters (the executor's preMul) and sums.
  weftRedOp_t op = call.op;
  if (!coll::isValidRedOp(call.op)) {
    PreMulSumOp found;
    Status s = findPreMulSum(call.op, call.type, coll::collName(call.kind), &found);
    if (s.isOk()) s = readScalar(found, &scalarNow_);
    if (!s.isOk()) return s;
    op = weftSum;
    out->preMul = coll::preMulFunction(call.type);
  }
  const ReduceMemo& fns = reduceFunctions(call.type, op);
  out->reduce = fns.reduce, out->reduceCopy = fns.reduceCopy, out->reduceStream = fns.reduceStream;
  out->divisor = op == weftAvg ? static_cast<uint32_t>(nRanks_) : 0;
  return Status::ok();
}

void Communicator::bindCall(const CollCall& call, CachedOp* cached, const HostReducer& fns, uint64_t stamp,
                            const char* algoName) {
  // Some schedules keep partial results in a scratch buffer (a tree reduce's interior ranks).
  if (scratch_.size() < cached->scratchBytes) scratch_.resize(cached->scratchBytes);
  const void* sendbuff = stagedSendBuffer(call, cached->sendBytes);
  coll::ExecPlan& plan = cached->plan;
  bindBuffers(&plan, sendbuff, call.recvbuff, scratch_.data(), fns.reduce, fns.reduceCopy, fns.divisor, fns.preMul,
              &scalarNow_, fns.reduceStream);
  coll::stampPlan(&plan, stamp);
  plan.observer = recorder_.get();
  plan.tracer = stepTracer_;
  plan.checks.stamps = checkCalls_;
  // The call's last plan (not the zero-copy handshake's): a peer's token or data of this call
  // where it does not read shows a disagreement (rooted calls have their own checks, runCachedPlan).
  plan.checks.findStraysWhenStalled = checkCalls_ && !coll::collRooted(call.kind);
  // Only where a rank may finish without hearing from every peer (coll_traits.h).
  plan.checks.waitForConsumers = checkCalls_ && !coll::collTraits(call.kind).everyResultNeedsEveryRank;
  // Out of place, nothing writes the send buffer during the call: peers may read it directly.
  // That saves a copy where the receiver stores the data as it is (all-to-all, broadcast);
  // a reduction would read it into a bounce buffer anyway, so the others keep the slots.
  bool copiesAsIs = coll::collTraits(call.kind).peersReadSendBuffer;
  const char* sb = static_cast<const char*>(sendbuff);
  const char* rb = static_cast<const char*>(call.recvbuff);
  plan.sendBufferStable =
      sb == nullptr || rb == nullptr || sb + cached->sendBytes <= rb || rb + cached->recvBytes <= sb;
  plan.peersReadReferences = copiesAsIs;
  // Described only when something fails; the cached op remembers the call for that.
  cached->lastCall = call;
  cached->lastSeq = seq_;
  cached->algoName = algoName;  // per call: the zero-copy handshake may share the shape
  if (!plan.what) plan.what = [this, cached] { return describe(cached->lastCall, cached->algoName, cached->lastSeq); };
}

Status Communicator::pairSelfCalls(const std::vector<P2pCall>& calls,
                                   std::vector<std::pair<const P2pCall*, const P2pCall*>>* pairs) const {
  std::vector<const P2pCall*> sends, recvs;
  for (const auto& c : calls) {
    if (c.peer == rank_) (c.send ? sends : recvs).push_back(&c);
  }
  if (sends.size() != recvs.size()) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: a group has %zu sends to this rank itself but %zu receives from it; they must pair up",
                      rank_, sends.size(), recvs.size());
  }
  pairs->clear();
  for (size_t i = 0; i < sends.size(); ++i) {
    if (sends[i]->bytes != recvs[i]->bytes) {
      return WEFT_ERROR(weftInvalidUsage, "rank %d: send of %zu bytes to itself paired with a receive of %zu bytes",
                        rank_, sends[i]->bytes, recvs[i]->bytes);
    }
    pairs->emplace_back(sends[i], recvs[i]);
  }
  return Status::ok();
}

namespace {

// Where each send of a group reads from: its buffer, or, when that overlaps a receive of the same
// group (an in-place exchange), a copy in `copies` taken before anything is received.
std::vector<const void*> sendSources(const std::vector<P2pCall>& calls, int self,
                                     std::list<std::vector<char>>* copies) {
  std::vector<const void*> sendFrom(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    sendFrom[i] = calls[i].sendbuff;
    if (!calls[i].send || calls[i].bytes == 0 || calls[i].peer == self) continue;
    const char* sb = static_cast<const char*>(calls[i].sendbuff);
    for (const auto& other : calls) {
      const char* rb = static_cast<const char*>(other.recvbuff);
      if (other.send || other.bytes == 0 || !(sb < rb + other.bytes && rb < sb + calls[i].bytes)) continue;
      copies->emplace_back(sb, sb + calls[i].bytes);
      sendFrom[i] = copies->back().data();
      break;
    }
  }
  return sendFrom;
}

}  // namespace

Status Communicator::runP2pCall(const std::vector<P2pCall>& calls) {
  RecordingScope recording(this);
  takeRequestedTimeout();
  ++seq_;
  opNumber_ = liveNumber(collSeq_, false);
  setLogRank(rank_);
  // Only the group's peers are involved: a silent rank elsewhere does not fail it.
  std::vector<int> involved;
  for (const auto& c : calls) involved.push_back(c.peer);
  WatchedOp watched(liveness_.get(), opNumber_, &involved);
  // Sends and receives with this rank itself are matched in order and copied.
  std::vector<std::pair<const P2pCall*, const P2pCall*>> selfPairs;
  Status paired = pairSelfCalls(calls, &selfPairs);
  if (!paired.isOk()) return fail(std::move(paired));  // the peers wait in this group: tell them
  for (const auto& [send, recv] : selfPairs) {
    if (send->bytes) std::memmove(recv->recvbuff, send->sendbuff, send->bytes);
  }

  // One lane per call (bytes as elements, so both sides slice alike whatever their datatype).
  std::list<std::vector<char>> copies;
  std::vector<coll::Lane> lanes(calls.size());
  coll::ExecPlan plan = p2pPlan(calls, sendSources(calls, rank_, &copies), &lanes);
  uint64_t bytes = 0;
  for (const auto& c : calls) bytes += c.bytes;
  recordP2pCall(calls.size(), bytes);
  Status s = coll::connectPlan(&plan, &connections_);
  if (s.isOk()) s = coll::runHostPlan(plan, &connections_);
  if (!s.isOk()) return fail(std::move(s));
  return Status::ok();
}

coll::ExecPlan Communicator::p2pPlan(const std::vector<P2pCall>& calls, const std::vector<const void*>& sendFrom,
                                     std::vector<coll::Lane>* lanes) {
  // One track per (peer, direction), runs in call order.
  std::map<std::pair<int, bool>, coll::Track> tracks;
  int64_t sliceElems = settings_.slotBytes;
  for (size_t i = 0; i < calls.size(); ++i) {
    const P2pCall& c = calls[i];
    if (c.peer == rank_) continue;
    coll::Step step;
    step.kind = c.send ? coll::StepKind::kSend : coll::StepKind::kRecv;
    (c.send ? step.sendPeer : step.recvPeer) = c.peer;
    step.srcBuf = coll::Buf::kSend;
    step.dstBuf = coll::Buf::kRecv;
    step.count = static_cast<int64_t>(c.bytes);
    (*lanes)[i].steps.push_back(step);
    coll::LaneRun run;
    run.lane = &(*lanes)[i];
    run.fifoLane = kP2pLane;
    (c.send ? run.sendStamp : run.recvStamp) = stampP2p(c.peer, c.send, c.bytes);
    run.sendbuff = static_cast<const char*>(sendFrom[i]);
    run.recvbuff = static_cast<char*>(c.recvbuff);
    run.elemSize = 1;
    run.sliceElems = sliceElems;
    run.iterations = coll::iterationsFor(step.count, sliceElems);
    tracks[{c.peer, c.send}].runs.push_back(run);
  }
  coll::ExecPlan plan;
  for (auto& [key, track] : tracks) plan.tracks.push_back(std::move(track));
  uint64_t seq = seq_;
  size_t nCalls = calls.size();
  int rank = rank_;
  plan.what = [rank, seq, nCalls] {
    char what[96];
    std::snprintf(what, sizeof(what), "rank %d: send/recv group #%llu (%zu operations)", rank,
                  static_cast<unsigned long long>(seq), nCalls);
    return std::string(what);
  };
  plan.timeoutS = settings_.timeoutS;
  plan.observer = recorder_.get();
  plan.sendBufferStable = true;  // sends that overlap a receive of the group go from copies
  plan.tracer = stepTracer_;
  plan.checks.stamps = checkCalls_;
  // WEFT_CHECK_SENDS: a send completes once its receiver took the message, which it refuses when
  // the receive is of another size: then both ranks fail. Unless a message waits for this rank
  // meanwhile (its receiver may be sending to it, outside a group): yieldToIncoming. Off by
  // default: the wait for the receiver costs 8 B send/recv far more than the 3 % the checks may
  // (perf/RESULTS.md, "Call fingerprint cost").
  plan.checks.waitForConsumers = checkSends_;
  plan.checks.yieldToIncoming = true;
  return plan;
}

Status Communicator::barrier() {
  // An all-reduce of one byte: it completes on a rank only once every rank has contributed.
  uint8_t in = 0, out = 0;
  CollCall call;
  call.kind = coll::CollKind::kAllReduce;
  call.sendbuff = &in;
  call.recvbuff = &out;
  call.count = 1;
  call.type = weftUint8;
  call.op = weftSum;
  return runCollective(call);
}

}  // namespace core
}  // namespace weft
