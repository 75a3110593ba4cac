// libnccl.so.2: version, errors, communicators and groups. Each entry point converts NCCL's
// arguments and calls the matching weft* function (DESIGN.md, "Bindings").
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "shim.h"

using namespace weft::nccl;

namespace {

weftUniqueId toWeftId(const ncclUniqueId& id) {
  static_assert(sizeof(ncclUniqueId) == sizeof(weftUniqueId), "both ids are 128 opaque bytes");
  weftUniqueId out;
  std::memcpy(&out, &id, sizeof(out));
  return out;
}

// Inside ncclGroupStart/End one thread may create several ranks, which must then join
// concurrently: the init is started non-blocking and the outermost ncclGroupEnd completes it.
ncclResult_t initRank(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank, const ncclConfig_t* config,
                      const char* fn) {
  TranslatedConfig t = translateConfig(config, fn);
  if (!t.ok) return t.error;
  auto* out = reinterpret_cast<weftComm_t*>(comm);
  if (groupDepth() == 0) return fromWeft(weftCommInitRankConfig(out, nranks, toWeftId(id), rank, &t.weft));
  const bool callerBlocking = t.weft.blocking != 0;
  t.weft.blocking = 0;
  weftResult_t r = weftCommInitRankConfig(out, nranks, toWeftId(id), rank, &t.weft);
  if (r != weftInProgress) return fromWeft(r);
  deferInit(*out, callerBlocking);
  return ncclSuccess;
}

// Names this front end in the flight recorder of every communicator (WEFT_RECORDER_FRONT_END,
// unless the user set it), at load time: before any thread of the program creates one, so that
// no setenv races a getenv of an init.
__attribute__((constructor)) void nameRecorderFrontEnd() { setenv("WEFT_RECORDER_FRONT_END", "nccl", 0); }

}  // namespace

WEFT_NCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  if (version == nullptr) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = WEFT_NCCL_VERSION_CODE;
  return ncclSuccess;
}

WEFT_NCCL_API(const char*, ncclGetErrorString, ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (see ncclGetLastError; WEFT_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (see ncclGetLastError; WEFT_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the Weft developers";
    case ncclInvalidArgument:
      return "invalid argument (see ncclGetLastError for details)";
    case ncclInvalidUsage:
      return "invalid usage (see ncclGetLastError for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    case ncclTimeout:
      return "operation timed out (see ncclGetLastError for details)";
    default:
      return "unknown result code";
  }
}

WEFT_NCCL_API(const char*, ncclGetLastError, ncclComm_t comm) { return lastError(comm); }

// Weft reads its logging settings when it starts; there is nothing to reload.
WEFT_NCCL_API(void, ncclResetDebugInit, void) {}

WEFT_NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  return fromWeft(weftGetUniqueId(reinterpret_cast<weftUniqueId*>(uniqueId)));
}

WEFT_NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return initRank(comm, nranks, commId, rank, nullptr, "ncclCommInitRank");
}

WEFT_NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
              ncclConfig_t* config) {
  return initRank(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}

WEFT_NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
              ncclUniqueId* commIds, ncclConfig_t* config) {
  TranslatedConfig t = translateConfig(config, "ncclCommInitRankScalable");
  if (!t.ok) return t.error;
  return fromWeft(weftCommInitRankScalable(reinterpret_cast<weftComm_t*>(newcomm), nranks, myrank, nId,
                                           reinterpret_cast<weftUniqueId*>(commIds), &t.weft));
}

// NCCL's NULL devlist means devices 0..ndev-1 (Weft ignores device numbers without a GPU).
WEFT_NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comm, int ndev, const int* devlist) {
  std::vector<int> devices;
  if (devlist == nullptr && ndev > 0) {
    for (int i = 0; i < ndev; ++i) devices.push_back(i);
    devlist = devices.data();
  }
  return fromWeft(weftCommInitAll(reinterpret_cast<weftComm_t*>(comm), ndev, devlist));
}

// config == NULL: the new communicator inherits the parent's settings, in NCCL as in Weft.
// Inside a group the split completes at ncclGroupEnd (*newcomm is set then), so that one
// thread can split several ranks.
WEFT_NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
              ncclConfig_t* config) {
  TranslatedConfig t = translateConfig(config, "ncclCommSplit");
  if (!t.ok) return t.error;
  if (groupDepth() > 0 && comm != nullptr && newcomm != nullptr) {
    *newcomm = nullptr;
    deferSplit(toWeft(comm), color, key, reinterpret_cast<weftComm_t*>(newcomm), t);
    return ncclSuccess;
  }
  return fromWeft(weftCommSplit(toWeft(comm), color, key, reinterpret_cast<weftComm_t*>(newcomm), weftConfigOf(t)));
}

WEFT_NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
              ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  TranslatedConfig t = translateConfig(config, "ncclCommShrink");
  if (!t.ok) return t.error;
  return fromWeft(weftCommShrink(toWeft(comm), excludeRanksList, excludeRanksCount,
                                 reinterpret_cast<weftComm_t*>(newcomm), weftConfigOf(t), shrinkFlags));
}

WEFT_NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) { return fromWeft(weftCommFinalize(toWeft(comm))); }

WEFT_NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  // NCCL accepts NULL here (a rank that got NCCL_SPLIT_NOCOLOR destroys what it got).
  if (comm == nullptr) return ncclSuccess;
  forgetWindows(comm);
  return fromWeft(weftCommDestroy(toWeft(comm)));
}

WEFT_NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  forgetWindows(comm);
  return fromWeft(weftCommAbort(toWeft(comm)));
}

WEFT_NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  weftResult_t state = weftSuccess;
  weftResult_t r = weftCommGetAsyncError(toWeft(comm), asyncError ? &state : nullptr);
  if (r != weftSuccess) return fromWeft(r);
  *asyncError = toNccl(state);
  // PyTorch asks ncclGetLastError(NULL) for the details of an error found this way.
  if (state != weftSuccess && state != weftInProgress) noteAsyncError(weftGetLastError(toWeft(comm)));
  return ncclSuccess;
}

WEFT_NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  return fromWeft(weftCommCount(toWeft(comm), count));
}

WEFT_NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  return fromWeft(weftCommDevice(toWeft(comm), device));
}

WEFT_NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  return fromWeft(weftCommUserRank(toWeft(comm), rank));
}

// What a program asks before it uses NCCL's device-side API: the communicator's rank, size and
// device, and no device-API, multimem, GIN, host-RMA or CFT support (Weft provides none). Weft
// knows no NVML index or communicator hash: -1 and 0. Only the caller's props->size bytes are
// written (its header stays as it set it).
WEFT_NCCL_API(ncclResult_t, ncclCommQueryProperties, ncclComm_t comm, ncclCommProperties_t* props) {
  const char* fn = "ncclCommQueryProperties";
  if (props == nullptr) return fail(ncclInvalidArgument, "%s: props is NULL", fn);
  if (props->magic != WEFT_NCCL_CONFIG_MAGIC || props->size < offsetof(ncclCommProperties_t, rank)) {
    return fail(ncclInvalidArgument,
                "%s: props (magic 0x%x, size %zu) was not initialised; start from NCCL_COMM_PROPERTIES_INITIALIZER", fn,
                props->magic, props->size);
  }
  ncclCommProperties_t p;
  std::memset(&p, 0, sizeof(p));
  ncclResult_t r = fromWeft(weftCommUserRank(toWeft(comm), &p.rank));
  if (r == ncclSuccess) r = fromWeft(weftCommCount(toWeft(comm), &p.nRanks));
  if (r == ncclSuccess) r = fromWeft(weftCommDevice(toWeft(comm), &p.cudaDev));
  if (r != ncclSuccess) return r;
  p.nvmlDev = -1;
  p.ginType = p.railedGinType = NCCL_GIN_TYPE_NONE;
  p.ginConnectionType = NCCL_GIN_CONNECTION_NONE;
  const size_t header = offsetof(ncclCommProperties_t, rank);
  const size_t written = std::min(props->size, sizeof(p));
  std::memcpy(reinterpret_cast<char*>(props) + header, reinterpret_cast<const char*>(&p) + header, written - header);
  return ncclSuccess;
}

// ---- Groups ------------------------------------------------------------------------------

WEFT_NCCL_API(ncclResult_t, ncclGroupStart, void) {
  ncclResult_t r = fromWeft(weftGroupStart());
  if (r == ncclSuccess) groupEnter();
  return r;
}

WEFT_NCCL_API(ncclResult_t, ncclGroupEnd, void) {
  if (groupDepth() == 0) return fromWeft(weftGroupEnd());  // Weft says why this is wrong
  ncclResult_t r = fromWeft(weftGroupEnd());
  if (!groupLeave()) return r;
  ncclResult_t inits = completeDeferred();
  return r != ncclSuccess ? r : inits;
}

WEFT_NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  if (simInfo == nullptr) return fail(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo is NULL");
  if (simInfo->magic != WEFT_NCCL_SIM_INFO_MAGIC) {
    return fail(ncclInvalidArgument,
                "ncclGroupSimulateEnd: simInfo->magic is 0x%x, not 0x74685283: start from NCCL_SIM_INFO_INITIALIZER",
                simInfo->magic);
  }
  weftSimInfo_t sim = WEFT_SIM_INFO_INITIALIZER;
  weftResult_t wr = weftGroupSimulateEnd(&sim);
  ncclResult_t r = fromWeft(wr);
  // A refused simulation leaves the group open (ncclGroupEnd still closes it).
  if (wr == weftSuccess && groupDepth() > 0 && groupLeave()) {
    ncclResult_t inits = completeDeferred();
    if (r == ncclSuccess) r = inits;
  }
  // Write only what the caller's struct holds (an older, smaller one has no estimatedTime).
  if (wr == weftSuccess && simInfo->size >= offsetof(ncclSimInfo_t, estimatedTime) + sizeof(float)) {
    simInfo->estimatedTime = sim.estimatedTime;
  }
  return r;
}
