// Liveness (liveness.h): each communicator's watch over its peers' records and heartbeats.
#include "core/liveness.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "base/log.h"
#include "base/params.h"
#include "core/bootstrap.h"
#include "core/bootstrap_tags.h"
#include "core/bootstrap_wire.h"
#include "core/liveness_record.h"
#include "core/liveness_udp.h"
#include "transports/transport.h"

namespace weft {
namespace core {
namespace {

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

constexpr int kAddressesTag = bootstrap_tags::kLivenessAddresses;

// The nearest rank on another host than `from`'s, going in `step` (+1 or -1) direction; -1: none.
int nearestRemoteOf(const std::vector<PeerInfo>& peers, int from, int step) {
  const int n = static_cast<int>(peers.size());
  for (int i = 1; i < n; ++i) {
    int k = ((from + step * i) % n + n) % n;
    if (peers[static_cast<size_t>(k)].hostHash != peers[static_cast<size_t>(from)].hostHash) return k;
  }
  return -1;
}

// The ranks whose record addresses rank r needs: its host's ranks in other processes (their
// records), its nearest ranks on other hosts (it watches their beats) and the ranks there whose
// nearest it is (they take its beats).
std::vector<int32_t> addressesNeeded(const std::vector<PeerInfo>& peers, int r) {
  const PeerInfo& self = peers[static_cast<size_t>(r)];
  std::vector<int32_t> out;
  for (int s = 0; s < static_cast<int>(peers.size()); ++s) {
    const PeerInfo& p = peers[static_cast<size_t>(s)];
    if (s == r) continue;
    bool need = p.hostHash == self.hostHash
                    ? p.processHash != self.processHash
                    : s == nearestRemoteOf(peers, r, 1) || s == nearestRemoteOf(peers, r, -1) ||
                          nearestRemoteOf(peers, s, 1) == r || nearestRemoteOf(peers, s, -1) == r;
    if (need) out.push_back(s);
  }
  return out;
}

// Rank 0 collects every rank's record address and sends each rank only those it needs
// (addressesNeeded): an all-gather would give every rank all n, n squared in a process of n ranks.
Status exchangeAddresses(int rank, const std::vector<PeerInfo>& peers, const RecordAddress& mine,
                         Bootstrap* bootstrap, const Deadline& deadline, std::map<int, RecordAddress>* out) {
  const int n = static_cast<int>(peers.size());
  if (rank != 0) {
    WEFT_TRY(bootstrap->send(0, kAddressesTag, &mine, sizeof(mine), deadline));
    uint32_t count = 0;
    WEFT_TRY(bootstrap->recv(0, kAddressesTag, &count, sizeof(count), deadline));
    if (count > static_cast<uint32_t>(n)) {
      return WEFT_ERROR(weftRemoteError, "rank %d: rank 0 sent %u liveness addresses for %d ranks", rank, count, n);
    }
    std::vector<std::pair<int32_t, RecordAddress>> got(count);
    if (count) WEFT_TRY(bootstrap->recv(0, kAddressesTag, got.data(), count * sizeof(got[0]), deadline));
    for (const auto& [r, a] : got) {
      if (r >= 0 && r < n) (*out)[r] = a;
    }
    return Status::ok();
  }
  std::vector<RecordAddress> all(static_cast<size_t>(n));
  all[0] = mine;
  for (int r = 1; r < n; ++r) WEFT_TRY(bootstrap->recv(r, kAddressesTag, &all[r], sizeof(RecordAddress), deadline));
  for (int r = 0; r < n; ++r) {
    std::vector<std::pair<int32_t, RecordAddress>> part;
    for (int32_t s : addressesNeeded(peers, r)) part.emplace_back(s, all[static_cast<size_t>(s)]);
    if (r == 0) {
      for (const auto& [k, a] : part) (*out)[k] = a;
      continue;
    }
    const uint32_t count = static_cast<uint32_t>(part.size());
    WEFT_TRY(bootstrap->send(r, kAddressesTag, &count, sizeof(count), deadline));
    if (count) WEFT_TRY(bootstrap->send(r, kAddressesTag, part.data(), count * sizeof(part[0]), deadline));
  }
  return Status::ok();
}

}  // namespace

LivenessWatch::LivenessWatch(int rank, const std::vector<PeerInfo>& peers, uint64_t commHash,
                             std::atomic<bool>* interrupt)
    : rank_(rank),
      peers_(peers),
      commHash_(commHash),
      timeoutNs_(static_cast<uint64_t>(params::HeartbeatTimeoutS()) * 1'000'000'000ull),
      interrupt_(interrupt),
      involved_(new std::atomic<uint8_t>[peers.size()]) {
  for (size_t i = 0; i < peers.size(); ++i) involved_[i].store(0, std::memory_order_relaxed);
}

Status LivenessWatch::create(int rank, const std::vector<PeerInfo>& peers, const std::string& commTag,
                             Bootstrap* bootstrap, const Deadline& deadline, std::atomic<bool>* interrupt,
                             std::unique_ptr<LivenessWatch>* out) {
  RecordAddress mine = advertiseRecord(bootstrap->address(rank));
  std::map<int, RecordAddress> all;
  WEFT_TRY(exchangeAddresses(rank, peers, mine, bootstrap, deadline, &all));
  std::unique_ptr<LivenessWatch> w(
      new LivenessWatch(rank, peers, hashBytes(commTag.data(), commTag.size()), interrupt));
  w->watchLocal(all, ownRecord());
  w->watchRemote(all);
  w->slot_ = registerWatch(w.get(), w->remoteNonces());
  w->publishFailure(0, false, -1, "");  // marks the slot as this communicator's, for publishedCall
  *out = std::move(w);
  return Status::ok();
}

void LivenessWatch::watchLocal(const std::map<int, RecordAddress>& all, const LivenessRecord* own) {
  const PeerInfo& self = peers_[static_cast<size_t>(rank_)];
  own_ = own;  // ranks of this process publish there; their beats are this process's own
  for (const auto& [r, address] : all) {
    const PeerInfo& info = peers_[static_cast<size_t>(r)];
    if (r == rank_ || info.hostHash != self.hostHash) continue;
    if (info.processHash == self.processHash || address.fd < 0) continue;
    void* mapping = nullptr;
    Peer peer;
    peer.rank = r;
    peer.record = mapPeerRecord(address, rank_, r, &mapping);
    if (mapping) mappings_.push_back(mapping);
    if (peer.record == nullptr) continue;
    peer.lastBeats = peer.record->beats.load(std::memory_order_acquire);
    peer.lastChangeNs = nowNs();
    watched_.push_back(peer);
  }
}

const LivenessWatch::Peer* LivenessWatch::watchedPeer(int rank) const {
  auto it = std::lower_bound(watched_.begin(), watched_.end(), rank,
                             [](const Peer& p, int r) { return p.rank < r; });
  return it != watched_.end() && it->rank == rank ? &*it : nullptr;
}

const LivenessRecord* LivenessWatch::recordOf(int peer) const {
  if (peer < 0 || peer >= static_cast<int>(peers_.size())) return nullptr;
  const PeerInfo& self = peers_[static_cast<size_t>(rank_)];
  const PeerInfo& info = peers_[static_cast<size_t>(peer)];
  if (info.hostHash == self.hostHash && info.processHash == self.processHash) return own_;
  const Peer* w = watchedPeer(peer);
  return w ? w->record : nullptr;
}

int LivenessWatch::nearestRemote(int from, int step) const { return nearestRemoteOf(peers_, from, step); }

void LivenessWatch::watchRemote(const std::map<int, RecordAddress>& all) {
  // Watched: the nearest ranks on other hosts before and after this one.
  for (int k : {nearestRemote(rank_, 1), nearestRemote(rank_, -1)}) {
    auto found = k < 0 ? all.end() : all.find(k);
    if (found == all.end() || found->second.nonce == 0 || !wire::fromWire(found->second.udp).valid()) continue;
    if (watchedPeer(k) != nullptr) continue;  // nearest both ways
    Peer peer;
    peer.rank = k;
    peer.remote = true;
    peer.nonce = found->second.nonce;
    peer.lastChangeNs = nowNs();
    watched_.insert(std::lower_bound(watched_.begin(), watched_.end(), k,
                                     [](const Peer& p, int r) { return p.rank < r; }),
                    peer);
  }
  // Subscribers: the ranks that watch this one, told this process's beats.
  for (int r = 0; r < static_cast<int>(peers_.size()); ++r) {
    if (peers_[static_cast<size_t>(r)].hostHash == peers_[static_cast<size_t>(rank_)].hostHash) continue;
    if (nearestRemote(r, 1) != rank_ && nearestRemote(r, -1) != rank_) continue;
    auto found = all.find(r);
    if (found == all.end()) continue;
    SocketAddress to = wire::fromWire(found->second.udp);
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

void LivenessWatch::sendBeats(BeatSocket& socket, BeatMessage beat) const {
  if (subscribers_.empty()) return;
  const LivenessRecord* own = ownRecord();
  FailureSlot s;
  if (slot_ >= 0 && own && readSlot(own->slots[slot_], &s) && s.kind == kFailed) {
    beat.commHash = commHash_;
    beat.failedSeq = s.seq;
    beat.rank = rank_;
    beat.culprit = s.culprit;
  }
  for (const SocketAddress& to : subscribers_) socket.send(to, beat);
}

LivenessWatch::~LivenessWatch() {
  unregisterWatch(this, slot_, remoteNonces());
  for (void* m : mappings_) munmap(m, sizeof(LivenessRecord));
}

void LivenessWatch::beginOp(uint64_t seq, const std::vector<int>* peers) {
  if (refusalPublished_) publishFailure(0, false, -1, "");  // takes part again: withdraw the refusal
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
  LivenessRecord* own = ownRecord();
  if (slot_ < 0 || own == nullptr) return;
  FailureSlot& s = own->slots[slot_];
  s.version.fetch_add(1, std::memory_order_acq_rel);
  std::atomic_thread_fence(std::memory_order_release);
  s.commHash = commHash_;
  s.rank = rank_;
  s.culprit = culprit;
  s.seq = seq;
  s.kind = seq == 0 ? kNone : refusal ? kRefused : kFailed;
  refusalPublished_ = s.kind == kRefused;
  std::snprintf(s.text, sizeof(s.text), "%s", text.c_str());
  s.version.fetch_add(1, std::memory_order_release);
  if (s.kind == kFailed) beatSoon();  // the ranks on other hosts hear of it now (sendBeats)
}

Status LivenessWatch::judgePublished(int peer, uint64_t seq, int* culprit) const {
  const PeerInfo& info = peers_[static_cast<size_t>(peer)];
  for (const FailureSlot& slot : recordOf(peer)->slots) {
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
    if (s.kind == kFailed && s.seq <= seq) return failedVerdict(peer, seq, s.seq, s.culprit, s.text, culprit);
  }
  return Status::ok();
}

Status LivenessWatch::failedVerdict(int peer, uint64_t seq, uint64_t failedSeq, int blamed, const char* text,
                                    int* culprit) const {
  const PeerInfo& info = peers_[static_cast<size_t>(peer)];
  const std::string said = text ? std::string(": ") + text : "";
  if (blamed >= 0 && (blamed & kCulpritCallMismatch) != 0) {
    // The culprit keeps the bit: the communicator joins the exchange that names both calls.
    *culprit = blamed;
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: call #%llu: rank %d (host %s, pid %d) reported that the ranks made different calls "
                      "(seen by rank %d)%s",
                      rank_, static_cast<unsigned long long>(seq), peer, info.hostName, info.pid,
                      blamed & ~kCulpritCallMismatch, said.c_str());
  }
  *culprit = blamed >= 0 ? blamed : peer;
  return WEFT_ERROR(weftRemoteError,
                    "rank %d: call #%llu: rank %d (host %s, pid %d) failed call #%llu and takes no further part%s%s%s",
                    rank_, static_cast<unsigned long long>(seq), peer, info.hostName, info.pid,
                    static_cast<unsigned long long>(failedSeq), *culprit != peer ? ", blaming rank " : "",
                    *culprit != peer ? std::to_string(*culprit).c_str() : "",
                    text ? said.c_str() : " (its heartbeat says so; its log has the cause)");
}

void LivenessWatch::publishCall(const void* call, size_t bytes) {
  LivenessRecord* own = ownRecord();
  if (slot_ < 0 || own == nullptr || bytes > kCallRecordBytes) return;
  FailureSlot& s = own->slots[slot_];
  // One writer (the communicator's calling thread), so plain stores make the seqlock: odd while
  // the record changes; the release fence keeps the odd version ahead of the record's bytes for
  // any reader that sees one of them (publishedCall's acquire fence pairs with it). No locked
  // read-modify-write: this runs on every collective.
  const uint64_t version = s.callVersion.load(std::memory_order_relaxed);
  s.callVersion.store(version + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(s.call, call, bytes);
  s.callVersion.store(version + 2, std::memory_order_release);
}

bool LivenessWatch::publishedCall(int peer, void* call, size_t bytes) const {
  if (bytes > kCallRecordBytes) return false;
  const LivenessRecord* record = recordOf(peer);
  if (record == nullptr) return false;
  for (const FailureSlot& slot : record->slots) {
    FailureSlot s;
    if (!readSlot(slot, &s) || s.commHash != commHash_ || s.rank != peer) continue;
    for (int attempt = 0; attempt < 8; ++attempt) {
      const uint64_t v1 = slot.callVersion.load(std::memory_order_acquire);
      if (v1 & 1) continue;
      std::memcpy(call, slot.call, bytes);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (slot.callVersion.load(std::memory_order_relaxed) == v1) return v1 != 0;
    }
    return false;
  }
  return false;
}

bool LivenessWatch::publishedFailure(int peer, std::string* text, int* culprit, double waitS) const {
  const LivenessRecord* record = recordOf(peer);
  const Peer* w = watchedPeer(peer);
  if (record == nullptr && w != nullptr && w->remote) {
    // The heartbeat thread takes the announcement in within a beat of its arrival.
    RemoteFailure f;
    for (Deadline deadline = Deadline::afterSeconds(waitS);;) {
      if (heardFailure(w->nonce, commHash_, peer, &f)) {
        text->clear();
        *culprit = f.culprit;
        return true;
      }
      if (deadline.expired()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (record == nullptr) return false;
  for (const FailureSlot& slot : record->slots) {
    FailureSlot s;
    if (!readSlot(slot, &s) || s.commHash != commHash_ || s.rank != peer || s.kind == kNone) continue;
    *text = s.text;
    *culprit = s.kind == kFailed ? s.culprit : -1;
    return true;
  }
  return false;
}

Status LivenessWatch::judgeHeard(int peer, uint64_t seq, const RemoteState& heard, int* culprit) const {
  for (const RemoteFailure& f : heard.failures) {
    // As judgePublished: a peer that blames this rank gave up waiting for it.
    if (f.commHash != commHash_ || f.rank != peer || f.seq > seq || f.culprit == rank_) continue;
    return failedVerdict(peer, seq, f.seq, f.culprit, nullptr, culprit);
  }
  return Status::ok();
}

Status LivenessWatch::judge(int peer, uint64_t seq, uint64_t nowNs, const RemoteState* heard, int* culprit) const {
  const PeerInfo& info = peers_[static_cast<size_t>(peer)];
  if (recordOf(peer)) WEFT_TRY(judgePublished(peer, seq, culprit));
  if (heard) WEFT_TRY(judgeHeard(peer, seq, *heard, culprit));
  // Ranks of this process have no entry: they beat with this process.
  const Peer* w = watchedPeer(peer);
  if (w == nullptr || nowNs - w->lastChangeNs <= timeoutNs_) return Status::ok();
  double silentS = static_cast<double>(nowNs - w->lastChangeNs) / 1e9;
  if (w->remote) {
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

void LivenessWatch::tick(uint64_t nowNs, const std::function<const RemoteState*(uint64_t)>& heard) {
  for (Peer& peer : watched_) {
    const RemoteState* remote = peer.remote ? heard(peer.nonce) : nullptr;
    uint64_t beats = peer.remote ? (remote ? remote->beats : 0) : peer.record->beats.load(std::memory_order_acquire);
    if (beats != peer.lastBeats) peer.lastBeats = beats, peer.lastChangeNs = nowNs;
  }
  uint64_t seq = opSeq_.load(std::memory_order_acquire);
  if (seq == 0 || failed_.load(std::memory_order_relaxed)) return;
  for (int r = 0; r < static_cast<int>(peers_.size()); ++r) {
    if (r == rank_ || !involves(r) || (recordOf(r) == nullptr && watchedPeer(r) == nullptr)) continue;
    int culprit = r;
    const Peer* w = watchedPeer(r);
    Status s = judge(r, seq, nowNs, w && w->remote ? heard(w->nonce) : nullptr, &culprit);
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
