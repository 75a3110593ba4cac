// Which local interface the socket transport uses for a NIC the topology chose. A route names a
// NIC (topology/route.h RouteEnd::nic: the one nearest the rank's GPU, else on its NUMA node) by
// the name the topology gives it: a network interface ("eth1", as NCCL's socket NICs are named)
// or an RDMA device ("mlx5_0", whose network interface sysfs lists under
// /sys/class/infiniband/mlx5_0/device/net/). The transport listens on that interface's address
// and binds the connections it opens to it, so that each channel's traffic leaves through the
// NIC its ring chose instead of wherever the kernel's routing sends it. A NIC without a usable
// address is reported (why) and the transport falls back to its default interface.
// Pure except netdevsOfRdmaDevice (sysfs). socket_transport.cc and ofi_provider.cc (the domain of a
// NIC) call both; the tests call the first.
#ifndef WEFT_TRANSPORTS_NET_SOCKET_NIC_H_
#define WEFT_TRANSPORTS_NET_SOCKET_NIC_H_

#include <string>
#include <vector>

#include "base/socket.h"

namespace weft {
namespace net {

struct NicInterface {
  bool usable = false;
  NetInterface iface;  // when usable: the interface and its preferred address (IPv4 first)
  std::string why;     // when not: for a person, "no interface named mlx5_3 is up with an address"
};

// The interface for NIC `nic` among this host's up interfaces `up` (listInterfaces: one entry
// per address): the interface named `nic`, else one of `netdevs` (the network interfaces of
// the RDMA device `nic`), with its preferred address. `spec` (WEFT_SOCKET_IFNAME, "" unset):
// set, it must select that interface too, or the NIC is not used. Not usable (why says which):
// no NIC named, a name that is not an interface name, no such interface up with an address, or
// one the spec excludes.
NicInterface chooseNicInterface(const std::string& nic, const std::vector<NetInterface>& up,
                                const std::vector<std::string>& netdevs, const std::string& spec);

// The network interfaces of RDMA device `nic` (/sys/class/infiniband/<nic>/device/net/*), empty
// when it is none or the name is not a plain file name.
std::vector<std::string> netdevsOfRdmaDevice(const std::string& nic);

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_SOCKET_NIC_H_
