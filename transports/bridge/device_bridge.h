// The device bridge: a device FIFO in pinned host memory whose far side is an ordinary host
// connection (network or shared memory), with a proxy thread moving slots between the two. It is
// the network leg of the device executor (pinned bounce buffers: the GPU's lane writes the
// pinned slot, the proxy hands the bytes to the socket or libfabric connection, and the reverse
// on receive) and the staging path between GPUs that cannot reach each other's memory (the same
// over a shared-memory FIFO).
//
// Failures cross in both directions: a lane's abort flag becomes the host connection's
// signalAbort (with the culprit), and the peer's abort or death becomes the lane's peer abort
// flag, so that lanes stop at once instead of at their time-out.
#ifndef WEFT_TRANSPORTS_BRIDGE_DEVICE_BRIDGE_H_
#define WEFT_TRANSPORTS_BRIDGE_DEVICE_BRIDGE_H_

#include <cstddef>
#include <memory>

#include "base/status.h"
#include "device/device.h"
#include "transports/net/proxy.h"
#include "transports/transport.h"

namespace weft {
namespace bridge {

// Wraps `host` (made by connectSend when `sender`, else by connectRecv) into a connection whose
// deviceFifo() the lane program uses. Its FIFO (nSlots slots of slotBytes) lives in `runtime`'s
// pinned host memory; `proxy` (started) moves the bytes until the bridge is destroyed.
Status makeDeviceBridge(std::unique_ptr<Connection> host, bool sender, device::Runtime* runtime, size_t nSlots,
                        size_t slotBytes, int peer, net::Proxy* proxy, std::unique_ptr<Connection>* out);

}  // namespace bridge
}  // namespace weft

#endif  // WEFT_TRANSPORTS_BRIDGE_DEVICE_BRIDGE_H_
