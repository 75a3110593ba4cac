// weft-perf's output, byte for byte in the nccl-tests layout (formats.md §1): the '#' header,
// the device list, the two column-header lines, one row per size, and the footer whose
// "# Avg bus bandwidth" line scripts grep (its last field is always the number). Also the
// final verdict (exit status) and the optional JSON file.
#ifndef WEFT_PERF_REPORT_H_
#define WEFT_PERF_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "perf/options.h"

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

// The whole run as JSON, for -J.
std::string formatJson(const Options& o, const char* program, int nranks, const std::vector<Row>& rows, int64_t wrong,
                       double avgBusBw);

}  // namespace weft::perf

#endif  // WEFT_PERF_REPORT_H_
