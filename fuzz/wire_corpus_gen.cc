// Writes the seed corpus of the wire fuzzers (tests/fixtures/wire-corpus/{bootstrap,socket_frame})
// from the real wire structs: valid messages of every kind plus truncated, oversized and hostile
// variants. Each file is one fuzz input: a mode byte (wire_drivers.h) and the bytes.
//   weft-wire-corpus-gen DIR      (built on demand: ninja weft-wire-corpus-gen)
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/bootstrap_wire.h"
#include "transports/net/socket_wire.h"
#include "wire_drivers.h"

namespace {

using namespace weft;  // NOLINT: a generator of one page
namespace wire = core::wire;
using fuzz::BootstrapMode;
using fuzz::SocketMode;

std::string g_dir;
int g_written = 0;

template <typename T>
std::string bytesOf(const T& t) {
  return std::string(reinterpret_cast<const char*>(&t), sizeof(T));
}

void write(const std::string& sub, const std::string& name, uint8_t mode, const std::string& body) {
  std::string path = g_dir + "/" + sub + "/seed-" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fputc(mode, f);
  std::fwrite(body.data(), 1, body.size(), f);
  std::fclose(f);
  ++g_written;
}

wire::Hello hello(int rank, int nRanks) {
  wire::Hello h{};
  h.magic = wire::kHelloMagic;
  h.version = wire::kProtocolVersion;
  for (size_t i = 0; i < core::kSecretBytes; ++i) h.secret[i] = static_cast<uint8_t>(0xa0 + i);  // fixedId()
  h.nonce = 0x0123456789abcdefull;
  h.rank = rank;
  h.nRanks = nRanks;
  h.timeoutMs = 10000;
  h.info.rank = rank;
  std::snprintf(h.info.hostName, sizeof(h.info.hostName), "node-%d", rank);
  h.listen = wire::toWire(SocketAddress::loopbackV4(static_cast<uint16_t>(5000 + rank)));
  return h;
}

void bootstrapHellos(BootstrapMode raw, BootstrapMode keyed, const char* tag) {
  const std::string sub = "bootstrap", t = tag;
  write(sub, t + "-valid", raw, bytesOf(hello(0, 2)));
  write(sub, t + "-valid-keyed", keyed, bytesOf(hello(1, 4)));
  write(sub, t + "-truncated", raw, bytesOf(hello(0, 2)).substr(0, 40));
  write(sub, t + "-empty", raw, "");
  write(sub, t + "-http", raw, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  wire::Hello h = hello(0, -1);
  write(sub, t + "-nranks-negative", keyed, bytesOf(h));
  h = hello(0, 1 << 30);
  write(sub, t + "-nranks-huge", keyed, bytesOf(h));
  h = hello(7, 4);
  write(sub, t + "-rank-out-of-range", keyed, bytesOf(h));
  h = hello(1, 4);
  h.info.rank = 3;
  write(sub, t + "-info-rank-differs", keyed, bytesOf(h));
  h = hello(1, 4);
  std::memset(h.info.hostName, 'x', sizeof(h.info.hostName));
  write(sub, t + "-hostname-unterminated", keyed, bytesOf(h));
  h = hello(1, 4);
  h.timeoutMs = UINT64_MAX;
  write(sub, t + "-timeout-huge", keyed, bytesOf(h));
  h = hello(1, 4);
  h.timeoutMs = 0;
  write(sub, t + "-timeout-zero", keyed, bytesOf(h));
  h = hello(1, 4);
  h.listen.family = 9;
  write(sub, t + "-listen-family", keyed, bytesOf(h));
  h = hello(1, 4);
  h.listen.port = 0;
  write(sub, t + "-listen-port-zero", keyed, bytesOf(h));
  h = hello(1, 4);
  h.version = 77;
  write(sub, t + "-version", raw, bytesOf(h));
  h = hello(1, 4);
  h.secret[0] ^= 1;
  write(sub, t + "-wrong-secret", raw, bytesOf(h));
}

// The connection hello between two ranks: valid, truncated, and from/to the wrong ranks.
void bootstrapConnSeeds() {
  const std::string sub = "bootstrap";
  wire::ConnHello c{};
  c.magic = wire::kConnMagic;
  c.version = wire::kProtocolVersion;
  for (size_t i = 0; i < core::kSecretBytes; ++i) c.secret[i] = static_cast<uint8_t>(0xa0 + i);
  c.nonce = 0x0123456789abcdefull;
  c.from = 0;
  c.to = 1;
  write(sub, "conn-valid", fuzz::kConnHelloRaw, bytesOf(c));
  write(sub, "conn-truncated", fuzz::kConnHelloRaw, bytesOf(c).substr(0, 6));
  wire::ConnHello bad = c;
  bad.from = 1;
  write(sub, "conn-from-self", fuzz::kConnHelloKeyed, bytesOf(bad));
  bad = c;
  bad.to = 5;
  write(sub, "conn-to-other", fuzz::kConnHelloKeyed, bytesOf(bad));
  bad = c;
  bad.from = -2147483647 - 1;
  write(sub, "conn-from-min", fuzz::kConnHelloKeyed, bytesOf(bad));
}

// The root's answer, read by the pure check and by a live rank: tables, errors, hostile lengths.
void bootstrapReplySeeds() {
  const std::string sub = "bootstrap";
  // The root's answer: byte 1 is nRanks - 1 for the pure check; the live rank joins as 1 of 1.
  wire::Reply ok{wire::kReplyMagic, 0, 2, 0};
  wire::Entry e0{hello(0, 2).info, hello(0, 2).listen}, e1{hello(1, 2).info, hello(1, 2).listen};
  std::string table = bytesOf(ok) + bytesOf(e0) + bytesOf(e1);
  write(sub, "reply-valid", fuzz::kReplyTable, std::string(1, '\x01') + table);
  write(sub, "reply-truncated-table", fuzz::kReplyTable, std::string(1, '\x01') + table.substr(0, 60));
  wire::Entry swapped = e0;
  swapped.info.rank = 1;
  write(sub, "reply-entry-rank", fuzz::kReplyTable, std::string(1, '\x01') + bytesOf(ok) + bytesOf(swapped));
  wire::Reply err{wire::kReplyMagic, weftInvalidArgument, 0, 5};
  write(sub, "reply-error", fuzz::kReplyTable, std::string(1, '\x01') + bytesOf(err) + "why?!");
  wire::Reply hugeText{wire::kReplyMagic, weftTimeout, 0, 0xffffffffu};
  write(sub, "reply-huge-text", fuzz::kReplyTable, std::string(1, '\x00') + bytesOf(hugeText));
  wire::Reply oddStatus{wire::kReplyMagic, 99, 1, 0};
  write(sub, "reply-odd-status", fuzz::kReplyTable, std::string(1, '\x00') + bytesOf(oddStatus));
  wire::Reply one{wire::kReplyMagic, 0, 1, 0};
  wire::Entry self0 = e0;
  write(sub, "rank-reply-valid", fuzz::kRankReply, bytesOf(one) + bytesOf(self0));
  write(sub, "rank-reply-error", fuzz::kRankReply, bytesOf(err) + "why?!");
  write(sub, "rank-reply-huge-text", fuzz::kRankReply, bytesOf(hugeText));
  write(sub, "rank-reply-two-ranks", fuzz::kRankReply, bytesOf(ok) + bytesOf(e0) + bytesOf(e1));
  write(sub, "rank-reply-odd-status", fuzz::kRankReply, bytesOf(oddStatus));
  wire::Entry badAddr = self0;
  badAddr.listen.family = 0;
  write(sub, "rank-reply-bad-address", fuzz::kRankReply, bytesOf(one) + bytesOf(badAddr));
  write(sub, "rank-reply-garbage", fuzz::kRankReply, "HTTP/1.1 400 Bad Request\r\n\r\n");
  write(sub, "rank-reply-nothing", fuzz::kRankReply, "");
  // Progress reports before the answer: checked alone (rank 1 of 4), and read by a live rank.
  wire::Progress waiting{};
  waiting.magic = wire::kProgressMagic;
  waiting.nRanks = 4;
  waiting.joined = 3;
  waiting.missingTotal = 1;
  waiting.missingShown = 1;
  waiting.missing[0] = 3;
  write(sub, "progress-valid", fuzz::kProgress, std::string(1, '\x01') + bytesOf(waiting));
  wire::Progress self = waiting;
  write(sub, "progress-names-this-rank", fuzz::kProgress, std::string(1, '\x03') + bytesOf(self));
  wire::Progress shown = waiting;
  shown.missingShown = 1000;
  write(sub, "progress-too-many-shown", fuzz::kProgress, std::string(1, '\x01') + bytesOf(shown));
  write(sub, "progress-truncated", fuzz::kProgress, std::string(1, '\x01') + bytesOf(waiting).substr(0, 10));
  wire::Progress alone = waiting;
  alone.nRanks = 1;
  alone.joined = 1;
  alone.missingTotal = 0;
  alone.missingShown = 0;
  write(sub, "rank-reply-after-progress", fuzz::kRankReply, bytesOf(alone) + bytesOf(alone) + bytesOf(one) +
                                                                bytesOf(self0));
  write(sub, "rank-reply-garbled-progress", fuzz::kRankReply, bytesOf(waiting) + bytesOf(one) + bytesOf(self0));
  write(sub, "rank-reply-truncated-progress", fuzz::kRankReply, bytesOf(alone).substr(0, 30));
}

// The framed stream after the handshake, read by the pure check and by a live rank.
void bootstrapFrameSeeds() {
  const std::string sub = "bootstrap";
  wire::Frame user{wire::kUser, 42, 5}, gather{wire::kInternal, wire::kGather, 0};
  write(sub, "frames-valid", fuzz::kFrameStream, bytesOf(user) + "hello" + bytesOf(gather));
  wire::Frame huge{wire::kUser, 1, UINT64_MAX};
  write(sub, "frames-huge-length", fuzz::kFrameStream, bytesOf(huge) + "abc");
  wire::Frame kind{7, 1, 0}, tag{wire::kInternal, 99, 0};
  write(sub, "frames-bad-kind", fuzz::kFrameStream, bytesOf(kind));
  write(sub, "frames-bad-internal-tag", fuzz::kFrameStream, bytesOf(tag));
  write(sub, "frames-truncated-payload", fuzz::kFrameStream, bytesOf(user) + "he");
  // The same, read by a live rank from a connection that presented the secret.
  write(sub, "rank-frames-valid", fuzz::kRankFrames,
        bytesOf(user) + "hello" + bytesOf(gather) + bytesOf(user) + "again");
  write(sub, "rank-frames-huge-length", fuzz::kRankFrames, bytesOf(huge) + "abc");
  write(sub, "rank-frames-bad-kind", fuzz::kRankFrames, bytesOf(user) + "hello" + bytesOf(kind));
  write(sub, "rank-frames-bad-internal-tag", fuzz::kRankFrames, bytesOf(tag));
  write(sub, "rank-frames-truncated-header", fuzz::kRankFrames, bytesOf(user).substr(0, 7));
  write(sub, "rank-frames-truncated-payload", fuzz::kRankFrames, bytesOf(user) + "he");
  write(sub, "rank-frames-nothing", fuzz::kRankFrames, "");
  write(sub, "rank-frames-http", fuzz::kRankFrames, "GET / HTTP/1.1\r\n\r\n");
}

void bootstrapSeeds() {
  const std::string sub = "bootstrap";
  bootstrapHellos(fuzz::kHelloRaw, fuzz::kHelloKeyed, "hello");
  bootstrapHellos(fuzz::kRootRaw, fuzz::kRootKeyed, "root");
  write(sub, "root-hello-then-bytes", fuzz::kRootKeyed, bytesOf(hello(0, 3)) + "trailing bytes");
  write(sub, "root-one-rank-completes", fuzz::kRootKeyed, bytesOf(hello(0, 1)));
  write(sub, "root-huge-length", fuzz::kRootRaw, std::string(16, '\xff'));
  bootstrapConnSeeds();
  bootstrapReplySeeds();
  bootstrapFrameSeeds();
}

net::FrameHeader frame(uint32_t type, uint64_t bytes) {
  net::FrameHeader h;
  h.magic = net::kFrameMagic;
  h.type = type;
  h.bytes = bytes;
  return h;
}

void socketFrameSeeds(SocketMode mode, const char* tag) {
  const std::string sub = "socket_frame", t = tag;
  const std::string slot1k(1, '\x0a');  // slotBytesFor: 1 << 10
  write(sub, t + "-data-and-abort", mode,
        slot1k + bytesOf(frame(net::kFrameData, 10)) + "0123456789" + bytesOf(frame(net::kFrameAbort, 4)));
  write(sub, t + "-empty-data", mode, slot1k + bytesOf(frame(net::kFrameData, 0)));
  write(sub, t + "-larger-than-slot", mode, slot1k + bytesOf(frame(net::kFrameData, 1025)) + std::string(1025, 'x'));
  write(sub, t + "-huge-length", mode, slot1k + bytesOf(frame(net::kFrameData, UINT64_MAX)));
  write(sub, t + "-credit", mode, slot1k + bytesOf(frame(net::kFrameCredit, 1)));
  write(sub, t + "-credit-then-abort", mode,
        slot1k + bytesOf(frame(net::kFrameCredit, 0)) + bytesOf(frame(net::kFrameCredit, 3)) +
            bytesOf(frame(net::kFrameAbort, 2)));
  net::FrameHeader stamped = frame(net::kFrameData, 3);
  stamped.stamp = 0x0000000700c0ffeeull;
  write(sub, t + "-stamped-data", mode, slot1k + bytesOf(stamped) + "abc" + bytesOf(frame(net::kFrameData, 1)) + "d");
  write(sub, t + "-type-99", mode, slot1k + bytesOf(frame(99, 1)));
  net::FrameHeader magic = frame(net::kFrameData, 1);
  magic.magic = 0x12345678;
  write(sub, t + "-bad-magic", mode, slot1k + bytesOf(magic) + "x");
  write(sub, t + "-truncated-header", mode, slot1k + bytesOf(frame(net::kFrameData, 3)).substr(0, 9));
  write(sub, t + "-truncated-data", mode, slot1k + bytesOf(frame(net::kFrameData, 100)) + "short");
  write(sub, t + "-abort-no-culprit", mode, slot1k + bytesOf(frame(net::kFrameAbort, 0)));
  write(sub, t + "-abort-huge-culprit", mode, slot1k + bytesOf(frame(net::kFrameAbort, 1ull << 40)));
  write(sub, t + "-tiny-slots", mode,
        std::string(1, '\x00') + bytesOf(frame(net::kFrameData, 1)) + "y" + bytesOf(frame(net::kFrameData, 2)) + "zz");
}

void socketSeeds() {
  const std::string sub = "socket_frame";
  socketFrameSeeds(fuzz::kFramesToReceiver, "recv");
  socketFrameSeeds(fuzz::kFramesToSender, "send");
  socketFrameSeeds(fuzz::kLinkKeyed, "link");
  net::SocketHello h;
  h.magic = net::kSocketHelloMagic;
  h.token = 0x1234;
  write(sub, "intro-valid", fuzz::kIntroduction, bytesOf(h));
  write(sub, "intro-truncated", fuzz::kIntroduction, bytesOf(h).substr(0, 12));
  net::SocketHello other = h;
  other.senderRank = 3;
  other.lane = 2;
  write(sub, "intro-other-link", fuzz::kIntroduction, bytesOf(other));
  write(sub, "listener-intro-unknown-token", fuzz::kListenerRaw, bytesOf(h));
  write(sub, "listener-intro-truncated", fuzz::kListenerRaw, bytesOf(h).substr(0, 12));
  write(sub, "listener-http", fuzz::kListenerRaw, "GET / HTTP/1.0\r\n\r\n");
  write(sub, "listener-nothing", fuzz::kListenerRaw, "");
  write(sub, "listener-huge", fuzz::kListenerRaw, std::string(4000, '\xff'));
  net::SocketOffer o;
  o.magic = net::kSocketOfferMagic;
  o.token = 7;
  o.address = SocketAddress::loopbackV4(1);
  write(sub, "offer-valid", fuzz::kOffer, bytesOf(o));
  net::SocketOffer lane = o;
  lane.lane = 3;
  write(sub, "offer-other-lane", fuzz::kOffer, bytesOf(lane));
  write(sub, "offer-truncated", fuzz::kOffer, bytesOf(o).substr(0, 20));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR (writes DIR/bootstrap/seed-* and DIR/socket_frame/seed-*)\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  for (const char* sub : {"", "/bootstrap", "/socket_frame"}) mkdir((g_dir + sub).c_str(), 0755);
  bootstrapSeeds();
  socketSeeds();
  std::printf("wrote %d seeds under %s\n", g_written, g_dir.c_str());
  return 0;
}
