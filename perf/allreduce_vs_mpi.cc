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

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.minBytes = 8;
  o.maxBytes = 64u << 20;
  o.stepFactor = 4;
  const ParseResult parsed = parseOptions(argc, argv, &o);
  if (!parsed.ok || o.help) {
    std::fprintf(parsed.ok ? stdout : stderr,
                 "%s%susage: %s [-b minbytes] [-e maxbytes] [-f factor | -i step] [-n iters] [-w warmup] [-R 0|1]\n"
                 "  run under mpirun: compares MPI_Allreduce with weftAllReduce (float, sum)\n",
                 parsed.ok ? "" : ("weft-bench-mpi: " + parsed.error + "\n").c_str(), parsed.ok ? "" : "\n", argv[0]);
    return parsed.ok ? 0 : 2;
  }
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);

  weftUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (rank == 0) {
    const weftResult_t r = weftGetUniqueId(&id);
    if (r != weftSuccess) die(rank, "weftGetUniqueId", r, nullptr);
  }
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  weftComm_t comm = nullptr;
  weftResult_t r = weftCommInitRank(&comm, n, id, rank);
  if (r != weftSuccess) die(rank, "weftCommInitRank", r, nullptr);

  const size_t maxCount = o.maxBytes / sizeof(float);
  // -R 1: weft-perf's buffers from weftMemAlloc (RankBuffers), registered for the life of the
  // communicator (which frees the handles).
  std::unique_ptr<RankBuffers> registered;
  std::vector<float> sendVec, recvVec;
  float* sendData = nullptr;
  float* recvData = nullptr;
  if (o.localRegister) {
    const size_t bytes = (maxCount > 0 ? maxCount : 1) * sizeof(float);
    std::string error;
    if (!RankBuffers::make(bytes, nullptr, &registered, &error, true)) {
      std::fprintf(stderr, "weft-bench-mpi: rank %d: %s\n", rank, error.c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (char* p : {registered->send(), registered->recv()}) {
      void* handle = nullptr;
      r = weftCommRegister(comm, p, bytes, &handle);
      if (r != weftSuccess) die(rank, "weftCommRegister", r, comm);
    }
    sendData = reinterpret_cast<float*>(registered->send());
    recvData = reinterpret_cast<float*>(registered->recv());
  } else {
    sendVec.resize(maxCount > 0 ? maxCount : 1);
    recvVec.resize(maxCount > 0 ? maxCount : 1);
    sendData = sendVec.data();
    recvData = recvVec.data();
  }
  const int blockIters = (o.iters + kBlocks - 1) / kBlocks;

  if (rank == 0) {
    std::printf(
        "# weft-bench-mpi: float sum all-reduce, %d ranks, MPI_Allreduce vs weftAllReduce on the same buffers\n", n);
    std::printf(
        "# %d blocks of %d iterations per library and size, alternating; warmup %d; times averaged over ranks\n",
        kBlocks, blockIters, o.warmupIters);
    if (underRealTimePolicy())
      std::printf("# real-time policy: every block starts after a %d ms pause (RT throttling)\n", kRtPauseMs);
    std::printf("# %10s  %10s  %10s  %10s  %10s  %9s  %9s  %s\n", "size", "MPI time", "MPI busbw", "Weft time",
                "Weft busbw", "bw ratio", "lat ratio", "check");
    std::printf("# %10s  %10s  %10s  %10s  %10s  %9s  %9s\n", "(B)", "(us)", "(GB/s)", "(us)", "(GB/s)", "Weft/MPI",
                "Weft/MPI");
    std::fflush(stdout);
  }

  int64_t wrongTotal = 0;
  for (size_t bytes : sizeSteps(o.minBytes, o.maxBytes, o.stepBytes, o.stepFactor)) {
    const size_t count = bytes / sizeof(float);
    const int icount = static_cast<int>(count);
    auto runMpi = [&](int iters) {
      for (int i = 0; i < iters; ++i)
        MPI_Allreduce(sendData, recvData, icount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    };
    auto runWeft = [&](int iters) {
      for (int i = 0; i < iters; ++i) {
        const weftResult_t wr = weftAllReduce(sendData, recvData, count, weftFloat32, weftSum, comm, nullptr);
        if (wr != weftSuccess) die(rank, "weftAllReduce", wr, comm);
      }
    };
    DataSpec d;
    d.nranks = n;
    d.rank = rank;
    d.counts = collCounts(Collective::kAllReduce, bytes, sizeof(float), n);
    fillInput(d, sendData, 0, count);
    pauseForRtThrottling();
    runMpi(o.warmupIters);
    runWeft(o.warmupIters);

    double sec[2] = {0, 0};  // 0 MPI, 1 Weft
    for (int b = 0; b < kBlocks; ++b) {
      for (int k = 0; k < 2; ++k) {
        const int lib = (b % 2 == 0) ? k : 1 - k;
        pauseForRtThrottling();
        MPI_Barrier(MPI_COMM_WORLD);
        const auto t0 = std::chrono::steady_clock::now();
        if (lib == 0)
          runMpi(blockIters);
        else
          runWeft(blockIters);
        sec[lib] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
    }
    for (double& s : sec) s /= static_cast<double>(kBlocks) * blockIters;
    MPI_Allreduce(MPI_IN_PLACE, sec, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (double& s : sec) s /= n;

    // Verify both on fresh inputs.
    int64_t wrong[2] = {0, 0};
    d.rep = 1;
    fillInput(d, sendData, 0, count);
    fillSentinel(weftFloat32, recvData, count);
    MPI_Allreduce(sendData, recvData, icount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    wrong[0] = countWrong(d, recvData);
    fillSentinel(weftFloat32, recvData, count);
    runWeft(1);
    wrong[1] = countWrong(d, recvData);
    MPI_Allreduce(MPI_IN_PLACE, wrong, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    wrongTotal += wrong[0] + wrong[1];

    if (rank == 0) {
      const double bwMpi = busBw(count * sizeof(float), sec[0], n), bwWeft = busBw(count * sizeof(float), sec[1], n);
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
  }
  if (rank == 0)
    std::printf("# wrong elements: %lld %s\n", static_cast<long long>(wrongTotal), wrongTotal ? "FAILED" : "OK");
  weftCommDestroy(comm);
  MPI_Finalize();
  return wrongTotal ? 1 : 0;
}
