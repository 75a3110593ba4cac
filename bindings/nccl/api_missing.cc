// libnccl.so.2: what NCCL 2.28 has and Weft does not provide yet: communicator revocation,
// symmetric-memory windows, and the host functions of the device-side API (nccl_device.h).
// They are exported, so that programs and frameworks that link them load, and refuse at run
// time with ncclInvalidUsage and a message in ncclGetLastError. Those that return no
// ncclResult_t return an empty team or -1, with the same message.
#include "shim.h"

using namespace weft::nccl;

namespace {

ncclResult_t notProvided(const char* fn, const char* instead) {
  return fail(ncclInvalidUsage, "%s: Weft does not provide this NCCL function yet; %s", fn, instead);
}

const char* const kDeviceApi =
    "NCCL's device-side API (nccl_device.h) needs NCCL's device communicator; use the host collectives";

ncclTeam_t noTeam(const char* fn) {
  notProvided(fn, kDeviceApi);
  return ncclTeam_t{0, -1, 0};
}

}  // namespace

WEFT_NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  return notProvided("ncclCommRevoke",
                     "ncclCommAbort stops the communicator's operations in flight (and frees it), and "
                     "ncclCommShrink with NCCL_SHRINK_ABORT continues without failed ranks");
}

WEFT_NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
              int winFlags) {
  return notProvided("ncclCommWindowRegister",
                     "symmetric-memory windows are not implemented; collectives work on ordinary buffers "
                     "(ncclCommRegister registers one)");
}

WEFT_NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  return notProvided("ncclCommWindowDeregister", "symmetric-memory windows are not implemented");
}

// ---- Host functions of the device-side API ---------------------------------------------------

WEFT_NCCL_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
              ncclDevComm_t* outDevComm) {
  return notProvided("ncclDevCommCreate", kDeviceApi);
}

WEFT_NCCL_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const ncclDevComm_t* devComm) {
  return notProvided("ncclDevCommDestroy", kDeviceApi);
}

WEFT_NCCL_API(ncclTeam_t, ncclTeamWorld, ncclComm_t comm) { return noTeam("ncclTeamWorld"); }
WEFT_NCCL_API(ncclTeam_t, ncclTeamLsa, ncclComm_t comm) { return noTeam("ncclTeamLsa"); }
WEFT_NCCL_API(ncclTeam_t, ncclTeamRail, ncclComm_t comm) { return noTeam("ncclTeamRail"); }

WEFT_NCCL_API(int, ncclTeamRankToWorld, ncclComm_t comm, ncclTeam_t team, int rank) {
  notProvided("ncclTeamRankToWorld", kDeviceApi);
  return -1;
}

WEFT_NCCL_API(int, ncclTeamRankToLsa, ncclComm_t comm, ncclTeam_t team, int rank) {
  notProvided("ncclTeamRankToLsa", kDeviceApi);
  return -1;
}

WEFT_NCCL_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
              ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  return notProvided("ncclLsaBarrierCreateRequirement", kDeviceApi);
}

WEFT_NCCL_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team, int nBarriers,
              ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  return notProvided("ncclGinBarrierCreateRequirement", kDeviceApi);
}

WEFT_NCCL_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize) {
  notProvided("ncclLLA2ACalcSlots", kDeviceApi);
  return -1;
}

WEFT_NCCL_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
              ncclDevResourceRequirements_t* outReq) {
  return notProvided("ncclLLA2ACreateRequirement", kDeviceApi);
}
