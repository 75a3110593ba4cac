// The call-check token lane of a collective on host buffers (schedule.h, callTokenLane): when
// it runs, alone or beside the data, and why two host ranks of a rooted collective may probe
// instead. Called by Communicator::runCollective (host_calls.cc) and the zero-copy handshake
// (comm_zero_copy.cc); gather and scatter decide the same in comm_rooted.cc, runRootedPlan.
#include "collectives/host_executor.h"
#include "core/comm.h"

namespace weft {
namespace core {

Status Communicator::runCachedPlan(CachedOp* cached, bool withTokens, bool rooted) {
  coll::ExecPlan& plan = cached->plan;
  if (!withTokens || cached->tokensInPlan) {
    Status s = plan.connected ? Status::ok() : coll::connectPlan(&plan, &connections_);
    // A call that moves nothing (count 0; a rooted one of a probing pair) gives no rank evidence
    // of the others' calls: its tokens run alone, as on the first call (which connected them).
    // A peer that called more finds the token while it waits for data (host_diagnosis.cc, CallChecker).
    if (s.isOk() && withTokens && plan.keys.empty()) {
      coll::stampPlan(&cached->tokenPlan, plan.checks.stamp);
      cached->tokenPlan.tracer = plan.tracer;
      cached->tokenPlan.checks.findStraysWhenStalled = plan.checks.findStraysWhenStalled;  // the call's only plan
      s = coll::runHostPlan(cached->tokenPlan, &connections_);
    }
    return s.isOk() ? coll::runHostPlan(plan, &connections_) : s;
  }
  // The first call of this shape: the tokens go alone, before the data lanes connect. A rank
  // whose peers named another root would wait in connect for a FIFO none of them makes; the
  // token lane is the same on every rank whatever the root, so its FIFOs always meet, and the
  // stamps fail every rank of a disagreeing call before any of them connects its data lanes.
  coll::ExecPlan& tokens = cached->tokenPlan;
  if (rooted && probesForTokens()) plan.checks.probePeers = {1 - rank_};  // connected with the data lanes, below
  if (tokens.tracks.empty()) {
    cached->tokenLane = coll::callTokenLane(nRanks_, rank_);
    coll::addCallTokenTrack(&tokens, &cached->tokenLane, callToken_);
    tokens.what = plan.what;
    tokens.timeoutS = plan.timeoutS;
  }
  coll::stampPlan(&tokens, plan.checks.stamp);
  tokens.tracer = plan.tracer;  // a level-2 timeline shows the token steps and their waits too
  tokens.checks.stamps = plan.checks.stamps;
  tokens.checks.findStraysWhenStalled = false;  // peers done with their tokens send the data meanwhile
  Status s = tokens.connected ? Status::ok() : coll::connectPlan(&tokens, &connections_);
  if (s.isOk()) s = coll::runHostPlan(tokens, &connections_);
  if (s.isOk() && (!plan.connected || plan.checks.probeRecvs.size() != plan.checks.probePeers.size())) {
    s = coll::connectPlan(&plan, &connections_);
  }
  if (s.isOk()) s = coll::runHostPlan(plan, &connections_);
  if (!s.isOk()) return s;
  cached->tokensInPlan = true;
  // Two host ranks: later rooted calls probe instead (below). Else they run the tokens beside the
  // data (the FIFOs exist now, so nothing waits in connect). The others need no tokens beside
  // data that every rank waits for from every other (coll_traits.h, everyResultNeedsEveryRank).
  if (!rooted || probesForTokens()) return Status::ok();
  coll::addCallTokenTrack(&plan, &cached->tokenLane, callToken_);
  return coll::connectPlan(&plan, &connections_);
}
// Why two ranks need no tokens once a shape's FIFOs exist. Each rank either sends to the other or
// receives from it (or both, on different lanes); a sender returns only once the receiver took
// every message or announced the very call the sender stamped them with (shared memory:
// CallChecks::waitForConsumers), and a receiver takes only a message stamped with its own call,
// before it releases the slot. So a rank that returns has accepted the peer's stamp, or seen
// the peer accept or announce its own: both made the same call. (An announcement comes at the
// start of the receiver's call, so a sender in a loop of calls finds it there without waiting
// for its message to cross and be taken.) When they made different
// calls (count, type, op, root, collective, a skipped call: the stamps differ), one of:
//   - one sends where the other reads: the reader refuses the message and fails; the sender's
//     message is never taken, and it fails with the reader's abort;
//   - both send to each other: each, waiting for its message to be taken, finds the other's
//     message of its call number in the receiving end connect() adds (the stray check);
//   - one sends on a FIFO the other does not read (other lanes): the reader stalls and finds it
//     there (the stray check while stalled, CallChecks::probePeers);
//   - both only receive (each named the other the root): both stall, and each sends the other a
//     probe of its call; a rank finding a probe of its call from the rank it sends nothing to
//     fails (CallChecks::probePeers);
//   - one runs the token lane alone (its first call of that shape, or a call of count 0, which
//     moves nothing and so always runs them) and the other does not: the other finds the token in
//     its stray check (stalled, or waiting for its message to be taken).
// Every failure aborts the connections, so the peer fails too, and both name both calls
// (call_mismatch.cc). The checks on a stall cost nothing until a rank waits a health-check
// interval (2 ms), and agreeing ranks pay only the sender's wait for its last message to be
// taken, where the token lane made both ranks wait for a message from the other.
//
// Only where no rank has a GPU: a rank on device buffers runs the tokens alone on every rooted
// call (runCallTokens, before it enqueues), and a peer on host buffers that probed instead would
// take its token for a message of another call.
bool Communicator::probesForTokens() const {
  if (nRanks_ != 2) return false;
  for (const auto& p : peers()) {
    if (p.device >= 0) return false;
  }
  return true;
}

}  // namespace core
}  // namespace weft
