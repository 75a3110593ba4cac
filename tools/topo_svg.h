// weft-topo --svg: a picture of one node's topology. CPUs (one box per NUMA domain) at the top,
// the PCI tree below them (switches, then GPUs and NICs under their switch), NVSwitches as a bar
// under the GPUs, links drawn by type (NVLink green, xGMI red, PCIe grey, SMP dashed, C2C
// purple) and the first rings of the search drawn as coloured polygons over the GPUs, with a
// legend and a title. A standalone SVG 1.1 document.
#ifndef WEFT_TOOLS_TOPO_SVG_H_
#define WEFT_TOOLS_TOPO_SVG_H_

#include <string>

#include "topology/search.h"
#include "topology/system.h"

namespace weft {
namespace tools {

// Rings drawn at most (more would be a tangle); each is one <path class="ring">.
constexpr int kMaxRingsDrawn = 4;

// `rings` is the single-node search of `sys`; its rank r is the r-th GPU in dev order.
std::string renderTopologySvg(const topo::System& sys, const topo::SearchResult& rings);

// Text escaped for XML content and attribute values.
std::string xmlEscape(const std::string& text);

}  // namespace tools
}  // namespace weft

#endif  // WEFT_TOOLS_TOPO_SVG_H_
