/*
 * nccl.h for Weft's libnccl.so.2: NCCL's public C API (level 2.32.3), declared by Weft so that
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
#define NCCL_WIN_STRICT_ORDERING WEFT_NCCL_WIN_STRICT_ORDERING
#define NCCL_WIN_GIN_ONLY WEFT_NCCL_WIN_GIN_ONLY
#define NCCL_WIN_CFT_COUNTED WEFT_NCCL_WIN_CFT_COUNTED
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096
#define NCCL_CTA_POLICY_DEFAULT WEFT_NCCL_CTA_POLICY_DEFAULT
#define NCCL_CTA_POLICY_EFFICIENCY WEFT_NCCL_CTA_POLICY_EFFICIENCY
#define NCCL_CTA_POLICY_ZERO WEFT_NCCL_CTA_POLICY_ZERO
#define NCCL_SHRINK_DEFAULT WEFT_NCCL_SHRINK_DEFAULT
#define NCCL_SHRINK_ABORT WEFT_NCCL_SHRINK_ABORT
#define NCCL_REVOKE_DEFAULT WEFT_NCCL_REVOKE_DEFAULT
#define NCCL_SUSPEND_MEM WEFT_NCCL_SUSPEND_MEM
#define NCCL_API_MAGIC WEFT_NCCL_CONFIG_MAGIC

/* Every field unset (INT_MIN / NULL) but the header. */
#define NCCL_CONFIG_INITIALIZER                                                                                  \
  {                                                                                                              \
    sizeof(ncclConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, INT_MIN, INT_MIN, INT_MIN, INT_MIN, NULL, INT_MIN,  \
        INT_MIN, NULL, INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN, \
        INT_MIN, INT_MIN, INT_MIN, INT_MIN, INT_MIN                                                              \
  }
/* Unset but forceAlgSelection (1) and userProfilerTag (0, untagged). */
#define NCCL_COLLCONFIG_INITIALIZER                                                                                 \
  {                                                                                                                 \
    sizeof(ncclCollConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, NULL, INT_MIN, INT_MIN, INT_MIN, INT_MIN, NULL, 1, \
        INT_MIN, 0, NULL                                                                                            \
  }
#define NCCL_SIM_INFO_INITIALIZER \
  { sizeof(ncclSimInfo_t), WEFT_NCCL_SIM_INFO_MAGIC, NCCL_VERSION_CODE, -1.0f }
#define NCCL_ENCRYPTION_CONFIG_INITIALIZER \
  { sizeof(ncclEncryptionConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, NCCL_ENCRYPTION_MODE_NONE, NULL }

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
/* Growing a communicator: the root asks its communicator for an id, then every old rank and
 * every new one calls ncclCommGrow (old ranks: comm, rank -1; new ranks: comm NULL, their rank). */
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommGetUniqueId, (ncclComm_t comm, ncclUniqueId* uniqueId));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommGrow,
                  (ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                   ncclConfig_t* config));
WEFT_NCCL_DECLARE(const char*, ncclGetErrorString, (ncclResult_t result));
WEFT_NCCL_DECLARE(const char*, ncclGetLastError, (ncclComm_t comm));
WEFT_NCCL_DECLARE(void, ncclResetDebugInit, (void));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank));
/* Releasing a communicator's resources for a while (flags: NCCL_SUSPEND_MEM), and what it holds. */
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommSuspend, (ncclComm_t comm, int flags));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommResume, (ncclComm_t comm));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommMemStats, (ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommWindowRegister,
                  (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags));
WEFT_NCCL_DECLARE(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win));
WEFT_NCCL_DECLARE(ncclResult_t, ncclWinGetUserPtr, (ncclComm_t comm, ncclWindow_t win, void** outUserPtr));
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
/* The collectives with the options of one call (config NULL: as without it). */
WEFT_NCCL_DECLARE(ncclResult_t, ncclAllReduceConfig,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                   ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config));
WEFT_NCCL_DECLARE(ncclResult_t, ncclBroadcastConfig,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                   ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config));
WEFT_NCCL_DECLARE(ncclResult_t, ncclReduceConfig,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                   int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config));
WEFT_NCCL_DECLARE(ncclResult_t, ncclAllGatherConfig,
                  (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
                   cudaStream_t stream, const ncclCollConfig_t* config));
WEFT_NCCL_DECLARE(ncclResult_t, ncclReduceScatterConfig,
                  (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,
                   ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config));
WEFT_NCCL_DECLARE(ncclResult_t, ncclAlltoAllConfig,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                   cudaStream_t stream, const ncclCollConfig_t* config));
WEFT_NCCL_DECLARE(ncclResult_t, ncclGatherConfig,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                   ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config));
WEFT_NCCL_DECLARE(ncclResult_t, ncclScatterConfig,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                   ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config));
/* One-sided: write into a peer's window and raise its signal (sigIdx, ctx); raise a signal
 * alone; wait for signals. */
WEFT_NCCL_DECLARE(ncclResult_t, ncclPutSignal,
                  (const void* localbuff, size_t count, ncclDataType_t datatype, int peer, ncclWindow_t peerWin,
                   size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                   cudaStream_t stream));
WEFT_NCCL_DECLARE(ncclResult_t, ncclSignal,
                  (int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream));
WEFT_NCCL_DECLARE(ncclResult_t, ncclWaitSignal,
                  (int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm, cudaStream_t stream));
WEFT_NCCL_DECLARE(ncclResult_t, ncclGroupStart, (void));
WEFT_NCCL_DECLARE(ncclResult_t, ncclGroupEnd, (void));
WEFT_NCCL_DECLARE(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo));
WEFT_NCCL_DECLARE(ncclResult_t, ncclSetEncryption, (const ncclEncryptionConfig_t* config));

/* Parameters (Weft's WEFT_* table): bind one by name and read it typed, or read by name as
 * text; list the names; log them all. Returned strings belong to the library (see each). */
WEFT_NCCL_DECLARE(ncclResult_t, ncclParamBind, (ncclParamHandle_t * out, const char* key));
WEFT_NCCL_DECLARE(ncclResult_t, ncclParamGetI8, (ncclParamHandle_t h, int8_t* out));
WEFT_NCCL_DECLARE(ncclResult_t, ncclParamGetI16, (ncclParamHandle_t h, int16_t* out));
WEFT_NCCL_DECLARE(ncclResult_t, ncclParamGetI32, (ncclParamHandle_t h, int32_t* out));
WEFT_NCCL_DECLARE(ncclResult_t, ncclParamGetI64, (ncclParamHandle_t h, int64_t* out));
WEFT_NCCL_DECLARE(ncclResult_t, ncclParamGetU8, (ncclParamHandle_t h, uint8_t* out));
WEFT_NCCL_DECLARE(ncclResult_t, ncclParamGetU16, (ncclParamHandle_t h, uint16_t* out));
WEFT_NCCL_DECLARE(ncclResult_t, ncclParamGetU32, (ncclParamHandle_t h, uint32_t* out));
WEFT_NCCL_DECLARE(ncclResult_t, ncclParamGetU64, (ncclParamHandle_t h, uint64_t* out));
WEFT_NCCL_DECLARE(ncclResult_t, ncclParamGetStr, (ncclParamHandle_t h, const char** out));
WEFT_NCCL_DECLARE(ncclResult_t, ncclParamGet, (ncclParamHandle_t h, void* out, int maxLen, int* len));
WEFT_NCCL_DECLARE(ncclResult_t, ncclParamGetParameter, (const char* key, const char** value, int* valueLen));
WEFT_NCCL_DECLARE(ncclResult_t, ncclParamGetAllParameterKeys, (const char*** table, int* tableLen));
WEFT_NCCL_DECLARE(void, ncclParamDumpAll, (void));

#undef WEFT_NCCL_DECLARE

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
