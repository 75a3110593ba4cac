// libnccl.so.2: the collectives with a per-call ncclCollConfig_t (ncclXConfig, NCCL 2.31+).
//
// The config is read the way ncclConfig_t is (magic, then only the `size` bytes the caller
// wrote; the rest keeps NCCL_COLLCONFIG_INITIALIZER's values) and checked field by field. Weft's
// API has no per-call options: channel counts come from the communicator, and so does the
// algorithm. So a valid config changes nothing, with two exceptions that would otherwise be
// silently wrong: a forced algorithm selection (NCCL fails one it cannot honour, and Weft can
// honour none per call) and a launch-completion event (this library cannot record CUDA events).
#include <algorithm>
#include <cstring>

#include "shim.h"

using namespace weft::nccl;

namespace {

ncclResult_t invalid(const char* fn, const char* field, int value, const char* rule) {
  return fail(ncclInvalidArgument, "%s: config->%s is %d; %s", fn, field, value, rule);
}

void ignored(const char* field, int value) {
  if (value == INT_MIN) return;
  logInfoOnce(field,
              "ncclCollConfig_t.%s = %d has no per-call equivalent in Weft (the communicator's applies); ignored",
              field, value);
}

// ncclSuccess when config may be used (NULL included); else the message is recorded.
ncclResult_t checkCollConfig(const ncclCollConfig_t* config, const char* fn) {
  if (config == nullptr) return ncclSuccess;
  if (config->magic != WEFT_NCCL_CONFIG_MAGIC) {
    return fail(ncclInvalidArgument,
                "%s: config->magic is 0x%x, not 0xcafebeef: the ncclCollConfig_t was not initialised; start from "
                "NCCL_COLLCONFIG_INITIALIZER",
                fn, config->magic);
  }
  if (config->size < offsetof(ncclCollConfig_t, ext)) {
    return fail(ncclInvalidArgument,
                "%s: config->size is %zu, smaller than the ncclCollConfig_t header; start from "
                "NCCL_COLLCONFIG_INITIALIZER",
                fn, config->size);
  }
  ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
  std::memcpy(&c, config, std::min(config->size, sizeof(c)));

  for (int v : {c.minCTAs, c.maxCTAs, c.nvlsCTAs}) {
    if (v != INT_MIN && v <= 0) return invalid(fn, "minCTAs / maxCTAs / nvlsCTAs", v, "it must be positive or unset");
  }
  if (c.minCTAs != INT_MIN && c.maxCTAs != INT_MIN && c.minCTAs > c.maxCTAs) {
    return fail(ncclInvalidArgument, "%s: config->minCTAs (%d) is larger than config->maxCTAs (%d)", fn, c.minCTAs,
                c.maxCTAs);
  }
  if (c.cgaClusterSize != INT_MIN && (c.cgaClusterSize < 0 || c.cgaClusterSize > 8)) {
    return invalid(fn, "cgaClusterSize", c.cgaClusterSize, "it must be 0 .. 8 or unset");
  }
  const int policies = WEFT_NCCL_CTA_POLICY_EFFICIENCY | WEFT_NCCL_CTA_POLICY_ZERO;
  if (c.CTAPolicy != INT_MIN && (c.CTAPolicy & ~policies) != 0) {
    return invalid(fn, "CTAPolicy", c.CTAPolicy, "it must be a combination of the NCCL_CTA_POLICY_* flags or unset");
  }
  if (c.forceAlgSelection != 0 && c.forceAlgSelection != 1) {
    return invalid(fn, "forceAlgSelection", c.forceAlgSelection, "it must be 0 or 1");
  }
  const bool selects = c.algSelection != nullptr && c.algSelection[0] != '\0';
  if (selects && c.forceAlgSelection == 1) {
    return fail(ncclInvalidUsage,
                "%s: config->algSelection is \"%s\" with forceAlgSelection = 1, but Weft picks algorithms per "
                "communicator (WEFT_ALGO), not per call; set forceAlgSelection = 0 to let Weft choose",
                fn, c.algSelection);
  }
  if (c.launchCompletionEvent != nullptr) {
    return fail(ncclInvalidUsage,
                "%s: config->launchCompletionEvent is set, but Weft's libnccl.so.2 cannot record CUDA events; pass "
                "NULL and wait on the stream instead",
                fn);
  }
  if (selects)
    logInfoOnce("algSelection", "ncclCollConfig_t.algSelection = \"%s\" (not forced): Weft chooses; ignored",
                c.algSelection);
  ignored("minCTAs", c.minCTAs);
  ignored("maxCTAs", c.maxCTAs);
  ignored("nvlsCTAs", c.nvlsCTAs);
  ignored("cgaClusterSize", c.cgaClusterSize);
  ignored("CTAPolicy", c.CTAPolicy);
  return ncclSuccess;
}

}  // namespace

#define WEFT_CHECK_COLL_CONFIG(fn)                       \
  do {                                                   \
    ncclResult_t checked_ = checkCollConfig(config, fn); \
    if (checked_ != ncclSuccess) return checked_;        \
  } while (0)

WEFT_NCCL_API(ncclResult_t, ncclAllReduceConfig, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
              const ncclCollConfig_t* config) {
  WEFT_CHECK_COLL_CONFIG("ncclAllReduceConfig");
  return fromWeft(weftAllReduce(sendbuff, recvbuff, count, toWeft(datatype), toWeft(op), toWeft(comm),
                                resolveStream(stream, sendbuff, recvbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclBroadcastConfig, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  WEFT_CHECK_COLL_CONFIG("ncclBroadcastConfig");
  return fromWeft(weftBroadcast(sendbuff, recvbuff, count, toWeft(datatype), root, toWeft(comm),
                                resolveStream(stream, sendbuff, recvbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclReduceConfig, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
              const ncclCollConfig_t* config) {
  WEFT_CHECK_COLL_CONFIG("ncclReduceConfig");
  return fromWeft(weftReduce(sendbuff, recvbuff, count, toWeft(datatype), toWeft(op), root, toWeft(comm),
                             resolveStream(stream, sendbuff, recvbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclAllGatherConfig, const void* sendbuff, void* recvbuff, size_t sendcount,
              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  WEFT_CHECK_COLL_CONFIG("ncclAllGatherConfig");
  return fromWeft(weftAllGather(sendbuff, recvbuff, sendcount, toWeft(datatype), toWeft(comm),
                                resolveStream(stream, sendbuff, recvbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclReduceScatterConfig, const void* sendbuff, void* recvbuff, size_t recvcount,
              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
              const ncclCollConfig_t* config) {
  WEFT_CHECK_COLL_CONFIG("ncclReduceScatterConfig");
  return fromWeft(weftReduceScatter(sendbuff, recvbuff, recvcount, toWeft(datatype), toWeft(op), toWeft(comm),
                                    resolveStream(stream, sendbuff, recvbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclAlltoAllConfig, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  WEFT_CHECK_COLL_CONFIG("ncclAlltoAllConfig");
  return fromWeft(weftAllToAll(sendbuff, recvbuff, count, toWeft(datatype), toWeft(comm),
                               resolveStream(stream, sendbuff, recvbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclGatherConfig, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  WEFT_CHECK_COLL_CONFIG("ncclGatherConfig");
  return fromWeft(weftGather(sendbuff, recvbuff, count, toWeft(datatype), root, toWeft(comm),
                             resolveStream(stream, sendbuff, recvbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclScatterConfig, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  WEFT_CHECK_COLL_CONFIG("ncclScatterConfig");
  return fromWeft(weftScatter(sendbuff, recvbuff, count, toWeft(datatype), root, toWeft(comm),
                              resolveStream(stream, sendbuff, recvbuff)));
}
