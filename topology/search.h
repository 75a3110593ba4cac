// Ring and tree search: which order the ranks of a job pass data in, per channel, so that the
// links the topology offers are used as fully as possible. src/core asks once per communicator;
// the cost model prices the result; weft-topo prints it.
//
// Ranks and their routes come from a Cluster (paths.h): one or more nodes, rank r the r-th GPU
// in node order, inter-node traffic through the NIC nearest each GPU.
//
// Rings (one per channel; channel c uses ring c mod rings.size()):
//  - Inside a node, a Hamiltonian cycle over its GPUs that maximises the ring's rate -- the
//    bandwidth every edge of the ring can carry at once, counting links that two edges share
//    (two GPUs behind one switch uplink, the SMP link crossed twice). Depth-first search with
//    branch and bound, neighbours tried best path first, then in PCI order: on an NVSwitch
//    every order is full bandwidth and PCI order wins; on a PCIe machine the GPUs under one
//    switch stay adjacent and the ring crosses the sockets once, because any other order
//    shares an uplink or the SMP link and runs slower. Then more rings on what bandwidth is
//    left, while one still gets >= 1% of the first.
//  - A full mesh of equal direct links (MI300X: one xGMI link between every pair) is packed
//    instead with n-1 arc-disjoint directed rings, so that each ring has every link it uses
//    to itself and together they use every link in both directions (7 rings x 48 GB/s on 8
//    GPUs, where one ring alone gets 48). Construction: ring 0 is PCI order 0 1 2 ... n-1;
//    each further ring is found by depth-first search over the directed links no earlier ring
//    uses, trying successors v+1, v+2, ... (mod n) of each GPU v in that order and
//    backtracking across rings when one cannot be closed. Such a decomposition exists for
//    every n except 4 and 6 (Tillson, 1980); for n = 8 the search needs about 1,500 steps.
//    Where it is impossible or the step budget runs out, the best partial set is kept (for
//    n = 4 or 6, 2 or 4 rings) and compared with the general search's.
//  - Several nodes: channel c's ring runs through each node as a chain -- the node's ring
//    c mod (its rings) rotated to start at a GPU whose nearest NIC is NIC c mod (its NICs) --
//    and the chains are joined over the network. Consecutive channels start at consecutive
//    NICs, so each NIC sends for one channel and receives for another.
//
// Trees (one double binary tree per channel, NCCL's construction): tree 0 is the in-order
// binary tree over positions 0..n-1 (odd positions are leaves); tree 1 mirrors it (even n) or
// shifts it by one (odd n), so each rank is interior -- it has a parent and children -- in at
// most one of the two. Positions follow nodes, and inside each node the node's first ring
// rotated by the channel's NIC as for rings, so most tree edges stay inside a node and
// different channels leave each node through different GPUs and NICs.
//
// Rates: inside one node, each ring gets what it found on the bandwidth earlier rings left;
// across nodes, the rings share every resource they cross (link direction, NVSwitch port, NIC
// port) max-min fairly -- all rates rise together until a resource is full, the rings crossing
// it stop there, the rest go on. A tree pair's rate is the all-reduce data rate at which the
// busiest resource is full when every pair carries an equal share. All of it comes from the
// links' bandwidths (link_bw.h), nothing else.
#ifndef WEFT_TOPOLOGY_SEARCH_H_
#define WEFT_TOPOLOGY_SEARCH_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "topology/paths.h"
#include "topology/system.h"

namespace weft {
namespace topo {

struct Ring {
  std::vector<int> ranks;  // in passing order; the last sends to the first
  double bwGBs = 0;        // this ring's rate, GB/s per direction per rank
};

struct Tree {
  int root = -1;
  std::vector<int> parent;                   // per rank, -1 for the root
  std::vector<std::array<int, 2>> children;  // per rank, -1 where absent
  int depth = 0;                             // most edges from the root to a leaf
  bool interior(int rank) const {
    return parent[static_cast<size_t>(rank)] >= 0 && children[static_cast<size_t>(rank)][0] >= 0;
  }
};

struct TreePair {
  std::array<Tree, 2> trees;
  double bwGBs = 0;        // all-reduce data rate of this pair (bytes of the buffer per second)
  double bcastBwGBs = 0;   // broadcast (data flowing down both trees)
  double reduceBwGBs = 0;  // reduce (data flowing up)
};

struct SearchOptions {
  int maxChannels = 32;          // most distinct rings / tree pairs
  int64_t stepBudget = 2000000;  // depth-first steps per ring search before keeping the best so far
};

struct SearchResult {
  int nRanks = 0;
  int nNodes = 0;
  std::vector<Ring> rings;
  std::vector<TreePair> trees;
  std::string method;        // how the node rings were found, for people
  double ringBwGBs() const;  // all rings together
  double treeBwGBs() const;  // all tree pairs together (all-reduce)
  // Rings, rates and tree roots, one line each (long rings are shortened).
  std::string describe() const;
};

SearchResult search(const Cluster& cluster, const SearchOptions& options = SearchOptions());
SearchResult search(const System& node, const SearchOptions& options = SearchOptions());

// Channel c's chain through one node of a job that spans several (c < channels): the node's ring
// c mod rings.size() rotated so that the GPUs receiving from and sending to the network spread
// over the node's NICs evenly (the search's own construction, above). rings: orders of local
// GPU indices 0..n-1; nicOfGpu[g]: the NIC node local GPU g uses (-1 none). Empty without rings.
std::vector<std::vector<int>> nodeChains(const std::vector<std::vector<int>>& rings, const std::vector<int>& nicOfGpu,
                                         int channels);

// NCCL's double binary tree over positions 0..n-1: parent position per position (-1: root).
void doubleBinaryTree(int n, std::vector<int>* parent0, std::vector<int>* parent1);

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_SEARCH_H_
