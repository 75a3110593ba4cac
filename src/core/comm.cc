// Communicator (comm.h): its identity and lifecycle (create and init, split, abort, revoke), and
// fail(), which every call path takes when it fails. The host call path is in host_calls.cc, the
// connections in connections.cc.
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

namespace weft {
namespace core {
namespace {

// What this rank tells the others about itself at init.
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
  recorder_.reset();  // its segment goes
  {
    std::lock_guard<std::mutex> lock(deviceMutex_);
    devicePath_.reset();  // waits for its launches: they use the connections' memory
  }
  connections_.close();
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
  tracer_ = Tracer::fromParams(rank_, nRanks_, commTag_);
  stepTracer_ = tracer_ && tracer_->level() >= 2 ? tracer_.get() : nullptr;
  WEFT_TRY(agreeSettings(config));
  std::vector<bool> peerReadsMe;
  WEFT_TRY(Connections::probeReaders(rank_, peers(), bootstrap_.get(), settings_.timeoutS, &peerReadsMe));
  WEFT_TRY(LivenessWatch::create(rank_, peers(), commTag_, bootstrap_.get(), deadline, &stopWaits_, &liveness_));
  std::vector<std::unique_ptr<Transport>> transports = makeTransports();
  WEFT_TRY(buildCommTopology(bootstrap_.get(), *peerTable_, commTag_, tunerSettings(), deadline, &topology_));
  startConnections(std::move(peerReadsMe), std::move(transports));
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
  // The id every rank of the communicator derives alike, as liveness's (liveness.cc).
  recorder_ = FlightRecorder::create(hashBytes(commTag_.data(), commTag_.size()), rank_, nRanks_);
  WEFT_LOG(kInfo, kInit, "rank %d of %d joined communicator %s%s%s (%d ranks on this host, %zu transports)", rank,
           nRanks, commTag_.c_str(), name_.empty() ? "" : " ", name_.c_str(), sameHost,
           connections_.transportCount());
  return Status::ok();
}

void Communicator::startConnections(std::vector<bool> peerReadsMe, std::vector<std::unique_ptr<Transport>> transports) {
  ConnectionContext context;
  context.rank = rank_;
  context.nRanks = nRanks_;
  context.commTag = commTag_;
  context.peerTable = peerTable_;
  context.topology = topology_;
  context.bootstrap = bootstrap_.get();
  context.liveness = liveness_.get();
  context.aborted = &aborted_;
  context.revoked = &revoked_;
  context.stopWaits = &stopWaits_;
  context.nSlots = static_cast<size_t>(settings_.nSlots);
  context.slotBytes = static_cast<size_t>(settings_.slotBytes);
  context.checkCalls = checkCalls_;
  context.peerReadsMe = std::move(peerReadsMe);
  connections_.start(std::move(context), std::move(transports));
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

Status Communicator::fail(Status status) {
  // A liveness verdict is what made the waits give up (connect sees only "aborted"): report it,
  // unless it is a peer's report that the ranks' calls disagree: then join the exchange that
  // names both calls.
  int silent = -1;
  Status verdict = liveness_ ? liveness_->verdict(&silent) : Status::ok();
  if (!verdict.isOk() && silent >= 0 && (silent & kCulpritCallMismatch) != 0) {
    connections_.noteCallMismatch(silent & ~kCulpritCallMismatch, 0, 0);
  } else if (!verdict.isOk() && (connections_.culprit() < 0 || connections_.culprit() == silent)) {
    connections_.noteCulprit(silent);
    status = std::move(verdict);
  }
  // Tell the peers at once, so that they fail now rather than at their deadline: through the
  // connections, and in the liveness record for those not connected yet or waiting elsewhere.
  // The culprit is this rank itself unless the executor found another; a disagreement between
  // the ranks' calls says so, so that every rank joins the exchange that names both calls.
  const int culprit = connections_.culprit();
  const bool mismatch = connections_.callMismatch();
  const int told = (culprit >= 0 ? culprit : rank_) | (mismatch ? kCulpritCallMismatch : 0);
  if (liveness_) liveness_->publishFailure(opNumber_, false, mismatch ? told : culprit, status.message());
  connections_.signalAbort(told);
  recordFailure(status, !verdict.isOk() || (culprit >= 0 && culprit != rank_) || mismatch);
  if (mismatch) return explainCallMismatch(std::move(status));
  return status;
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
  {
    std::lock_guard<std::mutex> lock(deviceMutex_);
    if (devicePath_) devicePath_->abort();
  }
  // An abort after a failure (the usual reaction to one) must not overwrite the culprit that
  // failure is telling the peers.
  int culprit = connections_.culprit();
  connections_.signalAbort(culprit >= 0 ? culprit : rank_);
}

void Communicator::recordFailure(const Status& status, bool byPeer) {
  if (!recorder_) return;
  recorder_->failed(status.message());
  // The moments someone will ask what every rank was doing (recorder.h): dumps, when
  // WEFT_RECORDER_DIR asks for them.
  if (status.code() == weftTimeout) recorder_->dump(RecorderDumpReason::kTimeout);
  else if (byPeer) recorder_->dump(RecorderDumpReason::kLiveness);
}

Status Communicator::dumpRecorder(std::string* path) {
  if (!recorder_) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: the flight recorder is off (WEFT_RECORDER_CALLS=0, or its segment could not be made at "
                      "init); there is nothing to dump",
                      rank_);
  }
  if (params::RecorderDir().empty()) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: WEFT_RECORDER_DIR is not set; set it to a directory (a shared file system) for the "
                      "flight recorder's dumps",
                      rank_);
  }
  if (!recorder_->dump(RecorderDumpReason::kRequest, path)) {
    return WEFT_ERROR(weftSystemError, "rank %d: could not write the flight recorder into WEFT_RECORDER_DIR=%s (the "
                      "log says why); check that the directory exists and is writable", rank_,
                      params::RecorderDir().c_str());
  }
  return Status::ok();
}

void Communicator::publishRefusal(const Status& refusal, bool collective) {
  // The number the refused call would have taken.
  const uint64_t number = liveNumber(collective ? collSeq_ + 1 : collSeq_, collective);
  if (liveness_) liveness_->publishFailure(number, true, -1, refusal.message());
}

}  // namespace core
}  // namespace weft
