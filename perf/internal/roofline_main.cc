// weft-roofline: how close Weft's host all-reduce comes to what this machine's memory allows.
// Like weft-bench-kernels (perf/internal/) it sits below the public API, on purpose: it times the library's
// host reduce kernels on their own (collectives/reduce.h, every dispatch variant with
// --kernels) and counts the bytes each schedule moves (collectives/traffic.h).
//
// In one run it
//  1. measures, with one thread per rank running at once (the ranks share the memory system),
//     each thread on its own buffers well past the last-level cache: the copy rate (memcpy)
//     and the reduce rate (the library's 2-input sum) for float and for each type asked for;
//     rates are bytes read + written per second per thread, the median of --reps passes;
//  2. runs weft-perf for the all-reduce sweep (-np ranks, --algo through WEFT_ALGO) and reads
//     its results back (--json);
//  3. prints per size, for each copy path (traffic.h: fifo, single-copy, zero-copy), the bytes
//     the busiest rank moves (and as a multiple of the buffer), the busbw that moving them at
//     the measured rates allows, and the fraction of it weft-perf reached (out of place).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collectives/reduce_lowp.h"
#include "collectives/traffic.h"
#include "perf/datatypes.h"
#include "perf/format.h"
#include "perf/options.h"
#include "perf/results.h"
#include "perf/sizes.h"

namespace weft::perf {
namespace {

struct RooflineOptions {
  int nranks = 2;
  size_t minBytes = 1u << 20, maxBytes = 64u << 20, stepFactor = 4;
  std::vector<weftDataType_t> types = {weftFloat32};
  std::string algo = "ring";
  size_t rateBytes = 64u << 20;  // per buffer, per thread
  int reps = 5;
  int iters = 10;
  bool kernels = false;
  bool registered = false;  // -R 1: weft-perf on registered buffers (the zero-copy path)
  std::string weftPerf;  // default: beside this binary
  bool help = false;
};

std::string usage() {
  return "usage: weft-roofline [options]\n"
         "  Measures this machine's copy and reduce rates, runs weft-perf's all-reduce sweep, and prints per size\n"
         "  the bytes each copy path moves per rank, the busbw bound they set and the fraction weft-perf reached.\n"
         "  -np,--nranks N     ranks (forked processes, as weft-perf -np), default 2\n"
         "  -b,-e,-f           sizes: min, max, factor (default 1M, 64M, 4)\n"
         "  -d,--datatype T    type(s), comma-separated (default float)\n"
         "  --algo A           ring, tree or doubling (WEFT_ALGO for the run; default ring)\n"
         "  -n N               weft-perf iterations per size (default 10)\n"
         "  --reps N           passes per rate measurement (median; default 5)\n"
         "  --rate-bytes S     buffer size for the rate measurement (default 64M)\n"
         "  --kernels          also time each type's sum on every reduce variant this CPU runs\n"
         "  -R 0|1             1: weft-perf -R 1 (registered buffers: the zero-copy path, row 'direct')\n"
         "  --weft-perf PATH   the weft-perf binary (default: beside weft-roofline; 'none' skips the run)\n";
}

bool parseTypes(const std::string& text, std::vector<weftDataType_t>* out) {
  out->clear();
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    weftDataType_t t;
    if (!typeFromName(item.c_str(), &t)) return false;
    out->push_back(t);
  }
  return !out->empty();
}

bool parseArgs(int argc, char** argv, RooflineOptions* o, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      o->help = true;
      continue;
    }
    if (a == "--kernels") {
      o->kernels = true;
      continue;
    }
    if (i + 1 >= argc) return *error = "option " + a + " needs a value (or is unknown)", false;
    const std::string v = argv[++i];
    bool ok = true;
    if (a == "-np" || a == "--nranks") {
      o->nranks = std::atoi(v.c_str());
      ok = o->nranks >= 1 && o->nranks <= 64;
    } else if (a == "-b") {
      ok = parseSize(v, &o->minBytes);
    } else if (a == "-e") {
      ok = parseSize(v, &o->maxBytes);
    } else if (a == "-f") {
      ok = parseSize(v, &o->stepFactor) && o->stepFactor >= 2;
    } else if (a == "-d" || a == "--datatype") {
      ok = parseTypes(v, &o->types);
    } else if (a == "--algo") {
      o->algo = v;
      ok = v == "ring" || v == "tree" || v == "doubling";
    } else if (a == "-n") {
      o->iters = std::atoi(v.c_str());
      ok = o->iters >= 1;
    } else if (a == "--reps") {
      o->reps = std::atoi(v.c_str());
      ok = o->reps >= 1;
    } else if (a == "--rate-bytes") {
      ok = parseSize(v, &o->rateBytes) && o->rateBytes >= 4096;
    } else if (a == "--weft-perf") {
      o->weftPerf = v;
    } else if (a == "-R") {
      o->registered = v == "1";
      ok = v == "0" || v == "1";
    } else {
      return *error = "unknown option '" + a + "'", false;
    }
    if (!ok) return *error = "bad value '" + v + "' for " + a, false;
  }
  if (o->minBytes > o->maxBytes) return *error = "-b is larger than -e", false;
  return true;
}

double nowS() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// One pass of `work` on `threads` threads at once, each on its own buffers; the median over
// reps of the slowest thread's time, as bytes / s per thread.
template <typename Work>
double rateAtOnce(int threads, int reps, double bytesPerPass, Work work) {
  std::vector<double> times;
  for (int r = 0; r <= reps; ++r) {  // pass 0 warms up (page faults)
    std::vector<double> took(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const double t0 = nowS();
        work(t);
        took[t] = nowS() - t0;
      });
    }
    for (auto& th : pool) th.join();
    if (r > 0) times.push_back(*std::max_element(took.begin(), took.end()));
  }
  std::sort(times.begin(), times.end());
  return bytesPerPass / times[times.size() / 2];
}

struct Buffers {
  std::vector<std::vector<char>> a, b, dst;
  Buffers(int threads, size_t bytes) : a(threads), b(threads), dst(threads) {
    for (int t = 0; t < threads; ++t) {
      a[t].assign(bytes, 1);
      b[t].assign(bytes, 2);
      dst[t].assign(bytes, 0);
    }
  }
};

// memcpy: bytes read + written.
double copyRate(Buffers& buf, int threads, int reps, size_t bytes) {
  return rateAtOnce(threads, reps, 2.0 * bytes, [&](int t) { std::memcpy(buf.dst[t].data(), buf.a[t].data(), bytes); });
}

// dst = a + b with the library's host kernel (variant forced): 2 reads and 1 write.
double reduceRate(Buffers& buf, int threads, int reps, size_t bytes, weftDataType_t type, coll::HostSimd simd) {
  coll::ReduceFn fn = coll::reduceFunctionFor(type, weftSum, simd);
  const size_t n = bytes / typeSize(type);
  // Inputs that are valid numbers of every type (1 and 2 bytes repeat: small finite values).
  return rateAtOnce(threads, reps, 3.0 * static_cast<double>(n * typeSize(type)),
                    [&](int t) { fn(buf.dst[t].data(), buf.a[t].data(), buf.b[t].data(), n, 0); });
}

std::string firstLineOf(const char* cmd, const char* prefix) {
  FILE* p = popen(cmd, "r");
  if (p == nullptr) return "unknown";
  char line[512];
  std::string out = "unknown";
  while (std::fgets(line, sizeof line, p) != nullptr) {
    if (std::strncmp(line, prefix, std::strlen(prefix)) != 0) continue;
    out = line + std::strlen(prefix);
    out.erase(0, out.find_first_not_of(" \t"));
    out.erase(out.find_last_not_of(" \t\n") + 1);
    break;
  }
  pclose(p);
  return out;
}

void printHeader(const RooflineOptions& o) {
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) < 0) load[0] = -1;
  char date[64];
  const time_t now = time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  std::printf("# weft-roofline: %d ranks, all-reduce %s, %s\n", o.nranks, o.algo.c_str(), date);
  std::printf("# CPU: %s; %ld CPUs online; load average %.2f %.2f %.2f\n",
              firstLineOf("lscpu 2>/dev/null", "Model name:").c_str(), sysconf(_SC_NPROCESSORS_ONLN), load[0], load[1],
              load[2]);
  std::printf("# reduce kernels: %s (best here: %s)\n", coll::hostSimdName(coll::defaultHostSimd()),
              coll::hostSimdName(coll::bestHostSimd()));
}

struct Rates {
  double copy = 0;
  std::vector<double> reduce;  // per type in o.types (default variant)
  double floatReduce = 0;
};

Rates measureRates(const RooflineOptions& o) {
  Buffers buf(o.nranks, o.rateBytes);
  Rates r;
  r.copy = copyRate(buf, o.nranks, o.reps, o.rateBytes);
  r.floatReduce = reduceRate(buf, o.nranks, o.reps, o.rateBytes, weftFloat32, coll::defaultHostSimd());
  std::printf(
      "# rates, %d threads at once, %s per buffer, bytes read + written per second per thread (median of %d):\n",
      o.nranks, format("%zu MiB", o.rateBytes >> 20).c_str(), o.reps);
  std::printf("#   copy (memcpy)            %7.2f GB/s\n", r.copy / 1e9);
  std::printf("#   reduce float sum         %7.2f GB/s\n", r.floatReduce / 1e9);
  for (weftDataType_t t : o.types) {
    r.reduce.push_back(t == weftFloat32 ? r.floatReduce
                                        : reduceRate(buf, o.nranks, o.reps, o.rateBytes, t, coll::defaultHostSimd()));
    std::printf("#   reduce %-8s sum        %7.2f GB/s\n", typeName(t), r.reduce.back() / 1e9);
  }
  if (!o.kernels) return r;
  std::printf("# reduce kernels, sum, every variant this CPU runs (GB/s, and x the scalar loop):\n");
  for (weftDataType_t t : o.types) {
    double scalar = 0;
    for (int v = 0; v < static_cast<int>(coll::HostSimd::kCount); ++v) {
      const auto simd = static_cast<coll::HostSimd>(v);
      if (!coll::hostSimdSupported(simd)) continue;
      const double rate = reduceRate(buf, o.nranks, o.reps, o.rateBytes, t, simd);
      if (v == 0) scalar = rate;
      std::printf("#   %-8s %-12s %7.2f GB/s  %5.2fx\n", typeName(t), coll::hostSimdName(simd), rate / 1e9,
                  rate / scalar);
    }
  }
  return r;
}

// weft-perf's out-of-place busbw per (type, bytes), from its --json file.
std::vector<Measurement> runWeftPerf(const RooflineOptions& o, const char* argv0, weftDataType_t type) {
  std::string perf = o.weftPerf;
  if (perf.empty()) {
    std::string self = argv0;
    perf = (self.find('/') == std::string::npos ? std::string(".") : self.substr(0, self.rfind('/'))) + "/weft-perf";
  }
  char json[] = "/tmp/weft-roofline-XXXXXX";
  const int fd = mkstemp(json);
  if (fd < 0) return {};
  close(fd);
  const std::string algo = o.algo == "doubling" ? "Doubling" : o.algo == "tree" ? "Tree" : "Ring";
  const std::string cmd = format(
      "WEFT_ALGO=%s %s allreduce -np %d -b %zu -e %zu -f %zu -d %s -n %d -w 2 -R %d --json %s "
      ">/dev/null",
      algo.c_str(), perf.c_str(), o.nranks, o.minBytes, o.maxBytes, o.stepFactor, typeName(type), o.iters,
      o.registered ? 1 : 0, json);
  std::printf("# running: %s\n", cmd.c_str());
  std::fflush(stdout);
  std::vector<Measurement> rows;
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "weft-roofline: weft-perf failed (%s); printing the bounds only\n", cmd.c_str());
  } else {
    std::ifstream in(json);
    std::stringstream text;
    text << in.rdbuf();
    RunSummary run;
    std::string error;
    if (!parseResultsJson(text.str(), &run, &rows, &error)) {
      std::fprintf(stderr, "weft-roofline: cannot read weft-perf's results: %s\n", error.c_str());
    }
  }
  std::remove(json);
  return rows;
}

double measuredBusBw(const std::vector<Measurement>& rows, size_t bytes) {
  for (const Measurement& m : rows) {
    if (m.library == "weft" && !m.inPlace && m.bytes == bytes && m.status.empty()) return m.busBw;
  }
  return 0;
}

void printTable(const RooflineOptions& o, weftDataType_t type, double reduceRate, double copyRate,
                const std::vector<Measurement>& rows) {
  coll::ScheduleParams p;
  p.kind = coll::CollKind::kAllReduce;
  p.algo = o.algo == "tree"       ? coll::Algo::kTree
           : o.algo == "doubling" ? coll::Algo::kRecursiveDoubling
                                  : coll::Algo::kRing;
  p.nRanks = o.nranks;
  std::printf("#\n# %s sum, %s, out of place%s; bytes = read + written by the busiest rank (x the buffer)\n",
              typeName(type), o.algo.c_str(), o.registered ? ", registered buffers (-R 1: the path is direct)" : "");
  std::printf("# %12s %-12s %14s %7s %11s %11s %9s\n", "size", "path", "bytes/rank", "xbuf", "bound GB/s", "busbw GB/s",
              "fraction");
  const double factor = 2.0 * (o.nranks - 1) / o.nranks;
  for (size_t bytes : sizeSteps(o.minBytes, o.maxBytes, 0, o.stepFactor)) {
    p.count = static_cast<int64_t>(bytes / typeSize(type));
    if (!coll::validateParams(p).empty()) continue;
    const double busBw = measuredBusBw(rows, bytes);
    auto row = [&](const char* name, const coll::Traffic& t) {
      const double s = coll::boundSeconds(t, copyRate, reduceRate);
      const double bound = s > 0 ? static_cast<double>(bytes) / s / 1e9 * (o.nranks > 1 ? factor : 1.0) : 0;
      std::printf("  %12zu %-12s %14.0f %7.2f %11.2f %11.2f %9.2f\n", bytes, name, t.total(),
                  t.total() / static_cast<double>(bytes), bound, busBw, bound > 0 ? busBw / bound : 0.0);
    };
    for (coll::CopyPath path : {coll::CopyPath::kFifo, coll::CopyPath::kSingleCopy, coll::CopyPath::kZeroCopy}) {
      row(coll::copyPathName(path), coll::busiestRankTraffic(p, typeSize(type), path, false));
    }
    row("direct", coll::directAllReduceTraffic(o.nranks, typeSize(type), p.count));
  }
}

int run(const RooflineOptions& o, const char* argv0) {
  printHeader(o);
  const Rates rates = measureRates(o);
  for (size_t i = 0; i < o.types.size(); ++i) {
    std::vector<Measurement> rows;
    if (o.weftPerf != "none") rows = runWeftPerf(o, argv0, o.types[i]);
    printTable(o, o.types[i], rates.reduce[i], rates.copy, rows);
  }
  return 0;
}

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  weft::perf::RooflineOptions o;
  std::string error;
  if (!weft::perf::parseArgs(argc, argv, &o, &error)) {
    std::fprintf(stderr, "weft-roofline: %s\n\n%s", error.c_str(), weft::perf::usage().c_str());
    return 2;
  }
  if (o.help) {
    std::fputs(weft::perf::usage().c_str(), stdout);
    return 0;
  }
  return weft::perf::run(o, argv[0]);
}
