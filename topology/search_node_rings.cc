// Rings inside one node (search.h describes the method): bottleneck search with branch and
// bound, mesh packing for a uniform full mesh, and the max-min fair rates of rings that share
// resources. search.cc joins the node rings into the job's rings and trees.
#include "topology/search_node_rings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace weft {
namespace topo {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kRel = 1e-9;  // rates within this relative margin are equal

// The ring with the highest rate on the bandwidth left (`residual`), by depth-first search with
// branch and bound. A partial ring's bound -- the least residual/uses over the resources it
// occupies -- only falls as edges are added, so a branch no better than the best ring so far is
// cut.
class BottleneckRing {
 public:
  BottleneckRing(const PathMatrix& pm, int64_t budget)
      : pm_(pm), n_(static_cast<int>(pm.gpus().size())), budget_(budget) {}

  double find(const std::vector<double>& residual, std::vector<int>* order) {
    residual_ = &residual;
    uses_.assign(residual.size(), 0);
    inRing_.assign(static_cast<size_t>(n_), 0);
    ring_.assign(1, 0);
    inRing_[0] = 1;
    best_ = 0;
    bestRing_.clear();
    steps_ = 0;
    // No ring beats the GPU whose best outgoing edge is slowest.
    upper_ = kInf;
    for (int i = 0; i < n_; ++i) {
      double top = 0;
      for (int j = 0; j < n_; ++j) {
        if (j != i) top = std::max(top, edgeRate(i, j));
      }
      upper_ = std::min(upper_, top);
    }
    extend(kInf);
    *order = bestRing_;
    return best_;
  }

 private:
  const Path& path(int i, int j) const {
    return pm_.at(pm_.gpus()[static_cast<size_t>(i)], pm_.gpus()[static_cast<size_t>(j)]);
  }

  // What edge i->j alone would get, given the uses the partial ring already makes.
  double edgeRate(int i, int j) const {
    const Path& p = path(i, j);
    if (p.type == PathType::kDis || p.resources.empty()) return 0;
    double rate = kInf;
    for (int r : p.resources)
      rate = std::min(rate, (*residual_)[static_cast<size_t>(r)] / (uses_[static_cast<size_t>(r)] + 1));
    return rate;
  }

  double add(int i, int j, double bound) {
    const Path& p = path(i, j);
    if (p.type == PathType::kDis || p.resources.empty()) return 0;
    for (int r : p.resources) {
      int u = ++uses_[static_cast<size_t>(r)];
      bound = std::min(bound, (*residual_)[static_cast<size_t>(r)] / u);
    }
    return bound;
  }

  void remove(int i, int j) {
    for (int r : path(i, j).resources) --uses_[static_cast<size_t>(r)];
  }

  bool done() const { return steps_ > budget_ || best_ >= upper_ * (1 - kRel); }

  void extend(double bound) {
    ++steps_;
    int last = ring_.back();
    if (static_cast<int>(ring_.size()) == n_) {
      double closed = add(last, ring_.front(), bound);
      if (closed > best_ * (1 + kRel)) {
        best_ = closed;
        bestRing_ = ring_;
      }
      remove(last, ring_.front());
      return;
    }
    // Next GPUs: the fastest edge first, then the closer path class, then PCI order.
    struct Candidate {
      double rate;
      PathType type;
      int gpu;
    };
    std::vector<Candidate> next;
    for (int j = 0; j < n_; ++j) {
      if (!inRing_[static_cast<size_t>(j)]) next.push_back({edgeRate(last, j), path(last, j).type, j});
    }
    std::stable_sort(next.begin(), next.end(), [](const Candidate& a, const Candidate& b) {
      if (a.rate != b.rate) return a.rate > b.rate;
      return a.type < b.type;
    });
    for (const Candidate& c : next) {
      if (done()) return;
      double b = add(last, c.gpu, bound);
      if (b > best_ * (1 + kRel)) {
        ring_.push_back(c.gpu);
        inRing_[static_cast<size_t>(c.gpu)] = 1;
        extend(b);
        inRing_[static_cast<size_t>(c.gpu)] = 0;
        ring_.pop_back();
      }
      remove(last, c.gpu);
    }
  }

  const PathMatrix& pm_;
  int n_;
  int64_t budget_;
  const std::vector<double>* residual_ = nullptr;
  std::vector<int> uses_;
  std::vector<char> inRing_;
  std::vector<int> ring_, bestRing_;
  double best_ = 0, upper_ = kInf;
  int64_t steps_ = 0;
};

// Rings one after another on the bandwidth the earlier ones leave.
NodeRings greedyRings(const PathMatrix& pm, const SearchOptions& options) {
  NodeRings out;
  out.method = "bottleneck search";
  std::vector<double> residual(static_cast<size_t>(pm.nResources()));
  for (int r = 0; r < pm.nResources(); ++r) residual[static_cast<size_t>(r)] = pm.capacity(r);
  BottleneckRing finder(pm, options.stepBudget);
  const int n = static_cast<int>(pm.gpus().size());
  while (static_cast<int>(out.orders.size()) < options.maxChannels) {
    std::vector<int> order;
    double rate = finder.find(residual, &order);
    if (order.empty() || rate <= 0 || (!out.rates.empty() && rate < 0.01 * out.rates.front())) break;
    for (int k = 0; k < n; ++k) {
      int a = pm.gpus()[static_cast<size_t>(order[static_cast<size_t>(k)])];
      int b = pm.gpus()[static_cast<size_t>(order[static_cast<size_t>((k + 1) % n)])];
      for (int r : pm.at(a, b).resources)
        residual[static_cast<size_t>(r)] = std::max(0.0, residual[static_cast<size_t>(r)] - rate);
    }
    out.orders.push_back(order);
    out.rates.push_back(rate);
  }
  return out;
}

// Every GPU pair joined by a direct bundle of one bandwidth (and at least three GPUs).
bool uniformMesh(const PathMatrix& pm) {
  const std::vector<int>& g = pm.gpus();
  if (g.size() < 3) return false;
  const Path& first = pm.at(g[0], g[1]);
  for (int a : g) {
    for (int b : g) {
      if (a == b) continue;
      const Path& p = pm.at(a, b);
      if ((p.type != PathType::kXgmi && p.type != PathType::kNvl) || p.hops != 1 || p.nLinks != first.nLinks ||
          std::fabs(p.bwGBs - first.bwGBs) > kRel * first.bwGBs) {
        return false;
      }
    }
  }
  return true;
}

// n-1 arc-disjoint directed Hamiltonian cycles of the complete directed graph, by depth-first
// search trying successors v+1, v+2, ... of each GPU v, backtracking across cycles (search.h).
class MeshPacking {
 public:
  MeshPacking(int n, int64_t budget) : n_(n), budget_(budget), used_(static_cast<size_t>(n) * n, 0) {
    for (int v = 0; v < n; ++v) used_[static_cast<size_t>(v * n + v)] = 1;
  }

  std::vector<std::vector<int>> run() {
    inCycle_.assign(static_cast<size_t>(n_), 0);
    cycle(0);
    return best_;
  }

 private:
  bool cycle(int c) {
    if (c == n_ - 1) return true;
    current_.assign(1, 0);
    std::fill(inCycle_.begin(), inCycle_.end(), 0);
    inCycle_[0] = 1;
    return extend(c, 0);
  }

  bool extend(int c, int v) {
    if (++steps_ > budget_) return false;
    if (static_cast<int>(current_.size()) == n_) {
      if (arc(v, 0)) return false;
      arc(v, 0) = 1;
      cycles_.push_back(current_);
      if (cycles_.size() > best_.size()) best_ = cycles_;
      // The next cycle starts afresh; this one's state is restored if it fails.
      std::vector<int> saved = current_;
      std::vector<char> savedIn = inCycle_;
      if (cycle(c + 1)) return true;
      current_ = saved;
      inCycle_ = savedIn;
      cycles_.pop_back();
      arc(v, 0) = 0;
      return false;
    }
    for (int k = 1; k < n_; ++k) {
      int w = (v + k) % n_;
      if (inCycle_[static_cast<size_t>(w)] || arc(v, w)) continue;
      arc(v, w) = 1;
      inCycle_[static_cast<size_t>(w)] = 1;
      current_.push_back(w);
      if (extend(c, w)) return true;
      current_.pop_back();
      inCycle_[static_cast<size_t>(w)] = 0;
      arc(v, w) = 0;
      if (steps_ > budget_) return false;
    }
    return false;
  }

  char& arc(int a, int b) { return used_[static_cast<size_t>(a * n_ + b)]; }

  int n_;
  int64_t budget_;
  int64_t steps_ = 0;
  std::vector<char> used_;
  std::vector<char> inCycle_;
  std::vector<int> current_;
  std::vector<std::vector<int>> cycles_, best_;
};

double total(const std::vector<double>& v) {
  double t = 0;
  for (double x : v) t += x;
  return t;
}

}  // namespace

std::vector<double> shareRates(const std::vector<std::vector<int>>& rings, const EdgeRoute& routeOf,
                               const std::vector<double>& capacity) {
  const size_t nRings = rings.size();
  std::vector<std::vector<std::pair<int, int>>> uses(nRings);  // per ring: (resource, times)
  std::vector<int> tmp;
  for (size_t i = 0; i < nRings; ++i) {
    const std::vector<int>& ring = rings[i];
    tmp.clear();
    for (size_t k = 0; k < ring.size() && ring.size() > 1; ++k) routeOf(ring[k], ring[(k + 1) % ring.size()], &tmp);
    std::sort(tmp.begin(), tmp.end());
    for (size_t k = 0; k < tmp.size(); ++k) {
      if (k == 0 || tmp[k] != tmp[k - 1]) uses[i].push_back({tmp[k], 0});
      ++uses[i].back().second;
    }
  }
  std::vector<double> rates(nRings, 0.0);
  std::vector<char> fixed(nRings, 0);
  std::vector<double> left = capacity;
  std::vector<int> active(capacity.size(), 0);
  for (size_t i = 0; i < nRings; ++i) fixed[i] = uses[i].empty();
  for (;;) {
    std::fill(active.begin(), active.end(), 0);
    bool any = false;
    for (size_t i = 0; i < nRings; ++i) {
      if (fixed[i]) continue;
      any = true;
      for (const auto& u : uses[i]) active[static_cast<size_t>(u.first)] += u.second;
    }
    if (!any) break;
    double share = kInf;
    for (size_t r = 0; r < active.size(); ++r) {
      if (active[r] > 0) share = std::min(share, std::max(0.0, left[r]) / active[r]);
    }
    for (size_t i = 0; i < nRings; ++i) {
      if (fixed[i]) continue;
      bool full = false;
      for (const auto& u : uses[i]) {
        size_t r = static_cast<size_t>(u.first);
        full = full || std::max(0.0, left[r]) / active[r] <= share * (1 + kRel);
      }
      if (!full) continue;
      fixed[i] = 1;
      rates[i] = share;
    }
    for (size_t i = 0; i < nRings; ++i) {
      if (fixed[i] != 1) continue;
      for (const auto& u : uses[i]) left[static_cast<size_t>(u.first)] -= share * u.second;
      fixed[i] = 2;  // accounted
    }
  }
  return rates;
}

NodeRings nodeRings(const PathMatrix& pm, const SearchOptions& options) {
  const int n = static_cast<int>(pm.gpus().size());
  if (n <= 1) {
    NodeRings single;
    single.method = "one GPU";
    single.orders.push_back(std::vector<int>(static_cast<size_t>(n), 0));
    single.rates.push_back(0);
    return single;
  }
  NodeRings mesh;
  if (uniformMesh(pm)) {
    mesh.orders = MeshPacking(n, options.stepBudget).run();
    if (static_cast<int>(mesh.orders.size()) > options.maxChannels)
      mesh.orders.resize(static_cast<size_t>(options.maxChannels));
    std::vector<double> capacity(static_cast<size_t>(pm.nResources()));
    for (int r = 0; r < pm.nResources(); ++r) capacity[static_cast<size_t>(r)] = pm.capacity(r);
    auto routeOf = [&](int a, int b, std::vector<int>* out) {
      const Path& p = pm.at(pm.gpus()[static_cast<size_t>(a)], pm.gpus()[static_cast<size_t>(b)]);
      out->insert(out->end(), p.resources.begin(), p.resources.end());
    };
    mesh.rates = shareRates(mesh.orders, routeOf, capacity);
    char text[96];
    std::snprintf(text, sizeof(text), "mesh packing (%zu arc-disjoint rings of %d possible)", mesh.orders.size(),
                  n - 1);
    mesh.method = text;
    if (static_cast<int>(mesh.orders.size()) == std::min(n - 1, options.maxChannels)) return mesh;
  }
  NodeRings greedy = greedyRings(pm, options);
  return total(mesh.rates) >= total(greedy.rates) && !mesh.orders.empty() ? mesh : greedy;
}

}  // namespace topo
}  // namespace weft
