// One rank's end of the bootstrap: meeting the others through the root, then allGather and
// barrier through rank 0 and point-to-point messages on connections opened on first use.
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

#include "base/log.h"
#include "base/params.h"
#include "core/bootstrap_wire.h"

namespace weft {
namespace core {

namespace {

// How long a new connection from another rank may take to present itself.
constexpr double kHandshakeS = 5.0;
// Payloads up to this size go out in one write together with their header.
constexpr size_t kCoalesceBytes = 64 << 10;
// A frame header announcing more than this is garbage.
constexpr uint64_t kMaxFrameBytes = 1ull << 40;

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
  Socket in;                  // touched only by the pumping thread
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

Bootstrap::Bootstrap(const UniqueIdInfo& id, int rank, int nRanks) : id_(id), rank_(rank), nRanks_(nRanks) {
  for (int i = 0; i < nRanks; ++i) conns_.push_back(std::make_unique<PeerConn>());
}

Bootstrap::~Bootstrap() { abort_.store(true); }

std::string Bootstrap::describe(int peer) const {
  char buf[128];
  if (peer >= 0 && peer < static_cast<int>(peers_.size())) {
    const PeerInfo& info = peers_[peer];
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

// What this rank tells the root: who it is, how long it waits, where the others reach it.
wire::Hello helloFor(const UniqueIdInfo& info, int rank, int nRanks, const PeerInfo& self, Deadline deadline,
                     const SocketAddress& listen) {
  wire::Hello hello{};
  hello.magic = wire::kHelloMagic;
  hello.version = wire::kProtocolVersion;
  std::memcpy(hello.secret, info.secret, kSecretBytes);
  hello.nonce = info.nonce;
  hello.rank = rank;
  hello.nRanks = nRanks;
  hello.timeoutMs = static_cast<uint64_t>(std::min(deadline.remainingSeconds(), 1e9) * 1e3);
  hello.info = self;
  hello.info.rank = rank;
  hello.listen = wire::toWire(listen);
  return hello;
}

// The root's answer to the hello: the rank table, or why not (as the error). *aborted (and ok,
// without a table) when b was aborted while it waited for the answer.
Status awaitTable(const Bootstrap& b, Socket* root, const UniqueIdInfo& info, int rank, int nRanks, Deadline deadline,
                  uint64_t start, const std::atomic<bool>* abortInit, std::vector<wire::Entry>* table, bool* aborted) {
  const std::string rootName = info.root.toString();
  // The root answers with the table, or with why not. When ranks are missing it answers just
  // before our deadline; wait a little past it for that answer, which names them.
  Deadline answerBy =
      deadline.atNs() == UINT64_MAX ? deadline : Deadline::afterSeconds(deadline.remainingSeconds() + 2);
  wire::Reply reply{};
  Status s = root->recvAll(&reply, sizeof(reply), answerBy, abortInit);
  if ((*aborted = b.aborted())) return Status::ok();
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
  if (reply.magic != wire::kReplyMagic) {
    return WEFT_ERROR(weftInternalError, "bootstrap: garbled answer from the root at %s", rootName.c_str());
  }
  if (reply.status != weftSuccess) {
    std::string text(std::min<uint32_t>(reply.textBytes, 64 << 10), '\0');
    if (!root->recvAll(&text[0], text.size(), Deadline::afterSeconds(1)).isOk()) text = "(no reason given)";
    return Status::error(static_cast<weftResult_t>(reply.status), text);
  }
  if (reply.nRanks != nRanks) {
    return WEFT_ERROR(weftInternalError, "bootstrap: the root at %s answered with %d ranks, not %d", rootName.c_str(),
                      reply.nRanks, nRanks);
  }
  table->resize(static_cast<size_t>(nRanks));
  s = root->recvAll(table->data(), table->size() * sizeof(wire::Entry), answerBy);
  if (!s.isOk()) return std::move(s).withPrefix("bootstrap: receiving the rank table from the root: ");
  return Status::ok();
}

}  // namespace

Status Bootstrap::create(const weftUniqueId& id, int rank, int nRanks, const PeerInfo& self, Deadline deadline,
                         std::unique_ptr<Bootstrap>* out, const std::atomic<bool>* abortInit) {
  UniqueIdInfo info;
  WEFT_TRY(decodeUniqueId(id, &info));
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
    return Status::error(s.code(), "bootstrap: rank " + std::to_string(rank) + " cannot reach the root at " + rootName +
                                       ": " + s.message() +
                                       ". The root runs in the process that made the unique id (rank 0 when launched from "
                                       "the environment): check that rank 0 started and still runs, and that this "
                                       "host can reach that address (WEFT_SOCKET_IFNAME picks the interface)");
  }

  // Listen for the other ranks on the address this host uses to reach the root: the others
  // can reach it the same way.
  SocketAddress bind = root.localAddress();
  bind.setPort(0);
  WEFT_TRY(Socket::listen(bind, &b->listener_));

  const wire::Hello hello = helloFor(info, rank, nRanks, self, deadline, b->listener_.localAddress());
  s = root.sendAll(&hello, sizeof(hello), deadline, abortInit);
  if (b->aborted()) return abortedWhile("greeting the root");
  if (!s.isOk()) return std::move(s).withPrefix("bootstrap: rank " + std::to_string(rank) + " greeting the root: ");

  std::vector<wire::Entry> table;
  bool aborted = false;
  s = awaitTable(*b, &root, info, rank, nRanks, deadline, start, abortInit, &table, &aborted);
  if (aborted) return abortedWhile("waiting for the other ranks to join");
  if (!s.isOk()) return s;
  root.close();
  for (const auto& e : table) {
    b->peers_.push_back(e.info);
    b->addrs_.push_back(wire::fromWire(e.listen));
  }

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

Status Bootstrap::sendFrame(int peer, uint32_t kind, int tag, const void* data, size_t bytes, Deadline deadline,
                            const char* what) {
  if (peer < 0 || peer >= nRanks_) {
    return WEFT_ERROR(weftInvalidArgument, "bootstrap %s: peer %d is out of range for %d ranks", what, peer, nRanks_);
  }
  if (aborted()) return WEFT_ERROR(weftRemoteError, "bootstrap: rank %d aborted during %s", rank_, what);
  if (peer == rank_) {
    std::lock_guard<std::mutex> lock(queueMutex_);
    const char* p = static_cast<const char*>(data);
    conns_[peer]->queue.push_back(Message{kind, tag, std::vector<char>(p, p + bytes)});
    queueCv_.notify_all();
    return Status::ok();
  }
  PeerConn& c = *conns_[peer];
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
    Status st = Socket::connect(addrs_[peer], deadline, &abort_, &s);
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
                            const char* what) {
  if (peer < 0 || peer >= nRanks_) {
    return WEFT_ERROR(weftInvalidArgument, "bootstrap %s: peer %d is out of range for %d ranks", what, peer, nRanks_);
  }
  uint64_t start = nowNs();
  PeerConn& c = *conns_[peer];
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
    if (aborted()) return WEFT_ERROR(weftRemoteError, "bootstrap: rank %d aborted during %s", rank_, what);
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
  for (int p = 0; p < nRanks_; ++p) {
    if (conns_[p]->in.valid()) {
      fds.push_back({conns_[p]->in.fd(), POLLIN, 0});
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
      Pending& pc = *pending_[static_cast<size_t>(-2 - owner[i])];
      auto* bytes = reinterpret_cast<char*>(&pc.hello);
      size_t got = 0;
      bool closed = false;
      Status s = pc.sock.recvSome(bytes + pc.got, sizeof(pc.hello) - pc.got, &got, &closed);
      pc.got += got;
      std::string why;
      if (!s.isOk()) {
        why = s.message();
      } else if (pc.got >= sizeof(uint32_t) && pc.hello.magic != wire::kConnMagic) {
        why = "not a Weft bootstrap connection (bad magic)";
      } else if (closed) {
        why = "closed before presenting itself";
      } else if (pc.got == sizeof(pc.hello)) {
        const wire::ConnHello& h = pc.hello;
        if (h.version != wire::kProtocolVersion || !wire::sameSecret(h.secret, id_.secret) || h.nonce != id_.nonce) {
          why = "wrong secret or protocol version";
        } else if (h.to != rank_ || h.from < 0 || h.from >= nRanks_ || h.from == rank_) {
          why = "addressed from rank " + std::to_string(h.from) + " to rank " + std::to_string(h.to);
        } else {
          std::lock_guard<std::mutex> lock(queueMutex_);
          if (conns_[h.from]->in.valid() || !conns_[h.from]->inError.isOk()) {
            why = "a second connection from rank " + std::to_string(h.from);
          } else {
            conns_[h.from]->in = std::move(pc.sock);
            pc.dead = true;
          }
        }
      }
      if (!why.empty()) {
        WEFT_LOG(kWarn, kBoot, "bootstrap: rank %d dropped the connection from %s: %s", rank_,
                 pc.sock.peerAddress().toString().c_str(), why.c_str());
        pc.sock.close();
        pc.dead = true;
      }
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

void Bootstrap::acceptPending() {
  for (int i = 0; i < 64; ++i) {
    auto pc = std::make_unique<Pending>();
    if (!listener_.tryAccept(&pc->sock).isOk() || !pc->sock.valid()) return;
    pc->deadline = Deadline::afterSeconds(kHandshakeS);
    pending_.push_back(std::move(pc));
  }
}

void Bootstrap::readFrom(int peer) {
  PeerConn& c = *conns_[peer];
  auto fail = [&](Status s) {
    std::lock_guard<std::mutex> lock(queueMutex_);
    c.in.close();
    if (c.inError.isOk()) c.inError = std::move(s);
    queueCv_.notify_all();
  };
  wire::Frame f{};
  size_t got = 0;
  bool closed = false;
  Status s = c.in.recvSome(&f, sizeof(f), &got, &closed);
  if (!s.isOk()) return fail(std::move(s));
  if (got == 0) {
    if (closed) fail(WEFT_ERROR(weftRemoteError, "connection from %s closed", c.in.peerAddress().toString().c_str()));
    return;
  }
  // The peer has started a message: the rest follows at once.
  Deadline rest = Deadline::afterSeconds(static_cast<double>(params::TimeoutS()));
  if (got < sizeof(f)) {
    s = c.in.recvAll(reinterpret_cast<char*>(&f) + got, sizeof(f) - got, rest, &abort_);
    if (!s.isOk()) return fail(std::move(s));
  }
  if (f.bytes > kMaxFrameBytes || (f.kind != wire::kUser && f.kind != wire::kInternal)) {
    return fail(WEFT_ERROR(weftInternalError, "garbled message header from %s", c.in.peerAddress().toString().c_str()));
  }
  Message m{f.kind, f.tag, std::vector<char>(static_cast<size_t>(f.bytes))};
  s = c.in.recvAll(m.data.data(), m.data.size(), rest, &abort_);
  if (!s.isOk()) return fail(std::move(s));
  std::lock_guard<std::mutex> lock(queueMutex_);
  c.queue.push_back(std::move(m));
  queueCv_.notify_all();
}

}  // namespace core
}  // namespace weft
