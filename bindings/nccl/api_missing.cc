// libnccl.so.2: what NCCL 2.32 has and Weft's API cannot do: the host functions of the
// device-side API (nccl_device.h), and encrypted sockets. They are exported, so that programs
// and frameworks that link them load, and refuse at run time with ncclInvalidUsage and a message
// in ncclGetLastError. Those that return no ncclResult_t return an empty team or -1, with the
// same message.
#include "shim.h"

using namespace weft::nccl;

namespace {

const char* const kDeviceApi =
    "NCCL's device-side API (nccl_device.h) needs NCCL's device communicator; use the host collectives";

ncclTeam_t noTeam(const char* fn) {
  notProvided(fn, kDeviceApi);
  return ncclTeam_t{0, -1, 0};
}

}  // namespace

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
WEFT_NCCL_API(ncclTeam_t, ncclTeamCft, ncclComm_t comm, ncclCftTeamMode_t mode) { return noTeam("ncclTeamCft"); }
WEFT_NCCL_API(ncclTeam_t, ncclTeamCftMultimem, ncclComm_t comm) { return noTeam("ncclTeamCftMultimem"); }

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

WEFT_NCCL_API(ncclResult_t, ncclCftBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
              ncclCftBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  return notProvided("ncclCftBarrierCreateRequirement", kDeviceApi);
}

WEFT_NCCL_API(ncclResult_t, ncclGinOutboxCreateRequirement, int nBlocks, int sizeLog2, ncclGinOutboxHandle_t* outHandle,
              ncclDevResourceRequirements_t* outReq) {
  return notProvided("ncclGinOutboxCreateRequirement", kDeviceApi);
}

WEFT_NCCL_API(ncclResult_t, ncclGinInboxA2ACreateRequirement, ncclTeam_t peers, int nBlocks, int sizeLog2,
              ncclGinInboxA2AHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  return notProvided("ncclGinInboxA2ACreateRequirement", kDeviceApi);
}

WEFT_NCCL_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize) {
  notProvided("ncclLLA2ACalcSlots", kDeviceApi);
  return -1;
}

WEFT_NCCL_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
              ncclDevResourceRequirements_t* outReq) {
  return notProvided("ncclLLA2ACreateRequirement", kDeviceApi);
}

// ---- Window pointers for device code ---------------------------------------------------------

WEFT_NCCL_API(ncclResult_t, ncclGetLsaMultimemDevicePointer, ncclWindow_t window, size_t offset, void** outPtr) {
  return notProvided("ncclGetLsaMultimemDevicePointer", kDeviceApi);
}

WEFT_NCCL_API(ncclResult_t, ncclGetMultimemDevicePointer, ncclWindow_t window, size_t offset,
              ncclMultimemHandle_t multimem, void** outPtr) {
  return notProvided("ncclGetMultimemDevicePointer", kDeviceApi);
}

WEFT_NCCL_API(ncclResult_t, ncclGetLsaDevicePointer, ncclWindow_t window, size_t offset, int lsaRank, void** outPtr) {
  return notProvided("ncclGetLsaDevicePointer", kDeviceApi);
}

WEFT_NCCL_API(ncclResult_t, ncclGetPeerDevicePointer, ncclWindow_t window, size_t offset, int peer, void** outPtr) {
  return notProvided("ncclGetPeerDevicePointer", kDeviceApi);
}

WEFT_NCCL_API(ncclResult_t, ncclGetMultimemDeviceLeInfo, ncclWindow_t window, size_t offset, ncclCftLeId* leId,
              size_t* leOffset) {
  return notProvided("ncclGetMultimemDeviceLeInfo", kDeviceApi);
}

WEFT_NCCL_API(ncclResult_t, ncclGetCftDeviceLeInfo, ncclWindow_t window, size_t offset, int peerCft, ncclTeam_t cftTeam,
              ncclCftLeId* leId, size_t* leOffset) {
  return notProvided("ncclGetCftDeviceLeInfo", kDeviceApi);
}

WEFT_NCCL_API(ncclResult_t, ncclGetPeerDeviceLeInfo, ncclWindow_t window, size_t offset, int peerWorld,
              ncclCftLeId* leId, size_t* leOffset) {
  return notProvided("ncclGetPeerDeviceLeInfo", kDeviceApi);
}

// ---- Encryption ---------------------------------------------------------------------------------

// Weft's sockets carry plaintext: asking for that succeeds; a pre-shared key is refused.
WEFT_NCCL_API(ncclResult_t, ncclSetEncryption, const ncclEncryptionConfig_t* config) {
  const char* fn = "ncclSetEncryption";
  if (config == nullptr) return fail(ncclInvalidArgument, "%s: config is NULL", fn);
  if (config->magic != WEFT_NCCL_CONFIG_MAGIC || config->size < offsetof(ncclEncryptionConfig_t, psk)) {
    return fail(ncclInvalidArgument,
                "%s: config (magic 0x%x, size %zu) was not initialised; start from NCCL_ENCRYPTION_CONFIG_INITIALIZER",
                fn, config->magic, config->size);
  }
  if (config->mode == NCCL_ENCRYPTION_MODE_NONE) return ncclSuccess;
  if (config->mode != NCCL_ENCRYPTION_MODE_PSK) {
    return fail(ncclInvalidArgument, "%s: config->mode is %d; use NCCL_ENCRYPTION_MODE_NONE (0) or _PSK (1)", fn,
                config->mode);
  }
  return notProvided(fn,
                     "Weft's bootstrap and socket transport do not encrypt; run them on a private network (or a "
                     "VPN) and use NCCL_ENCRYPTION_MODE_NONE");
}
