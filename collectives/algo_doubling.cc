// Recursive-doubling all-reduce, for small messages: latency is log2(n) exchanges instead of
// the ring's 2(n-1) steps or the tree's 2 log2(n).
//
// Over positions in the channel's rank order, with p the largest power of two <= n:
//  1. each position q >= p ("extra") sends its data to q - p, which folds it in;
//  2. positions 0..p-1 run log2(p) rounds: in round d, exchange the running result with
//     position q ^ d and combine; the last round's result is final;
//  3. each q < n - p sends the final result to q + p.
// Both sides of an exchange compute op(mine, theirs) and op(theirs, mine): the ops are
// commutative, so every rank ends with the same bits.
#include "collectives/algorithms.h"

namespace weft {
namespace coll {
namespace algo {

void buildDoublingAllReduce(const ScheduleParams& p, int rank, RankSchedule* s) {
  const int n = p.nRanks;
  int pow2 = 1;
  while (pow2 * 2 <= n) pow2 *= 2;
  const int extra = n - pow2;
  for (int c = 0; c < p.nChannels; ++c) {
    std::vector<int> order = channelOrder(p, c);
    const int pos = positionOf(order, rank);
    Part part = splitEven(p.count, p.nChannels, c, p.align);
    std::vector<Step>& steps = s->lanes[static_cast<size_t>(c)].steps;
    if (n == 1) {
      steps.push_back(copyStep(Buf::kSend, part.offset, Buf::kRecv, part.offset, part.count, true));
      continue;
    }
    if (pos >= pow2) {
      // An extra position: hand the data to its partner, get the result back.
      int partner = order[static_cast<size_t>(pos - pow2)];
      steps.push_back(sendStep(partner, Buf::kSend, part.offset, part.count));
      steps.push_back(recvStep(partner, Buf::kRecv, part.offset, part.count));
      continue;
    }
    // The running result starts in the send buffer and lives in the receive buffer once this
    // rank has combined anything.
    Buf acc = Buf::kSend;
    if (pos < extra) {
      int from = order[static_cast<size_t>(pos + pow2)];
      steps.push_back(makeStep(StepKind::kRecvReduceCopy, from, -1, acc, part.offset, Buf::kRecv, part.offset,
                               part.count));
      acc = Buf::kRecv;
    }
    for (int d = 1; d < pow2; d *= 2) {
      int partner = order[static_cast<size_t>(pos ^ d)];
      bool last = d * 2 == pow2;
      // Exchange: send the running result, then combine the partner's into it.
      steps.push_back(sendStep(partner, acc, part.offset, part.count));
      steps.push_back(makeStep(StepKind::kRecvReduceCopy, partner, -1, acc, part.offset, Buf::kRecv, part.offset,
                               part.count, last));
      acc = Buf::kRecv;
    }
    if (pos < extra) {
      steps.push_back(sendStep(order[static_cast<size_t>(pos + pow2)], Buf::kRecv, part.offset, part.count));
    }
  }
  s->maxStepCount = largestPart(p.count, p.nChannels, p.align);
}

}  // namespace algo
}  // namespace coll
}  // namespace weft
