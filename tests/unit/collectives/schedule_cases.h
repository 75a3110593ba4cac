// What the schedule tests build: the parameters of one collective, and every collective with
// every algorithm that builds it. Shared by schedules_test.cc, interpreter_test.cc,
// premul_test.cc and the lane tests (lane_world.h).
#ifndef WEFT_TESTS_UNIT_COLLECTIVES_SCHEDULE_CASES_H_
#define WEFT_TESTS_UNIT_COLLECTIVES_SCHEDULE_CASES_H_

#include <cstdint>
#include <string>

#include "collectives/schedule.h"

namespace weft {
namespace coll {
namespace testing {

inline ScheduleParams scheduleParams(CollKind kind, Algo algo, int n, int64_t count, int channels = 1, int root = 0) {
  ScheduleParams p;
  p.kind = kind;
  p.algo = algo;
  p.nRanks = n;
  p.count = count;
  p.nChannels = channels;
  p.root = root;
  return p;
}

struct AlgoCase {
  CollKind kind;
  Algo algo;
};

inline constexpr AlgoCase kAlgos[] = {
    {CollKind::kAllReduce, Algo::kRing},
    {CollKind::kAllReduce, Algo::kTree},
    {CollKind::kAllReduce, Algo::kRecursiveDoubling},
    {CollKind::kAllGather, Algo::kRing},
    {CollKind::kReduceScatter, Algo::kRing},
    {CollKind::kBroadcast, Algo::kRing},
    {CollKind::kBroadcast, Algo::kTree},
    {CollKind::kReduce, Algo::kRing},
    {CollKind::kReduce, Algo::kTree},
    {CollKind::kAllToAll, Algo::kPairwise},
};

// "allreduce_ring": a test name.
inline std::string algoCaseName(const AlgoCase& c) { return std::string(collName(c.kind)) + "_" + algoName(c.algo); }

}  // namespace testing
}  // namespace coll
}  // namespace weft

#endif  // WEFT_TESTS_UNIT_COLLECTIVES_SCHEDULE_CASES_H_
