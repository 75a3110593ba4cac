#include "transports/net/net_select.h"

#include <strings.h>

#include "base/log.h"
#include "base/params.h"
#include "transports/net/ofi_api.h"

namespace weft {
namespace net {

NetKind resolveNet(const std::string& value, bool ofiHardware, bool* valid) {
  *valid = true;
  if (strcasecmp(value.c_str(), "socket") == 0) return NetKind::kSocket;
  if (strcasecmp(value.c_str(), "ofi") == 0 || strcasecmp(value.c_str(), "libfabric") == 0) return NetKind::kOfi;
  if (strcasecmp(value.c_str(), "socket-plugin") == 0) return NetKind::kSocketPlugin;
  if (strcasecmp(value.c_str(), "ofi-plugin") == 0) return NetKind::kOfiPlugin;
  *valid = value.empty() || strcasecmp(value.c_str(), "auto") == 0;
  return ofiHardware ? NetKind::kOfi : NetKind::kSocket;
}

NetKind selectedNet() {
  static const NetKind kind = [] {
    std::string value = params::Net();
    bool valid = true;
    NetKind named = resolveNet(value, false, &valid);
    bool automatic = !valid || value.empty() || strcasecmp(value.c_str(), "auto") == 0;
    bool hardware = automatic && ofiHardwareProviderAvailable();
    NetKind k = automatic ? resolveNet("auto", hardware, &valid) : named;
    if (!valid) {
      WEFT_LOG(kWarn, kEnv, "WEFT_NET=%s is not socket, ofi, socket-plugin, ofi-plugin or auto; using auto (%s)", value.c_str(), netKindName(k));
    }
    WEFT_LOG(kInfo, kNet, "network transport: %s (WEFT_NET=%s%s)", netKindName(k), value.c_str(),
             automatic ? (hardware ? ": libfabric has a hardware provider" : ": no libfabric hardware provider") : "");
    return k;
  }();
  return kind;
}

const char* netKindName(NetKind kind) {
  switch (kind) {
    case NetKind::kOfi:
      return "ofi (libfabric)";
    case NetKind::kSocketPlugin:
      return "socket-plugin (TCP through its net_v1.h table)";
    case NetKind::kOfiPlugin:
      return "ofi-plugin (libfabric through its net_v1.h table)";
    case NetKind::kSocket:
      break;
  }
  return "socket (TCP)";
}

}  // namespace net
}  // namespace weft
