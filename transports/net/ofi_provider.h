// Which libfabric provider and domain the "ofi" transport opens: WEFT_OFI_PROVIDER when set
// (the exact provider name, "tcp;ofi_rxm", or its core part, "tcp"), else the best available
// RDM provider with tagged messages: hardware providers (verbs, efa, cxi, psm3, ...) first,
// then tcp;ofi_rxm, the other software IP providers, and shm last (it reaches this host only).
// For providers over the kernel's IP stack the domain is the interface that
// WEFT_SOCKET_IFNAME selects (the socket transport's rule), so both network transports use the
// same network; where the topology names the rank's NIC, that NIC's domain (one per rank: the
// rank's traffic to other hosts leaves from its NIC's address). Called by OfiDomain::open
// (ofi_domain.cc) once per communicator.
#ifndef WEFT_TRANSPORTS_NET_OFI_PROVIDER_H_
#define WEFT_TRANSPORTS_NET_OFI_PROVIDER_H_

#include <rdma/fabric.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "transports/net/ofi_api.h"

namespace weft {
namespace net {

// An fi_info list (or entry) that frees itself.
struct OfiInfoDeleter {
  const OfiApi* api = nullptr;
  void operator()(struct fi_info* info) const {
    if (info != nullptr && api != nullptr) api->freeinfo(info);
  }
};
using OfiInfoPtr = std::unique_ptr<struct fi_info, OfiInfoDeleter>;

struct OfiProviderChoice {
  OfiInfoPtr info;       // one entry (next == nullptr), the hints for fi_fabric/fi_domain/fi_endpoint
  std::string provider;  // "tcp;ofi_rxm"
  std::string domain;    // "eth0"
  bool hmem = false;     // the provider reads and writes device memory (FI_HMEM)
  std::string why;       // how it was chosen, for the log
};

// Lower is better: hardware, tcp;ofi_rxm, other software IP providers, shm.
int ofiProviderPreference(const std::string& provName);
// `wanted` (WEFT_OFI_PROVIDER) names `provName` exactly or by its core part ("tcp").
bool ofiProviderMatches(const std::string& wanted, const std::string& provName);
// Whether the provider's domains are IP interfaces (tcp, net, sockets, udp).
bool ofiIpProvider(const std::string& provName);

// The RDM tagged providers libfabric offers here, in order of preference, each once.
std::vector<std::string> ofiAvailableProviders(const OfiApi& api);

// Picks the provider and domain (see the file comment). `wanted` is WEFT_OFI_PROVIDER,
// `ifname` WEFT_SOCKET_IFNAME, `nic` the NIC the rank's route names (ConnectRequest::nic, ""
// none): its domain when the provider has one (an IP provider's entry on that NIC's interface,
// which WEFT_SOCKET_IFNAME must not exclude; another provider's domain of that name), else the
// rule above with a warning. Errors name what is available and what to set.
Status chooseOfiProvider(const OfiApi& api, const std::string& wanted, const std::string& ifname, int rank,
                         OfiProviderChoice* out, const std::string& nic = "");

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_OFI_PROVIDER_H_
