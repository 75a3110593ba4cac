// The flight recorder's writer (recorder.h): the segment's life (create, remove at destruction
// and at exit, sweep of dead owners' segments), the entries' writes, dumps and the dump signal.
#include "core/recorder.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <vector>

#include "base/log.h"
#include "base/os.h"
#include "base/params.h"
#include "base/status.h"
#include "weft/weft.h"

namespace weft {
namespace core {
namespace {

// CLOCK_REALTIME_COARSE: the vDSO answers it without a system call, in ~5 ns here.
int64_t readClockNs() {
  timespec t;
  clock_gettime(CLOCK_REALTIME_COARSE, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// The time a call's entry records: even 5 ns twice a call is 5 % of an 8-byte all-reduce
// (~0.2 us), so calls read this process-wide copy, which the liveness heartbeat thread renews at
// every beat (~100 ms: recorderHeartbeat) and a stalled call at every health check (2 ms). A
// call that does not stall thus has times within ~100 ms; the header's updatedNs likewise.
}  // namespace

std::atomic<int64_t> recorderClockNs{0};  // recorder.h

namespace {

int64_t renewClock() {
  const int64_t now = readClockNs();
  recorderClockNs.store(now, std::memory_order_relaxed);
  return now;
}

int64_t coarseNowNs() {
  const int64_t t = recorderClockNs.load(std::memory_order_relaxed);
  return t != 0 ? t : renewClock();
}

// The process's live recorders, for the exit clean-up and the dumps of the signal. Leaked: used
// at exit, after static destructors may have run.
std::mutex gRegistryMutex;
std::vector<FlightRecorder*>* gRegistry = new std::vector<FlightRecorder*>();
std::atomic<int> gDumpRequested{0};  // raised by the signal handler

void removeSegmentsAtExit() {
  std::lock_guard<std::mutex> lock(gRegistryMutex);
  // A child forked by the owner inherits the registry: only the process that made them removes them.
  for (FlightRecorder* r : *gRegistry) {
    if (r->ownerPid() == getpid()) shm_unlink(r->segmentName().c_str());
  }
}

// Only what is async-signal-safe: an atomic store. The heartbeat thread does the dump.
void onDumpSignal(int) { gDumpRequested.store(1, std::memory_order_relaxed); }

// WEFT_RECORDER_SIGNAL: a number, a name (SIGUSR2 or USR2), 0 / NONE / empty for none; -1 invalid.
int parseSignal(const std::string& text) {
  if (text.empty() || text == "0" || text == "NONE" || text == "none") return 0;
  char* end = nullptr;
  long n = std::strtol(text.c_str(), &end, 10);
  if (end != text.c_str() && *end == '\0') return n > 0 && n < NSIG ? static_cast<int>(n) : -1;
  std::string name = text.rfind("SIG", 0) == 0 ? text.substr(3) : text;
  static const struct {
    const char* name;
    int sig;
  } kNames[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"WINCH", SIGWINCH},
                {"PWR", SIGPWR},   {"URG", SIGURG},   {"TTIN", SIGTTIN}};
  for (const auto& k : kNames) {
    if (name == k.name) return k.sig;
  }
  return -1;
}

// With WEFT_RECORDER_DIR set, once per process: the dump signal's handler, where the signal has
// its default action (a program's own handler is never replaced).
void installSignalOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (params::RecorderDir().empty()) return;
    const std::string text = params::RecorderSignal();
    const int sig = parseSignal(text);
    if (sig < 0) {
      WEFT_LOG(kWarn, kInit,
               "WEFT_RECORDER_SIGNAL=%s is neither a signal number nor a known name (SIGUSR1, SIGUSR2, SIGHUP, "
               "SIGWINCH, SIGPWR, SIGURG, SIGTTIN); no dump signal is installed. Set it to one of those, or 0",
               text.c_str());
      return;
    }
    if (sig == 0) return;
    struct sigaction old;
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO) != 0) {
      WEFT_LOG(kInfo, kInit, "signal %d already has a handler: the flight recorder does not take it for its dumps",
               sig);
      return;
    }
    struct sigaction act;
    std::memset(&act, 0, sizeof(act));
    act.sa_handler = onDumpSignal;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_RESTART;
    sigaction(sig, &act, nullptr);
  });
}

// The pid a segment's name carries ("/weft-rec-<pid>-..."); -1 when it carries none.
int pidOfName(const std::string& name) {
  const std::string prefix = std::string("/") + kRecorderPrefix;
  if (name.rfind(prefix, 0) != 0) return -1;
  char* end = nullptr;
  long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
  return end != nullptr && *end == '-' && pid > 0 && pid < INT32_MAX ? static_cast<int>(pid) : -1;
}

// The start ticks a segment's header records (0 when it has no valid header yet).
uint64_t recordedStartTicks(const std::string& name) {
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return 0;
  RecorderHeader h;
  const ssize_t got = pread(fd, &h, sizeof(h), 0);
  close(fd);
  if (got != static_cast<ssize_t>(sizeof(h)) || h.magic != kRecorderMagic) return 0;
  return h.ownerStartTicks;
}

// "first sentence" of a message: up to its first ". " (or all of it), cut at a word to fit `cap`
// bytes with "..." when longer.
void firstSentence(const std::string& message, char* out, size_t cap) {
  size_t end = message.find(". ");
  if (end == std::string::npos) end = message.size();
  const char* more = "";
  if (end > cap - 1) {
    // Cut at a word, and say so.
    const size_t room = cap - 4;
    const size_t space = message.rfind(' ', room);
    end = space != std::string::npos && space > room / 2 ? space : room;
    more = "...";
  }
  std::memcpy(out, message.data(), end);
  std::memcpy(out + end, more, std::strlen(more) + 1);
}

// A host name usable in a file name.
std::string fileSafe(const std::string& text) {
  std::string out = text.empty() ? "host" : text;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_';
    if (!ok) c = '_';
  }
  return out;
}

bool writeAll(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

size_t sweepRecorderSegments() {
  return unlinkShmSegments(kRecorderPrefix, [](const std::string& name) {
    const int pid = pidOfName(name);
    if (pid < 0 || pid == getpid()) return false;
    if (!processAlive(pid)) return true;
    // The pid runs, but perhaps as another process: then its start time differs from the owner's.
    const uint64_t recorded = recordedStartTicks(name);
    ProcStat now;
    return recorded != 0 && readProcStat(pid, &now) && now.startTicks != 0 && recorded != now.startTicks;
  });
}

std::unique_ptr<FlightRecorder> FlightRecorder::create(uint64_t commHash, int rank, int nRanks) {
  const int64_t wanted = params::RecorderCalls();
  if (wanted <= 0) return nullptr;
  const uint32_t capacity = static_cast<uint32_t>(std::min<int64_t>(wanted, kRecorderMaxCapacity));
  static std::once_flag swept;
  std::call_once(swept, [rank] {
    const size_t removed = sweepRecorderSegments();
    if (removed > 0) {
      WEFT_LOG(kInfo, kInit, "rank %d: removed %zu flight recorder segments of processes that no longer run", rank,
               removed);
    }
  });
  std::unique_ptr<FlightRecorder> r(new FlightRecorder());
  char name[96];
  std::snprintf(name, sizeof(name), "/%s%d-%016" PRIx64 "-%d", kRecorderPrefix, static_cast<int>(getpid()), commHash,
                rank);
  r->name_ = name;
  r->capacity_ = capacity;
  r->bytes_ = sizeof(RecorderHeader) + static_cast<size_t>(capacity) * sizeof(RecorderEntry);
  Status made = r->map();
  if (!made.isOk()) {
    WEFT_LOG(kWarn, kInit, "rank %d: %s; the flight recorder is off for this communicator (weft-inspect will not see it)",
             rank, made.message().c_str());
    return nullptr;
  }
  r->fillHeader(commHash, rank, nRanks);
  installSignalOnce();
  std::lock_guard<std::mutex> lock(gRegistryMutex);
  static const int registered = std::atexit(removeSegmentsAtExit);
  (void)registered;
  gRegistry->push_back(r.get());
  return r;
}

Status FlightRecorder::map() {
  int fd = shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) {
    // The name holds this pid: a segment of an earlier process that had it, left behind.
    shm_unlink(name_.c_str());
    fd = shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  }
  if (fd < 0) {
    int err = errno;
    return Status::error(weftSystemError, "cannot create the flight recorder segment /dev/shm" + name_ + ": " +
                                              errnoText(err));
  }
  // posix_fallocate, not ftruncate alone: a full /dev/shm fails here, not with SIGBUS at a write.
  int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes_));
  void* p = err == 0 ? mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (err == 0 && p == MAP_FAILED) err = errno;
  close(fd);
  if (err != 0) {
    shm_unlink(name_.c_str());
    return Status::error(weftSystemError, "cannot make the flight recorder segment /dev/shm" + name_ + " of " +
                                              formatBytes(bytes_) + ": " + errnoText(err));
  }
  base_ = p;
  header_ = static_cast<RecorderHeader*>(p);
  entries_ = reinterpret_cast<RecorderEntry*>(static_cast<char*>(p) + sizeof(RecorderHeader));
  return Status::ok();
}

void FlightRecorder::fillHeader(uint64_t commHash, int rank, int nRanks) {
  RecorderHeader* h = header_;
  h->layout = kRecorderLayout;
  h->headerBytes = sizeof(RecorderHeader);
  h->entryBytes = sizeof(RecorderEntry);
  h->capacity = capacity_;
  h->pid = static_cast<int32_t>(getpid());
  h->rank = rank;
  h->nRanks = nRanks;
  h->version = WEFT_VERSION_CODE;
  h->commHash = commHash;
  ProcStat self;
  h->ownerStartTicks = readProcStat(0, &self) ? self.startTicks : 0;
  h->createdNs = renewClock();
  h->updatedNs.store(h->createdNs, std::memory_order_relaxed);
  h->calls.store(0, std::memory_order_relaxed);
  h->doneCalls.store(0, std::memory_order_relaxed);
  h->latestNs.store(0, std::memory_order_relaxed);
  h->doneNs.store(0, std::memory_order_relaxed);
  h->dumped = 0;
  std::snprintf(h->host, sizeof(h->host), "%s", hostName().c_str());
  std::snprintf(h->frontEnd, sizeof(h->frontEnd), "%s", params::RecorderFrontEnd().c_str());
  // The magic last: a reader that sees it sees the rest of the header.
  std::atomic_thread_fence(std::memory_order_release);
  reinterpret_cast<std::atomic<uint64_t>*>(&h->magic)->store(kRecorderMagic, std::memory_order_release);
}

FlightRecorder::~FlightRecorder() {
  {
    std::lock_guard<std::mutex> lock(gRegistryMutex);
    for (size_t i = 0; i < gRegistry->size(); ++i) {
      if ((*gRegistry)[i] == this) {
        gRegistry->erase(gRegistry->begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
  }
  if (base_ != nullptr) munmap(base_, bytes_);
  shm_unlink(name_.c_str());
}

int FlightRecorder::ownerPid() const { return header_->pid; }

// The versions come from this writer's own count of writes, not from the entry: a load of the
// version just stored would wait for the store (~5 cycles, four times a call). An entry's version
// still only grows, odd while written, as a reader wants.
inline void FlightRecorder::openEntry(RecorderEntry* e) {
  writes_ += 2;
  e->version.store(writes_ - 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);  // odd before any field changes
}

inline void FlightRecorder::closeEntry(RecorderEntry* e) {
  e->version.store(writes_, std::memory_order_release);  // even after every field
}

void FlightRecorder::beginRun(const RecordedCall& call, RecordedState state) {
  const uint64_t n = ++calls_;
  active_ = state != RecordedState::kQueued;
  startRun(call, state, n, coarseNowNs());
}

// Closes the run open in current_ at call n - 1 and opens call n's, in the next entry.
void FlightRecorder::startRun(const RecordedCall& call, RecordedState state, uint64_t n, int64_t now) {
  if (current_ != nullptr) {
    openEntry(current_);
    current_->lastCallNo = n - 1;
    if (current_->state == static_cast<int32_t>(RecordedState::kRunning)) current_->endedNs = doneNs_;
    closeEntry(current_);
  }
  // Counted, not divided: a 64-bit division costs more than the rest of the entry.
  RecorderEntry* e = entries_ + nextSlot_;
  if (++nextSlot_ == capacity_) nextSlot_ = 0;
  openEntry(e);
  e->firstCallNo = n;
  e->lastCallNo = 0;
  e->callBytes = call.bytes;
  e->kind = call.kind;
  e->type = call.type;
  e->op = call.op;
  e->root = call.root;
  e->algo = call.algo;
  e->state = static_cast<int32_t>(state);
  e->waitPeer = -1;
  e->waitStep = -1;
  e->count = call.count;
  e->bytesDone = 0;
  e->queuedNs = now;
  e->startedNs = state == RecordedState::kQueued ? 0 : now;
  e->endedNs = 0;
  e->error[0] = '\0';
  closeEntry(e);
  if (now != latestNs_) header_->latestNs.store(latestNs_ = now, std::memory_order_relaxed);
  header_->calls.store(n, std::memory_order_release);
  if (now != updatedNs_) header_->updatedNs.store(updatedNs_ = now, std::memory_order_relaxed);
  current_ = e;
  run_ = call;
  // A device call stays queued: its run holds it alone (the recorder never learns it ended).
  runOpen_ = false;
  waited_ = false;
}

// A call that joined a run and now needs its own state (a stall, a failure) gets an entry.
void FlightRecorder::ownEntry() {
  if (current_->firstCallNo != calls_) startRun(run_, RecordedState::kRunning, calls_, latestNs_);
}

void FlightRecorder::finishSlow(int64_t now) {
  if (now != doneNs_) {
    header_->doneNs.store(doneNs_ = now, std::memory_order_relaxed);
    header_->updatedNs.store(updatedNs_ = now, std::memory_order_relaxed);
  }
  if (waited_) {
    RecorderEntry* e = current_;
    openEntry(e);
    e->state = static_cast<int32_t>(RecordedState::kRunning);
    e->waitPeer = -1, e->waitStep = -1;
    closeEntry(e);
    waited_ = false;
  }
}

void FlightRecorder::failed(const std::string& message) {
  if (!active_) return;
  active_ = false;
  ownEntry();
  const int64_t now = coarseNowNs();
  RecorderEntry* e = current_;
  openEntry(e);
  firstSentence(message, e->error, sizeof(e->error));
  e->state = static_cast<int32_t>(RecordedState::kFailed);
  e->endedNs = now;
  closeEntry(e);
  header_->doneCalls.store(calls_, std::memory_order_release);
  header_->doneNs.store(doneNs_ = now, std::memory_order_relaxed);
  header_->updatedNs.store(updatedNs_ = now, std::memory_order_relaxed);
  runOpen_ = false;
}

void FlightRecorder::stalled(int peer, int step, uint64_t bytesDone) {
  if (!active_) return;
  ownEntry();
  RecorderEntry* e = current_;
  openEntry(e);
  e->state = static_cast<int32_t>(RecordedState::kWaiting);
  e->waitPeer = peer;
  e->waitStep = step;
  e->bytesDone = bytesDone;
  closeEntry(e);
  waited_ = true;
  header_->updatedNs.store(updatedNs_ = renewClock(), std::memory_order_relaxed);
}

void FlightRecorder::moving() {
  if (!active_) return;
  RecorderEntry* e = current_;
  openEntry(e);
  e->state = static_cast<int32_t>(RecordedState::kRunning);
  e->waitPeer = -1;
  e->waitStep = -1;
  closeEntry(e);
  header_->updatedNs.store(updatedNs_ = coarseNowNs(), std::memory_order_relaxed);
}

bool FlightRecorder::dump(RecorderDumpReason reason, std::string* path, const std::string& dir) const {
  const std::string where = dir.empty() ? params::RecorderDir() : dir;
  if (where.empty()) return false;
  char file[512];
  std::snprintf(file, sizeof(file), "%s/%s%s-%d-%016" PRIx64 "-%d.bin", where.c_str(), kRecorderPrefix,
                fileSafe(header_->host).c_str(), header_->pid, header_->commHash, header_->rank);
  const std::string target = file;
  const std::string temp = target + ".tmp";
  // The header as it is, with the reason; the entries as they are (each under its lock: a reader
  // of the file checks their versions as a reader of the segment does).
  char head[sizeof(RecorderHeader)];
  std::memcpy(head, static_cast<const void*>(header_), sizeof(head));
  const int32_t why = static_cast<int32_t>(reason);
  std::memcpy(head + offsetof(RecorderHeader, dumped), &why, sizeof(why));
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && writeAll(fd, head, sizeof(head)) &&
            writeAll(fd, static_cast<const char*>(base_) + sizeof(RecorderHeader), bytes_ - sizeof(RecorderHeader));
  int err = errno;
  if (fd >= 0 && close(fd) != 0 && ok) ok = false, err = errno;
  if (ok && rename(temp.c_str(), target.c_str()) != 0) ok = false, err = errno;
  if (!ok) {
    if (fd >= 0) unlink(temp.c_str());
    WEFT_LOG(kWarn, kInit, "rank %d: could not write the flight recorder to %s: %s; check that WEFT_RECORDER_DIR "
             "names a writable directory", header_->rank, target.c_str(), errnoText(err).c_str());
    return false;
  }
  WEFT_LOG(kInfo, kInit, "rank %d: wrote the flight recorder to %s", header_->rank, target.c_str());
  if (path) *path = target;
  return true;
}

int dumpAllRecorders(RecorderDumpReason reason) {
  std::lock_guard<std::mutex> lock(gRegistryMutex);
  int written = 0;
  for (FlightRecorder* r : *gRegistry) written += r->dump(reason) ? 1 : 0;
  return written;
}

void recorderHeartbeat() {
  renewClock();
  if (gDumpRequested.load(std::memory_order_relaxed) == 0) return;
  if (gDumpRequested.exchange(0) != 0) dumpAllRecorders(RecorderDumpReason::kSignal);
}

}  // namespace core
}  // namespace weft
