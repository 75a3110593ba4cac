#include "topology/paths.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "topology/link_bw.h"

namespace weft {
namespace topo {

const char* pathTypeName(PathType t) {
  switch (t) {
    case PathType::kLoc:
      return "LOC";
    case PathType::kNvl:
      return "NVL";
    case PathType::kXgmi:
      return "XGMI";
    case PathType::kNvb:
      return "NVB";
    case PathType::kPix:
      return "PIX";
    case PathType::kPxb:
      return "PXB";
    case PathType::kPhb:
      return "PHB";
    case PathType::kNode:
      return "NODE";
    case PathType::kSys:
      return "SYS";
    case PathType::kNet:
      return "NET";
    case PathType::kDis:
      return "DIS";
  }
  return "DIS";
}

int PathMatrix::nicTx(int nic) const {
  if (nic < 0 || nic >= nNodes_) return -1;
  return nicPort_[static_cast<size_t>(nic)];
}

int PathMatrix::nicRx(int nic) const {
  int tx = nicTx(nic);
  return tx < 0 ? -1 : tx + 1;
}

double PathMatrix::nicGBs(int nic) const {
  int tx = nicTx(nic);
  return tx < 0 ? 0.0 : capacity(tx);
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A NIC whose speed neither the model nor a kNet link gives: 100 Gb/s, the commonest port of
// the last generation (a guess; detection and files normally say).
constexpr double kUnknownNicMbps = 100000.0;

struct Adjacent {
  int peer;
  int link;
};

// The resource of link `l` travelled from node `from`.
int directed(const System& sys, int l, int from) {
  return sys.links[static_cast<size_t>(l)].from == from ? 2 * l : 2 * l + 1;
}

bool validLink(const System& sys, const Link& l) {
  int n = static_cast<int>(sys.nodes.size());
  return l.from >= 0 && l.to >= 0 && l.from < n && l.to < n && l.from != l.to;
}

bool isHostLink(LinkType t) { return t == LinkType::kPcie || t == LinkType::kC2c || t == LinkType::kSmp; }

bool canRelay(NodeType t) { return t == NodeType::kCpu || t == NodeType::kPciBridge; }

// PCIe (and C2C, SMP) paths from one endpoint: breadth first, so the fewest links; among paths
// of equal length the widest. Only CPUs and bridges relay: a path never runs through a GPU, a
// NIC or an NVSwitch's management function.
class HostRoutes {
 public:
  HostRoutes(const System& sys, const std::vector<std::vector<Adjacent>>& adj, int source)
      : sys_(sys), dist_(sys.nodes.size(), -1), bw_(sys.nodes.size(), 0), predLink_(sys.nodes.size(), -1) {
    std::deque<int> queue;
    dist_[static_cast<size_t>(source)] = 0;
    bw_[static_cast<size_t>(source)] = kInf;
    queue.push_back(source);
    while (!queue.empty()) {
      int u = queue.front();
      queue.pop_front();
      if (u != source && !canRelay(sys.nodes[static_cast<size_t>(u)].type)) continue;
      for (const Adjacent& a : adj[static_cast<size_t>(u)]) {
        size_t v = static_cast<size_t>(a.peer);
        int d = dist_[static_cast<size_t>(u)] + 1;
        double b = std::min(bw_[static_cast<size_t>(u)], sys.links[static_cast<size_t>(a.link)].bwGBs);
        if (dist_[v] < 0) {
          dist_[v] = d;
          bw_[v] = b;
          predLink_[v] = a.link;
          queue.push_back(a.peer);
        } else if (dist_[v] == d && b > bw_[v]) {
          bw_[v] = b;  // still queued: its layer is processed after this one
          predLink_[v] = a.link;
        }
      }
    }
  }

  Path to(int target) const {
    Path p;
    if (dist_[static_cast<size_t>(target)] <= 0) return p;
    // Walk back to the source, collecting nodes and links.
    std::vector<int> nodes{target};
    std::vector<int> links;
    for (int v = target; predLink_[static_cast<size_t>(v)] >= 0;) {
      int l = predLink_[static_cast<size_t>(v)];
      const Link& link = sys_.links[static_cast<size_t>(l)];
      v = link.from == v ? link.to : link.from;
      links.push_back(l);
      nodes.push_back(v);
    }
    std::reverse(nodes.begin(), nodes.end());
    std::reverse(links.begin(), links.end());
    p.hops = static_cast<int>(links.size());
    p.bwGBs = bw_[static_cast<size_t>(target)];
    for (size_t i = 0; i < links.size(); ++i) p.resources.push_back(directed(sys_, links[i], nodes[i]));
    p.type = classify(nodes, links);
    return p;
  }

 private:
  PathType classify(const std::vector<int>& nodes, const std::vector<int>& links) const {
    for (int l : links) {
      if (sys_.links[static_cast<size_t>(l)].type == LinkType::kSmp) return PathType::kSys;
    }
    int bridges = 0;
    for (size_t i = 1; i + 1 < nodes.size(); ++i) {
      NodeType t = sys_.nodes[static_cast<size_t>(nodes[i])].type;
      if (t == NodeType::kCpu) {
        // Entered and left through root bridges: two host bridges of one NUMA node.
        bool bridgeBefore = sys_.nodes[static_cast<size_t>(nodes[i - 1])].type == NodeType::kPciBridge;
        bool bridgeAfter = sys_.nodes[static_cast<size_t>(nodes[i + 1])].type == NodeType::kPciBridge;
        return bridgeBefore && bridgeAfter ? PathType::kNode : PathType::kPhb;
      }
      if (t == NodeType::kPciBridge) ++bridges;
    }
    return bridges <= 1 ? PathType::kPix : PathType::kPxb;
  }

  const System& sys_;
  std::vector<int> dist_;
  std::vector<double> bw_;
  std::vector<int> predLink_;
};

// Direct NVLink / xGMI bundles between two GPUs (several Link entries between one pair add up).
struct Bundle {
  int count = 0;
  double bwGBs = 0;
  LinkType type = LinkType::kNvLink;
  std::vector<int> links;
};

double nicPortGBs(const System& sys, int nic) {
  const NicInfo& info = sys.nodes[static_cast<size_t>(nic)].nic;
  if (info.speedMbps > 0) return bw::net(info.speedMbps);
  for (const Link& l : sys.links) {
    if (l.type == LinkType::kNet && (l.from == nic || l.to == nic) && l.bwGBs > 0) return l.bwGBs;
  }
  return bw::net(kUnknownNicMbps);
}

// What paths are searched over: GPU ordinals, each GPU's NVSwitch fabric, the host (PCIe, C2C,
// SMP) adjacency and the direct GPU-GPU bundles.
struct Graph {
  int nGpus = 0;
  std::vector<int> gpuOrdinal;  // per node: its index among the GPUs, or -1
  std::vector<double> fabricBw;
  std::vector<int> fabricLinks;
  std::vector<std::vector<Adjacent>> host;
  std::vector<Bundle> direct;  // [a * nGpus + b]
};

void addFabric(const System& sys, Graph* g) {
  g->fabricBw.assign(static_cast<size_t>(g->nGpus), 0.0);
  g->fabricLinks.assign(static_cast<size_t>(g->nGpus), 0);
  for (const Link& l : sys.links) {
    if (!validLink(sys, l) || l.type != LinkType::kNvLink) continue;
    NodeType tf = sys.nodes[static_cast<size_t>(l.from)].type, tt = sys.nodes[static_cast<size_t>(l.to)].type;
    int gpu = tf == NodeType::kGpu && tt == NodeType::kNvSwitch   ? l.from
              : tt == NodeType::kGpu && tf == NodeType::kNvSwitch ? l.to
                                                                  : -1;
    if (gpu < 0) continue;
    g->fabricBw[static_cast<size_t>(g->gpuOrdinal[static_cast<size_t>(gpu)])] += l.bwGBs;
    g->fabricLinks[static_cast<size_t>(g->gpuOrdinal[static_cast<size_t>(gpu)])] += l.count;
  }
}

void addHostAndBundles(const System& sys, Graph* g) {
  const int nGpus = g->nGpus;
  g->host.assign(sys.nodes.size(), {});
  g->direct.assign(static_cast<size_t>(nGpus) * nGpus, Bundle());
  for (int l = 0; l < static_cast<int>(sys.links.size()); ++l) {
    const Link& link = sys.links[static_cast<size_t>(l)];
    if (!validLink(sys, link)) continue;
    if (isHostLink(link.type)) {
      g->host[static_cast<size_t>(link.from)].push_back({link.to, l});
      g->host[static_cast<size_t>(link.to)].push_back({link.from, l});
      continue;
    }
    if (link.type != LinkType::kNvLink && link.type != LinkType::kXgmi) continue;
    int a = g->gpuOrdinal[static_cast<size_t>(link.from)], b = g->gpuOrdinal[static_cast<size_t>(link.to)];
    if (a < 0 || b < 0) continue;
    for (int k = 0; k < 2; ++k) {
      Bundle& bundle = g->direct[static_cast<size_t>(k == 0 ? a * nGpus + b : b * nGpus + a)];
      bundle.count += link.count;
      bundle.bwGBs += link.bwGBs;
      bundle.type = link.type;
      bundle.links.push_back(l);
    }
  }
}

Graph buildGraph(const System& sys, const std::vector<int>& gpus) {
  Graph g;
  g.nGpus = static_cast<int>(gpus.size());
  g.gpuOrdinal.assign(sys.nodes.size(), -1);
  for (int i = 0; i < g.nGpus; ++i) g.gpuOrdinal[static_cast<size_t>(gpus[static_cast<size_t>(i)])] = i;
  addFabric(sys, &g);
  addHostAndBundles(sys, &g);
  return g;
}

// The resources paths load: two per link, then the NVSwitch fabric per GPU (to, from), then
// the NIC ports (tx, rx).
struct Resources {
  std::vector<double> capacity;
  std::vector<std::string> names;
  std::vector<int> nicPort;  // per node: its tx resource, or -1
};

Resources listResources(const System& sys, const Graph& g, const std::vector<int>& gpus,
                        const std::vector<int>& nics) {
  Resources r;
  for (const Link& link : sys.links) {
    bool ok = validLink(sys, link);
    for (int dir = 0; dir < 2; ++dir) {
      r.capacity.push_back(ok ? link.bwGBs : 0.0);
      int a = dir == 0 ? link.from : link.to;
      int b = dir == 0 ? link.to : link.from;
      r.names.push_back(ok ? sys.describe(a) + " -> " + sys.describe(b) + " (" + linkTypeName(link.type) + ")"
                           : std::string("invalid link"));
    }
  }
  for (int i = 0; i < g.nGpus; ++i) {
    const std::string gpu = sys.describe(gpus[static_cast<size_t>(i)]);
    r.capacity.push_back(g.fabricBw[static_cast<size_t>(i)]);
    r.names.push_back(gpu + " -> NVSwitch fabric");
    r.capacity.push_back(g.fabricBw[static_cast<size_t>(i)]);
    r.names.push_back("NVSwitch fabric -> " + gpu);
  }
  r.nicPort.assign(sys.nodes.size(), -1);
  for (int nic : nics) {
    r.nicPort[static_cast<size_t>(nic)] = static_cast<int>(r.capacity.size());
    double port = nicPortGBs(sys, nic);
    r.capacity.push_back(port);
    r.names.push_back(sys.describe(nic) + " tx");
    r.capacity.push_back(port);
    r.names.push_back(sys.describe(nic) + " rx");
  }
  return r;
}

std::vector<int> bundleResources(const System& sys, int from, const Bundle& bundle) {
  std::vector<int> res;
  for (int l : bundle.links) res.push_back(directed(sys, l, from));
  return res;
}

// The GPU fabric between GPUs ga and gb (a is ga's node): a direct bundle, the NVSwitches, or
// one GPU in between; type kDis when there is none.
Path fabricPath(const System& sys, const Graph& g, const std::vector<int>& gpus, int a, int ga, int gb) {
  const int nGpus = g.nGpus, fabricBase = 2 * static_cast<int>(sys.links.size());
  Path fabric;
  const Bundle& d = g.direct[static_cast<size_t>(ga * nGpus + gb)];
  if (d.count > 0) {
    fabric.type = d.type == LinkType::kXgmi ? PathType::kXgmi : PathType::kNvl;
    fabric.nLinks = d.count;
    fabric.bwGBs = d.bwGBs;
    fabric.hops = 1;
    fabric.resources = bundleResources(sys, a, d);
  }
  double viaSwitch = std::min(g.fabricBw[static_cast<size_t>(ga)], g.fabricBw[static_cast<size_t>(gb)]);
  if (viaSwitch > fabric.bwGBs) {
    fabric.type = PathType::kNvl;
    fabric.nLinks = std::min(g.fabricLinks[static_cast<size_t>(ga)], g.fabricLinks[static_cast<size_t>(gb)]);
    fabric.bwGBs = viaSwitch;
    fabric.hops = 2;
    fabric.resources = {fabricBase + 2 * ga, fabricBase + 2 * gb + 1};
  }
  if (fabric.type != PathType::kDis) return fabric;
  for (int gc = 0; gc < nGpus; ++gc) {
    const Bundle& first = g.direct[static_cast<size_t>(ga * nGpus + gc)];
    const Bundle& second = g.direct[static_cast<size_t>(gc * nGpus + gb)];
    if (first.count == 0 || second.count == 0) continue;
    double bw = std::min(first.bwGBs, second.bwGBs);
    if (bw <= fabric.bwGBs) continue;
    fabric.type = PathType::kNvb;
    fabric.bwGBs = bw;
    fabric.hops = 2;
    fabric.resources = bundleResources(sys, a, first);
    std::vector<int> more = bundleResources(sys, gpus[static_cast<size_t>(gc)], second);
    fabric.resources.insert(fabric.resources.end(), more.begin(), more.end());
  }
  return fabric;
}

}  // namespace

PathMatrix computePaths(const System& sys) {
  PathMatrix m;
  const int n = static_cast<int>(sys.nodes.size());
  m.nNodes_ = n;
  m.paths_.assign(static_cast<size_t>(n) * n, Path());
  m.gpus_ = sys.nodesOfType(NodeType::kGpu);
  m.nics_ = sys.nodesOfType(NodeType::kNic);
  const Graph g = buildGraph(sys, m.gpus_);
  Resources res = listResources(sys, g, m.gpus_, m.nics_);
  m.capacity_ = std::move(res.capacity);
  m.resourceNames_ = std::move(res.names);
  m.nicPort_ = std::move(res.nicPort);

  std::vector<int> endpoints = m.gpus_;
  endpoints.insert(endpoints.end(), m.nics_.begin(), m.nics_.end());
  for (int a : endpoints) {
    HostRoutes routes(sys, g.host, a);
    for (int b : endpoints) {
      Path& p = m.paths_[static_cast<size_t>(a) * n + b];
      if (a == b) {
        p.type = PathType::kLoc;
        continue;
      }
      p = routes.to(b);
      int ga = g.gpuOrdinal[static_cast<size_t>(a)], gb = g.gpuOrdinal[static_cast<size_t>(b)];
      if (ga < 0 || gb < 0) continue;
      Path fabric = fabricPath(sys, g, m.gpus_, a, ga, gb);
      bool useFabric = fabric.type != PathType::kDis &&
                       (fabric.type != PathType::kNvb || p.type == PathType::kDis || fabric.bwGBs >= p.bwGBs);
      if (useFabric) p = fabric;
    }
  }
  return m;
}

std::string pathLabel(const Path& p) {
  char text[32];
  switch (p.type) {
    case PathType::kLoc:
      return "X";
    case PathType::kNvl:
      std::snprintf(text, sizeof(text), "NV%d", p.nLinks);
      return text;
    case PathType::kXgmi:
      std::snprintf(text, sizeof(text), "XGMI%d", p.nLinks);
      return text;
    default:
      return pathTypeName(p.type);
  }
}

std::string pathLabel(const PathMatrix& m, int from, int to) { return pathLabel(m.at(from, to)); }

int nearestNic(const System& sys, const PathMatrix& m, int gpuNode) {
  if (m.nics().empty() || gpuNode < 0 || gpuNode >= static_cast<int>(sys.nodes.size())) return -1;
  // The NICs tied for best from one GPU: lowest class, then widest.
  auto bestSet = [&](int gpu) {
    std::vector<int> best;
    for (int nic : m.nics()) {
      const Path& p = m.at(gpu, nic);
      if (best.empty()) {
        best.push_back(nic);
        continue;
      }
      const Path& q = m.at(gpu, best.front());
      if (p.type < q.type || (p.type == q.type && p.bwGBs > q.bwGBs)) {
        best.assign(1, nic);
      } else if (p.type == q.type && p.bwGBs == q.bwGBs) {
        best.push_back(nic);
      }
    }
    return best;
  };
  std::vector<int> mine = bestSet(gpuNode);
  int index = 0;
  for (int gpu : m.gpus()) {
    if (gpu == gpuNode) break;
    if (bestSet(gpu) == mine) ++index;
  }
  return mine[static_cast<size_t>(index) % mine.size()];
}

// ---------------------------------------------------------------------------------------------
// Cluster

namespace {

// A node with no NIC in its model still reaches other hosts through some Ethernet port the
// model does not show: 10 Gb/s, the slowest port a server ships with today.
constexpr double kHostEthernetMbps = 10000.0;

// A fingerprint of a System's content: equal ones share their paths.
std::string signature(const System& s) {
  std::string out;
  char text[160];
  for (const Node& n : s.nodes) {
    std::snprintf(text, sizeof(text), "%d|%s|%d|%s|%g|%g|%d;", static_cast<int>(n.type), n.pci.busId.c_str(), n.gpu.sm,
                  n.gpu.arch.c_str(), n.nic.speedMbps, n.nic.latencyUs, n.gpu.dev);
    out += text;
  }
  for (const Link& l : s.links) {
    std::snprintf(text, sizeof(text), "%d-%d:%d:%d:%.17g;", l.from, l.to, static_cast<int>(l.type), l.count, l.bwGBs);
    out += text;
  }
  return out;
}

}  // namespace

Cluster Cluster::uniform(const System& node, int nNodes) {
  Cluster c;
  c.kinds_.push_back(node);
  c.nodeKind_.assign(static_cast<size_t>(std::max(nNodes, 0)), 0);
  c.finish();
  return c;
}

Cluster Cluster::of(const std::vector<System>& nodes) {
  Cluster c;
  std::map<std::string, int> seen;
  for (const System& s : nodes) {
    auto inserted = seen.emplace(signature(s), static_cast<int>(c.kinds_.size()));
    if (inserted.second) c.kinds_.push_back(s);
    c.nodeKind_.push_back(inserted.first->second);
  }
  c.finish();
  return c;
}

void Cluster::finish() {
  for (const System& s : kinds_) {
    paths_.push_back(computePaths(s));
    const PathMatrix& pm = paths_.back();
    std::vector<int> nics;
    for (int g : pm.gpus()) nics.push_back(nearestNic(s, pm, g));
    kindNic_.push_back(nics);
  }
  firstRank_.assign(1, 0);
  resBase_.clear();
  rankNode_.clear();
  capacity_.clear();
  for (int node = 0; node < nNodes(); ++node) {
    const PathMatrix& pm = paths_[static_cast<size_t>(kindOf(node))];
    int gpus = static_cast<int>(pm.gpus().size());
    for (int g = 0; g < gpus; ++g) rankNode_.push_back(node);
    firstRank_.push_back(firstRank_.back() + gpus);
    resBase_.push_back(static_cast<int>(capacity_.size()));
    for (int r = 0; r < pm.nResources(); ++r) capacity_.push_back(pm.capacity(r));
    // The host Ethernet port used when the node has no NIC: tx, rx.
    capacity_.push_back(bw::net(kHostEthernetMbps));
    capacity_.push_back(bw::net(kHostEthernetMbps));
  }
}

int Cluster::gpuNode(int rank) const {
  int node = nodeOf(rank);
  return paths(node).gpus()[static_cast<size_t>(rank - firstRank(node))];
}

int Cluster::nicNode(int rank) const {
  int node = nodeOf(rank);
  return kindNic_[static_cast<size_t>(kindOf(node))][static_cast<size_t>(rank - firstRank(node))];
}

PathType Cluster::typeBetween(int a, int b) const {
  int na = nodeOf(a);
  if (na != nodeOf(b)) return PathType::kNet;
  return paths(na).at(gpuNode(a), gpuNode(b)).type;
}

double Cluster::nicLatencyUs(int rank) const {
  int nic = nicNode(rank);
  return nic < 0 ? 0.0 : system(nodeOf(rank)).nodes[static_cast<size_t>(nic)].nic.latencyUs;
}

void Cluster::route(int a, int b, std::vector<int>* out) const {
  int na = nodeOf(a);
  if (na == nodeOf(b)) {
    int base = resBase_[static_cast<size_t>(na)];
    for (int r : paths(na).at(gpuNode(a), gpuNode(b)).resources) out->push_back(base + r);
    return;
  }
  routeToNetwork(a, out);
  routeFromNetwork(b, out);
}

void Cluster::routeToNetwork(int rank, std::vector<int>* out) const {
  int node = nodeOf(rank);
  int base = resBase_[static_cast<size_t>(node)];
  const PathMatrix& pm = paths(node);
  int nic = nicNode(rank);
  if (nic < 0) {
    out->push_back(base + pm.nResources());
    return;
  }
  for (int r : pm.at(gpuNode(rank), nic).resources) out->push_back(base + r);
  out->push_back(base + pm.nicTx(nic));
}

void Cluster::routeFromNetwork(int rank, std::vector<int>* out) const {
  int node = nodeOf(rank);
  int base = resBase_[static_cast<size_t>(node)];
  const PathMatrix& pm = paths(node);
  int nic = nicNode(rank);
  if (nic < 0) {
    out->push_back(base + pm.nResources() + 1);
    return;
  }
  out->push_back(base + pm.nicRx(nic));
  for (int r : pm.at(nic, gpuNode(rank)).resources) out->push_back(base + r);
}

}  // namespace topo
}  // namespace weft
