// The tuner: which algorithm a collective uses for a size on this communicator. Until the cost
// model (topology issue) lands, a size rule: recursive doubling for the smallest all-reduces
// (log2 n exchanges, one message latency each), the double binary tree for small ones (log n
// steps, pipelined), the ring for large ones (bandwidth-optimal).
#ifndef WEFT_TOPOLOGY_TUNER_H_
#define WEFT_TOPOLOGY_TUNER_H_

#include <cstdint>
#include <string>

#include "base/coll_traits.h"
#include "base/status.h"

namespace weft {
namespace topo {

struct TunerInput {
  int nRanks = 1;
  int64_t bytes = 0;          // bytes per rank
  std::string forcedAlgo;     // WEFT_ALGO: "" or an all-reduce algorithm's name (any case)
  int64_t treeMaxBytes = 0;   // WEFT_TREE_MAX_BYTES
  int64_t doublingMaxBytes = 0;  // WEFT_DOUBLING_MAX_BYTES
  int nNodes = 1;             // hosts the ranks span
};

// weftInvalidArgument when forcedAlgo names no all-reduce algorithm (base/coll_traits.h).
Status chooseAllReduceAlgo(const TunerInput& in, coll::Algo* out);

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_TUNER_H_
