// What one rank tells the others about its piece of the machine at communicator init: its GPU
// (PCI bus id, UUID), its NUMA node and CPU set, and its host's NICs. A fixed-size, versioned
// record of plain bytes, so that it travels through the bootstrap as it is; whoever receives one
// checks it with checkRankDescription before reading a field (it is bytes from a socket).
// src/core (comm_topology.cc) makes, exchanges and checks them; global_system.h merges them
// into the communicator's system model. Plain data: no communicator, no sockets.
#ifndef WEFT_TOPOLOGY_RANK_DESC_H_
#define WEFT_TOPOLOGY_RANK_DESC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "topology/system.h"

namespace weft {
namespace topo {

constexpr uint32_t kRankDescMagic = 0x4f504f54u;  // "TOPO"
constexpr uint16_t kRankDescVersion = 4;  // 4: nicPath
// NICs one record carries: a host with more lists the first ones (in system order) and says so
// in nicsOmitted.
constexpr int kRankDescMaxNics = 16;
// GPUs of its process one record lists (by bus id, in ordinal order): enough for any one host.
constexpr int kRankDescMaxVisibleGpus = 16;
// Searched rings of its host in which one record places its GPU: channel c of a communicator
// uses ring c mod (the host's rings), so more than this many distinct rings are not kept.
constexpr int kRankDescMaxRings = 16;

struct RankDescNic {
  char name[32];     // "mlx5_0", "eth0"; NUL-terminated
  char busId[16];    // normalised PCI bus id ("0000:18:00.0"), "" for a NIC without one
  int32_t numaId;    // NUMA node of the CPU it hangs under, -1 unknown
  int32_t reserved;
  double speedMbps;  // port speed, 0 unknown
};

struct RankDescription {
  uint32_t magic;           // kRankDescMagic
  uint16_t version;         // kRankDescVersion
  uint16_t bytes;           // sizeof(RankDescription) of the sender: must equal ours
  int32_t rank;
  int32_t device;           // the GPU's ordinal in the sender's process, for messages only; -1 host rank
  uint64_t hostHash;        // equal: same host
  char gpuBusId[16];        // normalised PCI bus id of the rank's GPU; "" host rank
  char gpuUuid[40];         // the GPU's UUID as its runtime prints it, "" unknown
  int32_t numaId;           // NUMA node of the rank's GPU (host rank: of its CPUs), -1 unknown
  int32_t nNics;            // entries of nics[] in use
  int32_t nicsOmitted;      // NICs of the host beyond kRankDescMaxNics
  int32_t failed;           // 1: the sender could not describe itself (its own error says why);
                            // the other fields are then unset. Lets the others fail at once.
  int32_t p2pLevel;         // WEFT_P2P_LEVEL as the sender parsed it (route.h P2pLevel), -1 unset
  int32_t nic;              // index in nics[] of the NIC nearest its GPU (host rank: its NUMA node's), -1 none
  char cpuAffinity[160];    // hex cpumask ("ffffffff,ffffffff") of that NUMA node / the rank; ""
  char cpuVendor[16];       // "GenuineIntel", "AuthenticAMD", ""
  char cpuArch[16];         // "x86_64", "arm64", ""
  RankDescNic nics[kRankDescMaxNics];
  // The GPUs the sender's process sees, by normalised bus id, in the order of its ordinals (its
  // CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES): a peer reaches this rank's GPU memory over peer
  // access only where both processes see both GPUs, and each names the other's by its own ordinal.
  char visibleGpus[kRankDescMaxVisibleGpus][16];
  int32_t nVisibleGpus;       // entries of visibleGpus in use
  int32_t visibleGpusOmitted; // GPUs past kRankDescMaxVisibleGpus (then not known to be seen)
  // Where its GPU comes in each of its host's first nRings searched rings (search.h): every rank
  // orders a host's GPU ranks for channel c as that host's own model says, from these alone.
  // Entries past nRings are -1; nRings 0: no GPU, or its host's model does not place it.
  int32_t nRings;
  int32_t ringPositions[kRankDescMaxRings];
  // The path class (paths.h PathType) from its GPU to its NIC in its host's model, -1 unknown
  // (host rank, no NIC, or a NIC not chosen by nearness): whether GPU-direct RDMA may be used.
  int32_t nicPath;
};
static_assert(sizeof(RankDescNic) == 64, "RankDescNic travels in 64 bytes");
static_assert(sizeof(RankDescription) ==
                  296 + 64 * kRankDescMaxNics + 16 * kRankDescMaxVisibleGpus + 8 + 8 + 4 * kRankDescMaxRings,
              "RankDescription layout");

// What a rank knows about itself before describing it.
struct RankIdentity {
  int rank = -1;
  int device = -1;          // ordinal, -1 without a GPU
  uint64_t hostHash = 0;
  std::string gpuBusId;     // as the runtime reports it (any case, with or without domain)
  std::string gpuUuid;
  std::string cpuAffinity;  // host ranks: the process's CPU mask, "" unknown
  std::vector<std::string> visibleGpus;  // bus ids of the process's GPUs by ordinal (the runtime's)
  // The host's searched rings, each the bus ids of its GPUs in passing order (searchedGpuRings).
  std::vector<std::vector<std::string>> hostRings;
  int p2pLevel = -1;        // WEFT_P2P_LEVEL parsed (route.h P2pLevel), -1 unset or invalid
};

// The record of `self` on the machine `local` (detected, or read from WEFT_TOPO_FILE): its
// GPU's NUMA node and CPU set from where the GPU hangs in `local` (a GPU the model lacks, or a
// host rank, takes the NUMA node of the only CPU, or -1 with several), the host's NICs.
RankDescription describeRank(const System& local, const RankIdentity& self);

// The search's rings over `local`'s GPUs (topology/search.h: adjacent GPUs share the best links,
// sockets are crossed once; on a mesh, arc-disjoint rings), at most kRankDescMaxRings, each the
// bus ids of the GPUs in passing order; empty without GPUs. A rank's ringPositions[k] is its
// GPU's index in ring k, so that every rank can order a host's GPU ranks per channel as that
// host's own model says, from the descriptions alone.
std::vector<std::vector<std::string>> searchedGpuRings(const System& local);
// The first of them (empty without GPUs).
std::vector<std::string> searchedGpuRing(const System& local);

// The record a rank sends when it could not describe itself (failed = 1).
RankDescription failedRankDescription(int rank);

// Ok when `d` is a well-formed record from rank `expectedRank`: magic, version and size,
// terminated strings, a bus id that parses, counts and numbers in range. Otherwise
// weftRemoteError saying which field is wrong (the caller adds who sent it and what to do).
[[nodiscard]] Status checkRankDescription(const RankDescription& d, int expectedRank);

// Same GPU: both ranks have one, on one host, with equal UUIDs when both have one, else equal
// bus ids. Never by ordinal: processes with different CUDA_VISIBLE_DEVICES all call their first
// GPU device 0.
bool sameGpu(const RankDescription& a, const RankDescription& b);

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_RANK_DESC_H_
