// One rank's end of the bootstrap: meeting the others through the root, then allGather and
// barrier through rank 0 and point-to-point messages on connections opened on first use.
//
// Each rank listens on its own socket. A connection carries messages one way: the rank that
// sends opens it (PeerConn::out), the rank that receives accepts it (PeerConn::in). Whichever
// thread waits for a message reads every incoming connection at once ("pumping"), queueing
// what others will ask for, so that senders never block on a receiver that waits elsewhere.
#include "core/bootstrap.h"

#include <poll.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>

#include "base/log.h"
#include "base/params.h"
#include "core/bootstrap_check.h"
#include "core/bootstrap_wire.h"

namespace weft {
namespace core {

namespace {

// How long a new connection from another rank may take to present itself.
constexpr double kHandshakeS = 5.0;
// Payloads up to this size go out in one write together with their header.
constexpr size_t kCoalesceBytes = 64 << 10;
// Connections waiting to present themselves beyond which new ones are turned away at once.
constexpr size_t kMaxPending = 256;
// A message's buffer grows by at most this much per read, so that memory follows the bytes that
// actually arrived, not what a header announced.
constexpr size_t kReadChunkBytes = 1 << 20;

Deadline defaultDeadline() { return Deadline::afterSeconds(static_cast<double>(params::TimeoutS())); }

// What `rank` tells the root: who it is, how long it waits, where the others reach it.
wire::Hello makeHello(const UniqueIdInfo& id, int rank, int nRanks, const PeerInfo& self, Deadline deadline,
                      const SocketAddress& listen) {
  wire::Hello hello{};
  hello.magic = wire::kHelloMagic;
  hello.version = wire::kProtocolVersion;
  std::memcpy(hello.secret, id.secret, kSecretBytes);
  hello.nonce = id.nonce;
  hello.rank = rank;
  hello.nRanks = nRanks;
  // A deadline of never (or decades) is announced as the longest wait the root accepts.
  hello.timeoutMs = static_cast<uint64_t>(
      std::min(deadline.remainingSeconds() * 1e3, static_cast<double>(wire::kMaxHelloTimeoutMs)));
  hello.info = self;
  hello.info.rank = rank;
  hello.info.hostName[sizeof(hello.info.hostName) - 1] = '\0';  // the root refuses it unterminated
  hello.listen = wire::toWire(listen);
  return hello;
}

// Checks the header `reply` of the root's answer; when the root turned this rank away, reads
// the reason. The table that follows a success is read by receivePeerTable().
Status readAnswer(const Socket& root, const wire::Reply& reply, int rank, int nRanks, const std::string& rootName) {
  Status s = wire::checkReply(reply, nRanks);
  if (!s.isOk()) {
    return std::move(s).withPrefix("bootstrap: rank " + std::to_string(rank) +
                                   " got a garbled answer from the root at " + rootName +
                                   " (is another program on that port?): ");
  }
  if (reply.status != weftSuccess) {
    std::string text(reply.textBytes, '\0');
    if (!root.recvAll(&text[0], text.size(), Deadline::afterSeconds(1)).isOk()) text = "(no reason given)";
    // Weft's roots explain themselves in full; anything else gets the context a reader needs.
    if (text.rfind("bootstrap: ", 0) != 0) {
      text = "bootstrap: the root at " + rootName + " turned rank " + std::to_string(rank) + " away: " + text;
    }
    return Status::error(static_cast<weftResult_t>(reply.status), text);
  }
  return Status::ok();
}

// Rank table entries read from the root per recv: a rank that only drains its copy holds no more.
constexpr size_t kTableChunk = 256;

// The rank tables this process holds, by communicator (the id's nonce). The first rank of a
// communicator in this process to get the root's answer builds the table; the others drain
// their copy of the bytes and take the shared one.
struct SharedTables;
SharedTables& sharedTables();

struct SharedTables {
  struct Slot {
    std::weak_ptr<const PeerTable> table;
    bool building = false;
  };
  std::mutex mutex;
  std::condition_variable built;
  std::map<uint64_t, Slot> slots;
};

SharedTables* makeSharedTables() {
  auto* t = new SharedTables();  // never destroyed: ranks may still run at exit
  // A non-blocking init's thread may hold the lock when the caller forks: hold it across
  // fork() and give the child a fresh one.
  pthread_atfork([] { sharedTables().mutex.lock(); }, [] { sharedTables().mutex.unlock(); },
                 [] { new (&sharedTables().mutex) std::mutex(); });
  return t;
}

// Made when the library loads, not by the first rank (maybe a non-blocking init's thread) that
// asks: a fork() must not catch a thread inside this initialisation.
SharedTables* const gSharedTables = makeSharedTables();
SharedTables& sharedTables() { return *gSharedTables; }

// Host names that two hosts share (containers named alike) get "@address" appended, so that
// messages tell the hosts apart. Linear: one pass finds the names with two hosts.
void nameHostsApart(PeerTable* t) {
  std::unordered_map<std::string, uint64_t> hostOf;
  std::unordered_map<std::string, bool> clash;
  for (const PeerInfo& p : t->peers) {
    auto [it, fresh] = hostOf.emplace(p.hostName, p.hostHash);
    if (!fresh && it->second != p.hostHash) clash[p.hostName] = true;
  }
  if (clash.empty()) return;
  for (size_t i = 0; i < t->peers.size(); ++i) {
    PeerInfo& p = t->peers[i];
    if (clash.count(p.hostName) == 0) continue;
    std::string named = std::string(p.hostName) + "@" + t->addrs[i].hostString();
    std::snprintf(p.hostName, sizeof(p.hostName), "%s", named.c_str());
  }
}

// Reads the nRanks entries of the root's table into `into`, or drains them when it is null.
Status readEntries(Socket& root, int nRanks, Deadline by, PeerTable* into) {
  std::vector<wire::Entry> chunk(std::min(kTableChunk, static_cast<size_t>(nRanks)));
  for (size_t done = 0; done < static_cast<size_t>(nRanks);) {
    const size_t n = std::min(chunk.size(), static_cast<size_t>(nRanks) - done);
    WEFT_TRY(root.recvAll(chunk.data(), n * sizeof(wire::Entry), by));
    for (size_t i = 0; i < n; ++i) {
      WEFT_TRY(wire::checkEntry(chunk[i], static_cast<int>(done + i)));
      if (into == nullptr) continue;
      into->peers.push_back(chunk[i].info);
      into->addrs.push_back(wire::fromWire(chunk[i].listen));
    }
    done += n;
  }
  return Status::ok();
}

// The table of communicator `nonce` for a rank whose root answer (the table's bytes) waits on
// `root`: built here, or the one another rank of this process built.
Status receivePeerTable(Socket& root, uint64_t nonce, int nRanks, Deadline by, std::shared_ptr<const PeerTable>* out) {
  SharedTables& shared = sharedTables();
  bool builder = false;
  {
    std::lock_guard<std::mutex> lock(shared.mutex);
    for (auto it = shared.slots.begin(); it != shared.slots.end();) {
      it = !it->second.building && it->second.table.expired() && it->first != nonce ? shared.slots.erase(it) : ++it;
    }
    SharedTables::Slot& slot = shared.slots[nonce];
    *out = slot.table.lock();
    if (!*out && !slot.building) slot.building = builder = true;
  }
  if (!builder) {
    WEFT_TRY(readEntries(root, nRanks, by, nullptr));
    if (*out) return Status::ok();
    std::unique_lock<std::mutex> lock(shared.mutex);
    shared.built.wait_for(lock, std::chrono::milliseconds(std::max(0, by.remainingMs())),
                          [&] { return !shared.slots[nonce].building; });
    *out = shared.slots[nonce].table.lock();
    if (*out) return Status::ok();
    return WEFT_ERROR(weftRemoteError,
                      "the rank of this process that received the table for all of them failed (its message says "
                      "why)");
  }
  auto table = std::make_shared<PeerTable>();
  table->peers.reserve(static_cast<size_t>(nRanks));
  table->addrs.reserve(static_cast<size_t>(nRanks));
  Status s = readEntries(root, nRanks, by, table.get());
  if (s.isOk()) nameHostsApart(table.get());
  std::lock_guard<std::mutex> lock(shared.mutex);
  SharedTables::Slot& slot = shared.slots[nonce];
  slot.building = false;
  if (s.isOk()) slot.table = table;
  shared.built.notify_all();
  if (s.isOk()) *out = std::move(table);
  return s;
}

}  // namespace

struct Bootstrap::Message {
  uint32_t kind;
  int32_t tag;
  std::vector<char> data;
};

struct Bootstrap::PeerConn {
  std::mutex sendMutex;  // guards `out`
  Socket out;
  Socket in;  // touched only by the pumping thread, like the message being read from it:
  wire::Frame header{};
  size_t headerGot = 0;
  Message partial;
  size_t dataGot = 0;
  std::deque<Message> queue;  // guarded by queueMutex_
  Status inError;             // guarded by queueMutex_: why `in` is gone
};

struct Bootstrap::Pending {
  Socket sock;
  wire::ConnHello hello{};
  size_t got = 0;
  Deadline deadline;
  bool dead = false;
};

Bootstrap::Bootstrap(const UniqueIdInfo& id, int rank, int nRanks) : id_(id), rank_(rank), nRanks_(nRanks) {}

Bootstrap::PeerConn& Bootstrap::conn(int peer) {
  std::lock_guard<std::mutex> lock(connsMutex_);
  std::unique_ptr<PeerConn>& c = conns_[peer];
  if (!c) c = std::make_unique<PeerConn>();
  return *c;
}

Bootstrap::~Bootstrap() { abort_.store(true); }

std::string Bootstrap::describe(int peer) const {
  char buf[128];
  if (table_ && peer >= 0 && peer < static_cast<int>(table_->peers.size())) {
    const PeerInfo& info = table_->peers[static_cast<size_t>(peer)];
    std::snprintf(buf, sizeof(buf), "rank %d (%.*s:%d)", peer, static_cast<int>(sizeof(info.hostName)), info.hostName,
                  info.pid);
  } else {
    std::snprintf(buf, sizeof(buf), "rank %d", peer);
  }
  return buf;
}

void Bootstrap::abort() {
  abort_.store(true);
  std::lock_guard<std::mutex> lock(queueMutex_);
  queueCv_.notify_all();
}

// ---- joining ------------------------------------------------------------------------------

namespace {

// The (communicator, rank) pairs this process has joined or is joining. A unique id makes one
// communicator: a rank that formed one with an id and comes back with it is refused at once
// (its root is gone; it would wait out the whole time-out). A second join while the first is
// still in progress goes on to the root, which sees the second hello and fails both groups.
struct UsedIds;
UsedIds& usedIds();

struct UsedIds {
  struct Use {
    int joining = 0;
    bool formed = false;
  };
  std::mutex mutex;
  std::map<std::pair<uint64_t, int>, Use> uses;
};

UsedIds* makeUsedIds() {
  auto* u = new UsedIds();  // never destroyed: ranks may still join at exit
  // As for sharedTables(): a fork() must not leave the child a lock held by an init thread.
  pthread_atfork([] { usedIds().mutex.lock(); }, [] { usedIds().mutex.unlock(); },
                 [] { new (&usedIds().mutex) std::mutex(); });
  return u;
}

UsedIds* const gUsedIds = makeUsedIds();  // at load, as gSharedTables
UsedIds& usedIds() { return *gUsedIds; }

}  // namespace

Status Bootstrap::create(const weftUniqueId& id, int rank, int nRanks, const PeerInfo& self, Deadline deadline,
                         std::unique_ptr<Bootstrap>* out, const std::atomic<bool>* abortInit) {
  UniqueIdInfo info;
  WEFT_TRY(decodeUniqueId(id, &info));
  const std::pair<uint64_t, int> key(info.nonce, rank);
  UsedIds& used = usedIds();
  {
    std::lock_guard<std::mutex> lock(used.mutex);
    UsedIds::Use& use = used.uses[key];
    if (use.formed) {
      return WEFT_ERROR(weftInvalidUsage,
                        "bootstrap: rank %d: this unique id (communicator %016llx) was already used: this process "
                        "formed a communicator with it as rank %d before. A unique id makes exactly one "
                        "communicator: call weftGetUniqueId for each new communicator and give that id to its ranks",
                        rank, static_cast<unsigned long long>(info.nonce), rank);
    }
    ++use.joining;
  }
  Status s = join(info, rank, nRanks, self, deadline, out, abortInit);
  std::lock_guard<std::mutex> lock(used.mutex);
  UsedIds::Use& use = used.uses[key];
  --use.joining;
  // A join that failed may be tried again (its root still waits, or is gone and says so).
  if (s.isOk()) use.formed = true;
  if (!use.formed && use.joining == 0) used.uses.erase(key);
  return s;
}

Status Bootstrap::join(const UniqueIdInfo& info, int rank, int nRanks, const PeerInfo& self, Deadline deadline,
                       std::unique_ptr<Bootstrap>* out, const std::atomic<bool>* abortInit) {
  if (nRanks < 1 || nRanks > wire::kMaxRanks || rank < 0 || rank >= nRanks) {
    return WEFT_ERROR(weftInvalidArgument, "bootstrap: rank %d is out of range for %d ranks", rank, nRanks);
  }
  uint64_t start = nowNs();
  std::unique_ptr<Bootstrap> b(new Bootstrap(info, rank, nRanks));
  b->abortInit_ = abortInit;
  const std::string rootName = info.root.toString();
  auto abortedWhile = [&](const char* doing) {
    return WEFT_ERROR(weftInvalidUsage, "bootstrap: rank %d stopped %s: the communicator was aborted (weftCommAbort)",
                      rank, doing);
  };

  // Reach the root; it may not listen yet when a launcher started every rank at once.
  Socket root;
  Status s = Socket::connect(info.root, deadline, abortInit, &root);
  if (b->aborted()) return abortedWhile("reaching the root");
  if (!s.isOk()) {
    return Status::error(s.code(),
                         "bootstrap: rank " + std::to_string(rank) + " cannot reach the root at " + rootName + ": " +
                             s.message() +
                             ". The root runs in the process that made the unique id (rank 0 when launched from "
                             "the environment): check that rank 0 started and still runs, and that this "
                             "host can reach that address (WEFT_SOCKET_IFNAME picks the interface). A root "
                             "serves one communicator and stops once it has formed: an id used before "
                             "finds none (call weftGetUniqueId for each communicator)");
  }

  // Listen for the other ranks on the address this host uses to reach the root: the others
  // can reach it the same way.
  SocketAddress bind = root.localAddress();
  bind.setPort(0);
  WEFT_TRY(Socket::listen(bind, &b->listener_));

  wire::Hello hello = makeHello(info, rank, nRanks, self, deadline, b->listener_.localAddress());
  s = root.sendAll(&hello, sizeof(hello), deadline, abortInit);
  if (b->aborted()) return abortedWhile("greeting the root");
  if (!s.isOk()) return std::move(s).withPrefix("bootstrap: rank " + std::to_string(rank) + " greeting the root: ");

  // The root answers with the table, or with why not. When ranks are missing it answers just
  // before our deadline; wait a little past it for that answer, which names them.
  Deadline answerBy =
      deadline.atNs() == UINT64_MAX ? deadline : Deadline::afterSeconds(deadline.remainingSeconds() + 2);
  wire::Reply reply{};
  s = root.recvAll(&reply, sizeof(reply), answerBy, abortInit);
  if (b->aborted()) return abortedWhile("waiting for the other ranks to join");
  if (!s.isOk()) {
    if (s.code() == weftTimeout) {
      return WEFT_ERROR(weftTimeout,
                        "bootstrap: rank %d had no answer from the root at %s within %.1f s: not all %d ranks joined "
                        "(check that every rank was started with the same unique id)",
                        rank, rootName.c_str(), (nowNs() - start) / 1e9, nRanks);
    }
    return Status::error(s.code(), "bootstrap: the root at " + rootName + " gave rank " + std::to_string(rank) +
                                       " no answer (" + s.message() +
                                       "); it turns away ranks whose hello it rejects: see its log");
  }
  WEFT_TRY(readAnswer(root, reply, rank, nRanks, rootName));
  s = receivePeerTable(root, info.nonce, nRanks, answerBy, &b->table_);
  if (!s.isOk())
    return std::move(s).withPrefix("bootstrap: rank " + std::to_string(rank) + " receiving the rank table: ");
  root.close();

  // Connect to the hub (rank 0), and find out now whether everyone can reach everyone's hub.
  if (nRanks > 1) WEFT_TRY(b->barrier(deadline));
  WEFT_LOG(kInfo, kBoot, "bootstrap: rank %d of %d joined in %.2f s (root %s, listening on %s)", rank, nRanks,
           (nowNs() - start) / 1e9, rootName.c_str(), b->listener_.localAddress().toString().c_str());
  *out = std::move(b);
  return Status::ok();
}

// ---- collectives through rank 0 -----------------------------------------------------------

Status Bootstrap::gather(const void* mine, void* all, size_t bytesPerRank, Deadline deadline, bool isBarrier) {
  const char* what = isBarrier ? "barrier" : "allGather";
  int up = isBarrier ? wire::kBarrier : wire::kGather;
  int down = isBarrier ? wire::kBarrierRelease : wire::kGatherResult;
  auto* out = static_cast<char*>(all);
  // memmove: `mine` may already sit at its place in `all`.
  if (bytesPerRank > 0) std::memmove(out + static_cast<size_t>(rank_) * bytesPerRank, mine, bytesPerRank);
  if (nRanks_ == 1) return Status::ok();
  size_t total = bytesPerRank * static_cast<size_t>(nRanks_);
  if (rank_ != 0) {
    WEFT_TRY(sendFrame(0, wire::kInternal, up, mine, bytesPerRank, deadline, what));
    return recvFrame(0, wire::kInternal, down, out, total, deadline, what);
  }
  // Rank 0: collect every contribution, then hand everyone the whole.
  for (int p = 1; p < nRanks_; ++p) {
    WEFT_TRY(
        recvFrame(p, wire::kInternal, up, out + static_cast<size_t>(p) * bytesPerRank, bytesPerRank, deadline, what));
  }
  for (int p = 1; p < nRanks_; ++p) WEFT_TRY(sendFrame(p, wire::kInternal, down, out, total, deadline, what));
  return Status::ok();
}

Status Bootstrap::allGather(const void* mine, void* all, size_t bytesPerRank, Deadline deadline) {
  return gather(mine, all, bytesPerRank, deadline, false);
}

Status Bootstrap::allGather(const void* mine, void* all, size_t bytesPerRank) {
  return gather(mine, all, bytesPerRank, defaultDeadline(), false);
}

Status Bootstrap::barrier(Deadline deadline) { return gather(nullptr, nullptr, 0, deadline, true); }

Status Bootstrap::barrier() { return barrier(defaultDeadline()); }

// ---- point to point -----------------------------------------------------------------------

Status Bootstrap::send(int peer, int tag, const void* data, size_t bytes) {
  return sendFrame(peer, wire::kUser, tag, data, bytes, defaultDeadline(), "send");
}

Status Bootstrap::recv(int peer, int tag, void* data, size_t bytes) {
  return recvFrame(peer, wire::kUser, tag, data, bytes, defaultDeadline(), "recv");
}

Status Bootstrap::send(int peer, int tag, const void* data, size_t bytes, Deadline deadline) {
  return sendFrame(peer, wire::kUser, tag, data, bytes, deadline, "send");
}

Status Bootstrap::recv(int peer, int tag, void* data, size_t bytes, Deadline deadline) {
  return recvFrame(peer, wire::kUser, tag, data, bytes, deadline, "recv");
}

Status Bootstrap::recv(int peer, int tag, void* data, size_t bytes, Deadline deadline, const std::atomic<bool>* stop) {
  return recvFrame(peer, wire::kUser, tag, data, bytes, deadline, "recv", stop);
}

Status Bootstrap::sendFrame(int peer, uint32_t kind, int tag, const void* data, size_t bytes, Deadline deadline,
                            const char* what) {
  if (peer < 0 || peer >= nRanks_) {
    return WEFT_ERROR(weftInvalidArgument, "bootstrap %s: peer %d is out of range for %d ranks", what, peer, nRanks_);
  }
  if (aborted()) return WEFT_ERROR(weftRemoteError, "bootstrap: rank %d aborted during %s", rank_, what);
  if (peer == rank_) {
    std::lock_guard<std::mutex> lock(queueMutex_);
    const char* p = static_cast<const char*>(data);
    conn(peer).queue.push_back(Message{kind, tag, std::vector<char>(p, p + bytes)});
    queueCv_.notify_all();
    return Status::ok();
  }
  PeerConn& c = conn(peer);
  std::lock_guard<std::mutex> lock(c.sendMutex);
  auto failed = [&](Status s, const char* doing) {
    c.out.close();
    if (aborted()) return WEFT_ERROR(weftRemoteError, "bootstrap: rank %d aborted during %s", rank_, what);
    if (s.code() == weftRemoteError) {
      return Status::error(weftRemoteError, "bootstrap: " + describe(peer) + " closed its connection during " + what +
                                                " (" + s.message() + ")");
    }
    return Status::error(s.code(), "bootstrap: rank " + std::to_string(rank_) + " " + doing + " " + describe(peer) +
                                       " during " + what + ": " + s.message());
  };
  if (!c.out.valid()) {
    Socket s;
    Status st = Socket::connect(address(peer), deadline, &abort_, &s);
    if (!st.isOk()) return failed(std::move(st), "cannot connect to");
    wire::ConnHello h{};
    h.magic = wire::kConnMagic;
    h.version = wire::kProtocolVersion;
    std::memcpy(h.secret, id_.secret, kSecretBytes);
    h.nonce = id_.nonce;
    h.from = rank_;
    h.to = peer;
    st = s.sendAll(&h, sizeof(h), deadline, &abort_);
    if (!st.isOk()) return failed(std::move(st), "cannot greet");
    c.out = std::move(s);
  }
  wire::Frame f{kind, tag, bytes};
  Status st;
  if (bytes <= kCoalesceBytes) {
    std::vector<char> buf(sizeof(f) + bytes);
    std::memcpy(buf.data(), &f, sizeof(f));
    if (bytes > 0) std::memcpy(buf.data() + sizeof(f), data, bytes);
    st = c.out.sendAll(buf.data(), buf.size(), deadline, &abort_);
  } else {
    st = c.out.sendAll(&f, sizeof(f), deadline, &abort_);
    if (st.isOk()) st = c.out.sendAll(data, bytes, deadline, &abort_);
  }
  if (!st.isOk()) return failed(std::move(st), "cannot send to");
  return Status::ok();
}

Status Bootstrap::timeoutError(int peer, Deadline deadline, uint64_t startNs, const char* what) const {
  return WEFT_ERROR(weftTimeout,
                    "bootstrap: rank %d timed out after %.1f s during %s waiting for %s; is it still running and "
                    "making the same calls? (WEFT_TIMEOUT_S sets the limit)",
                    rank_, (nowNs() - startNs) / 1e9, what, describe(peer).c_str());
}

Status Bootstrap::recvFrame(int peer, uint32_t kind, int tag, void* data, size_t bytes, Deadline deadline,
                            const char* what, const std::atomic<bool>* stop) {
  if (peer < 0 || peer >= nRanks_) {
    return WEFT_ERROR(weftInvalidArgument, "bootstrap %s: peer %d is out of range for %d ranks", what, peer, nRanks_);
  }
  uint64_t start = nowNs();
  PeerConn& c = conn(peer);
  std::unique_lock<std::mutex> lock(queueMutex_);
  for (;;) {
    auto it =
        std::find_if(c.queue.begin(), c.queue.end(), [&](const Message& m) { return m.kind == kind && m.tag == tag; });
    if (it != c.queue.end()) {
      Message m = std::move(*it);
      c.queue.erase(it);
      if (m.data.size() != bytes) {
        return WEFT_ERROR(weftInvalidUsage,
                          "bootstrap %s: %s sent %zu bytes with tag %d but rank %d expects %zu; do all ranks make "
                          "the same calls?",
                          what, describe(peer).c_str(), m.data.size(), tag, rank_, bytes);
      }
      if (bytes > 0) std::memcpy(data, m.data.data(), bytes);
      return Status::ok();
    }
    if (aborted() || (stop != nullptr && stop->load())) {
      return WEFT_ERROR(weftRemoteError, "bootstrap: rank %d aborted during %s", rank_, what);
    }
    if (!c.inError.isOk()) {
      return Status::error(weftRemoteError, "bootstrap: " + describe(peer) + " closed its connection during " + what +
                                                " (" + c.inError.message() + ")");
    }
    if (deadline.expired()) return timeoutError(peer, deadline, start, what);
    if (!pumping_) {
      // This thread reads the sockets for everyone for a moment.
      pumping_ = true;
      lock.unlock();
      pumpOnce(deadline);
      lock.lock();
      pumping_ = false;
      queueCv_.notify_all();
    } else {
      queueCv_.wait_for(lock, std::chrono::milliseconds(kAbortPollMs));
    }
  }
}

// ---- reading the sockets ------------------------------------------------------------------

void Bootstrap::pumpOnce(Deadline deadline) {
  std::vector<pollfd> fds;
  std::vector<int> owner;  // -1: listener; -2 - i: pending_[i]; p >= 0: conns_[p]->in
  fds.push_back({listener_.fd(), POLLIN, 0});
  owner.push_back(-1);
  for (size_t i = 0; i < pending_.size(); ++i) {
    fds.push_back({pending_[i]->sock.fd(), POLLIN, 0});
    owner.push_back(-2 - static_cast<int>(i));
  }
  {
    std::lock_guard<std::mutex> lock(connsMutex_);
    for (auto& [p, c] : conns_) {
      if (!c->in.valid()) continue;
      fds.push_back({c->in.fd(), POLLIN, 0});
      owner.push_back(p);
    }
  }
  int rc = ::poll(fds.data(), fds.size(), std::max(0, std::min(deadline.remainingMs(), kAbortPollMs)));
  for (size_t i = 0; rc > 0 && i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    if (owner[i] == -1) {
      acceptPending();
    } else if (owner[i] >= 0) {
      readFrom(owner[i]);
    } else {
      servePending(*pending_[static_cast<size_t>(-2 - owner[i])]);
    }
  }
  for (auto& pc : pending_) {
    if (!pc->dead && pc->deadline.expired()) {
      WEFT_LOG(kWarn, kBoot,
               "bootstrap: rank %d dropped the connection from %s: it did not present itself within %.0f s", rank_,
               pc->sock.peerAddress().toString().c_str(), kHandshakeS);
      pc->dead = true;
    }
  }
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const auto& pc) { return pc->dead; }),
                 pending_.end());
}

void Bootstrap::servePending(Pending& pc) {
  auto* bytes = reinterpret_cast<char*>(&pc.hello);
  size_t got = 0;
  bool closed = false;
  Status s = pc.sock.recvSome(bytes + pc.got, sizeof(pc.hello) - pc.got, &got, &closed);
  pc.got += got;
  if (s.isOk()) s = wire::checkConnHelloPrefix(pc.hello, pc.got);
  if (s.isOk() && pc.got < sizeof(pc.hello)) {
    if (!closed) return;  // the rest of the introduction is on its way
    s = WEFT_ERROR(weftRemoteError, "closed after %zu of the %zu bytes of its introduction", pc.got, sizeof(pc.hello));
  }
  if (s.isOk()) s = wire::checkConnHello(pc.hello, id_, rank_, nRanks_);
  if (s.isOk()) {
    std::lock_guard<std::mutex> lock(queueMutex_);
    PeerConn& c = conn(pc.hello.from);
    if (c.in.valid() || !c.inError.isOk()) {
      s = WEFT_ERROR(weftInvalidUsage, "a second connection from rank %d", pc.hello.from);
    } else {
      c.in = std::move(pc.sock);
      pc.dead = true;
      return;
    }
  }
  WEFT_LOG(kWarn, kBoot, "bootstrap: rank %d dropped the connection from %s: %s", rank_,
           pc.sock.peerAddress().toString().c_str(), s.message().c_str());
  pc.sock.close();
  pc.dead = true;
}

void Bootstrap::acceptPending() {
  for (int i = 0; i < 64; ++i) {
    auto pc = std::make_unique<Pending>();
    if (!listener_.tryAccept(&pc->sock).isOk() || !pc->sock.valid()) return;
    auto waiting = [](const std::unique_ptr<Pending>& p) { return !p->dead; };
    if (static_cast<size_t>(std::count_if(pending_.begin(), pending_.end(), waiting)) >= kMaxPending) {
      // A flood must not exhaust descriptors, nor lock real ranks out: the connection that has
      // waited longest goes (a rank presents itself at once; a stranger had its chance). It is
      // marked, not erased, because pumpOnce still indexes pending_.
      Pending& oldest = **std::find_if(pending_.begin(), pending_.end(), waiting);
      WEFT_LOG(kWarn, kBoot,
               "bootstrap: rank %d dropped the connection from %s: it was the oldest of %zu connections waiting to "
               "present themselves (a port scanner or another program?)",
               rank_, oldest.sock.peerAddress().toString().c_str(), kMaxPending);
      oldest.sock.close();
      oldest.dead = true;
    }
    pc->deadline = Deadline::afterSeconds(kHandshakeS);
    pending_.push_back(std::move(pc));
  }
}

void Bootstrap::readFrom(int peer) {
  PeerConn& c = conn(peer);
  auto fail = [&](Status s) {
    std::lock_guard<std::mutex> lock(queueMutex_);
    c.in.close();
    if (c.inError.isOk()) c.inError = std::move(s);
    queueCv_.notify_all();
  };
  auto closedError = [&] {
    bool midMessage = c.headerGot > 0;
    return WEFT_ERROR(weftRemoteError, "connection from %s closed%s", c.in.peerAddress().toString().c_str(),
                      midMessage ? " in the middle of a message" : "");
  };
  // Only what has arrived is read: a peer that stops in the middle of a message holds up no one
  // (the pump comes back when more arrives; whoever waits for that message times out as usual).
  size_t got = 0;
  bool closed = false;
  if (c.headerGot < sizeof(c.header)) {
    Status s = c.in.recvSome(reinterpret_cast<char*>(&c.header) + c.headerGot, sizeof(c.header) - c.headerGot, &got,
                             &closed);
    if (!s.isOk()) return fail(std::move(s));
    if (closed) return fail(closedError());
    c.headerGot += got;
    if (c.headerGot < sizeof(c.header)) return;
    s = wire::checkFrame(c.header);
    if (!s.isOk()) {
      WEFT_LOG(kWarn, kBoot, "bootstrap: rank %d dropped the connection from %s (%s): %s", rank_,
               describe(peer).c_str(), c.in.peerAddress().toString().c_str(), s.message().c_str());
      return fail(std::move(s).withPrefix("garbled message header from " + c.in.peerAddress().toString() + ": "));
    }
    c.partial = Message{c.header.kind, c.header.tag, {}};
    c.dataGot = 0;
  }
  // The buffer grows as the bytes arrive: a header that lies about its size costs what was sent,
  // not what it announced (growth is geometric, so each byte is copied O(1) times).
  const size_t total = static_cast<size_t>(c.header.bytes);
  while (c.dataGot < total) {
    if (c.partial.data.size() == c.dataGot) {
      c.partial.data.resize(c.dataGot + std::min(kReadChunkBytes, total - c.dataGot));
    }
    Status s = c.in.recvSome(c.partial.data.data() + c.dataGot, c.partial.data.size() - c.dataGot, &got, &closed);
    if (!s.isOk()) return fail(std::move(s));
    if (closed) return fail(closedError());
    if (got == 0) return;
    c.dataGot += got;
  }
  c.headerGot = 0;
  std::lock_guard<std::mutex> lock(queueMutex_);
  c.queue.push_back(std::move(c.partial));
  c.partial = Message{};
  queueCv_.notify_all();
}

}  // namespace core
}  // namespace weft
