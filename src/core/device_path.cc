#include "core/device_path.h"

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "collectives/datatypes.h"

namespace weft {
namespace core {
namespace {

constexpr size_t kAlign = 256;
constexpr size_t kMaxCachedLaunches = 256;

size_t alignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Makes `device` current for the scope and restores the caller's device afterwards.
class DeviceScope {
 public:
  DeviceScope(device::Runtime* runtime, int device) : runtime_(runtime) {
    if (device < 0 || !runtime_->getDevice(&previous_).isOk()) return;
    if (previous_ != device) status_ = runtime_->setDevice(device);
  }
  ~DeviceScope() {
    if (previous_ >= 0 && status_.isOk()) (void)runtime_->setDevice(previous_);
  }
  const Status& status() const { return status_; }

 private:
  device::Runtime* runtime_;
  int previous_ = -1;
  Status status_;
};

weftResult_t resultOf(uint32_t code) {
  switch (code) {
    case device::kLaneTimeout:
      return weftTimeout;
    case device::kLaneBadMessage:
    case device::kLaneBadProtocol:
    case device::kLaneBadStamp:
      return weftInvalidUsage;
    default:
      return weftRemoteError;
  }
}

}  // namespace

Status DevicePath::create(device::Runtime* runtime, int device, int rank, double timeoutS,
                          std::unique_ptr<DevicePath>* out) {
  std::unique_ptr<DevicePath> p(new DevicePath());
  p->runtime_ = runtime;
  p->device_ = device;
  p->rank_ = rank;
  p->timeoutNs_ = static_cast<uint64_t>(std::max(1.0, timeoutS) * 1e9);
  DeviceScope scope(runtime, device);
  WEFT_TRY(scope.status());
  // Everything is allocated here, on the communicator's first device call: none of it may
  // happen while the caller's stream is being captured into a graph.
  Status s = runtime->streamCreate(&p->stream_);
  // Events that only order streams: without timing, recording and waiting skip the timestamp.
  if (s.isOk()) s = runtime->eventCreate(&p->userReady_, device::EventKind::kSync);
  if (s.isOk()) s = runtime->eventCreate(&p->done_, device::EventKind::kSync);
  // The host polls the lanes' error record and the lanes poll the host's abort flag.
  if (s.isOk()) s = runtime->allocHostShared(sizeof(device::LaneError) + 64, &p->pinned_);
  if (s.isOk()) s = runtime->allocDevice(2, &p->barrier_);
  // Zeroed on our own stream and waited for: a legacy-stream memset could land after lanes on
  // stream_ first used it.
  if (s.isOk()) s = runtime->memsetAsync(p->barrier_, 0, 2, p->stream_);
  if (s.isOk()) s = runtime->streamSynchronize(p->stream_);
  if (!s.isOk()) {
    return std::move(s).withPrefix("rank " + std::to_string(rank) + ": setting up the device executor on " +
                                   runtime->name() + " device " + std::to_string(device) + ": ");
  }
  std::memset(p->pinned_, 0, sizeof(device::LaneError) + 64);
  p->error_ = new (p->pinned_) device::LaneError();
  p->abortFlag_ = reinterpret_cast<uint32_t*>(static_cast<char*>(p->pinned_) + sizeof(device::LaneError));
  if (device < 0) {
    WEFT_LOG(kInfo, kInit, "rank %d: device executor on CPU threads (a host rank of a mixed communicator)", rank);
  } else {
    WEFT_LOG(kInfo, kInit, "rank %d: device executor on %s device %d", rank, runtime->name(), device);
  }
  *out = std::move(p);
  return Status::ok();
}

DevicePath::~DevicePath() {
  if (launched_) (void)synchronize();
  for (auto& [key, launch] : launches_) {
    if (launch->scratch) (void)runtime_->freeDevice(launch->scratch);
  }
  launches_.clear();
  if (staging_) (void)runtime_->freeDevice(staging_);
  for (void* p : retiredStaging_) (void)runtime_->freeDevice(p);
  if (barrier_) (void)runtime_->freeDevice(barrier_);
  if (done_) (void)runtime_->eventDestroy(done_);
  if (userReady_) (void)runtime_->eventDestroy(userReady_);
  if (stream_) (void)runtime_->streamDestroy(stream_);
  if (pinned_) (void)runtime_->freeHost(pinned_);
}

Status DevicePath::launchFor(const std::vector<DeviceCall>& calls, const std::vector<int>& fifoLanes, size_t elemSize,
                             size_t slotBytes, coll::ConnectionProvider* provider, bool capturing, Launch** out) {
  std::vector<int64_t> key{static_cast<int64_t>(elemSize), static_cast<int64_t>(slotBytes)};
  for (const DeviceCall& c : calls) {
    key.push_back(-1);
    key.insert(key.end(), c.shape.begin(), c.shape.end());
  }
  auto it = launches_.find(key);
  if (it != launches_.end()) {
    *out = it->second.get();
    return Status::ok();
  }
  // Connecting FIFOs and building tables allocate and copy, which capture forbids.
  if (capturing) {
    refused_ = true;
    return WEFT_ERROR(weftInvalidUsage,
                      "%s: the first call of this collective shape on a communicator sets up buffers and cannot "
                      "happen during graph capture; run it once before capturing (PyTorch's warm-up iterations do)",
                      calls.front().what.c_str());
  }
  if (launches_.size() >= kMaxCachedLaunches) WEFT_TRY(evict());
  auto launch = std::make_unique<Launch>();
  size_t scratchBytes = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    const DeviceCall& c = calls[i];
    WEFT_TRY(coll::appendToProgram(&launch->program, *c.schedule, elemSize, slotBytes,
                                   fifoLanes.empty() ? -1 : fifoLanes[i], llMaxBytes_));
    launch->scratchOffsets.push_back(scratchBytes);
    scratchBytes += alignUp(c.scratchBytes);
  }
  if (scratchBytes) WEFT_TRY(runtime_->allocDevice(scratchBytes, &launch->scratch));
  Status s = provider->connect(launch->program.fifos, Deadline::afterSeconds(static_cast<double>(timeoutNs_) / 1e9));
  std::vector<device::FifoView> fifos;
  if (s.isOk()) s = coll::deviceFifosOf(launch->program, provider, &fifos);
  if (s.isOk()) s = coll::DeviceTables::create(runtime_, launch->program, fifos, stream_, &launch->tables);
  if (!s.isOk()) {
    if (launch->scratch) (void)runtime_->freeDevice(launch->scratch);
    return std::move(s).withPrefix(calls.front().what + ": ");
  }
  *out = launch.get();
  launches_.emplace(std::move(key), std::move(launch));
  return Status::ok();
}

Status DevicePath::evict() {
  size_t evictable = 0;
  for (const auto& [key, l] : launches_) evictable += l->captured ? 0 : 1;
  if (evictable == 0) return Status::ok();
  // Tables may be in use by launches in flight: wait for them before dropping any. Graphs
  // replay only captured launches, which stay.
  WEFT_TRY(synchronize());
  for (auto it = launches_.begin(); it != launches_.end();) {
    if (it->second->captured) {
      ++it;
      continue;
    }
    if (it->second.get() == last_) last_ = nullptr;
    if (it->second->scratch) (void)runtime_->freeDevice(it->second->scratch);
    it = launches_.erase(it);
  }
  return Status::ok();
}

Status DevicePath::growStaging(size_t bytes) {
  if (bytes <= stagingBytes_) return Status::ok();
  // Launches in flight may still copy into the old buffer; graphs may copy into it whenever
  // they are replayed, so a captured one is kept until the communicator goes.
  WEFT_TRY(synchronize());
  if (staging_ != nullptr) {
    if (stagingCaptured_) {
      retiredStaging_.push_back(staging_);
    } else {
      (void)runtime_->freeDevice(staging_);
    }
  }
  staging_ = nullptr;
  stagingBytes_ = 0;
  stagingCaptured_ = false;
  WEFT_TRY(runtime_->allocDevice(bytes, &staging_));
  stagingBytes_ = bytes;
  return Status::ok();
}

Status DevicePath::enqueue(const std::vector<DeviceCall>& calls, const std::vector<int>& fifoLanes, weftDataType_t type,
                           const DeviceOp& op, size_t slotBytes, void* stream, coll::ConnectionProvider* provider) {
  refused_ = false;
  if (calls.empty() || calls.size() > static_cast<size_t>(device::kMaxFusedOps)) {
    return WEFT_ERROR(weftInternalError, "rank %d: a device launch of %zu collectives", rank_, calls.size());
  }
  WEFT_TRY(asyncError());
  DeviceScope scope(runtime_, device_);
  WEFT_TRY(scope.status());
  device::Stream user = reinterpret_cast<device::Stream>(stream);
  bool capturing = false;
  WEFT_TRY(runtime_->streamIsCapturing(user, &capturing));
  Launch* launch = nullptr;
  WEFT_TRY(launchFor(calls, fifoLanes, coll::dataTypeSize(type), slotBytes, provider, capturing, &launch));

  WEFT_TRY(stagingFor(calls, capturing));

  // Captured, the launch goes on the caller's stream itself: the graph then orders it after the
  // work captured before the call and before what follows, as the fork and join below does for
  // a launch that runs now. Our stream and events stay out of the capture: an event recorded
  // during a capture cannot be waited for afterwards (synchronize), and our stream would stay
  // captured until the capture ends, swallowing the next launch that should run.
  device::Stream on = capturing ? user : stream_;
  const bool forked = std::find(groupStreams_.begin(), groupStreams_.end(), user) != groupStreams_.end();
  if (!capturing && !forked) {
    WEFT_TRY(runtime_->eventRecord(userReady_, user));
    WEFT_TRY(runtime_->streamWaitEvent(stream_, userReady_));
  }
  device::LaneLaunch l;
  size_t staged = 0;
  WEFT_TRY(laneLaunchFor(calls, *launch, type, op, on, &l, &staged));
  WEFT_TRY(runtime_->launchLanes(l, on));
  if (capturing) {
    // Replays use these tables, scratch and staging buffers for as long as the graph lives.
    launch->captured = true;
    if (staged > 0) stagingCaptured_ = true;
  } else if (forked) {
    groupLaunched_ = true;  // endGroup joins
    launched_ = true;
  } else {
    WEFT_TRY(runtime_->eventRecord(done_, stream_));
    WEFT_TRY(runtime_->streamWaitEvent(user, done_));
    launched_ = true;
  }
  last_ = launch;
  lastWhat_.resize(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) lastWhat_[i] = calls[i].what;
  return Status::ok();
}

Status DevicePath::stagingFor(const std::vector<DeviceCall>& calls, bool capturing) {
  // Sends of in-place all-to-alls go from copies taken on the launch's stream, before the lanes run.
  size_t stageBytes = 0;
  for (const DeviceCall& c : calls) stageBytes += c.stageSend ? alignUp(c.sendBytes) : 0;
  if (stageBytes > stagingBytes_ && capturing) {
    refused_ = true;
    return WEFT_ERROR(weftInvalidUsage,
                      "%s: an in-place all-to-all needs a staging buffer of %zu bytes, larger than the one this "
                      "communicator has, and it cannot be allocated during graph capture; run the call once in place "
                      "before capturing (PyTorch's warm-up iterations do)",
                      calls.front().what.c_str(), stageBytes);
  }
  return growStaging(stageBytes);
}

Status DevicePath::laneLaunchFor(const std::vector<DeviceCall>& calls, const Launch& launch, weftDataType_t type,
                                 const DeviceOp& op, device::Stream on, device::LaneLaunch* out, size_t* staged) {
  device::LaneLaunch& l = *out;
  l = launch.tables->launch();
  l.type = type;
  l.op = op.op;
  l.divisor = op.divisor == 0 ? 1 : op.divisor;
  l.scalar = op.scalar;
  l.scalarValue = op.scalarValue;
  l.abortFlag = abortFlag_;
  l.error = error_;
  l.timeoutNs = timeoutNs_;
  *staged = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    const DeviceCall& c = calls[i];
    const void* send = c.sendbuff;
    if (c.stageSend) {
      char* copy = static_cast<char*>(staging_) + *staged;
      WEFT_TRY(runtime_->copyAsync(copy, c.sendbuff, c.sendBytes, device::CopyKind::kDeviceToDevice, on));
      *staged += alignUp(c.sendBytes);
      send = copy;
    }
    void* scratch = launch.scratch ? static_cast<char*>(launch.scratch) + launch.scratchOffsets[i] : nullptr;
    l.buffers[i] = device::LaneBuffers{send, c.recvbuff, scratch, c.sendStamp, c.recvStamp};
  }
  return Status::ok();
}

Status DevicePath::asyncError() const {
  uint32_t code = __atomic_load_n(&error_->code, __ATOMIC_ACQUIRE);
  if (code == device::kLaneOk) return Status::ok();
  std::string what = "rank " + std::to_string(rank_) + ": a collective";
  std::string detail = "lane " + std::to_string(error_->lane) + " failed (code " + std::to_string(code) + ")";
  if (last_ != nullptr) {
    int lane = error_->lane;
    if (lane >= 0 && static_cast<size_t>(lane) < last_->program.lanes.size()) {
      int op = last_->program.lanes[static_cast<size_t>(lane)].buffers;
      if (op >= 0 && static_cast<size_t>(op) < lastWhat_.size()) what = lastWhat_[static_cast<size_t>(op)];
    }
    detail = coll::describeLaneError(*error_, last_->program);
  }
  std::string hint;
  switch (code) {
    case device::kLaneTimeout:
      hint = "; check that every rank called the same collectives in the same order (WEFT_DEBUG=INFO logs them), "
             "or raise WEFT_TIMEOUT_S";
      break;
    case device::kLaneBadMessage:
    case device::kLaneBadProtocol:
      hint = "; every rank must call the same collectives with the same counts and types";
      break;
    case device::kLaneBadStamp:
      hint = "; every rank must make the same calls in the same order with the same count, type, op and root";
      break;
    case device::kLaneAborted:
      hint = "; destroy the communicator and create a new one";
      break;
    default:
      break;
  }
  return Status::error(resultOf(code), what + " failed on " + runtime_->name() + " device " +
                                           std::to_string(device_) + ": " + detail + hint);
}

bool DevicePath::callMismatch(int* peer, uint64_t* theirs) const {
  const uint32_t code = __atomic_load_n(&error_->code, __ATOMIC_ACQUIRE);
  *peer = -1;
  *theirs = 0;
  if (code == device::kLaneBadStamp || code == device::kLaneBadMessage || code == device::kLaneBadProtocol) {
    const int fifo = error_->fifo;
    if (last_ != nullptr && fifo >= 0 && static_cast<size_t>(fifo) < last_->program.fifos.size()) {
      *peer = last_->program.fifos[static_cast<size_t>(fifo)].peer;
    }
    if (code == device::kLaneBadStamp) *theirs = error_->detail;
    return true;
  }
  const uint64_t culprit = error_->detail >= 2 ? error_->detail - 2 : 0;
  if (code != device::kLanePeerAborted || (culprit & device::kLaneCulpritCallMismatch) == 0) return false;
  *peer = static_cast<int>(culprit & ~uint64_t{device::kLaneCulpritCallMismatch});
  return true;
}

Status DevicePath::barrierBytes(void** out) {
  *out = barrier_;
  return Status::ok();
}

void DevicePath::abort() { __atomic_store_n(abortFlag_, 1u, __ATOMIC_RELEASE); }

Status DevicePath::synchronize() {
  if (!launched_) return Status::ok();
  if (groupLaunched_) WEFT_TRY(runtime_->eventRecord(done_, stream_));  // launches not yet joined
  return runtime_->eventSynchronize(done_);
}

Status DevicePath::beginGroup(const std::vector<void*>& streams) {
  DeviceScope scope(runtime_, device_);
  WEFT_TRY(scope.status());
  for (void* s : streams) {
    device::Stream user = reinterpret_cast<device::Stream>(s);
    bool capturing = false;
    WEFT_TRY(runtime_->streamIsCapturing(user, &capturing));
    if (capturing || std::find(groupStreams_.begin(), groupStreams_.end(), user) != groupStreams_.end()) continue;
    WEFT_TRY(runtime_->eventRecord(userReady_, user));
    WEFT_TRY(runtime_->streamWaitEvent(stream_, userReady_));
    groupStreams_.push_back(user);
  }
  return Status::ok();
}

Status DevicePath::endGroup() {
  std::vector<device::Stream> streams;
  streams.swap(groupStreams_);
  const bool launched = groupLaunched_;
  groupLaunched_ = false;
  if (!launched) return Status::ok();
  DeviceScope scope(runtime_, device_);
  WEFT_TRY(scope.status());
  WEFT_TRY(runtime_->eventRecord(done_, stream_));
  for (device::Stream user : streams) WEFT_TRY(runtime_->streamWaitEvent(user, done_));
  return Status::ok();
}

}  // namespace core
}  // namespace weft
