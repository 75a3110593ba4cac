// The TCP socket transport ("socket", WEFT_NET=socket): the network fallback that works on any
// IP network. One TCP connection per edge and lane (a SocketLink, socket_link.h); the sender's
// proxy writes each posted slot as a FrameHeader plus the bytes, the receiver's proxy reads them
// into a free slot (and leaves them in the kernel while none is free, which is TCP's flow control
// doing ours). The listener that hands accepted connections to their links is in
// socket_transport.cc.
//
// Connecting: the receiving side listens, and sends the sender an offer through the bootstrap:
// its address and a random token. The sender connects and presents the token; a connection
// without a valid token within 10 s is dropped with a warning (strangers, port scanners).
//
// Which NIC: across hosts, the one the rank's route names (ConnectRequest::nic, from the
// topology: nearest its GPU, else on its NUMA node; socket_nic.h finds its interface). The
// receiving side listens on that NIC's address (one listener per NIC per communicator) and
// offers it; the sending side binds its connection to its own NIC's address (and, as root, to
// the interface itself, SO_BINDTODEVICE) before connecting, so each channel's traffic leaves
// through the NIC its ring chose. A NIC without a usable address, and ranks on one host, use the
// default interface (WEFT_SOCKET_IFNAME selects it) with a warning naming the NIC; a peer not
// reachable through the NIC is connected by the default route, with a warning. Rails: rings
// pair NICs of one index across hosts; a sender bound to its interface whose peer listens on
// another subnet with no route through that interface gets the kernel's on-link guess (an ARP
// through the bound NIC: answered where the rails share a layer-2 network, as in the netns test;
// elsewhere connect() fails 'unreachable' after the ARP timeout, and the fallback above applies).
//
// Failures: a closed or reset connection fails the link naming the peer; signalAbort() sends an
// abort frame so the peer fails at once (weftRemoteError, "reported a failure").
#ifndef WEFT_TRANSPORTS_NET_SOCKET_TRANSPORT_H_
#define WEFT_TRANSPORTS_NET_SOCKET_TRANSPORT_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "transports/net/proxy.h"
#include "transports/net/socket_nic.h"
#include "transports/transport.h"

namespace weft {
namespace net {

class SocketListener;

class SocketTransport final : public Transport {
 public:
  SocketTransport();
  ~SocketTransport() override;
  const char* name() const override { return "socket"; }
  // Ranks on other hosts when WEFT_NET selects sockets; ranks on this host too when
  // WEFT_SHM_DISABLE=1 (their traffic then crosses the loopback or the chosen interface).
  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override;
  Status connectRecv(const ConnectRequest& req, std::unique_ptr<Connection>* out) override;
  Status connectSend(const ConnectRequest& req, std::unique_ptr<Connection>* out) override;

 private:
  // The listener for the connections `req` receives, and in *nic the NIC its connections use
  // (not usable: the default interface). Starts the proxy and the listener on first use.
  Status listenerFor(const ConnectRequest& req, std::shared_ptr<SocketListener>* out, NicInterface* nic);
  Status defaultListener(int selfRank, std::shared_ptr<SocketListener>* out);
  // Connects the sending side of `req` to `to`, from its NIC when that is usable.
  Status connectFrom(const ConnectRequest& req, const NicInterface& nic, const SocketAddress& to, Socket* out);

  std::mutex startMutex_;  // guards what follows
  std::shared_ptr<Proxy> proxy_;
  std::shared_ptr<SocketListener> listener_;  // on the default interface
  struct NicEndpoint {
    NicInterface nic;
    std::shared_ptr<SocketListener> listener;  // null when the NIC is not usable
  };
  std::map<std::string, NicEndpoint> nics_;  // by the NIC's name in the topology
};

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_SOCKET_TRANSPORT_H_
