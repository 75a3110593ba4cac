// The timeline as a picture (timeline.h): one row per rank on one time axis, each call a bar
// labelled with its kind and number, waits shaded, the straggler's row marked in red, and a
// legend. Plain SVG 1.1, readable in a browser.
#ifndef WEFT_TOOLS_TIMELINE_SVG_H_
#define WEFT_TOOLS_TIMELINE_SVG_H_

#include <string>
#include <vector>

#include "timeline.h"

namespace weft {
namespace tools {

std::string timelineSvg(const std::vector<RankTimeline>& ranks, const Straggler& straggler);

// The step between axis ticks for a span of `spanNs` (1, 2 or 5 times a power of ten, about
// eight ticks), and a tick's label in ns, µs, ms or s.
int64_t tickStepNs(int64_t spanNs);
std::string tickLabel(int64_t ns, int64_t stepNs);

}  // namespace tools
}  // namespace weft

#endif  // WEFT_TOOLS_TIMELINE_SVG_H_
