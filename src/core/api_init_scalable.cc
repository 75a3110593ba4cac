// weftCommInitRankScalable: NCCL's init from several unique ids, each made by weftGetUniqueId in
// a different rank's process.
//
// What it does, exactly: every rank joins through the first id (commIds[0]), as
// weftCommInitRankConfig would, and the bootstrap of the ranks is that id's root alone. The
// other ids only have their roots stopped: each rank looks, before joining, for the roots of
// commIds[1..nId-1] that run in its own process (the process that called weftGetUniqueId for
// them) and stops them, closing their listeners, so none is left waiting for ranks that never
// come (they would otherwise warn and close at WEFT_TIMEOUT_S). A root made by a process that
// is not one of the ranks cannot be reached and ends at its own deadline. The root of
// commIds[0] serves the nranks joins (one 128-byte hello each) and exits; spreading the joins
// over the roots, as NCCL does for tens of thousands of ranks, is not done.
#include <cstring>
#include <string>

#include "base/log.h"
#include "core/api_internal.h"
#include "core/bootstrap.h"

using weft::Status;

namespace weft {
namespace core {
namespace capi {
namespace {

Status checkScalableArgs(weftComm_t* newcomm, int nranks, int myrank, int nId, const weftUniqueId* commIds,
                         const weftConfig_t* config) {
  const char* fn = "weftCommInitRankScalable";
  if (newcomm == nullptr) return WEFT_ERROR(weftInvalidArgument, "%s: newcomm (the output pointer) is NULL", fn);
  if (nranks < 1) return WEFT_ERROR(weftInvalidArgument, "%s: nranks is %d; it must be at least 1", fn, nranks);
  if (myrank < 0 || myrank >= nranks) {
    return WEFT_ERROR(weftInvalidArgument, "%s: myrank %d is outside 0..%d", fn, myrank, nranks - 1);
  }
  if (nId < 1 || nId > nranks) {
    return WEFT_ERROR(weftInvalidArgument,
                      "rank %d: %s: nId is %d; it must be 1..nranks (%d): each id is made by a different rank", myrank,
                      fn, nId, nranks);
  }
  if (commIds == nullptr) return WEFT_ERROR(weftInvalidArgument, "rank %d: %s: commIds is NULL", myrank, fn);
  for (int i = 0; i < nId; ++i) {
    UniqueIdInfo info;
    Status s = decodeUniqueId(commIds[i], &info);
    if (!s.isOk()) {
      return std::move(s).withPrefix("rank " + std::to_string(myrank) + ": " + fn + ": commIds[" + std::to_string(i) +
                                     "]: ");
    }
    for (int j = 0; j < i; ++j) {
      if (std::memcmp(&commIds[i], &commIds[j], sizeof(weftUniqueId)) == 0) {
        return WEFT_ERROR(weftInvalidArgument,
                          "rank %d: %s: commIds[%d] and commIds[%d] are the same id; each must come from its own "
                          "weftGetUniqueId call",
                          myrank, fn, j, i);
      }
    }
  }
  if (config && (config->magic != WEFT_CONFIG_MAGIC || config->size < offsetof(weftConfig_t, commName))) {
    return WEFT_ERROR(weftInvalidArgument, "rank %d: %s: config was not set up with WEFT_CONFIG_INITIALIZER", myrank,
                      fn);
  }
  return Status::ok();
}

}  // namespace
}  // namespace capi
}  // namespace core
}  // namespace weft

extern "C" {

weftResult_t weftCommInitRankScalable(weftComm_t* newcomm, int nranks, int myrank, int nId, weftUniqueId* commIds,
                                      weftConfig_t* config) {
  using namespace weft::core;
  Status s = capi::checkScalableArgs(newcomm, nranks, myrank, nId, commIds, config);
  if (!s.isOk()) return capi::report(nullptr, s);
  // Only commIds[0] is joined through: the other roots of this process stop now.
  for (int i = 1; i < nId; ++i) {
    bool stopped = false;
    s = stopRoot(commIds[i], &stopped);
    if (!s.isOk()) return capi::report(nullptr, s);
  }
  return capi::initRank(newcomm, nranks, commIds[0], myrank, config);
}

}  // extern "C"
