/*
 * weft.h: the public C API of Weft, a collective communications library for distributed
 * training on NVIDIA GPUs, AMD GPUs and plain host memory.
 *
 * The shapes follow NCCL's API (same argument order, same numeric values for results,
 * datatypes and reduction operations), so code written for NCCL or RCCL ports by renaming.
 *
 * Conventions:
 *  - Every function returns weftResult_t. On failure, weftGetLastError(comm) returns a sentence
 *    saying what failed, on which rank, and what to do about it.
 *  - Counts are element counts (size_t). Buffers are host pointers when the stream argument
 *    is NULL: the call is then blocking and returns when this rank's part is complete. With a
 *    device stream (cudaStream_t / hipStream_t, or WEFT_STREAM_DEFAULT) buffers are memory the
 *    communicator's GPU reaches, and the call is enqueued on the stream.
 *  - A failed call enqueues nothing and leaves the buffers untouched.
 *  - Every wait has a deadline (WEFT_TIMEOUT_S or weftConfig_t.timeoutS); on expiry the
 *    communicator enters an error state that names the collective, its sequence number and
 *    the peers not heard from.
 */
#ifndef WEFT_WEFT_H_
#define WEFT_WEFT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_MAJOR 0
#define WEFT_MINOR 1
#define WEFT_PATCH 0
/* weftGetVersion reports MAJOR*10000 + MINOR*100 + PATCH. */
#define WEFT_VERSION_CODE (WEFT_MAJOR * 10000 + WEFT_MINOR * 100 + WEFT_PATCH)

/* Results: the same values as ncclResult_t. */
typedef enum {
  weftSuccess = 0,
  weftUnhandledDeviceError = 1, /* a CUDA/HIP call failed */
  weftSystemError = 2,          /* the OS refused: sockets, shared memory, processes */
  weftInternalError = 3,        /* a bug in Weft: please report it with the message */
  weftInvalidArgument = 4,      /* an argument is wrong; nothing was done */
  weftInvalidUsage = 5,         /* the call is not allowed now (e.g. the communicator failed) */
  weftRemoteError = 6,          /* another rank failed or went away */
  weftInProgress = 7,           /* non-blocking operation still running */
  weftTimeout = 8,              /* a wait passed its deadline */
  weftNumResults = 9
} weftResult_t;

/* Datatypes: the same values as ncclDataType_t. */
typedef enum {
  weftInt8 = 0,
  weftChar = 0,
  weftUint8 = 1,
  weftInt32 = 2,
  weftInt = 2,
  weftUint32 = 3,
  weftInt64 = 4,
  weftUint64 = 5,
  weftFloat16 = 6,
  weftHalf = 6,
  weftFloat32 = 7,
  weftFloat = 7,
  weftFloat64 = 8,
  weftDouble = 8,
  weftBfloat16 = 9,
  weftFloat8e4m3 = 10,
  weftFloat8e5m2 = 11,
  weftNumTypes = 12
} weftDataType_t;

/* Reduction operations: the same values as ncclRedOp_t. Half-precision and fp8 types are
 * reduced in float and rounded once per step; avg is a sum divided by the rank count
 * (integer division for integer types). */
typedef enum {
  weftSum = 0,
  weftProd = 1,
  weftMax = 2,
  weftMin = 3,
  weftAvg = 4,
  weftNumOps = 5,
  /* Values from weftNumOps up are made by weftRedOpCreatePreMulSum and are valid only on the
   * communicator that made them. */
  weftMaxRedOp = 0x7fffffff
} weftRedOp_t;

/* Where the scalar of weftRedOpCreatePreMulSum lives: the same values as
 * ncclScalarResidence_t. */
typedef enum {
  weftScalarDevice = 0,       /* a pointer to device memory, read when the collective runs */
  weftScalarHostImmediate = 1 /* a pointer to host memory, read by weftRedOpCreatePreMulSum */
} weftScalarResidence_t;

/* An opaque 128-byte identifier made by one rank (weftGetUniqueId) and handed to the others
 * by any means (MPI_Bcast, a file, a key-value store). It carries the root's address and a
 * random secret that joining ranks must present. */
#define WEFT_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[WEFT_UNIQUE_ID_BYTES];
} weftUniqueId;

typedef struct weftComm* weftComm_t;

/* A device stream (cudaStream_t / hipStream_t), or NULL for host memory. */
typedef void* weftStream_t;

/* The default stream of the calling thread's current device (CUDA's legacy default stream,
 * HIP's NULL stream): device buffers on the stream that NCCL's API means by NULL. */
#define WEFT_STREAM_DEFAULT ((weftStream_t)(uintptr_t)1)

/* Communicator options. Start from WEFT_CONFIG_INITIALIZER and set what you need; fields left
 * at their initial value take the parameter's value (WEFT_* environment variables). */
typedef struct {
  size_t size;          /* sizeof(weftConfig_t): lets later versions append fields */
  unsigned int magic;   /* WEFT_CONFIG_MAGIC */
  unsigned int version; /* WEFT_VERSION_CODE of the header the caller was built with */
  int blocking;         /* 1: init blocks (default); 0: init returns weftInProgress and
                           weftCommGetAsyncError reports when it is done */
  int timeoutS;         /* seconds any wait may take; <= 0: WEFT_TIMEOUT_S */
  int minChannels;      /* <= 0: the parameter's value */
  int maxChannels;      /* <= 0: the parameter's value */
  const char* commName; /* shown in log lines and errors; may be NULL */
} weftConfig_t;

#define WEFT_CONFIG_MAGIC 0x57454654u /* "WEFT" */
#define WEFT_CONFIG_INITIALIZER \
  { sizeof(weftConfig_t), WEFT_CONFIG_MAGIC, WEFT_VERSION_CODE, 1, 0, 0, 0, NULL }

#define WEFT_SPLIT_NOCOLOR (-1)

/* weftCommShrink flags: the same values as NCCL's. */
#define WEFT_SHRINK_DEFAULT 0x00 /* the excluded ranks are idle; the parent keeps working */
#define WEFT_SHRINK_ABORT 0x01   /* first stop the parent's operations in flight (the excluded
                                    ranks may be dead), then shrink; the parent is unusable after */

/* weftCommSuspend flags: the same value as NCCL's NCCL_SUSPEND_MEM. */
#define WEFT_SUSPEND_MEM 0x01 /* release the memory the communicator can give back (the default) */

/* One-sided windows (weftCommWindowRegister): the same flag values as NCCL's. */
typedef struct weftWindow* weftWindow_t;
#define WEFT_WIN_DEFAULT 0x00
#define WEFT_WIN_COLL_SYMMETRIC 0x01 /* accepted; host windows are the same either way */
/* Signals: sigIdx below WEFT_WIN_MAX_SIGNALS, ctx below WEFT_WIN_MAX_CONTEXTS. */
#define WEFT_WIN_MAX_SIGNALS 8
#define WEFT_WIN_MAX_CONTEXTS 4
/* One wait of weftWaitSignal: opCnt signals from rank `peer` on (sigIdx, ctx). */
typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} weftWaitSignalDesc_t;

/* What weftCommMemStats reports. */
typedef enum {
  weftStatMemHeld = 0,     /* bytes of shared-memory FIFOs and scratch buffers this rank holds now:
                              what weftCommSuspend releases (0 while suspended) */
  weftStatMemSuspended = 1 /* 1 while the communicator is suspended, else 0 */
} weftCommMemStat_t;

/* What weftGroupSimulateEnd fills in. Start from WEFT_SIM_INFO_INITIALIZER. */
typedef struct {
  size_t size;          /* sizeof(weftSimInfo_t) */
  unsigned int magic;   /* WEFT_SIM_INFO_MAGIC */
  unsigned int version; /* WEFT_VERSION_CODE */
  float estimatedTime;  /* microseconds the group would take, from the cost model */
} weftSimInfo_t;
#define WEFT_SIM_INFO_MAGIC 0x5746534du /* "WFSM" */
#define WEFT_SIM_INFO_INITIALIZER { sizeof(weftSimInfo_t), WEFT_SIM_INFO_MAGIC, WEFT_VERSION_CODE, -1.0f }

/* Where a pointer's memory lives (weftMemQuery). */
typedef enum {
  weftMemHost = 0,       /* pageable host memory, or memory no GPU runtime knows */
  weftMemPinnedHost = 1, /* host memory pinned by the GPU runtime (reachable by the GPU) */
  weftMemDevice = 2,     /* memory of a GPU */
  weftMemManaged = 3     /* managed / unified memory */
} weftMemKind_t;

/* ---- Version and errors ------------------------------------------------------------- */
weftResult_t weftGetVersion(int* version);
/* A short, static description of a result code. */
const char* weftGetErrorString(weftResult_t result);
/* The last error's full message for this communicator (or for the calling thread when comm is
 * NULL, e.g. after a failed init). Never NULL; "" when there was no error. */
const char* weftGetLastError(weftComm_t comm);

/* ---- Communicators ------------------------------------------------------------------- */
/* Makes a new id and starts its root listener in this process. Call on one rank only. An id
 * makes exactly one communicator: initialising a second one with it (after the first was
 * destroyed, by another group of ranks at the same time, or a rank joining twice) fails with
 * weftInvalidUsage and a message that says the id was already used. */
weftResult_t weftGetUniqueId(weftUniqueId* uniqueId);
/* Joins communicator `id` as rank `rank` of `nranks`. Collective over the nranks callers. */
weftResult_t weftCommInitRank(weftComm_t* comm, int nranks, weftUniqueId commId, int rank);
weftResult_t weftCommInitRankConfig(weftComm_t* comm, int nranks, weftUniqueId commId, int rank,
                                    weftConfig_t* config);
/* Creates ndev ranks in this process, rank i on GPU devlist[i]. devlist NULL: rank i uses GPU
 * i modulo the GPU count when a GPU backend is loaded, else host memory (host ranks). A devlist
 * entry of -1 makes that rank a host rank beside GPU ranks (a mixed communicator: docs/gpus.md).
 * Drive them from ndev threads, or from one thread inside weftGroupStart/weftGroupEnd. */
weftResult_t weftCommInitAll(weftComm_t* comms, int ndev, const int* devlist);
/* Joins a communicator described by the environment, as launchers (torchrun-like scripts,
 * weft-perf -np N) set it: WEFT_RANK, WEFT_NRANKS, WEFT_ROOT_ADDR (host:port; rank 0 listens
 * there) and WEFT_ROOT_SECRET (32 hex digits, shared by all ranks). Falls back to
 * OMPI_COMM_WORLD_RANK/SIZE and PMI_RANK/PMI_SIZE for the rank and size. */
weftResult_t weftCommInitFromEnv(weftComm_t* comm, weftConfig_t* config);
/* Joins communicator `commIds` as rank `myrank` of `nranks`, where nId ids were each made by
 * weftGetUniqueId on a different rank (NCCL's scalable init, for very large jobs); every rank
 * passes the same nId ids in the same order. Collective over the nranks callers. */
weftResult_t weftCommInitRankScalable(weftComm_t* newcomm, int nranks, int myrank, int nId, weftUniqueId* commIds,
                                      weftConfig_t* config);
/* Splits comm by color (WEFT_SPLIT_NOCOLOR: no new communicator, *newcomm = NULL), ordering
 * ranks by key then by old rank. Collective over comm. */
weftResult_t weftCommSplit(weftComm_t comm, int color, int key, weftComm_t* newcomm, weftConfig_t* config);
/* A new communicator of comm's ranks without the nExclude ranks listed (ranks keep their
 * order). Called by every rank that is not excluded; the excluded ranks need not take part
 * and may be dead (use WEFT_SHRINK_ABORT then). */
weftResult_t weftCommShrink(weftComm_t comm, const int* excludeRanks, int nExclude, weftComm_t* newcomm,
                            weftConfig_t* config, int shrinkFlags);
/* Stops every operation in flight on comm, from any thread (NCCL's ncclCommRevoke): calls in
 * flight return an error within about a second and later calls are refused. Until they have left,
 * weftCommGetAsyncError reports weftInProgress, then weftSuccess. A revoked communicator can still
 * be destroyed, split and shrunk (without WEFT_SHRINK_ABORT); weftCommFinalize is refused.
 * flags must be 0. Returns at once. */
weftResult_t weftCommRevoke(weftComm_t comm, int flags);
/* An id for weftCommGrow, made by rank 0 of comm only (and handed to the new ranks by any means).
 * One id is pending at a time; a grow that succeeds consumes it (a failed one drops it). */
weftResult_t weftCommGetUniqueId(weftComm_t comm, weftUniqueId* uniqueId);
/* A new communicator of nRanks ranks: comm's ranks with their numbers, then new ranks numbered
 * from comm's size up. Collective over comm's ranks and the new ones: rank 0 of comm passes
 * (comm, id from weftCommGetUniqueId, rank -1), comm's other ranks (comm, NULL, -1), each new rank
 * (NULL, that id, its new rank). comm keeps working. Existing ranks join blocking; a new rank's
 * config may ask for a non-blocking join (weftInProgress, as weftCommInitRankConfig). */
weftResult_t weftCommGrow(weftComm_t comm, int nRanks, const weftUniqueId* uniqueId, int rank, weftComm_t* newcomm,
                          const weftConfig_t* config);
/* Collective over comm: waits for every rank, then releases the shared-memory FIFOs (segments
 * between ranks of one host) and scratch buffers (flags: 0 or WEFT_SUSPEND_MEM); network
 * connections, device FIFOs, windows and signals stay. Calls
 * that move data are refused until weftCommResume, which every rank calls (it waits for nobody);
 * the calls after it reconnect as they need. */
weftResult_t weftCommSuspend(weftComm_t comm, int flags);
weftResult_t weftCommResume(weftComm_t comm);
/* *value receives the statistic `stat` of this rank of comm (call it between operations). */
weftResult_t weftCommMemStats(weftComm_t comm, weftCommMemStat_t stat, uint64_t* value);
/* Waits for pending work, then frees the communicator. */
weftResult_t weftCommFinalize(weftComm_t comm);
weftResult_t weftCommDestroy(weftComm_t comm);
/* Stops everything the communicator is doing, from any thread, within about a second: calls
 * in flight return weftRemoteError or weftInvalidUsage; then frees it. */
weftResult_t weftCommAbort(weftComm_t comm);
/* weftSuccess, weftInProgress (non-blocking init still running), or the error that put the
 * communicator in its error state. */
weftResult_t weftCommGetAsyncError(weftComm_t comm, weftResult_t* asyncError);
/* Host calls started after it wait at most `seconds` (> 0) instead of the init's timeout; from
 * any thread (torch's Backend.setTimeout). The device path keeps the timeout it was made with. */
weftResult_t weftCommSetTimeout(weftComm_t comm, int seconds);
/* Writes this rank's flight recorder (its latest WEFT_RECORDER_CALLS calls, as weft-inspect reads
 * them) into WEFT_RECORDER_DIR as weft-rec-<host>-<pid>-<comm>-<rank>.bin. Local, from the
 * thread that makes the communicator's calls; weftInvalidUsage when the recorder is off or
 * WEFT_RECORDER_DIR is unset, weftSystemError when the file cannot be written. */
weftResult_t weftCommDumpRecorder(weftComm_t comm);
weftResult_t weftCommCount(const weftComm_t comm, int* count);
weftResult_t weftCommUserRank(const weftComm_t comm, int* rank);
/* The device index of the communicator (-1 for host ranks). */
weftResult_t weftCommDevice(const weftComm_t comm, int* device);

/* ---- Reduction operations made at run time ------------------------------------------- */
/* A new op on comm: every input is multiplied by *scalar (of type datatype), then summed.
 * Each rank multiplies its own input by its own op's scalar (the scalars may differ); every
 * rank makes its ops in the same order, so that they get the same values.
 * weftScalarHostImmediate: *scalar is read now; weftScalarDevice: scalar points to device
 * memory read each time a collective using the op runs (by the device on a device stream; for
 * host buffers, through the GPU runtime when the call runs). Supported for every datatype
 * (integer products wrap like weftProd; the product is rounded to datatype once, then summed
 * like weftSum). Use the op only with datatype, and only on comm. */
weftResult_t weftRedOpCreatePreMulSum(weftRedOp_t* op, void* scalar, weftDataType_t datatype,
                                      weftScalarResidence_t residence, weftComm_t comm);
weftResult_t weftRedOpDestroy(weftRedOp_t op, weftComm_t comm);

/* ---- Memory --------------------------------------------------------------------------- */
/* Memory for buffers of collectives: device memory of the current GPU when a GPU backend is
 * loaded and a device is current, else page-aligned host memory. Free with weftMemFree. */
weftResult_t weftMemAlloc(void** ptr, size_t size);
weftResult_t weftMemFree(void* ptr);
/* Registers a buffer that collectives on comm will use (a hint; any memory works without it).
 * *handle is passed to weftCommDeregister. */
weftResult_t weftCommRegister(const weftComm_t comm, void* buff, size_t size, void** handle);
weftResult_t weftCommDeregister(const weftComm_t comm, void* handle);
/* Where ptr's memory lives; *device is the GPU's index for device memory, else -1. */
weftResult_t weftMemQuery(const void* ptr, weftMemKind_t* kind, int* device);

/* ---- Collectives ----------------------------------------------------------------------
 * Every collective is called by every rank of comm in the same order. In-place is allowed
 * where NCCL allows it (sendbuff == recvbuff; for all-gather sendbuff == recvbuff +
 * rank*count, for reduce-scatter recvbuff == sendbuff + rank*count; for gather and scatter
 * see below). Any other overlap of sendbuff and recvbuff on a rank that uses both is refused
 * with weftInvalidArgument: a partial overlap would corrupt the result. */
weftResult_t weftAllReduce(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                           weftRedOp_t op, weftComm_t comm, weftStream_t stream);
/* recvbuff holds nranks*count elements: rank r's sendbuff lands at recvbuff + r*count. */
weftResult_t weftAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, weftDataType_t datatype,
                           weftComm_t comm, weftStream_t stream);
/* sendbuff holds nranks*recvcount elements; rank r receives the reduction of block r. */
weftResult_t weftReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, weftDataType_t datatype,
                               weftRedOp_t op, weftComm_t comm, weftStream_t stream);
/* The root's sendbuff lands in every rank's recvbuff (sendbuff is read on the root only). */
weftResult_t weftBroadcast(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype, int root,
                           weftComm_t comm, weftStream_t stream);
/* The reduction lands in the root's recvbuff (recvbuff is ignored elsewhere). */
weftResult_t weftReduce(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                        weftRedOp_t op, int root, weftComm_t comm, weftStream_t stream);
/* count elements go to each rank: block p of sendbuff goes to rank p, block p of recvbuff
 * comes from rank p. */
weftResult_t weftAllToAll(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                          weftComm_t comm, weftStream_t stream);
/* Rank r's sendbuff (count elements) lands at the root's recvbuff + r*count (recvbuff is used
 * on the root only). In-place when sendbuff == recvbuff + root*count on the root. */
weftResult_t weftGather(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype, int root,
                        weftComm_t comm, weftStream_t stream);
/* The root's sendbuff + r*count (count elements) lands in rank r's recvbuff (sendbuff is used on
 * the root only). In-place when recvbuff == sendbuff + root*count on the root. */
weftResult_t weftScatter(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype, int root,
                         weftComm_t comm, weftStream_t stream);
/* Point to point. Sends and receives between one pair are matched in order; put the calls of
 * an exchange inside weftGroupStart/weftGroupEnd so that they run concurrently. */
weftResult_t weftSend(const void* sendbuff, size_t count, weftDataType_t datatype, int peer, weftComm_t comm,
                      weftStream_t stream);
weftResult_t weftRecv(void* recvbuff, size_t count, weftDataType_t datatype, int peer, weftComm_t comm,
                      weftStream_t stream);
/* Receives the first message any peer sends to this rank with weftSend, and says which rank
 * sent it (*source). Host memory only (stream NULL), blocking, outside a group; count > 0 (a send
 * of 0 elements moves nothing, so it cannot be received this way). The message must have count
 * elements of datatype, as for weftRecv from that peer. Sends from
 * several peers are each received once, by successive calls, peers taken in turn. A peer that
 * fails while it waits, WEFT_TIMEOUT_S and weftCommAbort / weftCommRevoke end the wait. */
weftResult_t weftRecvAny(void* recvbuff, size_t count, weftDataType_t datatype, int* source, weftComm_t comm,
                         weftStream_t stream);
/* ---- One-sided: windows and signals (host memory, ranks on one host) -------------------
 * Collective over comm, every rank in the same order: makes `size` bytes at buff on this rank a
 * window the peers write with weftPutSignal (cross-process peers write memory from weftMemAlloc
 * through shared memory, other memory where the OS lets them use process_vm_writev). */
weftResult_t weftCommWindowRegister(weftComm_t comm, void* buff, size_t size, weftWindow_t* win, int winFlags);
/* Collective: waits for every rank, then forgets the window (puts to it must have returned). */
weftResult_t weftCommWindowDeregister(weftComm_t comm, weftWindow_t win);
/* Writes count elements from localbuff into peer's part of window peerWin at byte offset
 * peerWinOffset, without the peer taking part, then adds one signal on (sigIdx, ctx) at the peer
 * (flags 0). Host memory (stream NULL); returns once the data is in the peer's window. */
weftResult_t weftPutSignal(const void* localbuff, size_t count, weftDataType_t datatype, int peer, weftWindow_t peerWin,
                           size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, weftComm_t comm,
                           weftStream_t stream);
/* Adds one signal on (sigIdx, ctx) at peer, ordered after this rank's earlier puts to it. */
weftResult_t weftSignal(int peer, int sigIdx, int ctx, unsigned int flags, weftComm_t comm, weftStream_t stream);
/* Waits until, for every desc, opCnt more signals than earlier waits took have come from desc's
 * peer on (sigIdx, ctx); the data of the puts they signal is then visible here. Ends at
 * WEFT_TIMEOUT_S, on a failed peer, and on abort or revoke. */
weftResult_t weftWaitSignal(int nDesc, const weftWaitSignalDesc_t* signalDescs, weftComm_t comm, weftStream_t stream);

/* Returns when every rank has entered the barrier. */
weftResult_t weftBarrier(weftComm_t comm, weftStream_t stream);

/* ---- Groups ----------------------------------------------------------------------------
 * Calls between weftGroupStart and weftGroupEnd are recorded and run together at
 * weftGroupEnd: the collectives in the order they were called, then all sends and receives
 * concurrently. Groups nest; the outermost weftGroupEnd runs them. */
weftResult_t weftGroupStart(void);
weftResult_t weftGroupEnd(void);
/* Like weftGroupEnd, but runs nothing: the recorded calls are dropped and simInfo->estimatedTime
 * receives the time the cost model predicts for them (microseconds). */
weftResult_t weftGroupSimulateEnd(weftSimInfo_t* simInfo);

/* ---- Parameters ------------------------------------------------------------------------
 * The WEFT_* environment variables Weft reads (`weft-topo --params` prints them with their
 * help), for programs and bindings that show or forward them. Read-only: a value is what the
 * environment says at the time of the call (a value that does not parse reads as the default),
 * as Weft itself reads it. */
typedef enum { weftParamInt64 = 0, weftParamBool = 1, weftParamString = 2 } weftParamType_t;
/* How many parameters there are. */
weftResult_t weftParamCount(int* count);
/* Parameter `index` (0 .. count-1, in the table's order): its variable's name, e.g.
 * "WEFT_TIMEOUT_S" (static storage), and its type. */
weftResult_t weftParamInfo(int index, const char** name, weftParamType_t* type);
/* Parameter `name`'s value now as text (integers in decimal, booleans "0" or "1"): writes it
 * with its NUL into value (valueBytes bytes) and its length without the NUL into *length.
 * value may be NULL when valueBytes is 0, to ask for the length; a buffer too small for the
 * text fails with weftInvalidArgument and still sets *length. */
weftResult_t weftParamGet(const char* name, char* value, size_t valueBytes, size_t* length);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* WEFT_WEFT_H_ */
