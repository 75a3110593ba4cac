// Weft's NCCL ABI against NVIDIA's 2.32: compiled with the real nccl.h (and nccl_device.h), this
// checks every enum value, struct size and offset, initialiser and flag of bindings/nccl's own
// definitions, and finds every declared function, nccl and pnccl, in the built libnccl.so.2.
// Built only where the CUDA toolkit ships nccl.h (tests/bindings/nccl/CMakeLists.txt).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>  // NVIDIA's: the include path puts the toolkit's directory first
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-function"
#include <nccl_device.h>
#pragma GCC diagnostic pop

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

// Our definitions, side by side with NVIDIA's: the types header has no function declarations
// and its system includes are already expanded, so a namespace keeps the two apart.
namespace ours {
#include "weft_nccl/nccl_types.h"
}

// What bindings/nccl/include/nccl.h's initialisers produce (our_header_values.cc, compiled
// against our header alone).
extern "C" void weftNcclOurConfigInitializer(void* out, size_t bytes);
extern "C" void weftNcclOurSimInfoInitializer(void* out, size_t bytes);
extern "C" void weftNcclOurCollConfigInitializer(void* out, size_t bytes);
extern "C" void weftNcclOurEncryptionInitializer(void* out, size_t bytes);

namespace {

#define SAME_VALUE(x) static_assert(static_cast<long long>(ours::x) == static_cast<long long>(::x), #x)
SAME_VALUE(ncclSuccess);
SAME_VALUE(ncclUnhandledCudaError);
SAME_VALUE(ncclSystemError);
SAME_VALUE(ncclInternalError);
SAME_VALUE(ncclInvalidArgument);
SAME_VALUE(ncclInvalidUsage);
SAME_VALUE(ncclRemoteError);
SAME_VALUE(ncclInProgress);
SAME_VALUE(ncclTimeout);
SAME_VALUE(ncclNumResults);
SAME_VALUE(ncclSum);
SAME_VALUE(ncclProd);
SAME_VALUE(ncclMax);
SAME_VALUE(ncclMin);
SAME_VALUE(ncclAvg);
SAME_VALUE(ncclNumOps);
SAME_VALUE(ncclMaxRedOp);
SAME_VALUE(ncclInt8);
SAME_VALUE(ncclChar);
SAME_VALUE(ncclUint8);
SAME_VALUE(ncclInt32);
SAME_VALUE(ncclInt);
SAME_VALUE(ncclUint32);
SAME_VALUE(ncclInt64);
SAME_VALUE(ncclUint64);
SAME_VALUE(ncclFloat16);
SAME_VALUE(ncclHalf);
SAME_VALUE(ncclFloat32);
SAME_VALUE(ncclFloat);
SAME_VALUE(ncclFloat64);
SAME_VALUE(ncclDouble);
SAME_VALUE(ncclBfloat16);
SAME_VALUE(ncclFloat8e4m3);
SAME_VALUE(ncclFloat8e5m2);
SAME_VALUE(ncclNumTypes);
SAME_VALUE(ncclScalarDevice);
SAME_VALUE(ncclScalarHostImmediate);
SAME_VALUE(ncclHostCftDefault);
SAME_VALUE(ncclHostCftEnable);
SAME_VALUE(ncclHostCftDisable);
SAME_VALUE(ncclHostCftFallback);
SAME_VALUE(ncclNvlsHostModeDefault);
SAME_VALUE(ncclNvlsHostModeEnable);
SAME_VALUE(ncclNvlsHostModeDisableTransport);
SAME_VALUE(ncclNvlsHostModeDisableSymmetricMultimem);
SAME_VALUE(ncclNvlsHostModeDisable);
SAME_VALUE(ncclStatGpuMemSuspend);
SAME_VALUE(ncclStatGpuMemSuspended);
SAME_VALUE(ncclStatGpuMemPersist);
SAME_VALUE(ncclStatGpuMemTotal);
SAME_VALUE(NCCL_ENCRYPTION_MODE_NONE);
SAME_VALUE(NCCL_ENCRYPTION_MODE_PSK);
SAME_VALUE(NCCL_CFT_TEAM_FLAT);
SAME_VALUE(NCCL_CFT_TEAM_HIER_MULTIMEM);
SAME_VALUE(NCCL_CFT_TEAM_HIER_LSA);
SAME_VALUE(NCCL_GIN_TYPE_NONE);
SAME_VALUE(NCCL_GIN_TYPE_PROXY);
SAME_VALUE(NCCL_GIN_TYPE_GDAKI);
SAME_VALUE(NCCL_GIN_TYPE_GPI);
SAME_VALUE(NCCL_GIN_TYPE_EFA_GDA);
SAME_VALUE(NCCL_GIN_MAX_TYPES);
SAME_VALUE(NCCL_GIN_CONNECTION_NONE);
SAME_VALUE(NCCL_GIN_CONNECTION_FULL);
SAME_VALUE(NCCL_GIN_CONNECTION_RAIL);
SAME_VALUE(NCCL_GIN_CONNECTION_CUSTOM_STRIDE);

static_assert(sizeof(ours::ncclResult_t) == sizeof(::ncclResult_t), "ncclResult_t");
static_assert(sizeof(ours::ncclRedOp_t) == sizeof(::ncclRedOp_t), "ncclRedOp_t");
static_assert(sizeof(ours::ncclDataType_t) == sizeof(::ncclDataType_t), "ncclDataType_t");
static_assert(sizeof(ours::ncclScalarResidence_t) == sizeof(::ncclScalarResidence_t), "ncclScalarResidence_t");
static_assert(sizeof(ours::ncclCommMemStat_t) == sizeof(::ncclCommMemStat_t), "ncclCommMemStat_t");
static_assert(sizeof(ours::ncclCftTeamMode_t) == sizeof(::ncclCftTeamMode_t), "ncclCftTeamMode_t is passed by value");
static_assert(sizeof(ours::ncclCftLeId) == sizeof(::ncclCftLeId), "ncclCftLeId");
static_assert(sizeof(ours::ncclUniqueId) == sizeof(::ncclUniqueId), "ncclUniqueId");
static_assert(WEFT_NCCL_UNIQUE_ID_BYTES == NCCL_UNIQUE_ID_BYTES, "NCCL_UNIQUE_ID_BYTES");

#define SAME_LAYOUT(type, field)                                                           \
  static_assert(offsetof(ours::type, field) == offsetof(::type, field), #type "." #field); \
  static_assert(sizeof(ours::type::field) == sizeof(::type::field), #type "." #field)
static_assert(sizeof(ours::ncclConfig_t) == sizeof(::ncclConfig_t), "sizeof(ncclConfig_t)");
static_assert(sizeof(::ncclConfig_t) == 120, "ncclConfig_t of NCCL 2.32 is 120 bytes");
SAME_LAYOUT(ncclConfig_t, size);
SAME_LAYOUT(ncclConfig_t, magic);
SAME_LAYOUT(ncclConfig_t, version);
SAME_LAYOUT(ncclConfig_t, blocking);
SAME_LAYOUT(ncclConfig_t, cgaClusterSize);
SAME_LAYOUT(ncclConfig_t, minCTAs);
SAME_LAYOUT(ncclConfig_t, maxCTAs);
SAME_LAYOUT(ncclConfig_t, netName);
SAME_LAYOUT(ncclConfig_t, splitShare);
SAME_LAYOUT(ncclConfig_t, trafficClass);
SAME_LAYOUT(ncclConfig_t, commName);
SAME_LAYOUT(ncclConfig_t, collnetEnable);
SAME_LAYOUT(ncclConfig_t, CTAPolicy);
SAME_LAYOUT(ncclConfig_t, shrinkShare);
SAME_LAYOUT(ncclConfig_t, nvlsCTAs);
SAME_LAYOUT(ncclConfig_t, nChannelsPerNetPeer);
SAME_LAYOUT(ncclConfig_t, nvlinkCentricSched);
SAME_LAYOUT(ncclConfig_t, graphUsageMode);
SAME_LAYOUT(ncclConfig_t, numRmaCtx);
SAME_LAYOUT(ncclConfig_t, maxP2pPeers);
SAME_LAYOUT(ncclConfig_t, graphStreamOrdering);
SAME_LAYOUT(ncclConfig_t, launchOrderImplicit);
SAME_LAYOUT(ncclConfig_t, numRmaSig);
SAME_LAYOUT(ncclConfig_t, rmaEagerInit);
SAME_LAYOUT(ncclConfig_t, hostCftMode);
SAME_LAYOUT(ncclConfig_t, nvlsHostMode);
static_assert(sizeof(ours::ncclCollConfig_t) == sizeof(::ncclCollConfig_t), "sizeof(ncclCollConfig_t)");
static_assert(sizeof(::ncclCollConfig_t) == 72, "ncclCollConfig_t of NCCL 2.32 is 72 bytes");
SAME_LAYOUT(ncclCollConfig_t, size);
SAME_LAYOUT(ncclCollConfig_t, magic);
SAME_LAYOUT(ncclCollConfig_t, version);
SAME_LAYOUT(ncclCollConfig_t, ext);
SAME_LAYOUT(ncclCollConfig_t, minCTAs);
SAME_LAYOUT(ncclCollConfig_t, maxCTAs);
SAME_LAYOUT(ncclCollConfig_t, nvlsCTAs);
SAME_LAYOUT(ncclCollConfig_t, cgaClusterSize);
SAME_LAYOUT(ncclCollConfig_t, algSelection);
SAME_LAYOUT(ncclCollConfig_t, forceAlgSelection);
SAME_LAYOUT(ncclCollConfig_t, CTAPolicy);
SAME_LAYOUT(ncclCollConfig_t, userProfilerTag);
SAME_LAYOUT(ncclCollConfig_t, launchCompletionEvent);
static_assert(sizeof(ours::ncclConfigExt_t) == sizeof(::ncclConfigExt_t), "sizeof(ncclConfigExt_t)");
SAME_LAYOUT(ncclConfigExt_t, next);
SAME_LAYOUT(ncclConfigExt_t, key);
SAME_LAYOUT(ncclConfigExt_t, key.vendorId);
SAME_LAYOUT(ncclConfigExt_t, key.optionId);
SAME_LAYOUT(ncclConfigExt_t, val);
SAME_LAYOUT(ncclConfigExt_t, val.i);
SAME_LAYOUT(ncclConfigExt_t, val.s);
SAME_LAYOUT(ncclConfigExt_t, val.raw);
static_assert(sizeof(ours::ncclWaitSignalDesc_t) == sizeof(::ncclWaitSignalDesc_t), "sizeof(ncclWaitSignalDesc_t)");
SAME_LAYOUT(ncclWaitSignalDesc_t, opCnt);
SAME_LAYOUT(ncclWaitSignalDesc_t, peer);
SAME_LAYOUT(ncclWaitSignalDesc_t, sigIdx);
SAME_LAYOUT(ncclWaitSignalDesc_t, ctx);
static_assert(sizeof(ours::ncclEncryptionConfig_t) == sizeof(::ncclEncryptionConfig_t),
              "sizeof(ncclEncryptionConfig_t)");
SAME_LAYOUT(ncclEncryptionConfig_t, size);
SAME_LAYOUT(ncclEncryptionConfig_t, magic);
SAME_LAYOUT(ncclEncryptionConfig_t, version);
SAME_LAYOUT(ncclEncryptionConfig_t, mode);
SAME_LAYOUT(ncclEncryptionConfig_t, psk);
static_assert(sizeof(ours::ncclCommProperties_t) == sizeof(::ncclCommProperties_t), "sizeof(ncclCommProperties_t)");
static_assert(sizeof(::ncclCommProperties_t) == 152, "ncclCommProperties_t of NCCL 2.32 is 152 bytes");
SAME_LAYOUT(ncclCommProperties_t, size);
SAME_LAYOUT(ncclCommProperties_t, magic);
SAME_LAYOUT(ncclCommProperties_t, version);
SAME_LAYOUT(ncclCommProperties_t, rank);
SAME_LAYOUT(ncclCommProperties_t, nRanks);
SAME_LAYOUT(ncclCommProperties_t, cudaDev);
SAME_LAYOUT(ncclCommProperties_t, nvmlDev);
SAME_LAYOUT(ncclCommProperties_t, deviceApiSupport);
SAME_LAYOUT(ncclCommProperties_t, multimemSupport);
SAME_LAYOUT(ncclCommProperties_t, ginType);
SAME_LAYOUT(ncclCommProperties_t, nLsaTeams);
SAME_LAYOUT(ncclCommProperties_t, hostRmaSupport);
SAME_LAYOUT(ncclCommProperties_t, railedGinType);
SAME_LAYOUT(ncclCommProperties_t, commHash);
SAME_LAYOUT(ncclCommProperties_t, ginMinStride);
SAME_LAYOUT(ncclCommProperties_t, ginConnectionType);
SAME_LAYOUT(ncclCommProperties_t, ginSupport);
SAME_LAYOUT(ncclCommProperties_t, devCommRuntimeVersionSize);
SAME_LAYOUT(ncclCommProperties_t, cftSupport);
SAME_LAYOUT(ncclCommProperties_t, cftMulticastSupport);
SAME_LAYOUT(ncclCommProperties_t, cftCountedSupport);
static_assert(sizeof(ours::ncclMultimemHandle_t) == sizeof(::ncclMultimemHandle_t), "passed by value");
SAME_LAYOUT(ncclMultimemHandle_t, mcBasePtr);
static_assert(sizeof(ours::ncclSimInfo_t) == sizeof(::ncclSimInfo_t), "sizeof(ncclSimInfo_t)");
SAME_LAYOUT(ncclSimInfo_t, size);
SAME_LAYOUT(ncclSimInfo_t, magic);
SAME_LAYOUT(ncclSimInfo_t, version);
SAME_LAYOUT(ncclSimInfo_t, estimatedTime);
static_assert(sizeof(ours::ncclTeam_t) == sizeof(::ncclTeam_t), "ncclTeam_t is returned by value");
SAME_LAYOUT(ncclTeam_t, nRanks);
SAME_LAYOUT(ncclTeam_t, rank);
SAME_LAYOUT(ncclTeam_t, stride);

static_assert(WEFT_NCCL_VERSION_CODE == NCCL_VERSION_CODE, "the API level we mirror is the header's");
static_assert(WEFT_NCCL_VERSION_CODE == 23203, "NCCL 2.32.3");
static_assert(WEFT_NCCL_VERSION(2, 32, 3) == NCCL_VERSION(2, 32, 3), "NCCL_VERSION");
static_assert(WEFT_NCCL_VERSION(2, 8, 4) == NCCL_VERSION(2, 8, 4), "NCCL_VERSION, old encoding");
static_assert(WEFT_NCCL_SPLIT_NOCOLOR == NCCL_SPLIT_NOCOLOR, "NCCL_SPLIT_NOCOLOR");
static_assert(WEFT_NCCL_CONFIG_UNDEF_INT == NCCL_CONFIG_UNDEF_INT, "NCCL_CONFIG_UNDEF_INT");
static_assert(WEFT_NCCL_SHRINK_DEFAULT == NCCL_SHRINK_DEFAULT && WEFT_NCCL_SHRINK_ABORT == NCCL_SHRINK_ABORT, "shrink");
static_assert(WEFT_NCCL_WIN_DEFAULT == NCCL_WIN_DEFAULT && WEFT_NCCL_WIN_COLL_SYMMETRIC == NCCL_WIN_COLL_SYMMETRIC,
              "window flags");
static_assert(WEFT_NCCL_WIN_STRICT_ORDERING == NCCL_WIN_STRICT_ORDERING &&
                  WEFT_NCCL_WIN_GIN_ONLY == NCCL_WIN_GIN_ONLY && WEFT_NCCL_WIN_CFT_COUNTED == NCCL_WIN_CFT_COUNTED,
              "window flags of 2.32");
static_assert(WEFT_NCCL_REVOKE_DEFAULT == NCCL_REVOKE_DEFAULT, "revoke flags");
static_assert(WEFT_NCCL_SUSPEND_MEM == NCCL_SUSPEND_MEM, "suspend flags");
static_assert(WEFT_NCCL_CONFIG_MAGIC == NCCL_API_MAGIC, "the magic of every versioned struct");
static_assert(WEFT_NCCL_CTA_POLICY_DEFAULT == NCCL_CTA_POLICY_DEFAULT &&
                  WEFT_NCCL_CTA_POLICY_EFFICIENCY == NCCL_CTA_POLICY_EFFICIENCY &&
                  WEFT_NCCL_CTA_POLICY_ZERO == NCCL_CTA_POLICY_ZERO,
              "CTA policies");

TEST(NcclAbi, InitializersMatchTheRealHeader) {
  ::ncclConfig_t real = NCCL_CONFIG_INITIALIZER;
  ::ncclConfig_t mine;
  std::memset(&mine, 0x5a, sizeof(mine));
  weftNcclOurConfigInitializer(&mine, sizeof(mine));
  EXPECT_EQ(real.magic, WEFT_NCCL_CONFIG_MAGIC);
  // 2.32's struct ends in 4 bytes of padding (on LP64): compare up to its last field.
  const size_t fields = offsetof(::ncclConfig_t, nvlsHostMode) + sizeof(int);
  EXPECT_EQ(std::memcmp(&real, &mine, fields), 0) << "NCCL_CONFIG_INITIALIZER differs";
  ::ncclSimInfo_t realSim = NCCL_SIM_INFO_INITIALIZER;
  ::ncclSimInfo_t mineSim;
  weftNcclOurSimInfoInitializer(&mineSim, sizeof(mineSim));
  EXPECT_EQ(realSim.magic, WEFT_NCCL_SIM_INFO_MAGIC);
  EXPECT_EQ(realSim.size, mineSim.size);
  EXPECT_EQ(realSim.magic, mineSim.magic);
  EXPECT_EQ(realSim.version, mineSim.version);
  EXPECT_EQ(realSim.estimatedTime, mineSim.estimatedTime);
  ::ncclCollConfig_t realColl = NCCL_COLLCONFIG_INITIALIZER;
  ::ncclCollConfig_t mineColl;
  std::memset(&mineColl, 0x5a, sizeof(mineColl));
  weftNcclOurCollConfigInitializer(&mineColl, sizeof(mineColl));
  EXPECT_EQ(std::memcmp(&realColl, &mineColl, sizeof(realColl)), 0)
      << "NCCL_COLLCONFIG_INITIALIZER differs (no padding)";
  EXPECT_EQ(mineColl.forceAlgSelection, 1);
  // Padding after mode: field by field.
  ::ncclEncryptionConfig_t realEnc = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  ::ncclEncryptionConfig_t mineEnc;
  std::memset(&mineEnc, 0x5a, sizeof(mineEnc));
  weftNcclOurEncryptionInitializer(&mineEnc, sizeof(mineEnc));
  EXPECT_EQ(realEnc.size, mineEnc.size);
  EXPECT_EQ(realEnc.magic, mineEnc.magic);
  EXPECT_EQ(realEnc.version, mineEnc.version);
  EXPECT_EQ(realEnc.mode, mineEnc.mode);
  EXPECT_EQ(realEnc.psk, mineEnc.psk);
}

struct Library {
  void* handle = dlopen(WEFT_NCCL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ~Library() {
    if (handle) dlclose(handle);
  }
};

// Both names resolve, to one address, in the library under test; the casts check that the
// header declares both with the signature given.
int checked = 0;
void checkPair(void* handle, const char* name, void* a, void* b) {
  ++checked;
  ASSERT_NE(a, nullptr) << name << " is not exported: " << dlerror();
  ASSERT_NE(b, nullptr) << "p" << name << " is not exported";
  EXPECT_EQ(a, b) << name << " and p" << name << " differ";
  Dl_info info;
  ASSERT_NE(dladdr(a, &info), 0);
  char* from = realpath(info.dli_fname, nullptr);
  char* expected = realpath(WEFT_NCCL_LIBRARY, nullptr);
  ASSERT_TRUE(from && expected);
  EXPECT_STREQ(from, expected) << name << " resolves in another library";
  free(from);
  free(expected);
}

// A function declared with its twin in nccl.h.
#define CHECK_DECLARED(f)                                                                         \
  do {                                                                                            \
    using T = decltype(&::f);                                                                     \
    static_assert(std::is_same<T, decltype(&::p##f)>::value, "p" #f " has the signature of " #f); \
    T a = reinterpret_cast<T>(dlsym(lib.handle, #f));                                             \
    T b = reinterpret_cast<T>(dlsym(lib.handle, "p" #f));                                         \
    checkPair(lib.handle, #f, reinterpret_cast<void*>(a), reinterpret_cast<void*>(b));            \
  } while (0)
// A function the header does not declare here; the library exports it and its twin.
#define CHECK_EXPORTED(f) checkPair(lib.handle, #f, dlsym(lib.handle, #f), dlsym(lib.handle, "p" #f))
// A host function of nccl_device/*.h (declared without its twin; the library exports both).
#define CHECK_DEVICE_HOST(f, sig)                                                \
  do {                                                                           \
    using T = sig;                                                               \
    T declared = static_cast<T>(&::f);                                           \
    (void)declared;                                                              \
    checkPair(lib.handle, #f, dlsym(lib.handle, #f), dlsym(lib.handle, "p" #f)); \
  } while (0)

TEST(NcclAbi, EveryDeclaredFunctionIsExportedTwice) {
  Library lib;
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  checked = 0;
  CHECK_DECLARED(ncclMemAlloc);
  CHECK_DECLARED(ncclMemFree);
  CHECK_DECLARED(ncclGetVersion);
  CHECK_DECLARED(ncclGetUniqueId);
  CHECK_DECLARED(ncclCommInitRankConfig);
  CHECK_DECLARED(ncclCommInitRank);
  CHECK_DECLARED(ncclCommInitAll);
  CHECK_DECLARED(ncclCommFinalize);
  CHECK_DECLARED(ncclCommDestroy);
  CHECK_DECLARED(ncclCommAbort);
  CHECK_DECLARED(ncclCommRevoke);
  CHECK_DECLARED(ncclCommSplit);
  CHECK_DECLARED(ncclCommShrink);
  CHECK_DECLARED(ncclCommInitRankScalable);
  CHECK_DECLARED(ncclCommGetUniqueId);
  CHECK_DECLARED(ncclCommGrow);
  CHECK_DECLARED(ncclGetErrorString);
  CHECK_DECLARED(ncclGetLastError);
  // 2.32 declares it only when the program defines NCCL_OS_LINUX (else it is an empty macro).
  CHECK_EXPORTED(ncclResetDebugInit);
  CHECK_DECLARED(ncclCommGetAsyncError);
  CHECK_DECLARED(ncclCommCount);
  CHECK_DECLARED(ncclCommCuDevice);
  CHECK_DECLARED(ncclCommUserRank);
  CHECK_DECLARED(ncclCommSuspend);
  CHECK_DECLARED(ncclCommResume);
  CHECK_DECLARED(ncclCommMemStats);
  CHECK_DECLARED(ncclCommRegister);
  CHECK_DECLARED(ncclCommDeregister);
  CHECK_DECLARED(ncclCommWindowRegister);
  CHECK_DECLARED(ncclCommWindowDeregister);
  CHECK_DECLARED(ncclWinGetUserPtr);
  CHECK_DECLARED(ncclRedOpCreatePreMulSum);
  CHECK_DECLARED(ncclRedOpDestroy);
  CHECK_DECLARED(ncclReduce);
  CHECK_DECLARED(ncclBcast);
  CHECK_DECLARED(ncclBroadcast);
  CHECK_DECLARED(ncclAllReduce);
  CHECK_DECLARED(ncclReduceScatter);
  CHECK_DECLARED(ncclAllGather);
  CHECK_DECLARED(ncclAlltoAll);
  CHECK_DECLARED(ncclGather);
  CHECK_DECLARED(ncclScatter);
  CHECK_DECLARED(ncclSend);
  CHECK_DECLARED(ncclRecv);
  CHECK_DECLARED(ncclAllReduceConfig);
  CHECK_DECLARED(ncclBroadcastConfig);
  CHECK_DECLARED(ncclReduceConfig);
  CHECK_DECLARED(ncclAllGatherConfig);
  CHECK_DECLARED(ncclReduceScatterConfig);
  CHECK_DECLARED(ncclAlltoAllConfig);
  CHECK_DECLARED(ncclGatherConfig);
  CHECK_DECLARED(ncclScatterConfig);
  CHECK_DECLARED(ncclPutSignal);
  CHECK_DECLARED(ncclSignal);
  CHECK_DECLARED(ncclWaitSignal);
  CHECK_DECLARED(ncclGroupStart);
  CHECK_DECLARED(ncclGroupEnd);
  CHECK_DECLARED(ncclGroupSimulateEnd);
  CHECK_DECLARED(ncclSetEncryption);
  CHECK_DECLARED(ncclParamBind);
  CHECK_DECLARED(ncclParamGetI8);
  CHECK_DECLARED(ncclParamGetI16);
  CHECK_DECLARED(ncclParamGetI32);
  CHECK_DECLARED(ncclParamGetI64);
  CHECK_DECLARED(ncclParamGetU8);
  CHECK_DECLARED(ncclParamGetU16);
  CHECK_DECLARED(ncclParamGetU32);
  CHECK_DECLARED(ncclParamGetU64);
  CHECK_DECLARED(ncclParamGetStr);
  CHECK_DECLARED(ncclParamGet);
  CHECK_DECLARED(ncclParamGetParameter);
  CHECK_DECLARED(ncclParamGetAllParameterKeys);
  CHECK_DECLARED(ncclParamDumpAll);
  EXPECT_EQ(checked, 73) << "nccl.h of 2.32 declares 73 functions";

  CHECK_DEVICE_HOST(ncclCommQueryProperties, ncclResult_t(*)(ncclComm_t, ncclCommProperties_t*));
  CHECK_DEVICE_HOST(ncclDevCommCreate, ncclResult_t(*)(ncclComm_t, ncclDevCommRequirements_t const*, ncclDevComm_t*));
  CHECK_DEVICE_HOST(ncclDevCommDestroy, ncclResult_t(*)(ncclComm_t, ncclDevComm_t const*));
  CHECK_DEVICE_HOST(ncclGetLsaMultimemDevicePointer, ncclResult_t(*)(ncclWindow_t, size_t, void**));
  CHECK_DEVICE_HOST(ncclGetMultimemDevicePointer, ncclResult_t(*)(ncclWindow_t, size_t, ncclMultimemHandle_t, void**));
  CHECK_DEVICE_HOST(ncclGetLsaDevicePointer, ncclResult_t(*)(ncclWindow_t, size_t, int, void**));
  CHECK_DEVICE_HOST(ncclGetPeerDevicePointer, ncclResult_t(*)(ncclWindow_t, size_t, int, void**));
  CHECK_DEVICE_HOST(ncclGetMultimemDeviceLeInfo, ncclResult_t(*)(ncclWindow_t, size_t, ncclCftLeId*, size_t*));
  CHECK_DEVICE_HOST(ncclGetCftDeviceLeInfo,
                    ncclResult_t(*)(ncclWindow_t, size_t, int, ncclTeam_t, ncclCftLeId*, size_t*));
  CHECK_DEVICE_HOST(ncclGetPeerDeviceLeInfo, ncclResult_t(*)(ncclWindow_t, size_t, int, ncclCftLeId*, size_t*));
  CHECK_DEVICE_HOST(ncclTeamWorld, ncclTeam_t(*)(ncclComm_t));
  CHECK_DEVICE_HOST(ncclTeamLsa, ncclTeam_t(*)(ncclComm_t));
  CHECK_DEVICE_HOST(ncclTeamCft, ncclTeam_t(*)(ncclComm_t, ncclCftTeamMode_t));
  CHECK_DEVICE_HOST(ncclTeamCftMultimem, ncclTeam_t(*)(ncclComm_t));
  CHECK_DEVICE_HOST(ncclTeamRankToWorld, int (*)(ncclComm_t, ncclTeam_t, int));
  CHECK_DEVICE_HOST(ncclTeamRankToLsa, int (*)(ncclComm_t, ncclTeam_t, int));
  CHECK_DEVICE_HOST(ncclTeamRail, ncclTeam_t(*)(ncclComm_t));
  CHECK_DEVICE_HOST(ncclLsaBarrierCreateRequirement,
                    ncclResult_t(*)(ncclTeam_t, int, ncclLsaBarrierHandle_t*, ncclDevResourceRequirements_t*));
  CHECK_DEVICE_HOST(
      ncclGinBarrierCreateRequirement,
      ncclResult_t(*)(ncclComm_t, ncclTeam_t, int, ncclGinBarrierHandle_t*, ncclDevResourceRequirements_t*));
  CHECK_DEVICE_HOST(ncclCftBarrierCreateRequirement,
                    ncclResult_t(*)(ncclTeam_t, int, ncclCftBarrierHandle_t*, ncclDevResourceRequirements_t*));
  CHECK_DEVICE_HOST(ncclLLA2ACalcSlots, int (*)(int, int));
  CHECK_DEVICE_HOST(ncclLLA2ACreateRequirement,
                    ncclResult_t(*)(int, int, ncclLLA2AHandle_t*, ncclDevResourceRequirements_t*));
  // Declared for Windows only, exported by NVIDIA's Linux library too.
  CHECK_EXPORTED(ncclGinOutboxCreateRequirement);
  CHECK_EXPORTED(ncclGinInboxA2ACreateRequirement);
  EXPECT_EQ(checked, 97) << "and 24 host functions of the device API";
}

// The device API's host functions load and refuse with a message (through the real header's
// declarations, called in the library under test).
TEST(NcclAbi, DeviceApiHostFunctionsRefuseWithAMessage) {
  Library lib;
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  auto create = reinterpret_cast<ncclResult_t (*)(ncclComm_t, ncclDevCommRequirements_t const*, ncclDevComm_t*)>(
      dlsym(lib.handle, "ncclDevCommCreate"));
  auto lastError = reinterpret_cast<const char* (*)(ncclComm_t)>(dlsym(lib.handle, "ncclGetLastError"));
  auto world = reinterpret_cast<ncclTeam_t (*)(ncclComm_t)>(dlsym(lib.handle, "ncclTeamWorld"));
  ASSERT_TRUE(create && lastError && world);
  EXPECT_EQ(create(nullptr, nullptr, nullptr), ncclInvalidUsage);
  EXPECT_NE(std::strstr(lastError(nullptr), "Weft does not provide"), nullptr) << lastError(nullptr);
  ncclTeam_t team = world(nullptr);
  EXPECT_EQ(team.nRanks, 0);
  EXPECT_NE(std::strstr(lastError(nullptr), "ncclTeamWorld"), nullptr) << lastError(nullptr);
}

// ncclCommQueryProperties with NVIDIA's struct and initialiser: the communicator's facts, no
// device-API support, and only the caller's size written.
// NVIDIA's NCCL_COMM_PROPERTIES_INITIALIZER sets the header only (the rest is zero).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
TEST(NcclAbi, QueryPropertiesFillsNvidiasStruct) {
  Library lib;
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  auto getId = reinterpret_cast<ncclResult_t (*)(ncclUniqueId*)>(dlsym(lib.handle, "ncclGetUniqueId"));
  auto init =
      reinterpret_cast<ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int)>(dlsym(lib.handle, "ncclCommInitRank"));
  auto device = reinterpret_cast<ncclResult_t (*)(ncclComm_t, int*)>(dlsym(lib.handle, "ncclCommCuDevice"));
  auto destroy = reinterpret_cast<ncclResult_t (*)(ncclComm_t)>(dlsym(lib.handle, "ncclCommDestroy"));
  auto query = reinterpret_cast<ncclResult_t (*)(ncclComm_t, ncclCommProperties_t*)>(
      dlsym(lib.handle, "ncclCommQueryProperties"));
  auto lastError = reinterpret_cast<const char* (*)(ncclComm_t)>(dlsym(lib.handle, "ncclGetLastError"));
  ASSERT_TRUE(getId && init && device && destroy && query && lastError);
  ncclUniqueId id;
  ASSERT_EQ(getId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(init(&comm, 1, id, 0), ncclSuccess) << lastError(nullptr);
  int cudaDev = -2;
  ASSERT_EQ(device(comm, &cudaDev), ncclSuccess);

  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  props.rank = 77;
  props.nvmlDev = 99;
  props.deviceApiSupport = true;
  props.ginSupport[NCCL_GIN_TYPE_PROXY] = true;
  ASSERT_EQ(query(comm, &props), ncclSuccess) << lastError(nullptr);
  EXPECT_EQ(props.size, sizeof(props));
  EXPECT_EQ(props.magic, NCCL_API_MAGIC);
  EXPECT_EQ(props.rank, 0);
  EXPECT_EQ(props.nRanks, 1);
  EXPECT_EQ(props.cudaDev, cudaDev);
  EXPECT_EQ(props.nvmlDev, -1);
  EXPECT_FALSE(props.deviceApiSupport);
  EXPECT_FALSE(props.ginSupport[NCCL_GIN_TYPE_PROXY]);
  EXPECT_EQ(props.ginType, NCCL_GIN_TYPE_NONE);

  ncclCommProperties_t older = NCCL_COMM_PROPERTIES_INITIALIZER;
  older.size = offsetof(ncclCommProperties_t, nvmlDev);  // a caller whose struct ends there
  older.nvmlDev = 99;
  older.rank = 77;
  ASSERT_EQ(query(comm, &older), ncclSuccess) << lastError(nullptr);
  EXPECT_EQ(older.rank, 0);
  EXPECT_EQ(older.nvmlDev, 99) << "past the caller's size nothing is written";

  ncclCommProperties_t bad = NCCL_COMM_PROPERTIES_INITIALIZER;
  bad.magic = 0;
  EXPECT_EQ(query(comm, &bad), ncclInvalidArgument);
  EXPECT_NE(std::strstr(lastError(nullptr), "NCCL_COMM_PROPERTIES_INITIALIZER"), nullptr) << lastError(nullptr);
  EXPECT_EQ(query(comm, nullptr), ncclInvalidArgument);
  EXPECT_EQ(destroy(comm), ncclSuccess);
}
#pragma GCC diagnostic pop

}  // namespace
