// The C API (include/weft/weft.h): every entry point, each a line that builds its call (the
// communicator and its name, see call_context.h) and hands it to the function that does the
// work (api_entry.h). No exception leaves the API.
#include "core/api_entry.h"
#include "core/group.h"
#include "weft/weft.h"

using weft::coll::CollKind;
using weft::core::CollCall;
using weft::core::capi::Call;
namespace capi = weft::core::capi;

extern "C" {

// ---- Errors and version ----

weftResult_t weftGetVersion(int* version) { return capi::getVersion(version); }

const char* weftGetErrorString(weftResult_t result) { return capi::errorString(result); }

const char* weftGetLastError(weftComm_t comm) { return capi::lastError(comm); }

// ---- Communicators ----

weftResult_t weftGetUniqueId(weftUniqueId* uniqueId) { return capi::getUniqueId(uniqueId); }

weftResult_t weftCommInitRank(weftComm_t* comm, int nranks, weftUniqueId commId, int rank) {
  return capi::initRank(comm, nranks, commId, rank, nullptr);
}

weftResult_t weftCommInitRankConfig(weftComm_t* comm, int nranks, weftUniqueId commId, int rank, weftConfig_t* config) {
  return capi::initRank(comm, nranks, commId, rank, config);
}

weftResult_t weftCommInitAll(weftComm_t* comms, int ndev, const int* devlist) {
  return capi::initAll(comms, ndev, devlist);
}

weftResult_t weftCommInitFromEnv(weftComm_t* comm, weftConfig_t* config) { return capi::initFromEnv(comm, config); }

weftResult_t weftCommInitRankScalable(weftComm_t* newcomm, int nranks, int myrank, int nId, weftUniqueId* commIds,
                                      weftConfig_t* config) {
  return capi::initScalable(newcomm, nranks, myrank, nId, commIds, config);
}

weftResult_t weftCommSplit(weftComm_t comm, int color, int key, weftComm_t* newcomm, weftConfig_t* config) {
  return capi::commSplit(Call(comm, "weftCommSplit"), color, key, newcomm, config);
}

weftResult_t weftCommShrink(weftComm_t comm, const int* excludeRanks, int nExclude, weftComm_t* newcomm,
                            weftConfig_t* config, int shrinkFlags) {
  return capi::commShrink(Call(comm, "weftCommShrink"), excludeRanks, nExclude, newcomm, config, shrinkFlags);
}

weftResult_t weftCommRevoke(weftComm_t comm, int flags) {
  return capi::commRevoke(Call(comm, "weftCommRevoke"), flags);
}

weftResult_t weftCommGetUniqueId(weftComm_t comm, weftUniqueId* uniqueId) {
  return capi::commGetUniqueId(Call(comm, "weftCommGetUniqueId"), uniqueId);
}

weftResult_t weftCommGrow(weftComm_t comm, int nRanks, const weftUniqueId* uniqueId, int rank, weftComm_t* newcomm,
                          const weftConfig_t* config) {
  // A new rank has no communicator yet: its messages name the rank it joins as.
  Call call = comm != nullptr ? Call(comm, "weftCommGrow") : Call("weftCommGrow", rank);
  return capi::commGrow(call, nRanks, uniqueId, rank, newcomm, config);
}

weftResult_t weftCommSuspend(weftComm_t comm, int flags) {
  return capi::commSuspend(Call(comm, "weftCommSuspend"), flags);
}

weftResult_t weftCommResume(weftComm_t comm) { return capi::commResume(Call(comm, "weftCommResume")); }

weftResult_t weftCommMemStats(weftComm_t comm, weftCommMemStat_t stat, uint64_t* value) {
  return capi::commMemStats(Call(comm, "weftCommMemStats"), stat, value);
}

weftResult_t weftCommFinalize(weftComm_t comm) { return capi::commFinalize(Call(comm, "weftCommFinalize")); }

weftResult_t weftCommDestroy(weftComm_t comm) { return capi::commDestroy(Call(comm, "weftCommDestroy")); }

weftResult_t weftCommAbort(weftComm_t comm) { return capi::commAbort(Call(comm, "weftCommAbort")); }

weftResult_t weftCommGetAsyncError(weftComm_t comm, weftResult_t* asyncError) {
  return capi::commGetAsyncError(Call(comm, "weftCommGetAsyncError"), asyncError);
}

weftResult_t weftCommSetTimeout(weftComm_t comm, int seconds) {
  return capi::commSetTimeout(Call(comm, "weftCommSetTimeout"), seconds);
}

weftResult_t weftCommDumpRecorder(weftComm_t comm) {
  return capi::commDumpRecorder(Call(comm, "weftCommDumpRecorder"));
}

weftResult_t weftCommCount(const weftComm_t comm, int* count) {
  return capi::commQuery(Call(comm, "weftCommCount"), count, "count", [](const weftComm* c) { return c->nRanks; });
}

weftResult_t weftCommUserRank(const weftComm_t comm, int* rank) {
  return capi::commQuery(Call(comm, "weftCommUserRank"), rank, "rank", [](const weftComm* c) { return c->rank; });
}

weftResult_t weftCommDevice(const weftComm_t comm, int* device) {
  return capi::commQuery(Call(comm, "weftCommDevice"), device, "device",
                         [](const weftComm* c) { return c->impl ? c->impl->device() : -1; });
}

// ---- Reduction ops ----

weftResult_t weftRedOpCreatePreMulSum(weftRedOp_t* op, void* scalar, weftDataType_t datatype,
                                      weftScalarResidence_t residence, weftComm_t comm) {
  return capi::redOpCreatePreMulSum(Call(comm, "weftRedOpCreatePreMulSum"), op, scalar, datatype, residence);
}

weftResult_t weftRedOpDestroy(weftRedOp_t op, weftComm_t comm) {
  return capi::redOpDestroy(Call(comm, "weftRedOpDestroy"), op);
}

// ---- Collectives ----

weftResult_t weftAllReduce(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype, weftRedOp_t op,
                           weftComm_t comm, weftStream_t stream) {
  CollCall c{CollKind::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0};
  return capi::collective(Call(comm, "weftAllReduce"), c, stream);
}

weftResult_t weftAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, weftDataType_t datatype,
                           weftComm_t comm, weftStream_t stream) {
  CollCall c{CollKind::kAllGather, sendbuff, recvbuff, sendcount, datatype, weftSum, 0};
  return capi::collective(Call(comm, "weftAllGather"), c, stream);
}

weftResult_t weftReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, weftDataType_t datatype,
                               weftRedOp_t op, weftComm_t comm, weftStream_t stream) {
  CollCall c{CollKind::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0};
  return capi::collective(Call(comm, "weftReduceScatter"), c, stream);
}

weftResult_t weftBroadcast(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype, int root,
                           weftComm_t comm, weftStream_t stream) {
  CollCall c{CollKind::kBroadcast, sendbuff, recvbuff, count, datatype, weftSum, root};
  return capi::collective(Call(comm, "weftBroadcast"), c, stream);
}

weftResult_t weftReduce(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype, weftRedOp_t op,
                        int root, weftComm_t comm, weftStream_t stream) {
  CollCall c{CollKind::kReduce, sendbuff, recvbuff, count, datatype, op, root};
  return capi::collective(Call(comm, "weftReduce"), c, stream);
}

weftResult_t weftAllToAll(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype, weftComm_t comm,
                          weftStream_t stream) {
  CollCall c{CollKind::kAllToAll, sendbuff, recvbuff, count, datatype, weftSum, 0};
  return capi::collective(Call(comm, "weftAllToAll"), c, stream);
}

weftResult_t weftGather(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype, int root,
                        weftComm_t comm, weftStream_t stream) {
  capi::Rooted c{true, sendbuff, recvbuff, count, datatype, root};
  return capi::rooted(Call(comm, "weftGather"), c, stream);
}

weftResult_t weftScatter(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype, int root,
                         weftComm_t comm, weftStream_t stream) {
  capi::Rooted c{false, sendbuff, recvbuff, count, datatype, root};
  return capi::rooted(Call(comm, "weftScatter"), c, stream);
}

weftResult_t weftBarrier(weftComm_t comm, weftStream_t stream) {
  return capi::barrier(Call(comm, "weftBarrier"), stream);
}

// ---- Point to point ----

weftResult_t weftSend(const void* sendbuff, size_t count, weftDataType_t datatype, int peer, weftComm_t comm,
                      weftStream_t stream) {
  return capi::pointToPoint(Call(comm, "weftSend"), {true, sendbuff, count, datatype, peer, stream});
}

weftResult_t weftRecv(void* recvbuff, size_t count, weftDataType_t datatype, int peer, weftComm_t comm,
                      weftStream_t stream) {
  return capi::pointToPoint(Call(comm, "weftRecv"), {false, recvbuff, count, datatype, peer, stream});
}

weftResult_t weftRecvAny(void* recvbuff, size_t count, weftDataType_t datatype, int* source, weftComm_t comm,
                         weftStream_t stream) {
  return capi::recvAny(Call(comm, "weftRecvAny"), recvbuff, count, datatype, source, stream);
}

// ---- One-sided ----

weftResult_t weftCommWindowRegister(weftComm_t comm, void* buff, size_t size, weftWindow_t* win, int winFlags) {
  return capi::commWindowRegister(Call(comm, "weftCommWindowRegister"), buff, size, win, winFlags);
}

weftResult_t weftCommWindowDeregister(weftComm_t comm, weftWindow_t win) {
  return capi::commWindowDeregister(Call(comm, "weftCommWindowDeregister"), win);
}

weftResult_t weftPutSignal(const void* localbuff, size_t count, weftDataType_t datatype, int peer, weftWindow_t peerWin,
                           size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, weftComm_t comm,
                           weftStream_t stream) {
  capi::PutArgs a{localbuff, count, datatype, peer, peerWin, peerWinOffset, sigIdx, ctx, flags, stream};
  return capi::putSignal(Call(comm, "weftPutSignal"), a);
}

weftResult_t weftSignal(int peer, int sigIdx, int ctx, unsigned int flags, weftComm_t comm, weftStream_t stream) {
  return capi::signal(Call(comm, "weftSignal"), peer, sigIdx, ctx, flags, stream);
}

weftResult_t weftWaitSignal(int nDesc, const weftWaitSignalDesc_t* signalDescs, weftComm_t comm, weftStream_t stream) {
  return capi::waitSignal(Call(comm, "weftWaitSignal"), nDesc, signalDescs, stream);
}

// ---- Groups ----

weftResult_t weftGroupStart(void) { return capi::groupStart(); }

weftResult_t weftGroupEnd(void) { return capi::groupEnd(); }

weftResult_t weftGroupSimulateEnd(weftSimInfo_t* simInfo) { return capi::groupSimulateEnd(simInfo); }

// ---- Memory and registration ----

weftResult_t weftMemAlloc(void** ptr, size_t size) { return capi::memAlloc(ptr, size); }

weftResult_t weftMemFree(void* ptr) { return capi::memFree(ptr); }

weftResult_t weftMemQuery(const void* ptr, weftMemKind_t* kind, int* device) {
  return capi::memQuery(ptr, kind, device);
}

weftResult_t weftCommRegister(const weftComm_t comm, void* buff, size_t size, void** handle) {
  return capi::commRegister(Call(comm, "weftCommRegister"), buff, size, handle);
}

weftResult_t weftCommDeregister(const weftComm_t comm, void* handle) {
  return capi::commDeregister(Call(comm, "weftCommDeregister"), handle);
}

// ---- Parameters ----

weftResult_t weftParamCount(int* count) { return capi::paramCount(count); }

weftResult_t weftParamInfo(int index, const char** name, weftParamType_t* type) {
  return capi::paramInfo(index, name, type);
}

weftResult_t weftParamGet(const char* name, char* value, size_t valueBytes, size_t* length) {
  return capi::paramGet(name, value, valueBytes, length);
}

}  // extern "C"
