// The meeting point of the device runtime and the kernels: the runtime (gpu_runtime.cu) checks
// a launch and calls weftKernelReduceCopy, which collectives/device/kernels.cu defines in the
// same module (libweft-cuda.so / libweft-hip.so). Plain data only: nvcc, hipcc and the host
// compiler all read this file. Changing it means bumping kGpuModuleAbi (gpu_module.h).
#ifndef WEFT_DEVICE_KERNEL_API_H_
#define WEFT_DEVICE_KERNEL_API_H_

#include <stdint.h>

#include "weft/weft.h"

namespace weft {
namespace device {

constexpr int kMaxReduceSrcs = 8;
constexpr int kMaxReduceDsts = 4;

// dsts[j][i] = op(srcs[0][i], ..., srcs[nSrcs-1][i]) for i < count and every j < nDsts; with
// one source it is a copy (broadcast to several destinations). weftAvg sums, then divides by
// `divisor` (the rank count; integer division for integer types).
struct ReduceCopyArgs {
  weftDataType_t type = weftFloat32;
  weftRedOp_t op = weftSum;
  int32_t nSrcs = 0;
  const void* srcs[kMaxReduceSrcs] = {};
  int32_t nDsts = 0;
  void* dsts[kMaxReduceDsts] = {};
  uint64_t count = 0;    // elements, not bytes
  uint64_t divisor = 1;  // at most 2^32 - 1
};


// ---- The lane program (collectives/device/lane_program.cuh) --------------------------------
// The device executor runs a collective's schedule (collectives/schedule.h) as one block per
// lane: the steps below, over slices, moving data through FIFOs whose slots and counters sit in
// memory both ranks can reach (a GPU's memory, pinned host memory, a shared-memory segment).

// One direction of one edge as the lane program sees it. The layout of the counters is the
// shared-memory FIFO's (transports/shm/shm_fifo.h): the sender fills slot (head % nSlots), sets
// its byte count, then advances head; the receiver reads it, then advances tail.
struct FifoView {
  char* data = nullptr;  // slot i starts at data + i * stride
  uint64_t stride = 0;
  uint64_t nSlots = 0;
  uint64_t slotBytes = 0;
  uint64_t* sizes = nullptr;  // per slot: the bytes the sender put in it
  // Per slot: the stamp the sender posted with it (collectives/call_stamp.h), written with the
  // size before head moves; the receiver refuses a slot whose stamp is not its call's.
  uint64_t* stamps = nullptr;
  uint64_t* head = nullptr;   // slots posted: written by the sender only
  uint64_t* tail = nullptr;   // slots released: written by the receiver only
  // This side's own count (sender: posted, receiver: released), kept in this rank's memory so
  // that the lane never reads its own progress back across a link. It persists across launches.
  uint64_t* cursor = nullptr;
  uint32_t* selfAbort = nullptr;        // set by this side when it fails (culprit + 2; 1: unknown)
  const uint32_t* peerAbort = nullptr;  // set by the peer when it fails
  int32_t peer = -1;                    // the other rank, for messages
  int32_t reserved = 0;
  // The FIFO's low-latency (LL) region (collectives/device/ll.cuh), in the receiver's memory:
  // nSlots LL slots of llStride bytes, each kLLHeaderLines header lines (the call stamp's low and
  // high words, the byte count) then the data lines of at most llSliceBytes(slotBytes) bytes,
  // every line flagged with the message's flag (llFlag of its count). A message at count c goes
  // either to slot c % nSlots (sizes, stamps, then head) or, with LL, to LL slot c % nSlots; the
  // count and the credits (tail) are the FIFO's either way. Null: the FIFO has no LL region, and
  // every message on it uses the slots (both ends of a FIFO see the same, the transport's choice).
  uint64_t* ll = nullptr;
  uint64_t llStride = 0;
  // The sender's: llSliceBytes(slotBytes) of its own memory where an LL message is assembled
  // before its lines go across (null on the receiver's side; it unpacks into slot c % nSlots,
  // which the sender cannot write until that message is released).
  char* llStage = nullptr;
};

// The LL protocol's geometry, for the transports that lay out LL regions and the executor that
// slices messages for them (the line format itself is collectives/device/ll.cuh's).
constexpr uint64_t kLLDataBytes = 4;   // data bytes per line
constexpr uint64_t kLLLineBytes = 8;   // data and flag
constexpr uint64_t kLLHeaderLines = 3;  // stamp (low word, high word), byte count
// The most data bytes one LL message carries: 8 KiB, 16 KiB of lines, 4 lines for each thread
// of a 512-thread block (NCCL's LL moves 8 lines of 8 data bytes per thread and step).
constexpr uint64_t kLLSliceMaxBytes = 8192;
// The data bytes of one LL message on FIFOs of slotBytes slots: at most a slot, so that the
// receiver can unpack it into the slot the message's count names.
constexpr uint64_t llSliceBytes(uint64_t slotBytes) {
  return slotBytes < kLLSliceMaxBytes ? slotBytes : kLLSliceMaxBytes;
}
// Bytes of one LL slot (FifoView::llStride) for FIFOs of slotBytes slots: header and data lines,
// in whole 128-byte lines.
constexpr uint64_t llSlotBytes(uint64_t slotBytes) {
  return ((kLLHeaderLines + (llSliceBytes(slotBytes) + kLLDataBytes - 1) / kLLDataBytes) * kLLLineBytes + 127) / 128 *
         128;
}

// One step of a lane (collectives::Step, flattened; kinds and buffers keep their enum values).
struct LaneStep {
  uint8_t kind = 0;    // coll::StepKind
  uint8_t srcBuf = 0;  // coll::Buf: 0 send, 1 receive, 2 scratch
  uint8_t dstBuf = 1;
  uint8_t final = 0;   // the result is complete: avg divides here
  int32_t recvFifo = -1;  // index into LaneLaunch::fifos, when the step receives
  int32_t sendFifo = -1;  // index into LaneLaunch::fifos, when the step sends
  // 1: the step's messages are small (count x element size at most WEFT_DEVICE_LL_MAX_BYTES):
  // they go in LaneDesc::llSliceElems slices, with the LL protocol on FIFOs that have an LL
  // region (FifoView::ll). Both ends of a message decide it from its size, which they share.
  int32_t ll = 0;
  int64_t srcOffset = 0;  // elements
  int64_t dstOffset = 0;
  int64_t count = 0;
};

struct LaneDesc {
  int32_t firstStep = 0;  // index into LaneLaunch::steps
  int32_t nSteps = 0;
  int32_t buffers = 0;  // index into LaneLaunch::buffers: the collective this lane belongs to
  int32_t llSliceElems = 1;  // the slices of its LL steps (LaneStep::ll): at most llSliceBytes(slotBytes)
  int64_t sliceElems = 1;  // at most one slot
  int64_t iterations = 0;  // enough for every step's slices
};

// Why a lane stopped early. The first lane to fail records itself in LaneLaunch::error.
enum LaneErrorCode : uint32_t {
  kLaneOk = 0,
  kLaneTimeout = 1,      // nothing moved for timeoutNs
  kLaneAborted = 2,      // the host set abortFlag (weftCommAbort, or a failure seen by the host)
  kLanePeerAborted = 3,  // the peer of a FIFO set its abort flag
  kLaneBadMessage = 4,   // a slot held another byte count than the step expects
  kLaneSiblingFailed = 5,  // another lane of this launch failed first
  kLaneBadStamp = 6,       // a slot carried another call's stamp (collectives/call_stamp.h)
  kLaneBadProtocol = 7,    // a message came with the LL protocol where the step expects a slot, or the reverse
};

// Added to the culprit a failing lane writes to its FIFOs' selfAbort (culprit + 2) when the
// ranks' calls disagree (a slot of another call or size), so that the peers that never read such
// a slot learn it too and join the exchange that names both calls. The same bit as
// transports/transport.h's kCulpritCallMismatch, which every transport carries unchanged.
constexpr uint32_t kLaneCulpritCallMismatch = 1u << 28;

struct LaneError {
  uint32_t code = kLaneOk;  // LaneErrorCode
  int32_t lane = -1;
  int32_t step = -1;        // within the lane
  int32_t fifo = -1;        // the FIFO it waited on or read from
  int64_t iteration = -1;
  uint64_t detail = 0;      // kLaneBadMessage: the byte count found; kLanePeerAborted: the peer's flag;
                            // kLaneBadStamp: the stamp found; kLaneBadProtocol: 1 when the message
                            // came with LL, 0 when in a slot
};

// The user's buffers of one collective of a launch.
struct LaneBuffers {
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  void* scratch = nullptr;  // coll::Buf::kScratch
  // Call stamps (collectives/call_stamp.h): what the lanes of this collective post with every
  // slot, and what they expect on the slots they read (0: not checked).
  uint64_t sendStamp = 0;
  uint64_t recvStamp = 0;
};
// Collectives of one group fused into a launch, or sends and receives of one group (each is
// its own lane). The launch travels as a kernel parameter: 32 buffer sets keep it near 1.4 KiB,
// well inside the 4 KiB CUDA and HIP allow.
constexpr int kMaxFusedOps = 32;

// LaneLaunch::op of a premul-sum (weftRedOpCreatePreMulSum): whatever value the communicator
// gave the op, the lane program sees this one (reduce.h defines the numerics).
constexpr weftRedOp_t kLaneOpPreMulSum = static_cast<weftRedOp_t>(weftNumOps);

// One launch of the lane program: every lane of one collective, or of up to kMaxFusedOps
// collectives (or sends and receives) of one group that share type and op (each lane names its collective's buffers).
// Passed by value to the kernel, so a graph that captured it replays it as it was: the per-call
// parts (buffers, scalar, op) travel in it; the tables it points to (lanes, steps, FIFO views)
// are the plan's, copied once into device memory (collectives/device_executor.h, DeviceTables),
// and must stay unchanged while any launch (or captured graph) that uses them may run.
struct LaneLaunch {
  weftDataType_t type = weftFloat32;
  weftRedOp_t op = weftSum;  // weftSum..weftAvg, or kLaneOpPreMulSum
  uint32_t divisor = 1;  // avg: the rank count
  // kLaneOpPreMulSum: the scalar, one element of `type`, read by every lane when the launch (or
  // a graph replay of it) runs: from `scalar` when it is not null (device-readable memory, e.g.
  // weftScalarDevice), else from the low bytes of scalarValue (little-endian, as the host
  // stored them).
  const void* scalar = nullptr;
  uint64_t scalarValue = 0;
  int32_t nLanes = 0;
  // The most steps of any lane: sizes the shared memory each block stages its lane's steps and
  // FIFO views into (lane_kernels.cu). 0: unknown, the lanes read the tables where they are.
  int32_t maxLaneSteps = 0;
  const LaneDesc* lanes = nullptr;  // device-readable (device memory, or pinned host memory)
  // The same lane table where the host reads it (pinned host memory), for the runtime's checks
  // before the launch; null when `lanes` itself is host memory.
  const LaneDesc* hostLanes = nullptr;
  const LaneStep* steps = nullptr;
  const FifoView* fifos = nullptr;
  int32_t nFifos = 0;
  int32_t nBuffers = 0;
  LaneBuffers buffers[kMaxFusedOps] = {};
  // Nonzero: stop now (host memory the device can read). May be null.
  const uint32_t* abortFlag = nullptr;
  // The first failure (device-visible host memory, zeroed before the launch). Never null.
  LaneError* error = nullptr;
  uint64_t timeoutNs = 0;  // 0: wait for ever (only the host's own deadline then applies)
  int32_t threadsPerLane = 0;  // 0: the runtime picks
  int32_t reserved = 0;
};

}  // namespace device
}  // namespace weft

// Defined by collectives/device/kernels.cu. `stream` is a cudaStream_t / hipStream_t (null:
// the default stream). Returns 0, or the runtime's error code (cudaError_t / hipError_t) of
// the failed launch. The runtime has checked the arguments (checkReduceCopyArgs and where
// each buffer lives) before it calls.
extern "C" int weftKernelReduceCopy(const weft::device::ReduceCopyArgs* args, void* stream);

// Also defined by kernels.cu: the current device's warp size and the most blocks a launch may
// use (its SM / CU count), which size the grid. The runtime sets them before each launch.
// Returns 0, or the runtime's invalid-value code for warpSize outside 1..1024 or maxBlocks < 1.
extern "C" int weftKernelSetLaunchLimits(int warpSize, int maxBlocks);

// Also defined by kernels.cu: launches the lane program, one block per lane, on `stream`.
// Returns 0 or the runtime's error code; the runtime has checked the launch (checkLaneLaunch).
extern "C" int weftKernelLaunchLanes(const weft::device::LaneLaunch* launch, void* stream);

// Also defined by kernels.cu: the fewest blocks of any lane kernel one SM / CU of the current
// device holds resident at `threadsPerLane` threads per block (0: the block size launches get by
// default), from the runtime's occupancy query (cudaOccupancyMaxActiveBlocksPerMultiprocessor /
// hipOccupancyMaxActiveBlocksPerMultiprocessor). The runtime sets the launch limits first.
// Returns 0 or the runtime's error code.
extern "C" int weftKernelLaneOccupancy(int threadsPerLane, int* blocksPerUnit);

#endif  // WEFT_DEVICE_KERNEL_API_H_
