// libnccl.so.2: communicators that change while they live (NCCL 2.28.7 - 2.29): revocation,
// suspend / resume, and growing a communicator by new ranks. Each is a thin translation onto
// Weft's call of the same name (weftCommRevoke, weftCommSuspend / weftCommResume,
// weftCommGetUniqueId / weftCommGrow); the flags are checked here so that the message names
// NCCL's constants, then pass unchanged (Weft's have NCCL's values).
#include "shim.h"

using namespace weft::nccl;

static_assert(WEFT_NCCL_SUSPEND_MEM == WEFT_SUSPEND_MEM, "NCCL_SUSPEND_MEM passes to weftCommSuspend as it is");

WEFT_NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  if (revokeFlags != NCCL_REVOKE_DEFAULT) {
    return fail(ncclInvalidArgument, "ncclCommRevoke: revokeFlags is 0x%x; pass NCCL_REVOKE_DEFAULT (0)",
                static_cast<unsigned>(revokeFlags));
  }
  return fromWeft(weftCommRevoke(toWeft(comm), revokeFlags));
}

WEFT_NCCL_API(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags) {
  if (flags != 0 && flags != NCCL_SUSPEND_MEM) {
    return fail(ncclInvalidArgument, "ncclCommSuspend: flags is 0x%x; pass 0 or NCCL_SUSPEND_MEM (0x%x)",
                static_cast<unsigned>(flags), static_cast<unsigned>(NCCL_SUSPEND_MEM));
  }
  return fromWeft(weftCommSuspend(toWeft(comm), flags));
}

WEFT_NCCL_API(ncclResult_t, ncclCommResume, ncclComm_t comm) { return fromWeft(weftCommResume(toWeft(comm))); }

WEFT_NCCL_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId) {
  return fromWeft(weftCommGetUniqueId(toWeft(comm), toWeft(uniqueId)));
}

// Old ranks pass comm and rank -1 (rank 0 also the id from ncclCommGetUniqueId); new ranks pass
// comm NULL, the id and their rank. Weft checks that combination and says what is wrong.
WEFT_NCCL_API(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
              ncclComm_t* newcomm, ncclConfig_t* config) {
  TranslatedConfig t = translateConfig(config, "ncclCommGrow");
  if (!t.ok) return t.error;
  return fromWeft(weftCommGrow(toWeft(comm), nRanks, toWeft(uniqueId), rank, reinterpret_cast<weftComm_t*>(newcomm),
                               weftConfigOf(t)));
}
