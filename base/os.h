// Small OS helpers: monotonic time, deadlines, polite polling, host identity, processes.
#ifndef WEFT_BASE_OS_H_
#define WEFT_BASE_OS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace weft {

// Monotonic clock in nanoseconds.
uint64_t nowNs();

// A point in time after which a wait must give up.
class Deadline {
 public:
  static Deadline afterSeconds(double seconds);
  static Deadline never();
  bool expired() const;
  // Seconds left (0 when expired; a large number for never()).
  double remainingSeconds() const;
  // Milliseconds left, clamped to [0, INT32_MAX], for poll(2).
  int remainingMs() const;
  uint64_t atNs() const { return atNs_; }

 private:
  uint64_t atNs_ = 0;
};

// Polling that spins briefly, then yields, then sleeps, so that many ranks on few cores still
// make progress. Call pause() after each unsuccessful poll and reset() after progress.
class Backoff {
 public:
  // Spins before the first yield, for every Backoff of this process. Fewer when ranks
  // outnumber cores: a spinning rank then only delays the one it waits for.
  static void setSpins(uint32_t spins);
  void pause();
  void reset() {
    rounds_ = 0;
    coreWanted_ = false;
    lateYields_ = 0;
  }
  uint32_t rounds() const { return rounds_; }

 private:
  uint32_t rounds_ = 0;
  uint32_t lateYields_ = 0;  // yields after which another thread had had the core
  bool coreWanted_ = false;  // enough of them: sleep, not yield
};

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

std::string hostName();
// Identifies this host (WEFT_HOSTID, else hostname, boot id and network namespace): equal on
// two ranks means "same host".
uint64_t hostHash();
// Identifies this process (host, pid and start time): equal means "same process".
uint64_t processHash();

// Runs, in the calling thread, the once-per-process initialisations (function-local statics,
// std::call_once: host name and hash, log settings, the unknown-variable warnings) that Weft's
// own threads (the bootstrap root, a non-blocking init) would otherwise run first. A fork()
// that caught such a thread inside one would leave it "in progress" in the child for ever, and
// the child's own init would wait on it. Call before starting such a thread.
void initProcessStatics();
// CPUs this process may run on.
int usableCpus();
// True when a process with this pid exists on this host.
bool processAlive(int pid);
// What /proc/<pid>/stat says of a process (pid 0: this one): its state letter (R, S, D, T for
// stopped, t for traced, Z, ...) and its start time in clock ticks since boot (field 22), which
// tells a reused pid from the process that had it. False when there is no such file to read.
struct ProcStat {
  char state = '?';
  uint64_t startTicks = 0;
};
bool readProcStat(int pid, ProcStat* out);
// The inode of this process's pid namespace, 0 when unknown: two processes' pids compare only
// when it is equal (containers that share /dev/shm may have separate pid namespaces).
uint64_t processPidNamespace();
// Whether the process that recorded (`pid`, `pidNs`) has provably ended: it ran in this pid
// namespace (a known one), is not this process, and no process with its pid runs now.
bool creatorGone(int pid, uint64_t pidNs);
// Whether a running process maps the file `path` (a "/dev/shm/..." segment), as /proc tells.
// Processes whose mappings this one may not read (another user's, or not dumpable: setuid
// programs, a container's init) are not ranks of this user's jobs and are not looked at.
bool mappedByLiveProcess(const std::string& path);
// Unlinks the /dev/shm segments whose file name starts with `prefix` and for which
// `leftOver("/" + file name)` (the shm_open name) says so; returns how many went. The dead-creator
// sweeps of the FIFOs, weftMemAlloc and libfabric's shm provider use it.
size_t unlinkShmSegments(const std::string& prefix, const std::function<bool(const std::string& name)>& leftOver);

// Asks the kernel to place the pages of the mapping [addr, addr + bytes) on NUMA node `node`,
// preferred rather than required (other nodes take over when it is full). On a shared mapping
// of a shared-memory segment the policy belongs to the segment, so pages allocated later (by
// posix_fallocate, or by any process's first touch) follow it. False, with errno in *err, when
// the kernel refuses (no such node, no NUMA support) or node is outside 0..1023.
bool preferNumaNode(void* addr, size_t bytes, int node, int* err);
// The node the NUMA policy at addr prefers, or -1 (default policy, another mode, no NUMA).
int preferredNumaNode(void* addr);

// Reads `bytes` at `address` in process `pid` on this host into dst: memcpy for this process,
// process_vm_readv (cross-memory attach) for another. False, with errno in *err, when the OS
// refuses (no permission: ptrace rules; or the process is gone).
bool readProcessMemory(int pid, uint64_t address, void* dst, size_t bytes, int* err);
// Writes `bytes` from src at `address` in process `pid` on this host: memcpy for this process,
// process_vm_writev for another (the same permission rules as readProcessMemory).
bool writeProcessMemory(int pid, uint64_t address, const void* src, size_t bytes, int* err);
// The address of a word holding kMemoryProbeValue in this process; a peer that reads that
// value there with readProcessMemory can read this process's buffers.
uint64_t memoryProbeAddress();
constexpr uint64_t kMemoryProbeValue = 0x7765667470726f62ull;

// 64-bit FNV-1a.
uint64_t hashBytes(const void* data, size_t bytes, uint64_t seed = 0xcbf29ce484222325ull);

// "1.5 MiB", "64 KiB", "12 B".
std::string formatBytes(uint64_t bytes);

// Fills buf with random bytes from the kernel; false if it cannot.
bool randomBytes(void* buf, size_t bytes);

}  // namespace weft

#endif  // WEFT_BASE_OS_H_
