// Rank descriptions: made from the local system model, checked when received (rank_desc.h).
#include "topology/rank_desc.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "topology/paths.h"
#include "topology/search.h"
#include "topology/topo_file.h"

namespace weft {
namespace topo {
namespace {

template <size_t N>
void copyText(char (&dst)[N], const std::string& src) {
  std::snprintf(dst, N, "%s", src.c_str());
}

template <size_t N>
bool terminated(const char (&text)[N]) {
  return std::memchr(text, '\0', N) != nullptr;
}

// The CPU node above `node` in the PCI tree, -1 when it hangs under none.
int cpuAbove(const System& sys, const PciTree& tree, int node) {
  for (int n = node, steps = 0; n >= 0 && steps <= static_cast<int>(sys.nodes.size()); ++steps) {
    if (sys.nodes[static_cast<size_t>(n)].type == NodeType::kCpu) return n;
    n = tree.parent[static_cast<size_t>(n)];
  }
  return -1;
}

// A hex cpumask in NCCL's notation ("ffffffff,00000000": 32-bit groups, most significant first)
// as groups, least significant first; empty when it does not parse.
std::vector<uint32_t> maskGroups(const std::string& text) {
  std::vector<uint32_t> groups;
  size_t end = text.size();
  while (end > 0) {
    size_t comma = text.rfind(',', end - 1);
    size_t begin = comma == std::string::npos ? 0 : comma + 1;
    const std::string word = text.substr(begin, end - begin);
    if (word.empty() || word.size() > 8 || word.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
      return {};
    }
    groups.push_back(static_cast<uint32_t>(std::stoul(word, nullptr, 16)));
    end = comma == std::string::npos ? 0 : comma;
  }
  return groups;
}

// True when every CPU of `inner` is in `outer` and `inner` has one.
bool maskWithin(const std::string& inner, const std::string& outer) {
  const std::vector<uint32_t> in = maskGroups(inner), out = maskGroups(outer);
  bool any = false;
  for (size_t i = 0; i < in.size(); ++i) {
    const uint32_t o = i < out.size() ? out[i] : 0;
    if ((in[i] & ~o) != 0) return false;
    any = any || in[i] != 0;
  }
  return any;
}

// The CPU node whose CPU set holds all of `affinity` (a host rank bound to one socket), -1 when
// none or several do.
int cpuHolding(const System& sys, const std::vector<int>& cpus, const std::string& affinity) {
  int found = -1;
  for (int cpu : cpus) {
    if (!maskWithin(affinity, sys.nodes[static_cast<size_t>(cpu)].cpu.affinity)) continue;
    if (found >= 0) return -1;
    found = cpu;
  }
  return found;
}

// Bus ids in a record are normalised or empty; a garbled one is refused rather than guessed at.
bool busIdOk(const char* text) { return text[0] == '\0' || normaliseBusId(text) == text; }

// d's GPU's place in each of its host's rings; none unless every ring has it.
void placeInRings(const std::vector<std::vector<std::string>>& rings, RankDescription* d) {
  if (d->gpuBusId[0] == '\0') return;
  const int n = static_cast<int>(std::min<size_t>(rings.size(), kRankDescMaxRings));
  for (int k = 0; k < n; ++k) {
    const std::vector<std::string>& ring = rings[static_cast<size_t>(k)];
    for (size_t i = 0; i < ring.size(); ++i) {
      if (normaliseBusId(ring[i]) == d->gpuBusId) d->ringPositions[k] = static_cast<int32_t>(i);
    }
    if (d->ringPositions[k] < 0) {
      for (int32_t& position : d->ringPositions) position = -1;
      return;
    }
  }
  d->nRings = n;
}

// Index in d's NIC list of the NIC its GPU uses (paths.h nearestNic), else the first on its NUMA
// node; -1 when none.
// *nicPath: the path class from the GPU to the NIC chosen by nearness, -1 otherwise.
int32_t nicOf(const System& local, int gpu, const RankDescription& d, int32_t* nicPath) {
  *nicPath = -1;
  if (d.nNics == 0) return -1;
  const std::vector<int> nics = local.nodesOfType(NodeType::kNic);
  const PathMatrix paths = gpu >= 0 ? computePaths(local) : PathMatrix();
  const int nearest = gpu >= 0 ? nearestNic(local, paths, gpu) : -1;
  for (int i = 0; i < d.nNics && nearest >= 0; ++i) {
    if (nics[static_cast<size_t>(i)] != nearest) continue;
    *nicPath = static_cast<int32_t>(paths.at(gpu, nearest).type);
    return i;
  }
  for (int i = 0; i < d.nNics; ++i) {
    if (d.numaId >= 0 && d.nics[i].numaId == d.numaId) return i;
  }
  return -1;
}

}  // namespace

std::vector<std::vector<std::string>> searchedGpuRings(const System& local) {
  std::vector<std::vector<std::string>> rings;
  if (local.nodesOfType(NodeType::kGpu).empty()) return rings;
  const Cluster one = Cluster::uniform(local, 1);
  SearchOptions options;
  options.maxChannels = kRankDescMaxRings;
  const SearchResult found = search(one, options);
  for (const Ring& found_ring : found.rings) {
    std::vector<std::string> ring;
    for (int r : found_ring.ranks) {
      const int node = r >= 0 && r < one.nRanks() ? one.gpuNode(r) : -1;
      if (node >= 0) ring.push_back(normaliseBusId(local.nodes[static_cast<size_t>(node)].pci.busId));
    }
    rings.push_back(std::move(ring));
  }
  return rings;
}

std::vector<std::string> searchedGpuRing(const System& local) {
  std::vector<std::vector<std::string>> rings = searchedGpuRings(local);
  return rings.empty() ? std::vector<std::string>() : std::move(rings[0]);
}

RankDescription failedRankDescription(int rank) {
  RankDescription d;
  std::memset(&d, 0, sizeof(d));
  d.magic = kRankDescMagic;
  d.version = kRankDescVersion;
  d.bytes = static_cast<uint16_t>(sizeof(RankDescription));
  d.rank = rank;
  d.device = -1;
  d.numaId = -1;
  d.failed = 1;
  d.p2pLevel = -1;
  d.nic = -1;
  d.nicPath = -1;
  for (int32_t& position : d.ringPositions) position = -1;
  return d;
}

RankDescription describeRank(const System& local, const RankIdentity& self) {
  RankDescription d = failedRankDescription(self.rank);
  d.failed = 0;
  d.p2pLevel = self.p2pLevel;
  d.device = self.device;
  d.hostHash = self.hostHash;
  d.numaId = -1;
  copyText(d.gpuBusId, normaliseBusId(self.gpuBusId));
  copyText(d.gpuUuid, self.gpuUuid);
  placeInRings(self.hostRings, &d);
  const PciTree tree = pciTree(local);
  const std::vector<int> cpus = local.nodesOfType(NodeType::kCpu);
  int cpu = cpus.size() == 1 ? cpus[0] : -1;
  const int gpu = d.gpuBusId[0] != '\0' ? local.findByBusId(d.gpuBusId) : -1;
  if (gpu >= 0 && cpuAbove(local, tree, gpu) >= 0) cpu = cpuAbove(local, tree, gpu);
  if (gpu < 0 && cpu < 0 && !self.cpuAffinity.empty()) cpu = cpuHolding(local, cpus, self.cpuAffinity);
  std::string affinity = self.cpuAffinity;
  if (cpu >= 0) {
    const CpuInfo& info = local.nodes[static_cast<size_t>(cpu)].cpu;
    d.numaId = info.numaId;
    // A GPU rank's threads belong near its GPU: that NUMA node's CPUs are its CPU set.
    if (gpu >= 0 || affinity.empty()) affinity = info.affinity;
    copyText(d.cpuVendor, info.vendor);
    copyText(d.cpuArch, info.arch);
  }
  copyText(d.cpuAffinity, affinity.size() < sizeof(d.cpuAffinity) ? affinity : std::string());
  for (const std::string& bus : self.visibleGpus) {
    const std::string normal = normaliseBusId(bus);
    if (d.nVisibleGpus == kRankDescMaxVisibleGpus || normal.empty() || normal.size() >= sizeof(d.visibleGpus[0])) {
      ++d.visibleGpusOmitted;  // the ordinals after one left out would be wrong: stop listing
      continue;
    }
    if (d.visibleGpusOmitted == 0) copyText(d.visibleGpus[d.nVisibleGpus++], normal);
  }
  for (int nic : local.nodesOfType(NodeType::kNic)) {
    if (d.nNics == kRankDescMaxNics) {
      ++d.nicsOmitted;
      continue;
    }
    const Node& n = local.nodes[static_cast<size_t>(nic)];
    RankDescNic& out = d.nics[d.nNics++];
    copyText(out.name, n.nic.name.size() < sizeof(out.name) ? n.nic.name : n.nic.name.substr(0, 31));
    copyText(out.busId, n.pci.busId.size() < sizeof(out.busId) ? n.pci.busId : std::string());
    const int above = cpuAbove(local, tree, nic);
    out.numaId = above >= 0 ? local.nodes[static_cast<size_t>(above)].cpu.numaId : -1;
    out.speedMbps = n.nic.speedMbps;
  }
  d.nic = nicOf(local, gpu, d, &d.nicPath);
  return d;
}

namespace {

// The envelope: magic, version and size of this build, and the rank it was sent as.
Status checkEnvelope(const RankDescription& d, int expectedRank) {
  if (d.magic != kRankDescMagic) {
    return WEFT_ERROR(weftRemoteError, "not a topology description (magic 0x%08x)", d.magic);
  }
  if (d.version != kRankDescVersion || d.bytes != sizeof(RankDescription)) {
    return WEFT_ERROR(weftRemoteError, "topology description version %u of %u bytes; this build reads version %u of %zu",
                      d.version, d.bytes, kRankDescVersion, sizeof(RankDescription));
  }
  if (d.rank != expectedRank) {
    return WEFT_ERROR(weftRemoteError, "topology description says rank %d, expected %d", d.rank, expectedRank);
  }
  return Status::ok();
}

// The rank's own fields: flags, text, GPU bus id, ring positions, device and NUMA node.
Status checkPlacement(const RankDescription& d) {
  if (d.failed != 0 && d.failed != 1) return WEFT_ERROR(weftRemoteError, "failed flag %d is not 0 or 1", d.failed);
  if (d.p2pLevel < -1 || d.p2pLevel > 5) return WEFT_ERROR(weftRemoteError, "P2P level %d is not -1..5", d.p2pLevel);
  if (!terminated(d.gpuBusId) || !terminated(d.gpuUuid) || !terminated(d.cpuAffinity) || !terminated(d.cpuVendor) ||
      !terminated(d.cpuArch)) {
    return WEFT_ERROR(weftRemoteError, "a text field of the topology description is not terminated");
  }
  if (!busIdOk(d.gpuBusId)) return WEFT_ERROR(weftRemoteError, "GPU bus id \"%s\" does not parse", d.gpuBusId);
  if (d.nRings < 0 || d.nRings > kRankDescMaxRings) {
    return WEFT_ERROR(weftRemoteError, "%d rings: at most %d fit", d.nRings, kRankDescMaxRings);
  }
  for (int k = 0; k < kRankDescMaxRings; ++k) {
    const int32_t position = d.ringPositions[k];
    if (k < d.nRings ? position < 0 || position >= 4096 : position != -1) {
      return WEFT_ERROR(weftRemoteError, "position %d in ring %d of %d is out of range", position, k, d.nRings);
    }
  }
  if (d.device < -1 || d.numaId < -1 || d.numaId >= 65536) {
    return WEFT_ERROR(weftRemoteError, "device %d / NUMA node %d out of range", d.device, d.numaId);
  }
  return Status::ok();
}

// The counts of the NIC and visible-GPU lists, and the nearest NIC and its path class.
Status checkListCounts(const RankDescription& d) {
  if (d.nNics < 0 || d.nNics > kRankDescMaxNics || d.nicsOmitted < 0) {
    return WEFT_ERROR(weftRemoteError, "%d NICs (%d omitted): at most %d fit", d.nNics, d.nicsOmitted,
                      kRankDescMaxNics);
  }
  if (d.nic < -1 || d.nic >= d.nNics) {
    return WEFT_ERROR(weftRemoteError, "nearest NIC %d is not one of its %d NICs", d.nic, d.nNics);
  }
  if (d.nicPath < -1 || d.nicPath > static_cast<int32_t>(PathType::kDis) || (d.nicPath >= 0 && d.nic < 0)) {
    return WEFT_ERROR(weftRemoteError, "GPU-to-NIC path class %d is not a path class (0..%d) or names no NIC",
                      d.nicPath, static_cast<int>(PathType::kDis));
  }
  if (d.nVisibleGpus < 0 || d.nVisibleGpus > kRankDescMaxVisibleGpus || d.visibleGpusOmitted < 0) {
    return WEFT_ERROR(weftRemoteError, "%d visible GPUs (%d omitted): at most %d fit", d.nVisibleGpus,
                      d.visibleGpusOmitted, kRankDescMaxVisibleGpus);
  }
  return Status::ok();
}

// Each visible GPU's bus id and each NIC's name, bus id, speed and NUMA node.
Status checkListEntries(const RankDescription& d) {
  for (int i = 0; i < d.nVisibleGpus; ++i) {
    if (!terminated(d.visibleGpus[i]) || d.visibleGpus[i][0] == '\0' || !busIdOk(d.visibleGpus[i])) {
      return WEFT_ERROR(weftRemoteError, "visible GPU %d has an unterminated or unparsable bus id", i);
    }
  }
  for (int i = 0; i < d.nNics; ++i) {
    const RankDescNic& n = d.nics[i];
    if (!terminated(n.name) || !terminated(n.busId) || !busIdOk(n.busId)) {
      return WEFT_ERROR(weftRemoteError, "NIC %d has an unterminated name or a bus id that does not parse", i);
    }
    if (!std::isfinite(n.speedMbps) || n.speedMbps < 0 || n.speedMbps > 1e9 || n.numaId < -1 || n.numaId >= 65536) {
      return WEFT_ERROR(weftRemoteError, "NIC %d (%s): speed %g Mb/s or NUMA node %d out of range", i, n.name,
                        n.speedMbps, n.numaId);
    }
  }
  return Status::ok();
}

}  // namespace

Status checkRankDescription(const RankDescription& d, int expectedRank) {
  WEFT_TRY(checkEnvelope(d, expectedRank));
  WEFT_TRY(checkPlacement(d));
  WEFT_TRY(checkListCounts(d));
  WEFT_TRY(checkListEntries(d));
  return Status::ok();
}

bool sameGpu(const RankDescription& a, const RankDescription& b) {
  if (a.hostHash != b.hostHash || a.gpuBusId[0] == '\0' || b.gpuBusId[0] == '\0') {
    // Without bus ids, UUIDs alone may still tell (a runtime that reports only those).
    return a.hostHash == b.hostHash && a.gpuUuid[0] != '\0' && std::strcmp(a.gpuUuid, b.gpuUuid) == 0;
  }
  if (a.gpuUuid[0] != '\0' && b.gpuUuid[0] != '\0') return std::strcmp(a.gpuUuid, b.gpuUuid) == 0;
  return std::strcmp(a.gpuBusId, b.gpuBusId) == 0;
}

}  // namespace topo
}  // namespace weft
