// Network plugins (include/weft/net_v1.h): loading a vendor's ops table, and the one generic
// transport that carries a pair's traffic through any such table: a vendor's ("net-plugin"),
// or one of Weft's own built-in tables (net_builtin.h: "net-socket-v1" with
// WEFT_NET=socket-plugin, "net-ofi-v1" with WEFT_NET=ofi-plugin).
//
// WEFT_NET_PLUGIN=/path/libfoo.so names the library; it is loaded once per process, its
// weftNetPlugin_v1 table checked (size first, then version, then every entry v1 requires) and
// its init() called, each failure with a sentence that says what to do. The transport then
// takes every networked pair (ranks on other hosts, or all pairs with WEFT_SHM_DISABLE=1) ahead
// of the built-in socket and libfabric transports.
//
// On the plugin's one-directional communications the adapter runs Weft's link protocol: each
// data message is a slot's bytes followed by a FrameHeader (net_link.h), sent from and received
// into the slot itself (no staging copy); the receiver learns the sender's
// back-channel handle from the first message (a hello) and connects back, so that aborts (with
// their culprit) travel both ways.
#ifndef WEFT_TRANSPORTS_NET_NET_PLUGIN_H_
#define WEFT_TRANSPORTS_NET_NET_PLUGIN_H_

#include <memory>
#include <mutex>
#include <string>

#include "transports/net/proxy.h"
#include "transports/transport.h"
#include "weft/net_v1.h"

namespace weft {
namespace net {

struct NetPlugin {
  std::string path;
  std::string name;
  weftNet_v1_t ops;  // the v1 prefix of the plugin's table
  int devices = 0;
};

// "weftRemoteError", ... for messages (weftGetErrorString lives in src/core, above this layer).
const char* netResultName(weftResult_t r);
// Checks a table as the loader does (`path` for messages).
Status checkNetPluginTable(const weftNet_v1_t* table, const std::string& path);
// The plugin at `path`, loaded and initialised once per process (failures are remembered and
// returned again). The library is never unloaded: a plugin may own threads.
Status loadNetPlugin(const std::string& path, const NetPlugin** out);
// A built-in table (net_builtin.h), checked and started the same way, once per process.
Status builtinNetPlugin(const weftNet_v1_t* table, const NetPlugin** out);

// Where a PluginTransport takes its table from.
enum class NetTable {
  kExternal,  // the library WEFT_NET_PLUGIN names
  kSocket,    // weftNetSocket_v1(), with WEFT_NET=socket-plugin
  kOfi,       // weftNetOfi_v1(), with WEFT_NET=ofi-plugin
};

class PluginTransport final : public Transport {
 public:
  explicit PluginTransport(NetTable table = NetTable::kExternal);
  ~PluginTransport() override;
  const char* name() const override;
  // External: when WEFT_NET_PLUGIN is set. Built-in: when WEFT_NET selects it and no
  // WEFT_NET_PLUGIN is set. Either for ranks on other hosts, and on this host too with
  // WEFT_SHM_DISABLE=1. A plugin that fails to load is reported by connecting, not skipped.
  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override;
  Status connectRecv(const ConnectRequest& req, std::unique_ptr<Connection>* out) override;
  Status connectSend(const ConnectRequest& req, std::unique_ptr<Connection>* out) override;

 private:
  Status start(const NetPlugin** plugin);

  const NetTable table_;
  std::mutex startMutex_;
  std::shared_ptr<Proxy> proxy_;
};

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_NET_PLUGIN_H_
