// Every measured row of a weft-perf run, with or without --compare, as data: the model behind
// --json FILE, --csv FILE and --plot FILE.svg. Pure functions (no MPI, no communicator), so the
// tests round-trip and validate them directly.
#ifndef WEFT_PERF_RESULTS_H_
#define WEFT_PERF_RESULTS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weft::perf {

// One library's measurement of one (collective, type, op, size, placement).
struct Measurement {
  std::string library;     // "weft", "mpi", "gloo", "nccl"
  std::string collective;  // "allreduce", "allgather", ... (collectiveName)
  std::string type;        // "float", "int32", ... (the table's names)
  std::string op;          // "sum", ...; "none" for collectives that do not reduce
  int root = -1;
  size_t bytes = 0;
  size_t count = 0;
  bool inPlace = false;
  double timeUs = 0;
  double algBw = 0;  // GB/s
  double busBw = 0;  // GB/s
  int64_t wrong = 0;
  bool checked = true;  // false: not verified (-c 0)
  std::string status;   // "" measured; otherwise why not ("n/a: gloo has no bfloat16", "failed: ...")
};

// What the run was, for the reader of the file or the picture.
struct RunSummary {
  std::string program;     // "weft-perf" / "all_reduce_perf"
  std::string collective;  // "allreduce"
  std::string host;        // rank 0's host name
  std::string date;        // ISO 8601, UTC
  std::string memory;      // "host" or "device"
  std::string topology;    // one line: "2 ranks on 1 host (vm), 2 CPUs, no GPU"
  std::string weftVersion;
  int nranks = 0;
  std::vector<std::string> libraries;  // in column order, "weft" first
  std::vector<std::string> notes;      // "nccl: skipped: no GPU found", ...
};

std::string formatResultsJson(const RunSummary& run, const std::vector<Measurement>& rows);
// false with *error (line and what was expected) on anything formatResultsJson would not write.
bool parseResultsJson(const std::string& text, RunSummary* run, std::vector<Measurement>* rows, std::string* error);

// A header line of column names, then one line per measurement; '#' comment lines first carry
// the summary. RFC 4180 quoting.
std::string formatResultsCsv(const RunSummary& run, const std::vector<Measurement>& rows);
bool parseResultsCsv(const std::string& text, RunSummary* run, std::vector<Measurement>* rows, std::string* error);

// An SVG picture: bus bandwidth (and, in a second panel, time) against size on a log2 axis, one
// line per library (out-of-place rows; in-place ones dashed when present), a legend, and a
// title naming the collective, type, op, ranks and host.
std::string plotResultsSvg(const RunSummary& run, const std::vector<Measurement>& rows);

}  // namespace weft::perf

#endif  // WEFT_PERF_RESULTS_H_
