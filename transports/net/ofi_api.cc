#include "transports/net/ofi_api.h"

#include <dlfcn.h>

#include <mutex>

#include "base/log.h"

namespace weft {
namespace net {
namespace {

struct Loaded {
  OfiApi api;
  bool ok = false;
  std::string why;
};

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded r;
    void* handle = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      r.why = std::string("libfabric.so.1 not found (") + (err ? err : "?") + "); install libfabric1";
      return r;
    }
    r.api.getinfo = reinterpret_cast<decltype(r.api.getinfo)>(dlsym(handle, "fi_getinfo"));
    r.api.freeinfo = reinterpret_cast<decltype(r.api.freeinfo)>(dlsym(handle, "fi_freeinfo"));
    r.api.dupinfo = reinterpret_cast<decltype(r.api.dupinfo)>(dlsym(handle, "fi_dupinfo"));
    r.api.fabric = reinterpret_cast<decltype(r.api.fabric)>(dlsym(handle, "fi_fabric"));
    r.api.strerror = reinterpret_cast<decltype(r.api.strerror)>(dlsym(handle, "fi_strerror"));
    r.api.version = reinterpret_cast<decltype(r.api.version)>(dlsym(handle, "fi_version"));
    if (!r.api.getinfo || !r.api.freeinfo || !r.api.dupinfo || !r.api.fabric || !r.api.strerror || !r.api.version) {
      r.why = "libfabric.so.1 lacks fi_getinfo/fi_freeinfo/fi_dupinfo/fi_fabric/fi_strerror/fi_version";
      return r;
    }
    uint32_t v = r.api.version();
    if (FI_MAJOR(v) < FI_MAJOR(kOfiVersion) ||
        (FI_MAJOR(v) == FI_MAJOR(kOfiVersion) && FI_MINOR(v) < FI_MINOR(kOfiVersion))) {
      r.why = "libfabric " + std::to_string(FI_MAJOR(v)) + "." + std::to_string(FI_MINOR(v)) +
              " is older than the 1.9 Weft needs";
      return r;
    }
    r.ok = true;
    return r;
  }();
  return l;
}

}  // namespace

const OfiApi* ofiApi(std::string* why) {
  const Loaded& l = loaded();
  if (!l.ok && why) *why = l.why;
  return l.ok ? &l.api : nullptr;
}

bool ofiSoftwareProvider(const std::string& provName) {
  // "tcp;ofi_rxm": the first component is the core provider.
  std::string core = provName.substr(0, provName.find(';'));
  return core == "tcp" || core == "udp" || core == "sockets" || core == "shm" || core == "net" || core == "sm2" ||
         core == "ofi_rxm" || core == "ofi_rxd" || core == "ofi_mrail" || core == "lnx";
}

bool ofiHardwareProviderAvailable() {
  const OfiApi* api = ofiApi();
  if (api == nullptr) return false;
  struct fi_info* hints = api->dupinfo(nullptr);
  if (hints == nullptr) return false;
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED;
  struct fi_info* list = nullptr;
  int rc = api->getinfo(kOfiVersion, nullptr, nullptr, 0, hints, &list);
  api->freeinfo(hints);
  if (rc != 0 || list == nullptr) return false;
  bool hardware = false;
  for (struct fi_info* i = list; i != nullptr && !hardware; i = i->next) {
    const char* prov = i->fabric_attr && i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "";
    hardware = !ofiSoftwareProvider(prov);
  }
  api->freeinfo(list);
  return hardware;
}

}  // namespace net
}  // namespace weft
