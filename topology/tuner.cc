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
  if (forced == "doubling") return *out = AllReduceAlgo::kDoubling, Status::ok();
  if (!forced.empty()) {
    return WEFT_ERROR(weftInvalidArgument, "WEFT_ALGO=%s names no all-reduce algorithm; use Ring, Tree or Doubling",
                      in.forcedAlgo.c_str());
  }
  if (in.bytes <= in.doublingMaxBytes) {
    *out = AllReduceAlgo::kDoubling;
  } else if (in.bytes <= in.treeMaxBytes * std::max(1, in.nNodes) && in.nRanks > 2) {
    // With two ranks the tree and the ring exchange the same bytes once; the ring pipelines better.
    // Across hosts every ring step pays the network's latency and the ring has 2(n-1) steps to
    // the tree's 2 log n, so the tree stays ahead for larger sizes: the limit scales with hosts.
    *out = AllReduceAlgo::kTree;
  } else {
    *out = AllReduceAlgo::kRing;
  }
  return Status::ok();
}

}  // namespace topo
}  // namespace weft
