// The host executor's diagnosis: what it says, and whom it blames, when nothing moves or when the
// ranks' calls disagree. The step engine (host_executor.cc: run, tryStep, acquire, applyStep, the
// waits at the end) moves data; while it waits it asks StallBlame whether a peer failed, fell
// silent or (after the deadline) is the one it waits for, and CallChecker whether a peer made
// another call (a message of this call where none was expected, a probe), and returns the
// Status they make. Both read the engine's track cursors (TrackState) and the plan, and reach
// the peers only through the plan's connections and the ConnectionProvider. Used by
// host_executor.cc only; the sentences name the operation (ExecPlan::what), the step and the peer.
#ifndef WEFT_COLLECTIVES_HOST_DIAGNOSIS_H_
#define WEFT_COLLECTIVES_HOST_DIAGNOSIS_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "collectives/host_executor.h"

namespace weft {
namespace coll {

// Where one track of a running plan is: its lane run, iteration and step, and what its current
// step waits for (the engine sets them; the diagnosis reads them).
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

inline const LaneRun& currentRun(const TrackState& t) { return t.track->runs[t.run]; }
inline const Step& currentStep(const TrackState& t) { return currentRun(t).lane->steps[t.step]; }

// Finds who is to blame when nothing moves: a failed peer, a silent one, or (after the
// deadline) the peers this rank waits for. Called every few milliseconds while the executor
// waits; the sentences name the operation, the step and the peer.
class StallBlame {
 public:
  StallBlame(const ExecPlan& plan, ConnectionProvider* provider) : plan_(plan), provider_(provider) {}

  // Fails when a peer of the operation failed or is silent, or (expired) when the operation has
  // waited stalledS seconds, longer than its time-out; ok while it may still move.
  Status check(const std::vector<TrackState>& tracks, bool expired, double stalledS);

  // `peer` reported a failure; `culprit` is the rank it blamed (-1: none).
  Status blameAbortedPeer(const std::vector<TrackState>& tracks, int peer, int culprit);

  // The receiver at the end of sending connection `c` failed (`peer`: what checkPeer said) after
  // this rank's steps were done.
  Status senderFailed(const std::vector<TrackState>& tracks, Connection* c, Status peer);

 private:
  Status timedOut(const std::vector<TrackState>& tracks, const std::set<int>& silentPeers, double stalledS);
  std::string describeWaits(const std::vector<TrackState>& tracks, std::set<int>* peers) const;
  static bool canAnyTrackMove(const std::vector<TrackState>& tracks);

  const ExecPlan& plan_;
  ConnectionProvider* provider_;
};

// Finds ranks whose calls differ from this rank's where the stamps on the messages it reads do
// not show it (ExecPlan::CallChecks): a message of this call on a FIFO it does not read, or
// after its part is done; a probe from a peer that waits for data this rank never sends.
class CallChecker {
 public:
  CallChecker(const ExecPlan& plan, ConnectionProvider* provider) : plan_(plan), provider_(provider) {}

  // The ranks made different calls: `peer` sent a message stamped `theirs` where this rank
  // expects `ours` (`where`: in which step, or why none was expected). Tells the provider.
  Status callMismatch(int peer, uint64_t theirs, uint64_t ours, const char* where);

  // Whether any message waits on a receiving end of this rank's host connections.
  bool messageWaiting();

  // A message of this call on a receiving end of this rank: its sender made another call. Once
  // this rank's steps are done, on any end; while they run (skipOwn), on the ends the plan does
  // not read.
  Status findStrayMessage(bool skipOwn);

  // The plan stalled for a health-check interval (CallChecks::probePeers): probe each peer this
  // rank waits for data from (once per call), then read the peers' probes and look for messages
  // of this call where this rank does not read. Why this completes the checks of a two-rank
  // rooted collective: see CallChecks::probePeers and Communicator::runCachedPlan.
  Status probeStalled(const std::vector<TrackState>& tracks);

  // Probes of earlier calls are dropped, so are those of this call from a peer this rank sends to
  // (the peer waits for what this rank sends); one of this call from a peer this rank sends
  // nothing to means that both wait for each other: their calls differ. Later calls' stay.
  Status readProbes();

 private:
  bool readsFrom(const Connection* conn) const;
  bool sendsTo(int peer) const;
  static bool waitsForDataFrom(const std::vector<TrackState>& tracks, int peer);

  const ExecPlan& plan_;
  ConnectionProvider* provider_;
  std::vector<std::pair<int, Connection*>> receivers_;  // findStrayMessage's
  std::vector<char> probed_;                            // per probe peer: probed in this call
};

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_HOST_DIAGNOSIS_H_
