// weft-bench-mpi: float-sum all-reduce, MPI_Allreduce against weftAllReduce on the same
// buffers, under `mpirun -np 2` (or more). For each size the two libraries alternate in blocks
// of iterations (MPI first in even blocks, Weft first in odd ones) so that drift of the
// machine (frequency, other load, page cache) hits both equally. Both results are verified
// after the timing. Flags: -b -e -f -n -w as in weft-perf (defaults 8 B .. 64 MiB, x4); -R 1
// takes both buffers from weftMemAlloc and registers them with weftCommRegister (Weft's
// zero-copy path; MPI runs on the same memory).
// Under a real-time policy each block starts after a pause (perf/rt_pause.h: RT throttling).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // the C API only: no C++ bindings
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "perf/collectives.h"
#include "perf/expected.h"
#include "perf/options.h"
#include "perf/rank_buffers.h"
#include "perf/rt_pause.h"
#include "perf/sizes.h"
#include "weft/weft.h"

namespace {

using namespace weft::perf;

constexpr int kBlocks = 4;  // blocks per library per size; the order flips every block

double busBw(size_t bytes, double sec, int n) {
  return sec > 0 ? static_cast<double>(bytes) / 1e9 / sec * busBwFactor(Collective::kAllReduce, n) : 0.0;
}

void die(int rank, const char* what, weftResult_t r, weftComm_t comm) {
  std::fprintf(stderr, "weft-bench-mpi: rank %d: %s failed: %s: %s\n", rank, what, weftGetErrorString(r),
               weftGetLastError(comm));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// One rank's run: its place in MPI_COMM_WORLD, its communicator and the buffers both libraries
// use (from weftMemAlloc and registered with -R 1, else plain vectors).
struct Run {
  const Options* o = nullptr;
  int rank = 0, n = 1;
  weftComm_t comm = nullptr;
  std::unique_ptr<RankBuffers> registered;
  std::vector<float> sendVec, recvVec;
  float* sendData = nullptr;
  float* recvData = nullptr;
  int blockIters = 0;
};

// Usage on -h (exit 0) or after a bad flag (exit 2); -1 when the run goes on.
int usageExit(const ParseResult& parsed, const Options& o, const char* argv0) {
  if (parsed.ok && !o.help) return -1;
  std::fprintf(parsed.ok ? stdout : stderr,
               "%s%susage: %s [-b minbytes] [-e maxbytes] [-f factor | -i step] [-n iters] [-w warmup] [-R 0|1]\n"
               "  run under mpirun: compares MPI_Allreduce with weftAllReduce (float, sum)\n",
               parsed.ok ? "" : ("weft-bench-mpi: " + parsed.error + "\n").c_str(), parsed.ok ? "" : "\n", argv0);
  return parsed.ok ? 0 : 2;
}

// The Weft communicator over MPI_COMM_WORLD: rank 0's unique id, broadcast through MPI.
void initWeft(Run* run) {
  weftUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (run->rank == 0) {
    const weftResult_t r = weftGetUniqueId(&id);
    if (r != weftSuccess) die(run->rank, "weftGetUniqueId", r, nullptr);
  }
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  weftResult_t r = weftCommInitRank(&run->comm, run->n, id, run->rank);
  if (r != weftSuccess) die(run->rank, "weftCommInitRank", r, nullptr);
}

// The two buffers of maxCount floats.
void allocateBuffers(Run* run, size_t maxCount) {
  // -R 1: weft-perf's buffers from weftMemAlloc (RankBuffers), registered for the life of the
  // communicator (which frees the handles).
  if (run->o->localRegister) {
    const size_t bytes = (maxCount > 0 ? maxCount : 1) * sizeof(float);
    std::string error;
    if (!RankBuffers::make(bytes, nullptr, &run->registered, &error, true)) {
      std::fprintf(stderr, "weft-bench-mpi: rank %d: %s\n", run->rank, error.c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (char* p : {run->registered->send(), run->registered->recv()}) {
      void* handle = nullptr;
      weftResult_t r = weftCommRegister(run->comm, p, bytes, &handle);
      if (r != weftSuccess) die(run->rank, "weftCommRegister", r, run->comm);
    }
    run->sendData = reinterpret_cast<float*>(run->registered->send());
    run->recvData = reinterpret_cast<float*>(run->registered->recv());
  } else {
    run->sendVec.resize(maxCount > 0 ? maxCount : 1);
    run->recvVec.resize(maxCount > 0 ? maxCount : 1);
    run->sendData = run->sendVec.data();
    run->recvData = run->recvVec.data();
  }
}

// Rank 0's header: what is compared, how it is timed, and the column names.
void printHeader(const Run& run) {
  std::printf("# weft-bench-mpi: float sum all-reduce, %d ranks, MPI_Allreduce vs weftAllReduce on the same buffers\n",
              run.n);
  std::printf("# %d blocks of %d iterations per library and size, alternating; warmup %d; times averaged over ranks\n",
              kBlocks, run.blockIters, run.o->warmupIters);
  if (underRealTimePolicy())
    std::printf("# real-time policy: every block starts after a %d ms pause (RT throttling)\n", kRtPauseMs);
  std::printf("# %10s  %10s  %10s  %10s  %10s  %9s  %9s  %s\n", "size", "MPI time", "MPI busbw", "Weft time",
              "Weft busbw", "bw ratio", "lat ratio", "check");
  std::printf("# %10s  %10s  %10s  %10s  %10s  %9s  %9s\n", "(B)", "(us)", "(GB/s)", "(us)", "(GB/s)", "Weft/MPI",
              "Weft/MPI");
  std::fflush(stdout);
}

// iters all-reduces of count floats by MPI (lib 0) or Weft (lib 1).
void runLib(const Run& run, int lib, size_t count, int iters) {
  for (int i = 0; i < iters; ++i) {
    if (lib == 0) {
      MPI_Allreduce(run.sendData, run.recvData, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else {
      const weftResult_t wr = weftAllReduce(run.sendData, run.recvData, count, weftFloat32, weftSum, run.comm, nullptr);
      if (wr != weftSuccess) die(run.rank, "weftAllReduce", wr, run.comm);
    }
  }
}

// The seconds per call of each library (0 MPI, 1 Weft), over kBlocks alternating blocks,
// averaged over the ranks.
void timeBlocks(const Run& run, size_t count, double sec[2]) {
  for (int b = 0; b < kBlocks; ++b) {
    for (int k = 0; k < 2; ++k) {
      const int lib = (b % 2 == 0) ? k : 1 - k;
      pauseForRtThrottling();
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = std::chrono::steady_clock::now();
      runLib(run, lib, count, run.blockIters);
      sec[lib] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  for (int lib = 0; lib < 2; ++lib) sec[lib] /= static_cast<double>(kBlocks) * run.blockIters;
  MPI_Allreduce(MPI_IN_PLACE, sec, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (int lib = 0; lib < 2; ++lib) sec[lib] /= run.n;
}

// Verify both on fresh inputs: the wrong elements of each library, summed over the ranks.
void verifyBoth(const Run& run, DataSpec d, size_t count, int64_t wrong[2]) {
  d.rep = 1;
  fillInput(d, run.sendData, 0, count);
  fillSentinel(weftFloat32, run.recvData, count);
  runLib(run, 0, count, 1);
  wrong[0] = countWrong(d, run.recvData);
  fillSentinel(weftFloat32, run.recvData, count);
  runLib(run, 1, count, 1);
  wrong[1] = countWrong(d, run.recvData);
  MPI_Allreduce(MPI_IN_PLACE, wrong, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
}

// Rank 0's row for one size.
void printRow(const Run& run, size_t count, const double sec[2], const int64_t wrong[2]) {
  const double bwMpi = busBw(count * sizeof(float), sec[0], run.n);
  const double bwWeft = busBw(count * sizeof(float), sec[1], run.n);
  char check[64];
  if (wrong[0] || wrong[1])
    std::snprintf(check, sizeof check, "WRONG mpi=%lld weft=%lld", static_cast<long long>(wrong[0]),
                  static_cast<long long>(wrong[1]));
  else
    std::snprintf(check, sizeof check, "ok");
  std::printf("  %10zu  %10.2f  %10.3f  %10.2f  %10.3f  %9.3f  %9.3f  %s\n", count * sizeof(float), sec[0] * 1e6,
              bwMpi, sec[1] * 1e6, bwWeft, bwMpi > 0 ? bwWeft / bwMpi : 0.0, sec[0] > 0 ? sec[1] / sec[0] : 0.0,
              check);
  std::fflush(stdout);
}

// One size: warm-up, the timed blocks, the check and rank 0's row; the wrong elements found.
int64_t benchSize(const Run& run, size_t bytes) {
  const size_t count = bytes / sizeof(float);
  DataSpec d;
  d.nranks = run.n;
  d.rank = run.rank;
  d.counts = collCounts(Collective::kAllReduce, bytes, sizeof(float), run.n);
  fillInput(d, run.sendData, 0, count);
  pauseForRtThrottling();
  runLib(run, 0, count, run.o->warmupIters);
  runLib(run, 1, count, run.o->warmupIters);
  double sec[2] = {0, 0};  // 0 MPI, 1 Weft
  timeBlocks(run, count, sec);
  int64_t wrong[2] = {0, 0};
  verifyBoth(run, d, count, wrong);
  if (run.rank == 0) printRow(run, count, sec, wrong);
  return wrong[0] + wrong[1];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.minBytes = 8;
  o.maxBytes = 64u << 20;
  o.stepFactor = 4;
  const ParseResult parsed = parseOptions(argc, argv, &o);
  if (int rc = usageExit(parsed, o, argv[0]); rc >= 0) return rc;
  MPI_Init(&argc, &argv);
  Run run;
  run.o = &o;
  MPI_Comm_rank(MPI_COMM_WORLD, &run.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &run.n);
  initWeft(&run);
  allocateBuffers(&run, o.maxBytes / sizeof(float));
  run.blockIters = (o.iters + kBlocks - 1) / kBlocks;
  if (run.rank == 0) printHeader(run);

  int64_t wrongTotal = 0;
  for (size_t bytes : sizeSteps(o.minBytes, o.maxBytes, o.stepBytes, o.stepFactor)) wrongTotal += benchSize(run, bytes);
  if (run.rank == 0)
    std::printf("# wrong elements: %lld %s\n", static_cast<long long>(wrongTotal), wrongTotal ? "FAILED" : "OK");
  weftCommDestroy(run.comm);
  MPI_Finalize();
  return wrongTotal ? 1 : 0;
}
