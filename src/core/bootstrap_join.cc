// One rank's end of the bootstrap, joining (bootstrap.h: Bootstrap::create): the rank greets the
// root with its hello, waits for the root's answer and the rank table (shared with this process's
// other ranks of the communicator), then meets the hub (rank 0) in a barrier. The messages that
// follow are in bootstrap.cc.
#include <poll.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "base/log.h"
#include "base/params.h"
#include "core/bootstrap.h"
#include "core/bootstrap_check.h"
#include "core/bootstrap_wire.h"
#include "core/init_wait.h"

namespace weft {
namespace core {
namespace {

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

// A join stopped by weftCommAbort (or the init's abort flag) while `doing`.
Status abortedWhile(int rank, const char* doing) {
  return WEFT_ERROR(weftInvalidUsage, "bootstrap: rank %d stopped %s: the communicator was aborted (weftCommAbort)",
                    rank, doing);
}

// Why a rank could not reach the root (`s`), and what to check.
Status rootUnreachable(const Status& s, int rank, const std::string& rootName) {
  return Status::error(s.code(),
                       "bootstrap: rank " + std::to_string(rank) + " cannot reach the root at " + rootName + ": " +
                           s.message() +
                           ". The root runs in the process that made the unique id (rank 0 when launched from "
                           "the environment): check that rank 0 started and still runs, and that this "
                           "host can reach that address (WEFT_SOCKET_IFNAME picks the interface). A root "
                           "serves one communicator and stops once it has formed: an id used before "
                           "finds none (call weftGetUniqueId for each communicator)");
}


// Connects to the root by `deadline`, reporting the wait on schedule.
Status reachRoot(const SocketAddress& rootAddr, Deadline deadline, const std::atomic<bool>* abort,
                 InitWaitReporter& rep, Socket* out) {
  for (;;) {
    Deadline report = rep.nextReport();
    Deadline slice = report.atNs() < deadline.atNs() ? report : deadline;
    Status s = Socket::connect(rootAddr, slice, abort, out);
    if (s.isOk() || (abort != nullptr && abort->load()) || deadline.expired() || !slice.expired()) return s;
    rep.tick();
  }
}

// Takes a progress report from the root into the wait's state.
void takeProgress(const wire::Progress& p, InitWaitReporter& rep) {
  InitWait& w = rep.state();
  w.heardNs = nowNs();
  w.joined = p.joined;
  w.missingTotal = p.missingTotal;
  w.missing.assign(p.missing, p.missing + p.missingShown);
  rep.changed();
}

// Waits by `by` for the header of the root's answer, taking in the progress reports that come
// before it and logging this rank's own reports on schedule. Reads no byte past the header.
Status awaitAnswer(const Socket& root, int rank, int nRanks, Deadline by, const std::atomic<bool>* abort,
                   InitWaitReporter& rep, wire::Reply* reply) {
  char buf[std::max(sizeof(wire::Reply), sizeof(wire::Progress))];
  size_t got = 0, need = sizeof(uint32_t);  // the magic first: it says which message this is
  for (;;) {
    rep.tick();
    if (abort != nullptr && abort->load()) return WEFT_ERROR(weftRemoteError, "aborted");
    if (by.expired()) return WEFT_ERROR(weftTimeout, "no answer from the root in time");
    pollfd pfd{root.fd(), POLLIN, 0};
    const int ms = std::min({by.remainingMs(), kAbortPollMs, rep.nextReport().remainingMs()});
    const int rc = ::poll(&pfd, 1, std::max(ms, 0));
    if (rc < 0 && errno != EINTR) return WEFT_ERROR(weftSystemError, "poll: %s", errnoText(errno).c_str());
    if (rc <= 0) continue;
    size_t n = 0;
    bool closed = false;
    WEFT_TRY(root.recvSome(buf + got, need - got, &n, &closed));
    if (closed) return WEFT_ERROR(weftSystemError, "the root closed the connection");
    got += n;
    if (got < need) continue;
    uint32_t magic = 0;
    std::memcpy(&magic, buf, sizeof(magic));
    if (need == sizeof(magic)) {
      need = magic == wire::kProgressMagic ? sizeof(wire::Progress) : sizeof(wire::Reply);
      continue;
    }
    if (magic != wire::kProgressMagic) {
      std::memcpy(reply, buf, sizeof(*reply));  // checked by readAnswer
      return Status::ok();
    }
    wire::Progress p;
    std::memcpy(&p, buf, sizeof(p));
    Status s = wire::checkProgress(p, rank, nRanks);
    if (!s.isOk()) return std::move(s).withPrefix("a garbled progress report (is another program on that port?): ");
    takeProgress(p, rep);
    got = 0;
    need = sizeof(magic);
  }
}
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

  InitWait wait;
  wait.comm = info.nonce;
  wait.rank = rank;
  wait.nRanks = nRanks;
  wait.root = rootName;
  wait.sinceNs = start;
  InitWaitReporter rep(wait, deadline);

  // Reach the root; it may not listen yet when a launcher started every rank at once.
  Socket root;
  Status s = reachRoot(info.root, deadline, abortInit, rep, &root);
  if (b->aborted()) return abortedWhile(rank, "reaching the root");
  if (!s.isOk()) return rootUnreachable(s, rank, rootName);

  // Listen for the other ranks on the address this host uses to reach the root: the others
  // can reach it the same way.
  SocketAddress bind = root.localAddress();
  bind.setPort(0);
  WEFT_TRY(Socket::listen(bind, &b->listener_));
  rep.state().phase = InitWait::Phase::kWaitingForRanks;
  rep.changed();
  WEFT_TRY(b->meetThroughRoot(root, self, deadline, start, rep));
  root.close();

  // Connect to the hub (rank 0), and find out now whether everyone can reach everyone's hub.
  if (nRanks > 1) WEFT_TRY(b->barrier(deadline));
  WEFT_LOG(kInfo, kBoot, "bootstrap: rank %d of %d joined in %.2f s (root %s, listening on %s)", rank, nRanks,
           (nowNs() - start) / 1e9, rootName.c_str(), b->listener_.localAddress().toString().c_str());
  *out = std::move(b);
  return Status::ok();
}

Status Bootstrap::meetThroughRoot(Socket& root, const PeerInfo& self, Deadline deadline, uint64_t start,
                                  InitWaitReporter& rep) {
  const int rank = rank_, nRanks = nRanks_;
  const std::string rootName = id_.root.toString();
  wire::Hello hello = makeHello(id_, rank, nRanks, self, deadline, listener_.localAddress());
  Status s = root.sendAll(&hello, sizeof(hello), deadline, abortInit_);
  if (aborted()) return abortedWhile(rank, "greeting the root");
  if (!s.isOk()) return std::move(s).withPrefix("bootstrap: rank " + std::to_string(rank) + " greeting the root: ");

  // The root answers with the table, or with why not. When ranks are missing it answers just
  // before our deadline; wait a little past it for that answer, which names them.
  Deadline answerBy =
      deadline.atNs() == UINT64_MAX ? deadline : Deadline::afterSeconds(deadline.remainingSeconds() + 2);
  wire::Reply reply{};
  s = awaitAnswer(root, rank, nRanks, answerBy, abortInit_, rep, &reply);
  if (aborted()) return abortedWhile(rank, "waiting for the other ranks to join");
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
  s = receivePeerTable(root, id_.nonce, nRanks, answerBy, &table_);
  if (!s.isOk())
    return std::move(s).withPrefix("bootstrap: rank " + std::to_string(rank) + " receiving the rank table: ");
  return Status::ok();
}

}  // namespace core
}  // namespace weft
