// The TCP socket transport ("socket", WEFT_NET=socket): the network fallback that works on any
// IP network. One TCP connection per edge and lane; the sender's proxy writes each posted slot
// as a FrameHeader plus the bytes, the receiver's proxy reads them into a free slot (and leaves
// them in the kernel while none is free, which is TCP's flow control doing ours).
//
// Connecting: the receiving side listens (one listener per communicator, on the interface
// WEFT_SOCKET_IFNAME selects), and sends the sender an offer through the bootstrap: its address
// and a random token. The sender connects and presents the token; a connection without a valid
// token within 10 s is dropped with a warning (strangers, port scanners).
//
// Failures: a closed or reset connection fails the link naming the peer; signalAbort() sends an
// abort frame so the peer fails at once (weftRemoteError, "reported a failure").
#ifndef WEFT_TRANSPORTS_NET_SOCKET_TRANSPORT_H_
#define WEFT_TRANSPORTS_NET_SOCKET_TRANSPORT_H_

#include <memory>
#include <mutex>

#include "transports/net/proxy.h"
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
  Status start(int selfRank);

  std::mutex startMutex_;
  std::shared_ptr<Proxy> proxy_;
  std::shared_ptr<SocketListener> listener_;
};

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_SOCKET_TRANSPORT_H_
