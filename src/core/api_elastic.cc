// The calls that change a communicator's membership or its hold on resources after init:
// weftCommRevoke, weftCommGetUniqueId and weftCommGrow, weftCommSuspend / weftCommResume and
// weftCommMemStats. Their checks, and the hand-off to the communicator (comm.cc revoke,
// comm_grow.cc, comm_suspend.cc).
#include <memory>

#include "core/api_entry.h"
#include "core/call_context.h"
#include "core/group.h"

namespace weft {
namespace core {
namespace capi {
namespace {

// The communicator exists, its init finished and did not fail.
Status checkMade(const Call& call) {
  WEFT_TRY(call.checkInitDone());
  if (call.comm()->impl == nullptr) return call.error(weftInvalidUsage, "the communicator's init failed; destroy it");
  return Status::ok();
}

// A new rank's weftCommGrow: it has no communicator; it joins the id as `rank` of nRanks.
Status checkNewRank(const Call& call, int nRanks, const weftUniqueId* id, int rank, weftComm_t* newcomm) {
  WEFT_TRY(call.checkOutput(newcomm, "newcomm"));
  if (id == nullptr) {
    return call.error(weftInvalidArgument,
                      "comm and uniqueId are both NULL: a new rank passes the id that rank 0 of the existing "
                      "communicator made with weftCommGetUniqueId; an existing rank passes its communicator");
  }
  if (nRanks < 2 || rank < 1 || rank >= nRanks) {
    return call.error(weftInvalidArgument,
                      "a new rank joins as rank %d of %d: its rank must be one of the new ranks, from the existing "
                      "communicator's size up to nRanks - 1",
                      rank, nRanks);
  }
  return Status::ok();
}

// An existing rank's weftCommGrow.
Status checkExistingRank(const Call& call, int nRanks, const weftUniqueId* id, int rank, weftComm_t* newcomm) {
  weftComm* comm = call.comm();
  WEFT_TRY(call.checkComm());
  WEFT_TRY(call.checkOutput(newcomm, "newcomm"));
  if (rank != -1) {
    return call.error(weftInvalidArgument,
                      "rank is %d: a rank of the existing communicator keeps its number (%d) and passes rank -1; only "
                      "new ranks (comm NULL) pass their new rank",
                      rank, comm->rank);
  }
  if (nRanks <= comm->nRanks) {
    return call.error(weftInvalidArgument,
                      "nRanks %d is not more than the communicator's %d ranks; weftCommGrow adds ranks (use "
                      "weftCommShrink to remove some)",
                      nRanks, comm->nRanks);
  }
  if (comm->rank == 0 && id == nullptr) {
    return call.error(weftInvalidArgument,
                      "uniqueId is NULL on rank 0: rank 0 passes the id it made with weftCommGetUniqueId (and hands "
                      "it to the new ranks)");
  }
  if (comm->rank != 0 && id != nullptr) {
    return call.error(weftInvalidArgument,
                      "uniqueId is given on rank %d: only rank 0 of the existing communicator passes the id (it tells "
                      "the other existing ranks); pass NULL here",
                      comm->rank);
  }
  return Status::ok();
}

}  // namespace

weftResult_t commRevoke(const Call& call, int flags) {
  Status s = checkMade(call);
  if (s.isOk() && flags != 0) {
    s = call.error(weftInvalidArgument, "flags is %d; weftCommRevoke takes no flags: pass 0", flags);
  }
  if (!s.isOk()) return call.finish(s);
  call.comm()->impl->revoke();
  // Calls recorded in this thread's open group would only fail at weftGroupEnd.
  forgetCallsOn(call.comm());
  return weftSuccess;
}

weftResult_t commGetUniqueId(const Call& call, weftUniqueId* uniqueId) {
  Status s = call.checkComm();
  if (s.isOk()) s = call.checkOutput(uniqueId, "uniqueId");
  if (s.isOk() && call.comm()->rank != 0) {
    s = call.error(weftInvalidUsage,
                   "only rank 0 of the communicator makes the id for weftCommGrow; on this rank pass NULL to "
                   "weftCommGrow, and let rank 0 hand its id to the new ranks");
  }
  if (s.isOk()) s = call.comm()->impl->makeGrowId(uniqueId);
  return call.finish(s);
}

weftResult_t commGrow(const Call& call, int nRanks, const weftUniqueId* uniqueId, int rank, weftComm_t* newcomm,
                      const weftConfig_t* config) {
  weftComm* comm = call.comm();
  Status s = comm == nullptr ? checkNewRank(call, nRanks, uniqueId, rank, newcomm)
                             : checkExistingRank(call, nRanks, uniqueId, rank, newcomm);
  if (s.isOk()) s = call.checkConfig(config);
  if (!s.isOk()) return call.finish(s);
  *newcomm = nullptr;
  // A new rank joins the grown communicator as any rank joins one: it knows nothing else of it.
  if (comm == nullptr) return initRank(newcomm, nRanks, *uniqueId, rank, const_cast<weftConfig_t*>(config));
  std::unique_ptr<Communicator> impl;
  {
    InFlight inFlight(comm);
    s = comm->impl->grow(nRanks, uniqueId, config, &impl);
    // A failed grow leaves comm as it was.
    if (!s.isOk()) return report(comm, s);
  }
  *newcomm = wrapCommunicator(std::move(impl));
  return weftSuccess;
}

weftResult_t commSuspend(const Call& call, int flags) {
  Status s = call.checkComm();
  if (s.isOk() && flags != 0 && flags != WEFT_SUSPEND_MEM) {
    s = call.error(weftInvalidArgument, "flags is %d; pass 0 or WEFT_SUSPEND_MEM (%d)", flags, WEFT_SUSPEND_MEM);
  }
  if (s.isOk() && recordedCallsOn(call.comm()) > 0) {
    s = call.error(weftInvalidUsage,
                   "the group open on this thread holds calls on this communicator; call weftGroupEnd before "
                   "weftCommSuspend");
  }
  if (!s.isOk()) return call.finish(s);
  InFlight inFlight(call.comm());
  return call.finishOp(call.comm()->impl->suspend());
}

weftResult_t commResume(const Call& call) {
  Status s = checkMade(call);
  if (s.isOk() && !call.comm()->impl->suspended()) {
    s = call.error(weftInvalidUsage, "the communicator is not suspended; weftCommResume follows weftCommSuspend");
  }
  if (!s.isOk()) return call.finish(s);
  return call.finish(call.comm()->impl->resume());
}

weftResult_t commMemStats(const Call& call, weftCommMemStat_t stat, uint64_t* value) {
  Status s = checkMade(call);
  if (s.isOk()) s = call.checkOutput(value, "value");
  if (s.isOk() && stat != weftStatMemHeld && stat != weftStatMemSuspended) {
    s = call.error(weftInvalidArgument, "stat is %d; pass weftStatMemHeld (0) or weftStatMemSuspended (1)",
                   static_cast<int>(stat));
  }
  if (!s.isOk()) return call.finish(s);
  Communicator* impl = call.comm()->impl.get();
  *value = stat == weftStatMemHeld ? impl->suspendableBytes() : (impl->suspended() ? 1 : 0);
  return weftSuccess;
}

}  // namespace capi
}  // namespace core
}  // namespace weft
