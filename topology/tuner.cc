#include "topology/tuner.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "topology/paths.h"
#include "topology/search.h"

namespace weft {
namespace topo {

Status parseForcedAlgo(const std::string& name, coll::Algo* out) {
  if (coll::algoFromName(name.c_str(), out)) return Status::ok();
  return WEFT_ERROR(weftInvalidArgument, "WEFT_ALGO=%s names no algorithm; use %s", name.c_str(),
                    coll::algorithmNames());
}

namespace {

// Whether the size rule's band for `a` holds the call (coll::RuleBand).
bool inRuleBand(const coll::AlgoTraits& a, const TunerInput& in) {
  switch (a.ruleBand) {
    case coll::RuleBand::kUpToDoublingMax:
      return in.bytes <= in.doublingMaxBytes;
    case coll::RuleBand::kUpToTreeMax:
      // With two ranks the tree and the ring exchange the same bytes once; the ring pipelines
      // better. Across hosts every ring step pays the network's latency and the ring has
      // 2(n-1) steps to the tree's 2 log n, so the tree stays ahead for larger sizes: the limit
      // scales with hosts.
      return in.bytes <= in.treeMaxBytes * std::max(1, in.nNodes) && in.nRanks > 2;
    case coll::RuleBand::kDefault:
      break;
  }
  return false;
}

}  // namespace

Status chooseRuleAlgo(const TunerInput& in, coll::Algo* out) {
  if (!in.forcedAlgo.empty()) {
    coll::Algo forced;
    WEFT_TRY(parseForcedAlgo(in.forcedAlgo, &forced));
    if (coll::algoSupported(in.kind, forced)) return *out = forced, Status::ok();
  }
  for (coll::RuleBand band : {coll::RuleBand::kUpToDoublingMax, coll::RuleBand::kUpToTreeMax}) {
    for (const coll::AlgoTraits& a : coll::kAlgoTraits) {
      if (a.ruleBand == band && coll::algoSupported(in.kind, a.algo) && inRuleBand(a, in)) return *out = a.algo, Status::ok();
    }
  }
  *out = coll::collTraits(in.kind).defaultAlgo;
  return Status::ok();
}

int tunerSizeClass(int64_t bytes) {
  int k = 0;
  while (k < kTunerSizeClasses - 1 && (int64_t{1} << k) < bytes) ++k;
  return k;
}

int64_t tunerClassBytes(int sizeClass) { return int64_t{1} << std::clamp(sizeClass, 0, kTunerSizeClasses - 1); }

const char* tunerModelName(TunerModel m) {
  switch (m) {
    case TunerModel::kHost:
      return "host";
    case TunerModel::kDevice:
      return "device";
    case TunerModel::kSizeRule:
      break;
  }
  return "size rule";
}

std::vector<coll::CollKind> tunedCollectives() {
  std::vector<coll::CollKind> kinds;
  for (const coll::CollTraits& t : coll::kCollTraits) {
    if (t.scheduled) kinds.push_back(t.kind);
  }
  return kinds;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kBytesPerChannel = 1 << 20;  // the size rule: one more channel per MiB

uint32_t algoBit(coll::Algo a) { return 1u << static_cast<int>(a); }

// The size rule's algorithm for a collective (chooseRuleAlgo; the forced one is applied by the
// caller, Tuner::ruleChoice).
coll::Algo ruleAlgo(coll::CollKind kind, int nRanks, int nHosts, int64_t bytes, const TunerSettings& s) {
  TunerInput in;
  in.kind = kind;
  in.nRanks = nRanks;
  in.bytes = bytes;
  in.treeMaxBytes = s.treeMaxBytes;
  in.doublingMaxBytes = s.doublingMaxBytes;
  in.nNodes = nHosts;
  coll::Algo algo = coll::collTraits(kind).defaultAlgo;
  (void)chooseRuleAlgo(in, &algo);  // cannot fail without a forced algorithm
  return algo;
}

// What the model prices: a call's count x element size as nccl-tests' size (the larger buffer).
int64_t modelBytes(coll::CollKind kind, int64_t bytes, int nRanks) {
  const coll::CollExtents e = coll::collExtents(kind, bytes, nRanks);
  return std::max(e.send, e.recv);
}

// CPUs in a hex cpumask in NCCL's notation ("ffffffff,00000003"); 0 when empty or unreadable.
int cpusInMask(const std::string& mask) {
  int n = 0;
  for (char ch : mask) {
    if (ch == ',') continue;
    const char lower = static_cast<char>(ch | 0x20);
    int v = -1;
    if (ch >= '0' && ch <= '9') v = ch - '0';
    if (lower >= 'a' && lower <= 'f') v = lower - 'a' + 10;
    if (v < 0) return 0;
    n += __builtin_popcount(static_cast<unsigned>(v));
  }
  return n;
}

// Ranks per CPU on the busiest host: the ranks placed on each host against the CPUs its CPU
// nodes list (a host whose CPUs are unknown counts as one CPU per rank).
double ranksPerCpu(const GlobalSystem* g) {
  if (g == nullptr) return 1;
  double most = 1;
  for (size_t h = 0; h < g->hosts.size(); ++h) {
    int cpus = 0;
    for (int node : g->hosts[h].nodesOfType(NodeType::kCpu)) {
      cpus += cpusInMask(g->hosts[h].nodes[static_cast<size_t>(node)].cpu.affinity);
    }
    const auto ranks = std::count_if(g->ranks.begin(), g->ranks.end(),
                                     [&](const RankPlace& p) { return p.host == static_cast<int>(h); });
    if (cpus > 0) most = std::max(most, static_cast<double>(ranks) / cpus);
  }
  return most;
}

// The host model's least time; within 1% of it, the fewest channels. Each algorithm is priced
// with the work its schedule does at `bytes` (from `work`; none without it).
TunerChoice bestOnHost(coll::CollKind kind, int nRanks, int nHosts, int64_t bytes, uint32_t algos,
                       const TunerSettings& s, double share, HostWorkSource* work) {
  HostCostInput in;
  in.nRanks = nRanks;
  in.nHosts = nHosts;
  in.ranksPerCpu = share;
  in.collective = kind;
  in.bytes = modelBytes(kind, bytes, nRanks);
  in.params = s.host;
  std::vector<TunerChoice> all;
  for (int a = 0; a < coll::kNumAlgos; ++a) {
    in.algorithm = static_cast<coll::Algo>(a);
    if ((algos & algoBit(in.algorithm)) == 0 || !coll::algoSupported(kind, in.algorithm)) continue;
    if (work == nullptr || !work->work(kind, in.algorithm, nRanks, bytes, &in.work)) continue;
    for (int k = s.minChannels; k <= s.maxChannels; k = k < s.maxChannels ? std::min(k * 2, s.maxChannels) : k + 1) {
      in.channels = k;
      TunerChoice c;
      c.algo = in.algorithm;
      c.channels = k;
      c.predictedUs = predictHostTime(in);
      all.push_back(c);
    }
  }
  TunerChoice best;
  best.predictedUs = kInf;
  for (const TunerChoice& c : all) {
    if (c.predictedUs < best.predictedUs) best = c;
  }
  for (const TunerChoice& c : all) {
    if (c.predictedUs <= best.predictedUs * 1.01 && c.channels < best.channels) best = c;
  }
  return best;
}

// Whether the device model applies: every rank drives its own GPU, and every GPU of every host
// has a rank (the cluster's ranks are the hosts' GPUs). "" when it does, else why not.
std::string deviceModelRefusal(const GlobalSystem& g) {
  size_t gpus = 0;
  for (const System& h : g.hosts) gpus += h.nodesOfType(NodeType::kGpu).size();
  for (const RankPlace& p : g.ranks) {
    if (p.gpu < 0) return "some ranks have a GPU and some do not";
  }
  if (g.maxRanksPerGpu() > 1) return "ranks share GPUs";
  if (gpus != g.ranks.size()) return "the communicator uses only some of its hosts' GPUs";
  return "";
}

}  // namespace

// The device model's input: the hosts as a cluster and its searched rings and trees.
struct TunerDeviceModel {
  Cluster cluster;
  SearchResult topo;
};

namespace {

TunerChoice bestOnDevice(const TunerDeviceModel& m, coll::CollKind kind, int nRanks, int64_t bytes, uint32_t algos,
                         const TunerSettings& s) {
  BestOptions options;
  options.params = s.device;
  options.minChannels = s.minChannels;
  options.maxChannels = s.maxChannels;
  options.algos = algos;
  const Prediction p = predictBestOf(m.cluster, m.topo, kind, modelBytes(kind, bytes, nRanks), options);
  TunerChoice c;
  c.algo = p.algorithm;
  c.protocol = p.protocol;
  c.channels = std::clamp(p.channels, s.minChannels, s.maxChannels);
  c.predictedUs = p.timeUs;
  return c;
}

std::string formatSize(int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) bytes /= 1024, ++u;
  return std::to_string(bytes) + " " + kUnits[u];
}

// The model for `system`, with why (the reason there is none, for the size rule).
TunerModel pickModel(const GlobalSystem* system, int nRanks, const TunerSettings& s, TunerDeviceModel* device,
                     std::string* why) {
  const int nHosts = system != nullptr ? std::max<int>(1, static_cast<int>(system->hosts.size())) : 1;
  const std::string on = std::to_string(nHosts) + " host" + (nHosts > 1 ? "s" : "");
  if (s.sizeRuleSet) {
    *why = "size rule: WEFT_TREE_MAX_BYTES or WEFT_DOUBLING_MAX_BYTES is set";
    return TunerModel::kSizeRule;
  }
  if (system == nullptr || system->nRanks() != nRanks || system->hosts.empty()) {
    *why = "size rule: the communicator has no system model";
    return TunerModel::kSizeRule;
  }
  const bool hostRanks =
      std::all_of(system->ranks.begin(), system->ranks.end(), [](const RankPlace& p) { return p.gpu < 0; });
  if (hostRanks && nHosts > 1) {
    *why = "size rule: host ranks on " + on + " (the host model's socket constants are not calibrated)";
    return TunerModel::kSizeRule;
  }
  if (hostRanks) {
    *why = "host cost model, " + std::to_string(nRanks) + " ranks on " + on;
    return TunerModel::kHost;
  }
  if (std::string refusal = deviceModelRefusal(*system); !refusal.empty()) {
    *why = "size rule: no device model, " + refusal;
    return TunerModel::kSizeRule;
  }
  device->cluster = Cluster::of(system->hosts);
  device->topo = search(device->cluster);
  *why = "device cost model, " + std::to_string(nRanks) + " GPUs on " + on + ", " +
         std::to_string(device->topo.rings.size()) + " rings";
  return TunerModel::kDevice;
}

}  // namespace

Status Tuner::build(const GlobalSystem* system, int nRanks, const TunerSettings& settings, HostWorkSource* hostWork,
                    Tuner* out) {
  Tuner t;
  t.nRanks_ = std::max(1, nRanks);
  t.nHosts_ = system != nullptr ? std::max<int>(1, static_cast<int>(system->hosts.size())) : 1;
  t.settings_ = settings;
  t.ranksPerCpu_ = ranksPerCpu(system);
  TunerSettings& s = t.settings_;
  s.minChannels = std::max(1, s.minChannels);
  s.maxChannels = std::max(s.minChannels, s.maxChannels);
  if (!s.forcedAlgo.empty()) {
    WEFT_TRY(parseForcedAlgo(s.forcedAlgo, &t.forced_));
    t.isForced_ = true;
  }
  TunerDeviceModel device;
  t.model_ = pickModel(system, t.nRanks_, s, &device, &t.why_);
  t.table_ = t.fillTable(t.model_, device, hostWork);
  // Host-memory calls on a communicator of GPUs (or of ranks sharing them) on one host: the
  // host model.
  const bool hasSystem = system != nullptr && system->nRanks() == nRanks && !system->hosts.empty();
  if (hasSystem && !s.sizeRuleSet && t.model_ != TunerModel::kHost && t.nHosts_ == 1) {
    t.hostTable_ = t.fillTable(TunerModel::kHost, device, hostWork);
    t.hostWhy_ = "host cost model, " + std::to_string(t.nRanks_) + " ranks on " + std::to_string(t.nHosts_) + " host" +
                 (t.nHosts_ > 1 ? "s" : "");
  }
  *out = std::move(t);
  return Status::ok();
}

std::vector<TunerChoice> Tuner::fillTable(TunerModel model, const TunerDeviceModel& device,
                                          HostWorkSource* hostWork) const {
  std::vector<TunerChoice> table(static_cast<size_t>(coll::kNumCollKinds * kTunerSizeClasses));
  for (coll::CollKind kind : tunedCollectives()) {
    // WEFT_ALGO: the model prices the forced algorithm only (for its channels), in the
    // collectives that have it.
    const uint32_t algos = isForced(kind) ? algoBit(forced_) : ~0u;
    for (int k = 0; k < kTunerSizeClasses; ++k) {
      const int64_t bytes = tunerClassBytes(k);
      TunerChoice c = ruleChoice(kind, bytes);
      TunerChoice modelled = c;
      if (model == TunerModel::kHost) {
        modelled = bestOnHost(kind, nRanks_, nHosts_, bytes, algos, settings_, ranksPerCpu_, hostWork);
      }
      if (model == TunerModel::kDevice) modelled = bestOnDevice(device, kind, nRanks_, bytes, algos, settings_);
      if (modelled.predictedUs < kInf) c = modelled;  // else the model prices none: the rule's
      table[static_cast<size_t>(static_cast<int>(kind) * kTunerSizeClasses + k)] = c;
    }
  }
  return table;
}

TunerChoice Tuner::ruleChoice(coll::CollKind kind, int64_t bytes) const {
  TunerChoice c;
  c.algo = ruleAlgo(kind, nRanks_, nHosts_, bytes, settings_);
  if (isForced(kind)) c.algo = forced_;
  c.channels =
      static_cast<int>(std::clamp<int64_t>(bytes / kBytesPerChannel, settings_.minChannels, settings_.maxChannels));
  return c;
}

TunerChoice Tuner::choose(coll::CollKind kind, int64_t bytes, bool hostMemory) const {
  const std::vector<TunerChoice>& table = hostMemory && !hostTable_.empty() ? hostTable_ : table_;
  // The size rule at the call's own size, as before the model (its thresholds and one channel
  // per MiB need not fall on class boundaries).
  if (&table == &table_ && model_ == TunerModel::kSizeRule) return ruleChoice(kind, bytes);
  const size_t i = static_cast<size_t>(static_cast<int>(kind) * kTunerSizeClasses + tunerSizeClass(bytes));
  return i < table.size() ? table[i] : TunerChoice();
}

std::vector<std::string> Tuner::describe(coll::CollKind kind, bool hostMemory) const {
  std::vector<std::string> lines;
  for (int k = 0; k < kTunerSizeClasses;) {
    const TunerChoice first = choose(kind, tunerClassBytes(k), hostMemory);
    int last = k;
    while (last + 1 < kTunerSizeClasses) {
      const TunerChoice next = choose(kind, tunerClassBytes(last + 1), hostMemory);
      if (next.algo != first.algo || next.protocol != first.protocol || next.channels != first.channels) break;
      ++last;
    }
    // The last run goes on to 1 TiB; its predictions are shown up to 1 GiB.
    const TunerChoice end = choose(kind, tunerClassBytes(std::max(k, std::min(last, 30))), hostMemory);
    char text[200];
    // Classes by their largest size: "16 KiB - 64 KiB" holds the sizes above 8 KiB up to 64 KiB.
    const std::string from = k == 0 ? std::string("0 B") : formatSize(tunerClassBytes(k));
    const std::string to = last == kTunerSizeClasses - 1 ? std::string("larger") : formatSize(tunerClassBytes(last));
    int n = std::snprintf(text, sizeof(text), "%s %s - %s: %s/%s x%d", coll::collName(kind), from.c_str(), to.c_str(),
                          coll::algoName(first.algo), protocolName(first.protocol), first.channels);
    if (first.predictedUs >= 0 && n > 0 && n < static_cast<int>(sizeof(text))) {
      std::snprintf(text + n, sizeof(text) - static_cast<size_t>(n), ", predicted %.1f - %.1f us", first.predictedUs,
                    end.predictedUs);
    }
    lines.push_back(text);
    k = last + 1;
  }
  return lines;
}

}  // namespace topo
}  // namespace weft
