// The reference interpreter: proves schedules correct without any transport. It builds every
// rank's schedule and runs them all, exactly per the execution model in schedule.h, over
// symbolic values: each element holds the set of ranks whose contributions it sums, the index
// of the element in the logical vector, whether the op's post-processing was applied, and (for
// a premul-sum) which contributions were multiplied by the scalar.
// Messages travel through bounded FIFOs keyed (src rank, dst rank, lane); lanes are stepped
// round-robin. It reports the first thing that goes wrong: a bad region, mismatched message
// sizes, a reduction of unlike elements or of a contribution twice, a deadlock, a message
// nobody receives, a race between two lanes of one rank, or a final buffer that is not exactly
// what the collective promises.
//
// Lanes and FIFOs are deterministic processes (a step waits for one message and/or one free
// slot, never for "whichever comes first"), so one run decides deadlock and the values for
// every interleaving, provided lanes of one rank that share memory are ordered by messages,
// which the race check proves (vector clocks over the lanes that share memory).
//
// Used by tests/unit/collectives (all algorithms, 1..64 ranks and more) and by anyone who
// writes a new algorithm: run it through verifySchedule before an executor ever sees it.
#ifndef WEFT_COLLECTIVES_INTERPRETER_H_
#define WEFT_COLLECTIVES_INTERPRETER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/schedule.h"

namespace weft {
namespace coll {

struct VerifyOptions {
  int64_t sliceElems = 64;  // elements per slice (one FIFO slot), >= 1
  // Alias the buffers as NCCL's in-place calls do: all-reduce, broadcast, reduce: send ==
  // recv; all-gather: send == recv + rank * count; reduce-scatter: recv == send + rank * count.
  // All-to-all has no in-place form.
  bool inPlace = false;
  // Slots per FIFO. Rings need 2 (see schedule.h); trees, chains and pairwise work with 1.
  int fifoCapacity = 2;
  // Check that lanes of one rank which touch the same element (one of them writing) are
  // ordered by messages. Costs a vector clock over those lanes per message.
  bool checkRaces = true;
  // Premul-sum (reducing collectives): model what the executors do, multiplying a value by the
  // op's scalar whenever a step reads it from the send buffer (Buf::kSend), and check that every
  // contribution of every result was multiplied exactly once (none missed, none twice).
  bool preMul = false;
};

// "" when every rank's schedule for p, run over the symbolic values, ends with exactly the
// collective's result; else a description of the first failure (rank, lane, step, iteration,
// element). fifoCapacity defaults to 2, the fewest slots a ring can run with.
std::string verifySchedule(const ScheduleParams& p, int64_t sliceElems, bool inPlace, int fifoCapacity = 2);
std::string verifySchedule(const ScheduleParams& p, const VerifyOptions& options);

// The same for schedules given by the caller (one per rank, in rank order), e.g. a built
// schedule with a deliberate mistake, or an algorithm under development.
std::string verifySchedules(const ScheduleParams& p, const std::vector<RankSchedule>& schedules,
                            const VerifyOptions& options);

// buildSchedule for every rank.
std::vector<RankSchedule> buildAllSchedules(const ScheduleParams& p);

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_INTERPRETER_H_
