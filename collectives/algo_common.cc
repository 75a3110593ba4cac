// Pieces the algorithms share: channel rank orders, trees and step constructors (algorithms.h).
#include <algorithm>

#include "collectives/algorithms.h"

namespace weft {
namespace coll {
namespace algo {

std::vector<int> channelOrder(const ScheduleParams& p, int channel) {
  const size_t orders = p.ringOrders.empty() ? 1 : p.ringOrders.size();
  std::vector<int> order;
  if (p.ringOrders.empty()) {
    order.resize(p.nRanks);
    for (int i = 0; i < p.nRanks; ++i) order[i] = i;
  } else {
    order = p.ringOrders[static_cast<size_t>(channel) % orders];
  }
  if ((static_cast<size_t>(channel) / orders) % 2 == 1) std::reverse(order.begin(), order.end());
  return order;
}

int positionOf(const std::vector<int>& order, int rank) {
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] == rank) return static_cast<int>(i);
  }
  return -1;
}

namespace {

void addChild(std::vector<TreeNode>& nodes, int parent, int child) {
  if (child < 0) return;
  nodes[child].parent = parent;
  nodes[parent].children[nodes[parent].nChildren++] = child;
}

// Builds the in-order tree over [lo, hi) (lo even) and returns its root. A range of two or
// more positions is rooted at an odd position near its middle; a single position (even) is a
// leaf. Both sub-ranges start at an even position again, so every interior node is odd.
int buildInOrder(std::vector<TreeNode>& nodes, int lo, int hi) {
  if (lo >= hi) return -1;
  if (hi - lo == 1) return lo;
  int mid = lo + (hi - lo) / 2;
  if (mid % 2 == 0) --mid;  // mid >= lo + 2 here, so mid - 1 is still inside and odd
  addChild(nodes, mid, buildInOrder(nodes, lo, mid));
  addChild(nodes, mid, buildInOrder(nodes, mid + 1, hi));
  return mid;
}

}  // namespace

std::vector<TreeNode> inOrderTree(int n) {
  std::vector<TreeNode> nodes(n);
  buildInOrder(nodes, 0, n);
  return nodes;
}

std::vector<TreeNode> doubleBinaryTree(int n, int which) {
  std::vector<TreeNode> base = inOrderTree(n);
  if (which == 0) return base;
  // Even n: position q plays role n - 1 - q (the mirror image: interior roles are odd, so
  // interior positions are even, and every subtree is still a contiguous range of the order).
  // Odd n: position q plays role q - 1 (interior positions even again; role n - 1, when
  // interior, lands on position 0, also even).
  auto place = [n](int role) { return role < 0 ? -1 : n % 2 == 0 ? n - 1 - role : (role + 1) % n; };
  std::vector<TreeNode> nodes(n);
  for (int role = 0; role < n; ++role) {
    TreeNode& node = nodes[place(role)];
    node.parent = place(base[role].parent);
    node.nChildren = base[role].nChildren;
    for (int c = 0; c < 2; ++c) node.children[c] = place(base[role].children[c]);
  }
  return nodes;
}

std::vector<TreeNode> heapTree(int n, int rootPos) {
  std::vector<TreeNode> nodes(n);
  auto pos = [n, rootPos](int v) { return (v + rootPos) % n; };
  for (int v = 1; v < n; ++v) addChild(nodes, pos((v - 1) / 2), pos(v));
  return nodes;
}

}  // namespace algo

Lane callTokenLane(int nRanks, int rank) {
  Lane lane;
  for (int d = 1; d < nRanks; d *= 2) {
    lane.steps.push_back(algo::sendStep((rank + d) % nRanks, Buf::kSend, 0, 1));
    lane.steps.push_back(algo::recvStep((rank - d + nRanks) % nRanks, Buf::kRecv, 0, 1));
  }
  return lane;
}

namespace algo {

Step sendStep(int to, Buf src, int64_t srcOffset, int64_t count) {
  return makeStep(StepKind::kSend, -1, to, src, srcOffset, Buf::kRecv, 0, count);
}

Step recvStep(int from, Buf dst, int64_t dstOffset, int64_t count) {
  return makeStep(StepKind::kRecv, from, -1, Buf::kSend, 0, dst, dstOffset, count);
}

Step copyStep(Buf src, int64_t srcOffset, Buf dst, int64_t dstOffset, int64_t count, bool final) {
  return makeStep(StepKind::kCopy, -1, -1, src, srcOffset, dst, dstOffset, count, final);
}

Step makeStep(StepKind kind, int from, int to, Buf src, int64_t srcOffset, Buf dst, int64_t dstOffset, int64_t count,
              bool final) {
  Step s;
  s.kind = kind;
  s.recvPeer = stepReceives(kind) ? from : -1;
  s.sendPeer = stepSends(kind) ? to : -1;
  s.srcBuf = src;
  s.srcOffset = stepReads(kind) ? srcOffset : 0;
  s.dstBuf = dst;
  s.dstOffset = stepWrites(kind) ? dstOffset : 0;
  s.count = count;
  s.final = final;
  return s;
}

}  // namespace algo
}  // namespace coll
}  // namespace weft
