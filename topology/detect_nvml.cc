// The NVML source: NVIDIA GPUs (bus id, name, compute capability) and their active NVLinks,
// each to another GPU or to an NVSwitch. libnvidia-ml.so.1 is opened at run time; when it is
// not there, detection carries on without NVIDIA GPUs.
//
// NVML's header need not be installed to build (this VM has none): the few declarations used
// are repeated here with the layouts and values of NVML's public nvml.h (CUDA 11-13, the same
// ones NCCL's nvmlwrap.h repeats), checked against a bindgen rendering of nvml.h (Debian's
// librust-nvml-wrapper-sys-dev 0.7.0). nvmlPciInfo_t has kept this layout since NVML 2.285.
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <map>
#include <utility>

#include "base/log.h"
#include "topology/detect_sources.h"

namespace weft {
namespace topo {
namespace detect {

namespace {

typedef struct NvmlDeviceOpaque* NvmlDevice;          // nvmlDevice_t
typedef int NvmlReturn;                               // nvmlReturn_t (an enum)
constexpr NvmlReturn kNvmlSuccess = 0;                // NVML_SUCCESS
constexpr NvmlReturn kNvmlErrorDriverNotLoaded = 9;   // NVML_ERROR_DRIVER_NOT_LOADED
constexpr NvmlReturn kNvmlErrorLibraryNotFound = 12;  // NVML_ERROR_LIBRARY_NOT_FOUND
constexpr int kNvmlFeatureEnabled = 1;                // NVML_FEATURE_ENABLED (nvmlEnableState_t)
constexpr unsigned kNvmlNvLinkDeviceTypeGpu = 0;      // NVML_NVLINK_DEVICE_TYPE_GPU
constexpr unsigned kNvmlNvLinkDeviceTypeSwitch = 2;   // NVML_NVLINK_DEVICE_TYPE_SWITCH
constexpr unsigned kNvmlNvLinkMaxLinks = 18;          // NVML_NVLINK_MAX_LINKS (CUDA 12+)
constexpr unsigned kNvmlDeviceNameV2BufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE

struct NvmlPciInfo {     // nvmlPciInfo_t
  char busIdLegacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;     // device id << 16 | vendor id
  unsigned int pciSubSystemId;  // subsystem device << 16 | subsystem vendor
  char busId[32];               // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE: "00000000:18:00.0"
};
static_assert(sizeof(NvmlPciInfo) == 68, "nvmlPciInfo_t is 16 + 5*4 + 32 bytes");

struct NvmlApi {
  NvmlReturn (*init)();
  NvmlReturn (*shutdown)();
  const char* (*errorString)(NvmlReturn);
  NvmlReturn (*getCount)(unsigned int*);
  NvmlReturn (*getHandleByIndex)(unsigned int, NvmlDevice*);
  NvmlReturn (*getPciInfo)(NvmlDevice, NvmlPciInfo*);
  NvmlReturn (*getName)(NvmlDevice, char*, unsigned int);
  NvmlReturn (*getCudaComputeCapability)(NvmlDevice, int*, int*);
  NvmlReturn (*getNvLinkState)(NvmlDevice, unsigned int, int*);
  NvmlReturn (*getNvLinkRemotePciInfo)(NvmlDevice, unsigned int, NvmlPciInfo*);
  NvmlReturn (*getNvLinkRemoteDeviceType)(NvmlDevice, unsigned int, unsigned int*);  // optional
};

template <typename F>
bool bind(const SharedLibrary& lib, F* fn, std::initializer_list<const char*> names, std::string* missing) {
  for (const char* n : names) {
    if (void* p = lib.symbol(n)) {
      *fn = reinterpret_cast<F>(p);
      return true;
    }
  }
  *fn = nullptr;
  if (missing) *missing = *names.begin();
  return false;
}

std::string errorText(const NvmlApi& api, NvmlReturn r) {
  const char* s = api.errorString ? api.errorString(r) : nullptr;
  char text[96];
  std::snprintf(text, sizeof(text), "%s (NVML error %d)", s ? s : "error", r);
  return text;
}

std::string busIdOf(const NvmlPciInfo& pci) {
  std::string id = normaliseBusId(std::string(pci.busId, strnlen(pci.busId, sizeof(pci.busId))));
  if (id.empty()) id = normaliseBusId(std::string(pci.busIdLegacy, strnlen(pci.busIdLegacy, sizeof(pci.busIdLegacy))));
  return id;
}

// Binds the NVML calls; false (with r filled in) when a required one is missing. The NVLink
// calls are optional: without them GPUs are found, links are not (*haveNvLink false).
bool bindNvml(const SharedLibrary& lib, const std::string& library, NvmlApi* api, bool* haveNvLink,
              DetectSourceResult* r) {
  std::string missing;
  bool ok = bind(lib, &api->init, {"nvmlInit_v2"}, &missing) && bind(lib, &api->shutdown, {"nvmlShutdown"}, &missing) &&
            bind(lib, &api->getCount, {"nvmlDeviceGetCount_v2"}, &missing) &&
            bind(lib, &api->getHandleByIndex, {"nvmlDeviceGetHandleByIndex_v2"}, &missing) &&
            bind(lib, &api->getPciInfo, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"}, &missing) &&
            bind(lib, &api->getName, {"nvmlDeviceGetName"}, &missing) &&
            bind(lib, &api->getCudaComputeCapability, {"nvmlDeviceGetCudaComputeCapability"}, &missing);
  if (!ok) {
    r->state = SourceState::kFailed;
    r->detail = library + " lacks " + missing + " (not NVML, or an NVML older than CUDA 11): no NVIDIA GPUs detected";
    return false;
  }
  bind(lib, &api->errorString, {"nvmlErrorString"}, nullptr);
  *haveNvLink = bind(lib, &api->getNvLinkState, {"nvmlDeviceGetNvLinkState"}, nullptr) &&
                bind(lib, &api->getNvLinkRemotePciInfo,
                     {"nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemotePciInfo"}, nullptr);
  bind(lib, &api->getNvLinkRemoteDeviceType, {"nvmlDeviceGetNvLinkRemoteDeviceType"}, nullptr);
  return true;
}

// The GPUs NVML sees, into the inventory; their handles and bus ids in the same order.
struct NvmlGpus {
  std::vector<NvmlDevice> handles;
  std::vector<std::string> busIds;
  std::string problems;  // "; GPU 3: ..." per GPU that could not be read
};

NvmlGpus readGpus(const NvmlApi& api, unsigned int count, Inventory* inv) {
  NvmlGpus out;
  for (unsigned int i = 0; i < count; ++i) {
    NvmlDevice dev = nullptr;
    NvmlPciInfo pci{};
    NvmlReturn rc;
    if ((rc = api.getHandleByIndex(i, &dev)) != kNvmlSuccess || (rc = api.getPciInfo(dev, &pci)) != kNvmlSuccess) {
      out.problems += "; GPU " + std::to_string(i) + ": " + errorText(api, rc);
      continue;
    }
    GpuEntry g;
    g.busId = busIdOf(pci);
    g.vendor = GpuVendor::kNvidia;
    g.dev = static_cast<int>(i);  // NVML numbers GPUs in PCI bus order, as CUDA_DEVICE_ORDER=PCI_BUS_ID does
    char name[kNvmlDeviceNameV2BufferSize] = {};
    if (api.getName(dev, name, sizeof(name)) == kNvmlSuccess) g.model = name;
    int major = 0, minor = 0;
    if (api.getCudaComputeCapability(dev, &major, &minor) == kNvmlSuccess) {
      g.sm = major * 10 + minor;
      g.arch = "sm_" + std::to_string(g.sm);
    }
    if (g.busId.empty()) {
      out.problems += "; GPU " + std::to_string(i) + ": unparsable bus id";
      continue;
    }
    if (GpuEntry* e = inv->findGpu(g.busId)) {
      *e = g;
    } else {
      inv->gpus.push_back(g);
    }
    out.handles.push_back(dev);
    out.busIds.push_back(g.busId);
  }
  return out;
}

// GPU i's active NVLinks grouped by remote bus id: (links, the remote end is a switch).
std::map<std::string, std::pair<int, bool>> linkBundles(const NvmlApi& api, const NvmlGpus& gpus, size_t i) {
  std::map<std::string, std::pair<int, bool>> bundles;
  for (unsigned int l = 0; l < kNvmlNvLinkMaxLinks; ++l) {
    int active = 0;
    // A link index the GPU lacks answers "not supported" or "invalid argument".
    if (api.getNvLinkState(gpus.handles[i], l, &active) != kNvmlSuccess || active != kNvmlFeatureEnabled) continue;
    NvmlPciInfo remote{};
    if (api.getNvLinkRemotePciInfo(gpus.handles[i], l, &remote) != kNvmlSuccess) continue;
    // "" where NVML reports a placeholder that is no bus id: an NVSwitch it cannot name (NVLink4
    // systems), which then counts as the machine's one placeholder switch, as in NCCL's files.
    std::string target = busIdOf(remote);
    bool isGpu = false;
    for (const std::string& b : gpus.busIds) isGpu |= !target.empty() && b == target;
    bool isSwitch = !isGpu;
    unsigned int type = 0;
    if (api.getNvLinkRemoteDeviceType && api.getNvLinkRemoteDeviceType(gpus.handles[i], l, &type) == kNvmlSuccess) {
      if (type == kNvmlNvLinkDeviceTypeSwitch) isSwitch = true;
      if (type == kNvmlNvLinkDeviceTypeGpu) isSwitch = false;
      if (type != kNvmlNvLinkDeviceTypeSwitch && type != kNvmlNvLinkDeviceTypeGpu) continue;  // a POWER9 CPU, unknown
    }
    if (target.empty() && !isSwitch) continue;  // a GPU without a bus id cannot be placed
    auto& b = bundles[target];
    ++b.first;
    b.second = isSwitch;
  }
  return bundles;
}

// Every GPU's NVLink bundles into the inventory; how many were added.
size_t readLinks(const NvmlApi& api, const NvmlGpus& gpus, Inventory* inv) {
  size_t nLinks = 0;
  for (size_t i = 0; i < gpus.handles.size(); ++i) {
    for (const auto& kv : linkBundles(api, gpus, i)) {
      // Both ends of a GPU-GPU bundle report it; keep one.
      if (!kv.second.second && inv->hasGpuLink(gpus.busIds[i], kv.first)) continue;
      GpuLink link;
      link.from = gpus.busIds[i];
      link.to = kv.first;
      link.type = LinkType::kNvLink;
      link.count = kv.second.first;
      link.toSwitch = kv.second.second;
      inv->gpuLinks.push_back(link);
      ++nLinks;
      WEFT_LOG(kTrace, kGraph, "nvml: GPU %s: %d NVLink(s) to %s %s", gpus.busIds[i].c_str(), link.count,
               link.toSwitch ? "NVSwitch" : "GPU", link.to.empty() ? "(no bus id)" : link.to.c_str());
    }
  }
  return nLinks;
}

}  // namespace

DetectSourceResult readNvml(const std::string& library, Inventory* inv) {
  DetectSourceResult r;
  r.name = "nvml";
  SharedLibrary lib;
  std::string why;
  if (!lib.open(library, &why)) {
    r.state = SourceState::kAbsent;
    r.detail = "NVML not found (" + why + "): no NVIDIA GPUs/NVLinks detected";
    return r;
  }
  NvmlApi api{};
  bool haveNvLink = false;
  if (!bindNvml(lib, library, &api, &haveNvLink, &r)) return r;

  NvmlReturn rc = api.init();
  if (rc != kNvmlSuccess) {
    bool noDriver = rc == kNvmlErrorDriverNotLoaded || rc == kNvmlErrorLibraryNotFound;
    r.state = noDriver ? SourceState::kAbsent : SourceState::kFailed;
    r.detail = "nvmlInit: " + errorText(api, rc) + ": no NVIDIA GPUs/NVLinks detected";
    return r;
  }
  unsigned int count = 0;
  rc = api.getCount(&count);
  if (rc != kNvmlSuccess) {
    r.state = SourceState::kFailed;
    r.detail = "nvmlDeviceGetCount: " + errorText(api, rc);
    api.shutdown();
    return r;
  }
  // First every GPU (a link's remote end is recognised as a GPU by its bus id), then links.
  const NvmlGpus gpus = readGpus(api, count, inv);
  const size_t nLinks = haveNvLink ? readLinks(api, gpus, inv) : 0;
  api.shutdown();

  r.state = SourceState::kUsed;
  r.detail = std::to_string(gpus.handles.size()) + " GPU(s), " + std::to_string(nLinks) + " NVLink bundle(s)";
  if (!haveNvLink) r.detail += " (this NVML has no NVLink queries)";
  r.detail += gpus.problems;
  return r;
}

}  // namespace detect
}  // namespace topo
}  // namespace weft
