// The PCI tree of a System, and detection merged with a topology file (rules in topo_file.h).
// src/core calls mergeTopology when WEFT_TOPO_FILE is set; the writer uses pciTree.
#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>
#include <vector>

#include "base/log.h"
#include "topology/link_bw.h"
#include "topology/topo_file.h"

namespace weft {
namespace topo {

PciTree pciTree(const System& system) {
  const int n = static_cast<int>(system.nodes.size());
  PciTree tree;
  tree.parent.assign(static_cast<size_t>(n), -1);
  tree.parentLink.assign(static_cast<size_t>(n), -1);
  // A spanning forest from the PCIe links in order: a link that closes a cycle, or would join
  // two CPUs' trees, is an extra (a <pcilink>), not a tree edge.
  std::vector<int> root(static_cast<size_t>(n));
  std::iota(root.begin(), root.end(), 0);
  std::vector<bool> hasCpu(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    hasCpu[static_cast<size_t>(i)] = system.nodes[static_cast<size_t>(i)].type == NodeType::kCpu;
  auto find = [&](int x) {
    while (root[static_cast<size_t>(x)] != x) {
      root[static_cast<size_t>(x)] = root[static_cast<size_t>(root[static_cast<size_t>(x)])];
      x = root[static_cast<size_t>(x)];
    }
    return x;
  };
  std::vector<std::vector<std::pair<int, int>>> adjacent(static_cast<size_t>(n));  // (neighbour, link)
  for (size_t li = 0; li < system.links.size(); ++li) {
    const Link& l = system.links[li];
    if (l.type != LinkType::kPcie || l.from < 0 || l.to < 0 || l.from >= n || l.to >= n || l.from == l.to) continue;
    int a = find(l.from), b = find(l.to);
    if (a == b || (hasCpu[static_cast<size_t>(a)] && hasCpu[static_cast<size_t>(b)])) continue;
    root[static_cast<size_t>(a)] = b;
    hasCpu[static_cast<size_t>(b)] = hasCpu[static_cast<size_t>(b)] || hasCpu[static_cast<size_t>(a)];
    adjacent[static_cast<size_t>(l.from)].push_back({l.to, static_cast<int>(li)});
    adjacent[static_cast<size_t>(l.to)].push_back({l.from, static_cast<int>(li)});
  }
  // Root each tree at its CPU; a part no CPU reaches at its lowest-numbered node.
  std::vector<bool> seen(static_cast<size_t>(n), false);
  auto walk = [&](int start) {
    std::vector<int> stack{start};
    seen[static_cast<size_t>(start)] = true;
    while (!stack.empty()) {
      int u = stack.back();
      stack.pop_back();
      for (const auto& [v, li] : adjacent[static_cast<size_t>(u)]) {
        if (seen[static_cast<size_t>(v)]) continue;
        seen[static_cast<size_t>(v)] = true;
        tree.parent[static_cast<size_t>(v)] = u;
        tree.parentLink[static_cast<size_t>(v)] = li;
        stack.push_back(v);
      }
    }
  };
  for (int i = 0; i < n; ++i) {
    if (system.nodes[static_cast<size_t>(i)].type == NodeType::kCpu && !seen[static_cast<size_t>(i)]) walk(i);
  }
  for (int i = 0; i < n; ++i) {
    if (!seen[static_cast<size_t>(i)]) walk(i);
  }
  return tree;
}

namespace {

template <typename T>
void fill(T* fileValue, const T& detectedValue, const T& unset) {
  if (*fileValue == unset) *fileValue = detectedValue;
}

// The file's attributes win; what it leaves at the default comes from detection.
void mergeInto(Node* m, const Node& d) {
  if (m->type != d.type) {
    if (m->type == NodeType::kPciBridge && m->pci.pciClass == 0) {
      m->type = d.type;  // the file did not say what this is
    } else {
      WEFT_LOG(kWarn, kGraph, "topology file says %s is a %s, detection a %s; the file wins", m->pci.busId.c_str(),
               nodeTypeName(m->type), nodeTypeName(d.type));
    }
  }
  CpuInfo& c = m->cpu;
  fill(&c.numaId, d.cpu.numaId, -1);
  fill(&c.affinity, d.cpu.affinity, std::string());
  fill(&c.arch, d.cpu.arch, std::string());
  fill(&c.vendor, d.cpu.vendor, std::string());
  fill(&c.familyId, d.cpu.familyId, -1);
  fill(&c.modelId, d.cpu.modelId, -1);
  fill(&c.hostHash, d.cpu.hostHash, uint64_t{0});
  PciInfo& p = m->pci;
  fill(&p.busId, d.pci.busId, std::string());
  fill(&p.pciClass, d.pci.pciClass, 0u);
  fill(&p.vendor, d.pci.vendor, 0u);
  fill(&p.device, d.pci.device, 0u);
  fill(&p.subsystemVendor, d.pci.subsystemVendor, 0u);
  fill(&p.subsystemDevice, d.pci.subsystemDevice, 0u);
  fill(&p.linkSpeedGTs, d.pci.linkSpeedGTs, 0.0);
  fill(&p.linkWidth, d.pci.linkWidth, 0);
  GpuInfo& g = m->gpu;
  fill(&g.vendor, d.gpu.vendor, GpuVendor::kUnknown);
  fill(&g.dev, d.gpu.dev, -1);
  fill(&g.sm, d.gpu.sm, 0);
  fill(&g.arch, d.gpu.arch, std::string());
  fill(&g.model, d.gpu.model, std::string());
  fill(&g.rank, d.gpu.rank, -1);
  g.gdr = g.gdr || d.gpu.gdr;
  NicInfo& nic = m->nic;
  fill(&nic.name, d.nic.name, std::string());
  fill(&nic.dev, d.nic.dev, -1);
  fill(&nic.port, d.nic.port, 1);
  fill(&nic.speedMbps, d.nic.speedMbps, 0.0);
  fill(&nic.latencyUs, d.nic.latencyUs, 0.0);
  fill(&nic.guid, d.nic.guid, uint64_t{0});
  fill(&nic.maxConn, d.nic.maxConn, 0);
  nic.gdr = nic.gdr || d.nic.gdr;
}

// File nodes by what matches them, so that matching is not quadratic. Each list remembers
// where its untaken entries start (entries are taken mostly in order).
struct Candidates {
  std::vector<int> ids;
  size_t firstFree = 0;

  // From the first entry not taken yet.
  const int* begin(const std::vector<bool>& taken) {
    while (firstFree < ids.size() && taken[static_cast<size_t>(ids[firstFree])]) ++firstFree;
    return ids.data() + firstFree;
  }
  const int* end() const { return ids.data() + ids.size(); }
};

struct FileIndex {
  std::map<std::string, Candidates> byBusId;
  std::map<int, Candidates> cpuByNuma;
  std::map<std::string, Candidates> bareNicByName;  // NICs without a bus id
  Candidates cpus;
  Candidates hiddenSwitches;  // NVSwitches without a bus id (NCCL's placeholder): one per machine

  explicit FileIndex(const System& file) {
    for (size_t f = 0; f < file.nodes.size(); ++f) {
      const Node& n = file.nodes[f];
      int i = static_cast<int>(f);
      if (n.type == NodeType::kCpu) {
        cpus.ids.push_back(i);
        if (n.cpu.numaId >= 0) cpuByNuma[n.cpu.numaId].ids.push_back(i);
      } else if (!n.pci.busId.empty()) {
        byBusId[n.pci.busId].ids.push_back(i);
      } else if (n.type == NodeType::kNic && !n.nic.name.empty()) {
        bareNicByName[n.nic.name].ids.push_back(i);
      } else if (n.type == NodeType::kNvSwitch) {
        hiddenSwitches.ids.push_back(i);
      }
    }
  }
};

template <typename Map, typename Key>
Candidates* lookUp(Map* map, const Key& key) {
  auto it = map->find(key);
  return it == map->end() ? nullptr : &it->second;
}

int firstUntaken(Candidates* c, const std::vector<bool>& taken) {
  if (c == nullptr) return -1;
  const int* f = c->begin(taken);
  return f == c->end() ? -1 : *f;
}

// The file node a detected node is, or -1. Strict pass: bus id (and NIC name where both have
// one), NUMA id; loose pass (NICs only): any untaken NIC with the bus id.
int findMatch(const Node& d, const System& file, FileIndex* index, const std::vector<bool>& taken, bool loose,
              bool oneCpuEach) {
  if (d.type == NodeType::kCpu) {
    if (loose) return -1;
    if (oneCpuEach) return firstUntaken(&index->cpus, taken);
    return d.cpu.numaId >= 0 ? firstUntaken(lookUp(&index->cpuByNuma, d.cpu.numaId), taken) : -1;
  }
  if (d.pci.busId.empty()) {
    if (d.type == NodeType::kNvSwitch) return loose ? -1 : firstUntaken(&index->hiddenSwitches, taken);
    // A NIC without a PCI function (virtual): by name.
    bool byName = !loose && d.type == NodeType::kNic && !d.nic.name.empty();
    return byName ? firstUntaken(lookUp(&index->bareNicByName, d.nic.name), taken) : -1;
  }
  Candidates* sameBus = lookUp(&index->byBusId, d.pci.busId);
  if (sameBus == nullptr) return -1;
  for (const int* it = sameBus->begin(taken); it != sameBus->end(); ++it) {
    int f = *it;
    if (taken[static_cast<size_t>(f)]) continue;
    const Node& n = file.nodes[static_cast<size_t>(f)];
    bool bothNics = d.type == NodeType::kNic && n.type == NodeType::kNic;
    if (!bothNics) {
      if (!loose) return f;
      continue;
    }
    bool sameName = n.nic.name.empty() || d.nic.name.empty() || n.nic.name == d.nic.name;
    if (loose || sameName) return f;
  }
  return -1;
}

using LinkKey = std::tuple<int, int, int>;
LinkKey keyOf(int a, int b, LinkType t) { return LinkKey(std::min(a, b), std::max(a, b), static_cast<int>(t)); }

// Matches each detected node to a file node of m (strict pass first, so that a NIC port named
// in both is not taken by a looser match), fills the file's gaps, appends the rest. Returns
// each detected node's index in m.
std::vector<int> mergeNodes(const System& detected, const System& file, System* m) {
  const size_t nDet = detected.nodes.size();
  bool oneCpuEach = detected.nodesOfType(NodeType::kCpu).size() == 1 && file.nodesOfType(NodeType::kCpu).size() == 1;
  FileIndex index(file);
  std::vector<bool> taken(file.nodes.size(), false);
  std::vector<int> detToMerged(nDet, -1);
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t d = 0; d < nDet; ++d) {
      if (detToMerged[d] >= 0) continue;
      int f = findMatch(detected.nodes[d], file, &index, taken, pass == 1, oneCpuEach);
      if (f < 0) continue;
      taken[static_cast<size_t>(f)] = true;
      mergeInto(&m->nodes[static_cast<size_t>(f)], detected.nodes[d]);
      detToMerged[d] = f;
    }
  }
  for (size_t d = 0; d < nDet; ++d) {
    if (detToMerged[d] < 0) detToMerged[d] = m->addNode(detected.nodes[d]);
  }
  return detToMerged;
}

// The merged PCI tree: per merged node its parent (-1: none) and the link to it.
struct MergedTree {
  std::vector<int> parent;
  std::vector<const Link*> parentLink;
};

// The file's parent where it gives one, else detection's unless that makes a cycle.
MergedTree mergeTree(const System& detected, const System& file, const System& m, const std::vector<int>& detToMerged,
                     const PciTree& fileTree, const PciTree& detTree) {
  const int nMerged = static_cast<int>(m.nodes.size());
  std::vector<int> mergedToDet(static_cast<size_t>(nMerged), -1);
  for (size_t d = 0; d < detToMerged.size(); ++d)
    mergedToDet[static_cast<size_t>(detToMerged[d])] = static_cast<int>(d);
  MergedTree t;
  t.parent.assign(static_cast<size_t>(nMerged), -1);
  t.parentLink.assign(static_cast<size_t>(nMerged), nullptr);
  for (size_t f = 0; f < file.nodes.size(); ++f) {
    if (fileTree.parent[f] < 0) continue;
    t.parent[f] = fileTree.parent[f];
    t.parentLink[f] = &file.links[static_cast<size_t>(fileTree.parentLink[f])];
  }
  for (int i = 0; i < nMerged; ++i) {
    int d = mergedToDet[static_cast<size_t>(i)];
    if (t.parent[static_cast<size_t>(i)] >= 0 || d < 0 || detTree.parent[static_cast<size_t>(d)] < 0) continue;
    if (m.nodes[static_cast<size_t>(i)].type == NodeType::kCpu) continue;
    int p = detToMerged[static_cast<size_t>(detTree.parent[static_cast<size_t>(d)])];
    bool cycle = false;
    for (int a = p; a >= 0 && !cycle; a = t.parent[static_cast<size_t>(a)]) cycle = a == i;
    if (cycle) continue;
    t.parent[static_cast<size_t>(i)] = p;
    t.parentLink[static_cast<size_t>(i)] =
        &detected.links[static_cast<size_t>(detTree.parentLink[static_cast<size_t>(d)])];
  }
  return t;
}

// Adds links to a system, at most one of each type between a pair: the first added wins.
class LinkAdder {
 public:
  explicit LinkAdder(System* m) : m_(m) {}
  void add(int a, int b, const Link& l) {
    if (a < 0 || b < 0 || a == b) return;
    auto key = keyOf(a, b, l.type);
    if (have_.count(key) != 0) return;
    have_[key] = static_cast<int>(m_->links.size());
    m_->addLink(a, b, l.type, l.count, l.bwGBs);
  }

 private:
  System* m_;
  std::map<LinkKey, int> have_;
};

// The links that are not PCI tree links: the file's first, then detection's where the file has
// none of that type between the same pair. Detection's tree links the file overrode are dropped.
void addOtherLinks(const System& detected, const System& file, const std::vector<int>& detToMerged,
                   const PciTree& fileTree, const PciTree& detTree, LinkAdder* links) {
  std::vector<bool> fileTreeLink(file.links.size(), false), detTreeLink(detected.links.size(), false);
  for (int l : fileTree.parentLink) {
    if (l >= 0) fileTreeLink[static_cast<size_t>(l)] = true;
  }
  for (int l : detTree.parentLink) {
    if (l >= 0) detTreeLink[static_cast<size_t>(l)] = true;
  }
  auto inRange = [](const Link& l, size_t n) {
    return l.from >= 0 && l.to >= 0 && static_cast<size_t>(l.from) < n && static_cast<size_t>(l.to) < n;
  };
  for (size_t li = 0; li < file.links.size(); ++li) {
    const Link& l = file.links[li];
    if (!fileTreeLink[li] && inRange(l, file.nodes.size())) links->add(l.from, l.to, l);
  }
  // A GPU's NVLinks into the NVSwitch fabric come from the file where it lists any: the file
  // may name the switches by NCCL's placeholder where detection has their bus ids, and taking
  // both would count the same links twice.
  auto isSwitchLink = [](const System& s, const Link& l) {
    return l.type == LinkType::kNvLink && (s.nodes[static_cast<size_t>(l.from)].type == NodeType::kNvSwitch ||
                                           s.nodes[static_cast<size_t>(l.to)].type == NodeType::kNvSwitch);
  };
  std::vector<bool> fileFabric(file.nodes.size(), false);  // file nodes with NVLinks to a switch
  for (const Link& l : file.links) {
    if (!inRange(l, file.nodes.size()) || !isSwitchLink(file, l)) continue;
    fileFabric[static_cast<size_t>(l.from)] = fileFabric[static_cast<size_t>(l.to)] = true;
  }
  for (size_t li = 0; li < detected.links.size(); ++li) {
    const Link& l = detected.links[li];
    if (detTreeLink[li] || !inRange(l, detected.nodes.size())) continue;
    int a = detToMerged[static_cast<size_t>(l.from)], b = detToMerged[static_cast<size_t>(l.to)];
    auto fromFile = [&](int i) {
      return static_cast<size_t>(i) < fileFabric.size() && fileFabric[static_cast<size_t>(i)];
    };
    bool gpuEndInFile = (detected.nodes[static_cast<size_t>(l.from)].type == NodeType::kGpu && fromFile(a)) ||
                        (detected.nodes[static_cast<size_t>(l.to)].type == NodeType::kGpu && fromFile(b));
    if (isSwitchLink(detected, l) && gpuEndInFile) continue;
    links->add(a, b, l);
  }
}

}  // namespace

Status mergeTopology(const System& detected, const System& file, System* out) {
  System m;
  m.version = file.version;
  m.source = "detected+" + (file.source.empty() ? std::string("file") : file.source);
  m.nodes = file.nodes;
  const std::vector<int> detToMerged = mergeNodes(detected, file, &m);

  const PciTree fileTree = pciTree(file);
  const PciTree detTree = pciTree(detected);
  const MergedTree tree = mergeTree(detected, file, m, detToMerged, fileTree, detTree);
  LinkAdder links(&m);
  for (size_t i = 0; i < tree.parent.size(); ++i) {
    if (tree.parent[i] >= 0) links.add(static_cast<int>(i), tree.parent[i], *tree.parentLink[i]);
  }
  addOtherLinks(detected, file, detToMerged, fileTree, detTree, &links);

  // Every pair of CPUs is joined by the inter-socket interconnect.
  std::vector<int> cpus = m.nodesOfType(NodeType::kCpu);
  for (size_t i = 0; i < cpus.size(); ++i) {
    for (size_t j = i + 1; j < cpus.size(); ++j) {
      Link smp;
      smp.type = LinkType::kSmp;
      smp.bwGBs = std::min(bw::smp(m.nodes[static_cast<size_t>(cpus[i])].cpu.vendor),
                           bw::smp(m.nodes[static_cast<size_t>(cpus[j])].cpu.vendor));
      links.add(cpus[i], cpus[j], smp);
    }
  }
  *out = std::move(m);
  return Status::ok();
}

}  // namespace topo
}  // namespace weft
