// The bootstrap's wire checks (core/bootstrap_check.h), field by field: a valid message of each
// kind passes, and each field set wrong is refused with a message that says which.
#include "core/bootstrap.h"
#include "core/bootstrap_check.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace weft {
namespace core {
namespace wire {
namespace {

UniqueIdInfo theId() {
  UniqueIdInfo id;
  id.root = SocketAddress::loopbackV4(4000);
  for (size_t i = 0; i < kSecretBytes; ++i) id.secret[i] = static_cast<uint8_t>(i * 7 + 1);
  id.nonce = 99;
  return id;
}

Hello goodHello() {
  UniqueIdInfo id = theId();
  Hello h{};
  h.magic = kHelloMagic;
  h.version = kProtocolVersion;
  std::memcpy(h.secret, id.secret, kSecretBytes);
  h.nonce = id.nonce;
  h.rank = 2;
  h.nRanks = 4;
  h.timeoutMs = 30000;
  h.info.rank = 2;
  std::snprintf(h.info.hostName, sizeof(h.info.hostName), "node2");
  h.listen = toWire(SocketAddress::loopbackV4(5002));
  return h;
}

// Each case breaks one field; the refusal must mention `says`.
struct Broken {
  const char* says;
  std::function<void(Hello*)> breakIt;
};

TEST(BootstrapCheck, HelloFieldByField) {
  ASSERT_TRUE(checkHello(goodHello(), theId(), -1).isOk());
  ASSERT_TRUE(checkHello(goodHello(), theId(), 4).isOk());
  const Broken cases[] = {
      {"bad magic", [](Hello* h) { h->magic = 0x20544547; }},
      {"protocol version 9", [](Hello* h) { h->version = 9; }},
      {"wrong secret", [](Hello* h) { h->secret[5] ^= 1; }},
      {"wrong secret", [](Hello* h) { h->nonce = 98; }},
      {"nRanks 0 is out of range", [](Hello* h) { h->nRanks = 0; }},
      {"nRanks -5 is out of range", [](Hello* h) { h->nRanks = -5; }},
      {"out of range (1 to", [](Hello* h) { h->nRanks = kMaxRanks + 1; }},
      {"rank 4 is out of range for 4 ranks", [](Hello* h) { h->rank = h->info.rank = 4; }},
      {"rank -1 is out of range", [](Hello* h) { h->rank = h->info.rank = -1; }},
      {"description of rank 3", [](Hello* h) { h->info.rank = 3; }},
      {"terminating zero", [](Hello* h) { std::memset(h->info.hostName, 'a', sizeof(h->info.hostName)); }},
      {"more than a year", [](Hello* h) { h->timeoutMs = UINT64_MAX; }},
      {"address family 0", [](Hello* h) { h->listen.family = 0; }},
      {"port 0", [](Hello* h) { h->listen.port = 0; }},
  };
  for (const Broken& c : cases) {
    Hello h = goodHello();
    c.breakIt(&h);
    Status s = checkHello(h, theId(), -1);
    EXPECT_FALSE(s.isOk()) << c.says;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s.message();
  }
  Status other = checkHello(goodHello(), theId(), 8);
  EXPECT_NE(other.message().find("the ranks that joined first say 8"), std::string::npos) << other.message();
  Hello mixed = goodHello();
  mixed.version = kProtocolVersion + 1;
  EXPECT_EQ(checkHello(mixed, theId(), -1).code(), weftInvalidUsage) << "a mixed build is told so";
}

TEST(BootstrapCheck, HelloPrefixRefusesStrangersOnTheirFirstBytes) {
  Hello h{};
  std::memcpy(static_cast<void*>(&h), "GET / HT", 8);  // the bytes a stranger sends first
  EXPECT_TRUE(checkHelloPrefix(h, 3).isOk()) << "three bytes say nothing yet";
  EXPECT_FALSE(checkHelloPrefix(h, 4).isOk());
  h = goodHello();
  h.version = 5;
  EXPECT_TRUE(checkHelloPrefix(h, 4).isOk());
  EXPECT_FALSE(checkHelloPrefix(h, 8).isOk());
}

TEST(BootstrapCheck, ReplyAndTable) {
  EXPECT_TRUE(checkReply(Reply{kReplyMagic, 0, 3, 0}, 3).isOk());
  EXPECT_TRUE(checkReply(Reply{kReplyMagic, weftTimeout, 0, 200}, 3).isOk());
  EXPECT_NE(checkReply(Reply{0x1234, 0, 3, 0}, 3).message().find("bad magic"), std::string::npos);
  EXPECT_NE(checkReply(Reply{kReplyMagic, 0, 2, 0}, 3).message().find("table of 2 ranks, not 3"), std::string::npos);
  EXPECT_NE(checkReply(Reply{kReplyMagic, 42, 3, 0}, 3).message().find("status 42"), std::string::npos);
  EXPECT_NE(checkReply(Reply{kReplyMagic, -1, 3, 0}, 3).message().find("status -1"), std::string::npos);
  EXPECT_NE(checkReply(Reply{kReplyMagic, weftTimeout, 0, kMaxReplyTextBytes + 1}, 3).message().find("error text"),
            std::string::npos);
  EXPECT_FALSE(checkReply(Reply{kReplyMagic, 0, 3, 5}, 3).isOk()) << "a table carries no text";

  Hello h = goodHello();
  Entry e{h.info, h.listen};
  EXPECT_TRUE(checkEntry(e, 2).isOk());
  EXPECT_NE(checkEntry(e, 1).message().find("entry 1 of the table describes rank 2"), std::string::npos);
  Entry noAddress = e;
  noAddress.listen.family = 5;
  EXPECT_NE(checkEntry(noAddress, 2).message().find("address family 5"), std::string::npos);
}

TEST(BootstrapCheck, ConnectionHello) {
  UniqueIdInfo id = theId();
  ConnHello h{};
  h.magic = kConnMagic;
  h.version = kProtocolVersion;
  std::memcpy(h.secret, id.secret, kSecretBytes);
  h.nonce = id.nonce;
  h.from = 0;
  h.to = 1;
  EXPECT_TRUE(checkConnHello(h, id, 1, 3).isOk());
  EXPECT_NE(checkConnHello(h, id, 2, 3).message().find("to rank 1, but this is rank 2"), std::string::npos);
  ConnHello self = h;
  self.from = 1;
  EXPECT_FALSE(checkConnHello(self, id, 1, 3).isOk());
  ConnHello far = h;
  far.from = 3;
  EXPECT_FALSE(checkConnHello(far, id, 1, 3).isOk());
  ConnHello secret = h;
  secret.secret[0] ^= 0x80;
  EXPECT_NE(checkConnHello(secret, id, 1, 3).message().find("wrong secret"), std::string::npos);
  ConnHello magic = h;
  magic.magic = kHelloMagic;  // a root's hello sent to a rank
  EXPECT_NE(checkConnHelloPrefix(magic, 4).message().find("bad magic"), std::string::npos);
}

TEST(BootstrapCheck, FrameHeader) {
  EXPECT_TRUE(checkFrame(Frame{kUser, -3, 100}).isOk()) << "user tags are any int";
  EXPECT_TRUE(checkFrame(Frame{kInternal, kBarrierRelease, 0}).isOk());
  EXPECT_NE(checkFrame(Frame{3, 0, 0}).message().find("kind 3"), std::string::npos);
  EXPECT_NE(checkFrame(Frame{kInternal, 77, 0}).message().find("tag 77"), std::string::npos);
  EXPECT_NE(checkFrame(Frame{kUser, 1, kMaxFrameBytes + 1}).message().find("announcing"), std::string::npos);
}

// What a real rank sends passes the root's check, even when it waits forever (its announced wait
// is capped at the longest the root accepts).
TEST(BootstrapCheck, RanksThatWaitForeverAreAccepted) {
  weftUniqueId id;
  ASSERT_TRUE(createUniqueIdAt(SocketAddress::loopbackV4(), &id).isOk());
  std::unique_ptr<Bootstrap> b[2];
  std::thread other([&] { EXPECT_TRUE(Bootstrap::create(id, 1, 2, PeerInfo(), Deadline::never(), &b[1]).isOk()); });
  Status s = Bootstrap::create(id, 0, 2, PeerInfo(), Deadline::never(), &b[0]);
  other.join();
  EXPECT_TRUE(s.isOk()) << s.message();
}

}  // namespace
}  // namespace wire
}  // namespace core
}  // namespace weft
