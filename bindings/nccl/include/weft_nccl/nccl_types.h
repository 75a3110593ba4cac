/*
 * nccl_types.h: the types of NCCL's public C API (NCCL 2.32.3), as libnccl.so.2 must see them.
 *
 * Written for Weft from the published ABI facts (../shared/reference/formats.md §4): the numeric
 * values, the struct layouts and the initialisers are NCCL's, so a program compiled against
 * NVIDIA's nccl.h runs on Weft's libnccl.so.2 unchanged. tests/bindings/nccl/abi_test.cc checks
 * every value and offset here against the real header where the CUDA toolkit provides one.
 *
 * Types only (no function declarations, no include guard of NCCL's), so that the ABI test can
 * include this file inside a namespace next to the real nccl.h and compare the two.
 */
#ifndef WEFT_NCCL_NCCL_TYPES_H_
#define WEFT_NCCL_NCCL_TYPES_H_

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WEFT_NCCL_MAJOR 2
#define WEFT_NCCL_MINOR 32
#define WEFT_NCCL_PATCH 3
/* The NCCL API level this library implements, as ncclGetVersion reports it. */
#define WEFT_NCCL_VERSION_CODE 23203
/* NCCL's encoding: 2.8.x and earlier used X*1000 + Y*100 + Z. */
#define WEFT_NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))

typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;

#define WEFT_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[WEFT_NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclTimeout = 8, /* since 2.30 */
  ncclNumResults = 9
} ncclResult_t;

/* Config fields left at these values are "unset". */
#define WEFT_NCCL_CONFIG_UNDEF_INT INT_MIN
#define WEFT_NCCL_CONFIG_UNDEF_PTR NULL
#define WEFT_NCCL_SPLIT_NOCOLOR (-1)
#define WEFT_NCCL_UNDEF_FLOAT (-1.0f)
/* The magic of every versioned struct of the API (configs, requirements, properties). */
#define WEFT_NCCL_CONFIG_MAGIC 0xcafebeefu
#define WEFT_NCCL_SIM_INFO_MAGIC 0x74685283u

/* Values of ncclConfig_t.hostCftMode. */
typedef enum {
  ncclHostCftDefault = INT_MIN, /* unset: the library chooses */
  ncclHostCftEnable = 1,
  ncclHostCftDisable = 2,
  ncclHostCftFallback = 3
} ncclHostCftMode_t;

/* Bits of ncclConfig_t.nvlsHostMode: each disables one host-side NVLS component. */
typedef enum {
  ncclNvlsHostModeDefault = INT_MIN, /* unset */
  ncclNvlsHostModeEnable = 0,        /* nothing disabled */
  ncclNvlsHostModeDisableTransport = 1 << 0,
  ncclNvlsHostModeDisableSymmetricMultimem = 1 << 1,
  ncclNvlsHostModeDisable = INT_MAX /* every component, including later ones */
} ncclNvlsHostMode_t;

/* ncclConfig_t of NCCL 2.32 (120 bytes on LP64, unchanged since 2.31). Callers built against
 * older headers pass a smaller size and an older version; the library reads only what they
 * wrote. */
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;            /* since 2.14 */
  int cgaClusterSize;      /* since 2.17 */
  int minCTAs;             /* since 2.17 */
  int maxCTAs;             /* since 2.17 */
  const char* netName;     /* since 2.17 */
  int splitShare;          /* since 2.18 */
  int trafficClass;        /* since 2.24 */
  const char* commName;    /* since 2.27 */
  int collnetEnable;       /* since 2.27 */
  int CTAPolicy;           /* since 2.27 */
  int shrinkShare;         /* since 2.27 */
  int nvlsCTAs;            /* since 2.27 */
  int nChannelsPerNetPeer; /* since 2.28 */
  int nvlinkCentricSched;  /* since 2.28 */
  int graphUsageMode;      /* this field and the rest: since 2.29-2.31 (the struct is tagged 2.31) */
  int numRmaCtx;
  int maxP2pPeers;
  int graphStreamOrdering;
  int launchOrderImplicit;
  int numRmaSig;
  int rmaEagerInit;
  int hostCftMode;  /* ncclHostCftMode_t */
  int nvlsHostMode; /* ncclNvlsHostMode_t bits */
} ncclConfig_t;

/* CUDA's own definition (driver_types.h); repeating an identical typedef is allowed. */
typedef struct CUevent_st* cudaEvent_t;

/* One vendor option of a per-collective config: a singly linked, unordered list. NCCL itself
 * ignores every option; so does Weft (it has no vendor id). */
typedef struct ncclConfigExt {
  struct ncclConfigExt* next;
  struct {
    int vendorId;
    int optionId;
  } key;
  union {
    int i;
    const char* s;
    void* raw;
  } val;
} ncclConfigExt_t;

/* The options of one collective call (the ncclXConfig functions, since 2.31; this layout is
 * 2.32's, 72 bytes on LP64). Versioned like ncclConfig_t: fields are only ever appended. */
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  ncclConfigExt_t* ext;
  int minCTAs;
  int maxCTAs;
  int nvlsCTAs;
  int cgaClusterSize;
  const char* algSelection; /* NULL or "": the library chooses */
  int forceAlgSelection;    /* 1 (the initialiser's): a selection the library cannot honour fails */
  int CTAPolicy;
  uint64_t userProfilerTag; /* handed to profiler plugins only */
  cudaEvent_t launchCompletionEvent;
} ncclCollConfig_t;

/* What ncclGroupSimulateEnd fills in (layout unchanged since 2.22). */
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5, /* dynamic ops from ncclRedOpCreatePreMulSum start here */
  ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* Flags with NCCL's values. */
#define WEFT_NCCL_WIN_DEFAULT 0x00
#define WEFT_NCCL_WIN_COLL_SYMMETRIC 0x01
#define WEFT_NCCL_WIN_STRICT_ORDERING 0x02
#define WEFT_NCCL_WIN_GIN_ONLY 0x04
#define WEFT_NCCL_WIN_CFT_COUNTED 0x08
#define WEFT_NCCL_SHRINK_DEFAULT 0x00
#define WEFT_NCCL_SHRINK_ABORT 0x01
#define WEFT_NCCL_REVOKE_DEFAULT 0x00
#define WEFT_NCCL_SUSPEND_MEM 0x01
#define WEFT_NCCL_CTA_POLICY_DEFAULT 0x00
#define WEFT_NCCL_CTA_POLICY_EFFICIENCY 0x01
#define WEFT_NCCL_CTA_POLICY_ZERO 0x02

/* What ncclCommMemStats reports. */
typedef enum {
  ncclStatGpuMemSuspend = 0,   /* bytes of GPU memory a suspend would release */
  ncclStatGpuMemSuspended = 1, /* 1 while suspended, else 0 */
  ncclStatGpuMemPersist = 2,   /* bytes of GPU memory a suspend keeps */
  ncclStatGpuMemTotal = 3      /* all GPU memory the library allocated for the communicator */
} ncclCommMemStat_t;

/* One entry of ncclWaitSignal: wait for opCnt signals from peer on (sigIdx, ctx). */
typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} ncclWaitSignalDesc_t;

/* ncclSetEncryption: how the library's TCP sockets are protected. */
typedef enum { NCCL_ENCRYPTION_MODE_NONE = 0, NCCL_ENCRYPTION_MODE_PSK = 1 } ncclEncryptionMode_t;
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int mode;        /* ncclEncryptionMode_t */
  const char* psk; /* the pre-shared key of NCCL_ENCRYPTION_MODE_PSK */
} ncclEncryptionConfig_t;

/* A parameter bound by ncclParamBind: owned by the library, never freed. */
typedef struct ncclParamHandle* ncclParamHandle_t;

/* The device-side API's host types that cross the ABI: a team and a multimem handle are passed
 * by value, the CFT team mode is an enum; the rest are only passed by pointer. */
typedef struct ncclTeam {
  int nRanks, rank, stride;
} ncclTeam_t;
typedef struct ncclMultimemHandle {
  void* mcBasePtr;
} ncclMultimemHandle_t;
typedef enum { NCCL_CFT_TEAM_FLAT = 0, NCCL_CFT_TEAM_HIER_MULTIMEM = 1, NCCL_CFT_TEAM_HIER_LSA = 2 } ncclCftTeamMode_t;
typedef uint32_t ncclCftLeId;
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclCftBarrierHandle ncclCftBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;
typedef struct ncclGinOutboxHandle ncclGinOutboxHandle_t;
typedef struct ncclGinInboxA2AHandle ncclGinInboxA2AHandle_t;

/* The device-side API's backends, as ncclCommProperties_t names them. */
typedef enum {
  NCCL_GIN_TYPE_NONE = 0,
  NCCL_GIN_TYPE_PROXY = 2,
  NCCL_GIN_TYPE_GDAKI = 3,
  NCCL_GIN_TYPE_GPI = 4,
  NCCL_GIN_TYPE_EFA_GDA = 5,
  NCCL_GIN_MAX_TYPES = 6
} ncclGinType_t;
typedef enum {
  NCCL_GIN_CONNECTION_NONE = 0,
  NCCL_GIN_CONNECTION_FULL = 1,
  NCCL_GIN_CONNECTION_RAIL = 2,
  NCCL_GIN_CONNECTION_CUSTOM_STRIDE = 3
} ncclGinConnectionType_t;

/* What ncclCommQueryProperties fills in (nccl_device/host.h of 2.32; 152 bytes on LP64). The
 * caller sets size, magic and version (its initialiser leaves the rest 0); only size bytes are
 * written. */
typedef struct ncclCommProperties {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int rank;
  int nRanks;
  int cudaDev;
  int nvmlDev;
  bool deviceApiSupport;
  bool multimemSupport;
  ncclGinType_t ginType;
  int nLsaTeams;
  bool hostRmaSupport;
  ncclGinType_t railedGinType;
  uint64_t commHash;
  int ginMinStride;
  ncclGinConnectionType_t ginConnectionType;
  bool ginSupport[64]; /* by ncclGinType_t */
  size_t devCommRuntimeVersionSize;
  bool cftSupport;
  bool cftMulticastSupport;
  bool cftCountedSupport;
} ncclCommProperties_t;

#endif /* WEFT_NCCL_NCCL_TYPES_H_ */
