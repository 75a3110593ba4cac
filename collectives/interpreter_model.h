// The reference interpreter's model (interpreter.cc runs it, interpreter_checks.cc checks the
// schedules before it does): symbolic values, the buffer views of a rank, messages, and the state
// of lanes and ranks. Internal to collectives/; the interface is interpreter.h.
#ifndef WEFT_COLLECTIVES_INTERPRETER_MODEL_H_
#define WEFT_COLLECTIVES_INTERPRETER_MODEL_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "collectives/interpreter.h"
#include "collectives/schedule.h"

namespace weft {
namespace coll {
namespace interp {

// printf into a std::string (at most 1023 characters), for the failure sentences.
using ::weft::formatText;  // base/status.h

// Value::flags.
constexpr uint8_t kHas = 1;      // holds a value (else never written: garbage)
constexpr uint8_t kPost = 2;     // post-processing applied
constexpr uint8_t kWritten = 4;  // memory only: a step wrote this element

// One element as the interpreter sees it: which ranks' contributions it sums, which element of
// the logical vector it is, and what was done to it.
struct Value {
  uint64_t set = 0;  // contributing ranks: bit mask (n <= 64) or sum of rank keys
  int64_t index = 0;
  uint32_t count = 0;  // contributions
  uint8_t flags = 0;
  // Premul-sum: the contributions multiplied by the scalar, as set and count above.
  uint64_t scaled = 0;
  uint32_t scaledCount = 0;
};

// Where a buffer of one rank lives: element `base` of allocation `alloc`.
struct View {
  int alloc = -1;
  int64_t base = 0;
  int64_t size = 0;
  const char* invalid = nullptr;  // why this rank may not use the buffer at all
};

// One slice in flight on a FIFO, with the sender's vector clock and where it was sent from.
struct Message {
  std::vector<Value> values;
  std::vector<uint32_t> clock;
  int lane = 0;
  size_t step = 0;
  int64_t iteration = 0;
};

// Where one lane of one rank is, and its vector clock (race check).
struct LaneState {
  int64_t iteration = 0;
  size_t step = 0;
  bool done = false;
  int track = -1;       // index in the vector clocks, when this lane shares memory with another
  int localTrack = -1;  // index among its rank's tracked lanes
  std::vector<uint32_t> clock;
  std::vector<std::pair<int64_t, size_t>> history;  // (iteration, step) of each epoch, 1-based
};

// Last epoch in which each tracked lane of a rank read / wrote each element of an allocation.
struct Shadow {
  std::vector<std::vector<uint32_t>> lastRead, lastWrite;  // [local track][element]
};

// One rank's memory (send, receive, scratch allocations), its buffer views and lanes.
struct RankState {
  std::vector<Value> allocs[3];
  View views[3];
  std::vector<LaneState> lanes;
  std::vector<int> trackedLanes;  // local track -> lane
  Shadow shadow[3];
};

// Buffer views of rank r, in place or not (interpreter_checks.cc). Sizes come from the parameters.
void bufferViews(const ScheduleParams& p, bool inPlace, int r, View* v);

// The FIFO lane a step sends on: its own lane's unless it names another (schedule.h).
inline int fifoLaneOf(const Step& st, int lane) { return st.sendLane >= 0 ? st.sendLane : lane; }
// A FIFO's key: (src rank, dst rank, FIFO lane) of nRanks ranks with nLanes lanes.
inline int64_t fifoKeyOf(int src, int dst, int lane, int nRanks, int nLanes) {
  return (static_cast<int64_t>(src) * nRanks + dst) * static_cast<int64_t>(nLanes) + lane;
}

// The checks before a run (interpreter_checks.cc): parameters and options, one schedule per rank
// with the same lanes and maxStepCount, every step's peers and regions, a single sender per FIFO.
// "" or the first failure.
std::string checkSchedulesStatic(const ScheduleParams& p, const std::vector<RankSchedule>& s, const VerifyOptions& o);

}  // namespace interp
}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_INTERPRETER_MODEL_H_
