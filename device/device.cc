// What every runtime shares: names for logs, the argument checks of a reduce-copy launch and of
// a lane launch, and the host lane runner's registration. Also linked into the GPU modules, so
// the host and the GPUs reject the same arguments with the same words.
#include "device/device.h"

#include <atomic>
#include <cstdio>

namespace weft {
namespace device {

namespace {
std::atomic<HostLaneRunner> gHostLaneRunner{nullptr};

// One block per lane: CUDA's and HIP's largest grid is far larger, but no schedule needs more
// lanes than this, and a larger count is a corrupted launch.
constexpr int32_t kMaxLanes = 1024;
// The largest block the lane kernels are compiled for (collectives/device/lane_kernels.cu);
// both vendors allow 1024, but hipcc would then spill the registers of more of them.
constexpr int32_t kMaxThreadsPerLane = 512;
}  // namespace

void setHostLaneRunner(HostLaneRunner runner) { gHostLaneRunner.store(runner); }
HostLaneRunner hostLaneRunner() { return gHostLaneRunner.load(); }

std::string formatUuid(const unsigned char (&bytes)[16]) {
  bool any = false;
  for (unsigned char b : bytes) any = any || b != 0;
  if (!any) return "";
  std::string text;
  for (int i = 0; i < 16; ++i) {
    char hex[3];
    std::snprintf(hex, sizeof(hex), "%02x", bytes[i]);
    text += (i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "") + std::string(hex);
  }
  return text;
}

const char* memoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kHost:
      return "host";
    case MemoryKind::kPinnedHost:
      return "pinned host";
    case MemoryKind::kDevice:
      return "device";
    case MemoryKind::kManaged:
      return "managed";
  }
  return "unknown";
}

const char* sharingName(Sharing sharing) {
  return sharing == Sharing::kAgents ? "shared with other agents" : "private to one agent";
}

Status checkReduceCopyArgs(const ReduceCopyArgs& a) {
  if (a.nSrcs < 1 || a.nSrcs > kMaxReduceSrcs) {
    return WEFT_ERROR(weftInvalidArgument, "reduce-copy: nSrcs is %d; it must be 1 to %d", a.nSrcs, kMaxReduceSrcs);
  }
  if (a.nDsts < 1 || a.nDsts > kMaxReduceDsts) {
    return WEFT_ERROR(weftInvalidArgument, "reduce-copy: nDsts is %d; it must be 1 to %d", a.nDsts, kMaxReduceDsts);
  }
  if (static_cast<int>(a.type) < 0 || static_cast<int>(a.type) >= weftNumTypes) {
    return WEFT_ERROR(weftInvalidArgument, "reduce-copy: datatype %d is not a weftDataType_t",
                      static_cast<int>(a.type));
  }
  if (static_cast<int>(a.op) < 0 || static_cast<int>(a.op) >= weftNumOps) {
    return WEFT_ERROR(weftInvalidArgument, "reduce-copy: op %d is not a weftRedOp_t", static_cast<int>(a.op));
  }
  if (a.op == weftAvg && a.divisor == 0) {
    return WEFT_ERROR(weftInvalidArgument, "reduce-copy: weftAvg with divisor 0; pass the rank count");
  }
  if (a.divisor > UINT32_MAX) {
    // The kernels divide by a 32-bit rank count.
    return WEFT_ERROR(weftInvalidArgument, "reduce-copy: divisor %llu is larger than any rank count (2^32 - 1)",
                      static_cast<unsigned long long>(a.divisor));
  }
  if (a.count == 0) return Status::ok();
  for (int i = 0; i < a.nSrcs; ++i) {
    if (a.srcs[i] == nullptr) {
      return WEFT_ERROR(weftInvalidArgument, "reduce-copy: srcs[%d] is null with %llu elements to read", i,
                        static_cast<unsigned long long>(a.count));
    }
  }
  for (int j = 0; j < a.nDsts; ++j) {
    if (a.dsts[j] == nullptr) {
      return WEFT_ERROR(weftInvalidArgument, "reduce-copy: dsts[%d] is null with %llu elements to write", j,
                        static_cast<unsigned long long>(a.count));
    }
  }
  return Status::ok();
}

namespace {

// The launch's own fields: datatype, op, lane count, tables, FIFOs, buffers and block size.
Status checkLaneLaunchFields(const LaneLaunch& l) {
  if (static_cast<int>(l.type) < 0 || static_cast<int>(l.type) >= weftNumTypes) {
    return WEFT_ERROR(weftInvalidArgument, "lane launch: datatype %d is not a weftDataType_t",
                      static_cast<int>(l.type));
  }
  if ((static_cast<int>(l.op) < 0 || static_cast<int>(l.op) >= weftNumOps) && l.op != kLaneOpPreMulSum) {
    return WEFT_ERROR(weftInvalidArgument, "lane launch: op %d is neither a weftRedOp_t nor kLaneOpPreMulSum",
                      static_cast<int>(l.op));
  }
  if (l.op == weftAvg && l.divisor < 1) {
    return WEFT_ERROR(weftInvalidArgument, "lane launch: weftAvg with divisor 0; pass the rank count");
  }
  if (l.nLanes < 1 || l.nLanes > kMaxLanes) {
    return WEFT_ERROR(weftInvalidArgument, "lane launch: nLanes is %d; it must be 1 to %d", l.nLanes, kMaxLanes);
  }
  if (l.lanes == nullptr || l.steps == nullptr) {
    return WEFT_ERROR(weftInvalidArgument, "lane launch: the %s table is null", l.lanes == nullptr ? "lane" : "step");
  }
  if (l.error == nullptr) {
    return WEFT_ERROR(weftInvalidArgument,
                      "lane launch: error is null; it must point to a zeroed LaneError the host and the device reach");
  }
  if (l.nFifos < 0) return WEFT_ERROR(weftInvalidArgument, "lane launch: nFifos is %d", l.nFifos);
  if (l.nFifos > 0 && l.fifos == nullptr) {
    return WEFT_ERROR(weftInvalidArgument, "lane launch: the FIFO table is null with nFifos %d", l.nFifos);
  }
  if (l.nBuffers < 1 || l.nBuffers > kMaxFusedOps) {
    return WEFT_ERROR(weftInvalidArgument, "lane launch: nBuffers is %d; it must be 1 to %d", l.nBuffers, kMaxFusedOps);
  }
  if (l.threadsPerLane < 0 || l.threadsPerLane > kMaxThreadsPerLane) {
    return WEFT_ERROR(weftInvalidArgument,
                      "lane launch: threadsPerLane is %d; it must be 1 to %d, or 0 for the default", l.threadsPerLane,
                      kMaxThreadsPerLane);
  }
  if (l.maxLaneSteps < 0) {
    return WEFT_ERROR(weftInvalidArgument, "lane launch: maxLaneSteps is %d; it must be 0 (unknown) or more",
                      l.maxLaneSteps);
  }
  return Status::ok();
}

// Lane i's descriptor d against the launch l it belongs to.
Status checkLaneDesc(const LaneLaunch& l, int32_t i, const LaneDesc& d) {
  if (l.maxLaneSteps > 0 && d.nSteps > l.maxLaneSteps) {
    return WEFT_ERROR(weftInvalidArgument, "lane launch: lane %d has %d steps, more than maxLaneSteps %d", i, d.nSteps,
                      l.maxLaneSteps);
  }
  if (d.firstStep < 0 || d.nSteps < 0) {
    return WEFT_ERROR(weftInvalidArgument,
                      "lane launch: lane %d has firstStep %d and nSteps %d; neither may be negative", i, d.firstStep,
                      d.nSteps);
  }
  if (d.buffers < 0 || d.buffers >= l.nBuffers) {
    return WEFT_ERROR(weftInvalidArgument, "lane launch: lane %d names buffers %d of a launch with %d", i, d.buffers,
                      l.nBuffers);
  }
  if (d.sliceElems < 1) {
    return WEFT_ERROR(weftInvalidArgument, "lane launch: lane %d has sliceElems %lld; it must be at least 1", i,
                      static_cast<long long>(d.sliceElems));
  }
  if (d.iterations < 0) {
    return WEFT_ERROR(weftInvalidArgument, "lane launch: lane %d has %lld iterations", i,
                      static_cast<long long>(d.iterations));
  }
  return Status::ok();
}

}  // namespace

Status checkLaneLaunch(const LaneLaunch& l) {
  WEFT_TRY(checkLaneLaunchFields(l));
  const LaneDesc* lanes = l.hostLanes != nullptr ? l.hostLanes : l.lanes;  // where the host reads them
  for (int32_t i = 0; i < l.nLanes; ++i) WEFT_TRY(checkLaneDesc(l, i, lanes[i]));
  return Status::ok();
}

}  // namespace device
}  // namespace weft
