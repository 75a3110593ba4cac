#include "topology/tuner.h"

#include <algorithm>

namespace weft {
namespace topo {

Status chooseAllReduceAlgo(const TunerInput& in, coll::Algo* out) {
  using coll::Algo;
  if (!in.forcedAlgo.empty()) {
    Algo forced;
    if (coll::algoFromName(in.forcedAlgo.c_str(), &forced) && coll::algoSupported(coll::CollKind::kAllReduce, forced)) {
      return *out = forced, Status::ok();
    }
    return WEFT_ERROR(weftInvalidArgument, "WEFT_ALGO=%s names no all-reduce algorithm; use %s", in.forcedAlgo.c_str(),
                      coll::algorithmNamesFor(coll::CollKind::kAllReduce).c_str());
  }
  if (in.bytes <= in.doublingMaxBytes) {
    *out = Algo::kRecursiveDoubling;
  } else if (in.bytes <= in.treeMaxBytes * std::max(1, in.nNodes) && in.nRanks > 2) {
    // With two ranks the tree and the ring exchange the same bytes once; the ring pipelines better.
    // Across hosts every ring step pays the network's latency and the ring has 2(n-1) steps to
    // the tree's 2 log n, so the tree stays ahead for larger sizes: the limit scales with hosts.
    *out = Algo::kTree;
  } else {
    *out = Algo::kRing;
  }
  return Status::ok();
}

}  // namespace topo
}  // namespace weft
