// Which network transport this process uses between hosts (WEFT_NET): the TCP socket
// transport or libfabric. "auto" picks libfabric when it offers a hardware provider (verbs,
// efa, cxi, psm3, ...), and sockets otherwise: over plain Ethernet libfabric's tcp provider
// adds a layer without adding speed. Every rank must resolve to the same kind; the transports'
// connection handshakes report a mismatch.
//
// "socket-plugin" and "ofi-plugin" run the same network code through its net_v1.h table
// (net_builtin.h) and the generic transport an external plugin gets (net_plugin.h) instead of
// the direct transports: the proof that the ABI is sufficient, and a way to compare them.
#ifndef WEFT_TRANSPORTS_NET_NET_SELECT_H_
#define WEFT_TRANSPORTS_NET_NET_SELECT_H_

#include <string>

namespace weft {
namespace net {

enum class NetKind { kSocket, kOfi, kSocketPlugin, kOfiPlugin };

// Parsed once per process (an unknown value warns and means auto).
NetKind selectedNet();
const char* netKindName(NetKind kind);

// From WEFT_NET's text and whether libfabric has a hardware provider; for tests.
NetKind resolveNet(const std::string& value, bool ofiHardware, bool* valid);

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_NET_SELECT_H_
