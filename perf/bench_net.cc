// weft-bench-net: Weft against Gloo (TCP) and Open MPI in one run, under mpirun, ranks in
// separate processes. Meant for Weft's network transport: run it with WEFT_SHM_DISABLE=1 and
// `mpirun --mca btl tcp,self`, so that all three libraries cross TCP over the same interface
// (loopback on one host; --iface for Gloo).
//
// Per size, every library runs on the same send/receive buffers: a warm-up, then --blocks timed
// blocks each, the order of the libraries rotating from block to block so that drift of the
// machine (frequency, other load) hits all alike; then each result is checked element by
// element on fresh inputs. Times are averaged over ranks; busbw is nccl-tests' (all-reduce:
// algbw x 2(n-1)/n). A library that fails (Weft before its network transport lands: "no
// transport reaches rank N") is reported with its message and left out of the later sizes;
// the others go on. Exit status: 0 all ran and were right, 1 a wrong element or a failure,
// 2 a bad command line.
//
// Flags: weft-perf's -b -e -f -i -n -w (defaults 1K .. 64M, x4, 40 iterations, 5 warm-up), -x
// (collective, default allreduce), -d, -o, -r, -T; and compare_options.h's --libs, --blocks,
// --in-place, --iface, --host, --gloo-allreduce, --gloo-store.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // the C API only: no C++ bindings
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "perf/compare_options.h"
#include "perf/compare_report.h"
#include "perf/datatypes.h"
#include "perf/expected.h"
#include "perf/options.h"
#include "perf/peer_libs.h"
#include "perf/sizes.h"

namespace {

using namespace weft::perf;

constexpr const char* kProgram = "weft-bench-net";

class MpiBootstrap : public PeerBootstrap {
 public:
  MpiBootstrap() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  PeerStatus broadcast(void* data, size_t bytes, int root) override {
    if (bytes > static_cast<size_t>(INT_MAX)) return PeerStatus::failure("bootstrap broadcast too large");
    if (MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD) != MPI_SUCCESS)
      return PeerStatus::failure("MPI_Bcast failed");
    return PeerStatus::success();
  }
  PeerStatus barrier() override {
    if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) return PeerStatus::failure("MPI_Barrier failed");
    return PeerStatus::success();
  }

 private:
  int rank_ = 0;
  int size_ = 1;
};

// A page-aligned host buffer.
struct FreeDeleter {
  void operator()(void* p) const { free(p); }
};
using HostBuffer = std::unique_ptr<char, FreeDeleter>;
HostBuffer allocHost(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, std::max<size_t>(bytes, 64)) != 0) return nullptr;
  return HostBuffer(static_cast<char*>(p));
}

// One library in the run.
struct Lib {
  std::string name;
  std::unique_ptr<PeerLib> peer;  // null once it failed
  bool failed = false;
  std::string failure;  // "at 1024 B on rank 1: ..." for the footer
};

int gRank = 0;
int gNranks = 1;

// Whether every rank's status is ok. If not, the lowest failing rank's message comes back in
// *message ("rank R: ...") on every rank.
bool everyRankOk(const PeerStatus& s, std::string* message) {
  int firstBad = s.ok ? INT_MAX : gRank;
  MPI_Allreduce(MPI_IN_PLACE, &firstBad, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (firstBad == INT_MAX) return true;
  char text[1024] = {0};
  if (gRank == firstBad) std::snprintf(text, sizeof text, "%s", s.error.c_str());
  MPI_Bcast(text, sizeof text, MPI_CHAR, firstBad, MPI_COMM_WORLD);
  *message = "rank " + std::to_string(firstBad) + ": " + text;
  return false;
}

void say(const std::string& s) {
  if (gRank != 0) return;
  std::fputs(s.c_str(), stdout);
  std::fflush(stdout);
}

// Takes the library out of the run, everywhere, and says why.
void retire(Lib& lib, const std::string& where, const std::string& message) {
  lib.peer.reset();
  lib.failed = true;
  lib.failure = where + ", " + message;
  say("# " + lib.name + " FAILED " + lib.failure + "\n");
}

// Runs `iters` calls; the first failure ends them.
PeerStatus repeat(PeerLib& peer, const PeerCall& call, int iters) {
  for (int i = 0; i < iters; ++i) {
    PeerStatus s = peer.run(call);
    if (!s.ok) return s;
  }
  return PeerStatus::success();
}

std::string usage(const char* prog) {
  return std::string("usage: mpirun -np N [--mca btl tcp,self] [-x WEFT_SHM_DISABLE=1] ") + prog +
         " [flags]\n"
         "  -b,-e,-f,-i SIZE        sizes from -b to -e, times -f or plus -i (default 1K .. 64M, x4)\n"
         "  -n,-w N                 timed and warm-up iterations per library and size (default 40, 5)\n"
         "  -x COLL, -d TYPE, -o OP, -r ROOT, -T SECONDS   as weft-perf (default allreduce, float, sum)\n" +
         compareUsageText();
}

// Reads the command line: compare_options.h's flags, then weft-perf's from the rest. -1 when
// the run goes on, else the exit status (0 after -h, 2 after a bad flag, with the usage).
int parseCommandLine(int argc, char** argv, Options* o, CompareOptions* co) {
  const CompareParse cp = parseCompareOptions(argc, argv, co);
  o->minBytes = 1u << 10;
  o->maxBytes = 64u << 20;
  o->stepFactor = 4;
  o->iters = 40;
  o->warmupIters = 5;
  ParseResult parsed;
  if (cp.ok) {
    std::vector<const char*> rest;
    for (const std::string& a : cp.rest) rest.push_back(a.c_str());
    parsed = parseOptions(static_cast<int>(rest.size()), rest.data(), o);
  } else {
    parsed.ok = false;
    parsed.error = cp.error;
  }
  if (!parsed.ok || o->help) {
    if (!parsed.ok) std::fprintf(stderr, "%s: %s\n\n", kProgram, parsed.error.c_str());
    std::fputs(usage(argv[0]).c_str(), parsed.ok ? stdout : stderr);
    return parsed.ok ? 0 : 2;
  }
  co->peers.timeoutS = o->timeoutS;
  return -1;
}

// The whole run: the options, the libraries still in it, the shared buffers and the totals.
struct NetRun {
  const Options& o;
  const CompareOptions& co;
  std::vector<Lib> libs;
  std::vector<std::string> names;
  HostBuffer send, recv;
  int blockIters = 0;
  int64_t failures = 0;
  int64_t wrongTotal = 0;
};

// The header's first lines: what runs, how it is timed, how busbw and speed read.
std::string runHeader(const Options& o, const CompareOptions& co) {
  char hdr[512];
  std::snprintf(hdr, sizeof hdr,
                "# %s: %s%s, %d ranks in separate processes, same buffers; %d blocks of %d iterations per library and "
                "size, order rotating per block; warm-up %d; times averaged over ranks\n",
                kProgram, collectiveName(o.coll), co.inPlace ? " in place" : "", gNranks, co.blocks,
                (o.iters + co.blocks - 1) / co.blocks, o.warmupIters);
  return std::string(hdr) +
         "# busbw as nccl-tests (all-reduce: algbw x 2(n-1)/n); a/b speed = b's time / a's time (> 1: a is faster)\n";
}

// The libraries, made collectively; one that cannot start is reported (a header line) and left out.
void makeLibs(NetRun* run, PeerBootstrap& boot, std::string* header) {
  for (const std::string& name : run->co.libs) {
    Lib lib;
    lib.name = name;
    std::string message;
    const PeerStatus s = makePeer(name, run->co.peers, boot, &lib.peer);
    if (!everyRankOk(s, &message)) {
      if (s.error.rfind("not built", 0) == 0) {
        *header += "# " + name + ": not built, left out\n";
        continue;
      }
      lib.peer.reset();
      lib.failed = true;
      lib.failure = "at start, " + message;
      *header += "# " + name + ": FAILED at start, " + message + "\n";
      ++run->failures;
    } else {
      *header += "# " + name + ": " + lib.peer->description() + "\n";
    }
    run->libs.push_back(std::move(lib));
  }
}

// Notes when the environment lets a library skip the network (shared memory for Weft or MPI).
std::string environmentNotes(const std::vector<Lib>& libs) {
  std::string notes;
  const char* shmOff = std::getenv("WEFT_SHM_DISABLE");
  const char* btl = std::getenv("OMPI_MCA_btl");
  for (const Lib& lib : libs) {
    if (lib.name == "weft" && !(shmOff && std::strcmp(shmOff, "1") == 0))
      notes +=
          "# note: WEFT_SHM_DISABLE is not 1: Weft may move data through shared memory, not its network transport\n";
    if (lib.name == "mpi" && !(btl && std::strstr(btl, "tcp") && !std::strstr(btl, "vader") && !std::strstr(btl, "sm")))
      notes +=
          "# note: MPI's btl is not restricted to tcp (run mpirun --mca btl tcp,self): it may use shared memory\n";
  }
  return notes;
}

// One size of one type and op: the data it checks, the call every library makes, and where
// (which size) a failure happened.
struct SizeCase {
  DataSpec d;
  PeerCall call;
  char* sendPtr = nullptr;
  char* recvPtr = nullptr;
  std::string where;
  std::vector<bool> unsupported;  // per library, for this type and op
};

SizeCase makeCase(const NetRun& run, weftDataType_t type, weftRedOp_t op, int root, size_t bytes) {
  SizeCase c;
  DataSpec& d = c.d;
  d.coll = run.o.coll;
  d.type = type;
  d.op = op;
  d.nranks = gNranks;
  d.rank = gRank;
  d.root = root;
  d.counts = collCounts(run.o.coll, bytes, typeSize(type), gNranks);
  // Out of place: the two buffers. In place, as nccl-tests: all-gather sends from its
  // block of the receive buffer, reduce-scatter receives into its block of the send
  // buffer, the others use one buffer for both.
  const size_t ts = typeSize(type), me = static_cast<size_t>(gRank);
  c.sendPtr = run.co.inPlace ? run.recv.get() + d.counts.sendInplaceOffset * me * ts : run.send.get();
  c.recvPtr = run.co.inPlace ? run.recv.get() + d.counts.recvInplaceOffset * me * ts : run.recv.get();
  c.call.coll = run.o.coll;
  c.call.send = c.sendPtr;
  c.call.recv = c.recvPtr;
  c.call.count = d.counts.paramCount;
  c.call.type = type;
  c.call.op = op;
  c.call.root = root;
  c.where = "at " + std::to_string(rowBytes(d.counts, typeSize(type))) + " B";
  return c;
}

// The inputs of one call (and the sentinel in the receive buffer, out of place).
void fillCase(const NetRun& run, const SizeCase& c) {
  if (run.co.inPlace && run.o.coll != Collective::kAllGather) {
    fillInput(c.d, run.recv.get(), 0, c.d.counts.sendCount);
    return;
  }
  fillSentinel(c.d.type, run.recv.get(), c.d.counts.recvCount);
  fillInput(c.d, c.sendPtr, 0, c.d.counts.sendCount);
}

// Whether library l is still in the run and supports this case.
bool active(const NetRun& run, const SizeCase& c, size_t l) { return run.libs[l].peer && !c.unsupported[l]; }

// Whether library l's call went well on every rank; if not, it leaves the run.
bool checkLib(NetRun* run, const SizeCase& c, size_t l, const PeerStatus& s) {
  std::string message;
  if (everyRankOk(s, &message)) return true;
  retire(run->libs[l], c.where, message);
  ++run->failures;
  return false;
}

// Timed blocks, the first library of block b being b mod nlibs: seconds per library.
std::vector<double> timeBlocks(NetRun* run, const SizeCase& c) {
  const size_t nlibs = run->libs.size();
  std::vector<double> sec(nlibs, 0.0);
  for (int b = 0; b < run->co.blocks; ++b) {
    for (size_t k = 0; k < nlibs; ++k) {
      const size_t l = (static_cast<size_t>(b) + k) % nlibs;
      if (!active(*run, c, l)) continue;
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = std::chrono::steady_clock::now();
      const PeerStatus s = repeat(*run->libs[l].peer, c.call, run->blockIters);
      sec[l] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      checkLib(run, c, l, s);
    }
  }
  return sec;
}

// One size: warm-up, the timed blocks, each result checked on fresh inputs, and rank 0's row.
void benchSize(NetRun* run, SizeCase& c) {
  const size_t nlibs = run->libs.size();
  fillCase(*run, c);
  for (size_t l = 0; l < nlibs; ++l)
    if (active(*run, c, l)) checkLib(run, c, l, repeat(*run->libs[l].peer, c.call, run->o.warmupIters));
  std::vector<double> sec = timeBlocks(run, c);

  // Each result on fresh inputs.
  std::vector<int64_t> wrong(nlibs, 0);
  c.d.rep = 1;
  for (size_t l = 0; l < nlibs; ++l) {
    if (!active(*run, c, l)) continue;
    fillCase(*run, c);
    if (checkLib(run, c, l, run->libs[l].peer->run(c.call))) wrong[l] = countWrong(c.d, c.recvPtr);
  }
  for (double& s : sec) s /= static_cast<double>(run->co.blocks) * run->blockIters;
  MPI_Allreduce(MPI_IN_PLACE, sec.data(), static_cast<int>(nlibs), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, wrong.data(), static_cast<int>(nlibs), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);

  CompareRow row;
  row.bytes = rowBytes(c.d.counts, typeSize(c.d.type));
  row.paramCount = c.d.counts.paramCount;
  row.typeSize = typeSize(c.d.type);
  for (size_t l = 0; l < nlibs; ++l) {
    LibSample sample;
    if (!run->libs[l].peer)
      sample.state = LibState::kFailed;
    else if (c.unsupported[l])
      sample.state = LibState::kUnsupported;
    sample.seconds = sec[l] / gNranks;
    sample.wrong = wrong[l];
    run->wrongTotal += sample.state == LibState::kRan ? sample.wrong : 0;
    row.libs.push_back(sample);
  }
  say(formatCompareRow(row, run->names, run->o.coll, gNranks));
}

// One type and op: its section header (with the libraries that do not support it), then every size.
void benchTypeOp(NetRun* run, weftDataType_t type, weftRedOp_t op, int root) {
  const Options& o = run->o;
  std::string section = "#\n# " + std::string(typeName(type)) +
                        (collectiveReduces(o.coll) ? std::string(" ") + opName(op) : std::string()) +
                        (collectiveRooted(o.coll) ? " root " + std::to_string(root) : std::string()) + "\n";
  const size_t nlibs = run->libs.size();
  std::vector<bool> unsupported(nlibs, false);
  for (size_t l = 0; l < nlibs; ++l) {
    if (!run->libs[l].peer) continue;
    const std::string why = run->libs[l].peer->unsupported(o.coll, type, op);
    unsupported[l] = !why.empty();
    if (unsupported[l]) section += "# " + run->libs[l].name + ": n/a, " + why + "\n";
  }
  say(section + formatCompareHeader(run->names));
  for (size_t bytes : sizeSteps(o.minBytes, o.maxBytes, o.stepBytes, o.stepFactor)) {
    SizeCase c = makeCase(*run, type, op, root, bytes);
    c.unsupported = unsupported;
    benchSize(run, c);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CompareOptions co;
  Options o;
  if (int rc = parseCommandLine(argc, argv, &o, &co); rc >= 0) return rc;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &gRank);
  MPI_Comm_size(MPI_COMM_WORLD, &gNranks);
  MpiBootstrap boot;

  NetRun run{o, co, {}, {}, nullptr, nullptr};
  std::string header = runHeader(o, co);
  makeLibs(&run, boot, &header);
  say(header + environmentNotes(run.libs));

  for (const Lib& lib : run.libs) run.names.push_back(lib.name);
  run.send = allocHost(o.maxBytes);
  run.recv = allocHost(o.maxBytes);
  if (!run.send || !run.recv) {
    std::fprintf(stderr, "%s: rank %d: cannot allocate 2 x %zu bytes; lower -e\n", kProgram, gRank, o.maxBytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  run.blockIters = (o.iters + co.blocks - 1) / co.blocks;
  std::vector<weftRedOp_t> ops = o.ops;
  if (!collectiveReduces(o.coll)) ops = {weftSum};
  const int root = collectiveRooted(o.coll) ? std::max(o.root, 0) % gNranks : 0;
  for (weftDataType_t type : o.types)
    for (weftRedOp_t op : ops) benchTypeOp(&run, type, op, root);

  std::string footer =
      "#\n# wrong elements: " + std::to_string(run.wrongTotal) + (run.wrongTotal ? " FAILED" : " OK") + "\n";
  for (const Lib& lib : run.libs)
    if (lib.failed) footer += "# " + lib.name + " FAILED " + lib.failure + "\n";
  say(footer);
  run.libs.clear();  // the communicators go before MPI does
  MPI_Finalize();
  return run.wrongTotal || run.failures ? 1 : 0;
}
