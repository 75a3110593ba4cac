// One rank's end of the bootstrap: allGather and barrier through rank 0 and point-to-point
// messages on connections opened on first use (meeting the others through the root, which comes
// first, is in bootstrap_join.cc).
//
// Each rank listens on its own socket. A connection carries messages one way: the rank that
// sends opens it (PeerConn::out), the rank that receives accepts it (PeerConn::in). Whichever
// thread waits for a message reads every incoming connection at once ("pumping"), queueing
// what others will ask for, so that senders never block on a receiver that waits elsewhere.
#include "core/bootstrap.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
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

}  // namespace

struct Bootstrap::Message {
  uint32_t kind;
  int32_t tag;
  std::vector<char> data;
};

struct Bootstrap::PeerConn {
  std::mutex sendMutex;  // guards `out`
  Socket out;
  std::atomic<bool> left{false};  // its listener refused us: it destroyed its communicator or exited
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
  if (!c.out.valid()) WEFT_TRY(openOut(c, peer, deadline, what));
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
  if (!st.isOk()) return sendFailed(c, peer, std::move(st), "cannot send to", what);
  return Status::ok();
}

Status Bootstrap::sendFailed(PeerConn& c, int peer, Status s, const char* doing, const char* what) {
  c.out.close();
  if (aborted()) return WEFT_ERROR(weftRemoteError, "bootstrap: rank %d aborted during %s", rank_, what);
  if (s.code() == weftRemoteError) {
    c.left.store(true);
    return Status::error(weftRemoteError, "bootstrap: " + describe(peer) + " closed its connection during " + what +
                                              " (" + s.message() + ")");
  }
  return Status::error(s.code(), "bootstrap: rank " + std::to_string(rank_) + " " + doing + " " + describe(peer) +
                                     " during " + what + ": " + s.message());
}

Status Bootstrap::openOut(PeerConn& c, int peer, Deadline deadline, const char* what) {
  // The table holds a rank's address only once it listens there: a refusal means it has left.
  Socket s;
  bool refused = false;
  Status st = Socket::connect(address(peer), deadline, &abort_, nullptr, Socket::Refused::kGone, &s, &refused);
  if (refused) {
    c.left.store(true);
    return WEFT_ERROR(weftRemoteError,
                      "bootstrap: %s has left the communicator (it destroyed it or exited: its bootstrap port "
                      "refused rank %d's connection during %s)",
                      describe(peer).c_str(), rank_, what);
  }
  if (!st.isOk()) return sendFailed(c, peer, std::move(st), "cannot connect to", what);
  wire::ConnHello h{};
  h.magic = wire::kConnMagic;
  h.version = wire::kProtocolVersion;
  std::memcpy(h.secret, id_.secret, kSecretBytes);
  h.nonce = id_.nonce;
  h.from = rank_;
  h.to = peer;
  st = s.sendAll(&h, sizeof(h), deadline, &abort_);
  if (!st.isOk()) return sendFailed(c, peer, std::move(st), "cannot greet", what);
  c.out = std::move(s);
  return Status::ok();
}

// Nothing ever comes back on `out` (the peer only reads it): readable or hung up means closed.
bool Bootstrap::peerLeft(int peer, Deadline deadline) {
  if (peer < 0 || peer >= nRanks_ || peer == rank_) return false;
  PeerConn& c = conn(peer);
  std::lock_guard<std::mutex> lock(c.sendMutex);
  if (!c.left.load() && !c.out.valid()) (void)openOut(c, peer, deadline, "a check that it is still there");
  if (!c.left.load() && c.out.valid() && c.out.peerClosed()) {
    c.left.store(true);
    c.out.close();
  }
  return c.left.load();
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
