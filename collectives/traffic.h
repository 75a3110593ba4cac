// How many bytes a schedule makes each rank move through memory: the byte accounting behind
// the roofline that weft-roofline prints (perf/RESULTS.md, "Roofline").
//
// Every step touches its slice once per operand: it reads its source region (stepReads), reads
// the incoming message (stepReceives), writes its destination region (stepWrites) and writes
// the outgoing message (stepSends). Where the messages live decides what is counted:
//  - kFifo: every message goes through a FIFO slot: the sender writes it, the receiver reads
//    it (the shm transport's bulk path);
//  - kSingleCopy: a plain send lends its source instead (the receiver reads the sender's
//    buffer); steps that send a computed value still write a slot;
//  - kZeroCopy: no slots at all (registered buffers peers map, issue 16 item 3): a plain send
//    costs nothing, a step that sends what it also stores lets the peer read its destination,
//    and only a reduce that sends without storing writes its result once.
// Bytes of steps that reduce are reduce traffic (they run the reduce kernel), the others copy
// traffic. A copy onto the same memory (in place) moves nothing, as the executors skip it.
#ifndef WEFT_COLLECTIVES_TRAFFIC_H_
#define WEFT_COLLECTIVES_TRAFFIC_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>

#include "collectives/schedule.h"
#include "topology/cost_model.h"

namespace weft {
namespace coll {

enum class CopyPath : uint8_t { kFifo, kSingleCopy, kZeroCopy };

const char* copyPathName(CopyPath path);  // "fifo", "single-copy", "zero-copy"

// Bytes read plus bytes written.
struct Traffic {
  double copyBytes = 0;
  double reduceBytes = 0;
  double total() const { return copyBytes + reduceBytes; }
};

// One step moving `bytes` bytes per operand.
Traffic stepTraffic(const Step& step, double bytes, CopyPath path, bool inPlace);

// One rank's schedule; elemSize bytes per element; inPlace: send and receive buffer are one.
Traffic rankTraffic(const RankSchedule& s, size_t elemSize, CopyPath path, bool inPlace);

// The busiest rank's traffic for p (valid for buildSchedule) and the bound it sets: the time
// to move it at copyBytesPerS for copy traffic and reduceBytesPerS for reduce traffic.
Traffic busiestRankTraffic(const ScheduleParams& p, size_t elemSize, CopyPath path, bool inPlace);
double boundSeconds(const Traffic& t, double copyBytesPerS, double reduceBytesPerS);

// The zero-copy all-reduce of registered buffers (direct_host.h, not a schedule): the busiest
// rank's traffic for `bytes` per buffer on nRanks ranks. Its block b: 2 ranks, one reduce that
// stores twice (4 b, i.e. 2.0 x the buffer); n ranks, a reduce of the first two inputs (3 b),
// n - 3 more (3 b each), a last one that stores twice (4 b), copies to the n - 2 other outputs
// (2 b each).
Traffic directAllReduceTraffic(int nRanks, size_t elemSize, int64_t count);

// ---- What a schedule makes its busiest rank do: the host cost model's work ----
//
// The plain numbers of topo::HostWork (topology/cost_model.h), counted over every rank's
// schedule for p, each the most of any rank:
//   sent     bytes of the steps that send;
//   copies   sent (a copy into each slot sent) plus the bytes received by steps that do not
//            reduce (recv, recvCopySend: a copy out of each slot received);
//   reduces  bytes received by steps that reduce;
//   hops     the longest chain of messages: a step finishes one unit after the message it
//            receives was sent, and no sooner than the step before it on its lane.
// A step with no elements moves nothing and waits for nothing. Local copies (kCopy: a rank's
// own data into its receive buffer) are left out, as the host model always priced them: it
// prices the messages, and whether a call copies locally depends on the call (in or out of
// place) more than on the algorithm.
topo::HostWork scheduleWork(const ScheduleParams& p, size_t elemSize);

// The tuner's HostWorkSource (topology/tuner.h Tuner::build): the work of the pair's schedule
// at `bytes`, in float elements, one channel (channels split the data, not the work; the model
// prices their lanes itself). Below kExactElemsPerRank elements of the larger buffer per rank
// (where blocks are empty or uneven) each size is built exactly; above, the pair is built once
// at a large size and its bytes scale linearly (hops stay), so a tuner's 41 size classes cost
// a few schedule builds per pair. One source per tuner build: it caches, unlocked.
class ScheduleWorkSource final : public topo::HostWorkSource {
 public:
  static constexpr int64_t kExactElemsPerRank = 2 * kMaxPartitionAlign;
  bool work(CollKind kind, Algo algo, int nRanks, int64_t bytes, topo::HostWork* out) override;

 private:
  std::map<std::tuple<CollKind, Algo, int>, topo::HostWork> large_;  // at largeCount elements
};

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_TRAFFIC_H_
