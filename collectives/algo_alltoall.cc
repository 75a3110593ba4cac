// All-to-all, pairwise: a rank copies its own block locally, then in round k = 1..n-1 sends
// block (r+k) to rank r+k and receives block (r-k) from rank r-k. Each round pairs every rank
// with a different peer, so no link carries two rounds at once. Each channel moves its part of
// every block. There is no in-place form: round k overwrites receive block r-k, which would
// still be needed as send block r-k in round n-k.
#include "collectives/algorithms.h"

namespace weft {
namespace coll {
namespace algo {

void buildPairwiseAllToAll(const ScheduleParams& p, int rank, RankSchedule* s) {
  const int n = p.nRanks;
  s->maxStepCount = largestPart(p.count, p.nChannels, p.align);
  for (int c = 0; c < p.nChannels; ++c) {
    std::vector<Step>& steps = s->lanes[c].steps;
    Part sub = splitEven(p.count, p.nChannels, c, p.align);
    auto blockOffset = [&](int blockRank) { return static_cast<int64_t>(blockRank) * p.count + sub.offset; };
    steps.push_back(copyStep(Buf::kSend, blockOffset(rank), Buf::kRecv, blockOffset(rank), sub.count, false));
    for (int k = 1; k < n; ++k) {
      int to = (rank + k) % n, from = (rank - k + n) % n;
      steps.push_back(sendStep(to, Buf::kSend, blockOffset(to), sub.count));
      steps.push_back(recvStep(from, Buf::kRecv, blockOffset(from), sub.count));
    }
  }
}

}  // namespace algo
}  // namespace coll
}  // namespace weft
