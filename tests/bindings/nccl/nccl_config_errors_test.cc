// ncclConfig_t read the way NCCL reads it (size, magic, version) and translated; results in
// NCCL's codes with Weft's message in ncclGetLastError; the version a framework gates on.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "nccl_harness.h"

namespace {

// A one-rank communicator made with config (polled to completion when non-blocking).
ncclResult_t initOne(ncclComm_t* comm, ncclConfig_t* config) {
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) return r;
  r = ncclCommInitRankConfig(comm, 1, id, 0, config);
  while (r == ncclInProgress) {
    ncclResult_t state = ncclInProgress;
    r = ncclCommGetAsyncError(*comm, &state);
    if (r == ncclSuccess) r = state;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return r;
}

bool contains(const char* text, const char* part) { return text && std::strstr(text, part) != nullptr; }

// These programs must run on Weft's library, not on a libnccl.so.2 found first elsewhere.
TEST(NcclVersion, RunsOnWeftsLibrary) {
  EXPECT_TRUE(contains(ncclGetErrorString(ncclInternalError), "Weft"))
      << "libnccl.so.2 is not Weft's: check LD_LIBRARY_PATH";
}

TEST(NcclVersion, ReportsTheApiLevelOf2323) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, 23203);
  EXPECT_EQ(version, NCCL_VERSION(2, 32, 3));
  EXPECT_EQ(ncclGetVersion(nullptr), ncclInvalidArgument);
}

TEST(NcclErrors, ErrorStringsAreNcclLike) {
  std::vector<std::string> seen;
  for (int r = ncclSuccess; r < ncclNumResults; ++r) {
    const char* s = ncclGetErrorString(static_cast<ncclResult_t>(r));
    ASSERT_NE(s, nullptr);
    EXPECT_GT(std::strlen(s), 0u);
    for (const auto& other : seen) EXPECT_NE(other, s);
    seen.push_back(s);
  }
  EXPECT_STREQ(ncclGetErrorString(ncclSuccess), "no error");
  EXPECT_TRUE(contains(ncclGetErrorString(ncclRemoteError), "remote process exited"));
  EXPECT_STREQ(ncclGetErrorString(static_cast<ncclResult_t>(42)), "unknown result code");
}

// A bad argument is ncclInvalidArgument; ncclGetLastError carries Weft's sentence, for the
// communicator and for the thread (PyTorch asks with NULL); the communicator stays usable.
TEST(NcclErrors, BadArgumentMapsAndKeepsWeftsMessage) {
  ncclComm_t comm = nullptr;
  ASSERT_EQ(initOne(&comm, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  float x = 1.0f, y = 0.0f;
  EXPECT_EQ(ncclAllReduce(&x, &y, 1, static_cast<ncclDataType_t>(99), ncclSum, comm, nullptr), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(comm), "datatype 99")) << ncclGetLastError(comm);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "datatype 99")) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclBroadcast(&x, &y, 1, ncclFloat, 5, comm, nullptr), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "root 5")) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclAllReduce(&x, &y, 1, ncclFloat, static_cast<ncclRedOp_t>(77), comm, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(&x, &y, 1, ncclFloat, ncclSum, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(&x, &y, 1, ncclFloat, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(y, 1.0f);
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage) << "a group end without a start";
}

// What Weft does not provide (here a device-API host function, which nccl.h does not declare)
// is refused with ncclInvalidUsage and a sentence saying so; a later failure inside Weft
// replaces that message.
TEST(NcclErrors, NotProvidedSaysSo) {
  ncclComm_t comm = nullptr;
  ASSERT_EQ(initOne(&comm, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  using DevCommDestroy = ncclResult_t (*)(ncclComm_t, void*);
  auto devCommDestroy = reinterpret_cast<DevCommDestroy>(dlsym(RTLD_DEFAULT, "ncclDevCommDestroy"));
  ASSERT_NE(devCommDestroy, nullptr) << "ncclDevCommDestroy is not exported";
  EXPECT_EQ(devCommDestroy(comm, nullptr), ncclInvalidUsage);
  EXPECT_TRUE(contains(ncclGetLastError(comm), "Weft does not provide")) << ncclGetLastError(comm);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "ncclDevCommDestroy"));
  int x = 0;
  EXPECT_EQ(ncclSend(&x, 1, ncclInt, 3, comm, nullptr), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "peer 3")) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// A rank whose peer never joins the collective times out (Weft's weftTimeout): the library reports
// ncclRemoteError with Weft's sentence (not 2.30's ncclTimeout, which older callers do not know).
TEST(NcclErrors, TimeoutIsARemoteError) {
  setenv("WEFT_TIMEOUT_S", "2", 1);
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comms[2] = {};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r) ASSERT_EQ(ncclCommInitRank(&comms[r], 2, id, r), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  float x = 1.0f;
  ncclResult_t r = ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comms[0], nullptr);  // rank 1 never comes
  EXPECT_EQ(r, ncclRemoteError) << ncclGetErrorString(r) << ": " << ncclGetLastError(comms[0]);
  EXPECT_GT(std::strlen(ncclGetLastError(comms[0])), 0u);
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comms[0], &async), ncclSuccess);
  EXPECT_EQ(async, ncclRemoteError);
  EXPECT_GT(std::strlen(ncclGetLastError(nullptr)), 0u) << "the polled error is the thread's last error";
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommAbort(c), ncclSuccess);
}

// A non-blocking init whose peer never comes fails on Weft's thread: ncclCommGetAsyncError
// reports it, and ncclGetLastError (with the comm or NULL) says why.
TEST(NcclErrors, NonBlockingInitFailureIsReportedWhenPolled) {
  setenv("WEFT_TIMEOUT_S", "2", 1);
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, 2, id, 0, &config);  // rank 1 never joins
  ASSERT_EQ(r, ncclInProgress) << ncclGetLastError(nullptr);
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) {
    ASSERT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_NE(state, ncclSuccess);
  EXPECT_GT(std::strlen(ncclGetLastError(comm)), 0u);
  EXPECT_STREQ(ncclGetLastError(nullptr), ncclGetLastError(comm));
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(NcclErrors, ResetDebugInitIsHarmless) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit();
  ncclResetDebugInit();
#pragma GCC diagnostic pop
  int version = 0;
  EXPECT_EQ(ncclGetVersion(&version), ncclSuccess);
}

// ---- ncclConfig_t ----------------------------------------------------------------------------

TEST(NcclConfig, BlockingAndTranslatedFields) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  config.minCTAs = 2;
  config.maxCTAs = 4;
  config.commName = "weft-nccl-test";
  config.cgaClusterSize = 2;  // no Weft equivalent: ignored
  config.splitShare = 1;
  ncclComm_t comm = nullptr;
  ASSERT_EQ(initOne(&comm, &config), ncclSuccess) << ncclGetLastError(nullptr);
  int v = 3, out = 0;
  EXPECT_EQ(ncclAllReduce(&v, &out, 1, ncclInt, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(out, 3);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(NcclConfig, NonBlockingInitOnTwoRanks) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      ncclComm_t comm = nullptr;
      ncclResult_t res = ncclCommInitRankConfig(&comm, 2, id, r, &config);
      ASSERT_TRUE(res == ncclInProgress || res == ncclSuccess) << res << ": " << ncclGetLastError(nullptr);
      ncclResult_t state = ncclInProgress;
      do {
        NCCL_OK(ncclCommGetAsyncError(comm, &state));
      } while (state == ncclInProgress);
      ASSERT_EQ(state, ncclSuccess) << ncclGetLastError(comm);
      int64_t v = r + 1, sum = 0;
      NCCL_OK(ncclAllReduce(&v, &sum, 1, ncclInt64, ncclSum, comm, nullptr));
      EXPECT_EQ(sum, 3);
      EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
    });
  }
  for (auto& t : threads) t.join();
}

// NCCL_COMM_BLOCKING=0 makes inits without a `blocking` setting non-blocking, as in NCCL.
TEST(NcclConfig, CommBlockingEnvironmentVariable) {
  setenv("NCCL_COMM_BLOCKING", "0", 1);
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclInProgress);
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) ASSERT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
  EXPECT_EQ(state, ncclSuccess) << ncclGetLastError(comm);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;  // an explicit setting wins
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  unsetenv("NCCL_COMM_BLOCKING");
}

TEST(NcclConfig, BadMagicIsInvalidArgument) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.magic = 0;
  ncclComm_t comm = nullptr;
  EXPECT_EQ(initOne(&comm, &config), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "magic")) << ncclGetLastError(nullptr);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "NCCL_CONFIG_INITIALIZER"));
}

TEST(NcclConfig, BadBlockingValueIsInvalidArgument) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 5;
  ncclComm_t comm = nullptr;
  EXPECT_EQ(initOne(&comm, &config), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "blocking")) << ncclGetLastError(nullptr);
}

// minCTAs = -5 is rejected when the caller's version has the field, and ignored (unset) when
// the caller was built against NCCL 2.14, which predates it.
TEST(NcclConfig, FieldsTheCallersVersionPredatesAreUnset) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.minCTAs = -5;
  ncclComm_t comm = nullptr;
  EXPECT_EQ(initOne(&comm, &config), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "minCTAs")) << ncclGetLastError(nullptr);
  config.version = NCCL_VERSION(2, 14, 0);
  ASSERT_EQ(initOne(&comm, &config), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Only config->size bytes are read: an older caller's smaller struct, followed by bytes that
// would be invalid as fields; and a newer caller's larger struct.
TEST(NcclConfig, OnlyTheCallersSizeIsRead) {
  std::vector<unsigned char> bytes(sizeof(ncclConfig_t) + 64, 0xff);
  ncclConfig_t init = NCCL_CONFIG_INITIALIZER;
  std::memcpy(bytes.data(), &init, sizeof(init));
  auto* config = reinterpret_cast<ncclConfig_t*>(bytes.data());
  config->minCTAs = -5;
  config->size = offsetof(ncclConfig_t, minCTAs);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(initOne(&comm, config), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  std::memcpy(bytes.data(), &init, sizeof(init));
  config->size = bytes.size();  // a newer header's struct: its tail is not read
  ASSERT_EQ(initOne(&comm, config), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace
