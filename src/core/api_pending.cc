// TEMPORARY: entry points declared in weft.h whose implementation is in progress on a branch.
// Each returns weftInternalError; this file must be gone before the work lands.
#include "weft/weft.h"

namespace {
weftResult_t pending() { return weftInternalError; }
}  // namespace

extern "C" {
weftResult_t weftCommInitRankScalable(weftComm_t*, int, int, int, weftUniqueId*, weftConfig_t*) { return pending(); }
weftResult_t weftCommShrink(weftComm_t, const int*, int, weftComm_t*, weftConfig_t*, int) { return pending(); }
weftResult_t weftMemAlloc(void**, size_t) { return pending(); }
weftResult_t weftMemFree(void*) { return pending(); }
weftResult_t weftCommRegister(const weftComm_t, void*, size_t, void**) { return pending(); }
weftResult_t weftCommDeregister(const weftComm_t, void*) { return pending(); }
weftResult_t weftMemQuery(const void*, weftMemKind_t*, int*) { return pending(); }
weftResult_t weftGather(const void*, void*, size_t, weftDataType_t, int, weftComm_t, weftStream_t) { return pending(); }
weftResult_t weftScatter(const void*, void*, size_t, weftDataType_t, int, weftComm_t, weftStream_t) { return pending(); }
weftResult_t weftGroupSimulateEnd(weftSimInfo_t*) { return pending(); }
}
