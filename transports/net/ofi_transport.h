// The libfabric transport ("ofi", WEFT_NET=ofi): reliable datagram endpoints with tagged
// messages, over whichever provider the host has (verbs, efa, cxi, psm3 on clusters; tcp, shm
// anywhere). One endpoint per communicator (OfiDomain, opened on the first connect) carries all
// of its links (OfiLink: tags, credits, abort; see ofi_link.h); the proxy thread progresses it.
//
// Connecting: the receiving side posts its first receives and sends the sender an offer through
// the bootstrap (its endpoint name, provider, lane, rank, slot geometry) and returns at once.
// The sending side waits for the offer, checks it, inserts the address and introduces itself
// with a tagged hello that carries its own name, so that the receiver can send credits back.
#ifndef WEFT_TRANSPORTS_NET_OFI_TRANSPORT_H_
#define WEFT_TRANSPORTS_NET_OFI_TRANSPORT_H_

#include <memory>
#include <mutex>
#include <string>

#include "transports/net/proxy.h"
#include "transports/transport.h"

namespace weft {
namespace net {

class OfiDomain;

class OfiTransport final : public Transport {
 public:
  OfiTransport();
  ~OfiTransport() override;
  const char* name() const override { return "ofi"; }
  // Ranks on other hosts when WEFT_NET selects libfabric; ranks on this host too when
  // WEFT_SHM_DISABLE=1.
  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override;
  Status connectRecv(const ConnectRequest& req, std::unique_ptr<Connection>* out) override;
  Status connectSend(const ConnectRequest& req, std::unique_ptr<Connection>* out) override;

  // Whether the provider reads and writes device memory itself (FI_HMEM); false until the first
  // connect opened the endpoint. Without it, device buffers are staged through host slots.
  bool supportsDeviceMemory() const;
  // The provider in use ("tcp;ofi_rxm"), empty before the first connect.
  std::string provider() const;

 private:
  // Opens the domain on the first connect: on the NIC of req's rank when the topology names one.
  Status start(const ConnectRequest& req);

  mutable std::mutex startMutex_;  // guards proxy_ and domain_ while they are set
  std::shared_ptr<Proxy> proxy_;
  std::shared_ptr<OfiDomain> domain_;
};

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_OFI_TRANSPORT_H_
