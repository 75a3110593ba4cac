#include "transports/net/ofi_provider.h"

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "base/socket.h"
#include "transports/net/socket_nic.h"

namespace weft {
namespace net {
namespace {

std::string provNameOf(const struct fi_info* i) {
  return i->fabric_attr && i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "";
}
std::string domainNameOf(const struct fi_info* i) {
  return i->domain_attr && i->domain_attr->name ? i->domain_attr->name : "";
}
std::string fabricNameOf(const struct fi_info* i) {
  return i->fabric_attr && i->fabric_attr->name ? i->fabric_attr->name : "";
}
std::string coreOf(const std::string& provName) { return provName.substr(0, provName.find(';')); }

// What the transport needs and what it can cope with: reliable datagrams with tagged messages;
// it passes a context with every operation (FI_CONTEXT, FI_CONTEXT2), registers what it sends
// from and receives into (the FI_MR_* modes), and serialises all calls into a domain.
OfiInfoPtr makeHints(const OfiApi& api, bool hmem) {
  OfiInfoPtr hints(api.dupinfo(nullptr), OfiInfoDeleter{&api});
  if (!hints) return hints;
  hints->caps = FI_TAGGED | (hmem ? FI_HMEM : 0);
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->mr_mode =
      FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT | (hmem ? FI_MR_HMEM : 0);
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  return hints;
}

struct InfoList {
  OfiInfoPtr head;
  std::vector<struct fi_info*> entries;
  int rc = 0;
};

InfoList getInfo(const OfiApi& api, OfiInfoPtr hints) {
  InfoList l;
  l.head = OfiInfoPtr(nullptr, OfiInfoDeleter{&api});
  if (!hints) {
    l.rc = -FI_ENOMEM;
    return l;
  }
  struct fi_info* list = nullptr;
  l.rc = api.getinfo(kOfiVersion, nullptr, nullptr, 0, hints.get(), &list);
  l.head.reset(l.rc == 0 ? list : nullptr);
  for (struct fi_info* i = l.head.get(); i != nullptr; i = i->next) l.entries.push_back(i);
  return l;
}

std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
  return text.empty() ? "(none)" : text;
}

// The entry's source address, when it is an IP address (the tcp, net, sockets, udp providers).
SocketAddress sourceAddress(const struct fi_info* i) {
  if (i->src_addr == nullptr || i->src_addrlen < sizeof(sockaddr)) return SocketAddress();
  if (i->addr_format != FI_SOCKADDR && i->addr_format != FI_SOCKADDR_IN && i->addr_format != FI_SOCKADDR_IN6) {
    return SocketAddress();
  }
  return SocketAddress::fromSockaddr(static_cast<const sockaddr*>(i->src_addr), static_cast<socklen_t>(i->src_addrlen));
}

// Among one provider's entries, the one on the interface WEFT_SOCKET_IFNAME selects: first by
// its source address, then by the domain (interface) name.
Status pickInterface(const std::vector<struct fi_info*>& entries, const std::string& ifname, int rank,
                     struct fi_info** out, std::string* why) {
  std::vector<NetInterface> ifs;
  Status found = findInterfaces(ifname, &ifs);
  if (!found.isOk() && !ifname.empty()) {
    return std::move(found).withPrefix("rank " + std::to_string(rank) + ": the libfabric transport (provider " +
                                       provNameOf(entries.front()) + "): ");
  }
  for (const NetInterface& nif : ifs) {
    for (struct fi_info* e : entries) {
      SocketAddress src = sourceAddress(e);
      if (src.valid() && src.hostString() == nif.address.hostString()) {
        *out = e;
        *why = "interface " + nif.name + " (" + nif.address.hostString() + ")";
        return Status::ok();
      }
    }
  }
  for (const NetInterface& nif : ifs) {
    for (struct fi_info* e : entries) {
      SocketAddress src = sourceAddress(e);
      if (domainNameOf(e) == nif.name && (!src.valid() || src.family() == nif.address.family())) {
        *out = e;
        *why = "interface " + nif.name;
        return Status::ok();
      }
    }
  }
  if (!ifname.empty()) {
    std::vector<std::string> domains;
    for (struct fi_info* e : entries) {
      std::string d = domainNameOf(e);
      if (std::find(domains.begin(), domains.end(), d) == domains.end()) domains.push_back(d);
    }
    return WEFT_ERROR(weftSystemError,
                      "rank %d: WEFT_SOCKET_IFNAME=%s selects %s, but libfabric provider %s offers only the domains "
                      "%s; set WEFT_SOCKET_IFNAME to one of them",
                      rank, ifname.c_str(), ifs.empty() ? "no interface" : ifs.front().name.c_str(),
                      provNameOf(entries.front()).c_str(), join(domains).c_str());
  }
  *out = entries.front();
  *why = "libfabric's first domain";
  return Status::ok();
}

// The domain of the NIC the rank's route names (socket_nic.h): for IP providers the entry on
// that NIC's interface, for the others (verbs, efa, ...) the domain of that name (libfabric
// names an RDMA device's domain after it, "mlx5_0"). *chosen untouched, and false, when there
// is none; a NIC that an IP provider cannot use is logged with the reason.
bool pickNicDomain(const std::vector<struct fi_info*>& entries, const std::string& nic, const std::string& ifname,
                   int rank, struct fi_info** chosen, std::string* why) {
  if (nic.empty()) return false;
  const std::string provider = provNameOf(entries.front());
  if (!ofiIpProvider(provider)) {
    for (struct fi_info* e : entries) {
      if (domainNameOf(e) != nic) continue;
      *chosen = e;
      *why = "domain " + nic + ", the NIC the topology chose";
      return true;
    }
    return false;
  }
  std::vector<NetInterface> up;
  NicInterface n;
  if (listInterfaces(&up).isOk()) n = chooseNicInterface(nic, up, netdevsOfRdmaDevice(nic), ifname);
  std::string found;
  if (n.usable && pickInterface(entries, "=" + n.iface.name, rank, chosen, &found).isOk()) {
    *why = found + ", of NIC " + nic + " (the topology's)";
    return true;
  }
  WEFT_LOG(kWarn, kNet,
           "rank %d: the topology routes this rank's traffic to other hosts through NIC %s, but %s; the libfabric "
           "transport (provider %s) uses the interface WEFT_SOCKET_IFNAME selects instead",
           rank, nic.c_str(),
           n.usable ? ("the provider has no domain on its interface " + n.iface.name).c_str() : n.why.c_str(),
           provider.c_str());
  return false;
}

}  // namespace

int ofiProviderPreference(const std::string& provName) {
  std::string core = coreOf(provName);
  if (!ofiSoftwareProvider(provName)) return 0;
  if (provName == "tcp;ofi_rxm") return 1;
  if (core == "tcp") return 2;
  if (core == "net") return 3;
  if (core == "sockets") return 4;
  if (core == "udp") return 5;
  if (core == "shm" || core == "sm2") return 9;
  return 6;
}

bool ofiProviderMatches(const std::string& wanted, const std::string& provName) {
  if (wanted.empty()) return true;
  if (wanted == provName) return true;
  return wanted.find(';') == std::string::npos && wanted == coreOf(provName);
}

bool ofiIpProvider(const std::string& provName) {
  std::string core = coreOf(provName);
  return core == "tcp" || core == "net" || core == "sockets" || core == "udp";
}

std::vector<std::string> ofiAvailableProviders(const OfiApi& api) {
  InfoList l = getInfo(api, makeHints(api, false));
  std::vector<std::string> names;
  for (struct fi_info* e : l.entries) {
    std::string n = provNameOf(e);
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return ofiProviderPreference(a) < ofiProviderPreference(b);
  });
  return names;
}

namespace {

// The entries of the providers `wanted` names (WEFT_OFI_PROVIDER; empty: all), the preferred
// first. Exact names first: "tcp" should not pick "tcp;ofi_rxm" when a provider is called "tcp".
std::vector<struct fi_info*> providersMatching(const std::vector<struct fi_info*>& entries, const std::string& wanted) {
  std::vector<struct fi_info*> candidates;
  for (struct fi_info* e : entries) {
    if (!wanted.empty() && provNameOf(e) == wanted) candidates.push_back(e);
  }
  if (candidates.empty()) {
    for (struct fi_info* e : entries) {
      if (ofiProviderMatches(wanted, provNameOf(e))) candidates.push_back(e);
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const fi_info* a, const fi_info* b) {
    return ofiProviderPreference(provNameOf(a)) < ofiProviderPreference(provNameOf(b));
  });
  return candidates;
}

// The same provider and domain as `chosen` once more, asking for device memory (FI_HMEM):
// providers list it only when asked. Replaces out->info and sets out->hmem when one offers it.
void askForDeviceMemory(const OfiApi& api, const std::string& provider, const struct fi_info* chosen,
                        OfiProviderChoice* out) {
  OfiInfoPtr hmemHints = makeHints(api, true);
  if (!hmemHints) return;
  hmemHints->fabric_attr->prov_name = strdup(provider.c_str());
  hmemHints->domain_attr->name = strdup(out->domain.c_str());
  InfoList withHmem = getInfo(api, std::move(hmemHints));
  for (struct fi_info* e : withHmem.entries) {
    if (fabricNameOf(e) == fabricNameOf(chosen) && (e->caps & FI_HMEM) != 0) {
      out->info = OfiInfoPtr(api.dupinfo(e), OfiInfoDeleter{&api});
      out->hmem = true;
      break;
    }
  }
}

}  // namespace

Status chooseOfiProvider(const OfiApi& api, const std::string& wanted, const std::string& ifname, int rank,
                         OfiProviderChoice* out, const std::string& nic) {
  InfoList all = getInfo(api, makeHints(api, false));
  if (all.entries.empty()) {
    return WEFT_ERROR(weftSystemError,
                      "rank %d: libfabric offers no provider with reliable datagram endpoints and tagged messages "
                      "(fi_getinfo: %s); check FI_PROVIDER and the libfabric installation (fi_info -t FI_EP_RDM), "
                      "or set WEFT_NET=socket",
                      rank, api.strerror(-all.rc));
  }
  std::vector<struct fi_info*> candidates = providersMatching(all.entries, wanted);
  if (candidates.empty()) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: WEFT_OFI_PROVIDER=%s names no libfabric provider with reliable tagged endpoints on "
                      "this host; available: %s. Set WEFT_OFI_PROVIDER to one of them, or unset it to take the best",
                      rank, wanted.c_str(), join(ofiAvailableProviders(api)).c_str());
  }
  std::string provider = provNameOf(candidates.front());
  std::vector<struct fi_info*> entries;
  for (struct fi_info* e : candidates) {
    if (provNameOf(e) == provider) entries.push_back(e);
  }
  struct fi_info* chosen = entries.front();
  std::string domainWhy = "libfabric's first domain";
  if (!pickNicDomain(entries, nic, ifname, rank, &chosen, &domainWhy) && ofiIpProvider(provider)) {
    WEFT_TRY(pickInterface(entries, ifname, rank, &chosen, &domainWhy));
  }

  out->provider = provider;
  out->domain = domainNameOf(chosen);
  out->hmem = false;
  out->info = OfiInfoPtr(api.dupinfo(chosen), OfiInfoDeleter{&api});
  askForDeviceMemory(api, provider, chosen, out);
  if (!out->info) return WEFT_ERROR(weftSystemError, "rank %d: fi_dupinfo failed (out of memory)", rank);
  out->why = (wanted.empty() ? std::string("the best available") : "WEFT_OFI_PROVIDER=" + wanted) + ", " + domainWhy;
  return Status::ok();
}

}  // namespace net
}  // namespace weft
