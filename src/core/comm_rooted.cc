// Gather and scatter: the root exchanges one block with every rank (a block of its own is a
// copy, skipped when in place). They move data as direct sends and receives, as NCCL builds them,
// but for the call checks they are collectives like the others (issue 13): numbered in the
// collective sequence on every rank, every message stamped with the call (kind, count, type,
// root), and the call-check token lane (schedule.h, callTokenLane) run with them, so that every
// rank's completion depends on every rank's stamp. Ranks that name different roots then fail
// together with the sentence naming both calls (call_mismatch.cc) instead of some returning
// success and the others waiting until the time-out.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "base/log.h"
#include "collectives/datatypes.h"
#include "collectives/device_executor.h"
#include "core/comm.h"

namespace weft {
namespace core {
namespace {

// Gather and scatter share host FIFO lane 0 with the other collectives and point-to-point
// traffic: every rank runs its operations in the same order, and each FIFO delivers in order.
constexpr int kRootedLane = 0;

// What one rank moves: its messages to and from the other ranks, and the root's own block.
struct RootedMoves {
  std::vector<P2pCall> messages;
  const void* copyFrom = nullptr;  // the root's own block, when not in place
  void* copyTo = nullptr;
  size_t bytes = 0;  // of every block
};

// The root exchanges block r of its spread buffer (gather: recvbuff, scatter: sendbuff) with rank
// r; every other rank exchanges its one block with the root.
RootedMoves rootedMoves(const CollCall& call, int rank, int nRanks) {
  RootedMoves m;
  m.bytes = call.count * coll::dataTypeSize(call.type);
  if (m.bytes == 0) return m;
  const bool gather = call.kind == coll::CollKind::kGather;
  if (rank != call.root) {
    P2pCall p;
    p.send = gather;
    p.peer = call.root;
    p.bytes = m.bytes;
    p.sendbuff = call.sendbuff;
    p.recvbuff = call.recvbuff;
    m.messages.push_back(p);
    return m;
  }
  char* spread = gather ? static_cast<char*>(call.recvbuff) : static_cast<char*>(const_cast<void*>(call.sendbuff));
  for (int r = 0; r < nRanks; ++r) {
    if (r == rank) continue;
    P2pCall p;
    p.send = !gather;
    p.peer = r;
    p.bytes = m.bytes;
    p.sendbuff = p.recvbuff = spread + static_cast<size_t>(r) * m.bytes;
    m.messages.push_back(p);
  }
  char* own = spread + static_cast<size_t>(rank) * m.bytes;
  const void* from = gather ? call.sendbuff : own;
  void* to = gather ? own : call.recvbuff;
  if (from != to) m.copyFrom = from, m.copyTo = to;
  return m;
}

coll::Step messageStep(const P2pCall& m, int64_t count) {
  coll::Step step;
  step.kind = m.send ? coll::StepKind::kSend : coll::StepKind::kRecv;
  (m.send ? step.sendPeer : step.recvPeer) = m.peer;
  step.srcBuf = coll::Buf::kSend;
  step.dstBuf = coll::Buf::kRecv;
  step.count = count;
  return step;
}

}  // namespace

std::vector<P2pCall> Communicator::rootedMessages(const CollCall& call) const {
  RootedMoves moves = rootedMoves(call, rank_, nRanks_);
  if (moves.copyTo != nullptr) {
    P2pCall self;
    self.peer = rank_;
    self.bytes = moves.bytes;
    self.sendbuff = moves.copyFrom;
    moves.messages.push_back(self);
  }
  return moves.messages;
}

Status Communicator::runRootedExchange(const CollCall& call) {
  ++seq_;
  opNumber_ = liveNumber(collSeq_ + 1, true);  // stampCollective below takes that number
  setLogRank(rank_);
  // The root waits for every rank, and (through the token lane) every rank for every other.
  WatchedOp watched(liveness_.get(), opNumber_, nullptr);
  const uint64_t stamp = stampCollective(call, 0);
  const std::string what = describe(call, "direct", seq_);
  const RootedMoves moves = rootedMoves(call, rank_, nRanks_);
  const size_t elemSize = coll::dataTypeSize(call.type);
  const int64_t sliceElems = std::max<int64_t>(1, settings_.slotBytes / static_cast<int64_t>(elemSize));
  // One track per peer: the root's messages move concurrently, each in slices of at most a slot.
  std::vector<coll::Lane> lanes(moves.messages.size());
  coll::ExecPlan plan;
  for (size_t i = 0; i < moves.messages.size(); ++i) {
    const P2pCall& m = moves.messages[i];
    lanes[i].steps.push_back(messageStep(m, static_cast<int64_t>(call.count)));
    coll::LaneRun run;
    run.lane = &lanes[i];
    run.fifoLane = kRootedLane;
    run.sendbuff = static_cast<const char*>(m.sendbuff);
    run.recvbuff = static_cast<char*>(m.recvbuff);
    run.elemSize = elemSize;
    run.sliceElems = sliceElems;
    run.iterations = coll::iterationsFor(static_cast<int64_t>(call.count), sliceElems);
    plan.tracks.push_back(coll::Track{{run}});
  }
  plan.what = [&what] { return what; };
  plan.timeoutS = settings_.timeoutS;
  plan.sendBufferStable = true;  // nothing this call receives lands in what it sends
  plan.checks.stamps = checkCalls_;
  // The root of a scatter only sends: it returns once the ranks took its blocks (they may refuse one).
  plan.checks.waitForConsumers = checkCalls_;
  Status s = runRootedPlan(call, &plan, stamp, what);
  if (!s.isOk()) return fail(std::move(s));
  if (moves.copyTo != nullptr) std::memmove(moves.copyTo, moves.copyFrom, moves.bytes);
  return Status::ok();
}

Status Communicator::runRootedPlan(const CollCall& call, coll::ExecPlan* plan, uint64_t stamp,
                                   const std::string& what) {
  if (checkCalls_ && nRanks_ > 1) {
    // Beside the data once every FIFO the call uses exists (nothing can wait in connect then);
    // before, alone: a rank whose peers named another root would wait in connect for a FIFO
    // none of them makes, while the token lane is the same on every rank whatever the root.
    bool connected = tokenPlan_.connected;
    for (const auto& key : coll::connectionsOf(*plan)) connected = connected && connections_.get(key) != nullptr;
    // Two host ranks probe instead of running tokens beside the data (Communicator::runCachedPlan);
    // the probe lane connects with the data lanes, in the first call too. Both must then take
    // the same branch: one running the tokens alone while the other probes would find the token
    // a message of its call it does not read, and fail. The FIFOs that exist are not the same on
    // both (connect() adds receiving ends to sending ones only), the calls made so far are.
    const std::pair<int, int> shape{static_cast<int>(call.kind), call.root};
    const bool probes = probesForTokens();
    if (probes) {
      plan->checks.probePeers = {1 - rank_};
      // A call that moves nothing (count 0) runs the tokens alone: nothing else would give
      // either rank evidence of the other's call.
      connected = rootedRun_.count(shape) != 0 && !plan->tracks.empty();
    }
    if (connected) {
      if (!probes) coll::addCallTokenTrack(plan, &tokenLane_, callToken_);
    } else {
      WEFT_TRY(runCallTokens(stamp, what));
    }
    if (probes) rootedRun_.insert(shape);
  }
  coll::stampPlan(plan, stamp);
  WEFT_TRY(coll::connectPlan(plan, &connections_));
  return coll::runHostPlan(*plan, &connections_);
}

Status Communicator::runDeviceRooted(const CollCall& call, void* stream) {
  WEFT_TRY(ensureDevicePath());
  ++seq_;
  const uint64_t stamp = stampCollective(call, 0);
  opNumber_ = liveNumber(collSeq_, true);
  const std::string what = describe(call, "direct", seq_);
  // The lanes of a launch cannot wait for a host exchange: the tokens run on the host first, and
  // no rank enqueues (and connects the FIFOs of) a call its peers disagree on.
  if (checkCalls_ && nRanks_ > 1) {
    Status agreed = runCallTokens(stamp, what);
    if (!agreed.isOk()) return fail(std::move(agreed));
  }
  const RootedMoves moves = rootedMoves(call, rank_, nRanks_);
  // Bytes as elements (like a send/recv group), one launch unit per message: the i-th message
  // between two ranks uses device FIFO lane 0 of the pair, as a group's first message does.
  std::vector<coll::RankSchedule> schedules(moves.messages.size() + 1);
  std::vector<DeviceCall> dcalls;
  std::vector<int> lanes;
  std::vector<int64_t> keys;
  auto add = [&](const coll::Step& step, const void* send, void* recv, int64_t key) {
    coll::RankSchedule& s = schedules[dcalls.size()];
    s.rank = rank_;
    s.lanes.resize(1);
    s.lanes[0].steps.push_back(step);
    s.maxStepCount = step.count;
    DeviceCall d;
    d.schedule = &s;
    d.shape = {100 + static_cast<int>(step.kind), step.sendPeer, step.recvPeer, step.count, coll::kDeviceFifoLaneBase};
    d.sendbuff = send;
    d.recvbuff = recv;
    d.what = what;
    d.sendStamp = coll::stepSends(step.kind) ? stamp : 0;
    d.recvStamp = coll::stepReceives(step.kind) && checkCalls_ ? stamp : 0;
    dcalls.push_back(std::move(d));
    lanes.push_back(coll::kDeviceFifoLaneBase);
    keys.push_back(key);
  };
  for (const P2pCall& m : moves.messages) {
    const int delta = m.send ? (m.peer - rank_ + nRanks_) % nRanks_ : (rank_ - m.peer + nRanks_) % nRanks_;
    add(messageStep(m, static_cast<int64_t>(moves.bytes)), m.sendbuff, m.recvbuff, p2pUnitKey(delta, 0));
  }
  if (moves.copyTo != nullptr) {
    coll::Step copy;
    copy.kind = coll::StepKind::kCopy;
    copy.count = static_cast<int64_t>(moves.bytes);
    add(copy, moves.copyFrom, moves.copyTo, p2pUnitKey(0, 0));
  }
  if (dcalls.empty()) return Status::ok();
  return enqueueP2p(dcalls, lanes, keys, stream);
}

}  // namespace core
}  // namespace weft
