// The shared-memory transport: one ShmFifo (shm_fifo.h) per edge between two ranks on one host,
// whether they are separate processes or threads of one process. Segments are named from the
// communicator tag, the two ranks and the lane, so connecting needs no exchange: the receiver
// creates its FIFO, the sender waits for it by name. Registered as "shm" (priority 100) from a
// static initialiser in shm_transport.cc; src/core picks it for same-host pairs.
#ifndef WEFT_TRANSPORTS_SHM_SHM_TRANSPORT_H_
#define WEFT_TRANSPORTS_SHM_SHM_TRANSPORT_H_

#include <memory>

#include "transports/shm/shm_fifo.h"
#include "transports/transport.h"

namespace weft {
namespace shm {

class ShmTransport final : public Transport {
 public:
  const char* name() const override { return "shm"; }
  // Same host, unless WEFT_SHM_DISABLE forbids it.
  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override;
  // The sender attaches to the receiver's FIFO by its name.
  bool reconnectsWithoutExchange() const override { return true; }
  Status connectRecv(const ConnectRequest& req, std::unique_ptr<Connection>* out) override;
  Status connectSend(const ConnectRequest& req, std::unique_ptr<Connection>* out) override;
};

// The FIFO description for one side of `req` (sender: self -> peer; receiver: peer -> self).
FifoSpec fifoSpecFor(const ConnectRequest& req, ShmFifo::Role role);

}  // namespace shm
}  // namespace weft

#endif  // WEFT_TRANSPORTS_SHM_SHM_TRANSPORT_H_
