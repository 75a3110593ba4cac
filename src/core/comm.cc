#include "core/comm.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <list>

#include "base/log.h"
#include "base/params.h"
#include "collectives/datatypes.h"
#include "collectives/device_executor.h"
#include "collectives/reduce.h"
#include "collectives/slot_stores.h"
#include "core/bootstrap_tags.h"
#include "core/comm_window.h"
#include "core/host_memory.h"
#include "device/device.h"
#include "topology/tuner.h"
#include "transports/bridge/device_bridge.h"

namespace weft {
namespace core {
namespace {

// Point-to-point traffic uses FIFO lane 0 between a pair; collectives use lanes 0..k. They
// share FIFOs safely because every rank runs its operations in the same order and each FIFO
// delivers in order.
constexpr int kP2pLane = 0;
// Schedules kept per communicator (they are rebuilt cheaply when evicted).
constexpr size_t kMaxCachedSchedules = 64;
// How long a failure blamed on a watched rank on another host waits for that rank's beats to
// say whom it blamed itself (explainPeerFailure): the heartbeat thread takes beats in every
// 100 ms, and the rank sent its announcement before its connections closed.
constexpr double kMessengerWaitS = 0.25;

PeerInfo selfInfo(int rank) {
  PeerInfo info;
  info.rank = rank;
  info.pid = static_cast<int32_t>(getpid());
  info.hostHash = hostHash();
  info.processHash = processHash();
  info.device = -1;
  describeDevice(&info);  // comm_device.cc
  info.probeAddress = memoryProbeAddress();
  std::snprintf(info.hostName, sizeof(info.hostName), "%s", hostName().c_str());
  return info;
}

}  // namespace

Communicator::~Communicator() {
  liveness_.reset();  // the heartbeat thread stops looking at this communicator
  std::lock_guard<std::mutex> lock(connMutex_);
  devicePath_.reset();  // waits for its launches: they use the connections' memory
  conns_.clear();       // bridges leave the proxy before it stops
  bridgeProxy_.reset();
}

Status Communicator::create(const weftUniqueId& id, int nRanks, int rank, const weftConfig_t* config,
                            std::unique_ptr<Communicator>* out, const std::atomic<bool>* abortInit) {
  std::unique_ptr<Communicator> comm(new Communicator());
  WEFT_TRY(comm->init(id, nRanks, rank, config, abortInit));
  *out = std::move(comm);
  return Status::ok();
}

Status Communicator::init(const weftUniqueId& id, int nRanks, int rank, const weftConfig_t* config,
                          const std::atomic<bool>* abortInit) {
  rank_ = rank;
  nRanks_ = nRanks;
  setLogRank(rank);
  params::warnUnknownOnce();
  sweepDeadHostMemoryOnce();       // weftMemAlloc's segments that killed processes left (host_memory.h)
  coll::registerHostLaneRunner();  // the host and emulated runtimes run device launches on threads
  name_ = config && config->commName ? config->commName : "";
  int64_t timeoutS = config && config->timeoutS > 0 ? config->timeoutS : params::TimeoutS();
  Deadline deadline = Deadline::afterSeconds(static_cast<double>(timeoutS));
  WEFT_TRY(Bootstrap::create(id, rank, nRanks, selfInfo(rank), deadline, &bootstrap_, abortInit));
  // Shared with this process's other ranks of the communicator (bootstrap.h: PeerTable).
  peerTable_ = bootstrap_->peerTable();
  checkCalls_ = params::CheckCalls();
  checkSends_ = checkCalls_ && params::CheckSends();
  commTag_ = commTagFromId(id);
  WEFT_TRY(agreeSettings(config));
  WEFT_TRY(probeSingleCopy());
  WEFT_TRY(LivenessWatch::create(rank_, peers(), commTag_, bootstrap_.get(), deadline, &stopWaits_, &liveness_));
  transports_ = makeTransports();
  WEFT_TRY(buildCommTopology(bootstrap_.get(), *peerTable_, commTag_, tunerSettings(), deadline, &topology_));
  int sameHost = 0;
  for (const auto& p : peers()) sameHost += p.hostHash == peers()[rank].hostHash;
  groupByHost();
  limitDeviceLanes();
  // More ranks on this host than it has CPUs (not merely than this rank may use: ranks bound to
  // a core each have one of their own): yield almost at once when waiting, since the rank waited
  // for may need this core, and write slots with cached stores (slot_stores.h).
  const bool ranksShareCpus = topology_ ? topology_->tuner.cpuShare() > 1 : sameHost > usableCpus();
  if (ranksShareCpus) {
    Backoff::setSpins(16);
    coll::setRanksOutnumberCpus(true);
  }
  WEFT_LOG(kInfo, kInit, "rank %d of %d joined communicator %s%s%s (%d ranks on this host, %zu transports)", rank,
           nRanks, commTag_.c_str(), name_.empty() ? "" : " ", name_.c_str(), sameHost, transports_.size());
  return Status::ok();
}

void Communicator::groupByHost() {
  std::vector<uint64_t> hosts;  // in order of their lowest rank
  std::vector<std::vector<int>> members;
  for (const auto& p : peers()) {
    size_t h = std::find(hosts.begin(), hosts.end(), p.hostHash) - hosts.begin();
    if (h == hosts.size()) hosts.push_back(p.hostHash), members.emplace_back();
    members[h].push_back(p.rank);
  }
  nNodes_ = static_cast<int>(hosts.size());
  std::vector<int> byHost;
  for (const auto& m : members) byHost.insert(byHost.end(), m.begin(), m.end());
  ringOrders_.assign(1, byHost);
  // The topology's rings, one per channel (global_system.h channelRings: inside a host the
  // host's searched rings or NUMA node by NUMA node, hosts joined through their NICs).
  if (topology_ && topology_->global.nRanks() == nRanks_) {
    ringOrders_ = topo::channelRings(topology_->global, coll::kMaxScheduleChannels);
    if (rank_ == 0) {
      for (const std::string& line : channelRingLines(topology_->global, ringOrders_, coll::kMaxScheduleChannels)) {
        WEFT_LOG(kInfo, kGraph, "%s", line.c_str());
      }
      for (const std::string& line : channelTreeLines(ringOrders_, coll::kMaxScheduleChannels)) {
        WEFT_LOG(kInfo, kGraph, "%s", line.c_str());
      }
    }
  }
  bool identity = ringOrders_.size() == 1;
  for (int i = 0; identity && i < nRanks_; ++i) identity = ringOrders_[0][static_cast<size_t>(i)] == i;
  if (identity) ringOrders_.clear();
  if (rank_ != 0 || nNodes_ == 1) return;
  std::string text;
  for (size_t h = 0; h < members.size(); ++h) {
    text += (h ? "; " : "") + std::string(peers()[members[h][0]].hostName) + ":";
    for (int r : members[h]) text += " " + std::to_string(r);
  }
  WEFT_LOG(kInfo, kInit, "%d ranks on %d hosts (%s); rings and trees visit each host's ranks together%s", nRanks_,
           nNodes_, text.c_str(), identity ? "" : " (ranks are not numbered host by host: the ring reorders them)");
}

Status Communicator::probeSingleCopy() {
  // Which peers this rank can read directly (same process, or cross-memory attach allowed by
  // the OS); then everyone learns who can read them, which is what a sender needs.
  std::vector<uint8_t> canRead(static_cast<size_t>(nRanks_), 0);
  const PeerInfo& self = peers()[rank_];
  int readable = 0;
  for (const auto& peer : peers()) {
    // WEFT_SHM_DISABLE forbids every form of shared memory, direct reads included.
    if (!params::SingleCopy() || params::ShmDisable() || peer.rank == rank_ || peer.hostHash != self.hostHash) {
      continue;
    }
    // Across processes it takes cross-memory attach (process_vm_readv), which on the machines
    // measured so far copies slot-sized pieces slower than two memcpys: only on request.
    if (peer.processHash != self.processHash && !params::CrossMemoryAttach()) continue;
    uint64_t value = 0;
    int err = 0;
    bool ok = readProcessMemory(peer.processHash == self.processHash ? getpid() : peer.pid, peer.probeAddress, &value,
                                sizeof(value), &err);
    canRead[peer.rank] = ok && value == kMemoryProbeValue;
    readable += canRead[peer.rank];
    if (!canRead[peer.rank]) {
      WEFT_LOG(kInfo, kShm, "rank %d cannot read rank %d's memory directly (%s): copies go through shared memory",
               rank_, peer.rank, ok ? "probe mismatch" : errnoText(err).c_str());
    }
  }
  WEFT_TRY(exchangeReaders(canRead));
  WEFT_LOG(kInfo, kShm, "rank %d reads %d peers' memory directly (single-copy)", rank_, readable);
  return Status::ok();
}

Status Communicator::exchangeReaders(const std::vector<uint8_t>& canRead) {
  const size_t n = static_cast<size_t>(nRanks_);
  const Deadline deadline = Deadline::afterSeconds(settings_.timeoutS);
  std::vector<uint8_t> column(n);
  if (rank_ != 0) {
    WEFT_TRY(bootstrap_->send(0, bootstrap_tags::kReadersRow, canRead.data(), n, deadline));
    WEFT_TRY(bootstrap_->recv(0, bootstrap_tags::kReadersColumn, column.data(), n, deadline));
  } else {
    std::vector<uint8_t> matrix(n * n);
    std::copy(canRead.begin(), canRead.end(), matrix.begin());
    for (size_t p = 1; p < n; ++p) {
      WEFT_TRY(bootstrap_->recv(static_cast<int>(p), bootstrap_tags::kReadersRow, &matrix[p * n], n, deadline));
    }
    for (size_t p = n; p-- > 0;) {
      for (size_t r = 0; r < n; ++r) column[r] = matrix[r * n + p];
      if (p > 0) {
        WEFT_TRY(bootstrap_->send(static_cast<int>(p), bootstrap_tags::kReadersColumn, column.data(), n, deadline));
      }
    }
  }
  peerReadsMe_.assign(n, false);
  for (size_t p = 0; p < n; ++p) peerReadsMe_[p] = column[p] != 0;
  return Status::ok();
}

bool Communicator::peerReadsMyMemory(int peer) { return peerReadsMe_[static_cast<size_t>(peer)]; }

Status Communicator::readPeerMemory(int peer, uint64_t address, void* dst, size_t bytes) {
  const PeerInfo& p = peers()[static_cast<size_t>(peer)];
  int pid = p.processHash == peers()[rank_].processHash ? getpid() : p.pid;
  int err = 0;
  if (readProcessMemory(pid, address, dst, bytes, &err)) return Status::ok();
  return WEFT_ERROR(weftRemoteError,
                    "rank %d: reading %zu bytes from rank %d (pid %d) directly failed: %s; the rank may have exited. "
                    "WEFT_SINGLE_COPY=0 copies through shared memory instead",
                    rank_, bytes, peer, p.pid, errnoText(err).c_str());
}

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

Status Communicator::fail(Status status) {
  // A liveness verdict is what made the waits give up (connect sees only "aborted"): report it,
  // unless it is a peer's report that the ranks' calls disagree: then join the exchange that
  // names both calls.
  int silent = -1;
  Status verdict = liveness_ ? liveness_->verdict(&silent) : Status::ok();
  if (!verdict.isOk() && silent >= 0 && (silent & kCulpritCallMismatch) != 0) {
    noteCallMismatch(silent & ~kCulpritCallMismatch, 0, 0);
  } else if (!verdict.isOk() && (culprit_.load() < 0 || culprit_.load() == silent)) {
    noteCulprit(silent);
    status = std::move(verdict);
  }
  // Tell the peers at once, so that they fail now rather than at their deadline: through the
  // connections, and in the liveness record for those not connected yet or waiting elsewhere.
  // The culprit is this rank itself unless the executor found another; a disagreement between
  // the ranks' calls says so, so that every rank joins the exchange that names both calls.
  const int culprit = culprit_.load();
  const bool mismatch = mismatch_.load();
  const int told = (culprit >= 0 ? culprit : rank_) | (mismatch ? kCulpritCallMismatch : 0);
  if (liveness_) liveness_->publishFailure(opNumber_, false, mismatch ? told : culprit, status.message());
  {
    std::lock_guard<std::mutex> lock(connMutex_);
    for (auto& [key, conn] : conns_) conn->signalAbort(told);
  }
  if (mismatch) return explainCallMismatch(std::move(status));
  return status;
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

Status Communicator::runCollective(const CollCall& call) {
  takeRequestedTimeout();
  if (!coll::collTraits(call.kind).scheduled) return runRootedExchange(call);  // gather, scatter
  ++seq_;
  opNumber_ = liveNumber(collSeq_ + 1, true);  // stampCollective below takes that number
  setLogRank(rank_);
  // No rank finishes a collective without every other: all of them are involved.
  WatchedOp watched(liveness_.get(), opNumber_, nullptr);
  size_t elemSize = coll::dataTypeSize(call.type);
  const coll::ScheduleParams& params = paramsFor(call, elemSize, true);
  bool reduces = coll::collReduces(call.kind);
  // A premul-sum multiplies each rank's input where it enters (the executor's preMul) and sums.
  weftRedOp_t op = call.op;
  coll::PreMulFn preMul = nullptr;
  if (reduces && !coll::isValidRedOp(call.op)) {
    PreMulSumOp found;
    Status s = findPreMulSum(call.op, call.type, coll::collName(call.kind), &found);
    if (s.isOk()) s = readScalar(found, &scalarNow_);
    if (!s.isOk()) return fail(std::move(s));
    op = weftSum;
    preMul = coll::preMulFunction(call.type);
  }
  coll::ReduceFn reduce = nullptr;
  coll::ReduceCopyFn reduceCopy = nullptr;
  coll::ReduceCopyFn reduceStream = nullptr;
  if (reduces) {
    const ReduceMemo& fns = reduceFunctions(call.type, op);
    reduce = fns.reduce, reduceCopy = fns.reduceCopy, reduceStream = fns.reduceStream;
  }
  uint32_t divisor = (reduces && op == weftAvg) ? static_cast<uint32_t>(nRanks_) : 0;
  const uint64_t stamp = stampCollective(call, static_cast<int>(params.algo));
  // Buffers every rank registered and can address: no FIFO copies (comm_zero_copy.cc).
  if (zeroCopyCandidate(call, params, elemSize, preMul != nullptr)) {
    bool done = false;
    Status s = runZeroCopy(call, params, elemSize, ZeroCopyOps{reduce, reduceCopy, divisor}, stamp, &done);
    if (!s.isOk()) return fail(std::move(s));
    if (done) return Status::ok();
  }
  CachedOp* cached = cachedOp(params, elemSize);
  // Some schedules keep partial results in a scratch buffer (a tree reduce's interior ranks).
  if (scratch_.size() < cached->scratchBytes) scratch_.resize(cached->scratchBytes);
  const void* sendbuff = stagedSendBuffer(call, cached->sendBytes);
  coll::ExecPlan& plan = cached->plan;
  bindBuffers(&plan, sendbuff, call.recvbuff, scratch_.data(), reduce, reduceCopy, divisor, preMul, &scalarNow_,
              reduceStream);
  coll::stampPlan(&plan, stamp);
  plan.checks.stamps = checkCalls_;
  // The call's last plan (not the zero-copy handshake's): a peer's token or data of this call
  // where it does not read shows a disagreement (rooted calls have their own checks, below).
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
  cached->algoName = coll::algoName(params.algo);  // per call: the zero-copy handshake may share the shape
  if (!plan.what) plan.what = [this, cached] { return describe(cached->lastCall, cached->algoName, cached->lastSeq); };
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

Status Communicator::runP2p(const std::vector<P2pCall>& calls) {
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

  // One lane per call (bytes as elements, so both sides slice alike whatever their datatype);
  // one track per (peer, direction), runs in call order.
  std::list<std::vector<char>> copies;
  const std::vector<const void*> sendFrom = sendSources(calls, rank_, &copies);
  std::vector<coll::Lane> lanes(calls.size());
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
    lanes[i].steps.push_back(step);
    coll::LaneRun run;
    run.lane = &lanes[i];
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
  plan.sendBufferStable = true;  // sends that overlap a receive of the group go from copies
  plan.checks.stamps = checkCalls_;
  // WEFT_CHECK_SENDS: a send completes once its receiver took the message, which it refuses when
  // the receive is of another size: then both ranks fail. Unless a message waits for this rank
  // meanwhile (its receiver may be sending to it, outside a group): yieldToIncoming. Off by
  // default: the wait for the receiver costs 8 B send/recv far more than the 3 % the checks may
  // (perf/RESULTS.md, "Call fingerprint cost").
  plan.checks.waitForConsumers = checkSends_;
  plan.checks.yieldToIncoming = true;
  recordP2pCall(nCalls);
  Status s = coll::connectPlan(&plan, this);
  if (s.isOk()) s = coll::runHostPlan(plan, this);
  if (!s.isOk()) return fail(std::move(s));
  return Status::ok();
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

Status Communicator::split(int color, int key, const weftConfig_t* config, std::unique_ptr<Communicator>* out) {
  struct Entry {
    int32_t color;
    int32_t key;
  };
  Entry mine{color, key};
  std::vector<Entry> all(static_cast<size_t>(nRanks_));
  Deadline deadline = Deadline::afterSeconds(settings_.timeoutS);
  Status s = bootstrap_->allGather(&mine, all.data(), sizeof(Entry), deadline);
  if (!s.isOk()) return fail(std::move(s));
  int tag = bootstrap_tags::sequenceTag(bootstrap_tags::kSplitBase, splits_++);
  out->reset();
  if (color == WEFT_SPLIT_NOCOLOR) return Status::ok();

  std::vector<int> members;
  for (int r = 0; r < nRanks_; ++r) {
    if (all[r].color == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return all[a].key < all[b].key; });
  int newRank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  // The new rank 0 makes the new communicator's id and hands it to the others.
  weftUniqueId id;
  if (newRank == 0) {
    WEFT_TRY(createUniqueId(&id));
    for (size_t i = 1; i < members.size(); ++i) WEFT_TRY(bootstrap_->send(members[i], tag, &id, sizeof(id)));
  } else {
    WEFT_TRY(bootstrap_->recv(members[0], tag, &id, sizeof(id)));
  }
  HostRankScope host(device() < 0);  // a host rank's part stays on host memory
  WEFT_TRY(Communicator::create(id, static_cast<int>(members.size()), newRank, config, out));
  setLogRank(rank_);
  return Status::ok();
}

void Communicator::abort() {
  if (bootstrap_) bootstrap_->abort();
  abortOperations();
}

void Communicator::revoke() {
  revoked_.store(true);
  abortOperations();
}

void Communicator::abortOperations() {
  aborted_.store(true);
  stopWaits_.store(true);
  std::lock_guard<std::mutex> lock(connMutex_);
  if (devicePath_) devicePath_->abort();
  // An abort after a failure (the usual reaction to one) must not overwrite the culprit that
  // failure is telling the peers.
  int culprit = culprit_.load();
  for (auto& [key, conn] : conns_) conn->signalAbort(culprit >= 0 ? culprit : rank_);
}

// With call checks, a rank that sends to a peer on a host lane also makes the receiving end from
// it there: a peer that made another call (thinks itself the root of a broadcast too, say) then
// finds a FIFO for what it sends instead of waiting for one until the time-out, and its message
// shows the disagreement (host_executor.cc, waitForConsumers).
Status Communicator::connect(const std::vector<coll::ConnectionKey>& planKeys, const Deadline& deadline) {
  std::vector<coll::ConnectionKey> keys = planKeys;
  if (checkCalls_) {
    for (const auto& key : planKeys) {
      if (key.send && key.lane < coll::kCallTokenLane) keys.push_back({key.peer, false, key.lane});
    }
  }
  // Sending ends prepare first (never waiting: the p2p transport offers the sender's credits),
  // then receiving ends (which wait at most for those), then sending ends attach to them.
  for (int phase = 0; phase < 3; ++phase) {
    for (const auto& key : keys) {
      if (key.send != (phase != 1)) continue;
      {
        std::lock_guard<std::mutex> lock(connMutex_);
        if (conns_.count(key)) continue;
      }
      if (aborted_.load()) {
        return WEFT_ERROR(weftInvalidUsage, "rank %d: the communicator was aborted", rank_);
      }
      const bool forDevice = key.lane >= coll::kDeviceFifoLaneBase;
      PeerInfo peer = peers()[static_cast<size_t>(key.peer)];
      Transport* transport = nullptr;
      bool bridged = false;
      WEFT_TRY(pickTransport(key, &peer, &transport, &bridged));
      ConnectRequest req;
      req.commTag = commTag_;
      req.self = peers()[rank_];
      req.peer = peer;
      req.lane = key.lane;
      req.nSlots = coll::isCallCheckLane(key.lane) ? kCallTokenSlots : static_cast<size_t>(settings_.nSlots);
      req.slotBytes = coll::isCallCheckLane(key.lane) ? kCallTokenSlotBytes : static_cast<size_t>(settings_.slotBytes);
      req.numaNode = topology_ ? topology_->global.numaOf(rank_) : -1;
      req.nic = topology_ ? topology_->global.place(rank_).nicName : "";
      req.deadline = deadline;
      req.exchange = bootstrap_.get();
      req.abort = &stopWaits_;
      if (forDevice && !bridged) req.runtime = devicePath_->runtime();
      if (phase == 0) {
        WEFT_TRY(transport->prepareSend(req));
        continue;
      }
      std::unique_ptr<Connection> conn;
      WEFT_TRY(key.send ? transport->connectSend(req, &conn) : transport->connectRecv(req, &conn));
      if (bridged) {
        std::unique_ptr<Connection> host = std::move(conn);
        WEFT_TRY(bridgeProxy());
        WEFT_TRY(bridge::makeDeviceBridge(std::move(host), key.send, devicePath_->runtime(), req.nSlots, req.slotBytes,
                                          key.peer, bridgeProxy_.get(), &conn));
      }
      WEFT_LOG(kInfo, kInit, "rank %d %s rank %d (host %s) %slane %d via %s%s", rank_, key.send ? "->" : "<-", key.peer,
               peer.hostName, forDevice ? "device " : "", forDevice ? key.lane - coll::kDeviceFifoLaneBase : key.lane,
               transport->name(), bridged ? " (staged through pinned host memory)" : "");
      std::lock_guard<std::mutex> lock(connMutex_);
      if (aborted_.load()) conn->signalAbort(rank_);
      conns_[key] = std::move(conn);
      if (!forDevice && transport->reconnectsWithoutExchange()) releasable_.insert(key);
    }
  }
  return Status::ok();
}

// A device FIFO goes over a device transport (GPU peer memory) when one reaches the peer and the
// route allows it (comm_topology.h: it stages pairs whose processes do not both see both GPUs);
// otherwise over the pair's host transport, bridged through pinned memory. For device
// transports *peer's device becomes this process's ordinal of the peer's GPU.
Status Communicator::pickTransport(const coll::ConnectionKey& key, PeerInfo* peer, Transport** transport,
                                   bool* bridged) {
  const bool forDevice = key.lane >= coll::kDeviceFifoLaneBase;
  for (int pass = 0; pass < 2 && *transport == nullptr; ++pass) {
    const bool wantDevices = forDevice && pass == 0 && !(topology_ && topology_->staged(rank_, key.peer));
    if (pass == 1 && !forDevice) break;
    PeerInfo asked = *peer;
    if (wantDevices) asked.device = peerOrdinalHere(key.peer);
    for (auto& t : transports_) {
      if (t->forDevices() == wantDevices && t->canConnect(peers()[rank_], asked)) {
        *transport = t.get();
        *bridged = forDevice && !wantDevices;
        *peer = asked;
        return Status::ok();
      }
    }
  }
  std::string names;
  for (auto& t : transports_) names += std::string(names.empty() ? "" : ", ") + t->name();
  return WEFT_ERROR(
      weftSystemError,
      "rank %d (host %s): no transport reaches rank %d (host %s): %s, and WEFT_NET=%s selects a network "
      "transport this build lacks (built: %s). Set WEFT_NET=socket, which works on any IP network",
      rank_, peers()[rank_].hostName, key.peer, peer->hostName,
      peer->hostHash == peers()[rank_].hostHash ? "WEFT_SHM_DISABLE=1 forbids shared memory" : "it is on another host",
      params::Net().c_str(), names.c_str());
}

int Communicator::peerOrdinalHere(int peer) const {
  const int theirs = peers()[static_cast<size_t>(peer)].device;
  if (!topology_ || peer == rank_) return theirs;
  const topo::GlobalSystem& g = topology_->global;
  if (g.sameGpu(rank_, peer)) return peers()[static_cast<size_t>(rank_)].device;
  // A GPU this process does not see has no ordinal here; its route is staged (comm_topology.h).
  const int here = topo::ordinalSeenBy(g, rank_, peer);
  return here >= 0 ? here : theirs;
}

Status Communicator::bridgeProxy() {
  std::lock_guard<std::mutex> lock(connMutex_);
  if (bridgeProxy_) return Status::ok();
  auto proxy = std::make_unique<net::Proxy>("weft-bridge");
  WEFT_TRY(proxy->start());
  bridgeProxy_ = std::move(proxy);
  return Status::ok();
}

Connection* Communicator::get(const coll::ConnectionKey& key) {
  std::lock_guard<std::mutex> lock(connMutex_);
  auto it = conns_.find(key);
  return it == conns_.end() ? nullptr : it->second.get();
}

Status Communicator::healthCheck() {
  if (revoked_.load()) {
    return WEFT_ERROR(weftRemoteError,
                      "rank %d: the communicator was revoked (weftCommRevoke) while this call ran; destroy it, or "
                      "make a new one from it with weftCommShrink or weftCommSplit",
                      rank_);
  }
  if (aborted_.load()) {
    return WEFT_ERROR(weftRemoteError, "rank %d: the communicator was aborted (weftCommAbort)", rank_);
  }
  int culprit = -1;
  Status verdict = liveness_ ? liveness_->verdict(&culprit) : Status::ok();
  if (!verdict.isOk()) noteCulprit(culprit);
  return verdict;
}

void Communicator::publishRefusal(const Status& refusal, bool collective) {
  // The number the refused call would have taken.
  const uint64_t number = liveNumber(collective ? collSeq_ + 1 : collSeq_, collective);
  if (liveness_) liveness_->publishFailure(number, true, -1, refusal.message());
}

void Communicator::noteCulprit(int rank) {
  int none = -1;
  if (rank >= 0 && rank < nRanks_ && rank != rank_) culprit_.compare_exchange_strong(none, rank);
}

Status Communicator::explainPeerFailure(Status failure) {
  // A neighbour may only report that it failed; the rank that caused it is often further
  // along the ring. When the culprit is known and lived on this host, say whether it is gone;
  // otherwise name any rank on this host whose process is gone (ranks that exit after failing
  // themselves are not named when the culprit is known).
  const PeerInfo& self = peers()[rank_];
  int culprit = culprit_.load();
  // The culprit's own words, when it published them (same host; still there after its exit) and
  // they are not here yet. A culprit that published a failure blaming another rank was only the
  // messenger, however its failure reached this rank (its exit or closed connection may come
  // before its abort): the rank it blamed is the culprit, as in every other rank's message. On
  // another host its beats announce it, which may arrive a little after its connection closed.
  std::string said;
  int blamed = -1;
  if (liveness_ && culprit >= 0 && liveness_->publishedFailure(culprit, &said, &blamed, kMessengerWaitS)) {
    const bool messenger = blamed >= 0 && blamed < nRanks_ && blamed != culprit && blamed != rank_;
    if (messenger || (!said.empty() && failure.message().find(said) == std::string::npos)) {
      std::string note = messenger ? "; rank " + std::to_string(culprit) + " had reported a failure caused by rank " +
                                         std::to_string(blamed) + (said.empty() ? "" : ": " + said)
                                   : "; rank " + std::to_string(culprit) + " reported: " + said;
      Status told = std::move(failure).withSuffix(note);
      failure = std::move(told);
    }
    if (messenger) culprit_.store(culprit = blamed);
  }
  std::string gone;
  for (const auto& peer : peers()) {
    if (culprit >= 0 && peer.rank != culprit) continue;
    if (peer.hostHash != self.hostHash || peer.processHash == self.processHash || processAlive(peer.pid)) continue;
    char named[48];
    std::snprintf(named, sizeof(named), "rank %d (pid", peer.rank);
    if (failure.message().find(named) != std::string::npos) continue;  // the message says so already
    char text[160];
    std::snprintf(text, sizeof(text), "%srank %d (pid %d on %s)", gone.empty() ? "" : ", ", peer.rank, peer.pid,
                  peer.hostName);
    gone += text;
  }
  if (gone.empty()) return failure;
  return std::move(failure).withSuffix("; ranks no longer running: " + gone + ": their exit is the likely cause");
}

}  // namespace core
}  // namespace weft
