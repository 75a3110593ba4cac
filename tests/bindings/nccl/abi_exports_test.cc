// The exports of Weft's libnccl.so.2 seen through NVIDIA's 2.32 headers: every function nccl.h
// and nccl_device.h declare resolves, nccl and pnccl at one address, in the library under test
// (dlopen'd, so that the casts check NVIDIA's signatures); the device API's host functions refuse
// with a message; ncclCommQueryProperties fills NVIDIA's struct. Built with abi_test.cc.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>  // NVIDIA's: the include path puts its directory first
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-function"
#include <nccl_device.h>
#pragma GCC diagnostic pop

#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace {

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
