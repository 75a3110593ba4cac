// The work behind each C entry point (api.cc): an entry point builds its Call (call_context.h)
// and arguments and hands them to one of these. Grouped by the file that does the work.
#ifndef WEFT_CORE_API_ENTRY_H_
#define WEFT_CORE_API_ENTRY_H_

#include <cstddef>

#include "core/call_context.h"
#include "core/comm.h"
#include "weft/weft.h"

namespace weft {
namespace core {
namespace capi {

// ---- api_collectives.cc ----
weftResult_t collective(const Call& call, const CollCall& c, weftStream_t stream);
struct P2pArgs {
  bool send = true;
  const void* buf = nullptr;  // sendbuff of a send, recvbuff of a receive
  size_t count = 0;
  weftDataType_t type = weftFloat32;
  int peer = 0;
  weftStream_t stream = nullptr;
};
weftResult_t pointToPoint(const Call& call, const P2pArgs& a);
weftResult_t barrier(const Call& call, weftStream_t stream);
// weftRecvAny: host memory, blocking, outside a group.
weftResult_t recvAny(const Call& call, void* recvbuff, size_t count, weftDataType_t type, int* source,
                     weftStream_t stream);
weftResult_t redOpCreatePreMulSum(const Call& call, weftRedOp_t* op, void* scalar, weftDataType_t type,
                                  weftScalarResidence_t residence);
weftResult_t redOpDestroy(const Call& call, weftRedOp_t op);

// ---- api_elastic.cc ----
weftResult_t commRevoke(const Call& call, int flags);
weftResult_t commGetUniqueId(const Call& call, weftUniqueId* uniqueId);
weftResult_t commGrow(const Call& call, int nRanks, const weftUniqueId* uniqueId, int rank, weftComm_t* newcomm,
                      const weftConfig_t* config);
weftResult_t commSuspend(const Call& call, int flags);
weftResult_t commResume(const Call& call);
weftResult_t commMemStats(const Call& call, weftCommMemStat_t stat, uint64_t* value);

// ---- api_window.cc ----
weftResult_t commWindowRegister(const Call& call, void* buff, size_t size, weftWindow_t* win, int flags);
weftResult_t commWindowDeregister(const Call& call, weftWindow_t win);
struct PutArgs {
  const void* localbuff = nullptr;
  size_t count = 0;
  weftDataType_t type = weftFloat32;
  int peer = 0;
  weftWindow_t peerWin = nullptr;
  size_t offset = 0;  // bytes into the peer's window
  int sigIdx = 0;
  int ctx = 0;
  unsigned int flags = 0;
  weftStream_t stream = nullptr;
};
weftResult_t putSignal(const Call& call, const PutArgs& a);
weftResult_t signal(const Call& call, int peer, int sigIdx, int ctx, unsigned int flags, weftStream_t stream);
weftResult_t waitSignal(const Call& call, int nDesc, const weftWaitSignalDesc_t* descs, weftStream_t stream);

// ---- api_gather_scatter.cc ----
// A rooted exchange: `spread` is the buffer of nRanks blocks on the root (recvbuff for gather,
// sendbuff for scatter), `block` the one-block buffer of every rank.
struct Rooted {
  bool gather = true;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;
  weftDataType_t type = weftFloat32;
  int root = 0;
};
weftResult_t rooted(const Call& call, const Rooted& c, weftStream_t stream);

// ---- api_group_sim.cc ----
weftResult_t groupSimulateEnd(weftSimInfo_t* simInfo);

// ---- api_lifecycle.cc ----
weftResult_t commSplit(const Call& call, int color, int key, weftComm_t* newcomm, weftConfig_t* config);
weftResult_t commShrink(const Call& call, const int* excludeRanks, int nExclude, weftComm_t* newcomm,
                        weftConfig_t* config, int flags);
weftResult_t commFinalize(const Call& call);
weftResult_t commDestroy(const Call& call);
weftResult_t commAbort(const Call& call);
weftResult_t commGetAsyncError(const Call& call, weftResult_t* asyncError);
weftResult_t commSetTimeout(const Call& call, int seconds);
weftResult_t commDumpRecorder(const Call& call);
// weftCommCount / UserRank / Device: *out = get(comm) (named `what` when NULL).
weftResult_t commQuery(const Call& call, int* out, const char* what, int (*get)(const weftComm*));
weftResult_t getVersion(int* version);
const char* errorString(weftResult_t result);
const char* lastError(weftComm* comm);

// ---- init.cc ----
weftResult_t getUniqueId(weftUniqueId* uniqueId);
// weftCommInitRankConfig's work: blocking, or (config->blocking == 0) on a thread that binds the
// caller's current GPU.
weftResult_t initRank(weftComm_t* out, int nranks, const weftUniqueId& id, int rank, weftConfig_t* config);
weftResult_t initAll(weftComm_t* comms, int ndev, const int* devlist);
weftResult_t initFromEnv(weftComm_t* comm, weftConfig_t* config);
weftResult_t initScalable(weftComm_t* newcomm, int nranks, int myrank, int nId, weftUniqueId* commIds,
                          weftConfig_t* config);

// ---- api_memory.cc ----
weftResult_t memAlloc(void** ptr, size_t size);
weftResult_t memFree(void* ptr);
weftResult_t memQuery(const void* ptr, weftMemKind_t* kind, int* device);
weftResult_t commRegister(const Call& call, void* buff, size_t size, void** handle);
weftResult_t commDeregister(const Call& call, void* handle);

// ---- api_params.cc ----
weftResult_t paramCount(int* count);
weftResult_t paramInfo(int index, const char** name, weftParamType_t* type);
weftResult_t paramGet(const char* name, char* value, size_t valueBytes, size_t* length);

}  // namespace capi
}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_API_ENTRY_H_
