/*
 * nccl.h for Weft's libnccl.so.2: NCCL's public C API (level 2.28.9), declared by Weft so that
 * the library (and NCCL programs that use host buffers) build on machines without the CUDA
 * toolkit. Where NVIDIA's nccl.h is installed, programs may use either: the ABI is the same
 * (tests/bindings/nccl/abi_test.cc compares them).
 *
 * Every function has a pnccl twin (NCCL's profiling interface) at the same address.
 */
#ifndef NCCL_H_
#define NCCL_H_

#include "weft_nccl/nccl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NCCL_MAJOR WEFT_NCCL_MAJOR
#define NCCL_MINOR WEFT_NCCL_MINOR
#define NCCL_PATCH WEFT_NCCL_PATCH
#define NCCL_SUFFIX ""
#define NCCL_VERSION_CODE WEFT_NCCL_VERSION_CODE
#define NCCL_VERSION(X, Y, Z) WEFT_NCCL_VERSION(X, Y, Z)

#define NCCL_COMM_NULL NULL
#define NCCL_UNIQUE_ID_BYTES WEFT_NCCL_UNIQUE_ID_BYTES
#define NCCL_CONFIG_UNDEF_INT WEFT_NCCL_CONFIG_UNDEF_INT
#define NCCL_CONFIG_UNDEF_PTR WEFT_NCCL_CONFIG_UNDEF_PTR
#define NCCL_SPLIT_NOCOLOR WEFT_NCCL_SPLIT_NOCOLOR
#define NCCL_UNDEF_FLOAT WEFT_NCCL_UNDEF_FLOAT
#define NCCL_WIN_DEFAULT WEFT_NCCL_WIN_DEFAULT
#define NCCL_WIN_COLL_SYMMETRIC WEFT_NCCL_WIN_COLL_SYMMETRIC
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02
#define NCCL_SHRINK_DEFAULT WEFT_NCCL_SHRINK_DEFAULT
#define NCCL_SHRINK_ABORT WEFT_NCCL_SHRINK_ABORT
#define NCCL_REVOKE_DEFAULT WEFT_NCCL_REVOKE_DEFAULT

#define NCCL_CONFIG_INITIALIZER                                                                                       \
  {                                                                                                                   \
    sizeof(ncclConfig_t), WEFT_NCCL_CONFIG_MAGIC, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), INT_MIN, INT_MIN, \
        INT_MIN, INT_MIN, NULL, INT_MIN, INT_MIN, NULL, INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN          \
  }
#define NCCL_SIM_INFO_INITIALIZER \
  { sizeof(ncclSimInfo_t), WEFT_NCCL_SIM_INFO_MAGIC, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), -1.0f }

/* CUDA's own definition (driver_types.h); repeating an identical typedef is allowed. */
typedef struct CUstream_st* cudaStream_t;

#define WEFT_NCCL_DECLARE(ret, name, args) \
  ret name args;                           \
  ret p##name args

WEFT_NCCL_DECLARE(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size));
WEFT_NCCL_DECLARE(ncclResult_t, ncclMemFree, (void* ptr));
WEFT_NCCL_DECLARE(ncclResult_t, ncclGetVersion, (int* version));
WEFT_NCCL_DECLARE(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommInitRankConfig,
                  (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommInitAll, (ncclComm_t * comm, int ndev, const int* devlist));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommFinalize, (ncclComm_t comm));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommDestroy, (ncclComm_t comm));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommAbort, (ncclComm_t comm));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommSplit,
                  (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommShrink,
                  (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                   ncclConfig_t* config, int shrinkFlags));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommInitRankScalable,
                  (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config));
WEFT_NCCL_DECLARE(const char*, ncclGetErrorString, (ncclResult_t result));
WEFT_NCCL_DECLARE(const char*, ncclGetLastError, (ncclComm_t comm));
WEFT_NCCL_DECLARE(void, ncclResetDebugInit, (void));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommWindowRegister,
                  (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win));
WEFT_NCCL_DECLARE(ncclResult_t, ncclRedOpCreatePreMulSum,
                  (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,
                   ncclComm_t comm));
WEFT_NCCL_DECLARE(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm));
WEFT_NCCL_DECLARE(ncclResult_t, ncclReduce,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                   int root, ncclComm_t comm, cudaStream_t stream));
WEFT_NCCL_DECLARE(ncclResult_t, ncclBcast,
                  (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream));
WEFT_NCCL_DECLARE(ncclResult_t, ncclBroadcast,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                   ncclComm_t comm, cudaStream_t stream));
WEFT_NCCL_DECLARE(ncclResult_t, ncclAllReduce,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                   ncclComm_t comm, cudaStream_t stream));
WEFT_NCCL_DECLARE(ncclResult_t, ncclReduceScatter,
                  (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,
                   ncclComm_t comm, cudaStream_t stream));
WEFT_NCCL_DECLARE(ncclResult_t, ncclAllGather,
                  (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
                   cudaStream_t stream));
WEFT_NCCL_DECLARE(ncclResult_t, ncclAlltoAll,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                   cudaStream_t stream));
WEFT_NCCL_DECLARE(ncclResult_t, ncclGather,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                   ncclComm_t comm, cudaStream_t stream));
WEFT_NCCL_DECLARE(ncclResult_t, ncclScatter,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                   ncclComm_t comm, cudaStream_t stream));
WEFT_NCCL_DECLARE(ncclResult_t, ncclSend,
                  (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                   cudaStream_t stream));
WEFT_NCCL_DECLARE(ncclResult_t, ncclRecv,
                  (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                   cudaStream_t stream));
WEFT_NCCL_DECLARE(ncclResult_t, ncclGroupStart, (void));
WEFT_NCCL_DECLARE(ncclResult_t, ncclGroupEnd, (void));
WEFT_NCCL_DECLARE(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo));

#undef WEFT_NCCL_DECLARE

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
