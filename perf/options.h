// weft-perf's command line: the nccl-tests flags (same letters, long names and defaults), plus
// the collective choice (positional, --coll/-x, or the program name such as all_reduce_perf),
// the standalone launcher's -np/--nranks, and weft-perf's own --compare, --mem, --weft-net,
// --json, --csv and --plot. Pure parsing; main.cc and the tests call it.
#ifndef WEFT_PERF_OPTIONS_H_
#define WEFT_PERF_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "perf/collectives.h"
#include "weft/weft.h"

namespace weft::perf {

// Where the buffers live (--mem). kAuto: device memory when there is a GPU, else host.
enum class MemKind { kAuto, kHost, kDevice };

struct Options {
  Collective coll = Collective::kAllReduce;
  int nThreads = 1;                                   // -t: ranks (threads) per process
  int nGpus = 1;                                      // -g: GPUs per thread (host memory: 1)
  size_t minBytes = 32u << 20;                        // -b
  size_t maxBytes = 32u << 20;                        // -e
  size_t stepBytes = 1u << 20;                        // -i
  size_t stepFactor = 1;                              // -f (> 1: multiplicative stepping, else -i)
  int iters = 20;                                     // -n
  int warmupIters = 5;                                // -w
  int aggIters = 1;                                   // -m
  int runCycles = 1;                                  // -N (0: forever)
  int check = 1;                                      // -c: correctness iterations (0: none, N/A)
  std::vector<weftRedOp_t> ops = {weftSum};           // -o
  std::vector<weftDataType_t> types = {weftFloat32};  // -d
  int root = 0;                                       // -r (-1: every rank in turn)
  int blocking = 0;                                   // -z
  int average = 1;                                    // -a: 0 rank 0, 1 avg, 2 min, 3 max
  int timeoutS = 0;                                   // -T (0: the library's WEFT_TIMEOUT_S)
  int cudaGraph = 0;                                  // -G
  int reportCpuTime = 0;                              // -C
  int streamNull = 0;                                 // -y
  int localRegister = 0;                              // -R: 1 = weftMemAlloc host buffers + weftCommRegister
  std::string jsonFile;                               // -J / --json: results.h's JSON
  std::string csvFile;                                // --csv
  std::string plotFile;                               // --plot: an SVG picture
  std::vector<std::string> compare;                   // --compare: peer libraries run beside Weft, in order
  MemKind mem = MemKind::kAuto;                       // --mem; kHost or kDevice once the launcher resolved it
  MemKind memAsked = MemKind::kAuto;                  // what --mem said, kept when mem is resolved
  int nranks = 0;                                     // -np / --nranks (0: not given)
  bool weftNet = false;                               // --weft-net: Weft's network path between the ranks
  std::string weftPath;                               // set by the launcher with --weft-net: that path, for the header
  bool help = false;                                  // --help / -h
  std::vector<std::string> notes;                     // "# Note: ..." lines: inactive flags, launcher decisions
  // --gloo-store, else filled by the fork launcher: where Gloo's ranks meet ("" = a fresh
  // directory in /tmp on rank 0's host, which only ranks on that host see).
  std::string peerStoreDir;
};

// What parsing decided. ok with opts->help set: print the usage and exit 0.
struct ParseResult {
  bool ok = true;
  std::string error;  // one line, without "weft-perf: " and without the usage text
};

// argv[0]'s basename all_reduce_perf etc. picks the collective; other names leave it alone.
bool collectiveFromProgramName(const char* argv0, Collective* coll);

// Parses argv[1..argc) into *opts (starting from *opts, so argv[0]'s choice survives).
ParseResult parseOptions(int argc, const char* const* argv, Options* opts);

// Parses "8", "64K", "1M", "8G" (powers of 1024, case-insensitive). False on anything else.
bool parseSize(const std::string& text, size_t* bytes);

std::string usageText(const char* prog);

// The libraries --compare accepts ("mpi", "gloo", "nccl"); Weft itself is always measured.
const std::vector<std::string>& comparePeerNames();

// "host" / "device" ("auto" for kAuto).
const char* memName(MemKind m);

// The memory a run uses: kAuto becomes device when there is a GPU (gpu_api.h), else host.
// noGpuReason is nullptr when there is one, else why not (gpuApi()'s sentence, "no GPU (...)");
// asking for device memory without one fails with "--mem device: <reason>; run with --mem host"
// in *error.
bool resolveMemory(MemKind requested, const char* noGpuReason, MemKind* out, std::string* error);

// argv[1..argc) without -np/--nranks and its value: the command line a re-run under mpirun
// takes (mpirun makes the ranks instead). Values of other flags are skipped over, never taken
// for flags.
std::vector<std::string> argsWithoutRankCount(int argc, const char* const* argv);

// The command that runs this one again under mpirun: `mpirun -np N [--oversubscribe] [--bind-to
// none] self args`, args being argv's without -np. Open MPI (openMpi) gets --bind-to none, so
// ranks float as forked ones do, and --oversubscribe when N is above cpus (it refuses otherwise).
std::vector<std::string> mpirunCommand(const std::string& mpirun, bool openMpi, int nranks, int cpus,
                                       const std::string& self, int argc, const char* const* argv);

}  // namespace weft::perf

#endif  // WEFT_PERF_OPTIONS_H_
