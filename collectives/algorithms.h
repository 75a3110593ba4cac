// The algorithms behind buildSchedule (schedule.cc dispatches to them), and the small
// pieces they share: how data is split into channel parts and blocks, each channel's rank
// order, and the trees. Internal to collectives/ (and its tests).
#ifndef WEFT_COLLECTIVES_ALGORITHMS_H_
#define WEFT_COLLECTIVES_ALGORITHMS_H_

#include <cstdint>
#include <vector>

#include "collectives/schedule.h"

namespace weft {
namespace coll {
namespace algo {

// A contiguous range of elements.
struct Part {
  int64_t offset = 0;
  int64_t count = 0;
};

// Part `index` of `parts` near-equal contiguous parts of [0, total) that start at multiples of
// `align` elements (ScheduleParams::align): whole units of `align` elements are dealt out evenly
// (the first units % parts parts get one unit more) and the last part also takes the
// total % align elements past the last whole unit. With align 1: the first total % parts parts
// get one element more.
inline Part splitEven(int64_t total, int parts, int index, int64_t align = 1) {
  const int64_t units = total / align;
  const int64_t base = units / parts;
  const int64_t extra = units % parts;
  const int64_t tail = index == parts - 1 ? total % align : 0;
  return Part{(base * index + (index < extra ? index : extra)) * align, (base + (index < extra ? 1 : 0)) * align + tail};
}

// The largest part splitEven makes (it grows with total: a nested split's largest part is the
// largest part of the largest outer part).
inline int64_t largestPart(int64_t total, int parts, int64_t align = 1) {
  const int64_t units = total / align;
  return units % parts != 0 ? (units / parts + 1) * align : units / parts * align + total % align;
}

// Channel c's order of the ranks: params.ringOrders[c mod K] (or 0..n-1, K = 1), reversed when
// c / K is odd, so that channels drive each link of a ring in both directions (with one order:
// every odd channel reversed, as NCCL does; with the K arc-disjoint rings of a mesh, channels
// 0..K-1 use every link one way and K..2K-1 the other).
std::vector<int> channelOrder(const ScheduleParams& p, int channel);

// Where `rank` sits in `order`.
int positionOf(const std::vector<int>& order, int rank);

// One node of a tree over positions 0..n-1.
struct TreeNode {
  int parent = -1;  // -1: the root
  int nChildren = 0;
  int children[2] = {-1, -1};
};

// An in-order binary tree over positions 0..n-1 whose interior nodes all sit at odd positions
// (every even position is a leaf); depth about log2(n). nodes[pos] describes position pos.
std::vector<TreeNode> inOrderTree(int n);

// Tree `which` (0 or 1) of the double binary tree over positions 0..n-1: tree 0 is
// inOrderTree(n); tree 1 is tree 0 mirrored (even n: position q plays n - 1 - q's role) or
// shifted by one position (odd n: q plays q - 1's role), as NCCL and topology/search.h build
// it, so its interior nodes sit at even positions. No position is interior in both trees. With
// the mirror every subtree of both trees is a contiguous range of the order: an order that
// keeps each host's ranks together keeps most tree edges inside a host.
std::vector<TreeNode> doubleBinaryTree(int n, int which);

// A binary tree rooted at position `rootPos`: node v = (pos - rootPos) mod n is a heap node
// (parent (v-1)/2, children 2v+1, 2v+2).
std::vector<TreeNode> heapTree(int n, int rootPos);

// Builders: fill s->lanes (already sized nChannels * lanesPerChannel(p)) and s->maxStepCount.
void buildRingAllReduce(const ScheduleParams& p, int rank, RankSchedule* s);
void buildTreeAllReduce(const ScheduleParams& p, int rank, RankSchedule* s);
void buildDoublingAllReduce(const ScheduleParams& p, int rank, RankSchedule* s);
void buildRingAllGather(const ScheduleParams& p, int rank, RankSchedule* s);
void buildRingReduceScatter(const ScheduleParams& p, int rank, RankSchedule* s);
void buildChainBroadcast(const ScheduleParams& p, int rank, RankSchedule* s);
void buildTreeBroadcast(const ScheduleParams& p, int rank, RankSchedule* s);
void buildChainReduce(const ScheduleParams& p, int rank, RankSchedule* s);
void buildTreeReduce(const ScheduleParams& p, int rank, RankSchedule* s);
void buildPairwiseAllToAll(const ScheduleParams& p, int rank, RankSchedule* s);

// Scratch elements the tree reduce needs (count where some non-root merges two children).
int64_t treeReduceScratch(const ScheduleParams& p);

// Step constructors, so that builders read as one line per step.
Step sendStep(int to, Buf src, int64_t srcOffset, int64_t count);
Step recvStep(int from, Buf dst, int64_t dstOffset, int64_t count);
Step copyStep(Buf src, int64_t srcOffset, Buf dst, int64_t dstOffset, int64_t count, bool final);
// Any other kind: set the peers and regions the kind uses.
Step makeStep(StepKind kind, int from, int to, Buf src, int64_t srcOffset, Buf dst, int64_t dstOffset, int64_t count,
              bool final = false);

}  // namespace algo
}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_ALGORITHMS_H_
