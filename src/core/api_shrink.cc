// weftCommShrink: the checks of the excluded list and the hand-off to Communicator::shrink
// (comm_shrink.cc). Unlike other calls it runs on a communicator in its error state: shrinking
// away a rank that failed is what it is for.
#include <algorithm>
#include <string>
#include <vector>

#include "core/api_internal.h"

using weft::Status;

namespace weft {
namespace core {
namespace capi {
namespace {

Status checkShrinkArgs(weftComm* comm, const int* excludeRanks, int nExclude, weftComm_t* newcomm,
                       const weftConfig_t* config, int flags, std::vector<int>* excluded) {
  const char* fn = "weftCommShrink";
  if (comm == nullptr) return invalid("weftCommShrink: comm is NULL; create one with weftCommInitRank first");
  if (comm->state.load() == weftInProgress) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: %s: the communicator is still initialising (non-blocking init); poll "
                      "weftCommGetAsyncError until it returns weftSuccess",
                      comm->rank, fn);
  }
  if (comm->impl == nullptr) {
    return WEFT_ERROR(weftInvalidUsage, "rank %d: %s: the communicator's init failed; create a new one", comm->rank,
                      fn);
  }
  if (newcomm == nullptr) return WEFT_ERROR(weftInvalidArgument, "rank %d: %s: newcomm is NULL", comm->rank, fn);
  if (flags != WEFT_SHRINK_DEFAULT && flags != WEFT_SHRINK_ABORT) {
    return WEFT_ERROR(weftInvalidArgument,
                      "rank %d: %s: shrinkFlags is %d; use WEFT_SHRINK_DEFAULT (0) or WEFT_SHRINK_ABORT (1)",
                      comm->rank, fn, flags);
  }
  if (nExclude < 0 || (nExclude > 0 && excludeRanks == nullptr)) {
    return WEFT_ERROR(weftInvalidArgument, "rank %d: %s: nExclude is %d with excludeRanks %s", comm->rank, fn, nExclude,
                      excludeRanks ? "given" : "NULL");
  }
  if (nExclude >= comm->nRanks) {
    return WEFT_ERROR(weftInvalidArgument,
                      "rank %d: %s: excluding %d of %d ranks leaves no communicator; at least one rank must remain",
                      comm->rank, fn, nExclude, comm->nRanks);
  }
  excluded->assign(excludeRanks, excludeRanks + nExclude);
  for (int i = 0; i < nExclude; ++i) {
    const int r = excludeRanks[i];
    if (r < 0 || r >= comm->nRanks) {
      return WEFT_ERROR(weftInvalidArgument,
                        "rank %d: %s: excludeRanks[%d] = %d is not a rank of this communicator (0..%d)", comm->rank, fn,
                        i, r, comm->nRanks - 1);
    }
    if (r == comm->rank) {
      return WEFT_ERROR(weftInvalidArgument,
                        "rank %d: %s: excludeRanks[%d] is this rank itself; an excluded rank does not call "
                        "weftCommShrink (it destroys or aborts its communicator instead)",
                        comm->rank, fn, i);
    }
  }
  std::sort(excluded->begin(), excluded->end());
  auto dup = std::adjacent_find(excluded->begin(), excluded->end());
  if (dup != excluded->end()) {
    return WEFT_ERROR(weftInvalidArgument, "rank %d: %s: rank %d is listed twice in excludeRanks", comm->rank, fn,
                      *dup);
  }
  if (config && (config->magic != WEFT_CONFIG_MAGIC || config->size < offsetof(weftConfig_t, commName))) {
    return WEFT_ERROR(weftInvalidArgument, "rank %d: %s: config was not set up with WEFT_CONFIG_INITIALIZER",
                      comm->rank, fn);
  }
  return Status::ok();
}

}  // namespace
}  // namespace capi
}  // namespace core
}  // namespace weft

extern "C" {

weftResult_t weftCommShrink(weftComm_t comm, const int* excludeRanks, int nExclude, weftComm_t* newcomm,
                            weftConfig_t* config, int shrinkFlags) {
  using namespace weft::core;
  std::vector<int> excluded;
  Status s = capi::checkShrinkArgs(comm, excludeRanks, nExclude, newcomm, config, shrinkFlags, &excluded);
  if (!s.isOk()) return capi::report(comm, s);
  *newcomm = nullptr;
  comm->inFlight.fetch_add(1);
  std::unique_ptr<Communicator> impl;
  s = comm->impl->shrink(excluded, config, shrinkFlags == WEFT_SHRINK_ABORT, &impl);
  // A failed shrink leaves the parent as it was (in its error state only if it was).
  weftResult_t result = s.isOk() ? weftSuccess : capi::report(comm, s);
  comm->inFlight.fetch_sub(1);
  if (result == weftSuccess) *newcomm = capi::wrapCommunicator(std::move(impl));
  return result;
}

}  // extern "C"
