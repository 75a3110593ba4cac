// weft-bench-kernels: how fast Weft's reduce-copy kernel is on its own, against the best a GPU
// can move the same bytes. It sits below the public API, on purpose, with weft-roofline in
// perf/internal/: it links the internal weft_device target, because the kernel it measures is
// not reachable through weft.h (a collective adds the schedule, the FIFOs and the peers around
// it). Everything else in perf/ stays on the public API.
//
// For each type and input count: dst = sum of N inputs of --bytes each (the reduce-copy kernel,
// ReduceCopyArgs with N sources and 1 destination), then in the same run a device-to-device
// copy of --bytes (the runtime's copyAsync) and the same kernel with 1 source (Weft's copy
// kernel), each timed with events over -n launches after -w warm-up launches. GB/s = (bytes
// read + bytes written) / time, so a reduce that runs at memory speed matches the copies;
// reduce/memcpy and reduce/copy-kernel are those ratios. The first element block and the last
// element of each reduce are checked against N (every input is 1).
//
// Without a GPU it prints "# weft-bench-kernels: skipped: <the loader's reason>" and exits 0,
// so that a test can run it anywhere.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/params.h"
#include "device/device.h"
#include "device/gpu_loader.h"
#include "perf/datatypes.h"
#include "perf/format.h"
#include "perf/json.h"
#include "perf/options.h"
#include "perf/report.h"

#ifndef WEFT_BENCH_MODULE_DIR
#define WEFT_BENCH_MODULE_DIR ""  // the build tree's libweft-cuda.so / libweft-hip.so
#endif
#ifndef WEFT_BENCH_INSTALL_LIBDIR
#define WEFT_BENCH_INSTALL_LIBDIR "lib"  // beside bin/ once installed
#endif

namespace weft::perf {
namespace {

using device::Runtime;

struct KernelOptions {
  size_t bytes = 256u << 20;  // per input
  std::vector<int> inputs = {2, 4, 8};
  std::vector<weftDataType_t> types = {weftFloat32, weftBfloat16};
  int iters = 20;
  int warmup = 5;
  int device = 0;
  std::string jsonFile;
  bool help = false;
};

std::string usage() {
  return "usage: weft-bench-kernels [options]\n"
         "  Times Weft's reduce-copy kernel (sum of N inputs into 1 output) against a device-to-device copy\n"
         "  and the kernel's own copy (1 input), per type and input count; GB/s = (read + written) / time.\n"
         "  --bytes <n>        bytes per input (256M; K/M/G are powers of 1024)\n"
         "  --inputs <list>    input counts, comma-separated, 1 to " +
         std::to_string(device::kMaxReduceSrcs) +
         " (2,4,8)\n"
         "  --types <list>     float32,bfloat16 (default), also half, float64 and the integer types\n"
         "  -n,--iters <n>     timed launches per measurement (20)\n"
         "  -w,--warmup <n>    launches before timing (5)\n"
         "  --device <n>       the GPU (0)\n"
         "  --json <file>      also write the rows as JSON\n"
         "  -h,--help          this text\n"
         "  Without a GPU it says \"skipped\" with the reason and exits 0.\n";
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

bool parseCount(const std::string& s, int lo, int hi, int* out) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

// The bytes of the small non-negative integer v in type t (exact in every type measured);
// false for the 8-bit float types, which are not measured.
bool encode(weftDataType_t t, int v, std::vector<uint8_t>* out) {
  const size_t n = typeSize(t);
  out->assign(n, 0);
  const float f = static_cast<float>(v);
  uint32_t fbits = 0;
  std::memcpy(&fbits, &f, 4);
  switch (t) {
    case weftFloat32:
      std::memcpy(out->data(), &f, 4);
      return true;
    case weftFloat64: {
      const double d = v;
      std::memcpy(out->data(), &d, 8);
      return true;
    }
    case weftBfloat16: {
      const uint16_t b = static_cast<uint16_t>(fbits >> 16);  // exact: small integers need few mantissa bits
      std::memcpy(out->data(), &b, 2);
      return true;
    }
    case weftFloat16: {
      // float -> half for a normal value: rebias the exponent, keep the top 10 mantissa bits.
      uint16_t h = 0;
      if (v != 0) h = static_cast<uint16_t>((((fbits >> 23) & 0xff) - 127 + 15) << 10 | ((fbits >> 13) & 0x3ff));
      std::memcpy(out->data(), &h, 2);
      return true;
    }
    case weftFloat8e4m3:
    case weftFloat8e5m2:
      return false;
    default: {
      const uint64_t u = static_cast<uint64_t>(v);
      std::memcpy(out->data(), &u, n);  // little-endian integers
      return true;
    }
  }
}

// Returns 0 to go on, else the exit status (after printing why).
int parse(int argc, char** argv, KernelOptions* o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
    } else if (arg != "-h" && arg != "--help") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "weft-bench-kernels: option '%s' needs a value\n\n%s", arg.c_str(), usage().c_str());
        return 2;
      }
      value = argv[++i];
    }
    std::string bad;
    if (arg == "-h" || arg == "--help") {
      o->help = true;
    } else if (arg == "--bytes") {
      if (!parseSize(value, &o->bytes) || o->bytes == 0) bad = "--bytes wants a byte count such as 1M or 256M";
    } else if (arg == "--inputs") {
      o->inputs.clear();
      for (const std::string& s : splitList(value)) {
        int n = 0;
        if (!parseCount(s, 1, device::kMaxReduceSrcs, &n)) {
          bad = "--inputs wants counts from 1 to " + std::to_string(device::kMaxReduceSrcs) + ", not '" + s + "'";
          break;
        }
        o->inputs.push_back(n);
      }
    } else if (arg == "--types") {
      o->types.clear();
      std::vector<uint8_t> probe;
      for (const std::string& s : splitList(value)) {
        weftDataType_t t;
        if (!typeFromName(s.c_str(), &t) || !encode(t, 1, &probe)) {
          bad = "--types wants float32, bfloat16, half, float64 or an integer type, not '" + s + "'";
          break;
        }
        o->types.push_back(t);
      }
    } else if (arg == "-n" || arg == "--iters") {
      if (!parseCount(value, 1, 1 << 20, &o->iters)) bad = "-n/--iters wants a count from 1";
    } else if (arg == "-w" || arg == "--warmup") {
      if (!parseCount(value, 0, 1 << 20, &o->warmup)) bad = "-w/--warmup wants a count from 0";
    } else if (arg == "--device") {
      if (!parseCount(value, 0, 1 << 16, &o->device)) bad = "--device wants a GPU index";
    } else if (arg == "--json") {
      o->jsonFile = value;
      if (value.empty()) bad = "--json wants a file name";
    } else {
      bad = "unknown option '" + arg + "'";
    }
    if (!bad.empty()) {
      std::fprintf(stderr, "weft-bench-kernels: %s\n\n%s", bad.c_str(), usage().c_str());
      return 2;
    }
  }
  return 0;
}

struct CaseResult {
  weftDataType_t type = weftFloat32;
  int inputs = 0;
  double reduceUs = 0;  // per launch
  double reduceGBs = 0;
  double memcpyGBs = 0;
  double copyKernelGBs = 0;
  std::string check;  // "ok", or what was wrong
};

class KernelBench {
 public:
  KernelBench(const KernelOptions& o, Runtime& rt) : o_(o), rt_(rt) {}
  ~KernelBench() {
    for (void* p : buffers_) (void)rt_.freeDevice(p);
    if (start_) (void)rt_.eventDestroy(start_);
    if (end_) (void)rt_.eventDestroy(end_);
    if (stream_) (void)rt_.streamDestroy(stream_);
  }

  // Allocates the inputs and the output on the chosen GPU.
  Status setUp() {
    WEFT_TRY(rt_.setDevice(o_.device));
    int most = 1;
    for (int n : o_.inputs) most = std::max(most, n);
    buffers_.assign(static_cast<size_t>(most) + 1, nullptr);  // inputs, then the output
    for (void*& p : buffers_) WEFT_TRY(rt_.allocDevice(o_.bytes, &p));
    WEFT_TRY(rt_.streamCreate(&stream_));
    WEFT_TRY(rt_.eventCreate(&start_, device::EventKind::kTiming));
    WEFT_TRY(rt_.eventCreate(&end_, device::EventKind::kTiming));
    return Status::ok();
  }

  // Writes 1 in type t into every input.
  Status fill(weftDataType_t t) {
    std::vector<uint8_t> one;
    (void)encode(t, 1, &one);
    std::vector<uint8_t> host(o_.bytes);
    for (size_t i = 0; i + one.size() <= host.size(); i += one.size()) std::memcpy(&host[i], one.data(), one.size());
    for (size_t b = 0; b + 1 < buffers_.size(); ++b)
      WEFT_TRY(rt_.copy(buffers_[b], host.data(), o_.bytes, device::CopyKind::kHostToDevice));
    return Status::ok();
  }

  Status run(weftDataType_t t, int inputs, CaseResult* r) {
    const size_t count = o_.bytes / typeSize(t), bytes = count * typeSize(t);
    device::ReduceCopyArgs reduce;
    reduce.type = t;
    reduce.op = weftSum;
    reduce.nSrcs = inputs;
    for (int i = 0; i < inputs; ++i) reduce.srcs[i] = buffers_[static_cast<size_t>(i)];
    reduce.nDsts = 1;
    reduce.dsts[0] = buffers_.back();
    reduce.count = count;
    device::ReduceCopyArgs copy = reduce;
    copy.nSrcs = 1;

    double ms = 0;
    WEFT_TRY(time([&] { return rt_.launchReduceCopy(reduce, stream_); }, &ms));
    WEFT_TRY(checkSum(t, inputs, count, &r->check));
    r->reduceUs = ms * 1e3 / o_.iters;
    r->reduceGBs = static_cast<double>(inputs + 1) * bytes / (r->reduceUs * 1e3);
    WEFT_TRY(time(
        [&] { return rt_.copyAsync(buffers_.back(), buffers_[0], bytes, device::CopyKind::kDeviceToDevice, stream_); },
        &ms));
    r->memcpyGBs = 2.0 * bytes / (ms * 1e6 / o_.iters);
    WEFT_TRY(time([&] { return rt_.launchReduceCopy(copy, stream_); }, &ms));
    r->copyKernelGBs = 2.0 * bytes / (ms * 1e6 / o_.iters);
    r->type = t;
    r->inputs = inputs;
    return Status::ok();
  }

 private:
  // Warm-up launches, then -n launches between two events; *ms is their total.
  template <typename Launch>
  Status time(Launch launch, double* ms) {
    for (int i = 0; i < o_.warmup; ++i) WEFT_TRY(launch());
    WEFT_TRY(rt_.eventRecord(start_, stream_));
    for (int i = 0; i < o_.iters; ++i) WEFT_TRY(launch());
    WEFT_TRY(rt_.eventRecord(end_, stream_));
    WEFT_TRY(rt_.eventSynchronize(end_));
    float elapsed = 0;
    WEFT_TRY(rt_.eventElapsedMs(start_, end_, &elapsed));
    *ms = elapsed;
    return Status::ok();
  }

  // The output's first elements and its last one must all be `inputs` (every input is 1).
  Status checkSum(weftDataType_t t, int inputs, size_t count, std::string* verdict) {
    std::vector<uint8_t> want;
    (void)encode(t, inputs, &want);
    const size_t ts = typeSize(t), head = std::min<size_t>(count, 4096);
    std::vector<uint8_t> got(head * ts), last(ts);
    WEFT_TRY(rt_.copy(got.data(), buffers_.back(), got.size(), device::CopyKind::kDeviceToHost));
    WEFT_TRY(rt_.copy(last.data(), static_cast<char*>(buffers_.back()) + (count - 1) * ts, ts,
                      device::CopyKind::kDeviceToHost));
    size_t wrong = std::memcmp(last.data(), want.data(), ts) != 0 ? 1 : 0;
    for (size_t i = 0; i < head; ++i) wrong += std::memcmp(&got[i * ts], want.data(), ts) != 0;
    *verdict = wrong == 0 ? "ok" : std::to_string(wrong) + " wrong";
    return Status::ok();
  }

  const KernelOptions& o_;
  Runtime& rt_;
  std::vector<void*> buffers_;
  device::Stream stream_ = nullptr;
  device::Event start_ = nullptr;
  device::Event end_ = nullptr;
};

std::string header(const KernelOptions& o, Runtime& rt, const std::string& path) {
  device::DeviceProps p;
  std::string gpu = "GPU " + std::to_string(o.device);
  if (rt.deviceProps(o.device, &p).isOk())
    gpu += ": " + p.name + ", " + p.arch + ", " + std::to_string(p.multiProcessors) + " SMs/CUs";
  std::string s = "# weft-bench-kernels: Weft's reduce-copy kernel (sum of N inputs into 1 output) against copies\n";
  s += "# " + gpu + "; GPU backend " + rt.name() + " from " + path + "\n";
  s += format("# %zu bytes per input; %d timed launches after %d warm-up, timed with events\n", o.bytes, o.iters,
              o.warmup);
  s += "# GB/s = (bytes read + bytes written) / time (1e9 B/s); memcpy = device-to-device copyAsync;\n";
  s += "# copy kernel = the reduce-copy kernel with 1 input; reduce/x = reduce GB/s / x GB/s\n#\n";
  s += format("# %9s %6s %11s %11s %11s %11s %13s %13s  %s\n", "type", "inputs", "reduce(us)", "reduce GB/s",
              "memcpy GB/s", "copyk GB/s", "reduce/memcpy", "reduce/copyk", "check");
  return s;
}

std::string row(const CaseResult& r) {
  return format("  %9s %6d %11.1f %11.1f %11.1f %11.1f %13.3f %13.3f  %s\n", typeName(r.type), r.inputs, r.reduceUs,
                r.reduceGBs, r.memcpyGBs, r.copyKernelGBs, r.reduceGBs / r.memcpyGBs, r.reduceGBs / r.copyKernelGBs,
                r.check.c_str());
}

std::string jsonText(const KernelOptions& o, const std::string& gpu, const std::string& skipped,
                     const std::vector<CaseResult>& rows) {
  std::string s = "{\n  \"program\": \"weft-bench-kernels\",\n";
  if (!skipped.empty()) return s + "  \"skipped\": " + json::quote(skipped) + "\n}\n";
  s += "  \"gpu\": " + json::quote(gpu) + ",\n";
  s += format("  \"bytesPerInput\": %zu,\n  \"iters\": %d,\n  \"warmup\": %d,\n  \"rows\": [", o.bytes, o.iters,
              o.warmup);
  for (size_t i = 0; i < rows.size(); ++i) {
    const CaseResult& r = rows[i];
    s += format(
        "%s\n    {\"type\": \"%s\", \"inputs\": %d, \"reduceUs\": %.3f, \"reduceGBs\": %.3f, \"memcpyGBs\": %.3f, "
        "\"copyKernelGBs\": %.3f, \"reduceOverMemcpy\": %.4f, \"reduceOverCopyKernel\": %.4f, \"check\": %s}",
        i ? "," : "", typeName(r.type), r.inputs, r.reduceUs, r.reduceGBs, r.memcpyGBs, r.copyKernelGBs,
        r.reduceGBs / r.memcpyGBs, r.reduceGBs / r.copyKernelGBs, json::quote(r.check).c_str());
  }
  return s + "\n  ]\n}\n";
}

bool writeJson(const KernelOptions& o, const std::string& text) {
  std::string error;
  if (o.jsonFile.empty() || writeTextFile(o.jsonFile, text, &error)) return true;
  std::fprintf(stderr, "weft-bench-kernels: %s\n", error.c_str());
  return false;
}

int run(int argc, char** argv) {
  KernelOptions o;
  if (int rc = parse(argc, argv, &o); rc != 0) return rc;
  if (o.help) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }

  // The GPU modules this binary was built with, else installed beside it, else on the library
  // search path; WEFT_GPU_BACKEND picks one as it does for libweft.so.
  device::GpuLoadOptions load;
  load.backend = params::GpuBackend();
  const std::string bin = device::thisBinaryDir();
  load.dirs = {bin.substr(0, bin.rfind('/')) + "/" WEFT_BENCH_INSTALL_LIBDIR};
  if (*WEFT_BENCH_MODULE_DIR) load.dirs.push_back(WEFT_BENCH_MODULE_DIR);
  device::GpuLoadResult loaded;
  if (load.backend == "emulated") {
    loaded.report = "WEFT_GPU_BACKEND=emulated: the emulated device has no reduce-copy kernel to measure";
  } else {
    loaded = device::loadGpuRuntime(load);
  }
  if (!loaded.runtime) {
    std::printf("# weft-bench-kernels: skipped: %s\n", loaded.report.c_str());
    return writeJson(o, jsonText(o, "", loaded.report, {})) ? 0 : 1;
  }
  Runtime& rt = *loaded.runtime;
  if (o.device >= rt.deviceCount()) {
    std::fprintf(stderr, "weft-bench-kernels: --device %d: this machine has %d GPU(s)\n", o.device, rt.deviceCount());
    return 2;
  }

  const std::string head = header(o, rt, loaded.path);
  std::fputs(head.c_str(), stdout);
  std::fflush(stdout);
  KernelBench bench(o, rt);
  std::vector<CaseResult> rows;
  Status s = bench.setUp();
  bool wrong = false;
  for (size_t ti = 0; s.isOk() && ti < o.types.size(); ++ti) {
    s = bench.fill(o.types[ti]);
    for (size_t k = 0; s.isOk() && k < o.inputs.size(); ++k) {
      CaseResult r;
      s = bench.run(o.types[ti], o.inputs[k], &r);
      if (!s.isOk()) break;
      wrong = wrong || r.check != "ok";
      rows.push_back(r);
      std::fputs(row(r).c_str(), stdout);
      std::fflush(stdout);
    }
  }
  if (!s.isOk()) {
    std::fprintf(stderr, "weft-bench-kernels: %s\n", s.message().c_str());
    return 1;
  }
  device::DeviceProps p;
  const std::string gpu = rt.deviceProps(o.device, &p).isOk() ? p.name : "GPU " + std::to_string(o.device);
  if (!writeJson(o, jsonText(o, gpu, "", rows))) return 1;
  if (wrong) std::printf("# weft-bench-kernels: FAILED: a reduce gave a wrong sum (see the check column)\n");
  return wrong ? 1 : 0;
}

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) { return weft::perf::run(argc, argv); }
