// The choice of network interface for the bootstrap and the socket transport:
// WEFT_SOCKET_IFNAME, with NCCL_SOCKET_IFNAME's rules.
#ifndef WEFT_BASE_NET_INTERFACE_H_
#define WEFT_BASE_NET_INTERFACE_H_

#include <string>
#include <vector>

#include "base/socket_address.h"
#include "base/status.h"

namespace weft {

// One address of one network interface.
struct NetInterface {
  std::string name;
  SocketAddress address;  // port 0
  bool loopback = false;
};

// The interfaces among `candidates` (one entry per address of each up interface) that `spec`
// selects, one entry per interface with its preferred address (IPv4 first, never link-local
// IPv6), best first. spec follows NCCL_SOCKET_IFNAME: comma-separated name prefixes; a leading
// '^' excludes them instead; a leading '=' (after the '^', if any) makes them exact names.
// Empty spec: the first interface that is not loopback (nor docker/virbr/veth) and has an IPv4
// address, else one with an IPv6 address, else loopback.
std::vector<NetInterface> matchInterfaces(const std::string& spec, const std::vector<NetInterface>& candidates);

// The up interfaces of this host, one entry per IPv4/IPv6 address.
Status listInterfaces(std::vector<NetInterface>* out);

// matchInterfaces() over this host's interfaces; an error naming the interfaces that exist when
// none matches. Logs the choice at INFO (kBoot).
Status findInterfaces(const std::string& spec, std::vector<NetInterface>* out);

}  // namespace weft

#endif  // WEFT_BASE_NET_INTERFACE_H_
