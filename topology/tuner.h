// The tuner: which algorithm a collective uses for a size on this communicator. Until the cost
// model (topology issue) lands, a size rule: the double binary tree for small all-reduces
// (latency grows with log n instead of n), the ring for large ones (bandwidth-optimal).
#ifndef WEFT_TOPOLOGY_TUNER_H_
#define WEFT_TOPOLOGY_TUNER_H_

#include <cstdint>
#include <string>

#include "base/status.h"

namespace weft {
namespace topo {

enum class AllReduceAlgo { kRing, kTree };

struct TunerInput {
  int nRanks = 1;
  int64_t bytes = 0;          // bytes per rank
  std::string forcedAlgo;     // WEFT_ALGO: "", "ring", "tree" (any case)
  int64_t treeMaxBytes = 0;   // WEFT_TREE_MAX_BYTES
};

// weftInvalidArgument when forcedAlgo names no algorithm.
Status chooseAllReduceAlgo(const TunerInput& in, AllReduceAlgo* out);

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_TUNER_H_
