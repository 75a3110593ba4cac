// Connections (connections.h): a communicator's FIFOs to its peers, made on demand through the
// transports, and what the executors learn through them about a failure.
#include "core/connections.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "base/log.h"
#include "base/os.h"
#include "base/params.h"
#include "collectives/device_executor.h"
#include "collectives/schedule.h"
#include "core/bootstrap_tags.h"
#include "core/host_memory.h"
#include "transports/bridge/device_bridge.h"

namespace weft {
namespace core {
namespace {

// How long a failure blamed on a watched rank on another host waits for that rank's beats to
// say whom it blamed itself (explainPeerFailure): the heartbeat thread takes beats in every
// 100 ms, and the rank sent its announcement before its connections closed.
constexpr double kMessengerWaitS = 0.25;

// Rank 0 collects every rank's row of "can read" and hands each rank its column: who can read
// it. Only rank 0 holds the whole matrix (an all-gather put it in every rank).
Status exchangeReaders(int rank, Bootstrap* bootstrap, double timeoutS, const std::vector<uint8_t>& canRead,
                       std::vector<bool>* peerReadsMe) {
  const size_t n = canRead.size();
  const Deadline deadline = Deadline::afterSeconds(timeoutS);
  std::vector<uint8_t> column(n);
  if (rank != 0) {
    WEFT_TRY(bootstrap->send(0, bootstrap_tags::kReadersRow, canRead.data(), n, deadline));
    WEFT_TRY(bootstrap->recv(0, bootstrap_tags::kReadersColumn, column.data(), n, deadline));
  } else {
    std::vector<uint8_t> matrix(n * n);
    std::copy(canRead.begin(), canRead.end(), matrix.begin());
    for (size_t p = 1; p < n; ++p) {
      WEFT_TRY(bootstrap->recv(static_cast<int>(p), bootstrap_tags::kReadersRow, &matrix[p * n], n, deadline));
    }
    for (size_t p = n; p-- > 0;) {
      for (size_t r = 0; r < n; ++r) column[r] = matrix[r * n + p];
      if (p > 0) {
        WEFT_TRY(bootstrap->send(static_cast<int>(p), bootstrap_tags::kReadersColumn, column.data(), n, deadline));
      }
    }
  }
  peerReadsMe->assign(n, false);
  for (size_t p = 0; p < n; ++p) (*peerReadsMe)[p] = column[p] != 0;
  return Status::ok();
}

}  // namespace

void Connections::start(ConnectionContext context, std::vector<std::unique_ptr<Transport>> transports) {
  context_ = std::move(context);
  transports_ = std::move(transports);
}

Status Connections::probeReaders(int rank, const std::vector<PeerInfo>& peers, Bootstrap* bootstrap, double timeoutS,
                                 std::vector<bool>* peerReadsMe) {
  std::vector<uint8_t> canRead(peers.size(), 0);
  const PeerInfo& self = peers[static_cast<size_t>(rank)];
  int readable = 0;
  for (const auto& peer : peers) {
    // WEFT_SHM_DISABLE forbids every form of shared memory, direct reads included.
    if (!params::SingleCopy() || params::ShmDisable() || peer.rank == rank || peer.hostHash != self.hostHash) {
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
               rank, peer.rank, ok ? "probe mismatch" : errnoText(err).c_str());
    }
  }
  WEFT_TRY(exchangeReaders(rank, bootstrap, timeoutS, canRead, peerReadsMe));
  WEFT_LOG(kInfo, kShm, "rank %d reads %d peers' memory directly (single-copy)", rank, readable);
  return Status::ok();
}

Status Connections::readPeerMemory(int peer, uint64_t address, void* dst, size_t bytes) {
  const PeerInfo& p = peers()[static_cast<size_t>(peer)];
  int pid = p.processHash == peers()[static_cast<size_t>(context_.rank)].processHash ? getpid() : p.pid;
  int err = 0;
  if (readProcessMemory(pid, address, dst, bytes, &err)) return Status::ok();
  return WEFT_ERROR(weftRemoteError,
                    "rank %d: reading %zu bytes from rank %d (pid %d) directly failed: %s; the rank may have exited. "
                    "WEFT_SINGLE_COPY=0 copies through shared memory instead",
                    context_.rank, bytes, peer, p.pid, errnoText(err).c_str());
}

// With call checks, a rank that sends to a peer on a host lane also makes the receiving end from
// it there: a peer that made another call (thinks itself the root of a broadcast too, say) then
// finds a FIFO for what it sends instead of waiting for one until the time-out, and its message
// shows the disagreement (host_executor.cc, waitForConsumers).
Status Connections::connect(const std::vector<coll::ConnectionKey>& planKeys, const Deadline& deadline) {
  std::vector<coll::ConnectionKey> keys = planKeys;
  if (context_.checkCalls) {
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
        std::lock_guard<std::mutex> lock(mutex_);
        if (conns_.count(key)) continue;
      }
      if (context_.aborted->load()) {
        return WEFT_ERROR(weftInvalidUsage, "rank %d: the communicator was aborted", context_.rank);
      }
      WEFT_TRY(connectOne(key, phase, deadline));
    }
  }
  return Status::ok();
}

ConnectRequest Connections::requestFor(const coll::ConnectionKey& key, const PeerInfo& peer, bool bridged,
                                       const Deadline& deadline) const {
  const int rank = context_.rank;
  const CommTopology* topology = context_.topology.get();
  ConnectRequest req;
  req.commTag = context_.commTag;
  req.self = peers()[static_cast<size_t>(rank)];
  req.peer = peer;
  req.lane = key.lane;
  req.nSlots = coll::isCallCheckLane(key.lane) ? kCallTokenSlots : context_.nSlots;
  req.slotBytes = coll::isCallCheckLane(key.lane) ? kCallTokenSlotBytes : context_.slotBytes;
  req.numaNode = topology ? topology->global.numaOf(rank) : -1;
  req.nic = topology ? topology->global.place(rank).nicName : "";
  req.deadline = deadline;
  req.exchange = context_.bootstrap;
  req.abort = context_.stopWaits;
  if (key.lane >= coll::kDeviceFifoLaneBase && !bridged) req.runtime = deviceRuntime_.load();
  return req;
}

Status Connections::connectOne(const coll::ConnectionKey& key, int phase, const Deadline& deadline) {
  const bool forDevice = key.lane >= coll::kDeviceFifoLaneBase;
  PeerInfo peer = peers()[static_cast<size_t>(key.peer)];
  Transport* transport = nullptr;
  bool bridged = false;
  WEFT_TRY(pickTransport(key, &peer, &transport, &bridged));
  const ConnectRequest req = requestFor(key, peer, bridged, deadline);
  if (phase == 0) {
    WEFT_TRY(transport->prepareSend(req));
    return Status::ok();
  }
  std::unique_ptr<Connection> conn;
  WEFT_TRY(key.send ? transport->connectSend(req, &conn) : transport->connectRecv(req, &conn));
  if (bridged) {
    std::unique_ptr<Connection> host = std::move(conn);
    WEFT_TRY(bridgeProxy());
    WEFT_TRY(bridge::makeDeviceBridge(std::move(host), key.send, deviceRuntime_.load(), req.nSlots, req.slotBytes,
                                      key.peer, bridgeProxy_.get(), &conn));
  }
  WEFT_LOG(kInfo, kInit, "rank %d %s rank %d (host %s) %slane %d via %s%s", context_.rank, key.send ? "->" : "<-",
           key.peer, peer.hostName, forDevice ? "device " : "",
           forDevice ? key.lane - coll::kDeviceFifoLaneBase : key.lane, transport->name(),
           bridged ? " (staged through pinned host memory)" : "");
  std::lock_guard<std::mutex> lock(mutex_);
  if (context_.aborted->load()) conn->signalAbort(context_.rank);
  conns_[key] = std::move(conn);
  if (!forDevice && transport->reconnectsWithoutExchange()) releasable_.insert(key);
  return Status::ok();
}

// A device FIFO goes over a device transport (GPU peer memory) when one reaches the peer and the
// route allows it (comm_topology.h: it stages pairs whose processes do not both see both GPUs);
// otherwise over the pair's host transport, bridged through pinned memory. For device
// transports *peer's device becomes this process's ordinal of the peer's GPU.
Status Connections::pickTransport(const coll::ConnectionKey& key, PeerInfo* peer, Transport** transport,
                                  bool* bridged) {
  const int rank = context_.rank;
  const CommTopology* topology = context_.topology.get();
  const bool forDevice = key.lane >= coll::kDeviceFifoLaneBase;
  for (int pass = 0; pass < 2 && *transport == nullptr; ++pass) {
    const bool wantDevices = forDevice && pass == 0 && !(topology && topology->staged(rank, key.peer));
    if (pass == 1 && !forDevice) break;
    PeerInfo asked = *peer;
    if (wantDevices) asked.device = peerOrdinalHere(key.peer);
    for (auto& t : transports_) {
      if (t->forDevices() == wantDevices && t->canConnect(peers()[static_cast<size_t>(rank)], asked)) {
        *transport = t.get();
        *bridged = forDevice && !wantDevices;
        *peer = asked;
        return Status::ok();
      }
    }
  }
  std::string names;
  for (auto& t : transports_) names += std::string(names.empty() ? "" : ", ") + t->name();
  const PeerInfo& self = peers()[static_cast<size_t>(rank)];
  return WEFT_ERROR(
      weftSystemError,
      "rank %d (host %s): no transport reaches rank %d (host %s): %s, and WEFT_NET=%s selects a network "
      "transport this build lacks (built: %s). Set WEFT_NET=socket, which works on any IP network",
      rank, self.hostName, key.peer, peer->hostName,
      peer->hostHash == self.hostHash ? "WEFT_SHM_DISABLE=1 forbids shared memory" : "it is on another host",
      params::Net().c_str(), names.c_str());
}

int Connections::peerOrdinalHere(int peer) const {
  const int rank = context_.rank;
  const int theirs = peers()[static_cast<size_t>(peer)].device;
  if (!context_.topology || peer == rank) return theirs;
  const topo::GlobalSystem& g = context_.topology->global;
  if (g.sameGpu(rank, peer)) return peers()[static_cast<size_t>(rank)].device;
  // A GPU this process does not see has no ordinal here; its route is staged (comm_topology.h).
  const int here = topo::ordinalSeenBy(g, rank, peer);
  return here >= 0 ? here : theirs;
}

Status Connections::bridgeProxy() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bridgeProxy_) return Status::ok();
  auto proxy = std::make_unique<net::Proxy>("weft-bridge");
  WEFT_TRY(proxy->start());
  bridgeProxy_ = std::move(proxy);
  return Status::ok();
}

Connection* Connections::get(const coll::ConnectionKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = conns_.find(key);
  return it == conns_.end() ? nullptr : it->second.get();
}

void Connections::signalAbort(int told) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [key, conn] : conns_) conn->signalAbort(told);
}

void Connections::releaseForSuspend() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const coll::ConnectionKey& key : releasable_) conns_.erase(key);
  releasable_.clear();
}

uint64_t Connections::releasableBytes() {
  uint64_t bytes = 0;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const coll::ConnectionKey& key : releasable_) {
    const bool token = coll::isCallCheckLane(key.lane);
    bytes += token ? kCallTokenSlots * kCallTokenSlotBytes
                   : static_cast<uint64_t>(context_.nSlots) * static_cast<uint64_t>(context_.slotBytes);
  }
  return bytes;
}

void Connections::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  releasable_.clear();
  conns_.clear();  // bridges leave the proxy before it stops
  bridgeProxy_.reset();
}

void Connections::collectiveReceivers(std::vector<std::pair<int, Connection*>>* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [key, conn] : conns_) {
    // Probes are not messages of a call's data (host_diagnosis.cc, CallChecker::readProbes, reads them on their own).
    if (!key.send && key.lane < coll::kDeviceFifoLaneBase && key.lane != coll::kCallProbeLane) {
      out->emplace_back(key.peer, conn.get());
    }
  }
}

Status Connections::healthCheck() {
  const int rank = context_.rank;
  if (context_.revoked && context_.revoked->load()) {
    return WEFT_ERROR(weftRemoteError,
                      "rank %d: the communicator was revoked (weftCommRevoke) while this call ran; destroy it, or "
                      "make a new one from it with weftCommShrink or weftCommSplit",
                      rank);
  }
  if (context_.aborted && context_.aborted->load()) {
    return WEFT_ERROR(weftRemoteError, "rank %d: the communicator was aborted (weftCommAbort)", rank);
  }
  int culprit = -1;
  Status verdict = context_.liveness ? context_.liveness->verdict(&culprit) : Status::ok();
  if (!verdict.isOk()) noteCulprit(culprit);
  return verdict;
}

void Connections::noteCulprit(int rank) {
  int none = -1;
  if (rank >= 0 && rank < context_.nRanks && rank != context_.rank) culprit_.compare_exchange_strong(none, rank);
}

void Connections::noteCallMismatch(int peer, uint64_t theirs, uint64_t ours) {
  (void)ours;
  if (theirs != 0) mismatchTheirs_.store(theirs);
  mismatch_.store(true);
  noteCulprit(peer);
}

Status Connections::explainPeerFailure(Status failure) {
  // A neighbour may only report that it failed; the rank that caused it is often further
  // along the ring. When the culprit is known and lived on this host, say whether it is gone;
  // otherwise name any rank on this host whose process is gone (ranks that exit after failing
  // themselves are not named when the culprit is known).
  const PeerInfo& self = peers()[static_cast<size_t>(context_.rank)];
  int culprit = culprit_.load();
  // The culprit's own words, when it published them (same host; still there after its exit) and
  // they are not here yet. A culprit that published a failure blaming another rank was only the
  // messenger, however its failure reached this rank (its exit or closed connection may come
  // before its abort): the rank it blamed is the culprit, as in every other rank's message. On
  // another host its beats announce it, which may arrive a little after its connection closed.
  std::string said;
  int blamed = -1;
  const LivenessWatch* liveness = context_.liveness;
  if (liveness && culprit >= 0 && liveness->publishedFailure(culprit, &said, &blamed, kMessengerWaitS)) {
    const bool messenger = blamed >= 0 && blamed < context_.nRanks && blamed != culprit && blamed != context_.rank;
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
