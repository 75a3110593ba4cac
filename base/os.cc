#include "base/os.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>

#include "base/log.h"
#include "base/params.h"

namespace weft {

uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

Deadline Deadline::afterSeconds(double seconds) {
  Deadline d;
  if (seconds <= 0) seconds = 0;
  double ns = seconds * 1e9;
  d.atNs_ = ns > 4e18 ? UINT64_MAX : nowNs() + static_cast<uint64_t>(ns);
  return d;
}

Deadline Deadline::never() {
  Deadline d;
  d.atNs_ = UINT64_MAX;
  return d;
}

bool Deadline::expired() const { return atNs_ != UINT64_MAX && nowNs() >= atNs_; }

double Deadline::remainingSeconds() const {
  if (atNs_ == UINT64_MAX) return 1e18;
  uint64_t now = nowNs();
  return now >= atNs_ ? 0.0 : static_cast<double>(atNs_ - now) / 1e9;
}

int Deadline::remainingMs() const {
  double ms = remainingSeconds() * 1e3;
  if (ms > INT_MAX) return INT_MAX;
  return static_cast<int>(ms + 0.999);
}

namespace {
std::atomic<uint32_t> gSpins{400};
}  // namespace

void Backoff::setSpins(uint32_t spins) { gSpins.store(spins, std::memory_order_relaxed); }

void Backoff::pause() {
  // Spins (by default ~400, a few microseconds: a peer on another core answers within them),
  // then yields (ranks sharing a core let each other run), then short sleeps growing to 200 us.
  // Yields that come back late mean other threads want this core: yielding on would keep this
  // waiter runnable, taking turns (and CPU time) from threads with work to do, among them the
  // rank it waits for or its own process's compute thread; after a few it sleeps instead
  // (not after one: a small call would then pay a sleep, 70 us or more, for a single preemption).
  const uint32_t kSpins = gSpins.load(std::memory_order_relaxed), kYields = 1000;
  constexpr uint64_t kLateYieldNs = 50000;
  constexpr uint32_t kLateYieldsBeforeSleep = 4;
  ++rounds_;
  if (rounds_ < kSpins) {
    cpuRelax();
  } else if (rounds_ < kSpins + kYields && !coreWanted_) {
    const uint64_t before = nowNs();
    sched_yield();
    lateYields_ += nowNs() - before > kLateYieldNs;
    coreWanted_ = lateYields_ >= kLateYieldsBeforeSleep;
  } else {
    uint32_t extra = rounds_ < kSpins + kYields ? 0 : rounds_ - (kSpins + kYields);
    long us = 20 + static_cast<long>(extra < 180 ? extra : 180);
    timespec ts{0, us * 1000};
    nanosleep(&ts, nullptr);
  }
}

std::string hostName() {
  static const std::string name = [] {
    char buf[256] = {0};
    if (gethostname(buf, sizeof(buf) - 1) != 0) return std::string("unknown-host");
    return std::string(buf);
  }();
  return name;
}

uint64_t hashBytes(const void* data, size_t bytes, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t hostHash() {
  static const uint64_t hash = [] {
    // WEFT_HOSTID names the host outright (containers that share /dev/shm, tests).
    std::string id = params::HostId();
    if (!id.empty()) return hashBytes(id.data(), id.size());
    id = hostName();
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::string bootId;
    if (boot >> bootId) id += ":" + bootId;
    // Processes in different network namespaces count as different hosts: a container with its
    // own network usually has its own /dev/shm too, and tests model hosts with namespaces.
    char ns[64] = {0};
    ssize_t n = readlink("/proc/self/ns/net", ns, sizeof(ns) - 1);
    if (n > 0) id += ":" + std::string(ns, static_cast<size_t>(n));
    return hashBytes(id.data(), id.size());
  }();
  return hash;
}

void initProcessStatics() {
  (void)hostName();
  (void)hostHash();
  (void)processHash();
  (void)logEnabled(kWarn, kInit);
  params::warnUnknownOnce();
}

uint64_t processHash() {
  // Cached per pid: a child forked after the first call must not inherit its parent's value.
  static std::atomic<int> cachedPid{0};
  static std::atomic<uint64_t> cachedHash{0};
  int pid = getpid();
  if (cachedPid.load(std::memory_order_acquire) == pid) return cachedHash.load(std::memory_order_relaxed);
  std::string id = std::to_string(hostHash()) + ":" + std::to_string(pid);
  // The start time tells a recycled pid apart.
  ProcStat st;
  (void)readProcStat(0, &st);
  id += ":" + std::to_string(st.startTicks);
  uint64_t hash = hashBytes(id.data(), id.size());
  cachedHash.store(hash, std::memory_order_relaxed);
  cachedPid.store(pid, std::memory_order_release);
  return hash;
}

int usableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

bool readProcStat(int pid, ProcStat* out) {
  char path[64];
  if (pid <= 0) std::snprintf(path, sizeof(path), "/proc/self/stat");
  else std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[1024];
  const ssize_t got = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (got <= 0) return false;
  text[got] = '\0';
  // The command name (field 2) may hold spaces and parentheses: field 3 on follow the last ')'.
  const char* p = std::strrchr(text, ')');
  if (p == nullptr || p[1] != ' ' || p[2] == '\0') return false;
  out->state = p[2];
  p += 2;
  for (int field = 3; field < 22; ++field) {
    while (*p != ' ' && *p != '\0') ++p;
    while (*p == ' ') ++p;
    if (*p == '\0') return false;
  }
  char* end = nullptr;
  out->startTicks = std::strtoull(p, &end, 10);
  return end != p;
}

bool processAlive(int pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0) return errno == EPERM;  // EPERM: exists but belongs to someone else
  // A killed process that its parent has not reaped yet is a zombie: it still answers kill()
  // but will never run again.
  ProcStat st;
  if (!readProcStat(pid, &st)) return true;  // no /proc: trust kill()
  return st.state != 'Z' && st.state != 'X';
}

uint64_t processPidNamespace() {
  static const uint64_t ns = [] {
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : uint64_t{0};
  }();
  return ns;
}

bool creatorGone(int pid, uint64_t pidNs) {
  return pid > 0 && pidNs != 0 && pidNs == processPidNamespace() && pid != getpid() && !processAlive(pid);
}

namespace {

// Whether the maps of one process (/proc/<pid>/maps, open as f) list `path`: "... /dev/shm/name",
// or once unlinked "... /dev/shm/name (deleted)".
bool mapsList(FILE* f, const std::string& path) {
  char* line = nullptr;
  size_t capacity = 0;
  bool found = false;
  ssize_t n;
  while (!found && (n = getline(&line, &capacity, f)) > 0) {
    std::string text(line, static_cast<size_t>(n));
    const size_t at = text.find(path);
    const size_t after = at + path.size();
    found = at != std::string::npos && (after == text.size() || text[after] == ' ' || text[after] == '\n');
  }
  std::free(line);
  return found;
}

}  // namespace

bool mappedByLiveProcess(const std::string& path) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return true;  // nothing can be told: assume it is
  bool mapped = false;
  while (const dirent* e = mapped ? nullptr : readdir(proc)) {
    const std::string pid = e->d_name;
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    // Gone meanwhile, or not readable: another user's, or not dumpable (setuid, a container's
    // init), which no Weft rank is.
    FILE* f = std::fopen(("/proc/" + pid + "/maps").c_str(), "r");
    if (f == nullptr) continue;
    mapped = mapsList(f, path);
    std::fclose(f);
  }
  closedir(proc);
  return mapped;
}

size_t unlinkShmSegments(const std::string& prefix, const std::function<bool(const std::string& name)>& leftOver) {
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return 0;
  size_t removed = 0;
  while (const dirent* e = readdir(dir)) {
    const std::string name = std::string("/") + e->d_name;
    if (name.compare(1, prefix.size(), prefix) != 0 || !leftOver(name)) continue;
    removed += shm_unlink(name.c_str()) == 0 ? 1 : 0;
  }
  closedir(dir);
  return removed;
}

std::string formatBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) v /= 1024.0, ++u;
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof(buf), v == static_cast<uint64_t>(v) ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

namespace {
constexpr int kMaxNumaNodes = 1024;
constexpr size_t kMaskWords = kMaxNumaNodes / (8 * sizeof(unsigned long));
}  // namespace

bool preferNumaNode(void* addr, size_t bytes, int node, int* err) {
  if (node < 0 || node >= kMaxNumaNodes) {
    *err = EINVAL;
    return false;
  }
  unsigned long mask[kMaskWords] = {};
  const size_t bits = 8 * sizeof(unsigned long);
  mask[static_cast<size_t>(node) / bits] = 1ul << (static_cast<size_t>(node) % bits);
  // The kernel reads maxnode - 1 bits of the mask.
  if (syscall(SYS_mbind, addr, bytes, MPOL_PREFERRED, mask, kMaxNumaNodes + 1, 0) != 0) {
    *err = errno;
    return false;
  }
  return true;
}

int preferredNumaNode(void* addr) {
  int mode = -1;
  unsigned long mask[kMaskWords] = {};
  if (syscall(SYS_get_mempolicy, &mode, mask, kMaxNumaNodes + 1, addr, MPOL_F_ADDR) != 0) return -1;
  if (mode != MPOL_PREFERRED) return -1;
  const size_t bits = 8 * sizeof(unsigned long);
  for (size_t i = 0; i < kMaxNumaNodes; ++i) {
    if (mask[i / bits] & (1ul << (i % bits))) return static_cast<int>(i);
  }
  return -1;
}

bool readProcessMemory(int pid, uint64_t address, void* dst, size_t bytes, int* err) {
  if (pid == getpid()) {
    std::memcpy(dst, reinterpret_cast<const void*>(address), bytes);
    return true;
  }
  auto* out = static_cast<char*>(dst);
  while (bytes > 0) {
    iovec local{out, bytes};
    iovec remote{reinterpret_cast<void*>(address), bytes};
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      *err = n < 0 ? errno : EFAULT;
      return false;
    }
    out += n;
    address += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool writeProcessMemory(int pid, uint64_t address, const void* src, size_t bytes, int* err) {
  if (pid == getpid()) {
    std::memcpy(reinterpret_cast<void*>(address), src, bytes);
    return true;
  }
  const auto* in = static_cast<const char*>(src);
  while (bytes > 0) {
    iovec local{const_cast<char*>(in), bytes};
    iovec remote{reinterpret_cast<void*>(address), bytes};
    ssize_t n = process_vm_writev(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      *err = n < 0 ? errno : EFAULT;
      return false;
    }
    in += n;
    address += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

uint64_t memoryProbeAddress() {
  static volatile const uint64_t probe = kMemoryProbeValue;
  return reinterpret_cast<uint64_t>(&probe);
}

bool randomBytes(void* buf, size_t bytes) {
  auto* p = static_cast<unsigned char*>(buf);
  while (bytes > 0) {
    ssize_t n = getrandom(p, bytes, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace weft
