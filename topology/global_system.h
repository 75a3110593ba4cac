// The communicator's global system: one machine (a System, system.h) per host, and where each
// rank sits in it (its host, GPU node, CPU node). Built from the ranks' descriptions
// (rank_desc.h) by src/core at init; the ranks of one process share one, immutable. Every rank
// derives the same hosts and placement from the same descriptions; the machine of the builder's
// own host is the full local model (detection or WEFT_TOPO_FILE, with the PCI tree and NVLinks),
// the others are what the descriptions say (CPUs per NUMA node, GPUs and NICs under them).
// Memory: linear in the rank count (a place per rank, nodes per distinct GPU and NIC).
#ifndef WEFT_TOPOLOGY_GLOBAL_SYSTEM_H_
#define WEFT_TOPOLOGY_GLOBAL_SYSTEM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "topology/paths.h"
#include "topology/rank_desc.h"
#include "topology/system.h"

namespace weft {
namespace topo {

struct RankPlace {
  int host = -1;  // index into GlobalSystem::hosts
  int gpu = -1;   // node of the rank's GPU in that host's System, -1 host rank
  int cpu = -1;   // node of its CPU (NUMA node), -1 unknown
  int numa = -1;  // the NUMA node the rank described; -1 unknown (cpu is then the host's first)
  // The GPU is a node of the local model (found by bus id), so paths to it are known; a GPU
  // added from a description hangs straight under its CPU, its real place unknown.
  bool gpuPlaced = false;
  std::string gpuBusId;                  // normalised, "" host rank or unknown
  std::string gpuUuid;                   // its runtime's UUID of the GPU, "" unknown
  std::vector<std::string> visibleGpus;  // bus ids of the GPUs its process sees, by ordinal
  int ringPosition = -1;                 // its GPU's place in its host's first searched ring, -1 none
  std::vector<int> ringPositions;        // its GPU's place in each of its host's searched rings
  int nic = -1;                          // index among its host's NICs of the one it uses, -1 none
  std::string nicName;                   // that NIC's name, "" none
  PathType nicPath = PathType::kDis;     // from its GPU to that NIC in its host's model; DIS unknown
};

struct GlobalSystem {
  std::vector<System> hosts;         // in order of each host's lowest rank
  std::vector<uint64_t> hostHashes;  // per host
  std::vector<RankPlace> ranks;      // per rank

  int nRanks() const { return static_cast<int>(ranks.size()); }
  const RankPlace& place(int rank) const { return ranks[static_cast<size_t>(rank)]; }
  // Same GPU: same host, the same GPU node (GPU nodes are per bus id, never per ordinal) and,
  // where both ranks know it, the same UUID (slices of one GPU -- MIG instances -- share a bus id
  // but not a UUID; they share the GPU's links but not its memory).
  bool sameGpu(int a, int b) const;
  // Most ranks on any one GPU (0 when no rank has one).
  int maxRanksPerGpu() const;
  // NUMA node of the rank's CPU as it described it, -1 unknown.
  int numaOf(int rank) const { return place(rank).numa; }
};

// The ordinal under which rank `viewer`'s process sees rank `rank`'s GPU (by bus id, from the
// list `viewer` described), or -1 when it does not see it or cannot tell. GPU peer access
// between two ranks needs ordinalSeenBy(a, b) >= 0 and ordinalSeenBy(b, a) >= 0: a fact both
// ranks compute alike from the same two descriptions, so both ends choose the same transport.
int ordinalSeenBy(const GlobalSystem& g, int viewer, int rank);

// The order in which a ring visits the ranks: host by host (hosts in order of their lowest rank);
// inside a host whose ranks all have a GPU, in the order of the host's searched ring (each rank
// described where its GPU comes in it: GPUs that share the best links are adjacent, sockets are
// crossed once); otherwise NUMA node by NUMA node (ascending; ranks whose node is unknown
// first), so that a ring crosses between CPU sockets once each way. Ties keep rank order. Every
// rank computes the same order from the same descriptions.
std::vector<int> hostRingOrder(const GlobalSystem& g);

// The rings of a communicator, one per channel: channel c uses rings[c mod rings.size()] (the
// schedules reverse it on every other pass through the list; collectives/algorithms.h).
// - One host: its searched rings (ring k: the host's ranks in the order of their GPUs in the
//   host's ring k; a host whose ranks are not all placed in its rings has one ring, NUMA node
//   by NUMA node as hostRingOrder).
// - Several hosts: channel c visits the hosts in order, each as a chain -- its ring c mod (its
//   rings) rotated so that the ranks receiving from and sending to the network spread over the
//   host's NICs evenly (search.h nodeChains, the search's own construction) -- and as many
//   channels as the host with the most rings or NICs needs (at most maxChannels).
// Same on every rank: a function of the descriptions alone.
std::vector<std::vector<int>> channelRings(const GlobalSystem& g, int maxChannels = 32);

// Builds the global system from every rank's checked description (descs[r] is rank r's).
// `local`: the full model of host `localHost` (null: every host from the descriptions). A
// rank's GPU is found in `local` by bus id; one the model lacks is added under the CPU of the
// rank's NUMA node. GPU nodes get gpu.rank = their lowest rank. Error (weftRemoteError): two
// ranks of one host describe one GPU UUID at two bus ids (descriptions that cannot both be true).
[[nodiscard]] Status buildGlobalSystem(const std::vector<RankDescription>& descs, uint64_t localHost,
                                       const System* local, GlobalSystem* out);

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_GLOBAL_SYSTEM_H_
