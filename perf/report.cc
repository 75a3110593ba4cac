// Formatting of weft-perf's table (see report.h). The printf formats are nccl-tests' own, so
// columns line up with theirs and their parsers read ours.
#include "perf/report.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "perf/datatypes.h"

namespace weft::perf {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return "";
  if (static_cast<size_t>(n) < sizeof buf) return buf;
  std::string big(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(&big[0], big.size(), fmt, ap);
  va_end(ap);
  big.resize(static_cast<size_t>(n));
  return big;
}

// nccl-tests pads its header lines with spaces; the reference output has none at the end.
std::string line(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s + "\n";
}

std::string formatHalf(const RowHalf& h, bool checked) {
  std::string s = format("  %7s  %6.2f  %6.2f", formatTime(h.timeUs).c_str(), h.algBw, h.busBw);
  if (checked) return s + format("  %5lld", static_cast<long long>(h.wrong));
  return s + format("  %5s", "N/A");
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += format("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string jsonHalf(const RowHalf& h, bool checked) {
  return format("{\"time_us\": %.3f, \"algbw_gbs\": %.4f, \"busbw_gbs\": %.4f, \"wrong\": ", h.timeUs, h.algBw,
                h.busBw) +
         (checked ? std::to_string(h.wrong) : std::string("null")) + "}";
}

}  // namespace

std::string formatPreamble(const Options& o, const char* program) {
  const bool factor = o.stepFactor > 1;
  std::string s = format("# Collective test starting: %s\n", program);
  s += format(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d agg iters: %d "
      "validation: %d graph: %d\n",
      o.nThreads, o.nGpus, o.minBytes, o.maxBytes, factor ? o.stepFactor : o.stepBytes, factor ? "factor" : "bytes",
      o.warmupIters, o.iters, o.aggIters, o.check, o.cudaGraph);
  for (const std::string& n : o.notes) s += "# Note: " + n + "\n";
  s += "#\n# Using devices\n";
  return s;
}

std::string formatDeviceLine(int rank, int group, int pid, const char* host, int device, const char* where,
                             const char* name) {
  return format("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", rank, group, pid, host, device, where,
                name);
}

std::string formatColumnHeader(bool cpuTime) {
  const char* t = cpuTime ? "cputime" : "time";
  std::string s = "#\n";
  s += line(
      format("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place", "", "", "", "", ""));
  s += line(format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s", "size", "count", "type",
                   "redop", "root", t, "algbw", "busbw", "#wrong", t, "algbw", "busbw", "#wrong"));
  s += line(format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s", "(B)", "(elements)", "", "",
                   "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""));
  return s;
}

std::string formatTime(double us) {
  if (us >= 10000.0) return format("%7.0f", us);
  if (us >= 100.0) return format("%7.1f", us);
  return format("%7.2f", us);
}

std::string formatRow(const Row& r) {
  std::string s = format("%12zu  %12zu  %8s  %6s  %6d", r.bytes, r.count, r.type.c_str(), r.op.c_str(), r.root);
  s += formatHalf(r.outOfPlace, r.checked);
  s += formatHalf(r.inPlace, r.checked);
  return s + "\n";
}

std::string formatFooter(int64_t wrong, double avgBusBw, const char* program) {
  std::string s = format("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong), wrong ? "FAILED" : "OK");
  s += format("# Avg bus bandwidth    : %g\n", avgBusBw);
  s += "#\n";
  s += format("# Collective test concluded: %s\n", program);
  return s;
}

Verdict finalVerdict(int64_t wrong, double avgBusBw, const char* weftPerfMinBw, const char* ncclTestsMinBw) {
  Verdict v;
  if (wrong > 0) {
    v.exitCode = 1;
    v.message += format("# FAILED: %lld wrong elements\n", static_cast<long long>(wrong));
  }
  const char* name = "WEFT_PERF_MIN_BW";
  const char* text = weftPerfMinBw;
  if (!text || !*text) {
    name = "NCCL_TESTS_MIN_BW";
    text = ncclTestsMinBw;
  }
  if (!text || !*text) return v;
  errno = 0;
  char* end = nullptr;
  const double minBw = std::strtod(text, &end);
  if (errno != 0 || *end != '\0' || !(minBw >= 0)) {
    v.exitCode = 2;
    v.message += format("# FAILED: %s='%s' is not a bandwidth in GB/s (a number such as 20 or 12.5)\n", name, text);
    return v;
  }
  const double floor = 0.9 * minBw;
  if (avgBusBw < floor) {
    v.exitCode = 1;
    v.message += format("# FAILED: average bus bandwidth %g GB/s is below 0.9 x %s (%g GB/s)\n", avgBusBw, name, floor);
  } else {
    v.message += format("# Bus bandwidth check: %g GB/s >= 0.9 x %s (%g GB/s): OK\n", avgBusBw, name, floor);
  }
  return v;
}

std::string formatJson(const Options& o, const char* program, int nranks, const std::vector<Row>& rows, int64_t wrong,
                       double avgBusBw) {
  std::string s = "{\n";
  s += "  \"program\": " + jsonString(program) + ",\n";
  s += "  \"collective\": " + jsonString(collectiveName(o.coll)) + ",\n";
  s += format("  \"nranks\": %d,\n  \"iters\": %d,\n  \"warmup_iters\": %d,\n  \"agg_iters\": %d,\n", nranks, o.iters,
              o.warmupIters, o.aggIters);
  s += format("  \"check\": %d,\n  \"average\": %d,\n", o.check, o.average);
  s += "  \"results\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    s += i ? ",\n    " : "\n    ";
    s += format("{\"size\": %zu, \"count\": %zu, \"type\": ", r.bytes, r.count) + jsonString(r.type) +
         ", \"redop\": " + jsonString(r.op) + format(", \"root\": %d, ", r.root) +
         "\"out_of_place\": " + jsonHalf(r.outOfPlace, r.checked) +
         ", \"in_place\": " + jsonHalf(r.inPlace, r.checked) + "}";
  }
  s += rows.empty() ? "],\n" : "\n  ],\n";
  s += format("  \"wrong\": %lld,\n  \"avg_busbw_gbs\": %.6g\n}\n", static_cast<long long>(wrong), avgBusBw);
  return s;
}

}  // namespace weft::perf
