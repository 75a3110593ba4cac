// Tree algorithms: all-reduce over a double binary tree, and broadcast / reduce over a binary
// tree rooted at the root.
//
// The double binary tree (doubleBinaryTree in algo_common.cc): tree 0 is an in-order binary
// tree over the channel's rank order whose interior nodes all sit at odd positions (a range of
// positions is rooted at an odd position near its middle; single positions, always even, are
// leaves); tree 1 is its mirror image for an even rank count (position q plays n - 1 - q's
// role) and the same tree shifted by one position for an odd one, so its interior nodes sit at
// even positions. Each rank is therefore interior in at most one tree and a leaf in the other,
// so the two trees together load every rank's links about evenly. This is NCCL's double binary
// tree (NCCL, and topology/search.h, mirror for even counts and shift for odd ones; with
// interiors exactly at odd positions the shift works for every count, but it joins position 0
// to the far end of the order, while the mirror keeps every subtree of both trees a contiguous
// range). The order is the channel's ring (the topology's, host by host), so most tree edges
// stay inside a host and an order split into two hosts is crossed by one edge of each tree.
// Each tree all-reduces half of each channel's part; channels reversing their ring reverse
// both trees and move their roots.
#include "collectives/algorithms.h"

namespace weft {
namespace coll {
namespace algo {
namespace {

int rankAt(const std::vector<int>& order, int pos) { return pos < 0 ? -1 : order[pos]; }

// One tree of the all-reduce over region r, on lanes up and down:
//
//  up lane (reduce toward the root): a leaf sends its data; an interior rank adds what its
//  children send to its own data and sends the sum to its parent. A rank with two children
//  keeps the first sum in its receive buffer (the only memory it may write) and reads it back.
//  The root finishes the sum (final) and, on the same step, sends it into the down lane.
//
//  down lane (broadcast from the root): each rank receives the result into its receive
//  buffer and forwards it to its children.
//
// Why the two lanes of one rank never race over the receive buffer, in place or not: the up
// lane touches slice i of r (reads send, maybe writes and reads recv) strictly before it sends
// slice i to the parent; the down lane writes slice i of recv only when the result of slice i
// arrives, which the root can only have produced after receiving this rank's up-lane send of
// slice i. So every up-lane access of a slice happens before the down-lane write of that slice,
// and the lanes never touch different slices' elements. The root does both in its up lane.
void treeAllReduce(const std::vector<int>& order, const std::vector<TreeNode>& tree, int pos, Part r, int upLane,
                   int downLane, RankSchedule* s) {
  const TreeNode& node = tree[pos];
  int parent = rankAt(order, node.parent);
  int c0 = rankAt(order, node.children[0]), c1 = rankAt(order, node.children[1]);
  std::vector<Step>& up = s->lanes[upLane].steps;
  std::vector<Step>& down = s->lanes[downLane].steps;
  if (parent < 0) {
    Step last;
    if (node.nChildren == 1) {
      last = makeStep(StepKind::kRecvReduceCopySend, c0, c0, Buf::kSend, r.offset, Buf::kRecv, r.offset, r.count, true);
    } else {
      up.push_back(makeStep(StepKind::kRecvReduceCopy, c0, -1, Buf::kSend, r.offset, Buf::kRecv, r.offset, r.count));
      last = makeStep(StepKind::kRecvReduceCopySend, c1, c0, Buf::kRecv, r.offset, Buf::kRecv, r.offset, r.count, true);
    }
    last.sendLane = downLane;
    up.push_back(last);
    if (node.nChildren == 2) {
      up.push_back(sendStep(c1, Buf::kRecv, r.offset, r.count));
      up.back().sendLane = downLane;
    }
    return;
  }
  // Reduce up.
  if (node.nChildren == 0) {
    up.push_back(sendStep(parent, Buf::kSend, r.offset, r.count));
  } else if (node.nChildren == 1) {
    up.push_back(makeStep(StepKind::kRecvReduceSend, c0, parent, Buf::kSend, r.offset, Buf::kRecv, 0, r.count));
  } else {
    up.push_back(makeStep(StepKind::kRecvReduceCopy, c0, -1, Buf::kSend, r.offset, Buf::kRecv, r.offset, r.count));
    up.push_back(makeStep(StepKind::kRecvReduceSend, c1, parent, Buf::kRecv, r.offset, Buf::kRecv, 0, r.count));
  }
  // Broadcast down.
  if (node.nChildren == 0) {
    down.push_back(recvStep(parent, Buf::kRecv, r.offset, r.count));
  } else {
    down.push_back(makeStep(StepKind::kRecvCopySend, parent, c0, Buf::kSend, 0, Buf::kRecv, r.offset, r.count));
    if (node.nChildren == 2) down.push_back(sendStep(c1, Buf::kRecv, r.offset, r.count));
  }
}

}  // namespace

void buildTreeAllReduce(const ScheduleParams& p, int rank, RankSchedule* s) {
  const int n = p.nRanks;
  int64_t largest = largestPart(p.count, p.nChannels, p.align);
  s->maxStepCount = n == 1 ? largest : largestPart(largest, 2, p.align);
  std::vector<TreeNode> trees[2];
  if (n > 1) trees[0] = doubleBinaryTree(n, 0), trees[1] = doubleBinaryTree(n, 1);
  for (int c = 0; c < p.nChannels; ++c) {
    Part part = splitEven(p.count, p.nChannels, c, p.align);
    if (n == 1) {
      s->lanes[c * 4].steps.push_back(copyStep(Buf::kSend, part.offset, Buf::kRecv, part.offset, part.count, true));
      continue;
    }
    std::vector<int> order = channelOrder(p, c);
    int pos = positionOf(order, rank);
    for (int t = 0; t < 2; ++t) {
      Part half = splitEven(part.count, 2, t, p.align);
      half.offset += part.offset;
      treeAllReduce(order, trees[t], pos, half, c * 4 + t * 2, c * 4 + t * 2 + 1, s);
    }
  }
}

// The root sends from its send buffer and copies it into its receive buffer; everyone else
// receives into the receive buffer and forwards from there.
void buildTreeBroadcast(const ScheduleParams& p, int rank, RankSchedule* s) {
  const int n = p.nRanks;
  s->maxStepCount = largestPart(p.count, p.nChannels, p.align);
  for (int c = 0; c < p.nChannels; ++c) {
    std::vector<Step>& steps = s->lanes[c].steps;
    Part r = splitEven(p.count, p.nChannels, c, p.align);
    std::vector<int> order = channelOrder(p, c);
    std::vector<TreeNode> tree = heapTree(n, positionOf(order, p.root));
    const TreeNode& node = tree[positionOf(order, rank)];
    int parent = rankAt(order, node.parent);
    int c0 = rankAt(order, node.children[0]), c1 = rankAt(order, node.children[1]);
    if (parent < 0) {
      for (int child : {c0, c1}) {
        if (child >= 0) steps.push_back(sendStep(child, Buf::kSend, r.offset, r.count));
      }
      steps.push_back(copyStep(Buf::kSend, r.offset, Buf::kRecv, r.offset, r.count, false));
    } else if (node.nChildren == 0) {
      steps.push_back(recvStep(parent, Buf::kRecv, r.offset, r.count));
    } else {
      steps.push_back(makeStep(StepKind::kRecvCopySend, parent, c0, Buf::kSend, 0, Buf::kRecv, r.offset, r.count));
      if (c1 >= 0) steps.push_back(sendStep(c1, Buf::kRecv, r.offset, r.count));
    }
  }
}

int64_t treeReduceScratch(const ScheduleParams& p) {
  // In the heap tree, node 1 is the first non-root with two children (children 3 and 4).
  return p.nRanks >= 5 ? p.count : 0;
}

// A rank adds its children's partial sums to its own data and sends the result up. A non-root
// with two children keeps the first sum in scratch memory (its receive buffer may be invalid);
// the root reduces into its receive buffer and finishes the sum.
void buildTreeReduce(const ScheduleParams& p, int rank, RankSchedule* s) {
  const int n = p.nRanks;
  s->maxStepCount = largestPart(p.count, p.nChannels, p.align);
  for (int c = 0; c < p.nChannels; ++c) {
    std::vector<Step>& steps = s->lanes[c].steps;
    Part r = splitEven(p.count, p.nChannels, c, p.align);
    if (n == 1) {
      steps.push_back(copyStep(Buf::kSend, r.offset, Buf::kRecv, r.offset, r.count, true));
      continue;
    }
    std::vector<int> order = channelOrder(p, c);
    std::vector<TreeNode> tree = heapTree(n, positionOf(order, p.root));
    const TreeNode& node = tree[positionOf(order, rank)];
    int parent = rankAt(order, node.parent);
    int c0 = rankAt(order, node.children[0]), c1 = rankAt(order, node.children[1]);
    if (parent < 0) {
      bool one = node.nChildren == 1;
      steps.push_back(
          makeStep(StepKind::kRecvReduceCopy, c0, -1, Buf::kSend, r.offset, Buf::kRecv, r.offset, r.count, one));
      if (!one) {
        steps.push_back(
            makeStep(StepKind::kRecvReduceCopy, c1, -1, Buf::kRecv, r.offset, Buf::kRecv, r.offset, r.count, true));
      }
    } else if (node.nChildren == 0) {
      steps.push_back(sendStep(parent, Buf::kSend, r.offset, r.count));
    } else if (node.nChildren == 1) {
      steps.push_back(makeStep(StepKind::kRecvReduceSend, c0, parent, Buf::kSend, r.offset, Buf::kRecv, 0, r.count));
    } else {
      steps.push_back(
          makeStep(StepKind::kRecvReduceCopy, c0, -1, Buf::kSend, r.offset, Buf::kScratch, r.offset, r.count));
      steps.push_back(makeStep(StepKind::kRecvReduceSend, c1, parent, Buf::kScratch, r.offset, Buf::kRecv, 0, r.count));
    }
  }
}

}  // namespace algo
}  // namespace coll
}  // namespace weft
