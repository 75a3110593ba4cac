#include "topology/tuner.h"

#include <algorithm>
#include <cctype>

namespace weft {
namespace topo {

Status chooseAllReduceAlgo(const TunerInput& in, AllReduceAlgo* out) {
  std::string forced = in.forcedAlgo;
  std::transform(forced.begin(), forced.end(), forced.begin(), ::tolower);
  if (forced == "ring") return *out = AllReduceAlgo::kRing, Status::ok();
  if (forced == "tree") return *out = AllReduceAlgo::kTree, Status::ok();
  if (!forced.empty()) {
    return WEFT_ERROR(weftInvalidArgument, "WEFT_ALGO=%s names no all-reduce algorithm; use Ring or Tree",
                      in.forcedAlgo.c_str());
  }
  // With two ranks both algorithms exchange the same bytes once; the ring pipelines better.
  bool small = in.bytes <= in.treeMaxBytes;
  *out = (small && in.nRanks > 2) ? AllReduceAlgo::kTree : AllReduceAlgo::kRing;
  return Status::ok();
}

}  // namespace topo
}  // namespace weft
