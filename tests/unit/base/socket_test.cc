// Sockets: addresses, connect/accept/send/recv with deadlines and abort, interface choice.
// Loopback only.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "base/socket.h"
#include "fixtures/fake_interface.h"
#include "fixtures/port_holder.h"

namespace weft {
namespace {

double secondsSince(uint64_t startNs) { return static_cast<double>(nowNs() - startNs) / 1e9; }

// A connected pair over 127.0.0.1.
void connectedPair(Socket* client, Socket* server) {
  Socket listener;
  ASSERT_TRUE(Socket::listen(SocketAddress::loopbackV4(), &listener).isOk());
  ASSERT_NE(listener.localAddress().port(), 0);
  ASSERT_TRUE(Socket::connect(listener.localAddress(), Deadline::afterSeconds(5), nullptr, client).isOk());
  ASSERT_TRUE(listener.accept(Deadline::afterSeconds(5), nullptr, server).isOk());
}

using weft_test::PortHolder;

TEST(SocketAddress, ParsesAndFormatsIPv4) {
  SocketAddress a;
  ASSERT_TRUE(SocketAddress::parse("127.0.0.1:41234", &a).isOk());
  EXPECT_EQ(a.family(), AF_INET);
  EXPECT_EQ(a.port(), 41234);
  EXPECT_TRUE(a.isLoopback());
  EXPECT_EQ(a.toString(), "127.0.0.1:41234");
  EXPECT_EQ(a.hostString(), "127.0.0.1");
  SocketAddress b;
  ASSERT_TRUE(SocketAddress::parse("198.18.0.2:0", &b).isOk());
  EXPECT_EQ(b.toString(), "198.18.0.2:0");
  EXPECT_FALSE(b.isLoopback());
  EXPECT_NE(a, b);
  b.setPort(7);
  EXPECT_EQ(b.port(), 7);
}

TEST(SocketAddress, ParsesAndFormatsIPv6) {
  SocketAddress a;
  ASSERT_TRUE(SocketAddress::parse("[::1]:5000", &a).isOk());
  EXPECT_EQ(a.family(), AF_INET6);
  EXPECT_EQ(a.port(), 5000);
  EXPECT_TRUE(a.isLoopback());
  EXPECT_EQ(a.toString(), "[::1]:5000");
  SocketAddress b;
  ASSERT_TRUE(SocketAddress::parse("[fd00::2]:80", &b).isOk());
  EXPECT_EQ(b.toString(), "[fd00::2]:80");
  SocketAddress c;
  ASSERT_TRUE(SocketAddress::parse(b.toString(), &c).isOk());
  EXPECT_EQ(b, c);
}

TEST(SocketAddress, ResolvesNames) {
  SocketAddress a;
  ASSERT_TRUE(SocketAddress::parse("localhost:22", &a).isOk());
  EXPECT_TRUE(a.isLoopback());
  EXPECT_EQ(a.port(), 22);
}

TEST(SocketAddress, RejectsMalformed) {
  for (const char* bad : {"127.0.0.1", "::1:80", "[::1:80", "[::1]80", "1.2.3.4:99999", "1.2.3.4:abc", ":80",
                          "1.2.3.4:", "", "[]:80", "no-such-host.invalid:80"}) {
    SocketAddress a;
    Status s = SocketAddress::parse(bad, &a);
    EXPECT_FALSE(s.isOk()) << bad;
    EXPECT_EQ(s.code(), weftInvalidArgument) << bad;
    EXPECT_NE(s.message().find("address"), std::string::npos) << s.message();
  }
}

TEST(Socket, ConnectSendRecvBothWays) {
  Socket client, server;
  connectedPair(&client, &server);
  EXPECT_EQ(client.peerAddress(), server.localAddress());
  EXPECT_EQ(server.peerAddress(), client.localAddress());
  // Larger than the socket buffers, so that both sides must wait for each other.
  std::vector<uint32_t> out(4 << 20 >> 2), in(out.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint32_t>(i * 2654435761u);
  std::thread sender(
      [&] { EXPECT_TRUE(client.sendAll(out.data(), out.size() * 4, Deadline::afterSeconds(10)).isOk()); });
  ASSERT_TRUE(server.recvAll(in.data(), in.size() * 4, Deadline::afterSeconds(10)).isOk());
  sender.join();
  EXPECT_EQ(in, out);
  const char reply[] = "pong";
  char got[sizeof(reply)] = {0};
  ASSERT_TRUE(server.sendAll(reply, sizeof(reply), Deadline::afterSeconds(5)).isOk());
  ASSERT_TRUE(client.recvAll(got, sizeof(got), Deadline::afterSeconds(5)).isOk());
  EXPECT_STREQ(got, "pong");
  EXPECT_TRUE(client.recvAll(nullptr, 0, Deadline::afterSeconds(0)).isOk());
}

TEST(Socket, IPv6Loopback) {
  SocketAddress any6;
  ASSERT_TRUE(SocketAddress::parse("[::1]:0", &any6).isOk());
  Socket listener;
  if (!Socket::listen(any6, &listener).isOk()) GTEST_SKIP() << "no IPv6 loopback here";
  Socket client, server;
  ASSERT_TRUE(Socket::connect(listener.localAddress(), Deadline::afterSeconds(5), nullptr, &client).isOk());
  ASSERT_TRUE(listener.accept(Deadline::afterSeconds(5), nullptr, &server).isOk());
  EXPECT_EQ(client.peerAddress().family(), AF_INET6);
  uint64_t v = 0x0123456789abcdefull, w = 0;
  ASSERT_TRUE(client.sendAll(&v, sizeof(v), Deadline::afterSeconds(5)).isOk());
  ASSERT_TRUE(server.recvAll(&w, sizeof(w), Deadline::afterSeconds(5)).isOk());
  EXPECT_EQ(v, w);
}

TEST(Socket, RecvDeadlineExpires) {
  Socket client, server;
  connectedPair(&client, &server);
  char buf[16];
  uint64_t start = nowNs();
  Status s = server.recvAll(buf, sizeof(buf), Deadline::afterSeconds(0.2));
  double took = secondsSince(start);
  EXPECT_EQ(s.code(), weftTimeout);
  EXPECT_NE(s.message().find("receiving 16 bytes from 127.0.0.1:"), std::string::npos) << s.message();
  EXPECT_GE(took, 0.19);
  EXPECT_LT(took, 1.0);
}

TEST(Socket, AbortUnblocksRecv) {
  Socket client, server;
  connectedPair(&client, &server);
  std::atomic<bool> abort{false};
  uint64_t abortedAt = 0;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    abortedAt = nowNs();
    abort.store(true);
  });
  char buf[64];
  Status s = server.recvAll(buf, sizeof(buf), Deadline::never(), &abort);
  uint64_t returned = nowNs();
  aborter.join();
  EXPECT_EQ(s.code(), weftRemoteError);
  EXPECT_NE(s.message().find("aborted"), std::string::npos) << s.message();
  EXPECT_LT(static_cast<double>(returned - abortedAt) / 1e9, 0.5);
}

TEST(Socket, AbortUnblocksAcceptAndConnect) {
  Socket listener;
  ASSERT_TRUE(Socket::listen(SocketAddress::loopbackV4(), &listener).isOk());
  std::atomic<bool> abort{false};
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    abort.store(true);
  });
  uint64_t start = nowNs();
  Socket s;
  Status st = listener.accept(Deadline::never(), &abort, &s);
  EXPECT_EQ(st.code(), weftRemoteError);
  PortHolder closed;
  st = Socket::connect(SocketAddress::loopbackV4(closed.port()), Deadline::never(), &abort, &s);
  EXPECT_EQ(st.code(), weftRemoteError);
  EXPECT_LT(secondsSince(start), 0.6);
  aborter.join();
}

TEST(Socket, PeerCloseNamesThePeer) {
  Socket client, server;
  connectedPair(&client, &server);
  std::string peer = server.peerAddress().toString();
  client.close();
  char buf[64];
  Status s = server.recvAll(buf, sizeof(buf), Deadline::afterSeconds(5));
  EXPECT_EQ(s.code(), weftRemoteError);
  EXPECT_NE(s.message().find("connection to " + peer + " closed by peer while receiving 64 bytes"), std::string::npos)
      << s.message();
  // Sending into a closed connection fails too (possibly only once the reset arrives).
  std::vector<char> big(1 << 20);
  Status w = Status::ok();
  for (int i = 0; i < 20 && w.isOk(); ++i) w = server.sendAll(big.data(), big.size(), Deadline::afterSeconds(2));
  EXPECT_EQ(w.code(), weftRemoteError) << w.message();
}

TEST(Socket, ConnectRetriesUntilALateListener) {
  PortHolder holder;
  SocketAddress addr = SocketAddress::loopbackV4(holder.port());
  Socket late;
  std::thread listener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    holder.release();
    EXPECT_TRUE(Socket::listen(addr, &late).isOk());
  });
  uint64_t start = nowNs();
  Socket s;
  Status st = Socket::connect(addr, Deadline::afterSeconds(5), nullptr, &s);
  listener.join();
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_GE(secondsSince(start), 0.25);
  EXPECT_EQ(s.peerAddress(), addr);
}

TEST(Socket, ConnectGivesUpAtTheDeadline) {
  PortHolder holder;
  SocketAddress addr = SocketAddress::loopbackV4(holder.port());
  Socket s;
  uint64_t start = nowNs();
  Status st = Socket::connect(addr, Deadline::afterSeconds(0.3), nullptr, &s);
  EXPECT_EQ(st.code(), weftTimeout);
  EXPECT_NE(st.message().find("could not connect to " + addr.toString()), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("refused"), std::string::npos) << st.message();
  EXPECT_LT(secondsSince(start), 1.0);
}

// The connection leaves from the address it was told to bind to: 127.0.0.2 is another
// address of the loopback, which the kernel would not pick for 127.0.0.1 by itself.
TEST(Socket, ConnectBindsTheSourceAddress) {
  Socket listener;
  ASSERT_TRUE(Socket::listen(SocketAddress::loopbackV4(), &listener).isOk());
  SocketSource source;
  ASSERT_TRUE(SocketAddress::fromHostPort("127.0.0.2", 0, &source.address).isOk());
  Socket client, server;
  Status s = Socket::connect(listener.localAddress(), Deadline::afterSeconds(5), nullptr, &source, &client);
  ASSERT_TRUE(s.isOk()) << s.message();
  ASSERT_TRUE(listener.accept(Deadline::afterSeconds(5), nullptr, &server).isOk());
  EXPECT_EQ(client.localAddress().hostString(), "127.0.0.2");
  EXPECT_EQ(server.peerAddress().hostString(), "127.0.0.2");
  EXPECT_FALSE(source.deviceBound);  // no device asked for
}

// A source address this host does not have is an error of its own, at once, naming it.
TEST(Socket, ConnectFromAnAddressNotOnThisHostFails) {
  Socket listener;
  ASSERT_TRUE(Socket::listen(SocketAddress::loopbackV4(), &listener).isOk());
  SocketSource source;
  ASSERT_TRUE(SocketAddress::fromHostPort("192.0.2.77", 0, &source.address).isOk());  // TEST-NET-1
  Socket client;
  uint64_t start = nowNs();
  Status s = Socket::connect(listener.localAddress(), Deadline::afterSeconds(5), nullptr, &source, &client);
  ASSERT_FALSE(s.isOk());
  EXPECT_LT(secondsSince(start), 2.0);  // not retried until the deadline
  EXPECT_EQ(s.code(), weftSystemError);
  EXPECT_NE(s.message().find("192.0.2.77"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("not on this host"), std::string::npos) << s.message();
}

TEST(Socket, ConnectFromAnotherFamilyIsRefused) {
  Socket listener;
  ASSERT_TRUE(Socket::listen(SocketAddress::loopbackV4(), &listener).isOk());
  SocketSource source;
  ASSERT_TRUE(SocketAddress::fromHostPort("::1", 0, &source.address).isOk());
  Socket client;
  Status s = Socket::connect(listener.localAddress(), Deadline::afterSeconds(5), nullptr, &source, &client);
  EXPECT_EQ(s.code(), weftInvalidArgument) << s.message();
}

// Bound to the loopback interface, a connection to an address of the loopback works as root and
// as anyone (without CAP_NET_RAW only the address is bound; deviceBound says which happened).
TEST(Socket, ConnectThroughAnInterface) {
  Socket listener;
  ASSERT_TRUE(Socket::listen(SocketAddress::loopbackV4(), &listener).isOk());
  SocketSource source{SocketAddress::loopbackV4(), "lo"};
  Socket client;
  Status s = Socket::connect(listener.localAddress(), Deadline::afterSeconds(5), nullptr, &source, &client);
  ASSERT_TRUE(s.isOk()) << s.message();
  if (geteuid() == 0) {
    EXPECT_TRUE(source.deviceBound);
  }
  SocketSource gone{SocketAddress::loopbackV4(), "weftnosuchif"};
  s = Socket::connect(listener.localAddress(), Deadline::afterSeconds(5), nullptr, &gone, &client);
  if (geteuid() == 0) {
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("weftnosuchif"), std::string::npos) << s.message();
  }
}

TEST(Socket, ListenOnABusyPortFails) {
  Socket a, b;
  ASSERT_TRUE(Socket::listen(SocketAddress::loopbackV4(), &a).isOk());
  Status s = Socket::listen(a.localAddress(), &b);
  EXPECT_EQ(s.code(), weftSystemError);
  EXPECT_NE(s.message().find(a.localAddress().toString()), std::string::npos) << s.message();
}

// ---- interface choice ----------------------------------------------------------------------

using weft_test::fakeInterface;

std::vector<std::string> names(const std::vector<NetInterface>& list) {
  std::vector<std::string> out;
  for (const auto& i : list) out.push_back(i.name + "=" + i.address.hostString());
  return out;
}

using Names = std::vector<std::string>;

const std::vector<NetInterface>& fakeHost() {
  static const std::vector<NetInterface> list = {
      fakeInterface("lo", "127.0.0.1", true), fakeInterface("lo", "::1", true), fakeInterface("eth0", "fe80::1"),
      fakeInterface("eth0", "10.0.0.1"),      fakeInterface("eth1", "fd00::5"), fakeInterface("docker0", "172.17.0.1"),
      fakeInterface("ib0", "192.168.1.1"),    fakeInterface("ib1", "fe80::2"),  fakeInterface("eth10", "10.0.10.1"),
  };
  return list;
}

TEST(Interfaces, DefaultPicksTheFirstRealIPv4Interface) {
  Names got = names(matchInterfaces("", fakeHost()));
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.front(), "eth0=10.0.0.1");
  EXPECT_EQ(got, (Names{"eth0=10.0.0.1", "ib0=192.168.1.1", "eth10=10.0.10.1", "eth1=fd00::5", "docker0=172.17.0.1"}));
}

TEST(Interfaces, DefaultFallsBack) {
  std::vector<NetInterface> v6 = {fakeInterface("lo", "127.0.0.1", true), fakeInterface("eth1", "fd00::5")};
  EXPECT_EQ(names(matchInterfaces("", v6)), (Names{"eth1=fd00::5"}));
  std::vector<NetInterface> docker = {fakeInterface("lo", "127.0.0.1", true), fakeInterface("docker0", "172.17.0.1")};
  EXPECT_EQ(names(matchInterfaces("", docker)), (Names{"docker0=172.17.0.1"}));
  std::vector<NetInterface> lo = {fakeInterface("lo", "::1", true), fakeInterface("lo", "127.0.0.1", true), fakeInterface("eth0", "fe80::1")};
  EXPECT_EQ(names(matchInterfaces("", lo)), (Names{"lo=127.0.0.1"}));
  EXPECT_TRUE(matchInterfaces("", {}).empty());
}

TEST(Interfaces, PrefixesSelect) {
  EXPECT_EQ(names(matchInterfaces("ib", fakeHost())), (Names{"ib0=192.168.1.1"}));  // ib1: link-local only
  EXPECT_EQ(names(matchInterfaces("eth,ib", fakeHost())),
            (Names{"eth0=10.0.0.1", "ib0=192.168.1.1", "eth10=10.0.10.1", "eth1=fd00::5"}));
  // A prefix: eth1 also selects eth10.
  EXPECT_EQ(names(matchInterfaces(" eth1 ", fakeHost())), (Names{"eth10=10.0.10.1", "eth1=fd00::5"}));
  EXPECT_EQ(names(matchInterfaces("lo", fakeHost())), (Names{"lo=127.0.0.1"}));
  EXPECT_TRUE(matchInterfaces("wlan", fakeHost()).empty());
}

TEST(Interfaces, CaretExcludes) {
  EXPECT_EQ(names(matchInterfaces("^eth,docker", fakeHost())), (Names{"ib0=192.168.1.1", "lo=127.0.0.1"}));
  EXPECT_EQ(names(matchInterfaces("^=eth0", fakeHost())),
            (Names{"docker0=172.17.0.1", "ib0=192.168.1.1", "eth10=10.0.10.1", "eth1=fd00::5", "lo=127.0.0.1"}));
}

TEST(Interfaces, EqualsMatchesExactly) {
  EXPECT_TRUE(matchInterfaces("=eth", fakeHost()).empty());
  EXPECT_EQ(names(matchInterfaces("=eth1", fakeHost())), (Names{"eth1=fd00::5"}));
  EXPECT_EQ(names(matchInterfaces("=eth0,ib0", fakeHost())), (Names{"eth0=10.0.0.1", "ib0=192.168.1.1"}));
}

TEST(Interfaces, PrefersTheIPv4AddressOfAnInterface) {
  std::vector<NetInterface> list = {fakeInterface("eth0", "fd00::1"), fakeInterface("eth0", "10.1.1.1"), fakeInterface("eth0", "10.1.1.2")};
  EXPECT_EQ(names(matchInterfaces("eth0", list)), (Names{"eth0=10.1.1.1"}));
}

TEST(Interfaces, RealHostHasLoopback) {
  std::vector<NetInterface> all;
  ASSERT_TRUE(listInterfaces(&all).isOk());
  ASSERT_FALSE(all.empty());
  std::vector<NetInterface> lo;
  ASSERT_TRUE(findInterfaces("=lo", &lo).isOk());
  ASSERT_EQ(lo.size(), 1u);
  EXPECT_TRUE(lo[0].loopback);
  EXPECT_EQ(lo[0].address.hostString(), "127.0.0.1");
  std::vector<NetInterface> none;
  Status s = findInterfaces("=no-such-interface", &none);
  EXPECT_EQ(s.code(), weftSystemError);
  EXPECT_NE(s.message().find("lo"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("WEFT_SOCKET_IFNAME"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace weft
