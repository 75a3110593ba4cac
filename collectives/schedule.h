// Schedules: algorithms as data (../shared/DESIGN.md, "Algorithms are data").
//
// An algorithm is a pure function (parameters, rank) -> RankSchedule: for one rank, a list of
// lanes, each an ordered list of steps over regions of the user's send and receive buffers.
// Executors (host now, device later) run schedules over transport connections; the reference
// interpreter (interpreter.h) runs every rank's schedule over symbolic values, with no
// transport, and proves that each rank ends with exactly the right contributions and that the
// steps cannot deadlock.
//
// Execution model, shared by every executor and the interpreter:
//  - Lanes of one rank run concurrently. A message sent on lane L by rank A goes to lane L of
//    the receiving rank B, through the FIFO (A -> B, L). Messages on one FIFO arrive in order.
//  - Each lane runs its steps in order, `iterations` times over slices: in iteration i a step
//    covering `count` elements handles elements [i*S, min((i+1)*S, count)) of its regions,
//    where S = sliceElems; a step whose slice is empty does nothing (no message), and the
//    peer's matching step is empty too because matched steps have equal counts.
//  - S is at most one FIFO slot, so each step moves at most one slot per iteration; this is
//    what lets rings pipeline without deadlock when a block is larger than the FIFO.
//  - iterations = ceil(maxStepCount / S), the same on every rank (maxStepCount is a property
//    of the whole schedule, not of one rank).
//  - Nothing but messages orders two lanes of one rank: lanes that touch the same element, one
//    of them writing, must be ordered through messages (the interpreter checks this).
//  - A step's message goes on lane step.sendLane when that is set (>= 0), else on the step's own
//    lane. Only the root of a tree all-reduce uses it: its last reduce step (on the reduce-up
//    lane) sends the finished slice straight into the broadcast-down lane, which is how the
//    down lanes learn that a slice is complete. Every FIFO (A -> B, L) is fed by one lane of A.
//  - Every FIFO needs at least 2 slots: in a ring every rank sends, then each step receives
//    and sends at once, which with one slot per FIFO leaves every FIFO full and every rank
//    waiting (the interpreter proves 2 slots enough for every algorithm here).
//  - Buf::kScratch is a per-call buffer of scratchBufferCount(p) elements the executor
//    provides (contents undefined at the start); only the tree reduce uses it, on ranks that
//    merge two children (they may not write their receive buffer, which may be invalid).
#ifndef WEFT_COLLECTIVES_SCHEDULE_H_
#define WEFT_COLLECTIVES_SCHEDULE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/coll_traits.h"
#include "collectives/step_kind.h"

namespace weft {
namespace coll {

// CollKind, Algo, what each collective is and which algorithms each has (names, algoSupported,
// algoFromName): base/coll_traits.h. StepKind, Buf and what each step kind does: step_kind.h.
// The algorithm implementation table (schedule.cc) adds, per (collective, algorithm) pair that
// exists, its builder, lanes per channel and scratch; everything below reads it.

// Limits validateParams enforces.
constexpr int kMaxScheduleChannels = 32;
constexpr int kMaxScheduleRanks = 1 << 20;

const char* bufName(Buf buf);  // "send", "recv", "scratch"

struct Step {
  StepKind kind = StepKind::kCopy;
  int32_t recvPeer = -1;  // rank it receives from, when stepReceives(kind)
  int32_t sendPeer = -1;  // rank it sends to, when stepSends(kind)
  Buf srcBuf = Buf::kSend;
  int64_t srcOffset = 0;  // elements
  Buf dstBuf = Buf::kRecv;
  int64_t dstOffset = 0;  // elements
  int64_t count = 0;      // elements in the region(s) and in the message(s)
  // This step's result is the complete reduction of every rank's contribution: the op's
  // post-processing (avg: divide by nranks) is applied here, before it is stored or sent.
  bool final = false;
  // The lane its message goes on (that lane of sendPeer receives it); -1: this step's lane.
  int32_t sendLane = -1;
};

struct Lane {
  std::vector<Step> steps;
};

struct RankSchedule {
  int rank = 0;
  std::vector<Lane> lanes;
  int64_t maxStepCount = 0;  // the largest step count over all ranks' steps
};

struct ScheduleParams {
  CollKind kind = CollKind::kAllReduce;
  Algo algo = Algo::kRing;
  int nRanks = 1;
  int root = 0;       // broadcast, reduce
  int nChannels = 1;  // parallel rings/trees, each over its own part of the data
  // Per-call element count, as the API defines it: all-gather's sendcount, reduce-scatter's
  // recvcount, all-to-all's count per peer.
  int64_t count = 0;
  // The parts of the data the algorithm deals out to channels and ring blocks start at multiples
  // of `align` elements (the last part takes the remainder): with partitionAlign(element size),
  // every part starts on a 16-byte boundary of buffers that do, so the device's 16-byte packs
  // cover it whatever the count. 1: parts as even as elements allow.
  int64_t align = 1;
  // Ring orders (each a permutation of 0..nRanks-1, e.g. the topology's rings, host by host):
  // channel c uses ringOrders[c mod size], reversed on every other pass through the list
  // (algorithms.h channelOrder); trees are built over the same order. Empty: 0, 1, ..., n-1.
  std::vector<std::vector<int>> ringOrders;
};

// Elements of `elemSize` bytes per 16 bytes (the device's pack, reduce_copy.cuh): the align of a
// call's ScheduleParams. Every rank computes it from the call's type alone, so every rank of a
// communicator, host or device, builds the same partition. 1 for elements that do not divide 16.
inline int64_t partitionAlign(size_t elemSize) {
  return elemSize > 0 && elemSize < 16 && 16 % elemSize == 0 ? static_cast<int64_t>(16 / elemSize) : 1;
}
constexpr int64_t kMaxPartitionAlign = 16;

// Element counts of the send and receive buffers for these parameters on any rank:
// collExtents (coll_traits.h) for p.kind, p.count, p.nRanks.
int64_t sendBufferCount(const ScheduleParams& p);
int64_t recvBufferCount(const ScheduleParams& p);
// Elements of Buf::kScratch the executor must provide on every rank (0: none).
int64_t scratchBufferCount(const ScheduleParams& p);

// Lanes per channel: lane = channel * lanesPerChannel(p) + k. Every rank's schedule has
// nChannels * lanesPerChannel(p) lanes. Ring, chain, binary tree and pairwise algorithms use
// one lane per channel; the tree all-reduce four: (tree 0 up, tree 0 down, tree 1 up, tree 1 down).
// 1 for a pair the algorithm table does not have.
int lanesPerChannel(const ScheduleParams& p);

// The schedule of one rank. Empty lanes are allowed. p must be valid (validateParams).
RankSchedule buildSchedule(const ScheduleParams& p, int rank);

// "" when the parameters are valid for buildSchedule, else what is wrong.
std::string validateParams(const ScheduleParams& p);

// The slice of a step in an iteration: first element (relative to the step's regions) and
// count; count is 0 when the step does nothing in this iteration.
struct Slice {
  int64_t first = 0;
  int64_t count = 0;
};
inline Slice sliceOf(const Step& step, int64_t iteration, int64_t sliceElems) {
  int64_t first = iteration * sliceElems;
  if (first >= step.count) return Slice{first, 0};
  int64_t n = step.count - first;
  return Slice{first, n < sliceElems ? n : sliceElems};
}
inline int64_t iterationsFor(int64_t maxStepCount, int64_t sliceElems) {
  return maxStepCount <= 0 ? 0 : (maxStepCount + sliceElems - 1) / sliceElems;
}

// The call-check token lane (WEFT_CHECK_CALLS): in a rooted collective a rank may finish without
// hearing from every other (a broadcast's root only sends), so a rank whose peers made another
// call (named another root) could return success or wait for a FIFO no peer makes. Beside such a
// schedule every rank runs this lane, the same whatever the root: a dissemination exchange of one
// element (round d = 1, 2, 4, ... < n: send to position r + d, receive from r - d, mod n). Every
// message carries the call's stamp, and after ceil(log2 n) rounds every rank has received, through
// a chain of accepted stamps, from every rank: no rank completes it unless all made the same call.
// Its steps read Buf::kSend and write Buf::kRecv at offset 0: the executor binds them to a token
// of its own, never the user's buffers. FIFO lane kCallTokenLane lies above every schedule lane.
constexpr int kCallTokenLane = kMaxScheduleChannels * 4;
// The call-check probe lane (ExecPlan::probePeers, host_executor.h): one-byte messages a stalled
// rank of a two-rank rooted collective sends to the peer it waits for. Like the token lane, its
// FIFOs are small and carry nothing of the user's.
constexpr int kCallProbeLane = kCallTokenLane + 1;
// The FIFO lanes of the call checks (tokens, probes): two small slots each.
constexpr bool isCallCheckLane(int lane) { return lane == kCallTokenLane || lane == kCallProbeLane; }
Lane callTokenLane(int nRanks, int rank);

// Human-readable dump (weft-topo --schedule, test failures).
std::string formatSchedule(const RankSchedule& s);
// One step on one line: "recvReduceSend from 2 to 4, src send[10, +5)".
std::string formatStep(const Step& step);

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_SCHEDULE_H_
