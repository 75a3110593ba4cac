// libnccl.so.2: collectives, point to point, reduction operations made at run time, memory and
// buffer registration. Each entry point resolves NCCL's stream (shim.h) and calls Weft.
#include "shim.h"

using namespace weft::nccl;

WEFT_NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
              ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return fromWeft(weftAllReduce(sendbuff, recvbuff, count, toWeft(datatype), toWeft(op), toWeft(comm),
                                resolveStream(stream, sendbuff, recvbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
              int root, ncclComm_t comm, cudaStream_t stream) {
  return fromWeft(weftBroadcast(sendbuff, recvbuff, count, toWeft(datatype), root, toWeft(comm),
                                resolveStream(stream, sendbuff, recvbuff)));
}

// The deprecated in-place broadcast.
WEFT_NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
              cudaStream_t stream) {
  return fromWeft(weftBroadcast(buff, buff, count, toWeft(datatype), root, toWeft(comm), resolveStream(stream, buff)));
}

WEFT_NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
              ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return fromWeft(weftReduce(sendbuff, recvbuff, count, toWeft(datatype), toWeft(op), root, toWeft(comm),
                             resolveStream(stream, sendbuff, recvbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return fromWeft(weftAllGather(sendbuff, recvbuff, sendcount, toWeft(datatype), toWeft(comm),
                                resolveStream(stream, sendbuff, recvbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return fromWeft(weftReduceScatter(sendbuff, recvbuff, recvcount, toWeft(datatype), toWeft(op), toWeft(comm),
                                    resolveStream(stream, sendbuff, recvbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
              ncclComm_t comm, cudaStream_t stream) {
  return fromWeft(weftAllToAll(sendbuff, recvbuff, count, toWeft(datatype), toWeft(comm),
                               resolveStream(stream, sendbuff, recvbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
              int root, ncclComm_t comm, cudaStream_t stream) {
  return fromWeft(weftGather(sendbuff, recvbuff, count, toWeft(datatype), root, toWeft(comm),
                             resolveStream(stream, sendbuff, recvbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
              int root, ncclComm_t comm, cudaStream_t stream) {
  return fromWeft(weftScatter(sendbuff, recvbuff, count, toWeft(datatype), root, toWeft(comm),
                              resolveStream(stream, sendbuff, recvbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
              ncclComm_t comm, cudaStream_t stream) {
  return fromWeft(weftSend(sendbuff, count, toWeft(datatype), peer, toWeft(comm), resolveStream(stream, sendbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
              cudaStream_t stream) {
  return fromWeft(weftRecv(recvbuff, count, toWeft(datatype), peer, toWeft(comm), resolveStream(stream, recvbuff)));
}

// ---- Reduction operations made at run time (values >= ncclNumOps; same residences) --------

WEFT_NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
              ncclScalarResidence_t residence, ncclComm_t comm) {
  static_assert(sizeof(ncclRedOp_t) == sizeof(weftRedOp_t), "ops pass through unchanged");
  return fromWeft(weftRedOpCreatePreMulSum(reinterpret_cast<weftRedOp_t*>(op), scalar, toWeft(datatype),
                                           static_cast<weftScalarResidence_t>(residence), toWeft(comm)));
}

WEFT_NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  return fromWeft(weftRedOpDestroy(toWeft(op), toWeft(comm)));
}

// ---- Memory and registration ---------------------------------------------------------------

WEFT_NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) { return fromWeft(weftMemAlloc(ptr, size)); }

WEFT_NCCL_API(ncclResult_t, ncclMemFree, void* ptr) { return fromWeft(weftMemFree(ptr)); }

WEFT_NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return fromWeft(weftCommRegister(toWeft(comm), buff, size, handle));
}

WEFT_NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  return fromWeft(weftCommDeregister(toWeft(comm), handle));
}
