// Formatting of weft-perf's table (see report.h). The printf formats are nccl-tests' own, so
// columns line up with theirs and their parsers read ours.
#include "perf/report.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "perf/datatypes.h"
#include "perf/format.h"

namespace weft::perf {
namespace {

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

// A side-by-side table cell: 11 characters, right-aligned, after two spaces.
std::string sideCell(const std::string& text) { return format("  %11s", text.c_str()); }

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

void appendMeasurements(const std::string& library, Collective coll, const LibRow& r, std::vector<Measurement>* out) {
  for (int h = 0; h < 2; ++h) {
    const RowHalf& half = h == 0 ? r.row.outOfPlace : r.row.inPlace;
    Measurement m;
    m.library = library;
    m.collective = collectiveName(coll);
    m.type = r.row.type;
    m.op = r.row.op;
    m.root = r.row.root;
    m.bytes = r.row.bytes;
    m.count = r.row.count;
    m.inPlace = h == 1;
    m.checked = r.row.checked;
    m.status = r.status;
    if (r.state == LibState::kRan) {
      m.timeUs = half.timeUs;
      m.algBw = half.algBw;
      m.busBw = half.busBw;
      m.wrong = half.wrong;
    }
    out->push_back(m);
  }
}

std::string formatSideBySideHeader(const std::vector<std::string>& names) {
  std::string top = format("#%10s  %5s", "size", "place");
  std::string bottom = format("#%10s  %5s", "(B)", "");
  for (const std::string& n : names) {
    top += sideCell(n) + sideCell(n);
    bottom += sideCell("time (us)") + sideCell("busbw GB/s");
  }
  for (size_t i = 1; i < names.size(); ++i) {
    top += sideCell(names[0] + "/" + names[i]);
    bottom += sideCell("speed");
  }
  return line(top + "  check") + line(bottom);
}

std::string formatSideBySideRows(const std::vector<LibRow>& libs, const std::vector<std::string>& names) {
  if (libs.empty()) return "";
  std::string s;
  for (int h = 0; h < 2; ++h) {
    auto half = [&](const LibRow& l) -> const RowHalf& { return h == 0 ? l.row.outOfPlace : l.row.inPlace; };
    auto sample = [&](const LibRow& l) {
      LibSample x;
      x.state = l.state;
      x.seconds = half(l).timeUs * 1e-6;
      x.wrong = half(l).wrong;
      return x;
    };
    std::string t = format("#%10zu  %5s", libs[0].row.bytes, h == 0 ? "out" : "in");
    for (const LibRow& l : libs) {
      switch (l.state) {
        case LibState::kRan: {
          const std::string time = formatTime(half(l).timeUs);
          t += sideCell(time.substr(time.find_first_not_of(' '))) + sideCell(format("%.3f", half(l).busBw));
          break;
        }
        case LibState::kFailed:
          t += sideCell("failed") + sideCell("-");
          break;
        case LibState::kUnsupported:
          t += sideCell("n/a") + sideCell("n/a");
          break;
      }
    }
    for (size_t i = 1; i < libs.size(); ++i) {
      const double r = speedRatio(sample(libs[0]), sample(libs[i]));
      t += sideCell(r > 0 ? format("%.3f", r) : "-");
    }
    std::string check;
    bool anyRan = false, unchecked = false;
    for (size_t i = 0; i < libs.size(); ++i) {
      if (libs[i].state != LibState::kRan) continue;
      anyRan = true;
      unchecked = unchecked || !libs[i].row.checked;
      if (half(libs[i]).wrong != 0)
        check += " " + (i < names.size() ? names[i] : std::to_string(i)) + "=" + std::to_string(half(libs[i]).wrong);
    }
    t += "  " + (!anyRan ? std::string("-") : !check.empty() ? "WRONG" + check : unchecked ? "N/A" : "ok");
    s += line(t);
  }
  return s;
}

std::string topologySummary(int nranks, int nhosts, bool vm, int cpus, int gpus, const char* gpuVendor) {
  std::string s =
      format("%d rank%s on %d host%s%s, %d CPU%s%s, ", nranks, nranks == 1 ? "" : "s", nhosts, nhosts == 1 ? "" : "s",
             vm ? " (vm)" : "", cpus, cpus == 1 ? "" : "s", nhosts > 1 ? " on rank 0's host" : "");
  if (gpus <= 0) return s + "no GPU";
  return s + format("%d %s GPU%s", gpus, gpuVendor, gpus == 1 ? "" : "s");
}

bool writeTextFile(const std::string& path, const std::string& text, std::string* error) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    *error = "cannot open " + path + " for writing: " + std::strerror(errno);
    return false;
  }
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int err = errno;
  if (std::fclose(f) != 0 || !wrote) {
    *error = "cannot write " + path + ": " + std::strerror(wrote ? errno : err);
    return false;
  }
  return true;
}

}  // namespace weft::perf
