// The benchmark loop of weft-perf (see bench.h). Per row: out of place, then in place; each
// half times `iters` iterations of `agg` calls after a barrier, then re-initialises the data
// and runs `check` more calls whose results are compared element by element. Times and wrong
// counts travel to every rank through one weftAllReduce (int64 sum) per row, so every rank
// computes the same table and the same exit status.
#include "perf/bench.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "perf/datatypes.h"
#include "perf/expected.h"
#include "perf/report.h"
#include "perf/sizes.h"

namespace weft::perf {
namespace {

// A page-aligned host buffer.
class HostBuffer {
 public:
  explicit HostBuffer(size_t bytes) {
    if (posix_memalign(&p_, 4096, bytes < 64 ? 64 : bytes) != 0) p_ = nullptr;
  }
  ~HostBuffer() { std::free(p_); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  char* get() const { return static_cast<char*>(p_); }

 private:
  void* p_ = nullptr;
};

// What one rank tells the others for the "Using devices" block.
struct RankInfo {
  int32_t pid;
  int32_t group;
  int32_t device;
  char host[52];
};
static_assert(sizeof(RankInfo) == 64, "RankInfo travels as 64 bytes");

class Bench {
 public:
  Bench(const Options& o, const char* program, weftComm_t comm, int group)
      : o_(o), program_(program), comm_(comm), group_(group) {}

  int run();
  bool callFailed() const { return callFailed_; }

 private:
  struct Half {
    double seconds = 0;
    int64_t wrong = 0;
  };

  bool ok(weftResult_t r, const char* what);
  bool printDevices();
  weftResult_t call(const void* send, void* recv, const CollCounts& c, weftDataType_t t, weftRedOp_t op, int root);
  bool iterate(int n, const void* send, void* recv, const CollCounts& c, weftDataType_t t, weftRedOp_t op, int root);
  void setup(bool inPlace, const DataSpec& d, void** send, void** recv, bool fill);
  bool runHalf(bool inPlace, const DataSpec& d, Half* out);
  bool runRow(size_t bytes, weftDataType_t t, weftRedOp_t op, int root);
  // What one row moves: this collective at `bytes` in type t with op and root.
  DataSpec spec(size_t bytes, weftDataType_t t, weftRedOp_t op, int root) const;
  void print(const std::string& s) {
    if (rank_ != 0) return;
    std::fputs(s.c_str(), stdout);
    std::fflush(stdout);
  }

  const Options& o_;
  const char* program_;
  weftComm_t comm_;
  int group_;
  int rank_ = 0;
  int nranks_ = 1;
  HostBuffer* send_ = nullptr;
  HostBuffer* recv_ = nullptr;
  std::vector<Row> rows_;
  BusBwAverage avg_;
  int64_t wrong_ = 0;
  bool callFailed_ = false;
};

bool Bench::ok(weftResult_t r, const char* what) {
  if (r == weftSuccess) return true;
  callFailed_ = true;
  std::fprintf(stderr, "weft-perf: rank %d: %s failed: %s: %s\n", rank_, what, weftGetErrorString(r),
               weftGetLastError(comm_));
  return false;
}

bool Bench::printDevices() {
  RankInfo self{};
  self.pid = static_cast<int32_t>(getpid());
  self.group = group_;
  int dev = -1;
  if (weftCommDevice(comm_, &dev) != weftSuccess) dev = -1;
  self.device = dev;
  if (gethostname(self.host, sizeof self.host - 1) != 0) std::strcpy(self.host, "unknown");
  std::vector<RankInfo> all(static_cast<size_t>(nranks_));
  if (!ok(weftAllGather(&self, all.data(), sizeof self, weftUint8, comm_, nullptr), "weftAllGather (rank list)"))
    return false;
  std::string s;
  for (int r = 0; r < nranks_; ++r) {
    const RankInfo& i = all[static_cast<size_t>(r)];
    const bool host = i.device < 0;
    s += formatDeviceLine(r, i.group, i.pid, i.host, i.device, host ? "host" : "gpu",
                          host ? "host memory" : "device memory");
  }
  print(s);
  return true;
}

weftResult_t Bench::call(const void* send, void* recv, const CollCounts& c, weftDataType_t t, weftRedOp_t op,
                         int root) {
  const size_t n = c.paramCount;
  switch (o_.coll) {
    case Collective::kAllReduce:
      return weftAllReduce(send, recv, n, t, op, comm_, nullptr);
    case Collective::kAllGather:
      return weftAllGather(send, recv, n, t, comm_, nullptr);
    case Collective::kReduceScatter:
      return weftReduceScatter(send, recv, n, t, op, comm_, nullptr);
    case Collective::kBroadcast:
      return weftBroadcast(send, recv, n, t, root, comm_, nullptr);
    case Collective::kReduce:
      return weftReduce(send, recv, n, t, op, root, comm_, nullptr);
    case Collective::kAllToAll:
      return weftAllToAll(send, recv, n, t, comm_, nullptr);
    case Collective::kSendRecv: {
      // Each rank sends to the next and receives from the previous, as nccl-tests' sendrecv.
      const int next = (rank_ + 1) % nranks_;
      const int prev = (rank_ - 1 + nranks_) % nranks_;
      weftResult_t r = weftGroupStart();
      if (r != weftSuccess) return r;
      r = weftSend(send, n, t, next, comm_, nullptr);
      const weftResult_t r2 = r == weftSuccess ? weftRecv(recv, n, t, prev, comm_, nullptr) : r;
      const weftResult_t r3 = weftGroupEnd();
      return r != weftSuccess ? r : r2 != weftSuccess ? r2 : r3;
    }
  }
  return weftInternalError;
}

// n iterations of -m calls each (grouped when -m > 1).
bool Bench::iterate(int n, const void* send, void* recv, const CollCounts& c, weftDataType_t t, weftRedOp_t op,
                    int root) {
  for (int it = 0; it < n; ++it) {
    if (o_.aggIters > 1 && !ok(weftGroupStart(), "weftGroupStart")) return false;
    for (int a = 0; a < o_.aggIters; ++a) {
      if (!ok(call(send, recv, c, t, op, root), collectiveName(o_.coll))) return false;
    }
    if (o_.aggIters > 1 && !ok(weftGroupEnd(), "weftGroupEnd")) return false;
  }
  return true;
}

// Points send/recv at the buffers for this half and, with fill, writes the inputs for d.rep
// (and the sentinel where the result lands in a separate buffer).
void Bench::setup(bool inPlace, const DataSpec& d, void** send, void** recv, bool fill) {
  const CollCounts& c = d.counts;
  const size_t ts = typeSize(d.type);
  const size_t rank = static_cast<size_t>(rank_);
  char* rb = recv_->get();
  if (!inPlace) {
    *send = send_->get();
    *recv = rb;
    if (fill) {
      fillInput(d, *send, 0, c.sendCount);
      fillSentinel(d.type, *recv, c.recvCount);
    }
    return;
  }
  // In place, as nccl-tests: all-gather sends from its block of recvbuff, reduce-scatter
  // receives into its block of sendbuff, the others use one buffer for both.
  *send = rb + c.sendInplaceOffset * rank * ts;
  *recv = rb + c.recvInplaceOffset * rank * ts;
  if (!fill) return;
  if (o_.coll == Collective::kAllGather) {
    fillSentinel(d.type, rb, c.recvCount);
    fillInput(d, *send, 0, c.sendCount);
  } else {
    fillInput(d, rb, 0, c.sendCount);
  }
}

bool Bench::runHalf(bool inPlace, const DataSpec& d, Half* out) {
  void* send = nullptr;
  void* recv = nullptr;
  setup(inPlace, d, &send, &recv, true);
  if (!ok(weftBarrier(comm_, nullptr), "weftBarrier")) return false;
  const auto t0 = std::chrono::steady_clock::now();
  if (!iterate(o_.iters, send, recv, d.counts, d.type, d.op, d.root)) return false;
  const auto t1 = std::chrono::steady_clock::now();
  out->seconds = std::chrono::duration<double>(t1 - t0).count() / (static_cast<double>(o_.iters) * o_.aggIters);
  for (int rep = 0; rep < o_.check; ++rep) {
    DataSpec c = d;
    c.rep = rep;
    setup(inPlace, c, &send, &recv, true);
    if (!ok(call(send, recv, c.counts, c.type, c.op, c.root), collectiveName(o_.coll))) return false;
    out->wrong += countWrong(c, recv);
  }
  return true;
}

DataSpec Bench::spec(size_t bytes, weftDataType_t t, weftRedOp_t op, int root) const {
  DataSpec d;
  d.coll = o_.coll;
  d.type = t;
  d.op = op;
  d.nranks = nranks_;
  d.rank = rank_;
  d.root = root;
  d.counts = collCounts(o_.coll, bytes, typeSize(t), nranks_);
  return d;
}

bool Bench::runRow(size_t bytes, weftDataType_t t, weftRedOp_t op, int root) {
  DataSpec d = spec(bytes, t, op, root);
  Half halves[2];
  if (!runHalf(false, d, &halves[0]) || !runHalf(true, d, &halves[1])) return false;

  // Every rank's times and the wrong counts, summed into place on every rank.
  const size_t n = static_cast<size_t>(nranks_);
  std::vector<int64_t> stats(2 * n + 2, 0);
  for (size_t h = 0; h < 2; ++h) {
    stats[h * n + static_cast<size_t>(rank_)] = std::llround(halves[h].seconds * 1e12);  // picoseconds
    stats[2 * n + h] = halves[h].wrong;
  }
  if (!ok(weftAllReduce(stats.data(), stats.data(), stats.size(), weftInt64, weftSum, comm_, nullptr),
          "weftAllReduce (times and wrong counts)"))
    return false;

  Row row;
  row.bytes = rowBytes(d.counts, typeSize(t));
  row.count = d.counts.paramCount;
  row.type = typeName(t);
  row.op = collectiveReduces(o_.coll) ? opName(op) : "none";
  row.root = collectiveRooted(o_.coll) ? root : -1;
  row.checked = o_.check > 0;
  for (size_t h = 0; h < 2; ++h) {
    const int64_t* ps = &stats[h * n];
    double combined = static_cast<double>(ps[0]);
    for (size_t r = 1; r < n; ++r) {
      const double v = static_cast<double>(ps[r]);
      if (o_.average == 1) combined += v;
      if (o_.average == 2 && v < combined) combined = v;
      if (o_.average == 3 && v > combined) combined = v;
    }
    if (o_.average == 1) combined /= static_cast<double>(n);
    const double sec = combined * 1e-12;
    RowHalf& out = h == 0 ? row.outOfPlace : row.inPlace;
    out.timeUs = sec * 1e6;
    out.wrong = stats[2 * n + h];
    bandwidth(o_.coll, d.counts.paramCount, typeSize(t), nranks_, sec, &out.algBw, &out.busBw);
    wrong_ += out.wrong;
  }
  avg_.add(row);
  rows_.push_back(row);
  print(formatRow(row));
  return true;
}

int Bench::run() {
  if (!ok(weftCommUserRank(comm_, &rank_), "weftCommUserRank") || !ok(weftCommCount(comm_, &nranks_), "weftCommCount"))
    return 1;
  print(formatPreamble(o_, program_));
  if (!printDevices()) return 1;
  if (collectiveRooted(o_.coll) && o_.root >= nranks_) {
    if (rank_ == 0)
      std::fprintf(stderr, "weft-perf: -r/--root %d is not a rank of this %d-rank run (use 0..%d, or -1 for all)\n",
                   o_.root, nranks_, nranks_ - 1);
    return 2;
  }

  HostBuffer send(o_.maxBytes), recv(o_.maxBytes);
  int64_t allocFailed = send.get() && recv.get() ? 0 : 1;
  if (allocFailed)
    std::fprintf(stderr, "weft-perf: rank %d: cannot allocate 2 x %zu bytes of host memory; lower -e/--maxbytes\n",
                 rank_, o_.maxBytes);
  if (!ok(weftAllReduce(&allocFailed, &allocFailed, 1, weftInt64, weftSum, comm_, nullptr), "weftAllReduce")) return 1;
  if (allocFailed) return 1;
  send_ = &send;
  recv_ = &recv;

  print(formatColumnHeader(o_.reportCpuTime != 0));
  const std::vector<size_t> sizes = sizeSteps(o_.minBytes, o_.maxBytes, o_.stepBytes, o_.stepFactor);
  std::vector<weftRedOp_t> ops = o_.ops;
  if (!collectiveReduces(o_.coll)) ops = {weftSum};  // one pass, printed as "none"
  std::vector<int> roots = {o_.root};
  if (collectiveRooted(o_.coll) && o_.root < 0) {
    roots.clear();
    for (int r = 0; r < nranks_; ++r) roots.push_back(r);
  }
  if (!collectiveRooted(o_.coll)) roots = {0};

  for (int cycle = 0; o_.runCycles == 0 || cycle < o_.runCycles; ++cycle) {
    for (weftDataType_t t : o_.types) {
      for (weftRedOp_t op : ops) {
        for (int root : roots) {
          // Warm up at the largest and the smallest size, as nccl-tests does.
          for (size_t bytes : {o_.maxBytes, o_.minBytes}) {
            DataSpec d = spec(bytes, t, op, root);
            void* s = nullptr;
            void* r = nullptr;
            setup(false, d, &s, &r, true);
            if (!iterate(o_.warmupIters, s, r, d.counts, t, op, root)) return 1;
          }
          for (size_t bytes : sizes)
            if (!runRow(bytes, t, op, root)) return 1;
        }
      }
    }
  }

  print(formatFooter(wrong_, avg_.value(), program_));
  const Verdict v =
      finalVerdict(wrong_, avg_.value(), std::getenv("WEFT_PERF_MIN_BW"), std::getenv("NCCL_TESTS_MIN_BW"));
  print(v.message);
  if (rank_ == 0 && !o_.jsonFile.empty()) {
    const std::string json = formatJson(o_, program_, nranks_, rows_, wrong_, avg_.value());
    FILE* f = std::fopen(o_.jsonFile.c_str(), "w");
    bool written = f && std::fputs(json.c_str(), f) >= 0;
    if (f && std::fclose(f) != 0) written = false;
    if (!written) {
      std::fprintf(stderr, "weft-perf: cannot write the JSON report to %s: %s\n", o_.jsonFile.c_str(),
                   std::strerror(errno));
      return v.exitCode ? v.exitCode : 1;
    }
  }
  return v.exitCode;
}

}  // namespace

int runBenchmark(const Options& o, const char* program, weftComm_t comm, int group, bool* callFailed) {
  Bench bench(o, program, comm, group);
  const int rc = bench.run();
  *callFailed = bench.callFailed();
  return rc;
}

}  // namespace weft::perf
