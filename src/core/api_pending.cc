// TEMPORARY: entry points declared in weft.h whose implementation is in progress on a branch.
// Each returns weftInternalError; this file must be gone before the work lands.
#include "weft/weft.h"

namespace {
weftResult_t pending() { return weftInternalError; }
}  // namespace

extern "C" {
weftResult_t weftRedOpCreatePreMulSum(weftRedOp_t*, void*, weftDataType_t, weftScalarResidence_t, weftComm_t) {
  return pending();
}
weftResult_t weftRedOpDestroy(weftRedOp_t, weftComm_t) { return pending(); }
}
