// Schedules as lane-program tables, their device-visible copies, and lane failures as sentences.
#include "collectives/device_executor.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "base/os.h"

namespace weft {
namespace coll {
namespace {

int fifoIndex(DeviceProgram* program, std::map<ConnectionKey, int>* index, const ConnectionKey& key) {
  auto it = index->find(key);
  if (it != index->end()) return it->second;
  int i = static_cast<int>(program->fifos.size());
  program->fifos.push_back(key);
  index->emplace(key, i);
  return i;
}

static_assert(sizeof(device::LaneStep::kind) == sizeof(encodeStepKind(StepKind::kSend)),
              "LaneStep::kind carries encodeStepKind's byte");

size_t alignUp(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace

Status appendToProgram(DeviceProgram* program, const RankSchedule& schedule, size_t elemSize, size_t slotBytes,
                       int fifoLaneBase, uint64_t llMaxBytes) {
  if (program->nOps >= device::kMaxFusedOps) {
    return WEFT_ERROR(weftInternalError, "device program: a launch holds at most %d collectives (or sends and receives)",
                      device::kMaxFusedOps);
  }
  if (elemSize == 0 || slotBytes < elemSize) {
    return WEFT_ERROR(weftInternalError, "device program: slot of %zu bytes for %zu-byte elements", slotBytes, elemSize);
  }
  if (static_cast<int>(schedule.lanes.size()) > kDeviceFifoLanesPerOp) {
    return WEFT_ERROR(weftInternalError, "device program: %zu lanes, more than the %d a collective may use",
                      schedule.lanes.size(), kDeviceFifoLanesPerOp);
  }
  std::map<ConnectionKey, int> index;
  for (size_t i = 0; i < program->fifos.size(); ++i) index.emplace(program->fifos[i], static_cast<int>(i));
  const int laneBase =
      fifoLaneBase >= 0 ? fifoLaneBase : kDeviceFifoLaneBase + program->nOps * kDeviceFifoLanesPerOp;
  const int64_t sliceElems = static_cast<int64_t>(slotBytes / elemSize);
  const int64_t llSliceElems = std::max<int64_t>(1, static_cast<int64_t>(device::llSliceBytes(slotBytes) / elemSize));
  const int64_t iterations = iterationsFor(schedule.maxStepCount, sliceElems);
  for (size_t l = 0; l < schedule.lanes.size(); ++l) {
    const Lane& lane = schedule.lanes[l];
    device::LaneDesc desc;
    desc.firstStep = static_cast<int32_t>(program->steps.size());
    desc.buffers = program->nOps;
    desc.sliceElems = sliceElems;
    desc.llSliceElems = static_cast<int32_t>(llSliceElems);
    desc.iterations = iterations;
    for (const Step& step : lane.steps) {
      if (step.count == 0) continue;  // moves nothing in any iteration, like its peer's step
      device::LaneStep ls;
      ls.kind = encodeStepKind(step.kind);
      ls.srcBuf = static_cast<uint8_t>(step.srcBuf);
      ls.dstBuf = static_cast<uint8_t>(step.dstBuf);
      ls.final = step.final ? 1 : 0;
      ls.srcOffset = step.srcOffset;
      ls.dstOffset = step.dstOffset;
      ls.count = step.count;
      // Small messages go LL (LaneStep::ll): a choice both ends of each message make alike, from
      // its size and the threshold every rank shares (WEFT_DEVICE_LL_MAX_BYTES).
      const bool moves = stepReceives(step.kind) || stepSends(step.kind);
      ls.ll = moves && static_cast<uint64_t>(step.count) * elemSize <= llMaxBytes ? 1 : 0;
      if (ls.ll != 0) desc.iterations = std::max(desc.iterations, iterationsFor(step.count, llSliceElems));
      if (stepReceives(step.kind)) {
        ls.recvFifo = fifoIndex(program, &index, {step.recvPeer, false, laneBase + static_cast<int>(l)});
      }
      if (stepSends(step.kind)) {
        int sendLane = step.sendLane >= 0 ? step.sendLane : static_cast<int>(l);
        ls.sendFifo = fifoIndex(program, &index, {step.sendPeer, true, laneBase + sendLane});
      }
      program->steps.push_back(ls);
    }
    desc.nSteps = static_cast<int32_t>(program->steps.size()) - desc.firstStep;
    program->lanes.push_back(desc);
  }
  program->nOps++;
  return Status::ok();
}

int deviceChannels(int64_t bytesPerRank, int tuned, int maxChannels, int lanesPerChannel, int blockBudget) {
  const int64_t most = std::clamp<int64_t>(maxChannels, 1, kMaxScheduleChannels);
  const int64_t bySize = std::max<int64_t>(bytesPerRank, 0) / kDeviceBytesPerChannel;
  const int64_t want = std::min<int64_t>(std::max<int64_t>({bySize, tuned, 1}), most);
  const int64_t fit = std::max(1, blockBudget) / std::max(1, lanesPerChannel);
  return static_cast<int>(std::max<int64_t>(1, std::min(want, fit)));
}

Status deviceFifosOf(const DeviceProgram& program, ConnectionProvider* provider, std::vector<device::FifoView>* out) {
  out->assign(program.fifos.size(), device::FifoView{});
  for (size_t i = 0; i < program.fifos.size(); ++i) {
    const ConnectionKey& key = program.fifos[i];
    Connection* conn = provider->get(key);
    if (conn == nullptr || !conn->deviceFifo(&(*out)[i])) {
      return WEFT_ERROR(weftInternalError, "device executor: the connection %s rank %d (lane %d) has no device FIFO",
                        key.send ? "to" : "from", key.peer, key.lane - kDeviceFifoLaneBase);
    }
  }
  return Status::ok();
}

Status DeviceTables::create(device::Runtime* runtime, const DeviceProgram& program,
                            const std::vector<device::FifoView>& fifos, device::Stream stream,
                            std::unique_ptr<DeviceTables>* out) {
  if (fifos.size() != program.fifos.size()) {
    return WEFT_ERROR(weftInternalError, "device tables: %zu FIFO views for %zu FIFOs", fifos.size(),
                      program.fifos.size());
  }
  const size_t lanesBytes = program.lanes.size() * sizeof(device::LaneDesc);
  const size_t stepsOffset = alignUp(lanesBytes, 64);
  const size_t stepsBytes = program.steps.size() * sizeof(device::LaneStep);
  const size_t fifosOffset = alignUp(stepsOffset + stepsBytes, 64);
  const size_t total = std::max<size_t>(fifosOffset + fifos.size() * sizeof(device::FifoView), 64);
  std::unique_ptr<DeviceTables> t(new DeviceTables());
  t->runtime_ = runtime;
  WEFT_TRY(runtime->allocHost(total, &t->host_));
  char* host = static_cast<char*>(t->host_);
  if (lanesBytes) std::memcpy(host, program.lanes.data(), lanesBytes);
  if (stepsBytes) std::memcpy(host + stepsOffset, program.steps.data(), stepsBytes);
  if (!fifos.empty()) std::memcpy(host + fifosOffset, fifos.data(), fifos.size() * sizeof(device::FifoView));
  WEFT_TRY(runtime->allocDevice(total, &t->device_));
  // Asynchronous, from pinned memory: no device-wide synchronization while lanes may run.
  WEFT_TRY(runtime->copyAsync(t->device_, host, total, device::CopyKind::kHostToDevice, stream));
  const char* base = static_cast<const char*>(t->device_);
  int32_t most = 0;
  for (const device::LaneDesc& d : program.lanes) most = std::max(most, d.nSteps);
  t->base_.nLanes = static_cast<int32_t>(program.lanes.size());
  t->base_.maxLaneSteps = most;
  t->base_.lanes = reinterpret_cast<const device::LaneDesc*>(base);
  t->base_.hostLanes = reinterpret_cast<const device::LaneDesc*>(host);
  t->base_.steps = reinterpret_cast<const device::LaneStep*>(base + stepsOffset);
  t->base_.fifos = reinterpret_cast<const device::FifoView*>(base + fifosOffset);
  t->base_.nFifos = static_cast<int32_t>(fifos.size());
  t->base_.nBuffers = program.nOps;
  *out = std::move(t);
  return Status::ok();
}

DeviceTables::~DeviceTables() {
  // The device path destroys tables only when no launch that reads them can run (evict and
  // destroy synchronize first).
  if (device_ != nullptr) (void)runtime_->freeDevice(device_);
  if (host_ != nullptr) (void)runtime_->freeHost(host_);
}

device::LaneLaunch DeviceTables::launch() const { return base_; }

std::string describeLaneError(const device::LaneError& error, const DeviceProgram& program) {
  const ConnectionKey* key = error.fifo >= 0 && static_cast<size_t>(error.fifo) < program.fifos.size()
                                 ? &program.fifos[static_cast<size_t>(error.fifo)]
                                 : nullptr;
  std::string where = "lane " + std::to_string(error.lane) + ", step " + std::to_string(error.step) + ", slice " +
                      std::to_string(error.iteration);
  std::string peer = key ? "rank " + std::to_string(key->peer) : std::string("a peer");
  switch (error.code) {
    case device::kLaneOk:
      return "no failure";
    case device::kLaneTimeout:
      return where + ": " +
             (key && key->send ? "no free slot towards " + peer + " (it stopped reading)"
                               : "no data from " + peer) +
             " within the time-out";
    case device::kLaneAborted:
      return where + ": the communicator was aborted";
    case device::kLanePeerAborted: {
      std::string text = where + ": " + peer + " reported a failure";
      const uint64_t culprit = error.detail >= 2 ? error.detail - 2 : 0;
      if (error.detail >= 2 && (culprit & device::kLaneCulpritCallMismatch) != 0) {
        text += " (the ranks made different calls, involving rank " +
                std::to_string(culprit & ~uint64_t{device::kLaneCulpritCallMismatch}) + ")";
      } else if (error.detail >= 2) {
        text += " caused by rank " + std::to_string(culprit);
      }
      return text;
    }
    case device::kLaneBadMessage:
      return where + ": a message of " + std::to_string(error.detail) + " bytes from " + peer +
             " where the schedule expects another size (the ranks called different collectives or counts)";
    case device::kLaneBadProtocol:
      return where + ": a message from " + peer + (error.detail != 0 ? " in low-latency lines" : " in a slot") +
             " where the schedule expects " + (error.detail != 0 ? "a slot" : "low-latency lines") +
             ", so of another size (the ranks called different collectives or counts, or their "
             "WEFT_DEVICE_LL_MAX_BYTES differ)";
    case device::kLaneBadStamp:
      return where + ": a message of another call from " + peer + " (its call #" +
             std::to_string((error.detail >> 32) & 0x7fffffffu) +
             "): the ranks made different calls";
    case device::kLaneSiblingFailed:
      return where + ": another lane failed";
    default:
      return where + ": unknown lane failure " + std::to_string(error.code);
  }
}

}  // namespace coll
}  // namespace weft
