// The benchmark loop of weft-perf (see bench.h). Per row: out of place, then in place; each
// half times `iters` iterations of `agg` calls after a barrier, then re-initialises the data
// and runs `check` more calls whose results are compared element by element. Times and wrong
// counts travel to every rank through one weftAllReduce (int64 sum) per row, so every rank
// computes the same table and the same exit status. Under a real-time policy every timed block
// starts after a pause (rt_pause.h: the kernel's RT throttling would otherwise stop the ranks
// for 50 ms in some block).
//
// With device memory (--mem device, or auto with a GPU) the buffers are on the rank's GPU and
// every call goes on the rank's stream, as in nccl-tests: a timed block is a barrier, the
// calls queued, and a wait for the stream; inputs are written on the host and uploaded, results
// downloaded before they are checked (rank_buffers.h). The bookkeeping collectives (rank list,
// times, verdicts) stay on host memory with the NULL stream, always after the stream is idle.
//
// With --compare, the other libraries (peer_libs.h) run every half too, on the same buffers:
// the iterations are split into blocks and the order of the libraries rotates from block to
// block, so that drift of the machine (frequency, other load) hits all alike. They meet through
// the Weft communicator (a broadcast and a barrier are all they need), so the same code serves
// mpirun, forked ranks and a lone process. A library that cannot start is a note; one whose
// call fails on any rank leaves the run on every rank. The nccl-tests table stays Weft's alone;
// the side-by-side table follows the footer, and --json/--csv/--plot hold every library's rows.
//
// The Bench class is declared in bench_impl.h; what it prints and writes beside the table (the
// "Using devices" block, the side-by-side table, the summary and the files) is bench_report.cc.
#include "perf/bench.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "perf/bench_impl.h"
#include "perf/bench_support.h"
#include "perf/datatypes.h"
#include "perf/expected.h"
#include "perf/gpu_api.h"
#include "perf/peer_libs.h"
#include "perf/rank_buffers.h"
#include "perf/report.h"
#include "perf/results.h"
#include "perf/rt_pause.h"
#include "perf/sizes.h"

namespace weft::perf {

bool Bench::ok(weftResult_t r, const char* what) {
  if (r == weftSuccess) return true;
  callFailed_ = true;
  std::fprintf(stderr, "weft-perf: rank %d: %s failed: %s: %s\n", rank_, what, weftGetErrorString(r),
               weftGetLastError(comm_));
  return false;
}

// A failed GPU call is fatal to the rank, and the others may wait for it: abort, as for Weft.
bool Bench::gpuOk(const GpuStatus& s) {
  if (s.ok()) return true;
  callFailed_ = true;
  std::fprintf(stderr, "weft-perf: rank %d: %s\n", rank_, s.error.c_str());
  return false;
}

// Device memory needs Weft's GPU module as well as weft-perf's runtime: the communicator has a
// device only when libweft-cuda.so / libweft-hip.so loaded and found the GPU made current. If
// any rank's has none, auto falls back to host memory on every rank (with a note), and --mem
// device stops with exit status 2 (*rc) and the reason.
bool Bench::chooseMemory(int* rc) {
  if (o_.mem != MemKind::kDevice) return true;
  int dev = -1;
  if (weftCommDevice(comm_, &dev) != weftSuccess) dev = -1;
  int64_t firstWithout = dev >= 0 ? INT64_MAX : rank_;
  if (!ok(weftAllReduce(&firstWithout, &firstWithout, 1, weftInt64, weftMin, comm_, nullptr),
          "weftAllReduce (device check)")) {
    *rc = 1;
    return false;
  }
  if (firstWithout == INT64_MAX) return true;
  const std::string why = "rank " + std::to_string(firstWithout) + "'s communicator has no GPU although " +
                          dev_.gpu->file() + " sees " + std::to_string(dev_.gpu->deviceCount()) +
                          " GPU(s): Weft's GPU module (libweft-cuda.so / libweft-hip.so) did not load; WEFT_DEBUG=INFO "
                          "says why";
  if (dev_.asked) {
    if (rank_ == 0) std::fprintf(stderr, "weft-perf: --mem device: %s; run with --mem host\n", why.c_str());
    *rc = 2;
    return false;
  }
  o_.mem = MemKind::kHost;
  o_.notes.push_back("--mem auto: host memory, because " + why);
  dev_ = RankDevice{};
  return true;
}

// The rank's buffers, on every rank or on none.
bool Bench::allocate() {
  std::string error;
  int64_t failed = RankBuffers::make(o_.maxBytes, dev_.gpu, &buf_, &error, o_.localRegister != 0) ? 0 : 1;
  if (failed) std::fprintf(stderr, "weft-perf: rank %d: %s\n", rank_, error.c_str());
  // -R 1: registered for the life of the communicator (which frees the handles).
  for (char* p : {buf_ ? buf_->send() : nullptr, buf_ ? buf_->recv() : nullptr}) {
    void* handle = nullptr;
    if (!failed && o_.localRegister && weftCommRegister(comm_, p, o_.maxBytes ? o_.maxBytes : 1, &handle) != weftSuccess) {
      std::fprintf(stderr, "weft-perf: rank %d: weftCommRegister: %s\n", rank_, weftGetLastError(comm_));
      failed = 1;
    }
  }
  if (!ok(weftAllReduce(&failed, &failed, 1, weftInt64, weftSum, comm_, nullptr), "weftAllReduce (allocation)"))
    return false;
  return failed == 0;
}

// Whether s is ok on every rank; if not, *message and *badRank are the lowest failing rank's.
// A failed Weft call also returns false (callFailed_ says which).
bool Bench::everyRankOk(const PeerStatus& s, std::string* message, int* badRank) {
  int64_t firstBad = s.ok ? INT64_MAX : rank_;
  if (!ok(weftAllReduce(&firstBad, &firstBad, 1, weftInt64, weftMin, comm_, nullptr), "weftAllReduce (peer status)"))
    return false;
  if (firstBad == INT64_MAX) return true;
  char text[1024] = {0};
  if (rank_ == firstBad) std::snprintf(text, sizeof text, "%s", s.error.c_str());
  if (!ok(weftBroadcast(text, text, sizeof text, weftUint8, static_cast<int>(firstBad), comm_, nullptr),
          "weftBroadcast (peer status)"))
    return false;
  *message = text;
  *badRank = static_cast<int>(firstBad);
  return false;
}

// Makes the --compare libraries, collectively. One that is not built or finds nothing to run
// on is a note; one that fails to start is a failure; neither stops the run.
bool Bench::startPeers() {
  Lib weft;
  weft.name = "weft";
  int v = 0;
  (void)weftGetVersion(&v);
  weft.description = "Weft " + versionText(v) + " (the communicator of the table above)" +
                     (o_.weftPath.empty() ? "" : ", " + o_.weftPath);
  libs_.push_back(std::move(weft));
  if (o_.compare.empty()) {
    if (!o_.weftPath.empty()) print("# weft: " + o_.weftPath + "\n");
    return true;
  }

  boot_ = std::make_unique<CommBootstrap>(comm_, rank_, nranks_);
  const PeerSettings settings = peerSettings();
  std::string s;
  for (const std::string& name : o_.compare) {
    Lib lib;
    lib.name = name;
    const PeerStatus st = makePeer(name, settings, *boot_, &lib.peer);
    std::string why;
    int bad = 0;
    if (!everyRankOk(st, &why, &bad)) {
      if (callFailed_) return false;
      lib.peer.reset();
      const bool benign = why.rfind("not built", 0) == 0 || why.rfind("skipped:", 0) == 0;
      if (why.rfind("not built", 0) == 0) why = "not built";
      const std::string note =
          name + ": " + (benign ? why : "FAILED at start, rank " + std::to_string(bad) + ": " + why);
      if (!benign) ++peerFailures_;
      notes_.push_back(note);
      s += "# Compare: " + note + "\n";
      continue;
    }
    if (rank_ == 0) lib.description = lib.peer->description();
    s += "# Compare: " + name + ": " + lib.description + "\n";
    libs_.push_back(std::move(lib));
  }
  print(s + peerPathsAndNotes());
  return true;
}

// What the peer libraries are given: the timeout, the store, the rank's GPU and stream, the
// interface for Gloo, and how the ranks run.
PeerSettings Bench::peerSettings() const {
  PeerSettings settings;
  settings.timeoutS = o_.timeoutS;
  settings.storeDir = o_.peerStoreDir;
  if (buf_->onDevice()) {
    settings.device = dev_.device;
    settings.stream = buf_->stream();
  }
  settings.iface = glooInterface(static_cast<int>(std::set<std::string>(hosts_.begin(), hosts_.end()).size()));
  settings.ranksAreThreads = o_.nThreads > 1;
  settings.weftNet = o_.weftNet;
  return settings;
}

// Which path each library's data takes, where weft-perf chose it, and how it was set up: the
// "# weft:" line, the paths and the notes (which also go to the summary).
std::string Bench::peerPathsAndNotes() {
  std::string s, paths, notes;
  for (const Lib& lib : libs_) {
    if (!lib.peer) continue;
    if (!lib.peer->path().empty()) paths += "# " + lib.name + ": " + lib.peer->path() + "\n";
    for (const std::string& n : lib.peer->notes()) {
      notes += "# Note: " + lib.name + ": " + n + "\n";
      notes_.push_back(lib.name + ": " + n);
    }
  }
  if (!o_.weftPath.empty())
    s += "# weft: " + o_.weftPath + "\n";
  else if (!paths.empty())
    s += "# weft: its own paths between the ranks (shared memory, GPU peer access; --weft-net for its network path)\n";
  return s + paths + notes;
}

// After every rank ran peer l: if it failed anywhere, it leaves the run everywhere.
void Bench::settle(size_t l, const PeerStatus& s, const DataSpec& d) {
  std::string why;
  int bad = 0;
  if (l == 0 || everyRankOk(s, &why, &bad)) return;
  if (callFailed_) return;
  Lib& lib = libs_[l];
  lib.peer.reset();
  lib.failed = true;
  lib.failure =
      "at " + std::to_string(rowBytes(d.counts, typeSize(d.type))) + " B, rank " + std::to_string(bad) + ": " + why;
  notes_.push_back(lib.name + ": FAILED " + lib.failure);
  ++peerFailures_;
  print("# Compare: " + lib.name + " FAILED " + lib.failure + "\n");
}

weftResult_t Bench::call(const void* send, void* recv, const CollCounts& c, weftDataType_t t, weftRedOp_t op,
                         int root) {
  const size_t n = c.paramCount;
  weftStream_t stream = buf_->stream();  // null for host memory
  switch (o_.coll) {
    case Collective::kAllReduce:
      return weftAllReduce(send, recv, n, t, op, comm_, stream);
    case Collective::kAllGather:
      return weftAllGather(send, recv, n, t, comm_, stream);
    case Collective::kReduceScatter:
      return weftReduceScatter(send, recv, n, t, op, comm_, stream);
    case Collective::kBroadcast:
      return weftBroadcast(send, recv, n, t, root, comm_, stream);
    case Collective::kReduce:
      return weftReduce(send, recv, n, t, op, root, comm_, stream);
    case Collective::kAllToAll:
      return weftAllToAll(send, recv, n, t, comm_, stream);
    case Collective::kSendRecv: {
      // Each rank sends to the next and receives from the previous, as nccl-tests' sendrecv.
      const int next = (rank_ + 1) % nranks_;
      const int prev = (rank_ - 1 + nranks_) % nranks_;
      weftResult_t r = weftGroupStart();
      if (r != weftSuccess) return r;
      r = weftSend(send, n, t, next, comm_, stream);
      const weftResult_t r2 = r == weftSuccess ? weftRecv(recv, n, t, prev, comm_, stream) : r;
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
    // -z 1: wait for each iteration, as a blocking call would (host memory always does).
    if (o_.blocking && !gpuOk(buf_->synchronize())) return false;
  }
  return true;
}

// Library l: `iters` iterations of -m calls (peers make the calls one by one), or with `once`
// a single call, completed (on device memory: the stream waited for). A failed Weft or GPU
// call sets callFailed_; a peer's failure comes back.
PeerStatus Bench::runLib(size_t l, int iters, bool once, const void* send, void* recv, const DataSpec& d) {
  const Lib& lib = libs_[l];
  if (!lib.peer) {
    const bool good = (once ? ok(call(send, recv, d.counts, d.type, d.op, d.root), collectiveName(o_.coll))
                            : iterate(iters, send, recv, d.counts, d.type, d.op, d.root)) &&
                      gpuOk(buf_->synchronize());
    return good ? PeerStatus::success() : PeerStatus::failure("a Weft call failed");
  }
  PeerCall c;
  c.coll = o_.coll;
  c.send = send;
  c.recv = recv;
  c.count = d.counts.paramCount;
  c.type = d.type;
  c.op = d.op;
  c.root = d.root;
  const int calls = once ? 1 : iters * o_.aggIters;
  for (int i = 0; i < calls; ++i) {
    PeerStatus s = lib.peer->run(c);
    if (!s.ok) return s;
  }
  return lib.peer->finish();
}

// Points send/recv at the buffers for this half and, with fill, writes the inputs for d.rep
// (and the sentinel where the result lands in a separate buffer). False when an upload failed.
bool Bench::setup(bool inPlace, const DataSpec& d, void** send, void** recv, bool fill) {
  const CollCounts& c = d.counts;
  const size_t ts = typeSize(d.type);
  const size_t rank = static_cast<size_t>(rank_);
  RankBuffers& b = *buf_;
  char* rb = b.recv();
  if (!inPlace) {
    *send = b.send();
    *recv = rb;
    if (!fill) return true;
    fillInput(d, b.mirror(*send), 0, c.sendCount);
    fillSentinel(d.type, b.mirror(*recv), c.recvCount);
    return gpuOk(b.upload(*send, c.sendCount * ts)) && gpuOk(b.upload(*recv, c.recvCount * ts));
  }
  // In place, as nccl-tests: all-gather sends from its block of recvbuff, reduce-scatter
  // receives into its block of sendbuff, the others use one buffer for both.
  *send = rb + c.sendInplaceOffset * rank * ts;
  *recv = rb + c.recvInplaceOffset * rank * ts;
  if (!fill) return true;
  if (o_.coll == Collective::kAllGather) {
    fillSentinel(d.type, b.mirror(rb), c.recvCount);
    fillInput(d, b.mirror(*send), 0, c.sendCount);
  } else {
    fillInput(d, b.mirror(rb), 0, c.sendCount);
  }
  return gpuOk(b.upload(rb, std::max(c.sendCount, c.recvCount) * ts));
}

// One half (out of place or in place) for every active library: the timed blocks, then the
// checks on fresh inputs. (*halves)[2 * l + inPlace] gets library l's time per call and wrong count.
bool Bench::runHalf(bool inPlace, const DataSpec& d, std::vector<Half>* halves) {
  const size_t nl = libs_.size(), h = inPlace ? 1 : 0;
  void* send = nullptr;
  void* recv = nullptr;
  if (!setup(inPlace, d, &send, &recv, true)) return false;
  const int blocks = nl > 1 ? std::min(kCompareBlocks, o_.iters) : 1;
  std::vector<double> seconds(nl, 0.0);
  for (int b = 0; b < blocks; ++b) {
    const int iters = o_.iters / blocks + (b < o_.iters % blocks ? 1 : 0);
    for (size_t k = 0; k < nl; ++k) {
      const size_t l = (static_cast<size_t>(b) + k) % nl;
      if (!active(l)) continue;
      pauseForRtThrottling();
      if (!ok(weftBarrier(comm_, nullptr), "weftBarrier")) return false;
      const auto t0 = std::chrono::steady_clock::now();
      const PeerStatus s = runLib(l, iters, false, send, recv, d);
      seconds[l] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (callFailed_) return false;
      settle(l, s, d);
      if (callFailed_) return false;
    }
  }
  for (size_t l = 0; l < nl; ++l)
    (*halves)[2 * l + h].seconds = seconds[l] / (static_cast<double>(o_.iters) * o_.aggIters);
  for (int rep = 0; rep < o_.check; ++rep) {
    DataSpec c = d;
    c.rep = rep;
    for (size_t l = 0; l < nl; ++l) {
      if (!active(l)) continue;
      if (!setup(inPlace, c, &send, &recv, true)) return false;
      const PeerStatus s = runLib(l, 1, true, send, recv, c);
      if (callFailed_) return false;
      if (s.ok) {
        if (!gpuOk(buf_->download(recv, c.counts.recvCount * typeSize(c.type)))) return false;
        (*halves)[2 * l + h].wrong += countWrong(c, buf_->mirror(recv));
      }
      settle(l, s, c);
      if (callFailed_) return false;
    }
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
  const size_t nl = libs_.size(), n = static_cast<size_t>(nranks_);
  std::vector<Half> halves(2 * nl);
  if (!runHalf(false, d, &halves) || !runHalf(true, d, &halves)) return false;

  // Every rank's times and the wrong counts of every library and half, summed into place on
  // every rank: [library][half][rank] picoseconds, then [library][half] wrong elements.
  std::vector<int64_t> stats(2 * nl * n + 2 * nl, 0);
  for (size_t i = 0; i < 2 * nl; ++i) {
    stats[i * n + static_cast<size_t>(rank_)] = std::llround(halves[i].seconds * 1e12);
    stats[2 * nl * n + i] = halves[i].wrong;
  }
  if (!ok(weftAllReduce(stats.data(), stats.data(), stats.size(), weftInt64, weftSum, comm_, nullptr),
          "weftAllReduce (times and wrong counts)"))
    return false;

  std::vector<LibRow> libRows(nl);
  for (size_t l = 0; l < nl; ++l) {
    LibRow& lr = libRows[l];
    Row& row = lr.row;
    row.bytes = rowBytes(d.counts, typeSize(t));
    row.count = d.counts.paramCount;
    row.type = typeName(t);
    row.op = collectiveReduces(o_.coll) ? opName(op) : "none";
    row.root = collectiveRooted(o_.coll) ? root : -1;
    row.checked = o_.check > 0;
    if (libs_[l].failed) {
      lr.state = LibState::kFailed;
      lr.status = "failed: " + libs_[l].failure;
    } else if (!libs_[l].unsupported.empty()) {
      lr.state = LibState::kUnsupported;
      lr.status = "n/a: " + libs_[l].unsupported;
    }
    for (size_t h = 0; h < 2 && lr.state == LibState::kRan; ++h) {
      const int64_t* ps = &stats[(2 * l + h) * n];
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
      out.wrong = stats[2 * nl * n + 2 * l + h];
      bandwidth(o_.coll, d.counts.paramCount, typeSize(t), nranks_, sec, &out.algBw, &out.busBw);
      libs_[l].wrong += out.wrong;
    }
    appendMeasurements(libs_[l].name, o_.coll, lr, &measurements_);
  }
  const Row& weft = libRows[0].row;
  wrong_ += weft.outOfPlace.wrong + weft.inPlace.wrong;
  avg_.add(weft);
  print(formatRow(weft));
  if (nl > 1) sections_.back().rows.push_back(std::move(libRows));
  return true;
}

// Asks each peer whether it can run this type and op; opens the side-by-side section.
void Bench::startSection(int cycle, weftDataType_t t, weftRedOp_t op, int root) {
  if (libs_.size() <= 1) return;
  Section sec;
  sec.title = std::string(typeName(t)) + (collectiveReduces(o_.coll) ? std::string(" ") + opName(op) : "") +
              (collectiveRooted(o_.coll) ? " root " + std::to_string(root) : "") +
              (o_.runCycles != 1 ? ", cycle " + std::to_string(cycle + 1) : "");
  for (Lib& lib : libs_) {
    lib.unsupported = lib.peer ? lib.peer->unsupported(o_.coll, t, op) : "";
    if (!lib.unsupported.empty()) sec.notes += "# " + lib.name + ": n/a, " + lib.unsupported + "\n";
  }
  sections_.push_back(std::move(sec));
}

// Warm up at the largest and the smallest size, as nccl-tests does, every active library.
bool Bench::warmUp(weftDataType_t t, weftRedOp_t op, int root) {
  for (size_t bytes : {o_.maxBytes, o_.minBytes}) {
    const DataSpec d = spec(bytes, t, op, root);
    void* s = nullptr;
    void* r = nullptr;
    if (!setup(false, d, &s, &r, true)) return false;
    for (size_t l = 0; l < libs_.size(); ++l) {
      if (!active(l)) continue;
      const PeerStatus st = runLib(l, o_.warmupIters, false, s, r, d);
      if (callFailed_) return false;
      settle(l, st, d);
      if (callFailed_) return false;
    }
  }
  return true;
}

// The rows: per run cycle, type, op and root, a warm-up and then every size.
bool Bench::runSweep() {
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
          startSection(cycle, t, op, root);
          if (!warmUp(t, op, root)) return false;
          for (size_t bytes : sizes)
            if (!runRow(bytes, t, op, root)) return false;
        }
      }
    }
  }
  return true;
}

// The footer, the verdict and the comparison; the exit status (a failed or wrong peer, or a
// file that could not be written, makes a good run 1).
int Bench::verdict() {
  print(formatFooter(wrong_, avg_.value(), program_));
  const Verdict v =
      finalVerdict(wrong_, avg_.value(), std::getenv("WEFT_PERF_MIN_BW"), std::getenv("NCCL_TESTS_MIN_BW"));
  print(v.message);
  int rc = v.exitCode;
  if (libs_.size() > 1) print(comparison());
  if (!o_.compare.empty()) {
    bool peersBad = peerFailures_ > 0;
    for (size_t l = 1; l < libs_.size(); ++l) peersBad = peersBad || libs_[l].wrong > 0;
    if (peersBad && rc == 0) rc = 1;
  }
  if (!writeFiles() && rc == 0) rc = 1;
  return rc;
}

int Bench::run() {
  if (!ok(weftCommUserRank(comm_, &rank_), "weftCommUserRank") || !ok(weftCommCount(comm_, &nranks_), "weftCommCount"))
    return 1;
  int rc = 0;
  if (!chooseMemory(&rc)) return rc;
  print(formatPreamble(o_, program_));
  if (!printDevices()) return 1;
  if (collectiveRooted(o_.coll) && o_.root >= nranks_) {
    if (rank_ == 0)
      std::fprintf(stderr, "weft-perf: -r/--root %d is not a rank of this %d-rank run (use 0..%d, or -1 for all)\n",
                   o_.root, nranks_, nranks_ - 1);
    return 2;
  }
  if (!allocate() || !startPeers()) return 1;
  print(formatColumnHeader(o_.reportCpuTime != 0));
  if (!runSweep()) return 1;
  return verdict();
}

int runBenchmark(const Options& o, const char* program, weftComm_t comm, int group, const RankDevice& dev,
                 bool* callFailed) {
  Bench bench(o, program, comm, group, dev);
  const int rc = bench.run();
  *callFailed = bench.callFailed();
  return rc;
}

}  // namespace weft::perf
