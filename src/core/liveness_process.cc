// The process-wide side of liveness (liveness_record.h): the record, the heartbeat thread and the
// UDP socket, made with the first communicator; fork-safe by starting over in a forked child.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "base/log.h"
#include "base/os.h"
#include "base/status.h"
#include "core/liveness.h"
#include "core/liveness_record.h"
#include "core/liveness_udp.h"
#include "core/recorder.h"

namespace weft {
namespace core {
namespace {

constexpr auto kBeatInterval = std::chrono::milliseconds(100);

// Failures kept per remote process (one per communicator and rank it announced).
constexpr size_t kMaxRemoteFailures = 32;

// What a remote process's beats said, by nonce, for as long as a watch expects it.
struct RemoteBeat {
  RemoteState heard;
  int watchers = 0;
};

// Takes in one beat from the process `from` expects.
void takeBeat(const BeatMessage& beat, RemoteState* from) {
  if (beat.beats > from->beats) from->beats = beat.beats;
  if (beat.failedSeq == 0) return;
  for (RemoteFailure& f : from->failures) {
    if (f.commHash != beat.commHash || f.rank != beat.rank) continue;
    if (beat.failedSeq >= f.seq) f.seq = beat.failedSeq, f.culprit = beat.culprit;
    return;
  }
  if (from->failures.size() < kMaxRemoteFailures) {
    from->failures.push_back(RemoteFailure{beat.commHash, beat.failedSeq, beat.rank, beat.culprit});
  }
}

// The process's liveness state. Never destroyed (watches may be torn down at exit); replaced by a
// fresh one in a forked child, so no lock or thread of the parent is ever used there.
struct Process {
  std::mutex lifecycle;  // creating the record, starting and stopping the thread
  std::mutex registry;   // watches and slotsUsed; held by the thread while it ticks the watches
  int fd = -1;
  LivenessRecord* record = nullptr;
  bool recordTried = false;
  std::vector<LivenessWatch*> watches;
  BeatSocket udp;                                   // used under registry
  std::unordered_map<uint64_t, RemoteBeat> remote;  // guarded by registry
  uint64_t slotsUsed = 0;                           // bit i: slot i belongs to a communicator
  std::thread thread;
  bool running = false;
  std::mutex sleepMutex;
  std::condition_variable sleepCv;
  bool stop = false;      // guarded by sleepMutex
  bool beatSoon = false;  // guarded by sleepMutex
  std::atomic<bool> frozen{false};
};

std::atomic<Process*> gProcess{nullptr};
pthread_once_t gAtforkOnce = PTHREAD_ONCE_INIT;

void replaceInChild() {
  // The parent's state (its thread, locks that thread may hold, its record) is left behind: the
  // child starts over with its first communicator.
  gProcess.store(new Process(), std::memory_order_release);
}

Process& process() {
  // Once made, a load: every collective publishes its call in the record (ownRecord).
  if (Process* p = gProcess.load(std::memory_order_acquire)) return *p;
  pthread_once(&gAtforkOnce, [] {
    gProcess.store(new Process(), std::memory_order_release);
    pthread_atfork(nullptr, nullptr, replaceInChild);
  });
  return *gProcess.load(std::memory_order_acquire);
}

uint64_t randomNonce() {
  uint64_t seed = nowNs() ^ (static_cast<uint64_t>(getpid()) << 32);
  return hashBytes(&seed, sizeof(seed)) | 1;
}

// Creates the record once per process (lifecycle held). Without one, peers cannot watch this
// process; that is logged, and everything else works as before.
void ensureRecord(Process& p) {
  if (p.recordTried) return;
  p.recordTried = true;
  int fd = static_cast<int>(syscall(SYS_memfd_create, "weft-liveness", 0));
  if (fd < 0) {
    WEFT_LOG(kInfo, kInit, "liveness: memfd_create failed (%s): peers on this host cannot watch this process",
             errnoText(errno).c_str());
    return;
  }
  void* map = MAP_FAILED;
  if (ftruncate(fd, sizeof(LivenessRecord)) == 0) {
    map = mmap(nullptr, sizeof(LivenessRecord), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (map == MAP_FAILED) {
    WEFT_LOG(kInfo, kInit, "liveness: cannot map a %zu-byte record (%s): peers on this host cannot watch this process",
             sizeof(LivenessRecord), errnoText(errno).c_str());
    close(fd);
    return;
  }
  auto* record = static_cast<LivenessRecord*>(map);  // zero-filled by ftruncate
  record->pid = static_cast<int32_t>(getpid());
  record->nonce = randomNonce();
  std::atomic_thread_fence(std::memory_order_release);
  record->magic = kRecordMagic;
  p.fd = fd;
  p.record = record;
}

// This process's latest beat, for the ranks on other hosts (sendBeats adds a rank's failure); no
// magic where there is no record, or the heartbeat is frozen.
BeatMessage ownBeat(const Process& p) {
  BeatMessage beat;
  if (p.record && !p.frozen.load(std::memory_order_relaxed)) {
    beat = {kBeatMagic, p.record->nonce, p.record->beats.load(std::memory_order_relaxed), p.record->pid, 0};
  }
  return beat;
}

void heartbeatLoop(Process* p) {
  for (;;) {
    if (p->record && !p->frozen.load(std::memory_order_relaxed)) {
      p->record->beats.fetch_add(1, std::memory_order_release);
    }
    {
      std::lock_guard<std::mutex> lock(p->registry);
      p->udp.drain([p](const BeatMessage& beat) {
        auto it = p->remote.find(beat.nonce);
        if (it != p->remote.end()) takeBeat(beat, &it->second.heard);
      });
      const BeatMessage mine = ownBeat(*p);
      uint64_t now = nowNs();
      for (LivenessWatch* w : p->watches) {
        if (mine.magic == kBeatMagic) w->sendBeats(p->udp, mine);
        w->tick(now, [p](uint64_t nonce) -> const RemoteState* {
          auto it = p->remote.find(nonce);
          return it == p->remote.end() ? nullptr : &it->second.heard;
        });
      }
    }
    recorderHeartbeat();  // the recorder's clock, and a dump the signal asked for (recorder.h)
    std::unique_lock<std::mutex> lock(p->sleepMutex);
    p->sleepCv.wait_for(lock, kBeatInterval, [p] { return p->stop || p->beatSoon; });
    if (p->stop) return;
    p->beatSoon = false;
  }
}

// A thread that inherits a real-time policy (a rank started under chrt, or one that raised
// itself) shares its creator's priority, and on a CPU where the creator polls without yielding it
// would run only when the creator blocks: a busy rank would look stopped to its peers. The
// heartbeat thread mostly sleeps; one step above its creator it beats on time and takes
// microseconds from it per beat. Under the ordinary policies the inherited one is right.
void outrankCreator(std::thread& thread) {
  int policy = SCHED_OTHER;
  sched_param param{};
  if (pthread_getschedparam(pthread_self(), &policy, &param) != 0) return;
  if (policy != SCHED_FIFO && policy != SCHED_RR) return;
  const int creator = param.sched_priority;
  std::string why = "it is the highest there is";
  if (creator < sched_get_priority_max(policy)) {
    param.sched_priority = creator + 1;
    const int err = pthread_setschedparam(thread.native_handle(), policy, &param);
    if (err == 0) return;
    why = errnoText(err);
  }
  WEFT_LOG(kInfo, kInit,
           "liveness: cannot raise the heartbeat thread above this thread's real-time priority %d (%s): where this "
           "rank polls without yielding, its peers may take it for stopped; run it below the highest priority, raise "
           "RLIMIT_RTPRIO, or raise WEFT_HEARTBEAT_TIMEOUT_S",
           creator, why.c_str());
}

}  // namespace

// Adds a watch and starts the thread with the first one; returns the watch's failure slot (-1:
// none free).
int registerWatch(LivenessWatch* w, const std::vector<uint64_t>& remoteNonces) {
  Process& p = process();
  std::lock_guard<std::mutex> life(p.lifecycle);
  int slot = -1;
  {
    std::lock_guard<std::mutex> lock(p.registry);
    p.watches.push_back(w);
    for (uint64_t nonce : remoteNonces) ++p.remote[nonce].watchers;
    for (int i = 0; i < kFailureSlots && slot < 0; ++i) {
      if (!(p.slotsUsed & (1ull << i))) slot = i;
    }
    if (slot >= 0) p.slotsUsed |= 1ull << slot;
  }
  if (!p.running) {
    {
      std::lock_guard<std::mutex> lock(p.sleepMutex);
      p.stop = false;
    }
    p.thread = std::thread(heartbeatLoop, &p);
    outrankCreator(p.thread);
    p.running = true;
  }
  return slot;
}

// Removes a watch (after this the thread no longer touches it) and stops the thread with the last.
void unregisterWatch(LivenessWatch* w, int slot, const std::vector<uint64_t>& remoteNonces) {
  Process& p = process();
  std::lock_guard<std::mutex> life(p.lifecycle);
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(p.registry);
    auto it = std::find(p.watches.begin(), p.watches.end(), w);
    if (it == p.watches.end()) return;  // registered in the parent before a fork
    p.watches.erase(it);
    for (uint64_t nonce : remoteNonces) {
      auto r = p.remote.find(nonce);
      if (r != p.remote.end() && --r->second.watchers <= 0) p.remote.erase(r);
    }
    // A failure this communicator published goes to the ranks on other hosts once more, now: the
    // heartbeat thread may not have had a turn since, and this rank is probably about to exit.
    const BeatMessage beat = ownBeat(p);
    FailureSlot published;
    if (slot >= 0 && beat.magic == kBeatMagic && readSlot(p.record->slots[slot], &published) &&
        published.kind == kFailed) {
      w->sendBeats(p.udp, beat);
    }
    if (slot >= 0) {
      p.slotsUsed &= ~(1ull << slot);
      // A failure stays published (until a later communicator takes the slot): a rank that
      // failed tears its communicator down and exits at once, and the peers on this host that
      // had not looked yet must still read whom it blamed, not take its exit for the cause.
      if (p.record && p.record->slots[slot].kind != kFailed) {
        FailureSlot& s = p.record->slots[slot];
        s.version.fetch_add(1, std::memory_order_acq_rel);
        s.kind = kNone;
        s.version.fetch_add(1, std::memory_order_release);
      }
    }
    last = p.watches.empty();
  }
  if (last && p.running) {
    {
      std::lock_guard<std::mutex> lock(p.sleepMutex);
      p.stop = true;
    }
    p.sleepCv.notify_all();
    p.thread.join();
    p.running = false;
  }
}

// A consistent copy of a peer's slot; false when the owner kept writing it.
bool readSlot(const FailureSlot& s, FailureSlot* out) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    uint64_t v1 = s.version.load(std::memory_order_acquire);
    if (v1 & 1) continue;
    out->commHash = s.commHash;
    out->rank = s.rank;
    out->culprit = s.culprit;
    out->seq = s.seq;
    out->kind = s.kind;
    std::memcpy(out->text, s.text, sizeof(out->text));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.version.load(std::memory_order_relaxed) == v1) {
      out->text[sizeof(out->text) - 1] = '\0';  // another process wrote it: never trust its end
      return true;
    }
  }
  return false;
}

RecordAddress advertiseRecord(const SocketAddress& reachableAt) {
  Process& p = process();
  std::lock_guard<std::mutex> life(p.lifecycle);
  ensureRecord(p);
  std::lock_guard<std::mutex> lock(p.registry);  // the heartbeat thread uses the sockets
  RecordAddress mine;
  if (p.record) mine = {p.fd, p.record->pid, p.record->nonce, wire::toWire(p.udp.addressFor(reachableAt))};
  return mine;
}

LivenessRecord* ownRecord() { return process().record; }

bool heardFailure(uint64_t nonce, uint64_t commHash, int rank, RemoteFailure* out) {
  Process& p = process();
  std::lock_guard<std::mutex> lock(p.registry);
  auto it = p.remote.find(nonce);
  if (it == p.remote.end()) return false;
  for (const RemoteFailure& f : it->second.heard.failures) {
    if (f.commHash != commHash || f.rank != rank) continue;
    *out = f;
    return true;
  }
  return false;
}

void beatSoon() {
  Process& p = process();
  {
    std::lock_guard<std::mutex> lock(p.sleepMutex);
    p.beatSoon = true;
  }
  p.sleepCv.notify_all();
}

void freezeHeartbeatForTest(bool frozen) { process().frozen.store(frozen); }

bool heartbeatRunningForTest() {
  Process& p = process();
  std::lock_guard<std::mutex> life(p.lifecycle);
  return p.running;
}

bool heartbeatSchedulingForTest(int* policy, int* priority) {
  Process& p = process();
  std::lock_guard<std::mutex> life(p.lifecycle);
  if (!p.running) return false;
  sched_param param{};
  if (pthread_getschedparam(p.thread.native_handle(), policy, &param) != 0) return false;
  *priority = param.sched_priority;
  return true;
}

}  // namespace core
}  // namespace weft
