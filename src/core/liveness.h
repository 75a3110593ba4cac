// Liveness: tells a rank that stopped making progress (SIGSTOP, a debugger, hung in the kernel)
// from one that is merely slow, and carries one rank's failure of a call to the peers waiting in
// it, so that neither costs the survivors WEFT_TIMEOUT_S.
//
// Every process with a communicator runs one heartbeat thread (started with its first
// communicator, stopped with its last). Every ~100 ms it bumps a counter in this process's
// liveness record: a small memfd, memory with no name in any file system, so nothing is left in
// /dev/shm after an exit or a crash. Peers on this host open it once through
// /proc/<pid>/fd/<fd> and map it read-only; reading a peer's heartbeat is then a memory load.
// The thread does not depend on the application thread: a rank busy computing keeps beating; a
// stopped process, or one whose heartbeat thread cannot run, does not.
//
// The record also holds, per communicator, this rank's latest failure of a call ("rank r failed
// call #seq", the text, and the rank it blamed). A failure stays there after the communicator is
// destroyed (until another takes its slot) and, the record being memory its peers mapped, after
// the process exits: a rank that failed because of another is only the messenger, and the peers
// that read it late still name the rank it blamed (Connections::explainPeerFailure).
//
// The same thread watches, for every communicator of this process with an operation in flight,
// the peers the operation involves: every rank for a collective (none can finish without all),
// the group's peers for sends and receives. A peer whose heartbeat stood still for
// WEFT_HEARTBEAT_TIMEOUT_S while its process exists, or that published a failure of this call,
// ends the operation: the verdict is kept (healthCheck returns it) and the flag the
// communicator's connect waits poll is raised.
//
// Operations are numbered as every rank numbers them alike (Communicator::liveNumber): 2c for
// collective #c, 2c + 1 for the send/recv groups between collectives #c and #c + 1. Not a count
// of all operations: ranks may group the same sends and receives differently, and a rank whose
// count ran ahead would then read a peer's failure of a later call as one of the call it is in.
//
// Which calls fail: a published failure of call #s (the communicator is then in its error state)
// fails the peers' operations #s and later that involve that rank. A refusal (bad arguments
// outside a group; the refusing rank's communicator stays usable) names the number its next call
// would take and fails only the peers' operation with that number; it is withdrawn as soon as the
// refusing rank starts a call, so a rank that retries with good arguments is not failed by peers
// that have not looked yet (those that did are in their error state, and the retry then fails
// through the connections naming them). Refusals inside a group are not published: the group's
// other calls still run and take that number.
//
// Reach: every peer on this host (its record), and on other hosts the nearest rank before and
// after this one in rank order (their beats come over UDP, liveness_udp.h, and carry the failure
// the rank published, with whom it blamed). Ranks that do not watch the silent or failed rank
// learn the culprit from the aborts of the ranks that failed (Connection::signalAbort carries it;
// a link that closes sends the abort it was asked for first), so every survivor names the same
// rank. When a whole host goes silent, its nearest ranks are the ones
// named (which of them depends on where the survivor sits; all are on that host).
//
// Callers: src/core/comm.cc (Communicator::init, fail), host_calls.cc (runCollective, runP2p),
// connections.cc (Connections::healthCheck, explainPeerFailure) and
// the C API's argument refusals (api_collectives.cc through Communicator::publishRefusal).
#ifndef WEFT_CORE_LIVENESS_H_
#define WEFT_CORE_LIVENESS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/os.h"
#include "base/socket.h"
#include "base/status.h"
#include "transports/transport.h"

namespace weft {
namespace core {

// The bytes a communicator's latest call takes in the liveness record (publishCall).
constexpr size_t kCallRecordBytes = 48;

class Bootstrap;
class BeatSocket;
struct BeatMessage;
struct LivenessRecord;
struct RecordAddress;
struct RemoteFailure;
struct RemoteState;

// One communicator's view of its peers' liveness.
class LivenessWatch {
 public:
  // Collective over the communicator (rank 0 collects every rank's record address and sends each
  // rank those it needs, liveness.cc: exchangeAddresses): tells the peers where this
  // process's record is and maps the records of the peers on this host. `interrupt` is raised
  // when a verdict is reached (it must outlive the watch). A peer whose record cannot be mapped
  // (another pid namespace) is not watched; that is logged, not an error.
  static Status create(int rank, const std::vector<PeerInfo>& peers, const std::string& commTag, Bootstrap* bootstrap,
                       const Deadline& deadline, std::atomic<bool>* interrupt, std::unique_ptr<LivenessWatch>* out);
  ~LivenessWatch();
  LivenessWatch(const LivenessWatch&) = delete;
  LivenessWatch& operator=(const LivenessWatch&) = delete;

  // The operation numbered `seq` starts waiting on `peers` (null: every rank). Withdraws this
  // rank's published refusal: it takes part in calls again.
  void beginOp(uint64_t seq, const std::vector<int>* peers);
  void endOp();

  // Ok, or why the operation in flight must end; *culprit is the rank to blame.
  Status verdict(int* culprit) const;

  // Tells the peers that this rank failed call #seq (refusal: it refused the call's arguments and
  // the communicator stays usable; peers fail only that call) and whom it blames (-1: itself).
  void publishFailure(uint64_t seq, bool refusal, int culprit, const std::string& text);

  // What rank `peer` published about its latest failure on this communicator, and whom it blamed
  // (*culprit, -1: itself); false when nothing. On this host from its record (still there after
  // its exit); on another host as its beats announced it (*text empty), for a peer this rank
  // watches, waiting up to `waitS` for the announcement (it may still be on its way when the
  // peer's closed connection is seen).
  bool publishedFailure(int peer, std::string* text, int* culprit, double waitS = 0) const;

  // Publishes this rank's latest call (`bytes` of a CallRecord, at most kCallRecordBytes) to the
  // peers on this host; publishedCall reads a peer's (false: none, or it kept changing).
  void publishCall(const void* call, size_t bytes);
  bool publishedCall(int peer, void* call, size_t bytes) const;

  // Called by the heartbeat thread every beat: heard(nonce) is what was heard from the process of
  // that nonce on another host (null: nothing yet).
  void tick(uint64_t nowNs, const std::function<const RemoteState*(uint64_t)>& heard);
  // Sends this process's beat, with this rank's published failure, to the ranks on other hosts
  // that watch this rank.
  void sendBeats(BeatSocket& socket, BeatMessage beat) const;

 private:
  // A peer of another process whose beats this rank watches.
  struct Peer {
    int rank = -1;
    const LivenessRecord* record = nullptr;  // on this host: its process's record
    bool remote = false;                     // on another host: beats arrive over UDP
    uint64_t nonce = 0;                      // its process's record nonce (remote)
    uint64_t lastBeats = 0;
    uint64_t lastChangeNs = 0;
  };
  const Peer* watchedPeer(int rank) const;
  // Where rank `peer` publishes its failures and calls: its process's record, this process's own
  // for a rank in this process; null when not readable (another host, or not mapped).
  const LivenessRecord* recordOf(int peer) const;
  LivenessWatch(int rank, const std::vector<PeerInfo>& peers, uint64_t commHash, std::atomic<bool>* interrupt);
  bool involves(int peer) const;
  // Maps the records of the peers on this host (own: this process's record).
  void watchLocal(const std::map<int, RecordAddress>& all, const LivenessRecord* own);
  // Picks the peers on other hosts to watch and the ranks there to send beats to.
  void watchRemote(const std::map<int, RecordAddress>& all);
  // The nearest rank on another host than `from`'s, going in `step` (+1 or -1) direction; -1: none.
  int nearestRemote(int from, int step) const;
  std::vector<uint64_t> remoteNonces() const;
  // A verdict about `peer` for operation #seq, or ok: a published failure (in its record, or
  // announced in its beats: `heard`, null for none), or silence.
  Status judge(int peer, uint64_t seq, uint64_t nowNs, const RemoteState* heard, int* culprit) const;
  Status judgePublished(int peer, uint64_t seq, int* culprit) const;
  Status judgeHeard(int peer, uint64_t seq, const RemoteState& heard, int* culprit) const;
  // The verdict on `peer`, which failed call #failedSeq blaming `blamed` (-1: itself), in its
  // words `text` (its record) or, with none (heard in its beats), saying where it came from.
  Status failedVerdict(int peer, uint64_t seq, uint64_t failedSeq, int blamed, const char* text, int* culprit) const;
  void setVerdict(Status status, int culprit);

  int rank_;
  const std::vector<PeerInfo>& peers_;  // the communicator's table, which outlives the watch
  uint64_t commHash_;
  uint64_t timeoutNs_;
  int slot_ = -1;  // this communicator's failure slot in this process's record (-1: none free)
  std::atomic<bool>* interrupt_;
  // Sorted by rank, only the peers watched (not one per rank: a process of n ranks would hold n
  // squared); the beat fields are touched only by the heartbeat thread after create().
  std::vector<Peer> watched_;
  const LivenessRecord* own_ = nullptr;  // this process's record (ranks in this process)
  std::vector<void*> mappings_;
  std::vector<SocketAddress> subscribers_;  // where this rank's beats go (other hosts)
  // The operation in flight (0: none) and the peers it involves.
  std::atomic<uint64_t> opSeq_{0};
  std::atomic<bool> involvesAll_{false};
  std::unique_ptr<std::atomic<uint8_t>[]> involved_;
  std::vector<int> involvedList_;  // what beginOp set in involved_, cleared by endOp
  // This rank's slot holds a refusal (publishFailure, on the calling thread, is the slot's only
  // writer): beginOp withdraws it without reading the record at every call.
  bool refusalPublished_ = false;
  mutable std::mutex verdictMutex_;
  std::atomic<bool> failed_{false};
  Status verdict_;
  int culprit_ = -1;
};

// Marks an operation in flight on a watch (may be null) for its scope.
class WatchedOp {
 public:
  WatchedOp(LivenessWatch* watch, uint64_t seq, const std::vector<int>* peers) : watch_(watch) {
    if (watch_) watch_->beginOp(seq, peers);
  }
  ~WatchedOp() {
    if (watch_) watch_->endOp();
  }
  WatchedOp(const WatchedOp&) = delete;
  WatchedOp& operator=(const WatchedOp&) = delete;

 private:
  LivenessWatch* watch_;
};

// Test hook: a frozen heartbeat stops beating while the process and its threads keep running, as
// when a host vanishes behind a silent network.
void freezeHeartbeatForTest(bool frozen);
// Test hook: whether this process's heartbeat thread runs.
bool heartbeatRunningForTest();
// Test hook: the heartbeat thread's scheduling policy and priority (false: no thread runs).
bool heartbeatSchedulingForTest(int* policy, int* priority);

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_LIVENESS_H_
