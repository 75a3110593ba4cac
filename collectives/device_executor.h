// The device executor (../shared/DESIGN.md, "Data flow of one call", step 4): the same schedules
// the host executor runs, turned into the lane program's tables (device/kernel_api.h) and run as
// one GPU block per lane (collectives/device/kernels.cu) through FIFOs whose slots and counters
// both ranks' devices reach (Connection::deviceFifo). The call that enqueues it returns at once;
// failures land in a LaneError that src/core reads later.
//
// The same tables run on host threads (runLanesOnHost, lane_program.cuh compiled by the host
// compiler): the host runtime's launchLanes does that, and so do the CPU-only tests, which is how
// the device executor's protocol is checked on a machine without a GPU.
#ifndef WEFT_COLLECTIVES_DEVICE_EXECUTOR_H_
#define WEFT_COLLECTIVES_DEVICE_EXECUTOR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "collectives/host_executor.h"
#include "collectives/schedule.h"
#include "device/device.h"
#include "device/kernel_api.h"

namespace weft {
namespace coll {

// Device FIFOs are connections of their own: FIFO lane kDeviceFifoLaneBase + k is lane k of the
// device executor, never shared with the host executor's lane k (each side keeps its own counts).
constexpr int kDeviceFifoLaneBase = 1 << 16;
// The FIFO lanes one collective of a fused launch may use; the i-th collective of a launch uses
// kDeviceFifoLaneBase + i * kDeviceFifoLanesPerOp + lane, so collectives that run side by side
// never share a FIFO.
constexpr int kDeviceFifoLanesPerOp = 4 * kMaxScheduleChannels;

// Channels of a collective on device buffers: the device's own default, reasoned from NCCL's
// (a block of 512 threads moves 64 bytes each per step before another block pays off, and
// NCCL runs up to 32 channels on a 132-SM H100): one channel per kDeviceBytesPerChannel of the
// bytes one rank's part of the data holds (bytesPerRank), at least the tuner's choice (tuned),
// at most maxChannels (WEFT_DEVICE_MAX_NCHANNELS) and kMaxScheduleChannels, and at most as many
// as the rank's share of resident blocks (blockBudget) holds at lanesPerChannel lanes each; at
// least 1. Every rank computes it from values all ranks share, so all pick the same count.
constexpr int64_t kDeviceBytesPerChannel = int64_t{32} << 10;
int deviceChannels(int64_t bytesPerRank, int tuned, int maxChannels, int lanesPerChannel, int blockBudget);

// One rank's lanes of one launch: the tables the lane program reads, with the connection each
// FIFO index stands for.
struct DeviceProgram {
  std::vector<device::LaneDesc> lanes;
  std::vector<device::LaneStep> steps;
  std::vector<ConnectionKey> fifos;  // FifoView index -> connection
  int nOps = 0;                      // collectives appended; lane.buffers is the op's index
};

// Appends `schedule` as the next collective of the launch (at most device::kMaxFusedOps):
// slices of at most slotBytes, FIFO lanes as above. Fails on a full launch or a schedule the
// tables cannot hold.
// fifoLaneBase >= 0 places the schedule's lane k on FIFO lane fifoLaneBase + k instead (sends and
// receives: the i-th message between two ranks in one direction uses lane base + i on both).
// Steps whose messages hold at most llMaxBytes (WEFT_DEVICE_LL_MAX_BYTES; 0: none) are marked
// LL (LaneStep::ll): slices of at most device::llSliceBytes(slotBytes), sent as low-latency lines
// on FIFOs with an LL region.
Status appendToProgram(DeviceProgram* program, const RankSchedule& schedule, size_t elemSize, size_t slotBytes,
                       int fifoLaneBase = -1, uint64_t llMaxBytes = 0);

// The FifoViews of a program's connections, from the provider (which must have connected them
// as device connections): an error names a connection that has no device FIFO.
Status deviceFifosOf(const DeviceProgram& program, ConnectionProvider* provider,
                     std::vector<device::FifoView>* out);

// A program's tables in device memory, kept for as long as launches or captured graphs may use
// them: built once per cached plan in pinned host memory (which stays, as the runtime's host
// copy of the lane table, LaneLaunch::hostLanes) and copied to the device on `stream`, the
// stream the plan's first launch runs on, so no launch reads them across PCIe at every step and
// poll, and no call copies them again. A launch on another stream must come after that one (the
// device path's do: a captured launch follows a launch of its shape on the path's stream).
class DeviceTables {
 public:
  static Status create(device::Runtime* runtime, const DeviceProgram& program,
                       const std::vector<device::FifoView>& fifos, device::Stream stream,
                       std::unique_ptr<DeviceTables>* out);
  ~DeviceTables();
  DeviceTables(const DeviceTables&) = delete;
  DeviceTables& operator=(const DeviceTables&) = delete;

  // A launch with the tables filled in; the caller sets type, op, divisor, buffers, error,
  // abortFlag and timeout.
  device::LaneLaunch launch() const;

 private:
  DeviceTables() = default;
  device::Runtime* runtime_ = nullptr;
  void* host_ = nullptr;    // pinned: the copy's source, and the lane table the runtime checks
  void* device_ = nullptr;  // what the lanes read
  device::LaneLaunch base_;
};

// What a failed lane recorded, as a sentence: "allreduce #12 (ring) lane 3, step 2 (recvReduceSend
// from rank 1), slice 5: no data from rank 1 for 30 s". fifoPeers maps FIFO indices to ranks.
std::string describeLaneError(const device::LaneError& error, const DeviceProgram& program);

// Runs every lane of `launch` on host threads (one per lane) to the end or the first failure;
// returns the LaneErrorCode (also in *launch.error). Lane b starts once `slots` (when not null)
// has room for one more block, as a GPU starts the blocks of a grid. Registered as the host
// runtime's lane runner by registerHostLaneRunner().
uint32_t runLanesOnHost(const device::LaneLaunch& launch, device::BlockSlots* slots = nullptr);
void registerHostLaneRunner();

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_DEVICE_EXECUTOR_H_
