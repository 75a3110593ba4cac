// libfabric (loaded at run time): the fabric providers each NIC offers (verbs, efa, cxi, tcp,
// shm, ...), and NICs that only libfabric reports. The header gives the structure layouts;
// the library itself is optional, so its functions are looked up with dlsym.
#include <rdma/fabric.h>

#include <map>
#include <set>
#include <string>

#include "base/log.h"
#include "topology/detect_sources.h"

namespace weft {
namespace topo {
namespace detect {
namespace {

using GetInfoFn = int (*)(uint32_t, const char*, const char*, uint64_t, const struct fi_info*, struct fi_info**);
using FreeInfoFn = void (*)(struct fi_info*);
using DupInfoFn = struct fi_info* (*)(const struct fi_info*);

std::string busIdOf(const struct fid_nic* nic) {
  if (nic == nullptr || nic->bus_attr == nullptr || nic->bus_attr->bus_type != FI_BUS_PCI) return "";
  const fi_pci_attr& p = nic->bus_attr->attr.pci;
  char text[32];
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%x", p.domain_id, p.bus_id, p.device_id, p.function_id);
  return text;
}

// Records each provider under its domain, and adds to inv->ports the NICs libfabric knows by
// PCI address that no other source reported. Returns how many it added.
int addFabricNics(const struct fi_info* list, std::map<std::string, std::set<std::string>>* providers, Inventory* inv) {
  int added = 0;
  for (const struct fi_info* i = list; i != nullptr; i = i->next) {
    std::string prov = i->fabric_attr && i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "?";
    std::string domain = i->domain_attr && i->domain_attr->name ? i->domain_attr->name : "";
    (*providers)[domain].insert(prov);
    std::string busId = busIdOf(i->nic);
    if (busId.empty() || domain.empty()) continue;
    bool known = false;
    for (const NetPort& p : inv->ports) known = known || p.busId == busId || p.name == domain;
    if (known) continue;
    NetPort port;
    port.name = domain;
    port.kind = PortKind::kRdma;
    port.busId = busId;
    if (i->nic->link_attr) {
      port.speedMbps = static_cast<double>(i->nic->link_attr->speed) / 1e6;  // bits/s -> Mb/s
      port.up = i->nic->link_attr->state == FI_LINK_UP;
    }
    inv->ports.push_back(port);
    ++added;
  }
  return added;
}

// The report's detail: "domain: prov,prov; ..." and the count of NICs only libfabric reported.
std::string providerSummary(const std::map<std::string, std::set<std::string>>& providers, int added) {
  std::string detail;
  for (const auto& [domain, provs] : providers) {
    std::string names;
    for (const auto& p : provs) names += (names.empty() ? "" : ",") + p;
    detail += (detail.empty() ? "" : "; ") + (domain.empty() ? std::string("-") : domain) + ": " + names;
  }
  if (added > 0) detail += "; " + std::to_string(added) + " NIC(s) only libfabric reported";
  return detail;
}

}  // namespace

DetectSourceResult readLibfabric(const std::string& library, Inventory* inv) {
  DetectSourceResult r;
  r.name = "libfabric";
  SharedLibrary lib;
  std::string why;
  if (!lib.open(library, &why)) {
    r.state = SourceState::kAbsent;
    r.detail = "libfabric not found (" + why + "): no fabric providers listed";
    WEFT_LOG(kInfo, kGraph, "%s", r.detail.c_str());
    return r;
  }
  auto getInfo = reinterpret_cast<GetInfoFn>(lib.symbol("fi_getinfo"));
  auto freeInfo = reinterpret_cast<FreeInfoFn>(lib.symbol("fi_freeinfo"));
  auto dupInfo = reinterpret_cast<DupInfoFn>(lib.symbol("fi_dupinfo"));
  if (getInfo == nullptr || freeInfo == nullptr || dupInfo == nullptr) {
    r.state = SourceState::kFailed;
    r.detail = lib.name() + " lacks fi_getinfo/fi_freeinfo/fi_dupinfo";
    WEFT_LOG(kWarn, kGraph, "%s", r.detail.c_str());
    return r;
  }
  // Reliable datagram endpoints with tagged messages: what the network transport uses.
  struct fi_info* hints = dupInfo(nullptr);
  if (hints == nullptr) {
    r.state = SourceState::kFailed;
    r.detail = "fi_dupinfo failed";
    return r;
  }
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED | FI_MSG;
  struct fi_info* list = nullptr;
  int rc = getInfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &list);
  freeInfo(hints);
  if (rc != 0 || list == nullptr) {
    r.state = SourceState::kAbsent;
    r.detail = "fi_getinfo found no RDM provider (" + std::to_string(rc) + ")";
    WEFT_LOG(kInfo, kGraph, "libfabric: %s", r.detail.c_str());
    return r;
  }
  // Providers per domain (a NIC or a netdev name), and NICs libfabric knows by PCI address.
  std::map<std::string, std::set<std::string>> providers;
  int added = addFabricNics(list, &providers, inv);
  freeInfo(list);
  r.state = SourceState::kUsed;
  r.detail = providerSummary(providers, added);
  return r;
}

}  // namespace detect
}  // namespace topo
}  // namespace weft
