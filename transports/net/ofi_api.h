// libfabric, loaded at run time (dlopen "libfabric.so.1"): one install of Weft runs on hosts
// with and without it. The structure layouts and the inline fi_* calls come from the headers
// (libfabric's API is mostly inline functions over the objects' ops tables); only the entry
// points below are looked up with dlsym.
#ifndef WEFT_TRANSPORTS_NET_OFI_API_H_
#define WEFT_TRANSPORTS_NET_OFI_API_H_

#include <rdma/fabric.h>

#include <cstdint>
#include <string>

namespace weft {
namespace net {

struct OfiApi {
  int (*getinfo)(uint32_t version, const char* node, const char* service, uint64_t flags,
                 const struct fi_info* hints, struct fi_info** info) = nullptr;
  void (*freeinfo)(struct fi_info* info) = nullptr;
  struct fi_info* (*dupinfo)(const struct fi_info* info) = nullptr;
  int (*fabric)(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context) = nullptr;
  const char* (*strerror)(int errnum) = nullptr;
  uint32_t (*version)() = nullptr;
};

// The loaded API, or nullptr (with the reason in *why) when libfabric is missing or too old.
// Loaded once per process; never unloaded.
const OfiApi* ofiApi(std::string* why = nullptr);

// The API version Weft asks for.
constexpr uint32_t kOfiVersion = FI_VERSION(1, 9);

// True when libfabric offers an RDM provider with tagged messages that drives real network
// hardware (anything but tcp, udp, sockets, shm, net and their utility layers).
bool ofiHardwareProviderAvailable();
// Provider names that libfabric implements in software over the kernel's network stack.
bool ofiSoftwareProvider(const std::string& provName);

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_OFI_API_H_
