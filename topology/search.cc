#include "topology/search.h"

#include <algorithm>
#include <cstdio>

#include "topology/search_node_rings.h"

namespace weft {
namespace topo {

// ---------------------------------------------------------------------------------------------
// Chains through a node (its rings rotated to its NICs) and trees; the node rings themselves
// are search_node_rings.cc's.

namespace {

// The distinct NICs of a node kind, in the order of the first GPU (by dev) using each.
std::vector<int> distinctNics(const std::vector<int>& nicOfGpu) {
  std::vector<int> out;
  for (int nic : nicOfGpu) {
    if (nic >= 0 && std::find(out.begin(), out.end(), nic) == out.end()) out.push_back(nic);
  }
  return out;
}

// `order` rotated to start at a GPU using NIC `channel` mod (the distinct NICs); GPUs sharing
// that NIC take turns over the channels that come back to it.
std::vector<int> chainFor(const std::vector<int>& order, const std::vector<int>& nicOfGpu, int channel) {
  std::vector<int> nics = distinctNics(nicOfGpu);
  const int n = static_cast<int>(order.size());
  int start = n > 0 ? channel % n : 0;
  if (!nics.empty()) {
    int nic = nics[static_cast<size_t>(channel) % nics.size()];
    std::vector<int> positions;
    for (int k = 0; k < n; ++k) {
      if (nicOfGpu[static_cast<size_t>(order[static_cast<size_t>(k)])] == nic) positions.push_back(k);
    }
    start = positions[static_cast<size_t>(channel / static_cast<int>(nics.size())) % positions.size()];
  }
  std::vector<int> chain(order.begin() + start, order.end());
  chain.insert(chain.end(), order.begin(), order.begin() + start);
  return chain;
}

// Where each channel's chain starts in one kind of node. The chain receives from the network
// at its first GPU (through that GPU's NIC) and sends from its last, the ring predecessor of the
// first; with several node rings the last GPUs differ per ring, so the starts are chosen by a
// small search that gives every NIC an equal share of both directions. If that fails within
// the budget, the plain rotation of chainFor() is used.
class ChainStarts {
 public:
  ChainStarts(const std::vector<std::vector<int>>& rings, const std::vector<int>& nicOfGpu, int channels)
      : rings_(rings), nics_(distinctNics(nicOfGpu)), channels_(channels) {
    for (int nic : nicOfGpu) {
      nicIndex_.push_back(static_cast<int>(std::find(nics_.begin(), nics_.end(), nic) - nics_.begin()));
    }
    if (!nics_.empty()) cap_ = (channels + static_cast<int>(nics_.size()) - 1) / static_cast<int>(nics_.size());
    rx_.assign(nics_.size(), 0);
    tx_.assign(nics_.size(), 0);
  }

  std::vector<std::vector<int>> chains(const std::vector<int>& nicOfGpu) {
    std::vector<std::vector<int>> out;
    bool balanced = !nics_.empty() && place(0);
    for (int c = 0; c < channels_; ++c) {
      const std::vector<int>& order = rings_[static_cast<size_t>(c) % rings_.size()];
      if (!balanced) {
        out.push_back(chainFor(order, nicOfGpu, c));
        continue;
      }
      size_t start =
          static_cast<size_t>(std::find(order.begin(), order.end(), starts_[static_cast<size_t>(c)]) - order.begin());
      std::vector<int> chain(order.begin() + static_cast<long>(start), order.end());
      chain.insert(chain.end(), order.begin(), order.begin() + static_cast<long>(start));
      out.push_back(chain);
    }
    return out;
  }

 private:
  bool place(int c) {
    if (c == channels_) return true;
    if (++steps_ > kBudget) return false;
    const std::vector<int>& order = rings_[static_cast<size_t>(c) % rings_.size()];
    const int n = static_cast<int>(order.size());
    const int want = c % static_cast<int>(nics_.size());
    // GPUs of the channel's own NIC first, then the others.
    for (int pass = 0; pass < 2; ++pass) {
      for (int k = 0; k < n; ++k) {
        int s = order[static_cast<size_t>(k)];
        int last = order[static_cast<size_t>((k + n - 1) % n)];
        int in = nicIndex_[static_cast<size_t>(s)], out = nicIndex_[static_cast<size_t>(last)];
        if ((in == want) != (pass == 0)) continue;
        if (rx_[static_cast<size_t>(in)] >= cap_ || tx_[static_cast<size_t>(out)] >= cap_) continue;
        ++rx_[static_cast<size_t>(in)];
        ++tx_[static_cast<size_t>(out)];
        starts_.push_back(s);
        if (place(c + 1)) return true;
        starts_.pop_back();
        --rx_[static_cast<size_t>(in)];
        --tx_[static_cast<size_t>(out)];
        if (steps_ > kBudget) return false;
      }
    }
    return false;
  }

  static constexpr int64_t kBudget = 100000;
  const std::vector<std::vector<int>>& rings_;
  std::vector<int> nics_;
  std::vector<int> nicIndex_;  // per local GPU: index in nics_
  int channels_;
  int cap_ = 0;
  std::vector<int> rx_, tx_, starts_;
  int64_t steps_ = 0;
};

int btreeParent(int n, int pos) {
  if (pos == 0) return -1;
  int bit = pos & -pos;
  int up = (pos ^ bit) | (bit << 1);
  return up >= n ? (pos ^ bit) : up;
}

void fillTree(const std::vector<int>& parentPos, const std::vector<int>& posRank, Tree* t) {
  const size_t n = posRank.size();
  t->parent.assign(n, -1);
  t->children.assign(n, {-1, -1});
  std::vector<int> depth(n, -1);
  t->depth = 0;
  for (size_t pos = 0; pos < n; ++pos) {
    int rank = posRank[pos];
    int pp = parentPos[pos];
    if (pp < 0) {
      t->root = rank;
      continue;
    }
    int parent = posRank[static_cast<size_t>(pp)];
    t->parent[static_cast<size_t>(rank)] = parent;
    auto& kids = t->children[static_cast<size_t>(parent)];
    (kids[0] < 0 ? kids[0] : kids[1]) = rank;
  }
  for (size_t pos = 0; pos < n; ++pos) {
    // Walk up to a known depth, then fill in on the way back.
    std::vector<size_t> chain;
    size_t p = pos;
    while (depth[p] < 0 && parentPos[p] >= 0) {
      chain.push_back(p);
      p = static_cast<size_t>(parentPos[p]);
    }
    if (depth[p] < 0) depth[p] = 0;
    for (size_t k = chain.size(); k-- > 0;) depth[chain[k]] = depth[static_cast<size_t>(parentPos[chain[k]])] + 1;
    t->depth = std::max(t->depth, depth[pos]);
  }
}

std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  const size_t shown = ranks.size() > 40 ? 32 : ranks.size();
  for (size_t k = 0; k < shown; ++k) out += (k ? " " : "") + std::to_string(ranks[k]);
  if (shown < ranks.size()) out += " ... (" + std::to_string(ranks.size()) + " ranks)";
  return out;
}

}  // namespace

void doubleBinaryTree(int n, std::vector<int>* parent0, std::vector<int>* parent1) {
  parent0->assign(static_cast<size_t>(n), -1);
  parent1->assign(static_cast<size_t>(n), -1);
  for (int pos = 0; pos < n; ++pos) {
    (*parent0)[static_cast<size_t>(pos)] = btreeParent(n, pos);
    int p;
    if (n % 2 == 0) {
      // Mirror: position n-1-pos of tree 0.
      int m = btreeParent(n, n - 1 - pos);
      p = m < 0 ? -1 : n - 1 - m;
    } else {
      // Shift by one: position pos-1 of tree 0.
      int m = btreeParent(n, (pos - 1 + n) % n);
      p = m < 0 ? -1 : (m + 1) % n;
    }
    (*parent1)[static_cast<size_t>(pos)] = p;
  }
}

std::vector<std::vector<int>> nodeChains(const std::vector<std::vector<int>>& rings, const std::vector<int>& nicOfGpu,
                                         int channels) {
  if (rings.empty() || channels < 1) return {};
  return ChainStarts(rings, nicOfGpu, channels).chains(nicOfGpu);
}

// ---------------------------------------------------------------------------------------------
// The whole job

SearchResult search(const System& node, const SearchOptions& options) {
  return search(Cluster::uniform(node, 1), options);
}

namespace {

// What the search knows about each kind of node: its rings and each GPU's NIC.
struct NodeKinds {
  std::vector<NodeRings> rings;
  std::vector<std::vector<int>> nicOf;  // per kind, per local GPU
  std::string method;
};

NodeKinds searchNodes(const Cluster& cluster, const SearchOptions& options) {
  NodeKinds k;
  const size_t nKinds = static_cast<size_t>(cluster.nKinds());
  k.rings.resize(nKinds);
  k.nicOf.resize(nKinds);
  std::vector<bool> seen(nKinds, false);
  for (int node = 0; node < cluster.nNodes(); ++node) {
    size_t kind = static_cast<size_t>(cluster.kindOf(node));
    if (seen[kind]) continue;
    seen[kind] = true;
    k.rings[kind] = nodeRings(cluster.paths(node), options);
    for (int r = 0; r < cluster.ranksOn(node); ++r)
      k.nicOf[kind].push_back(cluster.nicNode(cluster.firstRank(node) + r));
    if (k.method.find(k.rings[kind].method) == std::string::npos) {
      k.method += (k.method.empty() ? "" : "; ") + k.rings[kind].method;
    }
  }
  return k;
}

// One node keeps its rings; several join one chain per node per channel over the network.
std::vector<Ring> joinRings(const Cluster& cluster, const NodeKinds& kinds, const SearchOptions& options,
                            const std::vector<double>& capacity) {
  std::vector<Ring> out;
  if (cluster.nNodes() == 1) {
    const NodeRings& l = kinds.rings[0];
    for (size_t c = 0; c < l.orders.size(); ++c) out.push_back(Ring{l.orders[c], l.rates[c]});
    return out;
  }
  // A channel per node ring or per NIC, whichever a kind of node has more of.
  const size_t nKinds = kinds.rings.size();
  int channels = 1;
  for (size_t k = 0; k < nKinds; ++k) {
    channels = std::max({channels, static_cast<int>(kinds.rings[k].orders.size()),
                         static_cast<int>(distinctNics(kinds.nicOf[k]).size())});
  }
  channels = std::min(channels, std::max(1, options.maxChannels));
  std::vector<std::vector<std::vector<int>>> chains(nKinds);  // [kind][channel]
  for (size_t k = 0; k < nKinds; ++k)
    chains[k] = nodeChains(kinds.rings[k].orders, kinds.nicOf[k], channels);
  std::vector<std::vector<int>> rings(static_cast<size_t>(channels));
  for (int c = 0; c < channels; ++c) {
    std::vector<int>& ring = rings[static_cast<size_t>(c)];
    ring.reserve(static_cast<size_t>(cluster.nRanks()));
    for (int node = 0; node < cluster.nNodes(); ++node) {
      for (int g : chains[static_cast<size_t>(cluster.kindOf(node))][static_cast<size_t>(c)]) {
        ring.push_back(cluster.firstRank(node) + g);
      }
    }
  }
  auto routeOf = [&](int a, int b, std::vector<int>* v) { cluster.route(a, b, v); };
  std::vector<double> rates = shareRates(rings, routeOf, capacity);
  for (size_t c = 0; c < rings.size(); ++c) out.push_back(Ring{std::move(rings[c]), rates[c]});
  return out;
}

// One double binary tree pair per channel (one per NIC of the first node, one for a single
// node); positions follow the nodes, inside a node its first ring rotated to the channel's NIC.
std::vector<TreePair> buildTrees(const Cluster& cluster, const NodeKinds& kinds, const SearchOptions& options,
                                 const std::vector<double>& capacity) {
  const int n = cluster.nRanks();
  int channels = 1;
  if (cluster.nNodes() > 1) {
    channels = static_cast<int>(distinctNics(kinds.nicOf[static_cast<size_t>(cluster.kindOf(0))]).size());
    channels = std::min(std::max(channels, 1), std::max(1, options.maxChannels));
  }
  std::vector<int> parent0, parent1;
  doubleBinaryTree(n, &parent0, &parent1);
  // Loads per unit of all-reduce data: each tree carries half, each pair 1/channels of that,
  // once up (reduce) and once down (broadcast).
  std::vector<double> up(capacity.size(), 0.0), down(capacity.size(), 0.0);
  const double share = 0.5 / channels;
  std::vector<int> tmp;
  std::vector<TreePair> out;
  for (int t = 0; t < channels; ++t) {
    std::vector<int> posRank;
    posRank.reserve(static_cast<size_t>(n));
    for (int node = 0; node < cluster.nNodes(); ++node) {
      size_t kind = static_cast<size_t>(cluster.kindOf(node));
      const std::vector<int>& ring = kinds.rings[kind].orders[0];
      std::vector<int> chain = cluster.nNodes() == 1 ? ring : chainFor(ring, kinds.nicOf[kind], t);
      for (int g : chain) posRank.push_back(cluster.firstRank(node) + g);
    }
    TreePair pair;
    fillTree(parent0, posRank, &pair.trees[0]);
    fillTree(parent1, posRank, &pair.trees[1]);
    for (const Tree& tree : pair.trees) {
      for (int r = 0; r < n; ++r) {
        int p = tree.parent[static_cast<size_t>(r)];
        if (p < 0) continue;
        tmp.clear();
        cluster.route(r, p, &tmp);
        for (int res : tmp) up[static_cast<size_t>(res)] += share;
        tmp.clear();
        cluster.route(p, r, &tmp);
        for (int res : tmp) down[static_cast<size_t>(res)] += share;
      }
    }
    out.push_back(std::move(pair));
  }
  // The data rate at which the busiest resource is full, split over the pairs.
  double worstBoth = 0, worstUp = 0, worstDown = 0;
  for (size_t r = 0; r < capacity.size(); ++r) {
    if (capacity[r] <= 0) continue;
    worstBoth = std::max(worstBoth, (up[r] + down[r]) / capacity[r]);
    worstUp = std::max(worstUp, up[r] / capacity[r]);
    worstDown = std::max(worstDown, down[r] / capacity[r]);
  }
  for (TreePair& pair : out) {
    pair.bwGBs = worstBoth > 0 ? 1.0 / worstBoth / channels : 0.0;
    pair.reduceBwGBs = worstUp > 0 ? 1.0 / worstUp / channels : 0.0;
    pair.bcastBwGBs = worstDown > 0 ? 1.0 / worstDown / channels : 0.0;
  }
  return out;
}

}  // namespace

SearchResult search(const Cluster& cluster, const SearchOptions& options) {
  SearchResult out;
  out.nRanks = cluster.nRanks();
  out.nNodes = cluster.nNodes();
  if (out.nRanks == 0) return out;
  NodeKinds kinds = searchNodes(cluster, options);
  out.method = kinds.method;
  std::vector<double> capacity(static_cast<size_t>(cluster.nResources()));
  for (int r = 0; r < cluster.nResources(); ++r) capacity[static_cast<size_t>(r)] = cluster.capacity(r);
  out.rings = joinRings(cluster, kinds, options, capacity);
  out.trees = buildTrees(cluster, kinds, options, capacity);
  return out;
}

double SearchResult::ringBwGBs() const {
  double t = 0;
  for (const Ring& r : rings) t += r.bwGBs;
  return t;
}

double SearchResult::treeBwGBs() const {
  double t = 0;
  for (const TreePair& p : trees) t += p.bwGBs;
  return t;
}

std::string SearchResult::describe() const {
  std::string out;
  char text[256];
  std::snprintf(text, sizeof(text), "%d ranks on %d node%s; node rings by %s\n", nRanks, nNodes, nNodes == 1 ? "" : "s",
                method.c_str());
  out += text;
  for (size_t c = 0; c < rings.size(); ++c) {
    std::snprintf(text, sizeof(text), "ring %zu (%.1f GB/s): ", c, rings[c].bwGBs);
    out += text + rankList(rings[c].ranks) + "\n";
  }
  std::snprintf(text, sizeof(text), "rings together: %.1f GB/s\n", ringBwGBs());
  out += text;
  for (size_t t = 0; t < trees.size(); ++t) {
    const TreePair& p = trees[t];
    std::snprintf(text, sizeof(text), "tree pair %zu (%.1f GB/s all-reduce): roots %d and %d, depth %d and %d\n", t,
                  p.bwGBs, p.trees[0].root, p.trees[1].root, p.trees[0].depth, p.trees[1].depth);
    out += text;
  }
  return out;
}

}  // namespace topo
}  // namespace weft
