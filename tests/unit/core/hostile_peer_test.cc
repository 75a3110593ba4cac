// Strangers on the wire while a real job forms and runs: at the bootstrap root's port during
// init, and at a rank's bootstrap listener afterwards, a program that is not a rank sends
// garbage, a truncated hello, a hello-sized block of 0xff (absurd lengths and counts), nothing at
// all, or one byte every 200 ms (slowloris). The ranks (threads) must still initialise, split
// (which goes through the bootstrap) and all-reduce exactly, and the log must name every
// stranger by its address.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/socket.h"
#include "core/bootstrap.h"
#include "core/bootstrap_wire.h"
#include "weft/weft.h"

namespace weft {
namespace core {
namespace {

// One misbehaving connection; a slowloris keeps dripping from its own thread until stopped.
struct Stranger {
  std::string kind;
  Socket sock;
  std::string address;  // as the listener sees it
  std::unique_ptr<std::thread> drip;
};

class Strangers {
 public:
  ~Strangers() { stop(); }

  // Connects to `to` and behaves as `kind`: garbage, truncated, huge, silent or slowloris.
  void add(const SocketAddress& to, const std::string& kind, uint32_t magic) {
    auto s = std::make_unique<Stranger>();
    s->kind = kind;
    Status st = Socket::connect(to, Deadline::afterSeconds(5), nullptr, &s->sock);
    ASSERT_TRUE(st.isOk()) << kind << ": " << st.message();
    s->address = s->sock.localAddress().toString();
    const Deadline d = Deadline::afterSeconds(5);
    uint32_t head[2] = {magic, wire::kProtocolVersion};
    if (kind == "garbage") {
      ASSERT_TRUE(s->sock.sendAll("GET / HTTP/1.1\r\nHost: weft\r\n\r\n", 30, d).isOk());
    } else if (kind == "truncated") {
      ASSERT_TRUE(s->sock.sendAll(head, sizeof(head), d).isOk());
      ASSERT_TRUE(s->sock.sendAll("0123456789abcdef0123", 20, d).isOk());
    } else if (kind == "huge") {
      std::vector<char> block(sizeof(wire::Hello) + 64, '\xff');
      std::memcpy(block.data(), head, sizeof(head));
      ASSERT_TRUE(s->sock.sendAll(block.data(), block.size(), d).isOk());
    } else if (kind == "slowloris") {
      Stranger* raw = s.get();
      s->drip = std::make_unique<std::thread>([this, raw, head] {
        const char* p = reinterpret_cast<const char*>(head);
        for (size_t i = 0; !stop_.load(); ++i) {
          char byte = i < sizeof(head) ? p[i] : 'z';
          if (!raw->sock.sendAll(&byte, 1, Deadline::afterSeconds(1)).isOk()) return;
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
      });
    }
    all_.push_back(std::move(s));
  }

  void stop() {
    stop_.store(true);
    for (auto& s : all_) {
      if (s->drip && s->drip->joinable()) s->drip->join();
    }
  }

  // Whether the listener closed every stranger's connection within `seconds`.
  std::string stillOpen(double seconds) const {
    std::string open;
    for (const auto& s : all_) {
      char buf[256];
      Deadline d = Deadline::afterSeconds(seconds);
      bool closed = false;
      while (!closed && !d.expired()) {
        size_t got = 0;
        if (!s->sock.recvSome(buf, sizeof(buf), &got, &closed).isOk()) closed = true;
        if (!closed && got == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (!closed) open += s->kind + " (" + s->address + ") ";
    }
    return open;
  }

  const std::vector<std::unique_ptr<Stranger>>& all() const { return all_; }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::unique_ptr<Stranger>> all_;
};

const char* const kKinds[] = {"garbage", "truncated", "huge", "silent", "slowloris"};

// "bootstrap: rank R of N joined in ... listening on ADDR)" -> ADDR.
SocketAddress listenAddressFromLog(const std::string& log, int rank, int n) {
  std::string key = "bootstrap: rank " + std::to_string(rank) + " of " + std::to_string(n) + " joined";
  size_t at = log.find(key);
  if (at == std::string::npos) return SocketAddress();
  size_t on = log.find("listening on ", at);
  size_t end = log.find(')', on);
  if (on == std::string::npos || end == std::string::npos) return SocketAddress();
  SocketAddress a;
  on += std::strlen("listening on ");
  if (!SocketAddress::parse(log.substr(on, end - on), &a).isOk()) return SocketAddress();
  return a;
}

TEST(HostilePeers, StrangersAtTheRootAndAtARankDoNotStopInitOrAllReduce) {
  setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  setenv("WEFT_DEBUG", "INFO", 1);
  setenv("WEFT_DEBUG_SUBSYS", "BOOT", 1);
  reloadLogSettings();
  testing::internal::CaptureStderr();
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess) << weftGetLastError(nullptr);
  UniqueIdInfo info;
  ASSERT_TRUE(decodeUniqueId(id, &info).isOk());

  // The root meets every kind of stranger before any rank arrives.
  Strangers atRoot;
  for (const char* kind : kKinds) atRoot.add(info.root, kind, wire::kHelloMagic);

  constexpr int n = 3;
  constexpr size_t count = 1001;
  std::atomic<int> joined{0};
  std::atomic<bool> strangersReady{false};
  std::vector<std::string> errors(n);
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] {
      weftComm_t comm = nullptr;
      if (weftCommInitRank(&comm, n, id, r) != weftSuccess) {
        errors[r] = std::string("init: ") + weftGetLastError(nullptr);
        joined.fetch_add(1);
        return;
      }
      joined.fetch_add(1);
      while (!strangersReady.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      // A split goes through every rank's bootstrap listener, where the strangers now wait.
      weftComm_t sub = nullptr;
      if (weftCommSplit(comm, 0, n - 1 - r, &sub, nullptr) != weftSuccess) {
        errors[r] = std::string("split: ") + weftGetLastError(comm);
      } else {
        std::vector<float> send(count), recv(count, -1);
        for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>((r + 1) * 1000 + i % 97);
        if (weftAllReduce(send.data(), recv.data(), count, weftFloat, weftSum, sub, nullptr) != weftSuccess) {
          errors[r] = std::string("allreduce: ") + weftGetLastError(sub);
        }
        for (size_t i = 0; i < count && errors[r].empty(); ++i) {
          float want = static_cast<float>(6000 + 3 * (i % 97));  // ranks 1..3 times 1000, plus 3 x (i % 97)
          if (recv[i] != want) errors[r] = "element " + std::to_string(i) + " is " + std::to_string(recv[i]);
        }
        // Past the listeners' 5 s handshake limit, one more trip through the bootstrap drops
        // the strangers that never finished presenting themselves.
        std::this_thread::sleep_for(std::chrono::milliseconds(5500));
        weftComm_t again = nullptr;
        if (errors[r].empty() && weftCommSplit(comm, 0, r, &again, nullptr) != weftSuccess) {
          errors[r] = std::string("second split: ") + weftGetLastError(comm);
        }
        if (again != nullptr) (void)weftCommDestroy(again);
        (void)weftCommDestroy(sub);
      }
      (void)weftCommDestroy(comm);
    });
  }
  while (joined.load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // Rank 1's bootstrap listener gets the same treatment (its address is in rank 1's INFO line).
  std::string early = testing::internal::GetCapturedStderr();
  testing::internal::CaptureStderr();
  SocketAddress rank1 = listenAddressFromLog(early, 1, n);
  Strangers atRank;
  if (rank1.valid()) {
    for (const char* kind : kKinds) atRank.add(rank1, kind, wire::kConnMagic);
  }
  strangersReady.store(true);
  for (auto& t : ranks) t.join();
  std::string openAtRoot = atRoot.stillOpen(2), openAtRank = atRank.stillOpen(2);
  atRoot.stop();
  atRank.stop();
  std::string log = early + testing::internal::GetCapturedStderr();
  unsetenv("WEFT_DEBUG_SUBSYS");
  setenv("WEFT_DEBUG", "WARN", 1);
  reloadLogSettings();

  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  ASSERT_TRUE(rank1.valid()) << "rank 1's listen address is not in the log:\n" << early;
  EXPECT_EQ(openAtRoot, "") << "strangers the root left connected";
  EXPECT_EQ(openAtRank, "") << "strangers rank 1 left connected";
  for (const auto* group : {&atRoot, &atRank}) {
    for (const auto& s : group->all()) {
      EXPECT_NE(log.find("dropped the connection from " + s->address), std::string::npos)
          << "no message names the " << s->kind << " stranger at " << s->address << ":\n"
          << log;
    }
  }
}

// A flood of silent connections at a rank's bootstrap listener: the rank holds at most its bound
// (the oldest go first) and a real rank that connects after the flood still gets through.
TEST(HostilePeers, AFloodAtARankListenerDoesNotLockOutARealRank) {
  weftUniqueId id;
  ASSERT_TRUE(createUniqueIdAt(SocketAddress::loopbackV4(), &id).isOk());
  constexpr int n = 3;
  std::unique_ptr<Bootstrap> b[n];
  std::vector<std::thread> joins;
  for (int r = 0; r < n; ++r) {
    joins.emplace_back([&, r] {
      PeerInfo self;
      std::snprintf(self.hostName, sizeof(self.hostName), "flood-%d", r);
      Status s = Bootstrap::create(id, r, n, self, Deadline::afterSeconds(20), &b[r]);
      EXPECT_TRUE(s.isOk()) << "rank " << r << ": " << s.message();
    });
  }
  for (auto& t : joins) t.join();
  ASSERT_TRUE(b[0] && b[1] && b[2]);

  constexpr size_t kFlood = 400;
  std::vector<std::unique_ptr<Socket>> flood;
  for (size_t i = 0; i < kFlood; ++i) {
    auto s = std::make_unique<Socket>();
    ASSERT_TRUE(Socket::connect(b[0]->address(1), Deadline::afterSeconds(5), nullptr, s.get()).isOk()) << i;
    flood.push_back(std::move(s));
  }
  // Rank 2 has never sent to rank 1: this opens a new connection behind the flood.
  const char msg[] = "past the flood";
  std::thread sender([&] { EXPECT_TRUE(b[2]->send(1, 7, msg, sizeof(msg)).isOk()); });
  char got[sizeof(msg)] = {0};
  Status s = b[1]->recv(2, 7, got, sizeof(got), Deadline::afterSeconds(4));
  sender.join();
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_STREQ(got, msg);
  size_t closed = 0;
  for (auto& f : flood) {
    char c;
    size_t n2 = 0;
    bool eof = false;
    if (!f->recvSome(&c, 1, &n2, &eof).isOk() || eof) ++closed;
  }
  EXPECT_GE(closed, kFlood - 256) << "rank 1 kept more waiting connections than its bound";
}

// A connection that presented the secret (a rank, or whoever holds the id) stops in the middle of
// a message: the rank it sends to keeps receiving from everyone else, and the message completes
// when the rest comes.
TEST(HostilePeers, APeerStalledMidMessageHoldsUpNoOtherReceive) {
  weftUniqueId id;
  ASSERT_TRUE(createUniqueIdAt(SocketAddress::loopbackV4(), &id).isOk());
  UniqueIdInfo info;
  ASSERT_TRUE(decodeUniqueId(id, &info).isOk());
  constexpr int n = 3;
  std::unique_ptr<Bootstrap> b[n];
  std::vector<std::thread> joins;
  for (int r = 0; r < n; ++r) {
    joins.emplace_back([&, r] {
      Status s = Bootstrap::create(id, r, n, PeerInfo(), Deadline::afterSeconds(20), &b[r]);
      EXPECT_TRUE(s.isOk()) << "rank " << r << ": " << s.message();
    });
  }
  for (auto& t : joins) t.join();
  ASSERT_TRUE(b[0] && b[1] && b[2]);

  // Rank 2 has not sent to rank 1 yet, so its connection slot is free: take it by hand.
  Socket stalled;
  ASSERT_TRUE(Socket::connect(b[0]->address(1), Deadline::afterSeconds(5), nullptr, &stalled).isOk());
  wire::ConnHello h{};
  h.magic = wire::kConnMagic;
  h.version = wire::kProtocolVersion;
  std::memcpy(h.secret, info.secret, kSecretBytes);
  h.nonce = info.nonce;
  h.from = 2;
  h.to = 1;
  const char payload[] = "finally";
  wire::Frame f{wire::kUser, 9, sizeof(payload)};
  std::string frame(reinterpret_cast<const char*>(&f), sizeof(f));
  frame += std::string(payload, sizeof(payload));
  ASSERT_TRUE(stalled.sendAll(&h, sizeof(h), Deadline::afterSeconds(5)).isOk());
  ASSERT_TRUE(stalled.sendAll(frame.data(), 12, Deadline::afterSeconds(5)).isOk());  // header, then silence

  const int value = 1234;
  std::thread sender([&] { EXPECT_TRUE(b[0]->send(1, 5, &value, sizeof(value)).isOk()); });
  int got = 0;
  uint64_t start = nowNs();
  Status s = b[1]->recv(0, 5, &got, sizeof(got), Deadline::afterSeconds(5));
  sender.join();
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(got, value);
  EXPECT_LT(static_cast<double>(nowNs() - start) / 1e9, 3.0) << "a stalled peer held up another receive";

  char text[sizeof(payload)] = {0};
  s = b[1]->recv(2, 9, text, sizeof(text), Deadline::afterSeconds(0.5));
  EXPECT_EQ(s.code(), weftTimeout) << s.message();
  EXPECT_NE(s.message().find("rank 2"), std::string::npos) << s.message();
  ASSERT_TRUE(stalled.sendAll(frame.data() + 12, frame.size() - 12, Deadline::afterSeconds(5)).isOk());
  s = b[1]->recv(2, 9, text, sizeof(text), Deadline::afterSeconds(5));
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_STREQ(text, payload);
}

}  // namespace
}  // namespace core
}  // namespace weft
