// The GPU peer-to-peer transport: for two GPU ranks on one host, a FIFO in the receiver's GPU
// memory, and the sender's credits in the sender's (p2p_fifo.h), that the peer GPU writes directly: through a raw pointer when both
// ranks live in one process, through a CUDA/HIP IPC handle otherwise (NVLink, xGMI or PCIe).
// Only the device executor uses it (forDevices(); ConnectRequest::runtime set,
// Connection::deviceFifo); a host-executor request is a bug in the caller and fails with
// weftInternalError.
//
// canConnect() only knows the PeerInfos: both ranks own a GPU and share a host. Whether the
// sender's GPU can reach the receiver's is asked of the runtime when connecting; a pair without
// a peer path fails to connect, and shared-memory staging is the way for it.
//
// Registered as "p2p" (priority 200, ahead of shm's 100 and the network transports') from a
// static initialiser in p2p_transport.cc.
#ifndef WEFT_TRANSPORTS_P2P_P2P_TRANSPORT_H_
#define WEFT_TRANSPORTS_P2P_P2P_TRANSPORT_H_

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "transports/p2p/p2p_fifo.h"
#include "transports/transport.h"

namespace weft {
namespace p2p {

constexpr int kP2pPriority = 200;

class P2pTransport final : public Transport {
 public:
  const char* name() const override { return "p2p"; }
  // Both ranks own a GPU (PeerInfo::device >= 0) and share a host.
  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override;
  // Only the device executor's FIFOs: the host cannot read device memory.
  bool forDevices() const override { return true; }
  // Allocates the sender's block (cursor and credits) on this rank's GPU and sends the receiver
  // where it is; returns at once. Kept for connectSend.
  Status prepareSend(const ConnectRequest& req) override;
  // Allocates the FIFO on this rank's GPU, waits for the sender's credits and maps them, then
  // sends the sender where the FIFO is.
  Status connectRecv(const ConnectRequest& req, std::unique_ptr<Connection>* out) override;
  // Waits for the receiver's offer and maps its FIFO (preparing first when prepareSend was not
  // called for this end).
  Status connectSend(const ConnectRequest& req, std::unique_ptr<Connection>* out) override;

 private:
  std::mutex mu_;
  std::map<std::tuple<int, int, int>, DeviceMemory> prepared_;  // (self, peer, lane) -> the sender's block
};

}  // namespace p2p
}  // namespace weft

#endif  // WEFT_TRANSPORTS_P2P_P2P_TRANSPORT_H_
