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

#include "collectives/schedule.h"

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

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_TRAFFIC_H_
