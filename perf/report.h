// weft-perf's output, byte for byte in the nccl-tests layout (formats.md §1): the '#' header,
// the device list, the two column-header lines, one row per size, and the footer whose
// "# Avg bus bandwidth" line scripts grep (its last field is always the number). Also the
// final verdict (exit status), --compare's side-by-side table, and the rows as results.h
// Measurements for --json, --csv and --plot.
#ifndef WEFT_PERF_REPORT_H_
#define WEFT_PERF_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "perf/compare_report.h"
#include "perf/options.h"
#include "perf/results.h"

namespace weft::perf {

struct RowHalf {
  double timeUs = 0;
  double algBw = 0;  // GB/s
  double busBw = 0;  // GB/s
  int64_t wrong = 0;
};

struct Row {
  size_t bytes = 0;
  size_t count = 0;
  std::string type;
  std::string op;  // "none" for collectives that do not reduce
  int root = -1;
  bool checked = true;  // false (-c 0): #wrong prints N/A
  RowHalf outOfPlace;
  RowHalf inPlace;
};

// "# Collective test starting: ...", "# nThread ...", notes, "#", "# Using devices".
std::string formatPreamble(const Options& o, const char* program);
// "#  Rank  0 Group  0 Pid  12345 on     host-a device -1 [host] host memory"
std::string formatDeviceLine(int rank, int group, int pid, const char* host, int device, const char* where,
                             const char* name);
// "#" and the three column-header lines ("time" becomes "cputime" with -C).
std::string formatColumnHeader(bool cpuTime);
// nccl-tests' time column: %7.2f below 100 us, %7.1f below 10 ms, %7.0f above.
std::string formatTime(double us);
std::string formatRow(const Row& r);
// "# Out of bounds values : N OK|FAILED", "# Avg bus bandwidth    : X", "#", "# Collective test concluded: ...".
std::string formatFooter(int64_t wrong, double avgBusBw, const char* program);

// The mean of every busbw printed (both halves of every row), as nccl-tests reports it.
class BusBwAverage {
 public:
  void add(const Row& r) {
    sum_ += r.outOfPlace.busBw + r.inPlace.busBw;
    n_ += 2;
  }
  double value() const { return n_ ? sum_ / n_ : 0.0; }

 private:
  double sum_ = 0;
  int64_t n_ = 0;
};

struct Verdict {
  int exitCode = 0;     // 0 ok, 1 failed, 2 the minimum-bandwidth variable is not a number
  std::string message;  // '#' lines to print after the footer; empty when there is nothing to say
};

// weftPerfMinBw / ncclTestsMinBw: the values of WEFT_PERF_MIN_BW and NCCL_TESTS_MIN_BW (or
// nullptr); the first one set wins. Fails on any wrong element, or when the average bus
// bandwidth is below 0.9 x the minimum.
Verdict finalVerdict(int64_t wrong, double avgBusBw, const char* weftPerfMinBw, const char* ncclTestsMinBw);

// One library's result at one size: the row it would print in the nccl-tests table, and what
// became of it (state kRan, or why there are no numbers).
struct LibRow {
  LibState state = LibState::kRan;
  std::string status;  // "" when it ran; "n/a: ..." or "failed: ..." otherwise (results.h's status)
  Row row;
};

// The two Measurements (out of place, then in place) of one library's row.
void appendMeasurements(const std::string& library, Collective coll, const LibRow& r, std::vector<Measurement>* out);

// --compare's side-by-side table. Every line starts with '#', so that the parsers of the
// nccl-tests table above it (which skip comment lines) read only Weft's rows. `names` are the
// libraries in column order, Weft first. The header: the column names and units.
std::string formatSideBySideHeader(const std::vector<std::string>& names);
// One size, two lines (out of place, in place): per library time and busbw, then Weft's speed
// relative to each other library (their time / Weft's time, > 1: Weft faster), then the check.
std::string formatSideBySideRows(const std::vector<LibRow>& libs, const std::vector<std::string>& names);

// The one-line machine summary of results.h: "2 ranks on 1 host (vm), 2 CPUs, no GPU". cpus
// are rank 0's host's; gpus counts that host's GPUs of gpuVendor ("NVIDIA").
std::string topologySummary(int nranks, int nhosts, bool vm, int cpus, int gpus, const char* gpuVendor);

// Writes text to path (replacing it); false with a sentence in *error.
bool writeTextFile(const std::string& path, const std::string& text, std::string* error);

}  // namespace weft::perf

#endif  // WEFT_PERF_REPORT_H_
