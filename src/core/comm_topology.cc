// The communicator's topology at init (comm_topology.h): the local machine, the exchange of rank
// descriptions, the shared global system, the route log and the dump.
#include "core/comm_topology.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "base/log.h"
#include "base/params.h"
#include "collectives/algorithms.h"
#include "collectives/traffic.h"
#include "core/bootstrap_tags.h"
#include "device/device.h"
#include "topology/detect.h"
#include "topology/topo_file.h"

namespace weft {
namespace core {
namespace {

// Bootstrap tags (comm_settings.cc and connections.cc use 0x4f00..0x4f02).
constexpr int kTopoDescTag = bootstrap_tags::kTopoDescription;
constexpr int kTopoTableTag = bootstrap_tags::kTopoTable;

// This process's CPU mask in NCCL's notation: 32-bit hex groups, most significant first.
std::string processAffinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "";
  std::string text;
  bool leading = true;
  for (int group = CPU_SETSIZE / 32 - 1; group >= 0; --group) {
    uint32_t bits = 0;
    for (int b = 0; b < 32; ++b) bits |= CPU_ISSET(group * 32 + b, &set) ? (1u << b) : 0u;
    if (leading && bits == 0 && group > 0) continue;
    char word[12];
    std::snprintf(word, sizeof(word), "%s%08x", leading ? "" : ",", bits);
    text += word;
    leading = false;
  }
  return text;
}

// What this rank knows about itself: its GPU's bus id from the runtime (the ordinal is only
// meaningful inside this process).
topo::RankIdentity identity(const PeerInfo& self) {
  topo::RankIdentity id;
  id.rank = self.rank;
  id.device = self.device;
  id.hostHash = self.hostHash;
  id.cpuAffinity = processAffinity();
  topo::P2pLevel level;
  const std::string setting = params::P2pLevel();
  if (!setting.empty() && topo::parseP2pLevel(setting, &level)) id.p2pLevel = static_cast<int>(level);
  device::Runtime* runtime = self.device >= 0 ? device::gpuRuntime() : nullptr;
  device::DeviceProps props;
  if (runtime != nullptr && runtime->deviceProps(self.device, &props).isOk()) {
    id.gpuBusId = props.pciBusId;
    id.gpuUuid = props.uuid;
  }
  // Every GPU this process sees, by ordinal: peers find theirs in it (global_system.h).
  for (int d = 0; runtime != nullptr && d < runtime->deviceCount(); ++d) {
    device::DeviceProps other;
    id.visibleGpus.push_back(runtime->deviceProps(d, &other).isOk() ? other.pciBusId : std::string());
  }
  return id;
}

// The local model's searched GPU rings (rank_desc.h searchedGpuRings), once per model: the models
// are kept for the life of the process (localTopology), so their addresses name them.
std::vector<std::vector<std::string>> hostGpuRings(const std::shared_ptr<const topo::System>& local) {
  static std::mutex mutex;
  static std::map<const topo::System*, std::vector<std::vector<std::string>>> rings;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = rings.find(local.get());
  if (it == rings.end()) it = rings.emplace(local.get(), topo::searchedGpuRings(*local)).first;
  return it->second;
}

// The global systems this process has built, by communicator: one rank per process (the lowest)
// receives the descriptions and builds; the others take its result.
struct SharedSystems {
  struct Slot {
    std::weak_ptr<const CommTopology> topology;
    // Kept alive until every waiting rank has taken it: the builder's communicator may be
    // destroyed before the others wake up.
    std::shared_ptr<const CommTopology> hold;
    int waiting = 0;  // ranks of this process yet to take it
    bool done = false;
    std::string failure;  // the builder's error, when it failed
  };
  std::mutex mutex;
  std::condition_variable cv;
  std::map<std::string, Slot> slots;
};

SharedSystems& sharedSystems() {
  static SharedSystems* s = new SharedSystems();  // never destroyed: ranks may still run at exit
  return *s;
}

void publish(const std::string& tag, const std::shared_ptr<const CommTopology>& topology, const Status& s,
             int waiting) {
  SharedSystems& shared = sharedSystems();
  std::lock_guard<std::mutex> lock(shared.mutex);
  for (auto it = shared.slots.begin(); it != shared.slots.end();) {
    const SharedSystems::Slot& old = it->second;
    it = old.done && !old.hold && old.topology.expired() && it->first != tag ? shared.slots.erase(it) : ++it;
  }
  SharedSystems::Slot& slot = shared.slots[tag];
  slot.done = true;
  slot.topology = topology;
  slot.waiting += waiting;  // a rank that took it early (none can: they wait for done) would be negative
  if (slot.waiting > 0) slot.hold = topology;
  slot.failure = s.isOk() ? "" : s.message();
  shared.cv.notify_all();
}

Status awaitShared(int rank, int builder, const std::string& tag, Deadline deadline,
                   std::shared_ptr<const CommTopology>* out) {
  SharedSystems& shared = sharedSystems();
  std::unique_lock<std::mutex> lock(shared.mutex);
  shared.cv.wait_for(lock, std::chrono::milliseconds(std::max(0, deadline.remainingMs())),
                     [&] { return shared.slots[tag].done; });
  SharedSystems::Slot& slot = shared.slots[tag];
  *out = slot.topology.lock();
  if (*out && --slot.waiting <= 0) slot.hold.reset();
  if (*out) return Status::ok();
  return WEFT_ERROR(weftRemoteError,
                    "rank %d: rank %d, which builds the communicator's topology for this process, %s%s%s", rank,
                    builder, slot.done ? "failed" : "did not finish before the time-out (WEFT_TIMEOUT_S)",
                    slot.failure.empty() ? "" : ": ", slot.failure.c_str());
}

// Rank 0: every rank's description, checked.
Status gatherDescriptions(Bootstrap* b, const topo::RankDescription& mine, Deadline deadline,
                          std::vector<topo::RankDescription>* all) {
  all->assign(static_cast<size_t>(b->nRanks()), mine);
  for (int p = 1; p < b->nRanks(); ++p) {
    topo::RankDescription& d = (*all)[static_cast<size_t>(p)];
    WEFT_TRY(b->recv(p, kTopoDescTag, &d, sizeof(d), deadline));
    Status s = topo::checkRankDescription(d, p);
    if (!s.isOk()) {
      return std::move(s).withPrefix("rank 0: the topology description from rank " + std::to_string(p) +
                                     " is malformed (every rank must run the same Weft build): ");
    }
    if (d.failed) {
      return WEFT_ERROR(weftRemoteError,
                        "rank 0: rank %d could not describe its part of the machine (its own error says why, e.g. a "
                        "WEFT_TOPO_FILE that does not load), so no rank can build the communicator's topology",
                        p);
    }
  }
  return Status::ok();
}

// The P2P level of this host: its lowest rank's WEFT_P2P_LEVEL, so that both ends of every pair
// on the host decide alike; the machine's default when that rank set none (or a bad one).
topo::P2pLevel hostP2pLevel(int rank, const std::vector<topo::RankDescription>& descs, const topo::System& host) {
  const topo::RankDescription& self = descs[static_cast<size_t>(rank)];
  const topo::RankDescription* first = &self;
  for (const auto& d : descs) {
    if (d.hostHash == self.hostHash) {
      first = &d;
      break;
    }
  }
  const std::string setting = params::P2pLevel();
  const topo::P2pLevel level =
      first->p2pLevel >= 0 ? static_cast<topo::P2pLevel>(first->p2pLevel) : topo::defaultP2pLevel(host);
  static std::mutex warned;
  static std::string warnedFor = "-";  // one warning per process, setting and host level
  const std::string key = setting + "/" + std::to_string(first->p2pLevel);
  std::lock_guard<std::mutex> lock(warned);
  if (warnedFor == key) return level;
  warnedFor = key;
  topo::P2pLevel parsed;
  if (!setting.empty() && !topo::parseP2pLevel(setting, &parsed)) {
    WEFT_LOG(kWarn, kEnv, "rank %d: WEFT_P2P_LEVEL=%s is not one of LOC, NVL, PIX, PXB, PHB, SYS (or 0..5); using %s",
             rank, setting.c_str(), topo::p2pLevelName(level));
  } else if (self.p2pLevel != first->p2pLevel) {
    WEFT_LOG(kWarn, kEnv,
             "rank %d: WEFT_P2P_LEVEL differs from rank %d's on this host; every rank of the host uses rank %d's "
             "(%s) so that both ends of a pair choose alike (set it the same on every rank)",
             rank, first->rank, first->rank, topo::p2pLevelName(level));
  }
  return level;
}

// The shared result of this process: the global system, the paths of this host, the tuner.
Status buildShared(int rank, const std::vector<topo::RankDescription>& descs, uint64_t hostHash,
                   const topo::System& local, const topo::TunerSettings& tuning,
                   std::shared_ptr<const CommTopology>* out) {
  auto t = std::make_shared<CommTopology>();
  WEFT_TRY(topo::buildGlobalSystem(descs, hostHash, &local, &t->global));
  t->localHost = t->global.place(rank).host;
  const topo::System& host = t->global.hosts[static_cast<size_t>(t->localHost)];
  t->localPaths = topo::computePaths(host);
  t->p2pLevel = hostP2pLevel(rank, descs, host);
  WEFT_TRY(buildCommTuner(descs, t->global, tuning, &t->tuner));
  *out = std::move(t);
  return Status::ok();
}

// Rank 0 hands the descriptions to the lowest rank of every other process.
Status sendToBuilders(Bootstrap* b, const PeerTable& peers, const std::vector<topo::RankDescription>& descs,
                      Deadline deadline) {
  std::unordered_set<uint64_t> seen{peers.peers[0].processHash};
  for (int p = 1; p < b->nRanks(); ++p) {
    if (!seen.insert(peers.peers[static_cast<size_t>(p)].processHash).second) continue;
    WEFT_TRY(b->send(p, kTopoTableTag, descs.data(), descs.size() * sizeof(topo::RankDescription), deadline));
  }
  return Status::ok();
}

// A builder other than rank 0: the descriptions from rank 0, checked again (bytes from a socket).
Status receiveDescriptions(Bootstrap* b, Deadline deadline, std::vector<topo::RankDescription>* descs) {
  descs->resize(static_cast<size_t>(b->nRanks()));
  WEFT_TRY(b->recv(0, kTopoTableTag, descs->data(), descs->size() * sizeof(topo::RankDescription), deadline));
  for (int p = 0; p < b->nRanks(); ++p) {
    Status s = topo::checkRankDescription((*descs)[static_cast<size_t>(p)], p);
    if (!s.isOk()) {
      return std::move(s).withPrefix("rank " + std::to_string(b->rank()) + ": rank " + std::to_string(p) +
                                     "'s topology description, as rank 0 forwarded it, is malformed: ");
    }
    if ((*descs)[static_cast<size_t>(p)].failed) {
      return WEFT_ERROR(weftRemoteError,
                        "rank %d: rank %d could not describe its part of the machine, or rank 0 could not gather "
                        "the descriptions (their own errors say why)",
                        b->rank(), p);
    }
  }
  return Status::ok();
}

// "0-3,5,7-9".
std::string rankList(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    text += (text.empty() ? "" : ",") + std::to_string(ranks[i]);
    if (j > i) text += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

// One line per distinct route of this rank: every pair is covered, in lines linear in the rank
// count.
void logRoutes(int rank, const CommTopology& t) {
  if (!logEnabled(kInfo, kGraph)) return;
  std::map<std::pair<int, std::string>, std::vector<int>> byRoute;
  for (int peer = 0; peer < t.global.nRanks(); ++peer) {
    if (peer == rank) continue;
    topo::Route r = t.routeBetween(rank, peer);
    byRoute[{static_cast<int>(r.kind), r.reason}].push_back(peer);
  }
  for (const auto& [key, ranks] : byRoute) {
    WEFT_LOG(kInfo, kGraph, "rank %d route to rank%s %s: %s (%s)", rank, ranks.size() > 1 ? "s" : "",
             rankList(ranks).c_str(), topo::routeKindName(static_cast<topo::RouteKind>(key.first)), key.second.c_str());
  }
}

// Rank 0, once per communicator: the tuner's table.
void logTuner(const CommTopology& t) {
  if (!logEnabled(kInfo, kTuning)) return;
  for (const std::string& line : tunerTableLines(t.tuner)) WEFT_LOG(kInfo, kTuning, "tuner: %s", line.c_str());
}

// Rank 0: WEFT_TOPO_DUMP_FILE, one file per host (host i > 0 at FILE.host<i>). A failure to
// write is a warning: the communicator works without its dump.
void dumpTopology(const CommTopology& t) {
  const std::string path = params::TopoDumpFile();
  if (path.empty()) return;
  for (size_t h = 0; h < t.global.hosts.size(); ++h) {
    const std::string file = h == 0 ? path : path + ".host" + std::to_string(h);
    const topo::System& sys = t.global.hosts[h];
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << topo::writeTopologyXml(sys, sys.version);
    out.close();
    if (!out) {
      WEFT_LOG(kWarn, kGraph,
               "rank 0: could not write WEFT_TOPO_DUMP_FILE %s (%s); check that its directory exists and is writable",
               file.c_str(), errnoText(errno).c_str());
      return;
    }
    WEFT_LOG(kInfo, kGraph, "rank 0: wrote the topology of host %zu (%zu nodes) to %s", h, sys.nodes.size(),
             file.c_str());
  }
}

}  // namespace

topo::Route CommTopology::routeBetween(int a, int b) const {
  const topo::RankPlace& pa = global.place(a);
  const topo::RankPlace& pb = global.place(b);
  // Where the runtime gave no bus ids the ordinals are all there is: each end is taken to see the other.
  const bool busIds = !pa.gpuBusId.empty() && !pb.gpuBusId.empty();
  topo::RouteEnd ea{a, pa.host, pa.gpu, !busIds || topo::ordinalSeenBy(global, a, b) >= 0, pa.nicName, pa.nicPath};
  topo::RouteEnd eb{b, pb.host, pb.gpu, !busIds || topo::ordinalSeenBy(global, b, a) >= 0, pb.nicName, pb.nicPath};
  const bool here = pa.host == localHost && pb.host == localHost && pa.gpuPlaced && pb.gpuPlaced;
  return topo::route(ea, eb, here ? &localPaths.at(pa.gpu, pb.gpu) : nullptr, p2pLevel);
}

namespace {

// "channels 0 14 28; reversed: 7 21": the channels (< maxChannels) that use ring k of n.
std::string channelsOfRing(size_t k, size_t n, int maxChannels) {
  if (n == 1) return "every channel; reversed on odd ones";
  std::string forward, reversed;
  for (size_t c = k; c < static_cast<size_t>(maxChannels); c += n) {
    ((c / n) % 2 == 0 ? forward : reversed) += " " + std::to_string(c);
  }
  return "channels" + forward + (reversed.empty() ? "" : "; reversed:" + reversed);
}

}  // namespace

std::vector<std::string> channelRingLines(const topo::GlobalSystem& g, const std::vector<std::vector<int>>& rings,
                                          int maxChannels) {
  std::vector<std::string> lines;
  for (size_t k = 0; k < rings.size(); ++k) {
    const std::vector<int>& ring = rings[k];
    std::string text = "ring " + std::to_string(k) + " (" + channelsOfRing(k, rings.size(), maxChannels) + "):";
    std::string exits;
    for (size_t i = 0; i < ring.size(); ++i) {
      const topo::RankPlace& p = g.place(ring[i]);
      const bool hostStarts = i == 0 || g.place(ring[i - 1]).host != p.host;
      text += (hostStarts && i > 0 ? " | " : " ") + std::to_string(ring[i]);
      const bool hostEnds = i + 1 == ring.size() || g.place(ring[i + 1]).host != p.host;
      if (g.hosts.size() > 1 && hostEnds) {
        exits += " host " + std::to_string(p.host) + " sends from rank " + std::to_string(ring[i]) + " via NIC " +
                 (p.nicName.empty() ? std::string("(none)") : p.nicName) + ";";
      }
    }
    if (!exits.empty()) exits.pop_back();
    lines.push_back(text + (exits.empty() ? "" : ";" + exits));
  }
  return lines;
}

std::vector<std::string> channelTreeLines(const std::vector<std::vector<int>>& rings, int maxChannels) {
  std::vector<std::string> lines;
  for (size_t k = 0; k < rings.size(); ++k) {
    const std::vector<int>& ring = rings[k];
    const int n = static_cast<int>(ring.size());
    std::string text = "all-reduce trees of ring " + std::to_string(k) + " (" +
                       channelsOfRing(k, rings.size(), maxChannels) +
                       "; a reversed channel builds them over the reversed ring):";
    for (int t = 0; t < 2 && n > 1; ++t) {
      const std::vector<coll::algo::TreeNode> tree = coll::algo::doubleBinaryTree(n, t);
      std::string edges;
      int root = -1;
      for (int pos = 0; pos < n; ++pos) {
        const int parent = tree[static_cast<size_t>(pos)].parent;
        if (parent < 0) root = ring[static_cast<size_t>(pos)];
        if (parent >= 0) edges += " " + std::to_string(ring[static_cast<size_t>(pos)]) + ">" +
                                  std::to_string(ring[static_cast<size_t>(parent)]);
      }
      text += std::string(t ? ";" : "") + " tree " + std::to_string(t) + " root " + std::to_string(root) + ":" + edges;
    }
    lines.push_back(text);
  }
  return lines;
}

Status buildCommTuner(const std::vector<topo::RankDescription>& descs, const topo::GlobalSystem& global,
                      const topo::TunerSettings& tuning, topo::Tuner* out) {
  const int nRanks = static_cast<int>(descs.size());
  coll::ScheduleWorkSource hostWork;  // the host model prices the schedules' traffic
  if (global.hosts.size() <= 1) return topo::Tuner::build(&global, nRanks, tuning, &hostWork, out);
  topo::GlobalSystem described;
  WEFT_TRY(topo::buildGlobalSystem(descs, descs.empty() ? 0 : descs[0].hostHash, nullptr, &described));
  return topo::Tuner::build(&described, nRanks, tuning, &hostWork, out);
}

Status tunerForMachine(const topo::System& machine, int nHosts, int ranksPerHost, const topo::TunerSettings& tuning,
                       topo::Tuner* out) {
  if (nHosts < 1 || ranksPerHost < 1) {
    return WEFT_ERROR(weftInvalidArgument, "a communicator needs at least one host and one rank per host (%d x %d)",
                      nHosts, ranksPerHost);
  }
  const std::vector<int> gpus = machine.nodesOfType(topo::NodeType::kGpu);
  std::vector<topo::RankDescription> descs;
  for (int h = 0; h < nHosts; ++h) {
    for (int i = 0; i < ranksPerHost; ++i) {
      topo::RankIdentity id;
      id.rank = static_cast<int>(descs.size());
      id.hostHash = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(h + 1);
      if (!gpus.empty()) {
        id.device = i % static_cast<int>(gpus.size());
        id.gpuBusId = machine.nodes[static_cast<size_t>(gpus[static_cast<size_t>(id.device)])].pci.busId;
      }
      descs.push_back(topo::describeRank(machine, id));
    }
  }
  // As rank 0 builds it: its host is the full model, the others what their ranks describe.
  topo::GlobalSystem global;
  WEFT_TRY(topo::buildGlobalSystem(descs, descs[0].hostHash, &machine, &global));
  return buildCommTuner(descs, global, tuning, out);
}

bool sizeRuleParamsSet() {
  for (const params::ParamInfo& info : params::all()) {
    if (info.isSet && (info.env == "WEFT_TREE_MAX_BYTES" || info.env == "WEFT_DOUBLING_MAX_BYTES")) return true;
  }
  return false;
}

topo::TunerSettings tunerSettingsFromParams() {
  topo::TunerSettings s;
  s.forcedAlgo = params::Algo();
  s.treeMaxBytes = params::TreeMaxBytes();
  s.doublingMaxBytes = params::DoublingMaxBytes();
  s.sizeRuleSet = sizeRuleParamsSet();
  s.minChannels = static_cast<int>(std::clamp<int64_t>(params::MinNChannels(), 1, 64));
  s.maxChannels = static_cast<int>(std::clamp<int64_t>(params::MaxNChannels(), 1, 64));
  return s;
}

std::vector<std::string> tunerTableLines(const topo::Tuner& tuner) {
  std::vector<std::string> lines{tuner.why() +
                                 " (per size class, by its largest size: algorithm/protocol x channels, predicted "
                                 "time)"};
  for (coll::CollKind kind : topo::tunedCollectives()) {
    for (std::string& line : tuner.describe(kind)) lines.push_back(std::move(line));
  }
  if (tuner.hostWhy().empty()) return lines;
  lines.push_back("host-memory calls: " + tuner.hostWhy());
  for (coll::CollKind kind : topo::tunedCollectives()) {
    for (std::string& line : tuner.describe(kind, true)) lines.push_back(std::move(line));
  }
  return lines;
}

Status localTopology(int rank, std::shared_ptr<const topo::System>* out) {
  static std::mutex mutex;
  static std::shared_ptr<const topo::System> detected;  // detection runs once per process
  static std::map<std::string, std::shared_ptr<const topo::System>> withFile;
  std::lock_guard<std::mutex> lock(mutex);
  if (!detected) {
    auto sys = std::make_shared<topo::System>();
    // Without libfabric's inventory: fi_getinfo starts every provider (about 0.3 s here, on
    // every process's first init), and the description needs only the NICs sysfs and hwloc
    // list; the ofi transport asks libfabric itself when it is used.
    topo::DetectOptions options;
    options.fabricLibrary.clear();
    WEFT_TRY(topo::detectSystem(options, sys.get(), nullptr));
    detected = std::move(sys);
  }
  const std::string path = params::TopoFile();
  if (path.empty()) {
    *out = detected;
    return Status::ok();
  }
  auto it = withFile.find(path);
  if (it == withFile.end()) {
    topo::System file;
    auto merged = std::make_shared<topo::System>();
    Status s = topo::readTopologyFile(path, &file);
    if (s.isOk()) s = topo::mergeTopology(*detected, file, merged.get());
    if (!s.isOk()) {
      return std::move(s).withPrefix("rank " + std::to_string(rank) + ": WEFT_TOPO_FILE=" + path +
                                     " does not load (fix it, check it with weft-topo --file, or unset "
                                     "WEFT_TOPO_FILE): ");
    }
    it = withFile.emplace(path, std::move(merged)).first;
  }
  *out = it->second;
  return Status::ok();
}

Status buildCommTopology(Bootstrap* b, const PeerTable& peers, const std::string& commTag,
                         const topo::TunerSettings& tuning, Deadline deadline,
                         std::shared_ptr<const CommTopology>* out) {
  const int rank = b->rank();
  const PeerInfo& self = peers.peers[static_cast<size_t>(rank)];
  // The lowest rank of this process builds for all of them.
  int builder = -1, inProcess = 0;
  for (const PeerInfo& p : peers.peers) {
    if (p.processHash != self.processHash) continue;
    if (builder < 0) builder = p.rank;
    ++inProcess;
  }
  std::shared_ptr<const topo::System> local;
  Status s = localTopology(rank, &local);
  topo::RankDescription mine{};
  if (s.isOk()) {
    topo::RankIdentity id = identity(self);
    id.hostRings = hostGpuRings(local);
    mine = topo::describeRank(*local, id);
  }
  // A rank that failed still tells rank 0, so that nobody waits for it until the time-out.
  if (!s.isOk()) mine = topo::failedRankDescription(rank);
  if (rank != 0) {
    Status sent = b->send(0, kTopoDescTag, &mine, sizeof(mine), deadline);
    if (s.isOk()) s = std::move(sent);
  }
  if (s.isOk() && builder != rank) s = awaitShared(rank, builder, commTag, deadline, out);
  if (builder != rank) {
    if (s.isOk()) logRoutes(rank, **out);
    return s;
  }
  // This rank builds; whatever happens, the waiting ranks of this process hear of it.
  std::vector<topo::RankDescription> descs;
  if (rank == 0) {
    if (s.isOk()) s = gatherDescriptions(b, mine, deadline, &descs);
    // The other processes' builders hear of a failure here too (rank 0's record says failed).
    if (!s.isOk()) descs.assign(static_cast<size_t>(b->nRanks()), topo::failedRankDescription(0));
    for (int p = 1; p < b->nRanks() && !s.isOk(); ++p) descs[static_cast<size_t>(p)].rank = p;
    Status sent = sendToBuilders(b, peers, descs, deadline);
    if (s.isOk()) s = std::move(sent);
  } else if (s.isOk()) {
    s = receiveDescriptions(b, deadline, &descs);
  }
  std::shared_ptr<const CommTopology> built;
  if (s.isOk()) s = buildShared(rank, descs, self.hostHash, *local, tuning, &built);
  publish(commTag, built, s, inProcess - 1);
  WEFT_TRY(std::move(s));
  *out = std::move(built);
  if (rank == 0) dumpTopology(**out), logTuner(**out);
  logRoutes(rank, **out);
  return Status::ok();
}

}  // namespace core
}  // namespace weft
