// The communicator's global system from the ranks' descriptions (global_system.h).
#include "topology/global_system.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>
#include <unordered_map>

#include "topology/link_bw.h"
#include "topology/search.h"

namespace weft {
namespace topo {
namespace {

constexpr uint32_t kGpuPciClass = 0x030200;  // 3D controller: what a reader takes for a GPU
constexpr uint32_t kNicPciClass = 0x020000;  // Ethernet controller: a NIC

// One host's machine while it is being assembled.
struct HostBuilder {
  System sys;
  bool described = false;                         // made from descriptions, not the local model
  std::map<int, int> cpuByNuma;                   // NUMA id -> CPU node
  std::unordered_map<std::string, int> gpuByKey;  // bus id (else "uuid:" UUID) -> GPU node
  int nGpus = 0;
  size_t modelNodes = 0;  // nodes of the local model; those after it were added here
};

// The CPU node of NUMA node `numa` (-1: unknown): the host's, or a new one linked to the others.
int cpuFor(HostBuilder& h, int numa, const RankDescription& d) {
  auto it = h.cpuByNuma.find(numa);
  if (it != h.cpuByNuma.end()) return it->second;
  if (numa < 0 && !h.cpuByNuma.empty()) return h.cpuByNuma.begin()->second;
  Node n;
  n.type = NodeType::kCpu;
  n.cpu.numaId = numa;
  n.cpu.hostHash = d.hostHash;
  // Only a rank whose NUMA node this is knows its CPU set; a NIC's node stays unknown.
  if (d.numaId == numa) n.cpu.affinity = d.cpuAffinity;
  n.cpu.vendor = d.cpuVendor;
  n.cpu.arch = d.cpuArch;
  const int node = h.sys.addNode(n);
  for (const auto& [other, cpu] : h.cpuByNuma) {
    const std::string& v = h.sys.nodes[static_cast<size_t>(cpu)].cpu.vendor;
    h.sys.addLink(cpu, node, LinkType::kSmp, 1, std::min(bw::smp(v), bw::smp(n.cpu.vendor)));
  }
  h.cpuByNuma[numa] = node;
  return node;
}

void startLocal(HostBuilder& h, const System& local, uint64_t hostHash) {
  h.sys = local;
  for (int cpu : h.sys.nodesOfType(NodeType::kCpu)) {
    CpuInfo& info = h.sys.nodes[static_cast<size_t>(cpu)].cpu;
    if (info.hostHash == 0) info.hostHash = hostHash;
    h.cpuByNuma.emplace(info.numaId, cpu);
  }
  for (int gpu : h.sys.nodesOfType(NodeType::kGpu)) {
    const std::string& busId = h.sys.nodes[static_cast<size_t>(gpu)].pci.busId;
    if (!busId.empty()) h.gpuByKey.emplace(busId, gpu);
  }
  h.nGpus = static_cast<int>(h.gpuByKey.size());
  h.modelNodes = h.sys.nodes.size();
}

// The host's NICs as the description lists them (a described host only: the local model has its
// own, with their place in the PCI tree).
void addNics(HostBuilder& h, const RankDescription& d) {
  for (int i = 0; i < d.nNics; ++i) {
    const RankDescNic& nic = d.nics[i];
    Node n;
    n.type = NodeType::kNic;
    n.pci.busId = nic.busId;
    if (!n.pci.busId.empty()) n.pci.pciClass = kNicPciClass;
    n.nic.name = nic.name;
    n.nic.dev = i;
    n.nic.speedMbps = nic.speedMbps;
    const int cpu = cpuFor(h, nic.numaId, d);
    h.sys.addLink(h.sys.addNode(n), cpu, LinkType::kPcie, 1, bw::pcie(0, 0));
  }
}

// The rank's GPU node (found or added), -1 for a host rank.
int gpuFor(HostBuilder& h, const RankDescription& d, int cpu) {
  std::string key = d.gpuBusId[0] != '\0' ? std::string(d.gpuBusId) : std::string();
  if (key.empty() && d.gpuUuid[0] != '\0') key = std::string("uuid:") + d.gpuUuid;
  if (key.empty()) return -1;
  auto it = h.gpuByKey.find(key);
  if (it != h.gpuByKey.end()) return it->second;
  Node n;
  n.type = NodeType::kGpu;
  n.pci.busId = d.gpuBusId;
  n.pci.pciClass = kGpuPciClass;
  n.gpu.dev = h.nGpus++;  // GPUs of one host numbered as they appear (ordinals are per process)
  const int node = h.sys.addNode(n);
  h.sys.addLink(node, cpu, LinkType::kPcie, 1, bw::pcie(0, 0));
  h.gpuByKey.emplace(key, node);
  return node;
}

}  // namespace

bool GlobalSystem::sameGpu(int a, int b) const {
  const RankPlace& pa = place(a);
  const RankPlace& pb = place(b);
  const bool uuidsDiffer = !pa.gpuUuid.empty() && !pb.gpuUuid.empty() && pa.gpuUuid != pb.gpuUuid;
  return pa.gpu >= 0 && pa.host == pb.host && pa.gpu == pb.gpu && !uuidsDiffer;
}

int GlobalSystem::maxRanksPerGpu() const {
  std::map<std::tuple<int, int, std::string>, int> perGpu;
  int most = 0;
  for (const RankPlace& p : ranks) {
    if (p.gpu >= 0) most = std::max(most, ++perGpu[{p.host, p.gpu, p.gpuUuid}]);
  }
  return most;
}

int ordinalSeenBy(const GlobalSystem& g, int viewer, int rank) {
  const RankPlace& v = g.place(viewer);
  const RankPlace& r = g.place(rank);
  if (v.host != r.host || r.gpuBusId.empty()) return -1;
  for (size_t i = 0; i < v.visibleGpus.size(); ++i) {
    if (v.visibleGpus[i] == r.gpuBusId) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> hostRingOrder(const GlobalSystem& g) {
  // Per host: every rank has a ring position (GPU ranks the host's model placed).
  std::vector<bool> searched(g.hosts.size(), true);
  for (const RankPlace& p : g.ranks) {
    if (p.ringPosition < 0) searched[static_cast<size_t>(p.host)] = false;
  }
  std::vector<int> order(static_cast<size_t>(g.nRanks()));
  for (int r = 0; r < g.nRanks(); ++r) order[static_cast<size_t>(r)] = r;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const RankPlace& pa = g.place(a);
    const RankPlace& pb = g.place(b);
    if (pa.host != pb.host) return pa.host < pb.host;
    if (searched[static_cast<size_t>(pa.host)]) return pa.ringPosition < pb.ringPosition;
    return pa.numa < pb.numa;
  });
  return order;
}

namespace {

// Every GPU UUID at one bus id per host: descriptions that put one UUID at two bus ids cannot
// both be true (a copied description, or two machines taken for one host).
Status checkUuids(const std::vector<RankDescription>& descs) {
  std::map<std::pair<uint64_t, std::string>, size_t> firstWith;  // (host, UUID) -> first rank
  for (size_t r = 0; r < descs.size(); ++r) {
    const RankDescription& d = descs[r];
    if (d.gpuUuid[0] == '\0' || d.gpuBusId[0] == '\0') continue;
    auto [it, fresh] = firstWith.emplace(std::make_pair(d.hostHash, std::string(d.gpuUuid)), r);
    const RankDescription& first = descs[it->second];
    if (!fresh && std::strcmp(first.gpuBusId, d.gpuBusId) != 0) {
      return WEFT_ERROR(weftRemoteError,
                        "ranks %zu and %zu describe GPU %s at two bus ids (%s and %s) on one host: a GPU has one; "
                        "if they run on different machines, give each its own WEFT_HOSTID",
                        it->second, r, d.gpuUuid, first.gpuBusId, d.gpuBusId);
    }
  }
  return Status::ok();
}

// One host's rings over its ranks, as local indices into `members` (ranks in rank order).
std::vector<std::vector<int>> hostRings(const GlobalSystem& g, const std::vector<int>& members,
                                        const std::vector<int>& numaOrder) {
  size_t k = kRankDescMaxRings;
  for (int r : members) k = std::min(k, g.place(r).ringPositions.size());
  std::vector<int> local(members.size());
  for (size_t i = 0; i < local.size(); ++i) local[i] = static_cast<int>(i);
  if (k == 0) {
    // Not searched: the host's stretch of hostRingOrder (NUMA node by NUMA node).
    for (size_t i = 0; i < local.size(); ++i) {
      local[i] = static_cast<int>(std::find(members.begin(), members.end(), numaOrder[i]) - members.begin());
    }
    return {local};
  }
  std::vector<std::vector<int>> rings;
  for (size_t ring = 0; ring < k; ++ring) {
    std::vector<int> order = local;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return g.place(members[static_cast<size_t>(a)]).ringPositions[ring] <
             g.place(members[static_cast<size_t>(b)]).ringPositions[ring];
    });
    rings.push_back(std::move(order));
  }
  return rings;
}

}  // namespace

std::vector<std::vector<int>> channelRings(const GlobalSystem& g, int maxChannels) {
  const std::vector<int> numaOrder = hostRingOrder(g);  // host by host
  std::vector<std::vector<int>> members(g.hosts.size());
  for (int r = 0; r < g.nRanks(); ++r) members[static_cast<size_t>(g.place(r).host)].push_back(r);
  std::vector<std::vector<std::vector<int>>> rings(members.size());  // [host][ring]: local indices
  std::vector<std::vector<int>> nics(members.size());                // [host][local index]
  int channels = 1;
  size_t first = 0;  // the host's first entry in numaOrder
  for (size_t h = 0; h < members.size(); ++h) {
    const std::vector<int> stretch(numaOrder.begin() + static_cast<long>(first),
                                   numaOrder.begin() + static_cast<long>(first + members[h].size()));
    first += members[h].size();
    rings[h] = hostRings(g, members[h], stretch);
    for (int r : members[h]) nics[h].push_back(g.place(r).nic);
    std::vector<int> distinct = nics[h];
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    const int nNics = static_cast<int>(distinct.size()) - (distinct.front() < 0 ? 1 : 0);
    channels = std::max({channels, static_cast<int>(rings[h].size()), members.size() > 1 ? nNics : 0});
  }
  channels = std::max(1, std::min(channels, maxChannels));
  std::vector<std::vector<int>> out(static_cast<size_t>(channels));
  for (size_t h = 0; h < members.size(); ++h) {
    std::vector<std::vector<int>> chains = rings[h];
    if (members.size() > 1) chains = nodeChains(rings[h], nics[h], channels);
    for (int c = 0; c < channels; ++c) {
      for (int local : chains[static_cast<size_t>(c) % chains.size()]) {
        out[static_cast<size_t>(c)].push_back(members[h][static_cast<size_t>(local)]);
      }
    }
  }
  return out;
}

Status buildGlobalSystem(const std::vector<RankDescription>& descs, uint64_t localHost, const System* local,
                         GlobalSystem* out) {
  if (descs.empty()) return WEFT_ERROR(weftInternalError, "buildGlobalSystem: no rank descriptions");
  WEFT_TRY(checkUuids(descs));
  std::vector<HostBuilder> hosts;
  std::unordered_map<uint64_t, int> hostIndex;
  GlobalSystem g;
  g.ranks.resize(descs.size());
  for (size_t r = 0; r < descs.size(); ++r) {
    const RankDescription& d = descs[r];
    auto [it, fresh] = hostIndex.emplace(d.hostHash, static_cast<int>(hosts.size()));
    if (fresh) {
      hosts.emplace_back();
      g.hostHashes.push_back(d.hostHash);
      if (local != nullptr && d.hostHash == localHost) {
        startLocal(hosts.back(), *local, localHost);
      } else {
        hosts.back().described = true;
        hosts.back().sys.source = "described";
        addNics(hosts.back(), d);
      }
    }
    HostBuilder& h = hosts[static_cast<size_t>(it->second)];
    RankPlace& p = g.ranks[r];
    p.host = it->second;
    p.cpu = cpuFor(h, d.numaId, d);
    p.numa = d.numaId;
    p.gpuBusId = d.gpuBusId;
    p.gpuUuid = d.gpuUuid;
    for (int i = 0; i < d.nVisibleGpus; ++i) p.visibleGpus.emplace_back(d.visibleGpus[i]);
    p.ringPositions.assign(d.ringPositions, d.ringPositions + d.nRings);
    p.ringPosition = d.nRings > 0 ? d.ringPositions[0] : -1;
    p.nic = d.nic;
    p.nicName = d.nic >= 0 ? d.nics[d.nic].name : "";
    p.nicPath = d.nicPath >= 0 ? static_cast<PathType>(d.nicPath) : PathType::kDis;
    p.gpu = gpuFor(h, d, p.cpu);
    p.gpuPlaced = p.gpu >= 0 && static_cast<size_t>(p.gpu) < h.modelNodes;
    GpuInfo* gpu = p.gpu >= 0 ? &h.sys.nodes[static_cast<size_t>(p.gpu)].gpu : nullptr;
    if (gpu != nullptr && gpu->rank < 0) gpu->rank = static_cast<int>(r);
  }
  for (auto& h : hosts) g.hosts.push_back(std::move(h.sys));
  *out = std::move(g);
  return Status::ok();
}

}  // namespace topo
}  // namespace weft
