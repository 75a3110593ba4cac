// The host executor: runs schedules over transport connections on the calling thread, for
// buffers in host memory. Called by src/core for every collective and point-to-point group
// whose stream is NULL.
//
// A plan is a set of tracks that progress concurrently; a track is a sequence of lane runs that
// execute one after another (a collective has one track per lane and one run per track; a
// group of sends to one peer is one track with a run per send, so they stay in call order on
// their FIFO). The executor never blocks inside one connection: it polls every track in turn,
// backs off when none can move, and checks the deadline, the abort flag and the peers' health
// while it waits.
#ifndef WEFT_COLLECTIVES_HOST_EXECUTOR_H_
#define WEFT_COLLECTIVES_HOST_EXECUTOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/os.h"
#include "base/status.h"
#include "collectives/reduce.h"
#include "collectives/schedule.h"
#include "collectives/step_tracer.h"
#include "transports/transport.h"

namespace weft {
namespace coll {

// Which FIFO a message uses: the edge's other rank, the direction, and the FIFO lane.
struct ConnectionKey {
  int peer = -1;
  bool send = false;
  int lane = 0;
  bool operator<(const ConnectionKey& o) const {
    if (peer != o.peer) return peer < o.peer;
    if (send != o.send) return send < o.send;
    return lane < o.lane;
  }
  bool operator==(const ConnectionKey& o) const { return peer == o.peer && send == o.send && lane == o.lane; }
};

// Supplies connections (src/core owns and caches them).
class ConnectionProvider {
 public:
  virtual ~ConnectionProvider() = default;
  // Makes sure every listed connection exists: all receiving ends first (they never wait),
  // then the sending ends (they wait for the peer's receiving end, made in its own first phase).
  virtual Status connect(const std::vector<ConnectionKey>& keys, const Deadline& deadline) = 0;
  // A connection made by connect(); never null for a key that was connected.
  virtual Connection* get(const ConnectionKey& key) = 0;
  // Called every few milliseconds while the executor waits: fails when the communicator was
  // aborted.
  virtual Status healthCheck() = 0;
  // A connection reported its peer failed or gone: adds what the provider knows about the
  // likely cause (e.g. which rank of the communicator died) to the message.
  virtual Status explainPeerFailure(Status failure) { return failure; }
  // The executor found the rank whose failure (exit, error, silence) ends the operation; the
  // provider passes it on when it tells the other peers (Connection::signalAbort).
  virtual void noteCulprit(int rank) {}
  // The operation fails because the ranks' calls disagree (call_stamp.h): `peer` sent a
  // message stamped `theirs` where this rank expected `ours`, or (theirs == ours == 0) reported
  // such a failure. The provider tells the other peers so and names both calls.
  virtual void noteCallMismatch(int peer, uint64_t theirs, uint64_t ours) {}
  // The receiving ends of host connections that carry collectives, with their peers: a rank
  // done with a collective looks there for messages of the same call it did not expect.
  virtual void collectiveReceivers(std::vector<std::pair<int, Connection*>>* out) {}
  // This rank (-1: not known).
  virtual int selfRank() const { return -1; }
  // Single-copy: whether `peer` can read this rank's memory directly, and reading the memory
  // of `peer` (an address it sent in a ReferenceMessage).
  virtual bool peerReadsMyMemory(int peer) { return false; }
  virtual Status readPeerMemory(int peer, uint64_t address, void* dst, size_t bytes) {
    return Status::error(weftInternalError, "this provider cannot read peer memory");
  }
};

struct LaneRun {
  const Lane* lane = nullptr;
  int fifoLane = 0;  // FIFO lane its messages use
  const char* sendbuff = nullptr;
  char* recvbuff = nullptr;
  char* scratch = nullptr;  // Buf::kScratch: scratchBufferCount(params) elements
  size_t elemSize = 1;
  ReduceFn reduce = nullptr;  // for steps that reduce
  ReduceCopyFn reduceCopy = nullptr;  // for steps that reduce, keep and send the result
  // reduceCopy with non-temporal stores into the step's destination (reduceStreamFunction);
  // null: such steps go through reduceStreaming with `reduce`.
  ReduceCopyFn reduceStream = nullptr;
  uint32_t avgDivisor = 0;    // passed to reduce on final steps (nranks for avg, else 0)
  // Premul-sum: steps that read the send buffer (this rank's own input) combine through preMul
  // with *scalar (one element, host memory); reduce and reduceCopy are then weftSum's.
  PreMulFn preMul = nullptr;
  const void* scalar = nullptr;
  // Stamps (call_stamp.h): what this run's messages carry, and what it expects on the ones it
  // receives (equal for a collective; a send's and a receive's pair sequences for send/recv).
  uint64_t sendStamp = 0;
  uint64_t recvStamp = 0;
  // A call-check token run (addCallTokenTrack): its buffers are its own, bindBuffers skips it.
  bool ownBuffers = false;
  int64_t sliceElems = 1;     // elements per slice (at most one slot)
  int64_t iterations = 0;     // iterationsFor(schedule.maxStepCount, sliceElems)
  // Filled by connectPlan(): per step, the connection it receives from and sends to, and
  // whether it may send a reference to its source instead of the bytes (it sends from the send
  // buffer, and either the connection reads referenced bytes itself (kTransportReads) or the
  // peer can read this process (kPeerReads); the plan decides per call).
  std::vector<Connection*> recvConns;
  std::vector<Connection*> sendConns;
  std::vector<char> sendByReference;
  static constexpr char kTransportReads = 1;
  static constexpr char kPeerReads = 2;
};

// The FIFO lane a step sends on: its own lane's, unless the step names another lane of the
// same collective (schedule.h: the tree root feeding its broadcast-down lane).
inline int sendFifoLane(const LaneRun& run, const Step& step) {
  return step.sendLane >= 0 ? step.sendLane : run.fifoLane;
}

struct Track {
  std::vector<LaneRun> runs;
};

// Told about a run that stalls (the flight recorder, src/core/recorder.h): stalled() at each
// health check while nothing moves (every few milliseconds, never on the fast path), with the
// rank the first waiting track waits for, that track's step index (-1 / -1 unknown) and the
// bytes of the lane runs finished so far; moving() once progress resumes after a stalled().
// Called on the thread that runs the plan.
class StallObserver {
 public:
  virtual ~StallObserver() = default;
  virtual void stalled(int peer, int step, uint64_t bytesDone) = 0;
  virtual void moving() = 0;
};

struct ExecPlan {
  std::vector<Track> tracks;
  StallObserver* observer = nullptr;  // null: nobody asks
  // Describes the operation for messages ("rank 0: allreduce #12 (ring, 262144 x float sum)");
  // called only when something goes wrong.
  std::function<std::string()> what;
  std::vector<ConnectionKey> keys;  // every connection it uses (set by connectPlan)
  std::vector<Connection*> senders;  // its sending connections, once each (set by connectPlan)
  std::vector<Connection*> receivers;  // its receiving connections, once each (set by connectPlan)
  bool connected = false;
  // Single-copy: the send buffer stays unchanged for the whole operation (out of place), so a
  // send from it may pass a reference instead of the bytes, for slices of at least
  // referenceMinBytes: to a transport that reads them itself (network), always; to a peer that
  // reads this process's memory, only when peersReadReferences (the receiver stores the bytes
  // as they are; a reduction would first copy them into a bounce buffer). The operation then
  // returns only after the referenced bytes were taken.
  bool sendBufferStable = false;
  bool peersReadReferences = false;
  size_t referenceMinBytes = 16384;
  // How the call is checked against its peers' (WEFT_CHECK_CALLS; src/core fills these per call
  // shape, host_plan.cc stampPlan the stamp): what receivers accept, how senders wait at the end,
  // and what a stalled rank looks for.
  struct CallChecks {
    // Receivers refuse a message whose stamp is not theirs (WEFT_CHECK_CALLS).
    bool stamps = true;
    // A collective: the rank returns only once its peers took every message it sent (they may
    // refuse one), or, where the transport can tell, once each receiver announced this very call
    // (Connection::peerAnnounced: it runs the same call, so it will take them; not for messages
    // that lent memory by reference, which must be read first); it looks for messages of this
    // call it did not expect (a peer that made another call) while it waits. The rank announces
    // the call on its own receiving connections when it starts. collectiveSeq: the call's
    // sequence field (call_stamp.h).
    bool waitForConsumers = false;
    // A send/recv group waiting for its consumers: it stops waiting (and returns success) as soon as
    // a message waits on a receiving end of this rank, since its receiver may be blocked in a send
    // of its own (ranks that each send, then receive, outside a group) and only this rank's next
    // receive frees it; the size check is then the receiver's alone. It looks for no stray messages.
    bool yieldToIncoming = false;
    uint32_t collectiveSeq = 0;
    uint64_t stamp = 0;  // a collective's (stampPlan)
    // Two-rank rooted collectives checked without the token lane (src/core: every call of a shape
    // after its first): the peers this rank may probe on FIFO lane kCallProbeLane (connectPlan
    // connects both directions into probeSends / probeRecvs, in this order). A rank stalled for a
    // health-check interval while it waits for data from such a peer sends it one probe stamped
    // with the call; a rank that finds a probe of its own call from a peer it sends nothing to
    // fails with a call mismatch (both ranks only receive: they named each other the root), and
    // drops probes of earlier calls, or of this call from a peer it sends to (that peer is only
    // slow). While stalled it also fails on a message of its call waiting on a receiving end this
    // plan does not read (the peer sends on other lanes, or runs the token lane alone).
    std::vector<int> probePeers;
    std::vector<Connection*> probeSends;
    std::vector<Connection*> probeRecvs;
    // The last (or only) plan of its call (src/core: a collective's data, or the token lane alone
    // for a call of count 0): stalled for a health-check interval, the rank fails on a message of
    // its call waiting on a receiving end this plan does not read (a peer in a call of count 0 runs
    // the token lane alone; a peer that called more sends data where this one reads tokens). Not
    // for an earlier phase of a call (the tokens before a shape's first data, the zero-copy
    // handshake): agreeing peers may already send the next phase's messages.
    bool findStraysWhenStalled = false;
  };
  CallChecks checks;
  // How long the executor may wait with nothing moving (connecting included) before it fails
  // with weftTimeout. A large collective that keeps moving never times out.
  double timeoutS = 1800;
  // Level-2 timelines (WEFT_TRACE_LEVEL=2): told of every step and wait; null otherwise.
  StepTracer* tracer = nullptr;
};

// The connections a plan uses, without duplicates.
std::vector<ConnectionKey> connectionsOf(const ExecPlan& plan);

// Makes the plan's connections (through the provider) and records them in its lane runs. A
// plan that is kept and run again (src/core caches one per collective shape) connects once.
Status connectPlan(ExecPlan* plan, ConnectionProvider* provider);

// Runs a connected plan to completion, or returns the first error (timeout, peer failure,
// abort, protocol mismatch) with a message that names the operation, the step and the peer.
Status runHostPlan(const ExecPlan& plan, ConnectionProvider* provider);

// A plan for one rank's schedule of a collective: one track per lane. The schedule must outlive
// the plan. Buffers are set per call with bindBuffers().
ExecPlan planCollective(const RankSchedule& schedule, size_t elemSize, size_t slotBytes);
// Every run of the plan sends and expects `stamp` (a collective's).
void stampPlan(ExecPlan* plan, uint64_t stamp);
// Adds a track that runs `tokenLane` (callTokenLane, schedule.h) on FIFO lane kCallTokenLane over
// one byte: token[0] is what it sends, token[1] where it receives. The lane and the token must
// outlive the plan; stampPlan stamps its messages like the others.
void addCallTokenTrack(ExecPlan* plan, const Lane* tokenLane, char* token);
// preMul and scalar: a premul-sum's (LaneRun); null for every other op. reduceStream: LaneRun's.
void bindBuffers(ExecPlan* plan, const void* sendbuff, void* recvbuff, void* scratch, ReduceFn reduce,
                 ReduceCopyFn reduceCopy, uint32_t avgDivisor, PreMulFn preMul = nullptr, const void* scalar = nullptr,
                 ReduceCopyFn reduceStream = nullptr);

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_HOST_EXECUTOR_H_
