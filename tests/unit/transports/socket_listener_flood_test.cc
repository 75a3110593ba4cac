// A flood of connections that never introduce themselves, at the socket transport's listener:
// beyond a bound the listener turns them away at once (so they cannot exhaust its descriptors)
// and the real sender still connects.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/socket.h"
#include "mailboxes.h"
#include "transports/net/socket_transport.h"
#include "transports/net/socket_wire.h"

namespace weft {
namespace net {
namespace {

ConnectRequest floodRequest(int self, int peer, PeerExchange* ex) {
  ConnectRequest r;
  r.commTag = "flood";
  r.self.rank = self;
  r.self.hostHash = 0x100 + static_cast<uint64_t>(self);
  r.peer.rank = peer;
  r.peer.hostHash = 0x100 + static_cast<uint64_t>(peer);
  r.nSlots = 2;
  r.slotBytes = 512;
  r.deadline = Deadline::afterSeconds(10);
  r.exchange = ex;
  return r;
}

TEST(SocketListener, AFloodOfSilentConnectionsIsBoundedAndTheSenderStillConnects) {
  setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  test_util::Mailboxes boxes;
  test_util::Exchange ex0(&boxes, 0), ex1(&boxes, 1);
  SocketTransport t0, t1;
  std::unique_ptr<Connection> recv, send;
  ASSERT_TRUE(t1.connectRecv(floodRequest(1, 0, &ex1), &recv).isOk());
  std::vector<char> bytes = boxes.peek(1, 0, 0x6e000);
  ASSERT_EQ(bytes.size(), sizeof(SocketOffer));
  SocketOffer offer;
  std::memcpy(&offer, bytes.data(), sizeof(offer));

  constexpr size_t kFlood = 300;
  std::vector<std::unique_ptr<Socket>> flood;
  for (size_t i = 0; i < kFlood; ++i) {
    auto s = std::make_unique<Socket>();
    ASSERT_TRUE(Socket::connect(offer.address, Deadline::afterSeconds(5), nullptr, s.get()).isOk()) << i;
    flood.push_back(std::move(s));
  }
  // The listener holds at most its bound; the rest are closed well before the 10 s hello limit.
  Deadline deadline = Deadline::afterSeconds(5);
  size_t closed = 0;
  std::vector<bool> done(kFlood, false);
  while (closed < kFlood - 256 && !deadline.expired()) {
    for (size_t i = 0; i < kFlood; ++i) {
      char c;
      size_t got = 0;
      bool eof = false;
      if (done[i]) continue;
      if (!flood[i]->recvSome(&c, 1, &got, &eof).isOk() || eof) done[i] = true, ++closed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(closed, kFlood - 256) << "the listener kept more silent connections than its bound";

  Status s = t0.connectSend(floodRequest(0, 1, &ex0), &send);
  ASSERT_TRUE(s.isOk()) << s.message();
  void* slot = nullptr;
  for (Deadline d = Deadline::afterSeconds(10); slot == nullptr && !d.expired();) slot = send->trySendSlot();
  ASSERT_NE(slot, nullptr);
  std::memcpy(slot, "through", 7);
  send->postSend(7, 0x1234);
  const void* got = nullptr;
  size_t size = 0;
  uint64_t stamp = 0;
  for (Deadline d = Deadline::afterSeconds(10); got == nullptr && !d.expired();) got = recv->tryRecv(&size, &stamp);
  ASSERT_NE(got, nullptr) << "the real sender's message did not arrive past the flood";
  EXPECT_EQ(std::string(static_cast<const char*>(got), size), "through");
  EXPECT_EQ(stamp, 0x1234u);
  recv->releaseRecv();
}

}  // namespace
}  // namespace net
}  // namespace weft
