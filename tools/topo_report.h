// The text views of weft-topo: the GPU/NIC connection matrix in the convention of
// `nvidia-smi topo -m` (for NVIDIA and AMD alike), the bandwidth matrix, the rings and trees
// the search builds, and the cost model's predictions over a size sweep. Each returns the text
// it would print, so tests read it without running the tool.
#ifndef WEFT_TOOLS_TOPO_REPORT_H_
#define WEFT_TOOLS_TOPO_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "topology/paths.h"
#include "topology/route.h"
#include "topology/search.h"
#include "topology/system.h"

namespace weft {
namespace tools {

// A CPU mask as NCCL files write it ("ffffffff,0000ffff": 32-bit words, most significant
// first) as a list of CPUs ("0-15,32-63"); "" for an empty or unparsable mask.
std::string cpuListFromMask(const std::string& hexMask);

// The CPU node (NUMA domain) a device hangs under, following the PCI tree; -1 when none.
int cpuOfNode(const topo::System& sys, int node);

// Matrix of path classes over GPUs then NICs, with CPU and NUMA affinity columns, the legend
// and the NIC legend. A system without GPUs gets a note and its NICs and CPUs.
std::string formatConnectionMatrix(const topo::System& sys, const topo::PathMatrix& paths);

// Bottleneck bandwidth (GB/s per direction) of every GPU/NIC pair's path.
std::string formatBandwidthMatrix(const topo::System& sys, const topo::PathMatrix& paths);

// The route a communicator with one rank per GPU takes between every pair of GPUs
// (topology/route.h, the function the communicator itself calls): p2p or staged through host
// memory, at P2P level `level` (WEFT_P2P_LEVEL or the host's default), then the reasons.
std::string formatRouteMatrix(const topo::System& sys, const topo::PathMatrix& paths, topo::P2pLevel level);

// "ring 0: 0 1 2 3 (bottleneck 41.2 GB/s)" per ring, then each tree pair with its edges.
std::string formatRingsAndTrees(const topo::SearchResult& result);

// The sizes the prediction table sweeps: 8 B, 64 KiB, 1 MiB, 16 MiB, 256 MiB, 1 GiB.
const std::vector<int64_t>& predictionSizes();

// Predicted bus bandwidth of each collective at each size, with the algorithm/protocol the
// tuner picks.
std::string formatPredictions(const topo::Cluster& cluster, const topo::SearchResult& result);

// "8 B", "64 KiB", "1 GiB".
std::string formatBytes(int64_t bytes);

// The help lines of --schedule and --algo, which list the collectives and each one's
// algorithms from the tables of base/coll_traits.h, so the help cannot fall behind them.
std::string scheduleHelp();

}  // namespace tools
}  // namespace weft

#endif  // WEFT_TOOLS_TOPO_REPORT_H_
