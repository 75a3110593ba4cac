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

}  // namespace

int main(int argc, char** argv) {
  CompareOptions co;
  const CompareParse cp = parseCompareOptions(argc, argv, &co);
  Options o;
  o.minBytes = 1u << 10;
  o.maxBytes = 64u << 20;
  o.stepFactor = 4;
  o.iters = 40;
  o.warmupIters = 5;
  ParseResult parsed;
  if (cp.ok) {
    std::vector<const char*> rest;
    for (const std::string& a : cp.rest) rest.push_back(a.c_str());
    parsed = parseOptions(static_cast<int>(rest.size()), rest.data(), &o);
  } else {
    parsed.ok = false;
    parsed.error = cp.error;
  }
  if (!parsed.ok || o.help) {
    if (!parsed.ok) std::fprintf(stderr, "%s: %s\n\n", kProgram, parsed.error.c_str());
    std::fputs(usage(argv[0]).c_str(), parsed.ok ? stdout : stderr);
    return parsed.ok ? 0 : 2;
  }
  co.peers.timeoutS = o.timeoutS;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &gRank);
  MPI_Comm_size(MPI_COMM_WORLD, &gNranks);
  MpiBootstrap boot;

  // The libraries, made collectively; one that cannot start is reported and left out.
  std::vector<Lib> libs;
  std::string header;
  char hdr[512];
  std::snprintf(hdr, sizeof hdr,
                "# %s: %s%s, %d ranks in separate processes, same buffers; %d blocks of %d iterations per library and "
                "size, order rotating per block; warm-up %d; times averaged over ranks\n",
                kProgram, collectiveName(o.coll), co.inPlace ? " in place" : "", gNranks, co.blocks,
                (o.iters + co.blocks - 1) / co.blocks, o.warmupIters);
  header += hdr;
  header +=
      "# busbw as nccl-tests (all-reduce: algbw x 2(n-1)/n); a/b speed = b's time / a's time (> 1: a is faster)\n";
  int64_t failures = 0;
  for (const std::string& name : co.libs) {
    Lib lib;
    lib.name = name;
    std::string message;
    const PeerStatus s = makePeer(name, co.peers, boot, &lib.peer);
    if (!everyRankOk(s, &message)) {
      if (s.error.rfind("not built", 0) == 0) {
        header += "# " + name + ": not built, left out\n";
        continue;
      }
      lib.peer.reset();
      lib.failed = true;
      lib.failure = "at start, " + message;
      header += "# " + name + ": FAILED at start, " + message + "\n";
      ++failures;
    } else {
      header += "# " + name + ": " + lib.peer->description() + "\n";
    }
    libs.push_back(std::move(lib));
  }
  const char* shmOff = std::getenv("WEFT_SHM_DISABLE");
  const char* btl = std::getenv("OMPI_MCA_btl");
  for (const Lib& lib : libs) {
    if (lib.name == "weft" && !(shmOff && std::strcmp(shmOff, "1") == 0))
      header +=
          "# note: WEFT_SHM_DISABLE is not 1: Weft may move data through shared memory, not its network transport\n";
    if (lib.name == "mpi" && !(btl && std::strstr(btl, "tcp") && !std::strstr(btl, "vader") && !std::strstr(btl, "sm")))
      header +=
          "# note: MPI's btl is not restricted to tcp (run mpirun --mca btl tcp,self): it may use shared memory\n";
  }
  say(header);

  std::vector<std::string> names;
  for (const Lib& lib : libs) names.push_back(lib.name);
  const std::vector<size_t> sizes = sizeSteps(o.minBytes, o.maxBytes, o.stepBytes, o.stepFactor);
  HostBuffer send = allocHost(o.maxBytes), recv = allocHost(o.maxBytes);
  if (!send || !recv) {
    std::fprintf(stderr, "%s: rank %d: cannot allocate 2 x %zu bytes; lower -e\n", kProgram, gRank, o.maxBytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const int blockIters = (o.iters + co.blocks - 1) / co.blocks;
  const size_t nlibs = libs.size();
  std::vector<weftRedOp_t> ops = o.ops;
  if (!collectiveReduces(o.coll)) ops = {weftSum};
  const int root = collectiveRooted(o.coll) ? std::max(o.root, 0) % gNranks : 0;
  int64_t wrongTotal = 0;

  for (weftDataType_t type : o.types) {
    for (weftRedOp_t op : ops) {
      std::string section = "#\n# " + std::string(typeName(type)) +
                            (collectiveReduces(o.coll) ? std::string(" ") + opName(op) : std::string()) +
                            (collectiveRooted(o.coll) ? " root " + std::to_string(root) : std::string()) + "\n";
      std::vector<bool> unsupported(nlibs, false);
      for (size_t l = 0; l < nlibs; ++l) {
        if (!libs[l].peer) continue;
        const std::string why = libs[l].peer->unsupported(o.coll, type, op);
        unsupported[l] = !why.empty();
        if (unsupported[l]) section += "# " + libs[l].name + ": n/a, " + why + "\n";
      }
      say(section + formatCompareHeader(names));

      for (size_t bytes : sizes) {
        DataSpec d;
        d.coll = o.coll;
        d.type = type;
        d.op = op;
        d.nranks = gNranks;
        d.rank = gRank;
        d.root = root;
        d.counts = collCounts(o.coll, bytes, typeSize(type), gNranks);
        // Out of place: the two buffers. In place, as nccl-tests: all-gather sends from its
        // block of the receive buffer, reduce-scatter receives into its block of the send
        // buffer, the others use one buffer for both.
        const size_t ts = typeSize(type), me = static_cast<size_t>(gRank);
        char* sendPtr = co.inPlace ? recv.get() + d.counts.sendInplaceOffset * me * ts : send.get();
        char* recvPtr = co.inPlace ? recv.get() + d.counts.recvInplaceOffset * me * ts : recv.get();
        auto fill = [&] {
          if (co.inPlace && o.coll != Collective::kAllGather) {
            fillInput(d, recv.get(), 0, d.counts.sendCount);
            return;
          }
          fillSentinel(type, recv.get(), d.counts.recvCount);
          fillInput(d, sendPtr, 0, d.counts.sendCount);
        };
        PeerCall call;
        call.coll = o.coll;
        call.send = sendPtr;
        call.recv = recvPtr;
        call.count = d.counts.paramCount;
        call.type = type;
        call.op = op;
        call.root = root;
        const std::string where = "at " + std::to_string(rowBytes(d.counts, typeSize(type))) + " B";
        auto active = [&](size_t l) { return libs[l].peer && !unsupported[l]; };
        auto check = [&](size_t l, const PeerStatus& s) {
          std::string message;
          if (everyRankOk(s, &message)) return true;
          retire(libs[l], where, message);
          ++failures;
          return false;
        };

        fill();
        for (size_t l = 0; l < nlibs; ++l)
          if (active(l)) check(l, repeat(*libs[l].peer, call, o.warmupIters));

        // Timed blocks, the first library of block b being b mod nlibs.
        std::vector<double> sec(nlibs, 0.0);
        for (int b = 0; b < co.blocks; ++b) {
          for (size_t k = 0; k < nlibs; ++k) {
            const size_t l = (static_cast<size_t>(b) + k) % nlibs;
            if (!active(l)) continue;
            MPI_Barrier(MPI_COMM_WORLD);
            const auto t0 = std::chrono::steady_clock::now();
            const PeerStatus s = repeat(*libs[l].peer, call, blockIters);
            sec[l] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            check(l, s);
          }
        }

        // Each result on fresh inputs.
        std::vector<int64_t> wrong(nlibs, 0);
        d.rep = 1;
        for (size_t l = 0; l < nlibs; ++l) {
          if (!active(l)) continue;
          fill();
          if (check(l, libs[l].peer->run(call))) wrong[l] = countWrong(d, recvPtr);
        }
        for (double& s : sec) s /= static_cast<double>(co.blocks) * blockIters;
        MPI_Allreduce(MPI_IN_PLACE, sec.data(), static_cast<int>(nlibs), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, wrong.data(), static_cast<int>(nlibs), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);

        CompareRow row;
        row.bytes = rowBytes(d.counts, typeSize(type));
        row.paramCount = d.counts.paramCount;
        row.typeSize = typeSize(type);
        for (size_t l = 0; l < nlibs; ++l) {
          LibSample sample;
          if (!libs[l].peer)
            sample.state = LibState::kFailed;
          else if (unsupported[l])
            sample.state = LibState::kUnsupported;
          sample.seconds = sec[l] / gNranks;
          sample.wrong = wrong[l];
          wrongTotal += sample.state == LibState::kRan ? sample.wrong : 0;
          row.libs.push_back(sample);
        }
        say(formatCompareRow(row, names, o.coll, gNranks));
      }
    }
  }

  std::string footer = "#\n# wrong elements: " + std::to_string(wrongTotal) + (wrongTotal ? " FAILED" : " OK") + "\n";
  for (const Lib& lib : libs)
    if (lib.failed) footer += "# " + lib.name + " FAILED " + lib.failure + "\n";
  say(footer);
  libs.clear();  // the communicators go before MPI does
  MPI_Finalize();
  return wrongTotal || failures ? 1 : 0;
}
