// weft-perf's launchers (see launch.h). MPI is used for the unique id alone (and, with
// --compare mpi, as the library compared); everything else (rank lists, times, wrong counts,
// the other libraries' rendezvous) goes through Weft.
//
// Device memory: each rank takes GPU (local rank % GPUs), the local rank being its index among
// the ranks on its host (MPI: the launcher's OMPI_COMM_WORLD_LOCAL_RANK or MPI_LOCALRANKID,
// else a shared-memory split of MPI_COMM_WORLD; forked ranks: the fork index; times -t threads),
// and makes it current before it creates its communicator, so that Weft finds it there. Whether
// there is a GPU is asked before the ranks start; when they are forked, a throw-away child
// asks, since a process cannot pass an initialised GPU runtime on to its children.
#include "perf/launch.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "perf/bench.h"
#include "perf/gpu_api.h"
#include "perf/path_env.h"
#include "weft/weft.h"

#ifdef WEFT_PERF_WITH_MPI
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // the C API only: no C++ bindings
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#endif

namespace weft::perf {
namespace {

// A child that has not finished this long after another rank failed is stopped.
constexpr int kGraceSeconds = 10;

struct ProcessResult {
  int exitCode = 0;
  bool callFailed = false;
};

// Makes the rank's GPU current (device memory); false with the reason printed.
bool useGpu(const Options& o, int rank, int localRank, RankDevice* dev) {
  if (o.mem != MemKind::kDevice) return true;
  std::string why;
  dev->gpu = gpuApi(&why);
  dev->asked = o.memAsked == MemKind::kDevice;
  if (dev->gpu == nullptr) {
    std::fprintf(stderr, "weft-perf: rank %d: --mem device: %s\n", rank, why.c_str());
    return false;
  }
  dev->device = localRank % dev->gpu->deviceCount();
  const GpuStatus s = dev->gpu->setDevice(dev->device);
  if (!s.ok()) std::fprintf(stderr, "weft-perf: rank %d: %s\n", rank, s.error.c_str());
  return s.ok();
}

// One rank: take its GPU (device memory), join the communicator, run, free it (abort it when a
// call failed, so that no thread of it waits on a peer that is gone).
void runRank(const Options& o, const char* program, const weftUniqueId& id, int nranks, int rank, int group,
             int localRank, ProcessResult* out) {
  RankDevice dev;
  if (!useGpu(o, rank, localRank, &dev)) {
    // The others wait for this rank in weftCommInitRank until their time-out; end the job sooner.
    out->exitCode = 1;
    out->callFailed = true;
    return;
  }
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutS = o.timeoutS;
  config.commName = "weft-perf";
  weftComm_t comm = nullptr;
  const weftResult_t r = weftCommInitRankConfig(&comm, nranks, id, rank, &config);
  if (r != weftSuccess) {
    std::fprintf(stderr, "weft-perf: rank %d of %d: weftCommInitRank failed: %s: %s\n", rank, nranks,
                 weftGetErrorString(r), weftGetLastError(nullptr));
    out->exitCode = 1;
    out->callFailed = true;
    return;
  }
  out->exitCode = runBenchmark(o, program, comm, group, dev, &out->callFailed);
  if (out->callFailed) {
    weftCommAbort(comm);
    return;
  }
  const weftResult_t d = weftCommDestroy(comm);
  if (d != weftSuccess) {
    std::fprintf(stderr, "weft-perf: rank %d: weftCommDestroy failed: %s\n", rank, weftGetErrorString(d));
    if (out->exitCode == 0) out->exitCode = 1;
  }
}

// This process's ranks procRank*nThreads .. +nThreads-1, one thread each (inline for one).
// localProc: this process's index among the processes on its host.
ProcessResult runProcess(const Options& o, const char* program, const weftUniqueId& id, int nprocs, int procRank,
                         int localProc) {
  const int nranks = nprocs * o.nThreads;
  std::vector<ProcessResult> results(static_cast<size_t>(o.nThreads));
  if (o.nThreads == 1) {
    runRank(o, program, id, nranks, procRank, 0, localProc, &results[0]);
  } else {
    std::vector<std::thread> threads;
    for (int t = 0; t < o.nThreads; ++t)
      threads.emplace_back(runRank, std::cref(o), program, std::cref(id), nranks, procRank * o.nThreads + t, t,
                           localProc * o.nThreads + t, &results[static_cast<size_t>(t)]);
    for (std::thread& t : threads) t.join();
  }
  ProcessResult all;
  for (const ProcessResult& r : results) {
    if (r.exitCode > all.exitCode) all.exitCode = r.exitCode;
    all.callFailed = all.callFailed || r.callFailed;
  }
  return all;
}

int runSingle(const Options& o, const char* program) {
  weftUniqueId id;
  const weftResult_t r = weftGetUniqueId(&id);
  if (r != weftSuccess) {
    std::fprintf(stderr, "weft-perf: weftGetUniqueId failed: %s: %s\n", weftGetErrorString(r),
                 weftGetLastError(nullptr));
    return 1;
  }
  return runProcess(o, program, id, 1, 0, 0).exitCode;
}

// "rank 3", or "process 1 (ranks 2-3)" when each process runs several ranks (-t).
std::string processLabel(int proc, int nThreads) {
  if (nThreads == 1) return "rank " + std::to_string(proc);
  return "process " + std::to_string(proc) + " (ranks " + std::to_string(proc * nThreads) + "-" +
         std::to_string(proc * nThreads + nThreads - 1) + ")";
}

std::string describeStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "stopped with wait status " + std::to_string(status);
}

// Forks the n ranks of this host, each running runProcess; false (after stopping the ones
// already forked) when a fork fails.
bool forkRanks(const Options& o, const char* program, const weftUniqueId& id, std::vector<pid_t>* pids) {
  const int n = o.nranks;
  const pid_t parent = getpid();
  for (int i = 0; i < n; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      // The parent holds the root listener: if it dies (timeout, kill -9), so do its ranks.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(1);
      const ProcessResult res = runProcess(o, program, id, n, i, i);  // one host: the fork index is the local rank
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(res.exitCode);  // not exit(): the parent's atexit handlers and its library state are not ours
    }
    if (pid < 0) {
      std::fprintf(stderr, "weft-perf: cannot fork rank %d: %s\n", i, std::strerror(errno));
      for (int j = 0; j < i; ++j) kill((*pids)[static_cast<size_t>(j)], SIGTERM);
      for (int j = 0; j < i; ++j) waitpid((*pids)[static_cast<size_t>(j)], nullptr, 0);
      return false;
    }
    (*pids)[static_cast<size_t>(i)] = pid;
  }
  return true;
}

// The forked ranks being waited for: their pids (negated once reaped), which ones weft-perf
// stopped, and the exit status so far.
struct RankWait {
  std::vector<pid_t> pids;
  std::vector<bool> stoppedByUs;
  int nThreads = 1;
  int remaining = 0;
  int exitCode = 0;
  bool sawFailure = false;
  int termSent = 0;  // 0 none, 1 SIGTERM, 2 SIGKILL
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// A rank ended with `status`: a failure is reported, sets the exit status and, the first time,
// starts the grace period the others have to notice.
void noteExit(RankWait* w, pid_t pid, int status) {
  int rank = -1;
  for (size_t i = 0; i < w->pids.size(); ++i)
    if (w->pids[i] == pid) rank = static_cast<int>(i);
  if (rank < 0) return;
  --w->remaining;
  w->pids[static_cast<size_t>(rank)] = -pid;  // reaped: never signalled again
  const bool good = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (good) return;
  if (w->stoppedByUs[static_cast<size_t>(rank)] && WIFSIGNALED(status)) {
    std::fprintf(stderr, "weft-perf: %s (pid %d) was stopped by weft-perf after another rank failed\n",
                 processLabel(rank, w->nThreads).c_str(), static_cast<int>(pid));
  } else {
    std::fprintf(stderr, "weft-perf: %s (pid %d) %s\n", processLabel(rank, w->nThreads).c_str(),
                 static_cast<int>(pid), describeStatus(status).c_str());
  }
  const int code = WIFEXITED(status) && WEXITSTATUS(status) == 2 ? 2 : 1;
  if (w->exitCode == 0 || (w->exitCode == 2 && code == 1)) w->exitCode = code;
  if (!w->sawFailure) {
    w->sawFailure = true;
    w->deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kGraceSeconds);
  }
}

// After a failure's grace period: SIGTERM to the ranks still running, 5 s later SIGKILL.
void stopStragglers(RankWait* w) {
  if (!w->sawFailure || std::chrono::steady_clock::now() <= w->deadline || w->termSent >= 2) return;
  const int sig = w->termSent == 0 ? SIGTERM : SIGKILL;
  for (size_t i = 0; i < w->pids.size(); ++i) {
    if (w->pids[i] > 0) {
      w->stoppedByUs[i] = true;
      kill(w->pids[i], sig);
    }
  }
  ++w->termSent;
  w->deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
}

int runForked(const Options& o, const char* program) {
  weftUniqueId id;
  const weftResult_t r = weftGetUniqueId(&id);
  if (r != weftSuccess) {
    std::fprintf(stderr, "weft-perf: weftGetUniqueId failed: %s: %s\n", weftGetErrorString(r),
                 weftGetLastError(nullptr));
    return 1;
  }
  const int n = o.nranks;
  std::fflush(stdout);
  std::fflush(stderr);
  RankWait w;
  w.pids.assign(static_cast<size_t>(n), -1);
  if (!forkRanks(o, program, id, &w.pids)) return 1;

  // Wait for every rank; once one fails, give the rest kGraceSeconds to notice, then stop them.
  w.stoppedByUs.assign(static_cast<size_t>(n), false);
  w.nThreads = o.nThreads;
  w.remaining = n;
  while (w.remaining > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      noteExit(&w, pid, status);
      continue;
    }
    if (pid < 0 && errno != EINTR) break;
    stopStragglers(&w);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return w.exitCode;
}

// Set in the environment of a re-run under mpirun, to the mpirun command line. Not WEFT_*: the
// library warns about every WEFT_ variable that is not one of its parameters.
constexpr const char* kReexecVar = "WEFTPERF_REEXEC";

// Whether this machine has a GPU for weft-perf; if not, why not in *whyNot. inChild: ask in a
// child process, so that this one (which forks the ranks) never initialises the GPU runtime.
bool probeGpu(bool inChild, std::string* whyNot) {
  if (!inChild) return gpuApi(whyNot) != nullptr;
  int fds[2];
  if (pipe(fds) != 0) {
    *whyNot = std::string("cannot ask for a GPU: pipe: ") + std::strerror(errno);
    return false;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string why;
    const std::string answer = gpuApi(&why) ? "" : why.empty() ? "no GPU" : why;
    size_t off = 0;
    while (off < answer.size()) {
      const ssize_t w = write(fds[1], answer.data() + off, answer.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    _exit(0);  // not exit(): the GPU runtime's exit handlers are not for this throw-away child
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    *whyNot = std::string("cannot ask for a GPU: fork: ") + std::strerror(errno);
    return false;
  }
  std::string answer;
  char buf[1024];
  for (ssize_t r; (r = read(fds[0], buf, sizeof buf)) != 0;) {
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    answer.append(buf, static_cast<size_t>(r));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *whyNot = "the process that looked for a GPU " + describeStatus(status);
    return false;
  }
  *whyNot = answer;
  return answer.empty();
}

// This process's index among the MPI processes on its host, from the launcher when it says.
int localRankFromEnv() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}) {
    const char* v = std::getenv(name);
    if (v && *v >= '0' && *v <= '9') return std::atoi(v);
  }
  return -1;
}

// The executable `name` in PATH, or "".
std::string findInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  const std::string p = path;
  for (size_t start = 0; start <= p.size();) {
    const size_t colon = std::min(p.find(':', start), p.size());
    const std::string dir = colon > start ? p.substr(start, colon - start) : ".";
    const std::string file = dir + "/" + name;
    struct stat st;
    if (stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(file.c_str(), X_OK) == 0) return file;
    start = colon + 1;
  }
  return "";
}

// This program as the re-run must name it: argv[0] made absolute, not resolved (a link named
// all_reduce_perf picks the collective).
std::string selfPath(const char* argv0) {
  const std::string a = argv0 ? argv0 : "";
  if (a.find('/') == std::string::npos) {
    const std::string found = findInPath(a);
    if (!found.empty()) return found;
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? a : exe.string();
  }
  if (a[0] == '/') return a;
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  return ec ? a : (cwd / a).string();
}

bool isOpenMpi() {
#ifdef OMPI_MAJOR_VERSION
  return true;
#else
  return false;
#endif
}

// --compare mpi without mpirun: replaces this process with `mpirun -np N <this command>` when
// it can. When it cannot, returns with MPI taken out of o->compare and the reason in o->notes.
void rerunUnderMpirun(Options* o, int argc, char** argv) {
  const auto mpi = std::find(o->compare.begin(), o->compare.end(), "mpi");
  if (mpi == o->compare.end()) return;
  std::string why;
#ifndef WEFT_PERF_WITH_MPI
  why = "not built (MPI was not found when weft-perf was configured)";
#else
  const std::string mpirun = findInPath("mpirun");
  const char* asRoot = std::getenv("OMPI_ALLOW_RUN_AS_ROOT");
  const char* confirm = std::getenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM");
  if (std::getenv(kReexecVar)) {
    why = std::string("needs mpirun (this process was started by ") + std::getenv(kReexecVar) +
          " but sees no MPI environment)";
  } else if (mpirun.empty()) {
    why = "needs mpirun, and there is none in PATH; run weft-perf under mpirun to include MPI";
  } else if (isOpenMpi() && geteuid() == 0 && !(asRoot && *asRoot && confirm && *confirm)) {
    why =
        "needs mpirun, which refuses to run as root unless OMPI_ALLOW_RUN_AS_ROOT=1 and "
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 are set";
  } else {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const std::vector<std::string> cmd =
        mpirunCommand(mpirun, isOpenMpi(), std::max(o->nranks, 1), cpus > 0 ? static_cast<int>(cpus) : 1,
                      selfPath(argv[0]), argc, argv);
    std::string line;
    for (size_t i = 0; i < cmd.size(); ++i) line += (i ? " " : "") + (i ? cmd[i] : std::string("mpirun"));
    setenv(kReexecVar, line.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& c : cmd) args.push_back(const_cast<char*>(c.c_str()));
    args.push_back(nullptr);
    std::fflush(stdout);
    std::fflush(stderr);
    execv(mpirun.c_str(), args.data());
    why = "needs mpirun, and " + mpirun + " could not be started: " + std::strerror(errno);
    unsetenv(kReexecVar);
  }
#endif
  (void)argc;
  (void)argv;
  o->compare.erase(mpi);
  o->notes.push_back("mpi: " + why);
}

// Removes a directory tree when the launcher is done with it.
class TempDir {
 public:
  TempDir() = default;
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Makes a fresh directory under $TMPDIR (or /tmp); "" on failure.
  const std::string& make(const char* stem) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + stem + "-XXXXXX";
    if (mkdtemp(&templ[0])) path_ = templ;
    return path_;
  }

 private:
  std::string path_;
};

#ifdef WEFT_PERF_WITH_MPI
int runMpi(const Options& o, const char* program) {
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  weftUniqueId id;
  std::memset(&id, 0, sizeof id);
  int status = 0;
  if (rank == 0) {
    const weftResult_t r = weftGetUniqueId(&id);
    if (r != weftSuccess) {
      std::fprintf(stderr, "weft-perf: weftGetUniqueId failed: %s: %s\n", weftGetErrorString(r),
                   weftGetLastError(nullptr));
      status = 1;
    }
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (status != 0) {
    MPI_Finalize();
    return 1;
  }
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  int local = localRankFromEnv();
  if (local < 0) {
    // The processes that share this host's memory, in MPI_COMM_WORLD order.
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
  }
  const ProcessResult res = runProcess(o, program, id, size, rank, local);
  if (res.callFailed) {
    // Peers may be blocked in a call that will never complete: end the whole job now.
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, res.exitCode ? res.exitCode : 1);
  }
  MPI_Finalize();
  return res.exitCode;
}
#endif

}  // namespace

bool mpiEnvironment() { return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE"); }

bool chooseLaunch(const Options& o, bool mpiEnv, LaunchMode* mode, const char** error) {
  if (mpiEnv && o.nranks > 0) {
    *error = "-np/--nranks forks ranks itself and cannot be combined with mpirun; use one or the other";
    return false;
  }
  *mode = mpiEnv ? LaunchMode::kMpi : o.nranks > 0 ? LaunchMode::kFork : LaunchMode::kSingle;
  return true;
}

int launch(Options o, const char* program, int argc, char** argv) {
  LaunchMode mode;
  const char* modeError = nullptr;
  if (!chooseLaunch(o, mpiEnvironment(), &mode, &modeError)) {
    std::fprintf(stderr, "weft-perf: %s\n", modeError);
    return 2;
  }
  // Host memory never touches the GPU runtime.
  std::string whyNot = "--mem host";
  const bool gpu = o.mem != MemKind::kHost && probeGpu(mode == LaunchMode::kFork, &whyNot);
  std::string error;
  o.memAsked = o.mem;
  if (!resolveMemory(o.mem, gpu ? nullptr : whyNot.c_str(), &o.mem, &error)) {
    std::fprintf(stderr, "weft-perf: %s\n", error.c_str());
    return 2;
  }
  if (o.mem == MemKind::kDevice && o.streamNull)
    o.notes.push_back("-y 1: a NULL stream means host buffers to Weft, so device memory runs use a stream per rank");
  if (mode != LaunchMode::kMpi) rerunUnderMpirun(&o, argc, argv);
  if (mode == LaunchMode::kMpi && std::getenv(kReexecVar))
    o.notes.push_back(std::string("started under ") + std::getenv(kReexecVar) +
                      " by weft-perf (--compare mpi needs MPI, which cannot start in forked ranks)");
  // --weft-net: set before the unique id and the communicator exist (the bootstrap reads
  // WEFT_SOCKET_IFNAME too), and after a re-run under mpirun, whose ranks set it themselves.
  if (o.weftNet) {
    const EnvPlan net = planWeftNet(currentEnv(weftNetVariables()));
    applyEnv(net);
    o.weftPath = net.path;
    for (const std::string& n : net.notes) o.notes.push_back("--weft-net: " + n);
  }
  switch (mode) {
    case LaunchMode::kMpi:
#ifdef WEFT_PERF_WITH_MPI
      return runMpi(o, program);
#else
      std::fprintf(stderr,
                   "weft-perf: started by an MPI launcher, but this build has no MPI support (MPI was not found "
                   "when it was configured); install an MPI (e.g. Open MPI) and rebuild, or run without mpirun: "
                   "weft-perf -np N ...\n");
      return 2;
#endif
    case LaunchMode::kFork: {
      // Gloo's ranks meet in a directory made before the fork and removed after the last rank.
      TempDir store;
      if (o.peerStoreDir.empty() && std::find(o.compare.begin(), o.compare.end(), "gloo") != o.compare.end())
        o.peerStoreDir = store.make("weft-perf");
      return runForked(o, program);
    }
    case LaunchMode::kSingle:
      return runSingle(o, program);
  }
  return 1;
}

}  // namespace weft::perf
