// The choice of network interface (net_interface.h): this host's up interfaces and the ones
// a WEFT_SOCKET_IFNAME / NCCL_SOCKET_IFNAME spec selects.
#include "base/net_interface.h"

#include <ifaddrs.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/log.h"

namespace weft {
namespace {

bool isLinkLocalV6(const SocketAddress& a) {
  if (a.family() != AF_INET6) return false;
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a.sockaddrPtr());
  return IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr);
}

}  // namespace

std::vector<NetInterface> matchInterfaces(const std::string& spec, const std::vector<NetInterface>& candidates) {
  // Parse the spec: [^][=]name,name,...
  std::string s = spec;
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t'; }), s.end());
  bool exclude = !s.empty() && s[0] == '^';
  if (exclude) s.erase(0, 1);
  bool exact = !s.empty() && s[0] == '=';
  if (exact) s.erase(0, 1);
  std::vector<std::string> names;
  for (size_t start = 0; start <= s.size();) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) names.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  bool byDefault = names.empty();

  auto nameMatches = [&](const std::string& name) {
    for (const auto& n : names) {
      if (exact ? name == n : name.compare(0, n.size(), n) == 0) return true;
    }
    return false;
  };
  auto isVirtual = [](const std::string& name) {
    for (const char* p : {"docker", "virbr", "veth"}) {
      if (name.compare(0, std::strlen(p), p) == 0) return true;
    }
    return false;
  };

  // One entry per interface: its first IPv4 address, else its first routable IPv6 one.
  std::vector<NetInterface> perIf;
  for (const auto& c : candidates) {
    if (!c.address.valid() || isLinkLocalV6(c.address)) continue;
    auto it = std::find_if(perIf.begin(), perIf.end(), [&](const NetInterface& x) { return x.name == c.name; });
    if (it == perIf.end()) {
      perIf.push_back(c);
    } else if (it->address.family() != AF_INET && c.address.family() == AF_INET) {
      it->address = c.address;
    }
  }

  // Rank: real interfaces, then bridges to containers (by default only), then loopback;
  // within each, IPv4 before IPv6. The sort is stable, so the host's order breaks ties.
  std::vector<std::pair<int, NetInterface>> ranked;
  for (const auto& i : perIf) {
    if (!byDefault && nameMatches(i.name) == exclude) continue;
    int cls = i.loopback ? 2 : (byDefault && isVirtual(i.name) ? 1 : 0);
    ranked.emplace_back(cls * 2 + (i.address.family() == AF_INET ? 0 : 1), i);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<NetInterface> out;
  for (auto& r : ranked) {
    // By default, loopback is only the fallback.
    if (byDefault && r.second.loopback && !out.empty()) break;
    out.push_back(std::move(r.second));
  }
  return out;
}

Status listInterfaces(std::vector<NetInterface>* out) {
  out->clear();
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return WEFT_ERROR(weftSystemError, "getifaddrs: %s", errnoText(errno).c_str());
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || !(ifa->ifa_flags & IFF_UP)) continue;
    int family = ifa->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    NetInterface i;
    i.name = ifa->ifa_name;
    i.address =
        SocketAddress::fromSockaddr(ifa->ifa_addr, family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    i.address.setPort(0);
    i.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
    out->push_back(std::move(i));
  }
  freeifaddrs(list);
  return Status::ok();
}

Status findInterfaces(const std::string& spec, std::vector<NetInterface>* out) {
  std::vector<NetInterface> all;
  WEFT_TRY(listInterfaces(&all));
  *out = matchInterfaces(spec, all);
  if (out->empty()) {
    std::string names;
    for (const auto& i : all) {
      if (names.find(i.name) != std::string::npos) continue;
      names += (names.empty() ? "" : ", ") + i.name;
    }
    return WEFT_ERROR(weftSystemError,
                      "no usable network interface matches WEFT_SOCKET_IFNAME=\"%s\" (up interfaces here: %s); "
                      "set WEFT_SOCKET_IFNAME to one of them",
                      spec.c_str(), names.empty() ? "none" : names.c_str());
  }
  WEFT_LOG(kInfo, kBoot, "bootstrap: using interface %s (%s)%s%s%s", out->front().name.c_str(),
           out->front().address.hostString().c_str(), spec.empty() ? "" : " chosen by WEFT_SOCKET_IFNAME=\"",
           spec.c_str(), spec.empty() ? "" : "\"");
  return Status::ok();
}

}  // namespace weft
