// The Bench class behind runBenchmark (bench.h), one rank's benchmark: shared by bench.cc (the
// loop: buffers, peers, the timed halves and rows) and bench_report.cc (the "Using devices"
// block, the side-by-side table, the run's summary and the --json/--csv/--plot files).
// Internal to weft-perf.
#ifndef WEFT_PERF_BENCH_IMPL_H_
#define WEFT_PERF_BENCH_IMPL_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "perf/bench.h"
#include "perf/bench_support.h"
#include "perf/expected.h"
#include "perf/peer_libs.h"
#include "perf/rank_buffers.h"
#include "perf/report.h"
#include "perf/results.h"

namespace weft::perf {

// Timed blocks per half when several libraries take turns.
constexpr int kCompareBlocks = 4;

// One library in the run: Weft through the communicator (peer null), or a peer library.
struct Lib {
  std::string name;
  std::unique_ptr<PeerLib> peer;
  std::string description;  // rank 0's, for the report
  std::string unsupported;  // why it cannot run the current type and op, or ""
  bool failed = false;
  std::string failure;  // "at 1024 B, rank 1: ..."
  int64_t wrong = 0;    // over the whole run
};

// One (type, op, root) pass of the side-by-side table.
struct Section {
  std::string title;  // "float sum", "int32 none root 1"
  std::string notes;  // "# gloo: n/a, ..." lines
  std::vector<std::vector<LibRow>> rows;
};

class Bench {
 public:
  Bench(const Options& o, const char* program, weftComm_t comm, int group, const RankDevice& dev)
      : o_(o), program_(program), comm_(comm), group_(group), dev_(dev) {}

  int run();
  bool callFailed() const { return callFailed_; }

 private:
  struct Half {
    double seconds = 0;
    int64_t wrong = 0;
  };

  bool ok(weftResult_t r, const char* what);
  bool gpuOk(const GpuStatus& s);
  bool chooseMemory(int* rc);
  bool allocate();
  bool printDevices();
  bool startPeers();
  PeerSettings peerSettings() const;
  std::string peerPathsAndNotes();
  bool everyRankOk(const PeerStatus& s, std::string* message, int* badRank);
  void settle(size_t l, const PeerStatus& s, const DataSpec& d);
  bool active(size_t l) const { return l == 0 || (libs_[l].peer && libs_[l].unsupported.empty()); }
  weftResult_t call(const void* send, void* recv, const CollCounts& c, weftDataType_t t, weftRedOp_t op, int root);
  bool iterate(int n, const void* send, void* recv, const CollCounts& c, weftDataType_t t, weftRedOp_t op, int root);
  PeerStatus runLib(size_t l, int iters, bool once, const void* send, void* recv, const DataSpec& d);
  bool setup(bool inPlace, const DataSpec& d, void** send, void** recv, bool fill);
  bool runHalf(bool inPlace, const DataSpec& d, std::vector<Half>* halves);
  bool warmUp(weftDataType_t t, weftRedOp_t op, int root);
  bool runSweep();
  int verdict();
  bool runRow(size_t bytes, weftDataType_t t, weftRedOp_t op, int root);
  void startSection(int cycle, weftDataType_t t, weftRedOp_t op, int root);
  // What one row moves: this collective at `bytes` in type t with op and root.
  DataSpec spec(size_t bytes, weftDataType_t t, weftRedOp_t op, int root) const;
  std::string comparison() const;
  RunSummary summary() const;
  bool writeFiles() const;
  void print(const std::string& s) {
    if (rank_ != 0) return;
    std::fputs(s.c_str(), stdout);
    std::fflush(stdout);
  }

  Options o_;  // o_.mem and o_.notes may change when Weft has no GPU (chooseMemory)
  const char* program_;
  weftComm_t comm_;
  int group_;
  RankDevice dev_;
  int rank_ = 0;
  int nranks_ = 1;
  std::unique_ptr<RankBuffers> buf_;
  std::vector<std::string> hosts_;  // per rank
  std::unique_ptr<CommBootstrap> boot_;
  std::vector<Lib> libs_;           // Weft first
  std::vector<std::string> notes_;  // for the summary: skipped and failed libraries
  int peerFailures_ = 0;
  std::vector<Section> sections_;
  std::vector<Measurement> measurements_;
  BusBwAverage avg_;
  int64_t wrong_ = 0;
  bool callFailed_ = false;
};

}  // namespace weft::perf

#endif  // WEFT_PERF_BENCH_IMPL_H_
