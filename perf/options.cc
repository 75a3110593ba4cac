// The option parser: a table of the nccl-tests flags, each with its short letter, long name
// and how its value is read, then weft-perf's own long-only flags. Accepts "-b 8", "-b8",
// "--minbytes 8" and "--minbytes=8".
#include "perf/options.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "perf/compare_report.h"
#include "perf/datatypes.h"

namespace weft::perf {
namespace {

// "float" or "float,half,bfloat16" (no empty names); *types is left alone on failure.
bool typeList(const std::string& value, std::vector<weftDataType_t>* types) {
  std::vector<weftDataType_t> out;
  size_t start = 0;
  while (true) {
    const size_t comma = value.find(',', start);
    const std::string name = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    weftDataType_t t;
    if (!typeFromName(name.c_str(), &t)) return false;
    out.push_back(t);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  *types = out;
  return true;
}

enum class Flag {
  kThreads,
  kGpus,
  kMinBytes,
  kMaxBytes,
  kStepBytes,
  kStepFactor,
  kIters,
  kWarmup,
  kAgg,
  kCycles,
  kCheck,
  kOp,
  kType,
  kRoot,
  kBlocking,
  kRegister,
  kStreamNull,
  kTimeout,
  kGraph,
  kCpuTime,
  kAverage,
  kJson,
  kCsv,
  kPlot,
  kCompare,
  kGlooStore,
  kMem,
  kWeftNet,
  kColl,
  kNranks,
  kHelp,
};

struct FlagSpec {
  Flag flag;
  const char* shortName;  // without the dash; "" for long-only flags
  const char* longName;   // without the dashes
  const char* alias;      // a second long name, or nullptr
  bool takesValue;
};

const FlagSpec kFlags[] = {
    {Flag::kThreads, "t", "nthreads", nullptr, true},
    {Flag::kGpus, "g", "ngpus", nullptr, true},
    {Flag::kMinBytes, "b", "minbytes", nullptr, true},
    {Flag::kMaxBytes, "e", "maxbytes", nullptr, true},
    {Flag::kStepBytes, "i", "stepbytes", nullptr, true},
    {Flag::kStepFactor, "f", "stepfactor", nullptr, true},
    {Flag::kIters, "n", "iters", nullptr, true},
    {Flag::kWarmup, "w", "warmup_iters", nullptr, true},
    {Flag::kAgg, "m", "agg_iters", nullptr, true},
    {Flag::kCycles, "N", "run_cycles", nullptr, true},
    {Flag::kCheck, "c", "check", nullptr, true},
    {Flag::kOp, "o", "op", nullptr, true},
    {Flag::kType, "d", "datatype", nullptr, true},
    {Flag::kRoot, "r", "root", nullptr, true},
    {Flag::kBlocking, "z", "blocking", nullptr, true},
    {Flag::kRegister, "R", "local_register", nullptr, true},
    {Flag::kStreamNull, "y", "stream_null", nullptr, true},
    {Flag::kTimeout, "T", "timeout", nullptr, true},
    {Flag::kGraph, "G", "cudagraph", nullptr, true},
    {Flag::kCpuTime, "C", "report_cputime", nullptr, true},
    {Flag::kAverage, "a", "average", nullptr, true},
    {Flag::kJson, "J", "json", "output_file", true},
    {Flag::kCsv, "", "csv", nullptr, true},
    {Flag::kPlot, "", "plot", nullptr, true},
    {Flag::kGlooStore, "", "gloo-store", nullptr, true},
    {Flag::kCompare, "", "compare", nullptr, true},
    {Flag::kMem, "", "mem", nullptr, true},
    {Flag::kWeftNet, "", "weft-net", nullptr, false},
    {Flag::kColl, "x", "coll", "collective", true},
    {Flag::kNranks, "np", "nranks", "np", true},
    {Flag::kHelp, "h", "help", nullptr, false},
};

const FlagSpec* findShort(const std::string& name) {
  for (const FlagSpec& f : kFlags)
    if (*f.shortName && name == f.shortName) return &f;
  return nullptr;
}

const FlagSpec* findLong(const std::string& name) {
  for (const FlagSpec& f : kFlags)
    if (name == f.longName || (f.alias && name == f.alias)) return &f;
  return nullptr;
}

bool parseInt(const std::string& text, long long lo, long long hi, long long* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

std::string flagLabel(const FlagSpec& f) {
  if (!*f.shortName) return std::string("--") + f.longName;
  return std::string("-") + f.shortName + "/--" + f.longName;
}

constexpr long long kIntMax = 1LL << 30;

// The integer flags: the range each accepts and the field it sets.
struct IntFlag {
  Flag flag;
  long long lo, hi;
  int Options::*field;
};

const IntFlag kIntFlags[] = {
    {Flag::kThreads, 1, 1024, &Options::nThreads},     {Flag::kGpus, 1, 1024, &Options::nGpus},
    {Flag::kIters, 1, kIntMax, &Options::iters},        {Flag::kWarmup, 0, kIntMax, &Options::warmupIters},
    {Flag::kAgg, 1, kIntMax, &Options::aggIters},       {Flag::kCycles, 0, kIntMax, &Options::runCycles},
    {Flag::kCheck, 0, kIntMax, &Options::check},        {Flag::kRoot, -1, kIntMax, &Options::root},
    {Flag::kBlocking, 0, 1, &Options::blocking},        {Flag::kRegister, 0, 1, &Options::localRegister},
    {Flag::kStreamNull, 0, 1, &Options::streamNull},    {Flag::kTimeout, 0, kIntMax, &Options::timeoutS},
    {Flag::kGraph, 0, kIntMax, &Options::cudaGraph},    {Flag::kCpuTime, 0, 1, &Options::reportCpuTime},
    {Flag::kAverage, 0, 3, &Options::average},          {Flag::kNranks, 1, 4096, &Options::nranks},
};

// The byte-count flags and the field each sets.
struct SizeFlag {
  Flag flag;
  size_t Options::*field;
};

const SizeFlag kSizeFlags[] = {
    {Flag::kMinBytes, &Options::minBytes},
    {Flag::kMaxBytes, &Options::maxBytes},
    {Flag::kStepBytes, &Options::stepBytes},
};

// -o: one op, or all of them.
std::string applyOp(const FlagSpec& f, const std::string& value, Options* o) {
  if (value == "all") {
    o->ops.clear();
    for (int i = 0; i < weftNumOps; ++i) o->ops.push_back(static_cast<weftRedOp_t>(i));
    return "";
  }
  weftRedOp_t op;
  if (!opFromName(value.c_str(), &op)) return flagLabel(f) + " wants sum, prod, min, max, avg or all, not '" + value + "'";
  o->ops = {op};
  return "";
}

// -d: one type, a list of them, or all.
std::string applyType(const FlagSpec& f, const std::string& value, Options* o) {
  if (value == "all") {
    o->types.clear();
    for (int i = 0; i < weftNumTypes; ++i) o->types.push_back(static_cast<weftDataType_t>(i));
    return "";
  }
  // A comma-separated list runs the types in that order, each cycle (-N) again, so that
  // types measured side by side share the machine's state (perf/lowp_compare.sh).
  if (!typeList(value, &o->types))
    return flagLabel(f) + " wants one of " + allTypeNames() + ", a comma-separated list of them, or all, not '" +
           value + "'";
  return "";
}

// The flags that take a name, a file or a word (and -f, -h, --weft-net).
std::string applyText(const FlagSpec& f, const std::string& value, Options* o) {
  long long v = 0;
  switch (f.flag) {
    case Flag::kStepFactor:
      if (!parseInt(value, 1, kIntMax, &v)) return flagLabel(f) + " wants an integer factor >= 1, not '" + value + "'";
      o->stepFactor = static_cast<size_t>(v);
      return "";
    case Flag::kJson:
    case Flag::kCsv:
    case Flag::kPlot: {
      if (value.empty()) return flagLabel(f) + " wants a file name";
      std::string& file = f.flag == Flag::kJson ? o->jsonFile : f.flag == Flag::kCsv ? o->csvFile : o->plotFile;
      file = value;
      return "";
    }
    case Flag::kGlooStore:
      if (value.empty()) return flagLabel(f) + " wants a directory every rank's host can see";
      o->peerStoreDir = value;
      return "";
    case Flag::kCompare: {
      std::string error;
      if (parseLibList(value, comparePeerNames(), &o->compare, &error)) return "";
      if (error.find("'weft'") != std::string::npos)
        error = "Weft is always measured; name the libraries to run beside it (mpi, gloo, nccl)";
      return flagLabel(f) + ": " + error;
    }
    case Flag::kMem:
      if (value == "host")
        o->mem = MemKind::kHost;
      else if (value == "device")
        o->mem = MemKind::kDevice;
      else
        return flagLabel(f) + " wants host or device, not '" + value + "'";
      return "";
    case Flag::kWeftNet:
      o->weftNet = true;
      return "";
    case Flag::kColl:
      if (!collectiveFromName(value.c_str(), &o->coll))
        return flagLabel(f) +
               " wants allreduce, allgather, reducescatter, broadcast, reduce, alltoall or sendrecv, not '" + value +
               "'";
      return "";
    case Flag::kHelp:
      o->help = true;
      return "";
    default:
      break;
  }
  return "internal: unhandled flag";
}

// Applies one flag's value; returns an error sentence or "".
std::string apply(const FlagSpec& f, const std::string& value, Options* o) {
  if (f.flag == Flag::kRegister && value == "2")
    return flagLabel(f) + " 2 (symmetric window registration) is not provided by Weft; use 0 or 1";
  for (const IntFlag& i : kIntFlags) {
    if (i.flag != f.flag) continue;
    long long v = 0;
    if (!parseInt(value, i.lo, i.hi, &v))
      return flagLabel(f) + " wants an integer from " + std::to_string(i.lo) + " to " + std::to_string(i.hi) +
             ", not '" + value + "'";
    o->*i.field = static_cast<int>(v);
    return "";
  }
  for (const SizeFlag& z : kSizeFlags) {
    if (z.flag != f.flag) continue;
    if (!parseSize(value, &(o->*z.field)))
      return flagLabel(f) + " wants a byte count such as 8, 64K, 1M or 2G (powers of 1024), not '" + value + "'";
    return "";
  }
  if (f.flag == Flag::kOp) return applyOp(f, value, o);
  if (f.flag == Flag::kType) return applyType(f, value, o);
  return applyText(f, value, o);
}

// Checks that need every flag: sizes in order, a step that moves, notes for GPU-only flags.
std::string finish(Options* o) {
  if (o->minBytes > o->maxBytes)
    return "-b/--minbytes (" + std::to_string(o->minBytes) + ") is larger than -e/--maxbytes (" +
           std::to_string(o->maxBytes) + ")";
  if (o->stepFactor <= 1 && o->stepBytes == 0 && o->minBytes < o->maxBytes)
    return "-i/--stepbytes 0 with no -f/--stepfactor > 1 never reaches -e/--maxbytes; give -i > 0 or -f > 1";
  if (!o->compare.empty() && o->nThreads > 1)
    return "--compare runs one rank per process (the other libraries have no threads-as-ranks mode); drop "
           "-t/--nthreads " +
           std::to_string(o->nThreads) + " and raise -np or mpirun's -np instead";
  if (o->localRegister)
    o->notes.push_back("-R 1: buffers registered with weftCommRegister (host memory from weftMemAlloc)");
  if (o->nGpus > 1)
    o->notes.push_back("-g " + std::to_string(o->nGpus) +
                       ": weft-perf drives one GPU per rank; run more processes (or -t) for more GPUs");
  if (o->cudaGraph > 0)
    o->notes.push_back("-G " + std::to_string(o->cudaGraph) +
                       ": CUDA graph replays are not measured by weft-perf yet; runs go without graphs");
  return "";
}

}  // namespace

bool parseSize(const std::string& text, size_t* bytes) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) return false;
  unsigned shift = 0;
  if (*end != '\0') {
    switch (*end) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      case 't':
      case 'T':
        shift = 40;
        break;
      default:
        return false;
    }
    ++end;
    if (*end == 'b' || *end == 'B') ++end;  // "64KB" reads like "64K"
    if (*end != '\0') return false;
  }
  if (shift && v > (~0ULL >> shift)) return false;
  *bytes = static_cast<size_t>(v << shift);
  return true;
}

bool collectiveFromProgramName(const char* argv0, Collective* coll) {
  if (!argv0) return false;
  const char* base = std::strrchr(argv0, '/');
  base = base ? base + 1 : argv0;
  const std::string name(base);
  for (int i = 0; i < kNumCollectives; ++i) {
    const Collective c = static_cast<Collective>(i);
    if (name == collectiveProgram(c)) {
      *coll = c;
      return true;
    }
  }
  return false;
}

ParseResult parseOptions(int argc, const char* const* argv, Options* opts) {
  ParseResult r;
  bool haveColl = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const FlagSpec* spec = nullptr;
    std::string value;
    bool haveValue = false;
    if (arg == "-np") {
      spec = findShort("np");
    } else if (arg.size() > 2 && arg[0] == '-' && arg[1] == '-') {
      std::string name = arg.substr(2);
      const size_t eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        haveValue = true;
        name.resize(eq);
      }
      spec = findLong(name);
      if (!spec) return {false, "unknown option '" + arg + "'"};
      if (haveValue && !spec->takesValue) return {false, "option --" + name + " takes no value"};
    } else if (arg.size() >= 2 && arg[0] == '-' && !(arg[1] >= '0' && arg[1] <= '9')) {
      spec = findShort(arg.substr(1, 1));
      if (!spec) return {false, "unknown option '" + arg + "'"};
      if (arg.size() > 2) {
        if (!spec->takesValue) return {false, "unknown option '" + arg + "'"};
        value = arg.substr(2);
        haveValue = true;
      }
    } else {
      // A positional argument names the collective (once).
      if (haveColl)
        return {false,
                "unexpected argument '" + arg + "' (the collective is already " + collectiveName(opts->coll) + ")"};
      if (!collectiveFromName(arg.c_str(), &opts->coll)) return {false, "unknown collective or argument '" + arg + "'"};
      haveColl = true;
      continue;
    }
    if (spec->takesValue && !haveValue) {
      if (i + 1 >= argc) return {false, "option '" + arg + "' needs a value"};
      value = argv[++i];
    }
    const std::string err = apply(*spec, value, opts);
    if (!err.empty()) return {false, err};
    if (spec->flag == Flag::kColl) haveColl = true;
  }
  if (opts->help) return r;
  const std::string err = finish(opts);
  if (!err.empty()) return {false, err};
  return r;
}

std::string usageText(const char* prog) {
  std::string p = prog ? prog : "weft-perf";
  return "usage: " + p +
         " [collective] [options]\n"
         "  Measures a Weft collective on GPU or host memory; output and flags follow nccl-tests.\n"
         "  collective: allreduce (default) allgather reducescatter broadcast reduce alltoall sendrecv\n"
         "              (also chosen by -x/--coll, or by running as all_reduce_perf, all_gather_perf, ...)\n"
         "  -b,--minbytes <n>       smallest size (32M); K/M/G suffixes are powers of 1024\n"
         "  -e,--maxbytes <n>       largest size, inclusive (32M)\n"
         "  -i,--stepbytes <n>      additive step (1M)\n"
         "  -f,--stepfactor <n>     multiplicative step (used instead of -i when > 1)\n"
         "  -n,--iters <n>          timed iterations per size (20)\n"
         "  -w,--warmup_iters <n>   warm-up iterations (5)\n"
         "  -m,--agg_iters <n>      calls aggregated in one group per iteration (1)\n"
         "  -N,--run_cycles <n>     repeat the whole run n times, 0 forever (1)\n"
         "  -c,--check <n>          correctness-check iterations, 0 to skip (1)\n"
         "  -o,--op <op>            sum|prod|min|max|avg|all (sum)\n"
         "  -d,--datatype <type>    " +
         allTypeNames() +
         "|all, or a list: float,half (float)\n"
         "  -r,--root <rank>        root of broadcast/reduce, -1 for every rank in turn (0)\n"
         "  -a,--average <0-3>      combine ranks' times: 0 rank 0, 1 avg, 2 min, 3 max (1)\n"
         "  -T,--timeout <s>        seconds any wait may take (0: WEFT_TIMEOUT_S)\n"
         "  -J,--json <file>        also write every measurement as JSON (the results.h schema)\n"
         "  --csv <file>            ... as CSV, one line per library, size and placement\n"
         "  --plot <file.svg>       ... as an SVG plot of bus bandwidth and time against size\n"
         "  --gloo-store <dir>      where Gloo's ranks meet (--compare gloo across hosts: a directory\n"
         "                          every host sees, e.g. on NFS; default a fresh one in /tmp)\n"
         "  --compare <libs>        also run mpi, gloo and/or nccl (comma-separated) on the same sizes, types,\n"
         "                          ops and roots, interleaved per size; a side-by-side table follows the\n"
         "                          nccl-tests one. mpi needs mpirun: with -np (or alone) weft-perf re-runs\n"
         "                          itself under mpirun -np N when one is in PATH\n"
         "  --mem <host|device>     where the buffers live (device when there is a GPU, else host); device:\n"
         "                          each rank uses GPU (local rank % GPUs), as nccl-tests does; with --compare\n"
         "                          nccl, ranks that share a GPU must be processes (not -t): weft-perf sets\n"
         "                          NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL 2.30+), else a distinct NCCL_HOSTID per\n"
         "                          rank with NCCL_SOCKET_IFNAME=lo and NCCL_NET=Socket (NCCL's socket transport)\n"
         "  --weft-net              Weft's ranks use its network path even on one host (sets WEFT_P2P_DISABLE=1,\n"
         "                          WEFT_SHM_DISABLE=1, and WEFT_SOCKET_IFNAME=lo, WEFT_NET=socket unless set),\n"
         "                          to set against NCCL's socket transport on a shared GPU; the header says\n"
         "                          which path each library took\n"
         "  -t,--nthreads <n>       ranks (threads) per process (1)\n"
         "  -g,--ngpus <n>          GPUs per thread (1; weft-perf drives one per rank)\n"
         "  -z,--blocking <0/1>     wait for each call (0; host memory calls always block)\n"
         "  -R,--local_register <0/1> register the buffers with weftCommRegister (0); host memory then comes\n"
         "                          from weftMemAlloc (shared memory peers map: collectives of WEFT_ZERO_COPY_MIN_BYTES\n"
         "                          and up run zero-copy); the other libraries of --compare use the same buffers\n"
         "  -y,--stream_null <0/1>  use the NULL stream (0; to Weft it means host memory, which always uses it)\n"
         "  -G,--cudagraph <n>      CUDA graph replays (0; not measured yet)\n"
         "  -C,--report_cputime <0/1> label times as CPU time (0)\n"
         "  -x,--coll <name>        the collective to run\n"
         "  -np,--nranks <n>        standalone: fork n ranks (without mpirun)\n"
         "  -h,--help               this text\n"
         "  Launch: under mpirun (one rank per process), with -np N (forks N ranks), or alone (1 rank).\n"
         "  Exit status: 0 ok, 1 wrong results (of any library compared) / a failed call / bus bandwidth\n"
         "  under 0.9 x WEFT_PERF_MIN_BW (or NCCL_TESTS_MIN_BW), 2 bad command line or a request this\n"
         "  run cannot meet (--mem device without a GPU, a root outside the ranks). A compared\n"
         "  library that is not built or finds no GPU is a note, not a failure.\n";
}

const std::vector<std::string>& comparePeerNames() {
  static const std::vector<std::string> names = {"mpi", "gloo", "nccl"};
  return names;
}

const char* memName(MemKind m) {
  switch (m) {
    case MemKind::kHost:
      return "host";
    case MemKind::kDevice:
      return "device";
    case MemKind::kAuto:
      break;
  }
  return "auto";
}

bool resolveMemory(MemKind requested, const char* noGpuReason, MemKind* out, std::string* error) {
  if (requested == MemKind::kDevice && noGpuReason) {
    *error = std::string("--mem device: ") + noGpuReason + "; run with --mem host";
    return false;
  }
  if (requested == MemKind::kAuto) requested = noGpuReason ? MemKind::kHost : MemKind::kDevice;
  *out = requested;
  return true;
}

std::vector<std::string> argsWithoutRankCount(int argc, const char* const* argv) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const FlagSpec* spec = nullptr;
    bool attached = false;  // the value is part of arg
    if (arg == "-np") {
      spec = findShort("np");
    } else if (arg.size() > 2 && arg[0] == '-' && arg[1] == '-') {
      const size_t eq = arg.find('=');
      spec = findLong(arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2));
      attached = eq != std::string::npos;
    } else if (arg.size() >= 2 && arg[0] == '-' && !(arg[1] >= '0' && arg[1] <= '9')) {
      spec = findShort(arg.substr(1, 1));
      attached = arg.size() > 2;
    }
    const bool separateValue = spec && spec->takesValue && !attached && i + 1 < argc;
    if (spec && spec->flag == Flag::kNranks) {
      if (separateValue) ++i;
      continue;
    }
    out.push_back(arg);
    if (separateValue) out.push_back(argv[++i]);
  }
  return out;
}

std::vector<std::string> mpirunCommand(const std::string& mpirun, bool openMpi, int nranks, int cpus,
                                       const std::string& self, int argc, const char* const* argv) {
  std::vector<std::string> cmd = {mpirun, "-np", std::to_string(nranks)};
  if (openMpi && nranks > cpus) cmd.push_back("--oversubscribe");
  if (openMpi) {
    cmd.push_back("--bind-to");
    cmd.push_back("none");
  }
  cmd.push_back(self);
  for (const std::string& a : argsWithoutRankCount(argc, argv)) cmd.push_back(a);
  return cmd;
}

}  // namespace weft::perf
