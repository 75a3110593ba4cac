// Fuzz driver for the bootstrap's wire (src/core/bootstrap_check.*, bootstrap_root.cc,
// bootstrap.cc): every message a stranger or a peer can send, through the pure checks and
// through a live root and a live joining rank over loopback. See wire_drivers.h.
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "base/log.h"
#include "core/bootstrap.h"
#include "core/bootstrap_check.h"
#include "core/bootstrap_wire.h"
#include "wire_driver_util.h"
#include "wire_drivers.h"

namespace weft {
namespace fuzz {
namespace {

namespace wire = core::wire;
using core::UniqueIdInfo;

// The id the pure checks compare against: fixed, so that inputs replay the same way.
UniqueIdInfo fixedId() {
  UniqueIdInfo id;
  id.root = SocketAddress::loopbackV4(4242);
  for (size_t i = 0; i < core::kSecretBytes; ++i) id.secret[i] = static_cast<uint8_t>(0xa0 + i);
  id.nonce = 0x0123456789abcdefull;
  return id;
}

void keyHello(wire::Hello* h, const UniqueIdInfo& id) {
  h->magic = wire::kHelloMagic;
  h->version = wire::kProtocolVersion;
  std::memcpy(h->secret, id.secret, core::kSecretBytes);
  h->nonce = id.nonce;
}

bool terminated(const char* s, size_t n) { return std::memchr(s, '\0', n) != nullptr; }

void helloChecks(const uint8_t* p, size_t n, bool keyed) {
  const UniqueIdInfo id = fixedId();
  wire::Hello h = readStruct<wire::Hello>(p, n);
  if (keyed) keyHello(&h, id);
  // A prefix the root turns away must stay turned away once more bytes come.
  size_t got = std::min(n, sizeof(h));
  bool prefixOk = wire::checkHelloPrefix(h, got).isOk();
  if (!prefixOk && wire::checkHelloPrefix(h, sizeof(h)).isOk()) fail("hello prefix check not monotonic", "");
  int agreed = n > 0 ? static_cast<int>(p[0] % 4) - 1 : -1;  // -1: nobody joined yet
  Status s = wire::checkHello(h, id, agreed);
  expectMessage(s, "checkHello");
  if (!s.isOk()) {
    if (s.code() != weftInvalidArgument && s.code() != weftInvalidUsage)
      fail("hello refused with odd code", s.message());
    return;
  }
  if (!prefixOk) fail("a hello whose prefix was refused passed in full", "");
  if (h.nRanks < 1 || h.nRanks > wire::kMaxRanks || h.rank < 0 || h.rank >= h.nRanks || h.info.rank != h.rank ||
      (agreed > 0 && h.nRanks != agreed)) {
    fail("checkHello accepted bad ranks", std::to_string(h.rank) + " of " + std::to_string(h.nRanks));
  }
  if (!terminated(h.info.hostName, sizeof(h.info.hostName)) || !wire::fromWire(h.listen).valid() ||
      h.listen.port == 0 || h.timeoutMs > wire::kMaxHelloTimeoutMs || !wire::sameSecret(h.secret, id.secret)) {
    fail("checkHello accepted a bad field", "");
  }
}

void connHelloChecks(const uint8_t* p, size_t n, bool keyed) {
  const UniqueIdInfo id = fixedId();
  wire::ConnHello h = readStruct<wire::ConnHello>(p, n);
  if (keyed) {
    h.magic = wire::kConnMagic;
    h.version = wire::kProtocolVersion;
    std::memcpy(h.secret, id.secret, core::kSecretBytes);
    h.nonce = id.nonce;
  }
  const int self = 1, nRanks = 4;
  Status s = wire::checkConnHello(h, id, self, nRanks);
  expectMessage(s, "checkConnHello");
  if (s.isOk() && (h.to != self || h.from < 0 || h.from >= nRanks || h.from == self)) {
    fail("checkConnHello accepted a connection addressed elsewhere", s.message());
  }
  if (s.isOk() && !wire::checkConnHelloPrefix(h, std::min(n, sizeof(h))).isOk()) fail("prefix check stricter", "");
}

void replyChecks(const uint8_t* p, size_t n) {
  if (n == 0) return;
  const int nRanks = 1 + p[0] % 8;
  ++p, --n;
  wire::Reply r = readStruct<wire::Reply>(p, n);
  Status s = wire::checkReply(r, nRanks);
  expectMessage(s, "checkReply");
  if (!s.isOk()) return;
  if (r.status < 0 || r.status >= weftNumResults) fail("checkReply accepted an unknown status", "");
  if (r.status != weftSuccess) {
    if (r.textBytes > wire::kMaxReplyTextBytes) fail("checkReply accepted unbounded error text", "");
    return;
  }
  if (r.nRanks != nRanks) fail("checkReply accepted a table of another size", "");
  size_t off = std::min(n, sizeof(r));
  for (int i = 0; i < nRanks; ++i, off = std::min(n, off + sizeof(wire::Entry))) {
    wire::Entry e = readStruct<wire::Entry>(p + off, n - off);
    Status es = wire::checkEntry(e, i);
    expectMessage(es, "checkEntry");
    if (es.isOk() && (e.info.rank != i || !wire::fromWire(e.listen).valid() ||
                      !terminated(e.info.hostName, sizeof(e.info.hostName)))) {
      fail("checkEntry accepted a bad entry", std::to_string(i));
    }
  }
}

void progressChecks(const uint8_t* p, size_t n) {
  if (n == 0) return;
  const int nRanks = 4, rank = p[0] % nRanks;
  ++p, --n;
  wire::Progress r = readStruct<wire::Progress>(p, n);
  Status s = wire::checkProgress(r, rank, nRanks);
  expectMessage(s, "checkProgress");
  if (!s.isOk()) return;
  if (r.joined < 1 || r.joined > nRanks || r.missingTotal != nRanks - r.joined || r.missingShown < 0 ||
      r.missingShown > wire::kProgressMissingShown) {
    fail("checkProgress accepted bad counts", std::to_string(r.joined) + " joined");
  }
  for (int i = 0; i < r.missingShown; ++i) {
    if (r.missing[i] < 0 || r.missing[i] >= nRanks || r.missing[i] == rank) fail("checkProgress accepted a bad rank", "");
  }
}

// Header after header, as Bootstrap::readFrom takes them; a refused header ends the stream.
void frameChecks(const uint8_t* p, size_t n) {
  size_t off = 0;
  while (n - off >= sizeof(wire::Frame)) {
    wire::Frame f = readStruct<wire::Frame>(p + off, n - off);
    off += sizeof(f);
    Status s = wire::checkFrame(f);
    expectMessage(s, "checkFrame");
    if (!s.isOk()) return;
    if ((f.kind != wire::kUser && f.kind != wire::kInternal) || f.bytes > wire::kMaxFrameBytes) {
      fail("checkFrame accepted a bad header", "");
    }
    off += static_cast<size_t>(std::min<uint64_t>(f.bytes, n - off));
  }
}

// ---- live code paths ----------------------------------------------------------------------

// The root of the live-root modes: started on first use and again whenever one finished (a keyed
// hello of one rank completes its communicator; an announced wait of 0 ends it at once).
UniqueIdInfo liveRoot() {
  static std::mutex mutex;
  static UniqueIdInfo current;
  std::lock_guard<std::mutex> lock(mutex);
  if (core::runningRootCount() == 0) {
    weftUniqueId id;
    Status s = core::createUniqueIdAt(SocketAddress::loopbackV4(), &id);
    if (s.isOk()) s = core::decodeUniqueId(id, &current);
    if (!s.isOk()) fail("cannot start a root", s.message());
  }
  return current;
}

void toRoot(const uint8_t* p, size_t n, bool keyed) {
  std::string answer;
  // A root that just finished may still count as running with its listener already closed:
  // then the connection is refused, and the next try starts a new root.
  HangUp result = HangUp::kNoConnection;
  for (int attempt = 0; attempt < 20 && result == HangUp::kNoConnection; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    UniqueIdInfo id = liveRoot();
    std::string bytes(reinterpret_cast<const char*>(p), n);
    if (keyed) {
      wire::Hello h = readStruct<wire::Hello>(p, n);
      keyHello(&h, id);
      bytes.replace(0, std::min(n, sizeof(h)), reinterpret_cast<const char*>(&h), sizeof(h));
    }
    answer.clear();
    result = sendAndExpectHangUp(id.root, bytes.data(), bytes.size(), &answer, 0.05);
  }
  if (result == HangUp::kNoConnection) fail("no live root could be reached", "");
  if (result == HangUp::kKeptOpen) {
    fail("the root kept a connection open after the sender went quiet", std::to_string(n) + " bytes sent");
  }
  // Whatever it answered must itself be a well-formed answer.
  if (answer.size() >= sizeof(wire::Reply)) {
    wire::Reply r = readStruct<wire::Reply>(reinterpret_cast<const uint8_t*>(answer.data()), answer.size());
    if (r.magic != wire::kReplyMagic) fail("the root answered without its magic", "");
  }
}

// A rank joins as the only rank through a fake root that answers its hello with the bytes.
void rankReadsReply(const uint8_t* p, size_t n) {
  Socket listener;
  if (!Socket::listen(SocketAddress::loopbackV4(), &listener).isOk()) fail("cannot listen on loopback", "");
  UniqueIdInfo info = fixedId();
  info.root = listener.localAddress();
  weftUniqueId id;
  if (!core::encodeUniqueId(info, &id).isOk()) fail("cannot encode an id", "");
  Status joined;
  std::unique_ptr<core::Bootstrap> b;
  std::thread rank([&] {
    PeerInfo self;
    std::snprintf(self.hostName, sizeof(self.hostName), "fuzz");
    joined = core::Bootstrap::create(id, 0, 1, self, Deadline::afterSeconds(3), &b);
  });
  Socket conn;
  if (listener.accept(Deadline::afterSeconds(5), nullptr, &conn).isOk()) {
    wire::Hello h{};
    if (conn.recvAll(&h, sizeof(h), Deadline::afterSeconds(5)).isOk()) {
      Status s = wire::checkHello(h, info, -1);
      if (!s.isOk()) fail("a real rank's hello fails the root's check", s.message());
    }
    (void)conn.sendAll(p, n, Deadline::afterSeconds(2));
    conn.close();
  }
  uint64_t start = nowNs();
  rank.join();
  if (nowNs() - start > 8'000'000'000ull) fail("a rank took more than 8 s to give up on a garbled answer", "");
  expectMessage(joined, "Bootstrap::create");
  if (joined.isOk() && (b == nullptr || b->peers().size() != 1 || b->peers()[0].rank != 0)) {
    fail("a rank accepted a garbled table", "");
  }
}

// Three live ranks; whoever holds the id introduces itself to rank 1 as rank 2 (which has not
// sent to rank 1 yet) and sends the bytes. Rank 1 must deliver exactly the complete user messages
// they hold, then report the connection closed or garbled: never a hang, never other bytes.
void rankReadsFrames(const uint8_t* p, size_t n) {
  weftUniqueId id;
  UniqueIdInfo info;
  if (!core::createUniqueIdAt(SocketAddress::loopbackV4(), &id).isOk() || !core::decodeUniqueId(id, &info).isOk()) {
    fail("cannot start a root", "");
  }
  constexpr int kRanks = 3;
  std::unique_ptr<core::Bootstrap> b[kRanks];
  std::thread joins[kRanks];
  for (int r = 0; r < kRanks; ++r) {
    joins[r] = std::thread([&, r] {
      Status s = core::Bootstrap::create(id, r, kRanks, PeerInfo(), Deadline::afterSeconds(10), &b[r]);
      if (!s.isOk()) fail("three ranks could not join", s.message());
    });
  }
  for (auto& t : joins) t.join();
  wire::ConnHello h{};
  h.magic = wire::kConnMagic;
  h.version = wire::kProtocolVersion;
  std::memcpy(h.secret, info.secret, core::kSecretBytes);
  h.nonce = info.nonce;
  h.from = 2;
  h.to = 1;
  Socket s;
  if (!Socket::connect(b[0]->address(1), Deadline::afterSeconds(2), nullptr, &s).isOk())
    fail("cannot reach rank 1", "");
  std::string bytes(reinterpret_cast<const char*>(&h), sizeof(h));
  bytes.append(reinterpret_cast<const char*>(p), n);
  (void)s.sendAll(bytes.data(), bytes.size(), Deadline::afterSeconds(5));
  ::shutdown(s.fd(), SHUT_WR);

  // The user messages the bytes hold, as Bootstrap::readFrom takes them.
  size_t off = 0;
  std::set<int32_t> tags;
  while (n - off >= sizeof(wire::Frame)) {
    wire::Frame f = readStruct<wire::Frame>(p + off, n - off);
    if (!wire::checkFrame(f).isOk() || f.bytes > n - off - sizeof(f)) break;
    off += sizeof(f);
    std::string want(reinterpret_cast<const char*>(p + off), static_cast<size_t>(f.bytes));
    off += want.size();
    tags.insert(f.tag);
    if (f.kind != wire::kUser) continue;
    std::string got(want.size(), '\0');
    Status r = b[1]->recv(2, f.tag, &got[0], got.size(), Deadline::afterSeconds(5));
    if (!r.isOk()) fail("rank 1 lost a complete message", r.message());
    if (got != want) fail("rank 1 received other bytes than were sent", "");
  }
  int32_t unused = INT32_MAX;  // a tag no message had: only the connection's end answers it
  while (tags.count(unused) != 0) --unused;
  char none;
  Status end = b[1]->recv(2, unused, &none, 1, Deadline::afterSeconds(5));
  if (end.isOk() || end.code() == weftTimeout) fail("rank 1 did not see the connection end", end.message());
  expectMessage(end, "the end of a connection");
}

}  // namespace

void bootstrapOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const uint8_t* p = data + 1;
  size_t n = size - 1;
  switch (data[0] % kBootstrapModes) {
    case kHelloRaw:
      return helloChecks(p, n, false);
    case kHelloKeyed:
      return helloChecks(p, n, true);
    case kConnHelloRaw:
      return connHelloChecks(p, n, false);
    case kConnHelloKeyed:
      return connHelloChecks(p, n, true);
    case kReplyTable:
      return replyChecks(p, n);
    case kFrameStream:
      return frameChecks(p, n);
    case kRootRaw:
      return toRoot(p, n, false);
    case kRootKeyed:
      return toRoot(p, n, true);
    case kRankReply:
      return rankReadsReply(p, n);
    case kProgress:
      return progressChecks(p, n);
    default:
      return rankReadsFrames(p, n);
  }
}

}  // namespace fuzz
}  // namespace weft
