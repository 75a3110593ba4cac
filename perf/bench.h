// One rank's whole benchmark on an initialised communicator: the loops over run cycles, types,
// ops, roots and sizes; the timed calls; the correctness checks; the table (rank 0 prints).
// Uses the public C API only; the launcher (launch.h) makes the communicator.
#ifndef WEFT_PERF_BENCH_H_
#define WEFT_PERF_BENCH_H_

#include "perf/options.h"
#include "weft/weft.h"

namespace weft::perf {

// Runs the benchmark on `comm` and returns the exit status (0 ok, 1 wrong results, a failed
// call or too little bandwidth, 2 a bad argument such as a root out of range). `group` is the
// thread index within the process (the "Group" column). *callFailed says that a Weft call
// failed (the other ranks may be stuck: abort the communicator rather than destroy it). Does
// not free the communicator.
int runBenchmark(const Options& o, const char* program, weftComm_t comm, int group, bool* callFailed);

}  // namespace weft::perf

#endif  // WEFT_PERF_BENCH_H_
