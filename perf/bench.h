// One rank's whole benchmark on an initialised communicator: the loops over run cycles, types,
// ops, roots and sizes; the timed calls; the correctness checks; the table (rank 0 prints).
// Uses the public C API only; the launcher (launch.h) makes the communicator.
#ifndef WEFT_PERF_BENCH_H_
#define WEFT_PERF_BENCH_H_

#include "perf/gpu_api.h"
#include "perf/options.h"
#include "weft/weft.h"

namespace weft::perf {

// The GPU of a rank whose buffers are device memory (o.mem kDevice): the launcher made it
// current on the rank's thread before creating the communicator.
struct RankDevice {
  GpuApi* gpu = nullptr;
  int device = -1;
  // --mem device was asked for (not reached from auto): a rank whose communicator has no GPU
  // is then an error rather than a reason to fall back to host memory.
  bool asked = false;
};

// Runs the benchmark on `comm` and returns the exit status (0 ok, 1 wrong results, a failed
// call or too little bandwidth, 2 a bad argument such as a root out of range, or device memory
// asked for where Weft has no GPU). `group` is the thread index within the process (the
// "Group" column). *callFailed says that a Weft call failed (the other ranks may be stuck:
// abort the communicator rather than destroy it). Does not free the communicator.
int runBenchmark(const Options& o, const char* program, weftComm_t comm, int group, const RankDevice& dev,
                 bool* callFailed);

}  // namespace weft::perf

#endif  // WEFT_PERF_BENCH_H_
