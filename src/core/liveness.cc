// Liveness (liveness.h): this process's record and heartbeat thread, and each communicator's
// watch over its peers' records.
#include "core/liveness.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "base/log.h"
#include "base/params.h"
#include "core/bootstrap.h"
#include "core/bootstrap_wire.h"
#include "core/liveness_udp.h"

namespace weft {
namespace core {

namespace {

constexpr uint64_t kRecordMagic = 0x3154424854464557ull;  // "WEFTHBT1"
constexpr int kFailureSlots = 32;
constexpr size_t kFailureTextBytes = 448;
constexpr auto kBeatInterval = std::chrono::milliseconds(100);
// Bootstrap tag of the record exchange at init.
constexpr int kLivenessTag = 0x6C76;

enum FailureKind : uint32_t { kNone = 0, kRefused = 1, kFailed = 2 };

}  // namespace

// One communicator's latest failure on this process, written by its owner under a sequence lock
// (odd `version` while writing) and read by the peers.
struct FailureSlot {
  std::atomic<uint64_t> version;
  uint64_t commHash;
  int32_t rank;
  int32_t culprit;  // the rank the failure is blamed on (-1: the publishing rank itself)
  uint64_t seq;
  uint32_t kind;  // FailureKind
  uint32_t reserved;
  char text[kFailureTextBytes];
};

// This process's record, shared read-only with the peers on its host.
struct LivenessRecord {
  uint64_t magic;
  uint64_t nonce;  // tells this process's record from a later one with a reused pid and fd
  int32_t pid;
  int32_t reserved;
  std::atomic<uint64_t> beats;
  FailureSlot slots[kFailureSlots];
};

// What the ranks exchange at init: where each process's record is.
struct RecordAddress {
  int32_t fd = -1;  // -1: that process has no record
  int32_t pid = 0;
  uint64_t nonce = 0;
  wire::Addr udp;  // where that process takes heartbeats from other hosts (family 0: nowhere)
};

namespace {

// A remote process's latest heartbeat, by nonce, for as long as a watch expects it.
struct RemoteBeat {
  uint64_t beats = 0;
  int watchers = 0;
};

// The process's liveness state. Never destroyed (watches may be torn down at exit); replaced by a
// fresh one in a forked child, so no lock or thread of the parent is ever used there.
struct Process {
  std::mutex lifecycle;  // creating the record, starting and stopping the thread
  std::mutex registry;   // watches and slotsUsed; held by the thread while it ticks the watches
  int fd = -1;
  LivenessRecord* record = nullptr;
  bool recordTried = false;
  std::vector<LivenessWatch*> watches;
  BeatSocket udp;                                    // used under registry
  std::unordered_map<uint64_t, RemoteBeat> remote;  // guarded by registry
  uint64_t slotsUsed = 0;  // bit i: slot i belongs to a communicator
  std::thread thread;
  bool running = false;
  std::mutex sleepMutex;
  std::condition_variable sleepCv;
  bool stop = false;  // guarded by sleepMutex
  std::atomic<bool> frozen{false};
};

Process* gProcess = nullptr;
pthread_once_t gAtforkOnce = PTHREAD_ONCE_INIT;

void replaceInChild() {
  // The parent's state (its thread, locks that thread may hold, its record) is left behind: the
  // child starts over with its first communicator.
  gProcess = new Process();
}

Process& process() {
  pthread_once(&gAtforkOnce, [] {
    gProcess = new Process();
    pthread_atfork(nullptr, nullptr, replaceInChild);
  });
  return *gProcess;
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

void heartbeatLoop(Process* p) {
  for (;;) {
    if (p->record && !p->frozen.load(std::memory_order_relaxed)) {
      p->record->beats.fetch_add(1, std::memory_order_release);
    }
    {
      std::lock_guard<std::mutex> lock(p->registry);
      p->udp.drain([p](const BeatMessage& beat) {
        auto it = p->remote.find(beat.nonce);
        if (it != p->remote.end() && beat.beats > it->second.beats) it->second.beats = beat.beats;
      });
      BeatMessage mine;
      if (p->record && !p->frozen.load(std::memory_order_relaxed)) {
        mine = {kBeatMagic, p->record->nonce, p->record->beats.load(std::memory_order_relaxed), p->record->pid, 0};
      }
      uint64_t now = nowNs();
      for (LivenessWatch* w : p->watches) {
        if (mine.magic == kBeatMagic) w->sendBeats(p->udp, mine);
        w->tick(now, [p](uint64_t nonce) {
          auto it = p->remote.find(nonce);
          return it == p->remote.end() ? 0 : it->second.beats;
        });
      }
    }
    std::unique_lock<std::mutex> lock(p->sleepMutex);
    if (p->sleepCv.wait_for(lock, kBeatInterval, [p] { return p->stop; })) return;
  }
}

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
    if (slot >= 0) {
      p.slotsUsed &= ~(1ull << slot);
      if (p.record) {
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

// Maps a peer's record read-only through its owner's fd, and checks that it is that process's.
const LivenessRecord* mapPeerRecord(const RecordAddress& a, int rank, int peer, void** mapping) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", a.pid, a.fd);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    WEFT_LOG(kInfo, kInit, "rank %d: cannot open rank %d's liveness record %s (%s): its heartbeat is not watched", rank,
             peer, path, errnoText(errno).c_str());
    return nullptr;
  }
  struct stat st;
  void* map = MAP_FAILED;
  if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= sizeof(LivenessRecord)) {
    map = mmap(nullptr, sizeof(LivenessRecord), PROT_READ, MAP_SHARED, fd, 0);
  }
  close(fd);
  if (map == MAP_FAILED) {
    WEFT_LOG(kInfo, kInit, "rank %d: rank %d's liveness record %s is not one: its heartbeat is not watched", rank, peer,
             path);
    return nullptr;
  }
  auto* record = static_cast<const LivenessRecord*>(map);
  if (record->magic != kRecordMagic || record->nonce != a.nonce || record->pid != a.pid) {
    WEFT_LOG(kInfo, kInit, "rank %d: %s is not rank %d's liveness record: its heartbeat is not watched", rank, path,
             peer);
    munmap(map, sizeof(LivenessRecord));
    return nullptr;
  }
  *mapping = map;
  return record;
}

}  // namespace

LivenessWatch::LivenessWatch(int rank, const std::vector<PeerInfo>& peers, uint64_t commHash,
                             std::atomic<bool>* interrupt)
    : rank_(rank),
      peers_(peers),
      commHash_(commHash),
      timeoutNs_(static_cast<uint64_t>(params::HeartbeatTimeoutS()) * 1'000'000'000ull),
      interrupt_(interrupt),
      watched_(peers.size()),
      involved_(new std::atomic<uint8_t>[peers.size()]) {
  for (size_t i = 0; i < peers.size(); ++i) involved_[i].store(0, std::memory_order_relaxed);
}

Status LivenessWatch::create(int rank, const std::vector<PeerInfo>& peers, const std::string& commTag,
                             Bootstrap* bootstrap, const Deadline& deadline, std::atomic<bool>* interrupt,
                             std::unique_ptr<LivenessWatch>* out) {
  Process& p = process();
  RecordAddress mine;
  {
    std::lock_guard<std::mutex> life(p.lifecycle);
    ensureRecord(p);
    std::lock_guard<std::mutex> lock(p.registry);  // the heartbeat thread uses the sockets
    if (p.record) {
      mine = {p.fd, p.record->pid, p.record->nonce, wire::toWire(p.udp.addressFor(bootstrap->address(rank)))};
    }
  }
  std::vector<RecordAddress> all(peers.size());
  WEFT_TRY(bootstrap->allGather(&mine, all.data(), sizeof(RecordAddress), deadline));
  std::unique_ptr<LivenessWatch> w(
      new LivenessWatch(rank, peers, hashBytes(commTag.data(), commTag.size()), interrupt));
  w->watchLocal(all, p.record);
  w->watchRemote(all);
  w->slot_ = registerWatch(w.get(), w->remoteNonces());
  *out = std::move(w);
  return Status::ok();
}

void LivenessWatch::watchLocal(const std::vector<RecordAddress>& all, const LivenessRecord* own) {
  const PeerInfo& self = peers_[static_cast<size_t>(rank_)];
  uint64_t now = nowNs();
  for (size_t r = 0; r < peers_.size(); ++r) {
    Peer& peer = watched_[r];
    peer.lastChangeNs = now;
    if (static_cast<int>(r) == rank_ || peers_[r].hostHash != self.hostHash) continue;
    if (peers_[r].processHash == self.processHash) {
      peer.record = own;  // its published failures are in this process's own record
      peer.sameProcess = true;
      continue;
    }
    if (all[r].fd < 0) continue;
    void* mapping = nullptr;
    peer.record = mapPeerRecord(all[r], rank_, static_cast<int>(r), &mapping);
    if (mapping) mappings_.push_back(mapping);
    if (peer.record) peer.lastBeats = peer.record->beats.load(std::memory_order_acquire);
  }
}

int LivenessWatch::nearestRemote(int from, int step) const {
  const int n = static_cast<int>(peers_.size());
  for (int i = 1; i < n; ++i) {
    int k = ((from + step * i) % n + n) % n;
    if (peers_[static_cast<size_t>(k)].hostHash != peers_[static_cast<size_t>(from)].hostHash) return k;
  }
  return -1;
}

void LivenessWatch::watchRemote(const std::vector<RecordAddress>& all) {
  // Watched: the nearest ranks on other hosts before and after this one.
  for (int k : {nearestRemote(rank_, 1), nearestRemote(rank_, -1)}) {
    if (k < 0 || all[static_cast<size_t>(k)].nonce == 0 || !wire::fromWire(all[k].udp).valid()) continue;
    watched_[static_cast<size_t>(k)].remote = true;
    watched_[static_cast<size_t>(k)].nonce = all[static_cast<size_t>(k)].nonce;
  }
  // Subscribers: the ranks that watch this one, told this process's beats.
  for (int r = 0; r < static_cast<int>(peers_.size()); ++r) {
    if (peers_[static_cast<size_t>(r)].hostHash == peers_[static_cast<size_t>(rank_)].hostHash) continue;
    if (nearestRemote(r, 1) != rank_ && nearestRemote(r, -1) != rank_) continue;
    SocketAddress to = wire::fromWire(all[static_cast<size_t>(r)].udp);
    if (to.valid() && std::find(subscribers_.begin(), subscribers_.end(), to) == subscribers_.end()) {
      subscribers_.push_back(to);
    }
  }
}

std::vector<uint64_t> LivenessWatch::remoteNonces() const {
  std::vector<uint64_t> nonces;
  for (const Peer& peer : watched_) {
    if (peer.remote) nonces.push_back(peer.nonce);
  }
  return nonces;
}

void LivenessWatch::sendBeats(BeatSocket& socket, const BeatMessage& beat) const {
  for (const SocketAddress& to : subscribers_) socket.send(to, beat);
}

LivenessWatch::~LivenessWatch() {
  unregisterWatch(this, slot_, remoteNonces());
  for (void* m : mappings_) munmap(m, sizeof(LivenessRecord));
}

void LivenessWatch::beginOp(uint64_t seq, const std::vector<int>* peers) {
  Process& p = process();
  if (slot_ >= 0 && p.record && p.record->slots[slot_].kind == kRefused) {
    publishFailure(0, false, -1, "");  // takes part again: withdraw the refusal
  }
  involvesAll_.store(peers == nullptr, std::memory_order_relaxed);
  if (peers) {
    for (int r : *peers) {
      if (r >= 0 && r < static_cast<int>(peers_.size())) involved_[r].store(1, std::memory_order_relaxed);
    }
    involvedList_ = *peers;
  }
  opSeq_.store(seq, std::memory_order_release);
}

void LivenessWatch::endOp() {
  opSeq_.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);  // the heartbeat thread sees 0 before the changes
  for (int r : involvedList_) {
    if (r >= 0 && r < static_cast<int>(peers_.size())) involved_[r].store(0, std::memory_order_relaxed);
  }
  involvedList_.clear();
}

bool LivenessWatch::involves(int peer) const {
  return involvesAll_.load(std::memory_order_relaxed) || involved_[peer].load(std::memory_order_relaxed) != 0;
}

Status LivenessWatch::verdict(int* culprit) const {
  if (!failed_.load(std::memory_order_acquire)) return Status::ok();
  std::lock_guard<std::mutex> lock(verdictMutex_);
  *culprit = culprit_;
  return verdict_;
}

void LivenessWatch::setVerdict(Status status, int culprit) {
  {
    std::lock_guard<std::mutex> lock(verdictMutex_);
    verdict_ = std::move(status);
    culprit_ = culprit;
  }
  failed_.store(true, std::memory_order_release);
  if (interrupt_) interrupt_->store(true);
}

void LivenessWatch::publishFailure(uint64_t seq, bool refusal, int culprit, const std::string& text) {
  Process& p = process();
  if (slot_ < 0 || p.record == nullptr) return;
  FailureSlot& s = p.record->slots[slot_];
  s.version.fetch_add(1, std::memory_order_acq_rel);
  std::atomic_thread_fence(std::memory_order_release);
  s.commHash = commHash_;
  s.rank = rank_;
  s.culprit = culprit;
  s.seq = seq;
  s.kind = seq == 0 ? kNone : refusal ? kRefused : kFailed;
  std::snprintf(s.text, sizeof(s.text), "%s", text.c_str());
  s.version.fetch_add(1, std::memory_order_release);
}

Status LivenessWatch::judgePublished(int peer, uint64_t seq, int* culprit) const {
  const PeerInfo& info = peers_[static_cast<size_t>(peer)];
  for (const FailureSlot& slot : watched_[static_cast<size_t>(peer)].record->slots) {
    FailureSlot s;
    if (!readSlot(slot, &s) || s.commHash != commHash_ || s.rank != peer) continue;
    // A peer that blames this rank gave up waiting for it: the executor looks further along.
    if (s.culprit == rank_) continue;
    if (s.kind == kRefused && s.seq == seq) {
      return WEFT_ERROR(weftRemoteError,
                        "rank %d: call #%llu: rank %d (host %s, pid %d) refused its part of this call, so this rank "
                        "stops waiting for it: %s. Fix the arguments rank %d passes",
                        rank_, static_cast<unsigned long long>(seq), peer, info.hostName, info.pid, s.text, peer);
    }
    if (s.kind == kFailed && s.seq <= seq) {
      *culprit = s.culprit >= 0 ? s.culprit : peer;
      return WEFT_ERROR(weftRemoteError,
                        "rank %d: call #%llu: rank %d (host %s, pid %d) failed call #%llu and takes no further part%s%s: "
                        "%s",
                        rank_, static_cast<unsigned long long>(seq), peer, info.hostName, info.pid,
                        static_cast<unsigned long long>(s.seq), *culprit != peer ? ", blaming rank " : "",
                        *culprit != peer ? std::to_string(*culprit).c_str() : "", s.text);
    }
  }
  return Status::ok();
}

bool LivenessWatch::publishedFailure(int peer, std::string* text) const {
  if (peer < 0 || peer >= static_cast<int>(watched_.size())) return false;
  const LivenessRecord* record = watched_[static_cast<size_t>(peer)].record;
  if (record == nullptr) return false;
  for (const FailureSlot& slot : record->slots) {
    FailureSlot s;
    if (!readSlot(slot, &s) || s.commHash != commHash_ || s.rank != peer || s.kind == kNone) continue;
    *text = s.text;
    return true;
  }
  return false;
}

Status LivenessWatch::judge(int peer, uint64_t seq, uint64_t nowNs, int* culprit) const {
  const Peer& w = watched_[static_cast<size_t>(peer)];
  const PeerInfo& info = peers_[static_cast<size_t>(peer)];
  if (w.record) WEFT_TRY(judgePublished(peer, seq, culprit));
  if (w.sameProcess || nowNs - w.lastChangeNs <= timeoutNs_) return Status::ok();
  double silentS = static_cast<double>(nowNs - w.lastChangeNs) / 1e9;
  if (w.remote) {
    return WEFT_ERROR(weftRemoteError,
                      "rank %d: call #%llu waits for rank %d (host %s, pid %d), whose heartbeats (UDP, from its host) "
                      "have not arrived for %.1f s (WEFT_HEARTBEAT_TIMEOUT_S=%llu): that host or the network to it is "
                      "gone, or the process is stopped (SIGSTOP, a debugger) or hung; a rank that is merely busy "
                      "keeps beating. Check that host (ping it; on it, ps -o stat= -p %d shows T when stopped) or end "
                      "the job; a firewall that drops UDP between the hosts also silences the heartbeat",
                      rank_, static_cast<unsigned long long>(seq), peer, info.hostName, info.pid, silentS,
                      static_cast<unsigned long long>(timeoutNs_ / 1'000'000'000ull), info.pid);
  }
  // An exited process is the transports' to report (they see it within milliseconds).
  if (!processAlive(info.pid)) return Status::ok();
  return WEFT_ERROR(weftRemoteError,
                    "rank %d: call #%llu waits for rank %d (host %s, pid %d), whose heartbeat has stood still for "
                    "%.1f s (WEFT_HEARTBEAT_TIMEOUT_S=%llu) although its process exists: it is stopped (SIGSTOP, "
                    "Ctrl-Z, a debugger), hung in the kernel, or cannot run; a rank that is merely busy keeps "
                    "beating. Look at that process (ps -o stat= -p %d shows T when stopped; kill -CONT %d resumes "
                    "it) or end the job; raise WEFT_HEARTBEAT_TIMEOUT_S only if that host is so overloaded that a "
                    "thread cannot run for that long",
                    rank_, static_cast<unsigned long long>(seq), peer, info.hostName, info.pid, silentS,
                    static_cast<unsigned long long>(timeoutNs_ / 1'000'000'000ull), info.pid, info.pid);
}

void freezeHeartbeatForTest(bool frozen) { process().frozen.store(frozen); }

bool heartbeatRunningForTest() {
  Process& p = process();
  std::lock_guard<std::mutex> life(p.lifecycle);
  return p.running;
}

void LivenessWatch::tick(uint64_t nowNs, const std::function<uint64_t(uint64_t)>& remoteBeats) {
  for (Peer& peer : watched_) {
    if (!peer.remote && (!peer.record || peer.sameProcess)) continue;
    uint64_t beats = peer.remote ? remoteBeats(peer.nonce) : peer.record->beats.load(std::memory_order_acquire);
    if (beats != peer.lastBeats) peer.lastBeats = beats, peer.lastChangeNs = nowNs;
  }
  uint64_t seq = opSeq_.load(std::memory_order_acquire);
  if (seq == 0 || failed_.load(std::memory_order_relaxed)) return;
  for (int r = 0; r < static_cast<int>(watched_.size()); ++r) {
    if (r == rank_ || !(watched_[r].record || watched_[r].remote) || !involves(r)) continue;
    int culprit = r;
    Status s = judge(r, seq, nowNs, &culprit);
    if (s.isOk()) continue;
    // The involvement read must be the operation's: it was when #seq is still in flight now
    // (numbers are never reused; endOp and beginOp change involvement only between them).
    std::atomic_thread_fence(std::memory_order_acquire);
    if (opSeq_.load(std::memory_order_relaxed) != seq) return;
    // The call that ends reports it (a warning, and weftGetLastError): logged here only for INFO.
    WEFT_LOG(kInfo, kInit, "liveness verdict: %s", s.message().c_str());
    setVerdict(std::move(s), culprit);
    return;
  }
}

}  // namespace core
}  // namespace weft
