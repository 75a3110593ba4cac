// The device side of a communicator: collectives on GPU buffers, run by the device executor
// (collectives/device_executor.h) and enqueued on the caller's stream.
//
// Every launch goes through the communicator's own stream: it waits for the work the caller
// queued before the call (an event), runs, and the caller's stream waits for it in turn. So the
// call returns at once, and launches of one communicator never overlap on its FIFOs whatever
// streams the caller uses.
//
// A call on a stream being captured into a CUDA/HIP graph (PyTorch's torch.cuda.graph) puts its
// launch on that stream itself, and the graph orders it among the captured work. Capture
// forbids allocating and synchronizing, so such a call must find its launch already built: the
// first call of a shape (and the first in-place all-to-all that needs a larger staging buffer)
// is refused during capture, with a message saying to run it once before capturing, as PyTorch's
// warm-up iterations do. A replay runs the captured launch again, with its tables, scratch and
// staging buffers, which are therefore kept while the communicator lives. Replays run where the
// graph is launched, not on the communicator's stream: the caller orders them with the
// communicator's other calls (the same stream, or a synchronization), on every rank alike.
//
// Lanes record their first failure in a LaneError in pinned host memory, and stop when the host
// sets the abort flag beside it; asyncError() turns the record into a sentence. Created on a
// communicator's first device call, so that host-only users never create a GPU context.
#ifndef WEFT_CORE_DEVICE_PATH_H_
#define WEFT_CORE_DEVICE_PATH_H_

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "collectives/device_executor.h"
#include "collectives/schedule.h"
#include "device/device.h"

namespace weft {
namespace core {

// One collective of a launch, ready to run: its schedule and buffers.
struct DeviceCall {
  const coll::RankSchedule* schedule = nullptr;
  std::vector<int64_t> shape;  // what makes two calls' tables equal (kind, algo, root, channels, count, ...)
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t scratchBytes = 0;
  size_t sendBytes = 0;  // an in-place all-to-all is sent from a copy of this many bytes
  bool stageSend = false;
  std::string what;  // "rank 0: allreduce #12 (ring, 1024 x float sum)"
  // Call stamps (collectives/call_stamp.h) its lanes post and expect; 0: not checked.
  uint64_t sendStamp = 0;
  uint64_t recvStamp = 0;
};

// The reduction of a launch, as LaneLaunch carries it (device/kernel_api.h).
struct DeviceOp {
  weftRedOp_t op = weftSum;      // device::kLaneOpPreMulSum for a premul-sum
  uint32_t divisor = 0;          // avg: the rank count
  const void* scalar = nullptr;  // premul-sum, weftScalarDevice: read by the lanes when they run
  uint64_t scalarValue = 0;      // premul-sum, weftScalarHostImmediate: the scalar's bytes
};

class DevicePath {
 public:
  static Status create(device::Runtime* runtime, int device, int rank, double timeoutS,
                       std::unique_ptr<DevicePath>* out);
  ~DevicePath();
  DevicePath(const DevicePath&) = delete;
  DevicePath& operator=(const DevicePath&) = delete;

  device::Runtime* runtime() const { return runtime_; }
  int device() const { return device_; }
  // Messages of at most this many bytes go as low-latency lines (WEFT_DEVICE_LL_MAX_BYTES,
  // coll::appendToProgram; 0, the default: none). Set before the first enqueue: launches built
  // before keep what they were built with.
  void setLLMaxBytes(uint64_t bytes) { llMaxBytes_ = bytes; }

  // Enqueues `calls` (one type and op, at most device::kMaxFusedOps) as one launch after the
  // work already queued on `stream`; the first launch of a shape connects its FIFOs through the
  // provider and builds its tables, which is refused (weftInvalidUsage) while `stream` is being
  // captured into a graph.
  // fifoLanes: per call, the FIFO lane of its (one-lane) schedule (sends and receives); empty
  // for collectives, which take their lanes from their place in the launch.
  Status enqueue(const std::vector<DeviceCall>& calls, const std::vector<int>& fifoLanes, weftDataType_t type,
                 const DeviceOp& op, size_t slotBytes, void* stream, coll::ConnectionProvider* provider);
  // Two bytes of device memory for barriers (a one-byte all-reduce), allocated by create() so
  // that a barrier needs no allocation during a graph capture.
  Status barrierBytes(void** out);
  // The first lane failure so far (ok when none).
  Status asyncError() const;
  // True when that failure is a disagreement between the ranks' calls: a lane read a slot of
  // another call or size, or a peer reported such a failure. *peer: the rank that sent the slot
  // or made the other call (-1: not known); *theirs: the stamp the slot carried (0: not seen).
  bool callMismatch(int* peer, uint64_t* theirs) const;
  // Lanes stop at once (weftCommAbort, or a failure the host saw).
  void abort();
  // True when the latest enqueue was refused before doing anything (a capture that cannot set
  // up a new shape): the communicator stays usable.
  bool refusedLast() const { return refused_; }
  bool takeRefusal() {
    bool r = refused_;
    refused_ = false;
    return r;
  }
  // Waits for every launch so far (not for replays of captured graphs: their caller does).
  Status synchronize();
  // A group of several communicators (group.cc): beginGroup makes this path's stream wait for
  // the work queued so far on each of `streams`, and is called for every communicator before
  // any of them launches; enqueues on those streams then skip their own fork and join, and
  // endGroup, after every communicator launched, makes each stream wait for this path's
  // launches. Forked and joined one communicator at a time instead, B's fork would be queued on
  // a stream that already waits for A's launch, while A's lanes wait for B's: on a GPU the two
  // kernels would wait for each other. Streams being captured are left alone (enqueue puts the
  // launch on them directly).
  Status beginGroup(const std::vector<void*>& streams);
  Status endGroup();

 private:
  struct Launch {
    coll::DeviceProgram program;
    std::unique_ptr<coll::DeviceTables> tables;
    void* scratch = nullptr;
    std::vector<size_t> scratchOffsets;
    bool captured = false;  // a graph may replay it: never evicted
  };
  DevicePath() = default;
  // The launch of this shape, built (FIFOs connected, tables made) on its first call; while
  // `capturing`, only a launch built before.
  Status launchFor(const std::vector<DeviceCall>& calls, const std::vector<int>& fifoLanes, size_t elemSize,
                   size_t slotBytes, coll::ConnectionProvider* provider, bool capturing, Launch** out);
  // Makes room for a new shape when the cache is full: drops the launches no graph captured.
  Status evict();
  // The staging buffer holds at least `bytes` (in-place all-to-all sends).
  Status growStaging(size_t bytes);
  // The staging buffer for the in-place all-to-alls among `calls`, grown to fit (refused, since
  // nothing may be allocated then, while `capturing` when it would have to grow).
  Status stagingFor(const std::vector<DeviceCall>& calls, bool capturing);
  // The kernel arguments of `launch` for `calls`, their in-place sends first copied into the
  // staging buffer on `on` (*staged: the bytes copied).
  Status laneLaunchFor(const std::vector<DeviceCall>& calls, const Launch& launch, weftDataType_t type,
                       const DeviceOp& op, device::Stream on, device::LaneLaunch* out, size_t* staged);

  device::Runtime* runtime_ = nullptr;
  int device_ = -1;
  int rank_ = -1;
  uint64_t timeoutNs_ = 0;
  uint64_t llMaxBytes_ = 0;
  device::Stream stream_ = nullptr;
  device::Event userReady_ = nullptr;
  device::Event done_ = nullptr;
  bool launched_ = false;
  void* pinned_ = nullptr;  // the LaneError and the abort flag
  device::LaneError* error_ = nullptr;
  uint32_t* abortFlag_ = nullptr;
  void* staging_ = nullptr;  // the send side of an in-place all-to-all
  size_t stagingBytes_ = 0;
  bool stagingCaptured_ = false;       // a graph copies into staging_
  std::vector<void*> retiredStaging_;  // smaller staging buffers graphs may still copy into
  void* barrier_ = nullptr;
  std::map<std::vector<int64_t>, std::unique_ptr<Launch>> launches_;
  bool refused_ = false;
  const Launch* last_ = nullptr;  // for naming the operation of a failure
  std::vector<std::string> lastWhat_;  // the collectives of the latest launch
  std::vector<device::Stream> groupStreams_;  // forked by beginGroup, to join in endGroup
  bool groupLaunched_ = false;                 // a launch since beginGroup still to be joined
};

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_DEVICE_PATH_H_
