// The bootstrap root: the thread that introduces the ranks of one communicator to each other.
//
// The root is a single thread polling every connection it has: a stranger that sends garbage,
// a wrong secret or nothing at all is dropped (with a WARN naming its address) without holding
// up the ranks that behave. Root threads are owned by a process-wide registry that joins them at
// exit; each serves one communicator's init and then ends.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "base/log.h"
#include "base/params.h"
#include "core/bootstrap.h"
#include "core/bootstrap_check.h"
#include "core/bootstrap_wire.h"
#include "core/init_wait.h"

namespace weft {
namespace core {

// ---- the root thread ----------------------------------------------------------------------

namespace {

// How long a connection to the root may take to present its hello.
constexpr double kHandshakeS = 5.0;
// Connections waiting for their hello beyond which the root turns new ones away.
constexpr size_t kMaxPending = 1024;
// How long the root tries to hand one rank the table.
constexpr double kAnswerS = 10.0;

class RootServer {
 public:
  RootServer(Socket listener, const UniqueIdInfo& id) : listener_(std::move(listener)), id_(id) {}

  void start() {
    thread = std::thread([this] {
      run();
      // Gone for good: later connections are refused rather than left unanswered.
      listener_.close();
      pending_.clear();
      joined_.clear();
      done.store(true);
    });
  }

  std::thread thread;
  std::atomic<bool> abort{false};
  std::atomic<bool> done{false};
  const pid_t ownerPid = getpid();
  uint64_t nonce() const { return id_.nonce; }

 private:
  struct Conn {
    Socket sock;
    std::string addr;
    wire::Hello hello{};
    size_t got = 0;
    Deadline handshake;
    Deadline rankDeadline;
    bool dead = false;
    uint64_t joinedNs = 0;     // when its hello was accepted
    double lastReportS = 0;    // its last progress report's due time (seconds after joinedNs)
  };

  void run();
  // Reads what a pending connection has sent; true when its hello is complete.
  bool readHello(Conn& c);
  // Empty when the hello may join; else why not (and *code for the answer).
  std::string validate(const wire::Hello& h, weftResult_t* code) const;
  void drop(Conn& c, const std::string& reason, weftResult_t answer = weftSuccess);
  void answerAll(const std::vector<char>& message);
  void answerTimeout();
  // Drops the connections that did not complete their hello within kHandshakeS, and forgets
  // the dropped ones.
  void dropSlowHellos();
  // Tells each joined rank whose report (init_wait.h's schedule) is about due who has joined.
  void sendProgress();
  // Every rank joined: sends each the rank table (run's last step; where: the root's address).
  void answerWithTable(const std::string& where);
  // A second hello for a rank that is still waiting: two groups of ranks (or one rank twice)
  // use this id. Every rank that joined, and every later one, is told so; nobody forms.
  void refuseUsedTwice(Conn& second);
  // Takes in new connections (bounded: the oldest waiting one goes when full).
  void acceptNew();
  // Reads what `c` sent: its hello (then joins it or drops it), or a joined rank's hang-up.
  // A join may bring *deadline forward. False when it dropped the joined connections (an id
  // used twice): the caller's pointers into them are stale.
  bool serve(Conn* c, Deadline* deadline);

  Socket listener_;
  UniqueIdInfo id_;
  std::vector<std::unique_ptr<Conn>> pending_;
  std::map<int, std::unique_ptr<Conn>> joined_;
  int nRanks_ = -1;
  uint64_t firstJoinNs_ = 0;
  std::string usedTwice_;  // why this id is spoiled (empty while it is not)
};

// How long a root whose id was used twice stays to tell the latecomers of either group why.
constexpr double kUsedTwiceLingerS = 5.0;

void RootServer::drop(Conn& c, const std::string& reason, weftResult_t answer) {
  WEFT_LOG(kWarn, kBoot, "bootstrap root at %s: dropped the connection from %s: %s", id_.root.toString().c_str(),
           c.addr.c_str(), reason.c_str());
  if (answer != weftSuccess && c.sock.valid()) {
    // It speaks our protocol: tell it why, so that its error says so.
    std::string text = "bootstrap: the root at " + id_.root.toString() + " turned this rank away: " + reason;
    wire::Reply r{wire::kReplyMagic, answer, 0, static_cast<uint32_t>(text.size())};
    std::vector<char> buf(sizeof(r) + text.size());
    std::memcpy(buf.data(), &r, sizeof(r));
    std::memcpy(buf.data() + sizeof(r), text.data(), text.size());
    (void)c.sock.sendAll(buf.data(), buf.size(), Deadline::afterSeconds(0.5), &abort);
  }
  c.sock.close();
  c.dead = true;
}

bool RootServer::readHello(Conn& c) {
  auto* bytes = reinterpret_cast<char*>(&c.hello);
  size_t got = 0;
  bool closed = false;
  Status s = c.sock.recvSome(bytes + c.got, sizeof(c.hello) - c.got, &got, &closed);
  if (!s.isOk()) {
    drop(c, s.message());
    return false;
  }
  c.got += got;
  // Turn strangers away as soon as their first bytes show they are not ranks.
  Status prefix = wire::checkHelloPrefix(c.hello, c.got);
  if (!prefix.isOk()) {
    // A stranger gets no answer; a rank of another build is told why.
    drop(c, prefix.message(), prefix.code() == weftInvalidUsage ? weftInvalidUsage : weftSuccess);
    return false;
  }
  if (closed) {
    char why[96];
    std::snprintf(why, sizeof(why), "closed after %zu of the %zu bytes of a hello", c.got, sizeof(c.hello));
    drop(c, why);
    return false;
  }
  return c.got == sizeof(c.hello);
}

std::string RootServer::validate(const wire::Hello& h, weftResult_t* code) const {
  Status s = wire::checkHello(h, id_, nRanks_);
  if (!s.isOk()) {
    *code = s.code();
    return s.message();
  }
  auto it = joined_.find(h.rank);
  if (it != joined_.end()) {
    *code = weftInvalidUsage;
    char why[256];
    std::snprintf(why, sizeof(why), "rank %d already joined from %s", h.rank, it->second->addr.c_str());
    return why;
  }
  if (!usedTwice_.empty()) {
    *code = weftInvalidUsage;
    return usedTwice_;
  }
  return "";
}

void RootServer::answerAll(const std::vector<char>& message) {
  // The ranks of other processes first: a rank of this process may end the process (and this
  // thread) as soon as it has its answer, e.g. on a time-out. (A pid equal by chance on another
  // host only changes the order.)
  std::vector<std::pair<int, Conn*>> order;
  for (auto& [rank, c] : joined_) {
    if (c->hello.info.pid != ownerPid) order.emplace_back(rank, c.get());
  }
  for (auto& [rank, c] : joined_) {
    if (c->hello.info.pid == ownerPid) order.emplace_back(rank, c.get());
  }
  for (auto& [rank, c] : order) {
    Status s = c->sock.sendAll(message.data(), message.size(), Deadline::afterSeconds(kAnswerS), &abort);
    if (!s.isOk()) {
      WEFT_LOG(kWarn, kBoot, "bootstrap root at %s: could not answer rank %d at %s: %s", id_.root.toString().c_str(),
               rank, c->addr.c_str(), s.message().c_str());
    }
  }
}

void RootServer::refuseUsedTwice(Conn& second) {
  const int rank = second.hello.rank;
  usedTwice_ = "the unique id was used twice: rank " + std::to_string(rank) + " joined from " + joined_[rank]->addr +
               " and again from " + second.addr +
               " (two communicators initialised with one id, or one rank calling init twice). A unique id makes "
               "exactly one communicator: call weftGetUniqueId for each new communicator and give that id to its "
               "ranks";
  WEFT_LOG(kWarn, kBoot, "bootstrap root at %s: %s", id_.root.toString().c_str(), usedTwice_.c_str());
  for (auto& [r, c] : joined_) drop(*c, usedTwice_, weftInvalidUsage);
  joined_.clear();
  drop(second, usedTwice_, weftInvalidUsage);
}

void RootServer::answerTimeout() {
  std::vector<int> missing;
  for (int r = 0; r < nRanks_; ++r) {
    if (joined_.find(r) == joined_.end()) missing.push_back(r);
  }
  double waited = static_cast<double>(nowNs() - firstJoinNs_) / 1e9;
  char text[1024];
  std::snprintf(text, sizeof(text),
                "bootstrap: %zu of %d ranks joined within %.*f s; missing rank%s %s. Check that every rank was started "
                "with the same unique id and can reach %s",
                joined_.size(), nRanks_, waited < 10 ? 1 : 0, waited, missing.size() == 1 ? "" : "s",
                rankList(missing).c_str(), id_.root.toString().c_str());
  WEFT_LOG(kWarn, kBoot, "%s", text);
  wire::Reply r{wire::kReplyMagic, weftTimeout, nRanks_, static_cast<uint32_t>(std::strlen(text))};
  std::vector<char> buf(sizeof(r) + r.textBytes);
  std::memcpy(buf.data(), &r, sizeof(r));
  std::memcpy(buf.data() + sizeof(r), text, r.textBytes);
  answerAll(buf);
}

void RootServer::acceptNew() {
  for (int i = 0; i < 64; ++i) {
    Socket s;
    if (!listener_.tryAccept(&s).isOk() || !s.valid()) return;
    auto c = std::make_unique<Conn>();
    c->addr = s.peerAddress().toString();
    c->sock = std::move(s);
    c->handshake = Deadline::afterSeconds(kHandshakeS);
    auto waiting = [](const std::unique_ptr<Conn>& p) { return !p->dead; };
    if (static_cast<size_t>(std::count_if(pending_.begin(), pending_.end(), waiting)) >= kMaxPending) {
      // A flood must not lock real ranks out: the connection that has waited longest goes (a
      // rank presents its hello at once; a stranger had its chance). Marked, not erased: run()
      // still holds pointers to the pending connections.
      drop(**std::find_if(pending_.begin(), pending_.end(), waiting),
           "it was the oldest of too many connections waiting to present a hello");
    }
    pending_.push_back(std::move(c));
  }
}

bool RootServer::serve(Conn* c, Deadline* deadline) {
  if (c->got == sizeof(c->hello)) {
    // A rank that joined sends nothing more until the table comes: this is a hang-up.
    int rank = c->hello.rank;
    char buf[1];
    size_t got = 0;
    bool closed = false;
    Status s = c->sock.recvSome(buf, sizeof(buf), &got, &closed);
    if (!s.isOk() || closed || got > 0) {
      drop(*c, "rank " + std::to_string(rank) +
                   (got > 0 ? " sent bytes after its hello" : " went away before all ranks joined") +
                   "; it may join again");
      joined_.erase(rank);
    }
    return true;
  }
  if (!readHello(*c)) return true;
  weftResult_t code = weftSuccess;
  std::string why = validate(c->hello, &code);
  if (usedTwice_.empty() && joined_.count(c->hello.rank) != 0 && code == weftInvalidUsage) {
    refuseUsedTwice(*c);
    *deadline = Deadline::afterSeconds(kUsedTwiceLingerS);
    return false;  // the joined connections are gone
  }
  if (!usedTwice_.empty() && why == usedTwice_) *deadline = Deadline::afterSeconds(kUsedTwiceLingerS);
  if (!why.empty()) {
    drop(*c, why, code);
    return true;
  }
  // The root gives up a little before the earliest rank does, so that its answer (which names
  // the missing ranks) arrives while that rank still waits for it.
  double remaining = static_cast<double>(c->hello.timeoutMs) / 1e3;
  Deadline mine = Deadline::afterSeconds(remaining - std::min(0.5, remaining / 10));
  if (joined_.empty() || mine.atNs() < deadline->atNs()) *deadline = mine;
  if (joined_.empty() && firstJoinNs_ == 0) firstJoinNs_ = nowNs();
  c->joinedNs = nowNs();
  nRanks_ = c->hello.nRanks;
  WEFT_LOG(kTrace, kBoot, "bootstrap root at %s: rank %d of %d joined from %s", id_.root.toString().c_str(),
           c->hello.rank, nRanks_, c->addr.c_str());
  int rank = c->hello.rank;
  auto it = std::find_if(pending_.begin(), pending_.end(), [&](const auto& p) { return p.get() == c; });
  joined_[rank] = std::move(*it);
  pending_.erase(it);
  return true;
}

void RootServer::run() {
  const std::string where = id_.root.toString();
  // Until a rank says how long it waits, the root waits WEFT_TIMEOUT_S for the first one.
  Deadline deadline = Deadline::afterSeconds(static_cast<double>(params::TimeoutS()));
  uint64_t startNs = nowNs();
  std::vector<pollfd> fds;
  std::vector<Conn*> owners;
  for (;;) {
    if (abort.load()) return;
    if (nRanks_ > 0 && static_cast<int>(joined_.size()) == nRanks_) break;
    if (deadline.expired()) {
      if (!usedTwice_.empty()) return;  // every rank that came was told
      if (joined_.empty()) {
        WEFT_LOG(kWarn, kBoot, "bootstrap root at %s: no rank joined within %.0f s; closing it", where.c_str(),
                 static_cast<double>(nowNs() - startNs) / 1e9);
      } else {
        answerTimeout();
      }
      return;
    }

    fds.assign(1, pollfd{listener_.fd(), POLLIN, 0});
    owners.assign(1, nullptr);
    for (auto& c : pending_) fds.push_back({c->sock.fd(), POLLIN, 0}), owners.push_back(c.get());
    for (auto& [rank, c] : joined_) fds.push_back({c->sock.fd(), POLLIN, 0}), owners.push_back(c.get());
    int rc = ::poll(fds.data(), fds.size(), std::min(deadline.remainingMs(), kAbortPollMs));
    if (rc < 0 && errno != EINTR) {
      WEFT_LOG(kWarn, kBoot, "bootstrap root at %s: poll: %s", where.c_str(), errnoText(errno).c_str());
      return;
    }

    if (rc > 0 && fds[0].revents != 0) acceptNew();
    for (size_t i = 1; rc > 0 && i < fds.size(); ++i) {
      if (fds[i].revents != 0 && !owners[i]->dead && !serve(owners[i], &deadline)) break;
    }

    dropSlowHellos();
    sendProgress();
  }
  answerWithTable(where);
}

void RootServer::dropSlowHellos() {
  for (auto& c : pending_) {
    if (!c->dead && c->handshake.expired()) {
      char why[128];
      std::snprintf(why, sizeof(why), "sent %zu of the %zu bytes of a hello within %.0f s", c->got, sizeof(c->hello),
                    kHandshakeS);
      drop(*c, why);
    }
  }
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const auto& c) { return c->dead; }),
                 pending_.end());
}

void RootServer::sendProgress() {
  const double firstS = static_cast<double>(params::InitReportS());
  if (firstS <= 0 || nRanks_ <= 0 || !usedTwice_.empty()) return;
  // Sent a little before the rank reports, so that its report carries news (the rank's clock
  // started a moment before its hello arrived here).
  const double leadS = std::min(0.5, firstS / 2);
  const uint64_t now = nowNs();
  wire::Progress p{};
  bool made = false;
  for (auto& [rank, c] : joined_) {
    const double dueS = nextInitReportS(c->lastReportS, firstS);
    if (c->dead || static_cast<double>(now - c->joinedNs) / 1e9 < dueS - leadS) continue;
    c->lastReportS = dueS;
    if (!made) {
      p.magic = wire::kProgressMagic;
      p.nRanks = nRanks_;
      p.joined = static_cast<int32_t>(joined_.size());
      p.missingTotal = nRanks_ - p.joined;
      for (int r = 0; r < nRanks_ && p.missingShown < wire::kProgressMissingShown; ++r) {
        if (joined_.find(r) == joined_.end()) p.missing[p.missingShown++] = r;
      }
      made = true;
    }
    Status s = c->sock.sendAll(&p, sizeof(p), Deadline::afterSeconds(0.5), &abort);
    if (!s.isOk()) {
      WEFT_LOG(kInfo, kBoot, "bootstrap root at %s: could not tell rank %d at %s who joined: %s",
               id_.root.toString().c_str(), rank, c->addr.c_str(), s.message().c_str());
    }
  }
}

void RootServer::answerWithTable(const std::string& where) {
  // Everyone is here. Strangers still on the line get their warning before the ranks go on.
  for (auto& c : pending_) drop(*c, "no complete hello before the communicator formed");
  pending_.clear();
  wire::Reply r{wire::kReplyMagic, 0, nRanks_, 0};
  std::vector<char> table(sizeof(r) + sizeof(wire::Entry) * static_cast<size_t>(nRanks_));
  std::memcpy(table.data(), &r, sizeof(r));
  for (auto& [rank, c] : joined_) {
    wire::Entry e{c->hello.info, c->hello.listen};
    std::memcpy(table.data() + sizeof(r) + sizeof(e) * static_cast<size_t>(rank), &e, sizeof(e));
  }
  answerAll(table);
  WEFT_LOG(kInfo, kBoot, "bootstrap root at %s: all %d ranks joined in %.2f s", where.c_str(), nRanks_,
           static_cast<double>(nowNs() - firstJoinNs_) / 1e9);
}

// ---- the registry of root threads ---------------------------------------------------------

struct Registry {
  std::mutex mutex;
  std::vector<RootServer*> roots;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: roots are stopped by an atexit hook
  return *r;
}

// At exit, stop this process's roots. Roots inherited through fork() belong to the parent (their
// threads do not exist here) and are left alone.
void stopRootsAtExit() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (RootServer* s : r.roots) {
    if (s->ownerPid != getpid()) continue;
    s->abort.store(true);
    if (s->thread.joinable()) s->thread.join();
    delete s;
  }
  r.roots.clear();
}

}  // namespace

Status launchRoot(Socket listener, const UniqueIdInfo& info) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(stopRootsAtExit); });
  // Reap the roots that have finished.
  auto reap = [](RootServer* s) {
    if (s->ownerPid != getpid() || !s->done.load()) return false;
    s->thread.join();
    delete s;
    return true;
  };
  r.roots.erase(std::remove_if(r.roots.begin(), r.roots.end(), reap), r.roots.end());
  // The root thread may be running when the caller forks its ranks: it must find every
  // process-wide static already made.
  initProcessStatics();
  auto server = std::make_unique<RootServer>(std::move(listener), info);
  server->start();
  WEFT_LOG(kInfo, kBoot, "bootstrap root listening at %s (communicator %016llx)", info.root.toString().c_str(),
           static_cast<unsigned long long>(info.nonce));
  r.roots.push_back(server.release());
  return Status::ok();
}

Status stopRoot(const weftUniqueId& id, bool* stopped) {
  *stopped = false;
  UniqueIdInfo info;
  WEFT_TRY(decodeUniqueId(id, &info));
  RootServer* found = nullptr;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = std::find_if(r.roots.begin(), r.roots.end(),
                           [&](RootServer* s) { return s->ownerPid == getpid() && s->nonce() == info.nonce; });
    if (it == r.roots.end()) return Status::ok();
    found = *it;
    r.roots.erase(it);
  }
  // Out of the registry, so nobody else joins or frees it: stop it here (within kAbortPollMs).
  *stopped = !found->done.load();
  found->abort.store(true);
  if (found->thread.joinable()) found->thread.join();
  delete found;
  if (*stopped) {
    WEFT_LOG(kInfo, kBoot, "bootstrap root at %s (communicator %016llx) stopped: its id is not used to join",
             info.root.toString().c_str(), static_cast<unsigned long long>(info.nonce));
  }
  return Status::ok();
}

size_t runningRootCount() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  size_t n = 0;
  for (RootServer* s : r.roots) n += (s->ownerPid == getpid() && !s->done.load()) ? 1 : 0;
  return n;
}

}  // namespace core
}  // namespace weft
