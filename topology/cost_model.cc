#include "topology/cost_model.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace weft {
namespace topo {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Per-step latency of one edge, LL.
double alphaLL(PathType t, double nicLatencyUs, const CostParams& p) {
  switch (t) {
    case PathType::kLoc:
      return 0.0;
    case PathType::kNvl:
    case PathType::kXgmi:
    case PathType::kNvb:
      return p.alphaLLFabricUs();
    case PathType::kPix:
      return p.alphaLLPixUs;
    case PathType::kPxb:
      return p.alphaLLPxbUs;
    case PathType::kPhb:
    case PathType::kNode:
      return p.alphaLLHostUs;
    case PathType::kSys:
    case PathType::kDis:
      return p.alphaLLSysUs;
    case PathType::kNet:
      return (nicLatencyUs > 0 ? nicLatencyUs : p.netLatencyUs) + p.proxyUs;
  }
  return p.alphaLLSysUs;
}

double edgeAlpha(const Cluster& c, int from, int to, Protocol proto, const CostParams& p) {
  PathType t = c.typeBetween(from, to);
  double ll = alphaLL(t, t == PathType::kNet ? c.nicLatencyUs(from) : 0.0, p);
  return proto == Protocol::kLL ? ll : 2.0 * ll + p.fenceUs;
}

// The fraction of a channel's raw rate that carries payload.
double efficiency(Protocol proto, double channelRate, const CostParams& p) {
  if (proto == Protocol::kLL) return p.llPayload;
  if (channelRate <= 0) return 1.0;
  double slotUs = p.slotBytes / (channelRate * 1e3);  // GB/s = 1e3 bytes per microsecond
  return slotUs / (slotUs + p.fenceUs);
}

// Payload bandwidth of `channels` channels spread round robin over lanes (rings or tree pairs)
// of the given rates: each lane's rate is shared by its channels, each channel capped at what
// its thread block moves (channelGBs) divided by `bytesPerPayload`, the bytes each rank sends
// per byte of the rate (1 where the rate counts bytes sent, as ring rates in bus bandwidth do).
double effectiveBw(const std::vector<double>& laneRates, int channels, Protocol proto, const CostParams& p,
                   double bytesPerPayload = 1.0) {
  const int lanes = static_cast<int>(laneRates.size());
  double total = 0;
  for (int i = 0; i < lanes; ++i) {
    int mult = channels / lanes + (i < channels % lanes ? 1 : 0);
    if (mult == 0) continue;
    double perChannel = std::min(p.channelGBs / bytesPerPayload, laneRates[static_cast<size_t>(i)] / mult);
    total += mult * perChannel * efficiency(proto, perChannel * bytesPerPayload, p);
  }
  return total;
}

// Mean per-step latency around a ring: a chunk's path crosses every edge in turn.
double ringMeanAlpha(const Cluster& c, const Ring& ring, Protocol proto, const CostParams& p) {
  const size_t n = ring.ranks.size();
  if (n < 2) return 0.0;
  double sum = 0;
  for (size_t k = 0; k < n; ++k) sum += edgeAlpha(c, ring.ranks[k], ring.ranks[(k + 1) % n], proto, p);
  return sum / static_cast<double>(n);
}

// The slowest root-to-leaf latency of a tree (sum of the edges' alphas).
double treeDepthAlpha(const Cluster& c, const Tree& t, Protocol proto, const CostParams& p) {
  const size_t n = t.parent.size();
  std::vector<double> acc(n, -1.0);
  double worst = 0;
  std::vector<int> chain;
  for (size_t r = 0; r < n; ++r) {
    chain.clear();
    int v = static_cast<int>(r);
    while (acc[static_cast<size_t>(v)] < 0 && t.parent[static_cast<size_t>(v)] >= 0) {
      chain.push_back(v);
      v = t.parent[static_cast<size_t>(v)];
    }
    if (acc[static_cast<size_t>(v)] < 0) acc[static_cast<size_t>(v)] = 0;  // the root
    for (size_t k = chain.size(); k-- > 0;) {
      int child = chain[k];
      int parent = t.parent[static_cast<size_t>(child)];
      acc[static_cast<size_t>(child)] = acc[static_cast<size_t>(parent)] + edgeAlpha(c, parent, child, proto, p);
    }
    worst = std::max(worst, acc[r]);
  }
  return worst;
}

double ringTime(const CostInput& in, int channels, double fixedUs) {
  const int n = in.cluster->nRanks();
  const SearchResult& topo = *in.topo;
  if (topo.rings.empty()) return kInf;
  // A ring moves the bus-bandwidth share of the data per rank (that is how nccl-tests defines
  // busbw), in n - 1 steps per pass: all-reduce two passes (reduce-scatter, all-gather), the
  // others one (broadcast and reduce as a pipelined chain: the first chunk crosses n - 1 edges,
  // then every chunk follows).
  const double dataFactor = coll::collBusBwFactor(in.collective, n);
  const double steps = (n - 1) * (coll::collTraits(in.collective).busBw == coll::BusBw::kTwoShares ? 2.0 : 1.0);
  std::vector<double> rates;
  double alpha = 0;
  for (size_t i = 0; i < topo.rings.size() && static_cast<int>(i) < channels; ++i) {
    rates.push_back(topo.rings[i].bwGBs);
    alpha = std::max(alpha, ringMeanAlpha(*in.cluster, topo.rings[i], in.protocol, in.params));
  }
  double bw = effectiveBw(rates, channels, in.protocol, in.params);
  if (bw <= 0) return kInf;
  return fixedUs + steps * alpha + dataFactor * static_cast<double>(in.bytes) / (bw * 1e3);
}

double treeTime(const CostInput& in, int channels, double fixedUs) {
  const SearchResult& topo = *in.topo;
  // A rooted collective goes one way through the trees (broadcast down, reduce up); all-reduce
  // goes up, then down.
  const coll::CollTraits& t = coll::collTraits(in.collective);
  if (topo.trees.empty()) return kInf;
  std::vector<double> rates;
  double depth = 0;
  for (size_t i = 0; i < topo.trees.size() && static_cast<int>(i) < channels; ++i) {
    const TreePair& pair = topo.trees[i];
    rates.push_back(!t.rooted ? pair.bwGBs : t.reduces ? pair.reduceBwGBs : pair.bcastBwGBs);
    for (const Tree& tree : pair.trees) {
      depth = std::max(depth, treeDepthAlpha(*in.cluster, tree, in.protocol, in.params));
    }
  }
  // A tree pair's rate counts bytes of the buffer, but a channel's thread block is bounded by the
  // bytes it sends: an all-reduce rank sends about two per buffer byte (interior in one tree: half
  // the data to its parent and to two children, 1.5; a leaf in the other: its half up, 0.5 -- NCCL
  // prices tree all-reduce at half its bus bandwidth for the same reason), a rooted collective one.
  double bw = effectiveBw(rates, channels, in.protocol, in.params, t.rooted ? 1.0 : 2.0);
  if (bw <= 0) return kInf;
  double latency = (t.rooted ? 1.0 : 2.0) * depth;
  return fixedUs + latency + static_cast<double>(in.bytes) / (bw * 1e3);
}

// Every rank sends bytes/n to every other at once; the busiest resource sets the pace.
double allToAllTime(const CostInput& in, int /*channels*/, double fixedUs) {
  const Cluster& c = *in.cluster;
  const int n = c.nRanks();
  const double block = static_cast<double>(in.bytes) / n;
  std::vector<double> load(static_cast<size_t>(c.nResources()), 0.0);
  std::vector<int> tmp;
  auto add = [&](double bytes) {
    for (int r : tmp) load[static_cast<size_t>(r)] += bytes;
    tmp.clear();
  };
  for (int node = 0; node < c.nNodes(); ++node) {
    const int first = c.firstRank(node), local = c.ranksOn(node), remote = n - local;
    for (int a = first; a < first + local; ++a) {
      for (int b = first; b < first + local; ++b) {
        if (b == a) continue;
        c.route(a, b, &tmp);
        add(block);
      }
      if (remote > 0) {
        c.routeToNetwork(a, &tmp);
        add(block * remote);
        c.routeFromNetwork(a, &tmp);
        add(block * remote);
      }
    }
  }
  double worst = 0;
  for (int r = 0; r < c.nResources(); ++r) {
    if (c.capacity(r) > 0) worst = std::max(worst, load[static_cast<size_t>(r)] / (c.capacity(r) * 1e3));
  }
  double alpha = 0;
  for (int b = 1; b < n; ++b) alpha = std::max(alpha, edgeAlpha(c, 0, b, in.protocol, in.params));
  return fixedUs + alpha + (n - 1) * in.params.perPeerUs +
         worst / efficiency(in.protocol, in.params.channelGBs, in.params);
}

// The algorithms the model prices; the others (recursive doubling) are +infinity.
struct Pricer {
  coll::Algo algo;
  double (*time)(const CostInput& in, int channels, double fixedUs);
  bool channels;  // its time depends on the channel count (all-to-all uses one)
};
constexpr Pricer kPricers[] = {
    {coll::Algo::kRing, ringTime, true},
    {coll::Algo::kTree, treeTime, true},
    {coll::Algo::kPairwise, allToAllTime, false},
};
const Pricer* pricerFor(coll::Algo algo) {
  for (const Pricer& p : kPricers) {
    if (p.algo == algo) return &p;
  }
  return nullptr;
}

}  // namespace

const char* algoLabel(coll::Algo a) {
  static const auto labels = [] {
    std::array<std::string, coll::kNumAlgos> out;
    for (int i = 0; i < coll::kNumAlgos; ++i) {
      out[i] = coll::kAlgoTraits[i].name;
      out[i][0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[i][0])));
    }
    return out;
  }();
  return static_cast<int>(a) < coll::kNumAlgos ? labels[static_cast<int>(a)].c_str() : "Unknown";
}

const char* protocolName(Protocol p) { return p == Protocol::kLL ? "LL" : "Simple"; }

double predictTime(const CostInput& in) {
  if (in.cluster == nullptr || in.topo == nullptr || in.bytes < 0) return kInf;
  const CostParams& p = in.params;
  const double fixedUs = (in.graphCaptured ? 0.0 : p.hostLaunchUs()) + p.kernelBaseUs;
  if (in.cluster->nRanks() <= 1) return fixedUs;
  const int channels = std::max(1, in.channels > 0 ? in.channels : p.maxChannels);
  const Pricer* pricer = pricerFor(in.algorithm);
  if (pricer == nullptr || !coll::algoSupported(in.collective, in.algorithm)) return kInf;
  return pricer->time(in, channels, fixedUs);
}

Prediction predict(const CostInput& in) {
  Prediction out;
  out.algorithm = in.algorithm;
  out.protocol = in.protocol;
  out.channels = std::max(1, in.channels > 0 ? in.channels : in.params.maxChannels);
  out.timeUs = predictTime(in);
  if (out.timeUs > 0 && out.timeUs < kInf) {
    out.algBwGBs = static_cast<double>(in.bytes) / (out.timeUs * 1e3);
    out.busBwGBs = out.algBwGBs * coll::collBusBwFactor(in.collective, in.cluster->nRanks());
  }
  return out;
}

Prediction predictBest(const Cluster& cluster, const SearchResult& topo, coll::CollKind c, int64_t bytes,
                       bool graphCaptured, const CostParams& params) {
  BestOptions options;
  options.graphCaptured = graphCaptured;
  options.params = params;
  return predictBestOf(cluster, topo, c, bytes, options);
}

namespace {

// The channel counts worth pricing between lo and hi: powers of two, the search's ring and tree
// counts, and the bounds.
std::vector<int> channelCandidates(const SearchResult& topo, int lo, int hi) {
  std::vector<int> counts{lo, hi, static_cast<int>(topo.rings.size()), static_cast<int>(topo.trees.size())};
  for (int k = 1; k <= hi; k *= 2) counts.push_back(k);
  counts.erase(std::remove_if(counts.begin(), counts.end(), [&](int k) { return k < lo || k > hi; }), counts.end());
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

}  // namespace

Prediction predictBestOf(const Cluster& cluster, const SearchResult& topo, coll::CollKind c, int64_t bytes,
                         const BestOptions& options) {
  const int hi = std::max(1, options.maxChannels > 0 ? options.maxChannels : options.params.maxChannels);
  const std::vector<int> channelCounts = channelCandidates(topo, std::clamp(options.minChannels, 1, hi), hi);
  std::vector<Prediction> all;
  CostInput in;
  in.cluster = &cluster;
  in.topo = &topo;
  in.collective = c;
  in.bytes = bytes;
  in.graphCaptured = options.graphCaptured;
  in.params = options.params;
  for (const Pricer& pricer : kPricers) {
    if (!coll::algoSupported(c, pricer.algo) || (options.algos & (1u << static_cast<int>(pricer.algo))) == 0) continue;
    for (Protocol p : {Protocol::kLL, Protocol::kSimple}) {
      for (int k : channelCounts) {
        if (!pricer.channels && k != channelCounts.front()) break;
        in.algorithm = pricer.algo;
        in.protocol = p;
        in.channels = k;
        all.push_back(predict(in));
      }
    }
  }
  if (all.empty()) {
    Prediction none;
    none.timeUs = kInf;
    return none;
  }
  double least = kInf;
  for (const Prediction& p : all) least = std::min(least, p.timeUs);
  // Within 1% of the least, the fewest channels, then the fastest.
  const Prediction* best = &all.front();
  bool found = false;
  for (const Prediction& p : all) {
    if (!(p.timeUs <= least * 1.01)) continue;
    if (!found || p.channels < best->channels || (p.channels == best->channels && p.timeUs < best->timeUs)) {
      best = &p;
      found = true;
    }
  }
  return *best;
}

double predictHostTime(const HostCostInput& in) {
  const HostCostParams& p = in.params;
  const int n = in.nRanks;
  if (in.nRanks <= 1 || in.bytes <= 0) return p.callUs;
  if (!coll::algoSupported(in.collective, in.algorithm)) return kInf;
  const HostWork& w = in.work;
  const bool inCache = w.copies + w.reduces <= p.cacheBytes;
  const double copyRate = (inCache ? p.copyGBs : p.memCopyGBs) * 1e3;  // bytes per microsecond
  const double reduceRate = (inCache ? p.reduceGBs : p.memReduceGBs) * 1e3;
  double dataUs = w.copies / copyRate + w.reduces / reduceRate;
  // Across hosts the sockets pace the pipeline when they are slower than the copies.
  if (in.nHosts > 1) dataUs = std::max(dataUs, w.sent / (p.netGBs * 1e3));
  const double alpha = in.nHosts > 1 ? p.alphaNetUs : p.alphaShmUs;
  // The FIFO lanes this rank polls: each channel's (the schedule's lanes per channel).
  const double lanes = std::max(1, in.channels) * std::max(1.0, w.lanes);
  // More ranks than CPUs: they take turns, and everything but the call's own work stretches.
  const double share = std::max(1.0, in.ranksPerCpu);
  // What a rank sends beyond its FIFOs' capacity waits for the reader to free slots; only a
  // reader without a CPU of its own makes that a wait of its own.
  const double refills = share > 1 ? std::max(0.0, w.sent / (lanes * p.fifoBytes) - 1) : 0.0;
  // Two ranks on one host: each exchange that waits for the one before pays for the wait (the
  // ring's and the tree's all-reduce on two ranks: one; doubling's single exchange: none).
  const double pairUs = n == 2 && in.nHosts == 1 ? std::max(0.0, w.hops - 1) * p.pairHopUs : 0;
  // Ranks sharing CPUs: a chain through every rank waits at each hop for the ranks' turns.
  const bool sharedChain = coll::algoTraits(in.algorithm).chainsEveryRank && share > 1;
  const double hopUs = alpha + (lanes - 1) * p.laneUs + (sharedChain ? p.sharedChainHopUs : 0);
  return p.callUs + share * (w.hops * hopUs + dataUs + refills * p.refillUs + pairUs);
}

std::string Prediction::describe() const {
  char text[160];
  std::snprintf(text, sizeof(text), "%s/%s x%d: %.1f us, algbw %.1f GB/s, busbw %.1f GB/s", algoLabel(algorithm),
                protocolName(protocol), channels, timeUs, algBwGBs, busBwGBs);
  return text;
}

}  // namespace topo
}  // namespace weft
