// Rings inside one node, for the search (search.cc; search.h describes the method): the best
// rings over one node's GPUs with their rates, and the max-min fair rates of rings that share
// resources, which the search also uses for the rings of a job across nodes.
#ifndef WEFT_TOPOLOGY_SEARCH_NODE_RINGS_H_
#define WEFT_TOPOLOGY_SEARCH_NODE_RINGS_H_

#include <functional>
#include <string>
#include <vector>

#include "topology/paths.h"
#include "topology/search.h"

namespace weft {
namespace topo {

struct NodeRings {
  std::vector<std::vector<int>> orders;  // local GPU indices
  std::vector<double> rates;
  std::string method;
};

// The rings of one node's GPUs (pm's), at most options.maxChannels: mesh packing where every
// pair has one equal direct bundle and that packs fully, else the better of it and the greedy
// bottleneck search.
NodeRings nodeRings(const PathMatrix& pm, const SearchOptions& options);

// Appends to *out the resources the edge a -> b of a ring crosses.
using EdgeRoute = std::function<void(int a, int b, std::vector<int>* out)>;

// Rates for rings that share resources, max-min fair (water filling): raise every ring's rate
// together until some resource is full, fix the rings crossing it, go on with the rest. A ring
// crossing a resource twice counts twice.
std::vector<double> shareRates(const std::vector<std::vector<int>>& rings, const EdgeRoute& routeOf,
                               const std::vector<double>& capacity);

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_SEARCH_NODE_RINGS_H_
