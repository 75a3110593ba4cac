// The communicator's device side: which GPU a rank uses, how many of its SMs / CUs a rank's
// launches may take, and the calls that enqueue collectives and send/receive groups on device
// buffers through DevicePath (device_path.h).
#include <algorithm>
#include <cstdio>
#include <map>

#include "base/log.h"
#include "collectives/datatypes.h"
#include "collectives/device_executor.h"
#include "core/comm.h"
#include "device/device.h"
#include "transports/transport.h"

namespace weft {
namespace core {

static_assert(device::kLaneCulpritCallMismatch == static_cast<uint32_t>(kCulpritCallMismatch),
              "the lanes and the transports mark a call mismatch in a culprit with the same bit");

namespace {
thread_local int tHostRankScopes = 0;
}  // namespace

HostRankScope::HostRankScope(bool host) : host_(host) {
  if (host_) ++tHostRankScopes;
}
HostRankScope::~HostRankScope() {
  if (host_) --tHostRankScopes;
}

// The GPU the calling thread uses, when there is a GPU runtime with a device. Its units are the
// lane blocks it holds resident at once: SMs / CUs x the lane kernels' occupancy (1 when the
// runtime does not know it).
void describeDevice(PeerInfo* info) {
  if (tHostRankScopes > 0) return;
  device::Runtime* runtime = device::gpuRuntime();
  int dev = -1;
  if (runtime == nullptr || runtime->deviceCount() == 0 || !runtime->getDevice(&dev).isOk() || dev < 0) return;
  device::DeviceProps props;
  if (!runtime->deviceProps(dev, &props).isOk()) return;
  info->device = dev;
  info->deviceUnits = props.multiProcessors * std::max(1, props.laneBlocksPerUnit);
}

void Communicator::limitDeviceLanes() {
  // Several ranks on one GPU: each rank's launch gets an equal share of the lane blocks the GPU
  // holds resident, so that every rank's lanes are resident at once (a lane waiting for a rank
  // whose blocks cannot start would wait for ever). Every rank computes the same value from the
  // same peer table, so every rank splits a group into the same launches (enqueueDevice).
  int units = 0;
  int share = 1;
  for (const auto& p : peers()) {
    if (p.device < 0) continue;
    units = units == 0 ? p.deviceUnits : std::min(units, p.deviceUnits);
  }
  // Ranks on one GPU, known by bus id / UUID (comm_topology.h), never by ordinal: processes with
  // different CUDA_VISIBLE_DEVICES all call their GPU device 0.
  if (topology_) share = std::max(share, topology_->global.maxRanksPerGpu());
  maxDeviceLanes_ = std::max(1, units / share);
  // Host ranks beside GPU ranks: every call runs the lane program (comm.h, mixed()).
  int onGpus = 0;
  for (const auto& p : peers()) onGpus += p.device >= 0 ? 1 : 0;
  mixed_ = onGpus > 0 && onGpus < nRanks_;
  // Call checks with the token lane on every count-0 call and first call of a shape (host_calls.cc,
  // runCollective): only there, where the lane's FIFOs are shared memory or loopback; across
  // hosts they would add connections the rings do not make (between NICs of other rails).
  hostRanksOnOneHost_ = onGpus == 0 && nNodes_ == 1;
  if (mixed_ && rank_ == 0) {
    WEFT_LOG(kInfo, kInit,
             "mixed communicator: ranks %s on host memory, ranks %s on GPUs; every call runs the lane program (host "
             "ranks on CPU threads), edges between host and GPU ranks staged through pinned memory",
             ranksOnGpus(false).c_str(), ranksOnGpus(true).c_str());
  }
  if (units > 0 && units < share && rank_ == 0) {
    WEFT_LOG(kWarn, kInit,
             "%d ranks share a GPU that holds only %d resident lane blocks: their device collectives need one block "
             "each at least and may wait for each other until the time-out (run fewer ranks per GPU)",
             share, units);
  } else if (units > 0 && share > 1 && rank_ == 0) {
    WEFT_LOG(kInfo, kInit, "up to %d ranks share a GPU: each rank's collectives use at most %d of its %d %s", share,
             maxDeviceLanes_, units, "resident lane blocks");
  }
}

std::string Communicator::ranksOnGpus(bool gpu) const {
  std::string out;
  for (const auto& p : peers()) {
    if ((p.device >= 0) == gpu) out += (out.empty() ? "" : ", ") + std::to_string(p.rank);
  }
  return out;
}

Status Communicator::ensureDevicePath() {
  setLogRank(rank_);
  std::lock_guard<std::mutex> lock(deviceMutex_);
  if (devicePath_) return Status::ok();
  // A host rank of a mixed communicator runs the lane program on CPU threads, over host memory.
  device::Runtime* runtime = hostRunsLanes() ? &device::hostRuntime() : device::gpuRuntime();
  if (!hostRunsLanes() && (runtime == nullptr || device() < 0)) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: device buffers and a stream were given, but this rank has no GPU (%s)", rank_,
                      runtime == nullptr ? "no GPU backend loaded; WEFT_DEBUG=INFO says why"
                                         : "no device was current when the communicator was made");
  }
  WEFT_TRY(DevicePath::create(runtime, hostRunsLanes() ? -1 : device(), rank_, settings_.timeoutS, &devicePath_));
  connections_.setDeviceRuntime(devicePath_->runtime());  // device FIFOs connect through it
  // Every rank marks the same messages LL (the threshold is rank 0's): on FIFOs between GPUs that
  // write each other's memory (p2p) they go as LL lines; on staged ones (the device bridge, host
  // ranks) in slots, at the LL messages' size, as their peers expect.
  devicePath_->setLLMaxBytes(static_cast<uint64_t>(std::max<int64_t>(0, settings_.deviceLLMaxBytes)));
  return Status::ok();
}

Status Communicator::runDevice(const std::vector<CollCall>& calls, void* stream) {
  WEFT_TRY(ensureDevicePath());
  if (calls.empty()) return Status::ok();
  const weftDataType_t type = calls.front().type;
  const weftRedOp_t op = calls.front().op;
  const size_t elemSize = coll::dataTypeSize(type);
  // Schedules come from the communicator's cache (a launch built before needs none of them, but
  // a cache hit costs less than deciding that); no eviction may happen halfway through the batch.
  makeRoomForOps(calls.size());
  std::vector<DeviceCall> dcalls;
  DeviceOp dop;
  dop.op = op;
  if (!coll::isValidRedOp(op)) {
    // A premul-sum (the batch shares it): the lanes read its scalar when they run.
    PreMulSumOp found;
    WEFT_TRY(findPreMulSum(op, type, coll::collName(calls.front().kind), &found));
    dop.op = device::kLaneOpPreMulSum;
    dop.scalar = found.deviceScalar ? found.device : nullptr;
    dop.scalarValue = found.value;
  }
  for (const CollCall& call : calls) {
    ++seq_;
    coll::ScheduleParams params = paramsFor(call, elemSize);
    // The device's own channel count (deviceChannels): scaled with a rank's part of the data, within
    // this rank's share of the GPU's resident blocks.
    const int64_t bytes = params.count * static_cast<int64_t>(elemSize);
    const coll::CollTraits& traits = coll::collTraits(call.kind);
    const int64_t perRank = traits.sendTimesRanks || traits.recvTimesRanks ? bytes : bytes / nRanks_;
    params.nChannels = coll::deviceChannels(perRank, params.nChannels, settings_.deviceMaxChannels,
                                            coll::lanesPerChannel(params), maxDeviceLanes_);
    // An algorithm with more lanes per channel than the share (the tree's four) gives way to the
    // collective's default one, whose single lane per channel always fits.
    if (params.nChannels * coll::lanesPerChannel(params) > maxDeviceLanes_) {
      params.algo = coll::collTraits(call.kind).defaultAlgo;
    }
    const CachedOp* cached = cachedOp(params, elemSize);
    bool reduces = coll::collReduces(call.kind);
    if (reduces && call.op == weftAvg) dop.divisor = static_cast<uint32_t>(nRanks_);
    DeviceCall d;
    d.schedule = &cached->schedule;
    d.shape = {static_cast<int>(call.kind), static_cast<int>(params.algo), params.root, params.nChannels, params.count};
    d.sendbuff = call.sendbuff, d.recvbuff = call.recvbuff;
    d.scratchBytes = static_cast<size_t>(coll::scratchBufferCount(params)) * elemSize;
    d.sendBytes = static_cast<size_t>(coll::sendBufferCount(params)) * elemSize;
    d.stageSend = coll::collStagesSend(call.kind, call.sendbuff, call.recvbuff, static_cast<int64_t>(call.count));
    d.what = describe(call, coll::algoName(params.algo), seq_);
    d.sendStamp = stampCollective(call, static_cast<int>(params.algo));
    traceEnqueue(call, static_cast<int>(params.algo));
    d.recvStamp = checkCalls_ ? d.sendStamp : 0;
    if (checkCalls_ && coll::collRooted(call.kind) && nRanks_ > 1) {
      Status agreed = runCallTokens(d.sendStamp, d.what);
      if (!agreed.isOk()) return fail(std::move(agreed));
    }
    dcalls.push_back(std::move(d));
  }
  opNumber_ = liveNumber(collSeq_, true);
  std::vector<int> units(dcalls.size());
  for (size_t i = 0; i < units.size(); ++i) units[i] = static_cast<int>(i);
  return enqueueDevice(dcalls, {}, units, type, dop, stream);
}

Status Communicator::enqueueDevice(const std::vector<DeviceCall>& calls, const std::vector<int>& fifoLanes,
                                   const std::vector<int>& units, weftDataType_t type, const DeviceOp& op,
                                   void* stream) {
  // Launches in order, each of whole units, as many as fit in this rank's share of the resident
  // blocks (maxDeviceLanes_) and kMaxFusedOps; a unit larger than the share goes alone.
  const size_t budget = static_cast<size_t>(std::max(1, maxDeviceLanes_));
  const size_t maxCalls = static_cast<size_t>(device::kMaxFusedOps);
  size_t begin = 0;
  while (begin < calls.size()) {
    size_t end = begin, lanes = 0;
    while (end < calls.size()) {
      size_t unitEnd = end, unitLanes = 0;
      while (unitEnd < calls.size() && units[unitEnd] == units[end]) unitLanes += calls[unitEnd++].schedule->lanes.size();
      const bool fits = lanes + unitLanes <= budget && unitEnd - begin <= maxCalls;
      if (!fits && end > begin) break;
      lanes += unitLanes;
      end = unitEnd;
      if (!fits) break;
    }
    std::vector<DeviceCall> part(calls.begin() + static_cast<std::ptrdiff_t>(begin),
                                 calls.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<int> partLanes;
    if (!fifoLanes.empty()) {
      partLanes.assign(fifoLanes.begin() + static_cast<std::ptrdiff_t>(begin),
                       fifoLanes.begin() + static_cast<std::ptrdiff_t>(end));
    }
    Status s = devicePath_->enqueue(part, partLanes, type, op, static_cast<size_t>(settings_.slotBytes), stream, &connections_);
    if (!s.isOk()) return devicePath_->refusedLast() ? s : failDevice(std::move(s));
    begin = end;
  }
  return Status::ok();
}

Status Communicator::runCallTokens(uint64_t stamp, const std::string& what) {
  // In a rooted schedule a rank may finish without hearing from every other, and a rank whose
  // peers named another root would wait in connect for a FIFO none of them makes. The token lane
  // is the same on every rank whatever the root: its FIFOs always meet, and its stamps fail every
  // rank of a disagreeing call before any of them enqueues it. On the host, at enqueue: the lanes
  // of a launch cannot wait for a host exchange, and a call that passed it is one every rank made.
  if (tokenPlan_.tracks.empty()) {
    tokenLane_ = coll::callTokenLane(nRanks_, rank_);
    coll::addCallTokenTrack(&tokenPlan_, &tokenLane_, callToken_);
    tokenPlan_.what = [this] { return tokenWhat_; };
    tokenPlan_.timeoutS = settings_.timeoutS;
  }
  tokenWhat_ = what;
  coll::stampPlan(&tokenPlan_, stamp);
  tokenPlan_.checks.stamps = true;
  Status s = tokenPlan_.connected ? Status::ok() : coll::connectPlan(&tokenPlan_, &connections_);
  return s.isOk() ? coll::runHostPlan(tokenPlan_, &connections_) : s;
}

Status Communicator::runDeviceP2p(const std::vector<P2pCall>& calls, void* stream) {
  WEFT_TRY(ensureDevicePath());
  // One lane per message. The i-th message between two ranks in one direction uses device FIFO
  // lane i on both sides, so messages pair up in call order; a send to this rank itself pairs
  // with the next receive from it and becomes a copy lane.
  std::vector<coll::RankSchedule> schedules;
  schedules.reserve(calls.size());
  std::vector<DeviceCall> dcalls;
  std::vector<int> lanes;
  std::vector<int64_t> keys;  // where the message goes in the order of launches (p2pUnitKey)
  std::map<std::pair<int, bool>, int> ordinal;
  ++seq_;
  opNumber_ = liveNumber(collSeq_, false);
  recordP2pCall(calls.size());
  char what[96];
  std::snprintf(what, sizeof(what), "rank %d: send/recv group #%llu (%zu operations)", rank_,
                static_cast<unsigned long long>(seq_), calls.size());
  auto add = [&](coll::Step step, const void* send, void* recv, size_t bytes, int lane, int64_t key) {
    coll::RankSchedule s;
    s.rank = rank_;
    s.lanes.resize(1);
    s.lanes[0].steps.push_back(step);
    s.maxStepCount = static_cast<int64_t>(bytes);
    schedules.push_back(std::move(s));
    DeviceCall d;
    d.schedule = &schedules.back();
    d.shape = {100 + static_cast<int>(step.kind), step.sendPeer, step.recvPeer, static_cast<int64_t>(bytes), lane};
    d.sendbuff = send;
    d.recvbuff = recv;
    d.what = what;
    dcalls.push_back(std::move(d));
    lanes.push_back(lane);
    keys.push_back(key);
  };
  for (const P2pCall& c : calls) {
    if (c.peer == rank_ || c.bytes == 0) continue;
    coll::Step step;
    step.kind = c.send ? coll::StepKind::kSend : coll::StepKind::kRecv;
    (c.send ? step.sendPeer : step.recvPeer) = c.peer;
    step.count = static_cast<int64_t>(c.bytes);
    const int i = ordinal[{c.peer, c.send}]++;
    const int delta = c.send ? (c.peer - rank_ + nRanks_) % nRanks_ : (rank_ - c.peer + nRanks_) % nRanks_;
    add(step, c.sendbuff, c.recvbuff, c.bytes, coll::kDeviceFifoLaneBase + i, p2pUnitKey(delta, i));
    const uint64_t stamp = stampP2p(c.peer, c.send, c.bytes);
    dcalls.back().sendStamp = c.send ? stamp : 0;
    dcalls.back().recvStamp = c.send || !checkCalls_ ? 0 : stamp;
  }
  std::vector<std::pair<const P2pCall*, const P2pCall*>> selfPairs;
  WEFT_TRY(pairSelfCalls(calls, &selfPairs));
  int copies = 0;
  for (const auto& [send, recv] : selfPairs) {
    if (send->bytes == 0) continue;
    coll::Step step;
    step.kind = coll::StepKind::kCopy;
    step.count = static_cast<int64_t>(send->bytes);
    add(step, send->sendbuff, recv->recvbuff, send->bytes, coll::kDeviceFifoLaneBase, p2pUnitKey(0, copies++));
  }
  if (dcalls.empty()) return Status::ok();
  return enqueueP2p(dcalls, lanes, keys, stream);
}

int64_t Communicator::p2pUnitKey(int delta, int ordinal) {
  return static_cast<int64_t>(delta) << 32 | static_cast<uint32_t>(ordinal);
}

Status Communicator::enqueueP2p(const std::vector<DeviceCall>& dcalls, const std::vector<int>& lanes,
                                const std::vector<int64_t>& keys, void* stream) {
  // A group may need more blocks than this rank's share, so it may run as several launches. To
  // stay free of deadlock whatever each rank's calls, messages go in the order of their key (peer
  // distance d, then ordinal i): rank r's i-th send to r + d pairs with that rank's i-th receive
  // from r - d, which has the same key. A rank's messages of one key share a launch; then, when
  // every message of keys below k has ended, every launch holding a message of key k is running
  // on every rank, with all its blocks resident, and its messages of key k end too.
  std::vector<size_t> order(dcalls.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  std::vector<DeviceCall> sorted;
  std::vector<int> sortedLanes, units;
  for (size_t i : order) {
    sorted.push_back(dcalls[i]);
    sortedLanes.push_back(lanes[i]);
    units.push_back(units.empty() || keys[i] != keys[order[units.size() - 1]] ? static_cast<int>(units.size())
                                                                               : units.back());
  }
  return enqueueDevice(sorted, sortedLanes, units, weftUint8, DeviceOp{}, stream);
}

Status Communicator::beginDeviceGroup(const std::vector<void*>& streams) {
  WEFT_TRY(ensureDevicePath());
  return devicePath_->beginGroup(streams);
}

Status Communicator::endDeviceGroup() { return devicePath_ ? devicePath_->endGroup() : Status::ok(); }

Status Communicator::deviceBarrier(void* stream) {
  WEFT_TRY(ensureDevicePath());
  void* bytes = nullptr;
  WEFT_TRY(devicePath_->barrierBytes(&bytes));
  CollCall call;
  call.kind = coll::CollKind::kAllReduce;
  call.sendbuff = bytes;
  call.recvbuff = static_cast<char*>(bytes) + 1;
  call.count = 1;
  call.type = weftUint8;
  call.op = weftSum;
  return runDevice({call}, stream);
}

Status Communicator::deviceAsyncError() {
  if (!devicePath_) return Status::ok();
  Status s = devicePath_->asyncError();
  if (!s.isOk()) return devicePath_->refusedLast() ? s : failDevice(std::move(s));
  return s;
}

Status Communicator::failDevice(Status status) {
  // The lanes know only that a slot was of another call: like the host executor, note it, so
  // that fail() tells the peers so and every rank returns the sentence naming both calls.
  int peer = -1;
  uint64_t theirs = 0;
  if (devicePath_ && devicePath_->callMismatch(&peer, &theirs)) connections_.noteCallMismatch(peer, theirs, 0);
  return fail(std::move(status));
}

Status Communicator::synchronizeDevice() { return devicePath_ ? devicePath_->synchronize() : Status::ok(); }

}  // namespace core
}  // namespace weft
