// The communicator's topology (issue 14, first part): at init every rank describes its piece of
// the machine (topology/rank_desc.h: its GPU by PCI bus id / UUID, NUMA node, CPU set, the host's
// NICs), from detection (once per process) or WEFT_TOPO_FILE; rank 0 gathers the descriptions
// and hands them to one rank per process, which builds the global system (topology/
// global_system.h) that every rank of its process then shares. Then each rank logs its route to
// every peer (topology/route.h, GRAPH at INFO) and rank 0 writes WEFT_TOPO_DUMP_FILE.
//
// Memory stays linear in the rank count: rank 0 holds the n descriptions once, each process
// receives them once and keeps one shared, immutable result (weftCommInitAll with 1024 ranks
// holds one system, not 1024).
//
// Called by Communicator::init (comm.cc). Connections::pickTransport (connections.cc) asks staged() before the device
// transports: a pair the route stages is bridged through host memory; otherwise the transports'
// own canConnect (the runtime's peer access) decides as before.
#ifndef WEFT_CORE_COMM_TOPOLOGY_H_
#define WEFT_CORE_COMM_TOPOLOGY_H_

#include <memory>
#include <string>
#include <vector>

#include "base/os.h"
#include "base/status.h"
#include "core/bootstrap.h"
#include "topology/global_system.h"
#include "topology/paths.h"
#include "topology/route.h"
#include "topology/tuner.h"

namespace weft {
namespace core {

struct CommTopology {
  topo::GlobalSystem global;
  int localHost = -1;           // the host of the process that built it
  topo::PathMatrix localPaths;  // of global.hosts[localHost]
  topo::P2pLevel p2pLevel = topo::P2pLevel::kSys;
  // The communicator's tuner table (topology/tuner.h), from the settings agreed at init. Its
  // inputs are the same on every rank: on one host, the host's model (each process detects the
  // same machine, or reads the same WEFT_TOPO_FILE); across hosts, the system built from the
  // descriptions alone, which every builder derives alike (its own host's full model is not).
  topo::Tuner tuner;

  // The route between ranks a and b; pairs of GPUs on another host than localHost get no path
  // (each host's ranks decide their own pairs).
  topo::Route routeBetween(int a, int b) const;
  // The route stages the pair's device FIFOs through host memory (Connections::pickTransport then
  // skips the device transports even where the runtime would allow peer access).
  bool staged(int a, int b) const { return routeBetween(a, b).kind == topo::RouteKind::kStaged; }
};

// Describes, exchanges and builds (see above), and the tuner from `tuning`; collective over
// the communicator. Rank 0 logs the tuner's table (TUNING at INFO). Errors: a WEFT_TOPO_FILE
// that does not load, a malformed description from a peer, a time-out.
[[nodiscard]] Status buildCommTopology(Bootstrap* bootstrap, const PeerTable& peers, const std::string& commTag,
                                       const topo::TunerSettings& tuning, Deadline deadline,
                                       std::shared_ptr<const CommTopology>* out);

// The tuner of a communicator whose ranks described themselves as `descs` (descs[r]: rank r),
// built by a process on host `hostHash` with `local` as that host's model: the function
// buildCommTopology calls, for weft-topo and tests. Same result on every host.
[[nodiscard]] Status buildCommTuner(const std::vector<topo::RankDescription>& descs, const topo::GlobalSystem& global,
                                    const topo::TunerSettings& tuning, topo::Tuner* out);

// The tuner a communicator would build with `ranksPerHost` ranks on each of `nHosts` copies of
// `machine` (ranks take the machine's GPUs in order, or are host ranks on a machine without
// GPUs): descriptions made as each rank makes its own, then buildCommTuner -- what weft-topo
// shows. Error: no host or no rank.
[[nodiscard]] Status tunerForMachine(const topo::System& machine, int nHosts, int ranksPerHost,
                                     const topo::TunerSettings& tuning, topo::Tuner* out);

// WEFT_TREE_MAX_BYTES or WEFT_DOUBLING_MAX_BYTES is set in the environment: the size rule decides.
bool sizeRuleParamsSet();
// The tuner's settings from this process's parameters (a communicator uses the ones its ranks
// agreed at init instead).
topo::TunerSettings tunerSettingsFromParams();

// The communicator's rings (global_system.h channelRings) as the GRAPH log shows them: one line
// per ring, the channels (< maxChannels) that use it, its ranks host by host ("|" between hosts)
// and, across hosts, the rank each host sends from to the next and the NIC that rank uses.
std::vector<std::string> channelRingLines(const topo::GlobalSystem& g, const std::vector<std::vector<int>>& rings,
                                          int maxChannels);

// The tree all-reduce's double binary trees over those rings as the GRAPH log shows them: one
// line per ring, the channels that use it, then each tree's root and its edges "child>parent" in
// ring order (what the schedules build: collectives/algorithms.h doubleBinaryTree over the
// channel's order; broadcast and reduce use a binary heap over it from their root instead).
std::vector<std::string> channelTreeLines(const std::vector<std::vector<int>>& rings, int maxChannels);

// The tuner's table as the INFO log shows it: the model, then each collective's size classes.
std::vector<std::string> tunerTableLines(const topo::Tuner& tuner);

// This process's machine: detection (cached once per process) completed or replaced by
// WEFT_TOPO_FILE. Error (naming the file and the rank) when the file does not load.
[[nodiscard]] Status localTopology(int rank, std::shared_ptr<const topo::System>* out);

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_COMM_TOPOLOGY_H_
