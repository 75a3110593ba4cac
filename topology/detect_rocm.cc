// The ROCm sources: AMD GPUs and their xGMI links.
//
// KFD sysfs (always tried; needs only the amdgpu driver):
//   /sys/class/kfd/kfd/topology/nodes/<n>/properties      "key value" lines; a GPU node has a
//       non-zero gfx_target_version (major*10000 + minor*100 + stepping: 90402 = gfx942),
//       its PCI function in domain and location_id (bus << 8 | device << 3 | function).
//   /sys/class/kfd/kfd/topology/nodes/<n>/io_links/<m>/properties   type, node_from, node_to,
//       weight, min_bandwidth, max_bandwidth.
// io_link type is the kernel's CRAT_IOLINK_TYPE_* (drivers/gpu/drm/amd/amdkfd/kfd_crat.h),
// repeated by libhsakmt as HSA_IOLINK_TYPE_*: 2 = PCIe, 11 = xGMI. A one-hop xGMI link has
// weight 15 (13 or 41 in some partition modes); the weight is logged, not needed. Several
// xGMI links between a pair appear as one io_link whose max_bandwidth is a multiple of its
// min_bandwidth; RCCL counts the links as max/min (via rsmi_minmax_bandwidth_get), as here.
//
// ROCm SMI (optional, librocm_smi64 loaded at run time): rsmi_topo_get_link_type per GPU pair
// (RSMI_IOLINK_TYPE_XGMI = 2 in rocm_smi.h's own enum). It reads the same KFD tree, so it
// only adds links KFD did not list (a container that hides part of /sys, say).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "base/log.h"
#include "topology/detect_sources.h"

namespace weft {
namespace topo {
namespace detect {

namespace fs = std::filesystem;

std::string gfxArchFromTargetVersion(uint32_t version) {
  uint32_t major = version / 10000;
  uint32_t minor = (version / 100) % 100;
  uint32_t stepping = version % 100;
  // Minor and stepping are one hex digit each in a gfx name (gfx90a = 9.0.10).
  if (major == 0 || minor > 15 || stepping > 15) return "";
  char text[32];
  std::snprintf(text, sizeof(text), "gfx%u%x%x", major, minor, stepping);
  return text;
}

namespace {

using Properties = std::map<std::string, uint64_t>;

bool readProperties(const std::string& path, Properties* out) {
  std::string text;
  if (!readTextFile(path, &text)) return false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key, value;
    if (!(ls >> key >> value)) continue;
    (*out)[key] = std::strtoull(value.c_str(), nullptr, 10);
  }
  return true;
}

uint64_t prop(const Properties& p, const char* key) {
  auto it = p.find(key);
  return it == p.end() ? 0 : it->second;
}

std::vector<int> numericEntries(const std::string& dir) {
  std::vector<int> ids;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    char* tail = nullptr;
    long v = std::strtol(name.c_str(), &tail, 10);
    if (!name.empty() && *tail == '\0' && v >= 0) ids.push_back(static_cast<int>(v));
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Links in a bundle: max/min bandwidth when both are known and the ratio is sane, else 1.
int linkCount(uint64_t minBw, uint64_t maxBw) {
  if (minBw == 0 || maxBw < minBw) return 1;
  uint64_t n = maxBw / minBw;
  return n >= 1 && n <= 16 ? static_cast<int>(n) : 1;
}

// The GPU nodes of the KFD topology (CPU nodes skipped), added to inv->gpus in HIP's order;
// *gpuOfNode maps each GPU node (partitions included) to its bus id. Returns how many GPUs.
int readKfdGpus(const std::string& nodesDir, std::map<int, std::string>* gpuOfNode, std::string* problems,
                Inventory* inv) {
  int dev = 0;
  for (int node : numericEntries(nodesDir)) {
    Properties p;
    std::string nodeDir = nodesDir + "/" + std::to_string(node);
    if (!readProperties(nodeDir + "/properties", &p)) {
      *problems += "; node " + std::to_string(node) + ": properties unreadable";
      continue;
    }
    uint32_t target = static_cast<uint32_t>(prop(p, "gfx_target_version"));
    if (target == 0) continue;  // a CPU node
    uint64_t loc = prop(p, "location_id");
    char busId[32];
    std::snprintf(busId, sizeof(busId), "%04x:%02x:%02x.%x", static_cast<unsigned>(prop(p, "domain") & 0xffff),
                  static_cast<unsigned>((loc >> 8) & 0xff), static_cast<unsigned>((loc >> 3) & 0x1f),
                  static_cast<unsigned>(loc & 0x7));
    GpuEntry g;
    g.busId = busId;
    g.vendor = GpuVendor::kAmd;
    g.arch = gfxArchFromTargetVersion(target);
    if (inv->findGpu(g.busId) != nullptr) {
      // A partition of a GPU already listed (MI300 in CPX mode shares the function): one node.
      WEFT_LOG(kTrace, kGraph, "KFD node %d: another partition of %s", node, busId);
      (*gpuOfNode)[node] = g.busId;
      continue;
    }
    g.dev = dev++;  // HIP numbers GPUs in KFD node order
    (*gpuOfNode)[node] = g.busId;
    inv->gpus.push_back(g);
  }
  return dev;
}

// The xGMI io_links between the GPU nodes, once per pair, added to inv->gpuLinks. Returns how many.
size_t readXgmiLinks(const std::string& nodesDir, const std::map<int, std::string>& gpuOfNode, Inventory* inv) {
  size_t nLinks = 0;
  for (const auto& kv : gpuOfNode) {
    std::string linksDir = nodesDir + "/" + std::to_string(kv.first) + "/io_links";
    for (int link : numericEntries(linksDir)) {
      Properties p;
      if (!readProperties(linksDir + "/" + std::to_string(link) + "/properties", &p)) continue;
      if (prop(p, "type") != static_cast<uint64_t>(kKfdIoLinkXgmi)) continue;  // PCIe to the CPU, etc.
      auto to = gpuOfNode.find(static_cast<int>(prop(p, "node_to")));
      if (to == gpuOfNode.end() || to->second == kv.second) continue;
      if (inv->hasGpuLink(kv.second, to->second)) continue;  // the other end listed it
      GpuLink l;
      l.from = kv.second;
      l.to = to->second;
      l.type = LinkType::kXgmi;
      l.count = linkCount(prop(p, "min_bandwidth"), prop(p, "max_bandwidth"));
      inv->gpuLinks.push_back(l);
      ++nLinks;
      WEFT_LOG(kTrace, kGraph, "KFD: xGMI %s - %s, weight %llu, %d link(s)", l.from.c_str(), l.to.c_str(),
               static_cast<unsigned long long>(prop(p, "weight")), l.count);
    }
  }
  return nLinks;
}

}  // namespace

DetectSourceResult readKfd(const std::string& root, Inventory* inv) {
  DetectSourceResult r;
  r.name = "rocm-kfd";
  std::string nodesDir = root + "/sys/class/kfd/kfd/topology/nodes";
  std::error_code ec;
  if (!fs::exists(nodesDir, ec)) {
    r.state = SourceState::kAbsent;
    r.detail = "no KFD topology at " + nodesDir + " (amdgpu driver not loaded): no AMD GPUs/xGMI links detected";
    return r;
  }

  std::map<int, std::string> gpuOfNode;  // KFD node -> GPU bus id
  std::string problems;
  int dev = readKfdGpus(nodesDir, &gpuOfNode, &problems, inv);
  size_t nLinks = readXgmiLinks(nodesDir, gpuOfNode, inv);
  r.state = SourceState::kUsed;
  r.detail = std::to_string(dev) + " GPU(s), " + std::to_string(nLinks) + " xGMI bundle(s)" + problems;
  return r;
}

namespace {

// Declarations from rocm_smi.h (not needed at build time).
typedef int RsmiStatus;  // rsmi_status_t; RSMI_STATUS_SUCCESS = 0
constexpr RsmiStatus kRsmiSuccess = 0;
constexpr int kRsmiIoLinkTypeXgmi = 2;  // RSMI_IOLINK_TYPE_XGMI (RSMI_IO_LINK_TYPE, an enum)

struct RsmiApi {
  RsmiStatus (*init)(uint64_t);
  RsmiStatus (*shutDown)();
  RsmiStatus (*numDevices)(uint32_t*);
  RsmiStatus (*pciId)(uint32_t, uint64_t*);
  RsmiStatus (*linkType)(uint32_t, uint32_t, uint64_t*, int*);
  RsmiStatus (*minmaxBandwidth)(uint32_t, uint32_t, uint64_t*, uint64_t*);  // optional
};

// Opens `library`, else its versioned names (.so.7 ...), else under /opt/rocm/lib; *why says
// why the name asked for did not open.
bool openRocmSmi(const std::string& library, SharedLibrary* lib, std::string* why) {
  std::vector<std::string> names = {library};
  if (library.size() > 3 && library.compare(library.size() - 3, 3, ".so") == 0) {
    for (const char* v : {".7", ".6", ".5", ".1"}) names.push_back(library + v);
  }
  if (library.find('/') == std::string::npos) names.push_back("/opt/rocm/lib/" + library);
  for (const std::string& n : names) {
    std::string err;
    if (lib->open(n, &err)) return true;
    if (why->empty()) *why = err;  // the name asked for says most
  }
  return false;
}

// Every monitored GPU's bus id ("" where ROCm SMI cannot say), each added to the inventory
// unless KFD listed it already.
std::vector<std::string> readGpus(const RsmiApi& api, uint32_t n, Inventory* inv) {
  std::vector<std::string> busIds(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t bdf = 0;
    if (api.pciId(i, &bdf) != kRsmiSuccess) continue;
    char text[32];
    // BDFID = domain << 32 | bus << 8 | device << 3 | function.
    std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%x", static_cast<unsigned>((bdf >> 32) & 0xffff),
                  static_cast<unsigned>((bdf >> 8) & 0xff), static_cast<unsigned>((bdf >> 3) & 0x1f),
                  static_cast<unsigned>(bdf & 0x7));
    busIds[i] = text;
    if (inv->findGpu(text) == nullptr) {
      GpuEntry g;
      g.busId = text;
      g.vendor = GpuVendor::kAmd;
      g.dev = static_cast<int>(i);
      inv->gpus.push_back(g);
    }
  }
  return busIds;
}

// The direct (one hop) xGMI bundles KFD had not listed, into the inventory; how many.
size_t readXgmiLinks(const RsmiApi& api, const std::vector<std::string>& busIds, Inventory* inv) {
  const uint32_t n = static_cast<uint32_t>(busIds.size());
  size_t added = 0;
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j = i + 1; j < n; ++j) {
      if (busIds[i].empty() || busIds[j].empty() || inv->hasGpuLink(busIds[i], busIds[j])) continue;
      uint64_t hops = 0;
      int type = 0;
      if (api.linkType(i, j, &hops, &type) != kRsmiSuccess || type != kRsmiIoLinkTypeXgmi || hops != 1) continue;
      uint64_t minBw = 0, maxBw = 0;
      if (api.minmaxBandwidth) api.minmaxBandwidth(i, j, &minBw, &maxBw);
      GpuLink l;
      l.from = busIds[i];
      l.to = busIds[j];
      l.type = LinkType::kXgmi;
      l.count = linkCount(minBw, maxBw);
      inv->gpuLinks.push_back(l);
      ++added;
    }
  }
  return added;
}

}  // namespace

DetectSourceResult readRocmSmi(const std::string& library, Inventory* inv) {
  DetectSourceResult r;
  r.name = "rocm-smi";
  SharedLibrary lib;
  std::string why;
  if (!openRocmSmi(library, &lib, &why)) {
    r.state = SourceState::kAbsent;
    r.detail = "ROCm SMI not found (" + why + "); KFD sysfs alone gives AMD GPUs and links";
    return r;
  }
  RsmiApi api{};
  api.init = reinterpret_cast<RsmiStatus (*)(uint64_t)>(lib.symbol("rsmi_init"));
  api.shutDown = reinterpret_cast<RsmiStatus (*)()>(lib.symbol("rsmi_shut_down"));
  api.numDevices = reinterpret_cast<RsmiStatus (*)(uint32_t*)>(lib.symbol("rsmi_num_monitor_devices"));
  api.pciId = reinterpret_cast<RsmiStatus (*)(uint32_t, uint64_t*)>(lib.symbol("rsmi_dev_pci_id_get"));
  api.linkType =
      reinterpret_cast<RsmiStatus (*)(uint32_t, uint32_t, uint64_t*, int*)>(lib.symbol("rsmi_topo_get_link_type"));
  api.minmaxBandwidth = reinterpret_cast<RsmiStatus (*)(uint32_t, uint32_t, uint64_t*, uint64_t*)>(
      lib.symbol("rsmi_minmax_bandwidth_get"));
  if (!api.init || !api.shutDown || !api.numDevices || !api.pciId || !api.linkType) {
    r.state = SourceState::kFailed;
    r.detail = lib.name() + " lacks rsmi_init/rsmi_topo_get_link_type (not ROCm SMI?)";
    return r;
  }
  RsmiStatus rc = api.init(0);
  if (rc != kRsmiSuccess) {
    r.state = SourceState::kAbsent;
    r.detail = "rsmi_init failed (status " + std::to_string(rc) + "): no AMD GPU driver";
    return r;
  }
  uint32_t n = 0;
  if ((rc = api.numDevices(&n)) != kRsmiSuccess || n == 0) {
    api.shutDown();
    r.state = SourceState::kAbsent;
    r.detail = "ROCm SMI sees no AMD GPUs";
    return r;
  }
  const std::vector<std::string> busIds = readGpus(api, n, inv);
  const size_t added = readXgmiLinks(api, busIds, inv);
  api.shutDown();
  r.state = SourceState::kUsed;
  r.detail = std::to_string(n) + " GPU(s); " + std::to_string(added) + " xGMI bundle(s) KFD had not listed";
  return r;
}

}  // namespace detect
}  // namespace topo
}  // namespace weft
