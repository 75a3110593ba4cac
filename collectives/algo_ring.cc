// Ring algorithms: all-reduce (reduce-scatter then all-gather around the ring), all-gather,
// reduce-scatter, and broadcast / reduce as a pipelined chain along the ring from / to the
// root. Every channel takes its own part of the data and its own order (channelOrder: odd
// channels run the ring backwards). Within an iteration a rank handles slice i of every block
// its steps name, so blocks larger than a FIFO slot pipeline around the ring.
#include "collectives/algorithms.h"

namespace weft {
namespace coll {
namespace algo {
namespace {

int wrap(int i, int n) { return ((i % n) + n) % n; }

}  // namespace

// Block q (by ring position) of channel part [part.offset, +part.count) completes at the
// rank at position q. In place (send == recv) each block is read by its reduce-scatter step
// before the all-gather step of the same slice overwrites it, and the final step reads and
// writes the same elements.
void buildRingAllReduce(const ScheduleParams& p, int rank, RankSchedule* s) {
  const int n = p.nRanks;
  const int64_t largest = largestPart(p.count, p.nChannels, p.align);
  s->maxStepCount = n == 1 ? largest : largestPart(largest, n, p.align);
  for (int c = 0; c < p.nChannels; ++c) {
    std::vector<Step>& steps = s->lanes[c].steps;
    Part part = splitEven(p.count, p.nChannels, c, p.align);
    if (n == 1) {
      steps.push_back(copyStep(Buf::kSend, part.offset, Buf::kRecv, part.offset, part.count, true));
      continue;
    }
    std::vector<int> order = channelOrder(p, c);
    int pos = positionOf(order, rank);
    int next = order[wrap(pos + 1, n)], prev = order[wrap(pos - 1, n)];
    auto block = [&](int q) {
      Part b = splitEven(part.count, n, wrap(q, n), p.align);
      return Part{part.offset + b.offset, b.count};
    };
    // Reduce-scatter: start the block the previous rank will complete.
    Part b = block(pos - 1);
    steps.push_back(sendStep(next, Buf::kSend, b.offset, b.count));
    // Add ours to the partial sum arriving from the previous rank and pass it on.
    for (int j = 2; j < n; ++j) {
      b = block(pos - j);
      steps.push_back(makeStep(StepKind::kRecvReduceSend, prev, next, Buf::kSend, b.offset, Buf::kRecv, 0, b.count));
    }
    // Our block arrives with everyone else's contribution: finish it, keep it, start its all-gather.
    b = block(pos);
    steps.push_back(
        makeStep(StepKind::kRecvReduceCopySend, prev, next, Buf::kSend, b.offset, Buf::kRecv, b.offset, b.count, true));
    // All-gather: keep each finished block and pass it on, except the last one to arrive.
    for (int j = 1; j < n - 1; ++j) {
      b = block(pos - j);
      steps.push_back(makeStep(StepKind::kRecvCopySend, prev, next, Buf::kSend, 0, Buf::kRecv, b.offset, b.count));
    }
    b = block(pos + 1);
    steps.push_back(recvStep(prev, Buf::kRecv, b.offset, b.count));
  }
}

// Block b of the receive buffer is rank b's send buffer; each channel moves its part
// [sub.offset, +sub.count) of every block. In place our block already is in the receive
// buffer, so the first copy is skipped by the executor.
void buildRingAllGather(const ScheduleParams& p, int rank, RankSchedule* s) {
  const int n = p.nRanks;
  s->maxStepCount = largestPart(p.count, p.nChannels, p.align);
  for (int c = 0; c < p.nChannels; ++c) {
    std::vector<Step>& steps = s->lanes[c].steps;
    Part sub = splitEven(p.count, p.nChannels, c, p.align);
    auto recvOffset = [&](int blockRank) { return static_cast<int64_t>(blockRank) * p.count + sub.offset; };
    steps.push_back(copyStep(Buf::kSend, sub.offset, Buf::kRecv, recvOffset(rank), sub.count, false));
    if (n == 1) continue;
    std::vector<int> order = channelOrder(p, c);
    int pos = positionOf(order, rank);
    int next = order[wrap(pos + 1, n)], prev = order[wrap(pos - 1, n)];
    steps.push_back(sendStep(next, Buf::kSend, sub.offset, sub.count));
    // Keep the block of the rank j places back and pass it on.
    for (int j = 1; j < n - 1; ++j) {
      int64_t off = recvOffset(order[wrap(pos - j, n)]);
      steps.push_back(makeStep(StepKind::kRecvCopySend, prev, next, Buf::kSend, 0, Buf::kRecv, off, sub.count));
    }
    steps.push_back(recvStep(prev, Buf::kRecv, recvOffset(order[wrap(pos + 1, n)]), sub.count));
  }
}

// Block b of the send buffer (recvcount elements) is reduced into rank b's receive buffer.
// Block b starts at the rank after b and travels the ring once, collecting a contribution
// from every rank; b itself adds its own and finishes it. In place the receive buffer is our
// own block of the send buffer, which only the last (final) step reads and writes.
void buildRingReduceScatter(const ScheduleParams& p, int rank, RankSchedule* s) {
  const int n = p.nRanks;
  s->maxStepCount = largestPart(p.count, p.nChannels, p.align);
  for (int c = 0; c < p.nChannels; ++c) {
    std::vector<Step>& steps = s->lanes[c].steps;
    Part sub = splitEven(p.count, p.nChannels, c, p.align);
    auto sendOffset = [&](int blockRank) { return static_cast<int64_t>(blockRank) * p.count + sub.offset; };
    if (n == 1) {
      steps.push_back(copyStep(Buf::kSend, sendOffset(rank), Buf::kRecv, sub.offset, sub.count, true));
      continue;
    }
    std::vector<int> order = channelOrder(p, c);
    int pos = positionOf(order, rank);
    int next = order[wrap(pos + 1, n)], prev = order[wrap(pos - 1, n)];
    // Start the block of the previous rank, which it will finish.
    steps.push_back(sendStep(next, Buf::kSend, sendOffset(order[wrap(pos - 1, n)]), sub.count));
    for (int j = 2; j < n; ++j) {
      int64_t off = sendOffset(order[wrap(pos - j, n)]);
      steps.push_back(makeStep(StepKind::kRecvReduceSend, prev, next, Buf::kSend, off, Buf::kRecv, 0, sub.count));
    }
    // Our block, with everyone else's contribution: add ours and finish it.
    steps.push_back(makeStep(StepKind::kRecvReduceCopy, prev, -1, Buf::kSend, sendOffset(rank), Buf::kRecv, sub.offset,
                             sub.count, true));
  }
}

// The chain starts at the root and follows the channel's order; slices pipeline down it.
void buildChainBroadcast(const ScheduleParams& p, int rank, RankSchedule* s) {
  const int n = p.nRanks;
  s->maxStepCount = largestPart(p.count, p.nChannels, p.align);
  for (int c = 0; c < p.nChannels; ++c) {
    std::vector<Step>& steps = s->lanes[c].steps;
    Part part = splitEven(p.count, p.nChannels, c, p.align);
    std::vector<int> order = channelOrder(p, c);
    int k = wrap(positionOf(order, rank) - positionOf(order, p.root), n);  // place in the chain
    int rootPos = positionOf(order, p.root);
    int next = k + 1 < n ? order[wrap(rootPos + k + 1, n)] : -1;
    int prev = k > 0 ? order[wrap(rootPos + k - 1, n)] : -1;
    if (k == 0) {
      if (next >= 0) steps.push_back(sendStep(next, Buf::kSend, part.offset, part.count));
      steps.push_back(copyStep(Buf::kSend, part.offset, Buf::kRecv, part.offset, part.count, false));
    } else if (next >= 0) {
      steps.push_back(
          makeStep(StepKind::kRecvCopySend, prev, next, Buf::kSend, 0, Buf::kRecv, part.offset, part.count));
    } else {
      steps.push_back(recvStep(prev, Buf::kRecv, part.offset, part.count));
    }
  }
}

// The chain starts after the root and ends at it; each rank adds its contribution to the
// partial sum passing through. Only the root touches its receive buffer.
void buildChainReduce(const ScheduleParams& p, int rank, RankSchedule* s) {
  const int n = p.nRanks;
  s->maxStepCount = largestPart(p.count, p.nChannels, p.align);
  for (int c = 0; c < p.nChannels; ++c) {
    std::vector<Step>& steps = s->lanes[c].steps;
    Part part = splitEven(p.count, p.nChannels, c, p.align);
    if (n == 1) {
      steps.push_back(copyStep(Buf::kSend, part.offset, Buf::kRecv, part.offset, part.count, true));
      continue;
    }
    std::vector<int> order = channelOrder(p, c);
    int rootPos = positionOf(order, p.root);
    int k = wrap(positionOf(order, rank) - rootPos - 1, n);  // place in the chain; the root is last
    int next = order[wrap(rootPos + k + 2, n)];
    int prev = order[wrap(rootPos + k, n)];
    if (k == 0) {
      steps.push_back(sendStep(next, Buf::kSend, part.offset, part.count));
    } else if (k < n - 1) {
      steps.push_back(
          makeStep(StepKind::kRecvReduceSend, prev, next, Buf::kSend, part.offset, Buf::kRecv, 0, part.count));
    } else {
      steps.push_back(makeStep(StepKind::kRecvReduceCopy, prev, -1, Buf::kSend, part.offset, Buf::kRecv, part.offset,
                               part.count, true));
    }
  }
}

}  // namespace algo
}  // namespace coll
}  // namespace weft
