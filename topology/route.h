// Routes: how two ranks should exchange data, decided from where they sit and the path between
// them, as a pure function every rank computes alike (../shared/DESIGN.md, "Topology in the
// communicator"). src/core logs every rank's routes at init; weft-topo and the tests call it
// directly.
//
//   different hosts                              -> network (out through a's NIC, in through b's)
//   either rank on host memory (no GPU)          -> shared memory
//   one GPU                                      -> p2p (GPU peer memory)
//   a process that does not see the other GPU    -> staged through host memory
//   a path within the P2P level                  -> p2p
//   GPUs the model does not place (no path given)-> p2p where the runtime allows peer access
//   otherwise (across sockets, no path)          -> staged through host memory
//
// The P2P level is NCCL's NCCL_P2P_LEVEL (WEFT_P2P_LEVEL): the farthest path class over which
// GPUs still use peer access. LOC: only the same GPU; NVL: NVLink / xGMI (direct or through one
// GPU); PIX: one PCIe switch; PXB: several switches; PHB: through a CPU's host bridge (the
// matrix's PHB and NODE); SYS: across the CPU sockets too. By default, as NCCL decides: PXB on
// Intel and ARM CPUs (their root complexes forward peer traffic slowly), SYS elsewhere.
#ifndef WEFT_TOPOLOGY_ROUTE_H_
#define WEFT_TOPOLOGY_ROUTE_H_

#include <string>

#include "topology/paths.h"
#include "topology/system.h"

namespace weft {
namespace topo {

enum class RouteKind : uint8_t { kP2p, kShm, kStaged, kNet };
const char* routeKindName(RouteKind k);  // "p2p", "shm", "staged", "net"

enum class P2pLevel : uint8_t { kLoc, kNvl, kPix, kPxb, kPhb, kSys };
const char* p2pLevelName(P2pLevel l);  // "LOC", "NVL", "PIX", "PXB", "PHB", "SYS"

// Parses a WEFT_P2P_LEVEL value: a name above (any case) or NCCL's numbers 0..5. False (and
// *out untouched) when it is neither.
bool parseP2pLevel(const std::string& text, P2pLevel* out);

// The level NCCL would use on a machine with this CPU when none is set (see above).
P2pLevel defaultP2pLevel(const System& host);

// The level to use: `setting` (WEFT_P2P_LEVEL) when it parses, else the default of `host`;
// *warning is set (else cleared) when `setting` is neither empty nor valid, saying the value
// used.
P2pLevel chooseP2pLevel(const std::string& setting, const System& host, std::string* warning);

// One end of a route.
struct RouteEnd {
  int rank = -1;
  int host = -1;  // which machine: ends on different hosts talk over the network
  int gpu = -1;   // the GPU's node in that host's System; -1 on host memory
  // Its process sees the other end's GPU (the other GPU is in its CUDA_VISIBLE_DEVICES): peer
  // access between two GPUs needs both ends to see both.
  bool seesOther = true;
  // The NIC this end's traffic to another host goes through (the one nearest its GPU, else on
  // its NUMA node: global_system.h RankPlace::nicName), "" none known. Named in a net route.
  std::string nic;
  // The path class from this end's GPU to that NIC (DIS: unknown, or no GPU).
  PathType nicPath = PathType::kDis;
};

struct Route {
  RouteKind kind = RouteKind::kNet;
  std::string reason;  // for a person: "NVLink (NV18) within P2P level SYS"
  // A net route between two GPUs whose GPU-to-NIC paths both lie within the GDR level (NCCL's
  // NCCL_NET_GDR_LEVEL, by default PXB: the NIC behind the GPU's own PCIe switches): the NICs
  // may read and write GPU memory directly. Weft's network transports do not do that yet (they
  // stage device data through pinned host memory); the route says whether they may.
  bool gpuDirect = false;
};

// NCCL's default for NCCL_NET_GDR_LEVEL.
constexpr P2pLevel kDefaultGdrLevel = P2pLevel::kPxb;

// `path`: the path between the two GPUs in their host's PathMatrix; null when either has no GPU,
// they are on different hosts, or the model does not place both GPUs (then a GPU pair is p2p
// where the runtime allows it: the transport asks the runtime).
Route route(const RouteEnd& a, const RouteEnd& b, const Path* path, P2pLevel level,
            P2pLevel gdrLevel = kDefaultGdrLevel);

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_ROUTE_H_
