#include "transports/net/socket_nic.h"

#include <dirent.h>
#include <net/if.h>

#include <algorithm>

namespace weft {
namespace net {
namespace {

// A name the kernel could give an interface or an RDMA device: 1..IFNAMSIZ-1 characters, no
// '/', no whitespace, not "." or "..". Anything else (bytes from a topology file or a peer) is
// never looked up in sysfs.
bool plainName(const std::string& name) {
  if (name.empty() || name.size() >= IFNAMSIZ || name == "." || name == "..") return false;
  return std::none_of(name.begin(), name.end(), [](char c) { return c == '/' || c <= ' ' || c == 127; });
}

}  // namespace

NicInterface chooseNicInterface(const std::string& nic, const std::vector<NetInterface>& up,
                                const std::vector<std::string>& netdevs, const std::string& spec) {
  NicInterface out;
  if (nic.empty()) {
    out.why = "the topology names no NIC for this rank";
    return out;
  }
  if (!plainName(nic)) {
    out.why = "the NIC's name is not the name of a network interface";
    return out;
  }
  // The interface of that name first, then the RDMA device's interfaces in name order.
  std::vector<std::string> names{nic};
  for (const auto& n : netdevs) {
    if (plainName(n) && n != nic) names.push_back(n);
  }
  for (const auto& name : names) {
    std::vector<NetInterface> own;
    for (const auto& i : up) {
      if (i.name == name) own.push_back(i);
    }
    std::vector<NetInterface> best = matchInterfaces("=" + name, own);
    if (best.empty()) continue;
    if (!spec.empty() && matchInterfaces(spec, best).empty()) {
      out.why = "WEFT_SOCKET_IFNAME=\"" + spec + "\" excludes its interface " + name;
      return out;
    }
    out.usable = true;
    out.iface = best.front();
    return out;
  }
  out.why = "no interface named " + nic + (netdevs.empty() ? "" : " (nor one of its RDMA device's)") +
            " is up with an IP address on this host";
  return out;
}

std::vector<std::string> netdevsOfRdmaDevice(const std::string& nic) {
  std::vector<std::string> out;
  if (!plainName(nic)) return out;
  const std::string dir = "/sys/class/infiniband/" + nic + "/device/net";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace net
}  // namespace weft
