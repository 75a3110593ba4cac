// The table of the comparison benchmarks (weft-bench-net; later weft-perf --compare): per size,
// each library's time and bus bandwidth side by side, then the first library's speed relative
// to each of the others and to the fastest of them. Pure formatting and arithmetic, no MPI and
// no communicator, so that tests/perf can check it.
#ifndef WEFT_PERF_COMPARE_REPORT_H_
#define WEFT_PERF_COMPARE_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "perf/collectives.h"

namespace weft::perf {

// What became of one library at one size.
enum class LibState {
  kRan,          // timed and checked
  kFailed,       // a call failed, here or at an earlier size (the library is out of the run)
  kUnsupported,  // the library has no such collective, type or op
};

struct LibSample {
  LibState state = LibState::kRan;
  double seconds = 0;  // mean time of one call
  int64_t wrong = 0;   // wrong elements in the check after the timing, over all ranks
};

// A sample that took part cleanly: ran, took time, and gave the right answer.
bool sampleIsClean(const LibSample& s);

struct CompareRow {
  size_t bytes = 0;       // the size column (rowBytes of the counts)
  size_t paramCount = 0;  // the call's count argument, for the bandwidth
  size_t typeSize = 4;
  std::vector<LibSample> libs;  // in the order of the names given to formatCompareHeader
};

// How much faster `subject` is than `other`: other.seconds / subject.seconds, which is also
// the ratio of their bus bandwidths (> 1: subject faster). 0 when either is not clean.
double speedRatio(const LibSample& subject, const LibSample& other);

// The index (>= 1) of the fastest clean library other than the first, or -1 when none is.
int fastestPeer(const CompareRow& row);

// "weft,gloo,mpi": names from `known`, each at most once, at least one. On failure returns
// false with a sentence in *error.
bool parseLibList(const std::string& text, const std::vector<std::string>& known, std::vector<std::string>* libs,
                  std::string* error);

// The two '#' column-header lines. With two or more names, ratio columns follow for the first
// name against each other one, and (with three or more) against the best of them.
std::string formatCompareHeader(const std::vector<std::string>& names);
// One row: size, then per library time (us) and busbw (GB/s), the ratios, and the check.
std::string formatCompareRow(const CompareRow& row, const std::vector<std::string>& names, Collective coll, int nranks);

}  // namespace weft::perf

#endif  // WEFT_PERF_COMPARE_REPORT_H_
