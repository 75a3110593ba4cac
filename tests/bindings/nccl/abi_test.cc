// Weft's NCCL ABI against NVIDIA's 2.32: compiled with the real nccl.h (and nccl_device.h), this
// checks every enum value, struct size and offset, initialiser and flag of bindings/nccl's own
// definitions (abi_exports_test.cc checks the functions). Built only where NVIDIA's nccl.h of
// our API level is found (tests/bindings/nccl/CMakeLists.txt).
#include <gtest/gtest.h>
#include <nccl.h>  // NVIDIA's: the include path puts its directory first
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-function"
#include <nccl_device.h>
#pragma GCC diagnostic pop

#include <climits>
#include <cstdlib>
#include <cstring>

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

}  // namespace
