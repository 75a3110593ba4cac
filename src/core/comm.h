// The communicator: the ranks' agreement (bootstrap, peers, settings), its identity and
// lifecycle (create, split, shrink, grow, abort, revoke, suspend), and the calls that run
// collectives and point-to-point groups (host_calls.cc on host memory, comm_device.cc on device
// buffers). Its connections to the peers are a Connections (connections.h), which the executors
// see as their coll::ConnectionProvider.
// The C API wraps it in its weftComm (api_internal.h); nothing else in the library sees it.
#ifndef WEFT_CORE_COMM_H_
#define WEFT_CORE_COMM_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/status.h"
#include "collectives/direct_host.h"
#include "collectives/host_executor.h"
#include "collectives/schedule.h"
#include "core/bootstrap.h"
#include "core/comm_topology.h"
#include "core/connections.h"
#include "core/device_path.h"
#include "core/liveness.h"
#include "core/recorder.h"
#include "core/trace.h"
#include "topology/tuner.h"
#include "transports/transport.h"
#include "weft/weft.h"

namespace weft {
namespace core {

// One collective call, validated.
struct CollCall {
  coll::CollKind kind = coll::CollKind::kAllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;
  weftDataType_t type = weftFloat32;
  weftRedOp_t op = weftSum;
  int root = 0;
};

// One send or receive, validated.
struct P2pCall {
  bool send = true;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t bytes = 0;
  int peer = 0;
};

// A reduction op made by weftRedOpCreatePreMulSum (red_ops.cc): sum of every rank's input
// multiplied by a scalar of `type`.
struct PreMulSumOp {
  weftDataType_t type = weftFloat32;
  bool deviceScalar = false;     // weftScalarDevice: read from `device` each time a collective runs
  const void* device = nullptr;  // device memory (weftScalarDevice)
  uint64_t value = 0;            // weftScalarHostImmediate: the scalar's bytes, read at creation
};

// What a rank called, as the ranks exchange it when their calls disagree (call_mismatch.cc):
// plain old data that travels as bytes; every field is checked before it is used.
struct CallRecord {
  uint32_t magic = 0;  // kCallRecordMagic: this rank knows its call
  int32_t rank = -1;
  int32_t kind = 0;  // coll::CollKind; kSendRecv: a send/recv group
  int32_t type = 0;  // weftDataType_t
  int32_t op = 0;    // weftRedOp_t (a premul-sum's value as the communicator gave it)
  int32_t root = 0;
  int32_t algo = 0;  // coll::Algo
  int32_t reserved = 0;
  uint64_t seq = 0;    // the call's sequence number on the communicator
  uint64_t count = 0;  // elements (a send/recv group: its operations)
};
constexpr uint32_t kCallRecordMagic = 0x4c4c4143u;  // "CALL"
static_assert(sizeof(CallRecord) <= kCallRecordBytes, "a CallRecord fits the liveness record's call bytes");

// What the ranks agree on at init (rank 0's values win; a rank with different values warns).
// agreeSettings fills every field from the parameters and the config; the initial values are the
// parameter table's defaults (base/params_table.h: WEFT_BUFFSIZE 1 MiB over WEFT_NSLOTS 4).
struct CommSettings {
  int32_t nSlots = 4;
  int32_t minChannels = 1;
  int32_t maxChannels = 4;
  int32_t timeoutS = 1800;
  int64_t slotBytes = 1 << 18;
  int64_t treeMaxBytes = 65536;
  int64_t doublingMaxBytes = 8192;
  char algo[16] = {0};
  // WEFT_TREE_MAX_BYTES or WEFT_DOUBLING_MAX_BYTES is set: the size rule picks the algorithms
  // (topology/tuner.h), the cost model only the channels.
  int32_t sizeRuleSet = 0;
  // Collectives of at least this many bytes on buffers every rank registered run zero-copy
  // (comm_zero_copy.cc); 0: never (WEFT_ZERO_COPY=0, WEFT_SHM_DISABLE=1).
  int64_t zeroCopyMinBytes = 0;
  int32_t deviceMaxChannels = 32;  // WEFT_DEVICE_MAX_NCHANNELS (collectives/device_executor.h deviceChannels)
  // WEFT_DEVICE_LL_MAX_BYTES: both ends of a device message must choose the same protocol, so
  // every rank takes rank 0's (coll::appendToProgram).
  int64_t deviceLLMaxBytes = 16384;
};

// Fills in the device this thread uses (comm_device.cc): -1 without a GPU runtime, or while a
// HostRankScope of this thread says the rank being made is a host rank.
void describeDevice(PeerInfo* info);

struct SharedSpan;  // host_memory.h
struct WindowSet;   // comm_window.h
class SharedHostBuffer;
struct ZeroCopyOffer;  // comm_zero_copy.cc
// While it lives, communicators this thread makes join as host ranks (no GPU, device -1) even
// where a GPU runtime has a current device: weftCommInitAll's devlist entry -1, and the splits of
// a host rank. Nests; `host` false does nothing.
class HostRankScope {
 public:
  explicit HostRankScope(bool host);
  ~HostRankScope();
  HostRankScope(const HostRankScope&) = delete;
  HostRankScope& operator=(const HostRankScope&) = delete;

 private:
  bool host_;
};

class Communicator final {
 public:
  ~Communicator();

  // Joins communicator `id` (collective over its nRanks callers). When *abortInit becomes true
  // (from another thread) the init in progress fails within ~0.1 s.
  static Status create(const weftUniqueId& id, int nRanks, int rank, const weftConfig_t* config,
                       std::unique_ptr<Communicator>* out, const std::atomic<bool>* abortInit = nullptr);

  int rank() const { return rank_; }
  int nRanks() const { return nRanks_; }
  const std::string& name() const { return name_; }

  // Premul-sum ops (red_ops.cc). Their values are weftNumOps and up, valid on this communicator
  // only: the same sequence of creations gives the same values on every rank.
  Status createPreMulSum(const void* scalar, weftDataType_t type, weftScalarResidence_t residence, weftRedOp_t* out);
  Status destroyRedOp(weftRedOp_t op);
  // Ok when op is a premul-sum op of this communicator, alive, made for `type`; else a message
  // that says which of those it is not (fn: the API call, for the message).
  Status checkRedOp(weftRedOp_t op, weftDataType_t type, const char* fn) const;

  Status runCollective(const CollCall& call) {
    if (tracer_) return runTraced(call);  // WEFT_TRACE_FILE (trace.h)
    return runCollectiveCall(call);
  }
  // weftCommSetTimeout, from any thread: host calls that start afterwards wait at most `seconds`
  // (the device path keeps the patience it was made with).
  void requestTimeout(int32_t seconds) { requestedTimeoutS_.store(seconds); }
  // weftCommRegister / weftCommDeregister: host memory in a registered range may be read and
  // written by the peers directly (comm_zero_copy.cc). Thread-safe.
  void noteRegistration(const void* buff, size_t bytes, bool add);
  // How many collectives this process's ranks ran zero-copy (for tests and logs).
  static uint64_t zeroCopyCallsRun();
  // Enqueues collectives on device buffers (one type and op, at most device::kMaxFusedOps, in
  // call order) as one launch on `stream`; returns once they are queued.
  Status runDevice(const std::vector<CollCall>& calls, void* stream);
  // The global system and routes built at init (comm_topology.h).
  const CommTopology* topology() const { return topology_.get(); }
  // The rings, one per channel (channel c uses ringOrders()[c mod size], reversed on every
  // other pass; global_system.h channelRings); empty when there is one and it is rank order.
  const std::vector<std::vector<int>>& ringOrders() const { return ringOrders_; }
  // The first of them (empty when rank order).
  std::vector<int> ringOrder() const { return ringOrders_.empty() ? std::vector<int>() : ringOrders_[0]; }
  // The GPU this rank uses (-1: none; host memory only).
  int device() const { return peerTable_ ? peers()[static_cast<size_t>(rank_)].device : -1; }
  // Mixed communicator: some ranks on GPUs, others (device -1) on host memory. Every call of
  // every rank then runs the lane program, so that all ranks speak one protocol on the same
  // FIFOs: GPU ranks on their streams, host ranks on CPU threads through the host runtime
  // (hostRunsLanes), their edges to GPU ranks staged through pinned memory (comm_device.cc).
  bool mixed() const { return mixed_; }
  bool hostRunsLanes() const { return mixed_ && device() < 0; }
  // Ranks with (gpu true) or without a GPU, as "0, 1, 3", for messages.
  std::string ranksOnGpus(bool gpu) const;
  // A group's sends and receives on device buffers (one stream), as one launch.
  Status runDeviceP2p(const std::vector<P2pCall>& calls, void* stream);
  // A gather or scatter on device buffers (comm_rooted.cc), as one launch.
  Status runDeviceRooted(const CollCall& call, void* stream);
  // A barrier on `stream`: a one-byte all-reduce on the device.
  Status deviceBarrier(void* stream);
  // A group driving several communicators (group.cc): every one's device work waits for the
  // caller's `streams` before any of them launches, and the streams wait for all of them after
  // (DevicePath::beginGroup / endGroup).
  Status beginDeviceGroup(const std::vector<void*>& streams);
  Status endDeviceGroup();
  // Failures of device work enqueued earlier (ok when none, or no device work yet).
  Status deviceAsyncError();
  // True when the latest device call was refused before it did anything (the communicator is
  // still usable: the API reports it without entering the error state).
  // Reading it clears it.
  bool takeDeviceRefusal() { return devicePath_ && devicePath_->takeRefusal(); }
  // Waits for device work enqueued so far (finalize, destroy).
  Status synchronizeDevice();
  // Runs a group's sends and receives concurrently (calls to one peer in one direction stay in
  // call order).
  Status runP2p(const std::vector<P2pCall>& calls) {
    if (tracer_) return runTraced(calls);
    return runP2pCall(calls);
  }
  Status barrier();
  // Collective over this communicator; *out is null for WEFT_SPLIT_NOCOLOR.
  Status split(int color, int key, const weftConfig_t* config, std::unique_ptr<Communicator>* out);

  // A new communicator of the ranks not in `excluded` (sorted, distinct, without this rank), in
  // their order. Collective over the remaining ranks only: the excluded ones take no part and
  // may be dead (the bootstrap's hub is not used). abortFirst (WEFT_SHRINK_ABORT) stops this
  // communicator's operations first; it is unusable afterwards.
  Status shrink(const std::vector<int>& excluded, const weftConfig_t* config, bool abortFirst,
                std::unique_ptr<Communicator>* out);

  // weftRecvAny (comm_recv_any.cc): waits for the next send any peer makes to this rank, then
  // receives it (`bytes` bytes, checked like a receive from that peer) into recvbuff; *source is
  // the sender. Peers are served in turn, so that every sender is heard.
  Status recvAny(void* recvbuff, size_t bytes, int* source);

  // weftCommRevoke: stops every operation in flight, like abortOperations; the bootstrap stays
  // usable, so that split and shrink still work. From any thread.
  void revoke();
  bool revoked() const { return revoked_.load(); }

  // weftCommGetUniqueId / weftCommGrow (comm_grow.cc). makeGrowId (rank 0 only) makes the id new
  // ranks join with; one is pending at a time. grow is collective over this communicator's ranks
  // (and the new ranks, which join the id with Communicator::create): rank 0 passes the pending
  // id, the others null; ranks keep their numbers in the new communicator of nRanks ranks.
  Status makeGrowId(weftUniqueId* id);
  Status grow(int nRanks, const weftUniqueId* id, const weftConfig_t* config, std::unique_ptr<Communicator>* out);

  // weftCommSuspend / weftCommResume (comm_suspend.cc), collective: suspend waits for every rank,
  // then frees the shared-memory FIFOs, the cached plans and the scratch buffers; resume lets
  // calls run again, which reconnect as they need.
  Status suspend();
  Status resume();
  bool suspended() const { return suspended_.load(); }
  // Bytes this rank holds now that suspend would free (shared-memory FIFOs of its receiving and
  // sending ends, scratch and staging buffers).
  uint64_t suspendableBytes();

  // One-sided windows and signals on host memory (comm_window.cc, comm_window.h). Register and
  // deregister are collective; *id names the window on every rank alike.
  Status registerWindow(void* buff, size_t bytes, uint32_t* id);
  Status deregisterWindow(uint32_t id);
  // Writes `bytes` from src into rank peer's window `id` at `offset` (id UINT32_MAX: no window,
  // a signal only), then (signal) adds one signal on (sigIdx, ctx) at the peer.
  Status putSignal(const void* src, size_t bytes, int peer, uint32_t id, size_t offset, bool signal, int sigIdx,
                   int ctx);
  Status waitSignals(const weftWaitSignalDesc_t* descs, int nDesc);

  // What the cost model predicts a call takes on this communicator, in microseconds, without
  // running or connecting anything (weftGroupSimulateEnd; comm_estimate.cc).
  double estimateUs(const CollCall& call);
  // The schedule this rank runs for `call` on the host executor (algorithm, channels and ring
  // orders as the call gets them; a device call may get fewer channels, see maxDeviceLanes_),
  // for tests and tools that check what the communicator chose.
  coll::RankSchedule scheduleFor(const CollCall& call);
  double estimateP2pUs(const std::vector<P2pCall>& calls) const;

  // From any thread: makes every wait of this communicator fail within milliseconds, and tells
  // the peers through the connections.
  void abort();
  // The same for collectives and device work only: the bootstrap stays usable (for shrink).
  void abortOperations();
  bool aborted() const { return aborted_.load(); }
  // The C API refused this rank's next call (bad arguments; the communicator stays usable):
  // tells the peers, whose matching call then fails at once naming this rank (liveness.h).
  // `collective`: the refused call was a collective (else a send, receive, gather or scatter).
  void publishRefusal(const Status& refusal, bool collective);
  // weftCommDumpRecorder: writes this rank's flight recorder into WEFT_RECORDER_DIR (recorder.h);
  // *path the file. Fails when the recorder is off, the directory unset or not writable.
  Status dumpRecorder(std::string* path);

 private:
  Communicator() = default;
  Status init(const weftUniqueId& id, int nRanks, int rank, const weftConfig_t* config,
              const std::atomic<bool>* abortInit);
  Status agreeSettings(const weftConfig_t* config);
  // Hands connections_ what it reads of this communicator (connections.h: ConnectionContext),
  // once init has agreed on it.
  void startConnections(std::vector<bool> peerReadsMe, std::vector<std::unique_ptr<Transport>> transports);
  // Sets maxDeviceLanes_ from the peers' devices (several ranks may share one GPU).
  void limitDeviceLanes();
  // Enqueues device calls as consecutive launches, each of at most this rank's share of the
  // GPU's resident lane blocks (maxDeviceLanes_) and device::kMaxFusedOps calls; calls with the
  // same units[] value (consecutive) share a launch. fifoLanes as DevicePath::enqueue's.
  Status enqueueDevice(const std::vector<DeviceCall>& calls, const std::vector<int>& fifoLanes,
                       const std::vector<int>& units, weftDataType_t type, const DeviceOp& op, void* stream);
  // A send/recv group's messages in the order of their keys (peer distance, ordinal), split into
  // launches where they do not fit at once.
  Status enqueueP2p(const std::vector<DeviceCall>& calls, const std::vector<int>& lanes,
                    const std::vector<int64_t>& keys, void* stream);
  static int64_t p2pUnitKey(int delta, int ordinal);
  // Sets ringOrders_ and nNodes_ from the peer table and the topology.
  void groupByHost();
  // A collective's shape (kind, algorithm, root, channels, count, element size) -> its
  // schedule and a connected plan, reused by every later call of the same shape.
  struct CachedOp {
    coll::RankSchedule schedule;
    coll::ExecPlan plan;
    size_t scratchBytes = 0;
    // The bytes of the send and receive buffers a call of this shape spans (what the shape fixes
    // is computed once, not at every call).
    size_t sendBytes = 0;
    size_t recvBytes = 0;
    // The latest call of this shape, for error messages.
    CollCall lastCall;
    uint64_t lastSeq = 0;
    const char* algoName = "";
    // With call checks (WEFT_CHECK_CALLS): the call-check token lane (schedule.h,
    // callTokenLane), alone in tokenPlan for the first call of the shape. A rooted collective
    // then has it in plan too (with two ranks plan probes instead, ExecPlan::probePeers); the
    // others run it alone again only when plan moves nothing (count 0). tokensInPlan: the first
    // call is done.
    coll::Lane tokenLane;
    coll::ExecPlan tokenPlan;
    bool tokensInPlan = false;
  };
  using OpKey = std::tuple<int, int, int, int, int64_t, int64_t>;
  CachedOp* cachedOp(const coll::ScheduleParams& params, size_t elemSize);
  const void* stagedSendBuffer(const CollCall& call, size_t bytes);  // the send buffer, or its copy
  // Connects (once) and runs a collective's stamped plan, with the call-check token lane when
  // `withTokens` (host_calls.cc: first call of a shape, calls of count 0, and rooted collectives).
  Status runCachedPlan(CachedOp* cached, bool withTokens, bool rooted = false);
  // Whether rooted host collectives check calls with probes instead of the token lane beside the
  // data: two ranks, neither with a GPU (comm_call_tokens.cc, after runCachedPlan).
  bool probesForTokens() const;
  // The call-check token lane (schedule.h, callTokenLane) alone on the host, carrying `stamp`:
  // before a rooted call on device buffers is enqueued, so that no rank enqueues (and connects
  // the lanes of) a call whose peers named another root; before a gather or scatter whose FIFOs
  // are not all connected yet, so that no rank waits in connect for a FIFO no peer makes.
  Status runCallTokens(uint64_t stamp, const std::string& what);
  // Gather and scatter (comm_rooted.cc): the root exchanges one block with every rank, as direct
  // sends and receives stamped as the collective they are, with the call-check token lane.
  Status runRootedExchange(const CollCall& call);
  Status runRootedPlan(const CollCall& call, coll::ExecPlan* plan, uint64_t stamp, const std::string& what);
  // A gather's or scatter's moves on this rank as sends and receives (the root's own block as a
  // send to itself and a receive from it), for the cost model.
  std::vector<P2pCall> rootedMessages(const CollCall& call) const;
  // Clears the cache now if `n` more shapes might not fit, so that the next n cachedOp() calls
  // evict nothing (their pointers stay valid together).
  void makeRoomForOps(size_t n);
  // The tuner's choice for the call (hostMemory: on host buffers, run by the host executor). The
  // reference is to the memo: valid until the next paramsFor (a copy costs a vector's per call).
  const coll::ScheduleParams& paramsFor(const CollCall& call, size_t elemSize, bool hostMemory = false);
  // The functions a host collective reduces with (host_calls.cc): its op's, or for a premul-sum
  // weftSum's with preMul over the scalar it reads into scalarNow_ (avg: divisor nRanks).
  struct HostReducer {
    coll::ReduceFn reduce = nullptr;
    coll::ReduceCopyFn reduceCopy = nullptr;
    coll::ReduceCopyFn reduceStream = nullptr;
    coll::PreMulFn preMul = nullptr;
    uint32_t divisor = 0;
  };
  Status hostReducer(const CollCall& call, HostReducer* out);
  // Binds the call's buffers, functions and stamp to its shape's cached plan and sets the plan's
  // call checks; the cached op remembers the call for error messages.
  void bindCall(const CollCall& call, CachedOp* cached, const HostReducer& fns, uint64_t stamp, const char* algoName);
  // A send/recv group's plan: one lane per call to another rank (in *lanes, which the plan points
  // into), one track per (peer, direction); sendFrom as sendSources (host_calls.cc) gives it.
  coll::ExecPlan p2pPlan(const std::vector<P2pCall>& calls, const std::vector<const void*>& sendFrom,
                         std::vector<coll::Lane>* lanes);
  Status fail(Status status);
  // fail()'s part for the flight recorder: the active call failed; a dump after a time-out or a
  // failure a peer caused (`byPeer`: a liveness verdict, a peer blamed, calls that disagree).
  void recordFailure(const Status& status, bool byPeer);
  // Zero-copy collectives (comm_zero_copy.cc). Candidate: a call every rank takes to the
  // handshake (a function of the call and of what all ranks agreed at init); runZeroCopy then
  // sets *done when every rank's buffers allowed it and the call ran, else the call takes the
  // FIFOs with the same stamp.
  struct ZeroCopyOps {
    coll::ReduceFn reduce = nullptr;
    coll::ReduceCopyFn reduceCopy = nullptr;
    uint32_t divisor = 0;
  };
  bool zeroCopyCandidate(const CollCall& call, const coll::ScheduleParams& params, size_t elemSize, bool preMul);
  Status runZeroCopy(const CollCall& call, const coll::ScheduleParams& params, size_t elemSize, const ZeroCopyOps& ops,
                     uint64_t stamp, bool* done);
  // The handshake: an all-gather of `bytes` per rank over the FIFOs, stamped from the call's.
  Status gatherOffers(const CollCall& call, const void* mine, void* all, size_t bytes, uint64_t stamp);
  bool isRegistered(const void* p, size_t bytes);
  // Whether rank r's offer lets the others address its buffers for `call`.
  bool qualifies(const CollCall& call, const ZeroCopyOffer& offer, int r) const;
  // Copies the blocks the peers work on into zeroCopyStage_ and offers that instead (mine is
  // left as it was when there is no shared memory for it).
  void stageInput(const CollCall& call, size_t elemSize, size_t bytes, ZeroCopyOffer* mine);
  // Fills direct->send and ->recv: every rank's buffers as this rank addresses them.
  Status addressBuffers(const CollCall& call, const std::vector<ZeroCopyOffer>& offers, size_t sendBytes,
                        size_t recvBytes, coll::DirectCall* direct);
  // Rank `peer`'s buffer of `bytes` bytes in its shared segment `span`, mapped here.
  Status mapPeerBuffer(int peer, const SharedSpan& span, size_t bytes, char** out);
  // fail() for a failure of the device path, which may be a disagreement between the ranks' calls.
  Status failDevice(Status status);
  // The tuner's settings (the agreed ones), for buildCommTopology.
  topo::TunerSettings tunerSettings() const;
  std::string describe(const CollCall& call, const std::string& algo, uint64_t seq) const;
  // Call fingerprints (call_mismatch.cc). The stamp of a collective call, recorded as current_.
  uint64_t stampCollective(const CollCall& call, int algo);
  // Records a send/recv group of nCalls operations (moving `bytes` on this rank) as current_
  // (its stamps are per peer).
  void recordP2pCall(size_t nCalls, uint64_t bytes = 0);
  // The flight recorder (recorder.h; null when off). A host call holds a RecordingScope for its
  // whole run: what it begins is recorded kRunning and ends kDone at the scope's end unless fail()
  // marked it failed; outside one (device calls) a call is recorded kQueued.
  std::unique_ptr<FlightRecorder> recorder_;
  bool recordingHost_ = false;
  class RecordingScope {
   public:
    explicit RecordingScope(Communicator* c) : c_(c), was_(c->recordingHost_) { c->recordingHost_ = true; }
    ~RecordingScope() {
      c_->recordingHost_ = was_;
      if (!was_ && c_->recorder_) c_->recorder_->finish();
    }
    RecordingScope(const RecordingScope&) = delete;
    RecordingScope& operator=(const RecordingScope&) = delete;

   private:
    Communicator* c_;
    bool was_;
  };
  RecordedState recordedStart() const { return recordingHost_ ? RecordedState::kRunning : RecordedState::kQueued; }
  // The stamps of a send and a receive to/from `peer` (the pair's own sequence).
  uint64_t stampP2p(int peer, bool send, size_t bytes);
  // A failure because the ranks' calls disagree: every failing rank exchanges its current_
  // through the bootstrap and returns the same sentence naming both calls.
  Status explainCallMismatch(Status local);
  CallRecord current_;
  // stampCollective's latest fingerprint and the fields it hashed (kind, count, type, op, root,
  // algo): a training loop repeats one call.
  uint64_t fingerprintOf_[6] = {~0ull, 0, 0, 0, 0, 0};
  uint32_t fingerprint_ = 0;
  bool checkCalls_ = true;   // WEFT_CHECK_CALLS
  bool checkSends_ = false;  // WEFT_CHECK_SENDS (with WEFT_CHECK_CALLS): sends wait for their receivers
  // A timeout asked for by weftCommSetTimeout, taken by the thread that runs the next host call
  // (takeRequestedTimeout): cached plans carry the old one and are dropped then. 0: none asked.
  std::atomic<int32_t> requestedTimeoutS_{0};
  void takeRequestedTimeout();
  std::vector<uint32_t> p2pSendSeq_, p2pRecvSeq_;  // per peer

  int rank_ = 0;
  int nRanks_ = 0;
  std::string name_;
  std::string commTag_;
  CommSettings settings_;
  std::unique_ptr<Bootstrap> bootstrap_;
  // Every rank's PeerInfo, shared with this process's other ranks of the communicator.
  std::shared_ptr<const PeerTable> peerTable_;
  const std::vector<PeerInfo>& peers() const { return peerTable_->peers; }
  // The global system and routes (comm_topology.h), shared with this process's other ranks.
  std::shared_ptr<const CommTopology> topology_;
  // The rings per channel, host by host (hosts in order of their lowest rank), so that a ring
  // crosses between hosts once per host; rings and trees follow them. Empty: 0..n-1.
  std::vector<std::vector<int>> ringOrders_;
  int nNodes_ = 1;
  std::mutex registeredMutex_;
  std::vector<std::pair<const char*, size_t>> registered_;  // weftCommRegister's ranges
  int zeroCopyReach_ = -1;  // -1 unknown; 0 ranks on several hosts; 1 one process; 2 one host
  // After a handshake that found a rank not registered, the next zeroCopySkip_ candidates copy
  // without one (every rank counts alike); the gap doubles up to kZeroCopyMaxSkip while it fails.
  int zeroCopySkip_ = 0;
  int zeroCopyGap_ = 0;
  static constexpr int kZeroCopyMaxSkip = 64;
  // Where an all-reduce on buffers that are not registered stages its peers' blocks (WEFT_ZERO_COPY_STAGE).
  std::unique_ptr<SharedHostBuffer> zeroCopyStage_;
  // The FIFOs to the peers and what the executors report through them (the culprit of a
  // failure, a disagreement between the calls): the executors' coll::ConnectionProvider.
  Connections connections_;
  std::map<OpKey, std::unique_ptr<CachedOp>> ops_;
  CachedOp* lastOp_ = nullptr;
  OpKey lastOpKey_;
  // paramsFor's latest answer (its kind, count and root are the call's) and the rest of what it
  // was for: a training loop repeats one call, and the tuner's table is fixed at init.
  struct ParamsMemo {
    bool valid = false;
    size_t elemSize = 0;
    bool hostMemory = false;
    coll::ScheduleParams params;
  };
  ParamsMemo paramsMemo_;
  // The reduce functions of the latest (type, op) runCollective asked for: the table look-ups
  // cost ~75 instructions a call (reduceFunctions).
  struct ReduceMemo {
    bool valid = false;
    weftDataType_t type = weftFloat32;
    weftRedOp_t op = weftSum;
    coll::ReduceFn reduce = nullptr;
    coll::ReduceCopyFn reduceCopy = nullptr;
    coll::ReduceCopyFn reduceStream = nullptr;
  };
  ReduceMemo reduceMemo_;
  // reduceFunction, reduceCopyFunction and reduceStreamFunction (reduce.h) of a built-in op,
  // remembered.
  const ReduceMemo& reduceFunctions(weftDataType_t type, weftRedOp_t op);
  std::vector<char> staging_;   // the send side of an in-place all-to-all
  char callToken_[2] = {0, 0};  // what the call-check token lanes send and receive
  // runCallTokens' lane and plan (made by its first call); gather and scatter run the same lane
  // beside their data once everything is connected.
  coll::Lane tokenLane_;
  coll::ExecPlan tokenPlan_;
  std::string tokenWhat_;
  // Two ranks: the (kind, root) of every gather and scatter that ran here, whose FIFOs therefore
  // exist on both ranks (runRootedPlan).
  std::set<std::pair<int, int>> rootedRun_;
  std::vector<char> scratch_;  // Buf::kScratch of the schedules, grown as needed
  uint64_t seq_ = 0;
  // Collectives only: the number in their stamps and CallRecords. Send/recv groups are left out
  // because ranks may group the same sends and receives differently (so their seq_ differ)
  // while their collectives still agree.
  uint64_t collSeq_ = 0;
  // The number liveness knows this rank's operations by (liveness.h): 2c for collective #c
  // (collSeq_), 2c + 1 for every send/recv group after it. Not seq_: ranks may group the same
  // sends and receives differently, and a peer compares these numbers with its own.
  static uint64_t liveNumber(uint64_t collSeq, bool collective) { return collective ? 2 * collSeq : 2 * collSeq + 1; }
  uint64_t opNumber_ = 0;  // liveNumber of the latest operation this rank started
  uint32_t splits_ = 0;
  uint32_t shrinks_ = 0;
  uint32_t grows_ = 0;
  uint32_t suspends_ = 0;
  // makeGrowId's id, until a grow consumes it.
  bool growIdPending_ = false;
  weftUniqueId growId_{};
  // recvAny: its receiving ends from every peer exist; the peer it looks at first next time.
  bool recvAnyConnected_ = false;
  int recvAnyNext_ = 0;
  std::set<int> recvAnyLeft_;  // peers that had left when recvAny connected: never senders
  // Makes recvAny's receiving ends from every peer that has not left.
  Status connectEverySender();
  // Adds the peers that have left since, with nothing more to receive, to recvAnyLeft_.
  Status leaveOutPeersThatLeft(const Deadline& deadline);
  Status noSenderLeft() const;
  // Waits for the first peer whose next message to this rank is a send (recvAny).
  Status waitForAnySender(int* from);
  std::atomic<bool> revoked_{false};
  std::atomic<bool> suspended_{false};
  // Frees what suspend frees.
  void releaseForSuspend();
  // Windows and signals (comm_window.cc): made by the first registration.
  std::unique_ptr<WindowSet> windows_;
  Status makeSignals(const Deadline& deadline);
  // Ok once a window was registered (fn: the API call, for the message).
  Status checkWindows(const char* fn) const;
  std::atomic<bool> aborted_{false};
  // Raised by abort and by a liveness verdict: the transports' connect waits poll it.
  std::atomic<bool> stopWaits_{false};
  // Watches the peers' heartbeats and published failures (liveness.h).
  std::unique_ptr<LivenessWatch> liveness_;
  // Device executor: created by the first device call (guarded by deviceMutex_ against abort()).
  std::mutex deviceMutex_;
  std::unique_ptr<DevicePath> devicePath_;
  // Timelines (WEFT_TRACE_FILE, trace.h): null when off; stepTracer_ is it at level 2 (the host
  // executor's steps and waits, ExecPlan::tracer). runTraced times a call around the untraced one.
  std::unique_ptr<Tracer> tracer_;
  coll::StepTracer* stepTracer_ = nullptr;
  Status runCollectiveCall(const CollCall& call);
  Status runP2pCall(const std::vector<P2pCall>& calls);
  Status runTraced(const CollCall& call);
  Status runTraced(const std::vector<P2pCall>& calls);
  // A device call enqueued (an instant event on the timeline).
  void traceEnqueue(const CollCall& call, int algo);
  Status ensureDevicePath();
  // A group's sends to this rank itself paired, in order, with its receives from it (their
  // counts and sizes must match).
  Status pairSelfCalls(const std::vector<P2pCall>& calls,
                       std::vector<std::pair<const P2pCall*, const P2pCall*>>* pairs) const;
  int maxDeviceLanes_ = 1;  // lanes (GPU blocks) one rank's launch may use
  bool mixed_ = false;      // mixed(): set at init from the peers' devices
  bool hostRanksOnOneHost_ = false;  // no rank has a GPU, all on one host: set at init beside mixed_

  // Premul-sum ops: value = weftNumOps + (redOpTag() << kRedOpIndexBits) + index.
  static constexpr int kRedOpIndexBits = 20;
  uint32_t redOpTag() const;
  // The live op `op`, or an error naming the call (fn) and why it is not one.
  Status findPreMulSum(weftRedOp_t op, weftDataType_t type, const char* fn, PreMulSumOp* out) const;
  // The scalar of a premul-sum for one run on host buffers, into *bytes (device scalars are read
  // through the GPU runtime now).
  Status readScalar(const PreMulSumOp& op, uint64_t* bytes) const;
  mutable std::mutex redOpsMutex_;
  std::map<uint32_t, PreMulSumOp> redOps_;  // by index
  uint32_t nextRedOpIndex_ = 0;
  bool redOpIndicesWrapped_ = false;  // every index was handed out once: reuse has begun
  uint64_t scalarNow_ = 0;            // the scalar of the host collective running now
};

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_COMM_H_
