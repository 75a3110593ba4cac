// The hwloc source in a build without hwloc (WEFT_WITH_HWLOC=OFF, or AUTO where pkg-config finds
// no hwloc, as on a machine without Debian's -dev packages): it reports itself absent, and
// detect.cc takes the NUMA nodes and the PCI tree from sysfs alone. Compiled instead of
// detect_hwloc.cc (topology/CMakeLists.txt).
#include "topology/detect_sources.h"

namespace weft {
namespace topo {
namespace detect {

DetectSourceResult readHwloc(Inventory*) {
  DetectSourceResult r;
  r.name = "hwloc";
  r.state = SourceState::kAbsent;
  r.detail = "this libweft was built without hwloc (WEFT_WITH_HWLOC); sysfs is read instead";
  return r;
}

}  // namespace detect
}  // namespace topo
}  // namespace weft
