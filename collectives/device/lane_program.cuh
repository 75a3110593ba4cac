// The lane program: one lane of a collective's schedule (schedule.h), run by the threads of one
// GPU block, moving data through FIFOs in memory both ranks reach (device/kernel_api.h's
// FifoView). kernels.cu runs it with a block per lane; lanes_host.cc runs the same code on host
// threads, which is how the CPU-only test suite proves the device executor's protocol.
//
// Per iteration and step, as the host executor does it: the leader thread waits for the slot to
// read (the peer's head past our count) and for a free slot to write (our count less the peer's
// tail below nSlots), polling with relaxed loads and fencing once when the wait ends; every
// thread then reduces or copies its share of the slice (reduce_copy.cuh) from the step's sources
// into its destinations, the incoming slot and the outgoing slot among them; after a barrier the
// leader publishes the outgoing slot (byte count and stamp, one release fence, then head) and
// hands the incoming one back (tail, behind the same fence).
//
// Small messages (LaneStep::ll, on FIFOs with an LL region) go as low-latency lines instead
// (ll.cuh): the threads pack the slice, with the call stamp and byte count as header lines, into
// the FIFO's LL slot, every line flagged with the message's count, and post nothing else; the
// receiving leader waits for the header lines, and every thread then polls and unpacks its share
// of the data lines. A receiver waits for a message by either protocol and refuses the one it
// did not expect, so that ranks that chose differently fail instead of waiting for each other.
//
// Nothing waits for ever: the leader gives up after timeoutNs without progress, when the host
// sets abortFlag, when a FIFO's peer sets its abort flag, or when another lane of the launch
// failed. The first failure lands in LaneLaunch::error; the failing lane also sets this rank's
// abort flag on every FIFO of the launch, so that its peers stop too instead of timing out.
#ifndef WEFT_COLLECTIVES_DEVICE_LANE_PROGRAM_CUH_
#define WEFT_COLLECTIVES_DEVICE_LANE_PROGRAM_CUH_

#include <cstddef>
#include <cstdint>

#include "collectives/device/ll.cuh"
#include "collectives/device/reduce_copy.cuh"
#include "collectives/step_kind.h"
#include "device/kernel_api.h"
#include "device/platform.h"

namespace weft {
namespace coll {
namespace kernel {

// How often (in polls) a waiting leader looks at the abort flags and the clock.
constexpr uint32_t kPollsPerCheck = 128;

// What the leader tells the lane's threads before a step moves data: whether the waits ended
// well (a LaneErrorCode), and the positions of the step's incoming and outgoing slots.
// Plain data (no initializers): blocks keep one in shared memory.
struct LaneTurn {
  uint32_t code;  // LaneErrorCode
  uint64_t in;    // the incoming FIFO's count (its slot: in % nSlots)
  uint64_t out;   // the outgoing FIFO's
};

// The leader's turn, seen by every thread of the lane. Ctx provides tid(), nthreads(),
// leader(), barrier(), turn(), a LaneTurn the lane's threads share, and stage() / stageBytes(),
// the room the lane's threads share for laneStage (null / 0: none).
template <typename Ctx>
WEFT_HOST_DEVICE inline LaneTurn laneAgree(Ctx& ctx, const LaneTurn& leaders) {
  if (ctx.leader()) ctx.turn() = leaders;
  ctx.barrier();
  const LaneTurn v = ctx.turn();
  ctx.barrier();
  return v;
}

// The leader's copy of one side's count of the FIFO a lane's steps last used in one direction:
// read from FifoView::cursor (this rank's memory) when a step turns to another FIFO, kept in a
// register while the steps stay on it, as a ring's do, and stored back at every post (a store
// into this rank's memory, which nothing waits for: the next launch, and the host's
// allSendsConsumed, read it there).
struct LaneCursor {
  int32_t fifo = -1;
  uint64_t count = 0;
  WEFT_HOST_DEVICE uint64_t at(int32_t index, const device::FifoView& f) {
    if (index != fifo) {
      fifo = index;
      count = *f.cursor;  // written by this side only
    }
    return count;
  }
  WEFT_HOST_DEVICE void advance(const device::FifoView& f) {
    *f.cursor = ++count;
  }
};

// A waiting thread's look around, every kPollsPerCheck polls: kLaneOk to poll on, or why the
// wait must end (the host aborted, another lane failed, the FIFO's peer failed, no progress
// for timeoutNs since *start, which the first look sets).
WEFT_HOST_DEVICE inline uint32_t laneWaitCheck(const device::LaneLaunch& launch, const device::FifoView& fifo,
                                               uint64_t* start, uint64_t* detail) {
  if (launch.abortFlag != nullptr && weftLoadAcquire32(launch.abortFlag) != 0) return device::kLaneAborted;
  if (weftLoadAcquire32(&launch.error->code) != device::kLaneOk) return device::kLaneSiblingFailed;
  const uint32_t peer = fifo.peerAbort != nullptr ? weftLoadAcquire32(fifo.peerAbort) : 0;
  if (peer != 0) {
    *detail = peer;
    return device::kLanePeerAborted;
  }
  if (launch.timeoutNs != 0) {
    const uint64_t now = weftNowNs();
    if (*start == 0) {
      *start = now;
    } else if (now - *start > launch.timeoutNs) {
      return device::kLaneTimeout;
    }
  }
  return device::kLaneOk;
}

// Leader: polls ready() (relaxed loads, platform.h) until it holds or the wait must end;
// returns a LaneErrorCode. Once ready() holds, one acquire fence orders what the peer wrote
// before its counter (the slot's data, size and stamp) before what this lane reads next.
template <typename Ready>
WEFT_HOST_DEVICE inline uint32_t laneWait(const device::LaneLaunch& launch, const device::FifoView& fifo,
                                          Ready ready, uint64_t* detail) {
  uint64_t start = 0;
  for (uint32_t polls = 1; !ready(); ++polls) {
    if (polls % kPollsPerCheck == 0) {
      const uint32_t code = laneWaitCheck(launch, fifo, &start, detail);
      if (code != device::kLaneOk) return code;
    }
    weftSpinPause();
  }
  weftAcquireFence();
  return device::kLaneOk;
}

// What a failing lane tells its peers through selfAbort: 1 (culprit unknown to the device), or,
// when the ranks' calls disagree, the rank that sent the slot of another call (or the culprit a
// peer passed on) with kLaneCulpritCallMismatch, so that every rank joins the exchange that names
// both calls.
WEFT_HOST_DEVICE inline uint32_t laneAbortValue(const device::LaneLaunch& launch, uint32_t code, int fifo,
                                                uint64_t detail) {
  if ((code == device::kLaneBadStamp || code == device::kLaneBadMessage || code == device::kLaneBadProtocol) &&
      fifo >= 0 && launch.fifos[fifo].peer >= 0) {
    return (static_cast<uint32_t>(launch.fifos[fifo].peer) | device::kLaneCulpritCallMismatch) + 2;
  }
  if (code == device::kLanePeerAborted && detail >= 2 && ((detail - 2) & device::kLaneCulpritCallMismatch) != 0) {
    return static_cast<uint32_t>(detail);
  }
  return 1;
}

// Leader: records the lane's failure (the first one wins) and tells every peer of the launch.
WEFT_HOST_DEVICE inline void laneFail(const device::LaneLaunch& launch, uint32_t code, int lane, int step,
                                      int64_t iteration, int fifo, uint64_t detail) {
  if (code != device::kLaneSiblingFailed &&
      weftCompareSwap32(&launch.error->code, device::kLaneOk, code) == device::kLaneOk) {
    launch.error->lane = lane;
    launch.error->step = step;
    launch.error->fifo = fifo;
    launch.error->iteration = iteration;
    launch.error->detail = detail;
  }
  const uint32_t told = laneAbortValue(launch, code, fifo, detail);
  for (int32_t i = 0; i < launch.nFifos; ++i) {
    if (launch.fifos[i].selfAbort == nullptr) continue;
    const uint32_t now = weftLoadAcquire32(launch.fifos[i].selfAbort);
    if (now == 0 || (now == 1 && told > 1)) weftStoreRelease32(launch.fifos[i].selfAbort, told);
  }
}

WEFT_HOST_DEVICE inline char* laneSlot(const device::FifoView& f, uint64_t count) {
  return f.data + (count % f.nSlots) * f.stride;
}

// Buf::kSend: the caller's send buffer, this rank's own contribution.
constexpr uint8_t kLaneBufSend = static_cast<uint8_t>(Buf::kSend);
static_assert(static_cast<int>(Buf::kSend) == 0 && static_cast<int>(Buf::kRecv) == 1 &&
                  static_cast<int>(Buf::kScratch) == 2,
              "runLane indexes its buffers {send, recv, scratch} by a LaneStep's Buf value");

// The premul-sum scalar of a launch (kernel_api.h), read once per lane per launch.
template <typename T>
WEFT_HOST_DEVICE inline T laneScalar(const device::LaneLaunch& launch) {
  T s;
  memcpy(&s, launch.scalar != nullptr ? launch.scalar : static_cast<const void*>(&launch.scalarValue), sizeof(T));
  return s;
}

WEFT_HOST_DEVICE inline uint64_t* laneLLSlot(const device::FifoView& f, uint64_t count) {
  return f.ll + (count % f.nSlots) * (f.llStride / sizeof(uint64_t));
}

// Whether the message at count c has arrived, by either protocol: its LL header lines carry its
// flag, or head passed c. A step waits for both whatever protocol it expects, so that a peer
// that chose the other one is found out (laneCheckSlot) instead of waited for.
WEFT_HOST_DEVICE inline bool laneArrived(const device::FifoView& in, uint64_t c) {
  if (weftLoadRelaxed(in.head) > c) return true;
  uint64_t stamp, nbytes;
  return in.ll != nullptr && llTryHeader(laneLLSlot(in, c), llFlag(c), &stamp, &nbytes);
}

// The message a receive found (after laneWait's fence): the call's stamp (when checked; another
// call's stamp comes first, since its protocol and size may differ too but the call is what is
// wrong), then its protocol (LL where the step expects a slot, or the reverse: the ranks'
// WEFT_DEVICE_LL_MAX_BYTES differ), then its byte count. LL headers are seen before head: a
// sender that posted a later slot fenced its earlier LL lines before that head.
WEFT_HOST_DEVICE inline uint32_t laneCheckSlot(const device::FifoView& in, uint64_t c, uint64_t bytes,
                                               uint64_t wantStamp, bool wantLL, uint64_t* detail) {
  uint64_t stamp = 0, found = 0;
  const bool isLL = in.ll != nullptr && llTryHeader(laneLLSlot(in, c), llFlag(c), &stamp, &found);
  if (!isLL) {
    if (in.stamps != nullptr) stamp = weftLoadRelaxed(&in.stamps[c % in.nSlots]);
    found = weftLoadRelaxed(&in.sizes[c % in.nSlots]);
  }
  if (wantStamp != 0 && (isLL || in.stamps != nullptr) && stamp != wantStamp) {
    *detail = stamp;
    return device::kLaneBadStamp;
  }
  if (isLL != wantLL) {
    *detail = isLL ? 1 : 0;
    return device::kLaneBadProtocol;
  }
  if (found != bytes) {
    *detail = found;
    return device::kLaneBadMessage;
  }
  return device::kLaneOk;
}

// Every thread of a lane whose step receives an LL message at count c: copies its share of the
// data lines into `stage` (nbytes) as their flags arrive, polling with the leader's checks; then
// the lane agrees on the outcome (a failing thread records it, laneFail). True: go on.
template <typename Ctx>
WEFT_HOST_DEVICE inline bool laneUnpackLL(const device::LaneLaunch& launch, int lane, int32_t s, int64_t it,
                                          int32_t fifo, const device::FifoView& in, uint64_t c, void* stage,
                                          size_t nbytes, Ctx& ctx) {
  const uint64_t* data = laneLLSlot(in, c) + device::kLLHeaderLines;
  uint64_t start = 0, detail = 0;
  uint32_t code = device::kLaneOk;
  for (uint32_t polls = 1; llTryUnpack(stage, data, nbytes, llFlag(c), ctx.tid(), ctx.nthreads()) != 0; ++polls) {
    if (polls % kPollsPerCheck == 0) {
      code = laneWaitCheck(launch, in, &start, &detail);
      if (code != device::kLaneOk) break;
    }
    weftSpinPause();
  }
  if (code != device::kLaneOk) laneFail(launch, code, lane, s, it, fifo, detail);
  ctx.barrier();  // every thread's lines are in the stage, or its failure recorded
  LaneTurn v{device::kLaneOk, 0, 0};
  if (ctx.leader()) v.code = weftLoadAcquire32(&launch.error->code);
  return laneAgree(ctx, v).code == device::kLaneOk;
}

// Leader, after the block's barrier: publishes the outgoing slot (its size and stamp, then head)
// and hands the incoming one back (tail), behind one release fence for the whole step: the
// slice every thread wrote, and the incoming slot every thread read, come before either counter.
// Head lives in the receiver's memory and tail (the sender's credits) in the sender's: each is a
// store across the link that nothing waits for, while each side polls its own memory. An LL
// message (outLL) was posted by its lines: it moves only this side's count, with no fence.
WEFT_HOST_DEVICE inline void laneRelease(const device::FifoView* in, const device::FifoView* out, LaneCursor* inAt,
                                         LaneCursor* outAt, uint64_t bytes, uint64_t stamp, bool outLL) {
  const device::FifoView* post = outLL ? nullptr : out;
  if (post != nullptr) {
    const uint64_t c = outAt->count;
    weftStoreRelaxed(&post->sizes[c % post->nSlots], bytes);
    if (post->stamps != nullptr) weftStoreRelaxed(&post->stamps[c % post->nSlots], stamp);
  }
  if (in != nullptr || post != nullptr) weftReleaseFence();
  if (post != nullptr) weftStoreRelaxed(post->head, outAt->count + 1);
  if (out != nullptr) outAt->advance(*out);
  if (in != nullptr) {
    weftStoreRelaxed(in->tail, inAt->count + 1);
    inAt->advance(*in);
  }
}

// The tables a lane reads at every step of every slice: its steps and, per step s, the FIFO views
// it receives from (views[2s]) and sends to (views[2s + 1]). The launch's tables sit in device
// memory (DeviceTables); a lane copies its own into the block's shared memory once, at its
// start (laneStage), so that its steps read them at shared-memory latency.
struct LaneTables {
  const device::LaneStep* steps;
  const device::FifoView* views;  // null: the views are the launch's (launch.fifos[step.recvFifo] ...)
};

// Shared memory a lane of nSteps steps stages into, and the most a launch gives a block (a
// lane that needs more reads the launch's tables, as before): 24 KiB stages 87 steps (a ring
// all-reduce of 44 ranks) and leaves room for two blocks on a 64 KiB CU.
constexpr size_t kLaneStageMaxBytes = 24 * 1024;
WEFT_HOST_DEVICE constexpr size_t laneStageBytes(int64_t nSteps) {
  return static_cast<size_t>(nSteps) * (sizeof(device::LaneStep) + 2 * sizeof(device::FifoView));
}

// Every thread of the lane: copies the lane's steps and their FIFO views into `room` (roomBytes
// of the block's shared memory, 8-byte aligned) and waits for the others; the launch's own
// tables when they do not fit.
template <typename Ctx>
WEFT_HOST_DEVICE inline LaneTables laneStage(const device::LaneLaunch& launch, const device::LaneDesc& desc, void* room,
                                             size_t roomBytes, Ctx& ctx) {
  if (room == nullptr || laneStageBytes(desc.nSteps) > roomBytes) return LaneTables{launch.steps + desc.firstStep, nullptr};
  device::FifoView* views = static_cast<device::FifoView*>(room);
  device::LaneStep* staged = reinterpret_cast<device::LaneStep*>(views + 2 * desc.nSteps);
  for (size_t i = ctx.tid(); i < static_cast<size_t>(desc.nSteps); i += ctx.nthreads()) {
    const device::LaneStep st = launch.steps[desc.firstStep + static_cast<int32_t>(i)];
    staged[i] = st;
    if (st.recvFifo >= 0) views[2 * i] = launch.fifos[st.recvFifo];
    if (st.sendFifo >= 0) views[2 * i + 1] = launch.fifos[st.sendFifo];
  }
  ctx.barrier();
  return LaneTables{staged, views};
}

// Step s's incoming (or outgoing) FIFO, staged or the launch's.
WEFT_HOST_DEVICE inline const device::FifoView* laneFifo(const device::LaneLaunch& launch, const LaneTables& t, int32_t s,
                                                         int32_t index, bool outgoing) {
  return t.views != nullptr ? &t.views[2 * s + (outgoing ? 1 : 0)] : &launch.fifos[index];
}

// Leader: waits for the step's incoming slot (the peer's head past our count) and for a free
// outgoing one (our count less our credits below nSlots), checks the incoming slot, and records
// a failure; returns the turn every thread of the lane then follows.
WEFT_HOST_DEVICE inline LaneTurn laneAcquire(const device::LaneLaunch& launch, int lane, int32_t s, int64_t it,
                                             const device::LaneStep& st, const device::FifoView* in,
                                             const device::FifoView* out, LaneCursor* inAt, LaneCursor* outAt,
                                             uint64_t bytes, uint64_t wantStamp) {
  LaneTurn turn{device::kLaneOk, 0, 0};
  uint64_t detail = 0;
  int fifo = -1;
  if (in != nullptr) {
    fifo = st.recvFifo;
    const uint64_t c = turn.in = inAt->at(st.recvFifo, *in);
    turn.code = laneWait(launch, *in, [&] { return laneArrived(*in, c); }, &detail);
    const bool wantLL = st.ll != 0 && in->ll != nullptr;
    if (turn.code == device::kLaneOk) turn.code = laneCheckSlot(*in, c, bytes, wantStamp, wantLL, &detail);
  }
  if (turn.code == device::kLaneOk && out != nullptr) {
    fifo = st.sendFifo;
    const uint64_t c = turn.out = outAt->at(st.sendFifo, *out);
    turn.code = laneWait(launch, *out, [&] { return c - weftLoadRelaxed(out->tail) < out->nSlots; }, &detail);
  }
  if (turn.code != device::kLaneOk) laneFail(launch, turn.code, lane, s, it, fifo, detail);
  return turn;
}

// Runs lane `lane` of `launch` to its end or its first failure. Steps is reduce_copy.cuh's
// policy for the launch's op: it picks the combining step of each schedule step from whether
// the step is final (avg divides there) and whether it reads this rank's own input (the send
// buffer: a premul-sum multiplies it there, once). The loop's cursors (step, slice, FIFO
// counts) live in registers; the threads learn the slots' positions from the leader's turn.
template <typename T, typename Steps, typename Ctx>
WEFT_HOST_DEVICE inline void runLane(const device::LaneLaunch& launch, int lane, const Steps& steps, Ctx& ctx) {
  const T scalar = Steps::kScalesOwn ? laneScalar<T>(launch) : T();
  const device::LaneDesc desc = launch.lanes[lane];
  const LaneTables tables = laneStage(launch, desc, ctx.stage(), ctx.stageBytes(), ctx);
  const device::LaneBuffers& b = launch.buffers[desc.buffers];
  char* const bufs[3] = {const_cast<char*>(static_cast<const char*>(b.sendbuff)), static_cast<char*>(b.recvbuff),
                         static_cast<char*>(b.scratch)};
  LaneCursor inAt, outAt;  // the leader's
  for (int64_t it = 0; it < desc.iterations; ++it) {
    for (int32_t s = 0; s < desc.nSteps; ++s) {
      const device::LaneStep st = tables.steps[s];
      const int64_t slice = st.ll != 0 ? desc.llSliceElems : desc.sliceElems;
      const int64_t first = it * slice;
      if (first >= st.count) continue;  // this step's regions are done; its peer's step is empty too
      const int64_t n = st.count - first < slice ? st.count - first : slice;
      const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(T);
      const StepKind kind = decodeStepKind(st.kind);
      const device::FifoView* in = stepReceives(kind) ? laneFifo(launch, tables, s, st.recvFifo, false) : nullptr;
      const device::FifoView* out = stepSends(kind) ? laneFifo(launch, tables, s, st.sendFifo, true) : nullptr;

      LaneTurn turn{device::kLaneOk, 0, 0};
      if (ctx.leader()) turn = laneAcquire(launch, lane, s, it, st, in, out, &inAt, &outAt, bytes, b.recvStamp);
      turn = laneAgree(ctx, turn);
      if (turn.code != device::kLaneOk) return;

      // An LL message is unpacked into the slot its count names, and one to send is assembled in
      // the sender's stage; the step then reads and writes slots as it does without LL.
      char* inSlot = in != nullptr ? laneSlot(*in, turn.in) : nullptr;
      if (in != nullptr && st.ll != 0 && in->ll != nullptr &&
          !laneUnpackLL(launch, lane, s, it, st.recvFifo, *in, turn.in, inSlot, bytes, ctx)) {
        return;
      }
      const bool outLL = out != nullptr && st.ll != 0 && out->ll != nullptr;
      char* outSlot = out == nullptr ? nullptr : outLL ? out->llStage : laneSlot(*out, turn.out);
      char* src = bufs[st.srcBuf] + static_cast<size_t>(st.srcOffset + first) * sizeof(T);
      char* dst = bufs[st.dstBuf] + static_cast<size_t>(st.dstOffset + first) * sizeof(T);
      const StepOperands o = stepOperands(kind, src, inSlot, dst, outSlot);
      const bool own = stepReads(kind) && st.srcBuf == kLaneBufSend;
      // A copy onto itself moves nothing, unless it multiplies this rank's input in place.
      if (!isNoOpCopy(kind, src == dst, Steps::kScalesOwn && own)) {
        reduceCopy<T>(steps.pick(st.final != 0, own, scalar), o.nSrcs, o.srcs, o.nDsts, o.dsts,
                      static_cast<size_t>(n), ctx.tid(), ctx.nthreads());
      }
      ctx.barrier();  // every thread's share is written (and the incoming slot read)
      if (outLL) {
        llPackMessage(laneLLSlot(*out, turn.out), outSlot, bytes, b.sendStamp, llFlag(turn.out), ctx.tid(),
                      ctx.nthreads());
      }
      if (ctx.leader()) laneRelease(in, out, &inAt, &outAt, bytes, b.sendStamp, outLL);
    }
  }
}

}  // namespace kernel
}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_DEVICE_LANE_PROGRAM_CUH_
