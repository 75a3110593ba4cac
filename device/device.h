// The device runtime interface: memory, copies, streams, events, IPC handles and kernel launch
// on whatever holds a buffer. Three implementations: the host runtime (always present, plain
// memory, no devices) and the CUDA and HIP runtimes, one set of sources (gpu_runtime.cu and its
// neighbours) built twice into libweft-cuda.so and libweft-hip.so and loaded at run time by
// gpuRuntime(), so one install runs on NVIDIA, AMD and CPU-only machines. Transports and
// executors call it; src/core owns the choice of runtime per buffer.
//
// Every fallible method returns a Status whose message names the call, the device and the
// runtime's own error text, e.g. "cudaMalloc(1 GiB) on device 3: out of memory
// (cudaErrorMemoryAllocation)". A module implements this class across a shared-library
// boundary: changing it (or ReduceCopyArgs) means bumping kGpuModuleAbi in gpu_module.h.
#ifndef WEFT_DEVICE_DEVICE_H_
#define WEFT_DEVICE_DEVICE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "device/kernel_api.h"

namespace weft {
namespace device {

// Where a buffer lives, as the runtime that owns it sees it.
enum class MemoryKind {
  kHost,        // ordinary (pageable) host memory, or any memory the runtime does not know
  kPinnedHost,  // host memory the runtime allocated or registered (page-locked, device-visible)
  kDevice,      // memory on one device
  kManaged,     // unified memory that migrates between host and devices
};
const char* memoryKindName(MemoryKind kind);

// Who touches an allocation while a kernel runs: one agent (the device it is on, or the host),
// or several that poll it (allocDeviceShared / allocHostShared).
enum class Sharing {
  kPrivate,  // user buffers, scratch, staging, read-only tables
  kAgents,   // FIFOs, counters and flags another agent reads or writes while a kernel runs
};
const char* sharingName(Sharing sharing);

struct PointerInfo {
  MemoryKind kind = MemoryKind::kHost;
  int device = -1;  // the device that owns the buffer; -1 for host memory
};

enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice, kDefault /* inferred from the pointers */ };

struct DeviceProps {
  std::string name;         // "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"
  std::string arch;         // "sm_90", "gfx942"
  std::string pciBusId;     // "0000:17:00.0", to match the device against the topology
  // The GPU's UUID (formatUuid: 8-4-4-4-12 hex digits of its 16 bytes), "" when the runtime
  // gives none. Unique across hosts, where bus ids repeat; emulated devices derive theirs from
  // their host and bus id.
  std::string uuid;
  int warpSize = 0;         // 32 on NVIDIA and RDNA, 64 on CDNA: never assume one
  int multiProcessors = 0;  // SMs (NVIDIA) or CUs (AMD)
  // Blocks of the lane program one SM / CU holds resident at once, from the runtime's occupancy
  // query at the lane kernels' block size (the smallest over their instantiations); 0: not known.
  // Lanes spin for their peers, so a rank's launch must never need more blocks than its share
  // of multiProcessors x this: the blocks beyond it would not start until the others end.
  int laneBlocksPerUnit = 0;
  uint64_t totalMemoryBytes = 0;
};

// 16 UUID bytes as "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lower-case hex; CUDA's tools print
// it after "GPU-"); "" when every byte is zero (a runtime that has none).
std::string formatUuid(const unsigned char (&bytes)[16]);

// An exported device allocation, opaque, sent to another process on the same host.
struct IpcHandle {
  uint8_t bytes[64];
};
static_assert(sizeof(IpcHandle) == 64, "IpcHandle travels in 64 bytes");

// A stream or event of the runtime that made it: cudaStream_t / hipStream_t behind an opaque
// pointer. A null Stream is the runtime's default stream.
struct StreamTag;
struct EventTag;
using Stream = StreamTag*;
using Event = EventTag*;
// The public API's WEFT_STREAM_DEFAULT ((weftStream_t)1): the calling thread's current device's
// default stream as NCCL means it (CUDA's legacy default stream cudaStreamLegacy, HIP's NULL
// stream). Every runtime accepts it wherever it takes a Stream and translates it there; it
// cannot be destroyed.
inline Stream defaultStreamHandle() { return reinterpret_cast<Stream>(static_cast<uintptr_t>(1)); }
inline bool isDefaultStreamHandle(Stream s) { return s == defaultStreamHandle(); }
// A CUDA / HIP graph captured from a stream and instantiated, ready to replay: the runtime's
// graph and executable graph together behind one opaque pointer.
struct GraphTag;
using Graph = GraphTag*;

// What an event is made for (Runtime::eventCreate).
enum class EventKind { kSync, kTiming };

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual const char* name() const = 0;  // "host", "cuda", "hip"
  // One line for logs: runtime and driver versions, the devices.
  virtual std::string description() const = 0;
  // Devices this process can use (0 for the host runtime).
  virtual int deviceCount() const = 0;
  virtual Status deviceProps(int device, DeviceProps* out) const = 0;
  // The calling thread's current device.
  virtual Status setDevice(int device) = 0;
  virtual Status getDevice(int* device) const = 0;
  virtual Status canAccessPeer(int device, int peer, bool* out) const = 0;
  // Lets the current device read and write `peer`'s memory (already enabled is not an error).
  virtual Status enablePeerAccess(int peer) = 0;

  // Memory on the current device; 0 bytes gives nullptr. Freeing nullptr does nothing.
  virtual Status allocDevice(size_t bytes, void** out) = 0;
  virtual Status freeDevice(void* ptr) = 0;
  // Page-locked host memory that devices can reach (plain memory for the host runtime).
  virtual Status allocHost(size_t bytes, void** out) = 0;
  virtual Status freeHost(void* ptr) = 0;
  // The same for memory shared with other agents (Sharing::kAgents): what another GPU, the
  // host's proxy thread or another process polls while a kernel runs (FIFO slots and counters,
  // abort flags, the lanes' error record). Released by freeDevice / freeHost. HIP makes it
  // fine-grained (uncached where the runtime can) device memory and coherent mapped pinned host
  // memory, as RCCL does: AMD GPUs cache ordinary (coarse-grained) memory, and hipHostMalloc's
  // default is not coherent, so a flag written by one agent may stay unseen by a kernel polling
  // it until that kernel ends. CUDA's ordinary allocations are coherent already; the emulated
  // device records the kind and refuses a lane launch that polls memory of the other kind.
  virtual Status allocDeviceShared(size_t bytes, void** out) = 0;
  virtual Status allocHostShared(size_t bytes, void** out) = 0;
  virtual Status pointerInfo(const void* ptr, PointerInfo* out) const = 0;

  virtual Status copy(void* dst, const void* src, size_t bytes, CopyKind kind) = 0;
  virtual Status copyAsync(void* dst, const void* src, size_t bytes, CopyKind kind, Stream stream) = 0;
  virtual Status memset(void* dst, int value, size_t bytes) = 0;
  virtual Status memsetAsync(void* dst, int value, size_t bytes, Stream stream) = 0;

  virtual Status streamCreate(Stream* out) = 0;
  virtual Status streamDestroy(Stream stream) = 0;
  virtual Status streamSynchronize(Stream stream) = 0;
  // *done: all work queued on the stream has finished.
  virtual Status streamQuery(Stream stream, bool* done) = 0;

  // kSync: for ordering streams and waiting only (cudaEventDisableTiming), what every event of
  // the library is: recording and waiting for it skips the timestamp. kTiming: eventElapsedMs
  // may measure between two of them (weft-perf, tests).
  virtual Status eventCreate(Event* out, EventKind kind) = 0;
  virtual Status eventDestroy(Event event) = 0;
  virtual Status eventRecord(Event event, Stream stream) = 0;
  virtual Status eventSynchronize(Event event) = 0;
  virtual Status eventQuery(Event event, bool* done) = 0;
  // Milliseconds between two recorded, completed events of EventKind::kTiming; others are refused.
  virtual Status eventElapsedMs(Event start, Event end, float* ms) = 0;

  // IPC: `ptr` must be the start of an allocDevice allocation. The importing process gets a
  // pointer to the same memory, which it releases with ipcClose.
  virtual Status ipcExport(void* ptr, IpcHandle* out) = 0;
  virtual Status ipcImport(const IpcHandle& handle, void** out) = 0;
  virtual Status ipcClose(void* ptr) = 0;

  // Runs the reduce-copy kernel (collectives/device) on `stream`: dsts[j][i] = op(srcs[*][i]).
  virtual Status launchReduceCopy(const ReduceCopyArgs& args, Stream stream) = 0;

  // Runs the lane program (collectives/device/lane_program.cuh) on `stream`, one block per lane.
  // Returns once it is queued; failures of the lanes land in *launch.error.
  virtual Status launchLanes(const LaneLaunch& launch, Stream stream) = 0;
  // Work queued on `stream` after this call waits for `event` (recorded on any stream).
  virtual Status streamWaitEvent(Stream stream, Event event) = 0;
  // Makes host memory the runtime did not allocate (a shared-memory segment) reachable by the
  // devices at the same address; page-aligned ranges. Unregister before unmapping it.
  virtual Status hostRegister(void* ptr, size_t bytes) = 0;
  virtual Status hostUnregister(void* ptr) = 0;

  // Graphs: the work queued on a stream recorded once and replayed. While a stream is being
  // captured its work is recorded, not run, and the runtime refuses calls that would wait for
  // it or could not be recorded (synchronous copies and memsets, synchronizing, allocating):
  // callers that may make such a call ask streamIsCapturing first. Runtimes without graphs (host,
  // emulated) answer false there and refuse the rest.
  //
  // *capturing: work queued on `stream` is being recorded into a graph (an invalidated capture
  // counts until it is ended).
  virtual Status streamIsCapturing(Stream stream, bool* capturing) = 0;
  // Starts recording `stream` (not the default stream) in the runtime's global mode, as
  // PyTorch's torch.cuda.graph does: until the capture ends, a forbidden call from any thread
  // fails, so code tested under it also works inside a PyTorch capture.
  virtual Status graphCaptureBegin(Stream stream) = 0;
  // Ends the recording and instantiates it into *out, which graphLaunch replays.
  virtual Status graphCaptureEnd(Stream stream, Graph* out) = 0;
  // Replays `graph` on `stream`: its work runs again with the arguments it was captured with.
  virtual Status graphLaunch(Graph graph, Stream stream) = 0;
  // Releases the graph (a replay in flight finishes first); null does nothing.
  virtual Status graphDestroy(Graph graph) = 0;
};

// The host runtime: plain memory, no devices, streams and events that complete at once.
Runtime& hostRuntime();

// The GPU runtime of this machine: the first of libweft-cuda.so and libweft-hip.so that loads
// and finds a device, looked for next to libweft.so and then on the library search path; null
// on a machine without one. Decided once per process and logged at INFO, with the reason each
// module was not used ("no GPU backend: libweft-cuda.so: ...; libweft-hip.so: ...").
Runtime* gpuRuntime();

// Checks the parts of ReduceCopyArgs every runtime checks the same way: counts in range, no
// null buffer when there is data, a known type and op, a divisor for weftAvg.
Status checkReduceCopyArgs(const ReduceCopyArgs& args);
// The same for a lane launch: counts in range, tables present, steps that name lanes, FIFOs
// and buffers that exist.
Status checkLaneLaunch(const LaneLaunch& launch);

// Room for the blocks of lane launches on one device, as a GPU's block scheduler gives it: the
// emulated device's model of residency (emulated_runtime.cc). acquire() waits until one more
// block fits (another one ended); release() gives the room back when a block ends.
class BlockSlots {
 public:
  virtual ~BlockSlots() = default;
  virtual void acquire() = 0;
  virtual void release() = 0;
};

// The lane program on host threads, which the host runtime's launchLanes runs (the collectives
// layer registers it: collectives/device_lanes.cc): every lane of `launch` to its end, one
// thread per lane, each started, in lane order, once `slots` has room for it (null: at once).
// Returns the LaneErrorCode of the first failure, also left in *launch.error.
using HostLaneRunner = uint32_t (*)(const LaneLaunch& launch, BlockSlots* slots);
void setHostLaneRunner(HostLaneRunner runner);
HostLaneRunner hostLaneRunner();  // null until registered

}  // namespace device
}  // namespace weft

#endif  // WEFT_DEVICE_DEVICE_H_
