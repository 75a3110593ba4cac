// Weft's own network code as net_v1.h tables: the tables an external plugin would export, built
// into the library. WEFT_NET=socket-plugin (ofi-plugin) runs them through the generic transport
// (PluginTransport, net_plugin.h) exactly as it runs a vendor's library, so the built-ins are
// the proof that the ABI carries everything Weft needs. The direct transports (socket_transport.h,
// ofi_transport.h) stay the default: see docs/network.md, "Which is the default", for the measured reason.
#ifndef WEFT_TRANSPORTS_NET_NET_BUILTIN_H_
#define WEFT_TRANSPORTS_NET_NET_BUILTIN_H_

#include "weft/net_v1.h"

namespace weft {
namespace net {

// TCP on the interface WEFT_SOCKET_IFNAME selects (net_socket_v1.cc).
const weftNet_v1_t* weftNetSocket_v1();
// libfabric on the provider WEFT_OFI_PROVIDER selects, one endpoint per process (net_ofi_v1.cc).
const weftNet_v1_t* weftNetOfi_v1();

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_NET_BUILTIN_H_
