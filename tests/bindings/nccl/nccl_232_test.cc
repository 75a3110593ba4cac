// NCCL 2.29-2.32's host functions that Weft implements: memory windows (a window is a Weft
// registration), memory statistics, the collectives with a per-call ncclCollConfig_t, the newer
// ncclConfig_t fields, encryption mode NONE, and ncclTimeout's description.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "nccl_harness.h"

using nccl_test::Mode;
using nccl_test::Rank;

namespace {

std::string lastError() { return ncclGetLastError(nullptr); }
bool said(const std::string& words) { return lastError().find(words) != std::string::npos; }

TEST(Nccl232, TimeoutHasAnErrorString) {
  EXPECT_STRNE(ncclGetErrorString(ncclTimeout), ncclGetErrorString(ncclNumResults)) << "ncclTimeout is known";
  EXPECT_NE(std::string(ncclGetErrorString(ncclTimeout)).find("timed out"), std::string::npos);
}

TEST(NcclWindow, ACollectiveOnAWindowAndItsUserPointer) {
  nccl_test::runRanks(Mode::kThreads, 2, [](Rank& me) {
    std::vector<float> buf(1024, static_cast<float>(me.rank + 1));
    ncclWindow_t win = nullptr;
    NCCL_OK(ncclCommWindowRegister(me.comm, buf.data(), buf.size() * sizeof(float), &win, NCCL_WIN_COLL_SYMMETRIC));
    ASSERT_NE(win, nullptr);
    void* user = nullptr;
    NCCL_OK(ncclWinGetUserPtr(me.comm, win, &user));
    EXPECT_EQ(user, buf.data());
    NCCL_OK(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, me.comm, nullptr));
    EXPECT_EQ(buf[0], 3.0f);
    EXPECT_EQ(buf[1023], 3.0f);
    NCCL_OK(ncclCommWindowDeregister(me.comm, win));
    EXPECT_EQ(ncclCommWindowDeregister(me.comm, win), ncclInvalidArgument);
    EXPECT_TRUE(said("deregistered already")) << lastError();
    EXPECT_EQ(ncclWinGetUserPtr(me.comm, win, &user), ncclInvalidArgument);
    EXPECT_TRUE(said("ncclWinGetUserPtr: window")) << lastError();
  });
}

TEST(NcclWindow, BadArgumentsAreRefused) {
  nccl_test::runRanks(Mode::kThreads, 1, [](Rank& me) {
    char buf[64];
    ncclWindow_t win = reinterpret_cast<ncclWindow_t>(0x1);
    EXPECT_EQ(ncclCommWindowRegister(me.comm, buf, sizeof(buf), nullptr, 0), ncclInvalidArgument);
    EXPECT_TRUE(said("win (the output window) is NULL")) << lastError();
    EXPECT_EQ(ncclCommWindowRegister(me.comm, buf, sizeof(buf), &win, 0x100), ncclInvalidArgument);
    EXPECT_TRUE(said("winFlags 0x100")) << lastError();
    EXPECT_EQ(win, nullptr) << "a refused registration leaves no window";
    EXPECT_EQ(ncclCommWindowRegister(me.comm, buf, 0, &win, 0), ncclInvalidArgument);
    EXPECT_TRUE(said("size is 0")) << lastError();
    EXPECT_EQ(ncclCommWindowRegister(me.comm, nullptr, 64, &win, 0), ncclInvalidArgument);
    EXPECT_TRUE(said("buff is NULL")) << lastError();

    int stray = 0;
    void* user = nullptr;
    EXPECT_EQ(ncclWinGetUserPtr(me.comm, reinterpret_cast<ncclWindow_t>(&stray), &user), ncclInvalidArgument);
    EXPECT_TRUE(said("was not returned by ncclCommWindowRegister")) << lastError();
    NCCL_OK(ncclCommWindowRegister(me.comm, buf, sizeof(buf), &win, NCCL_WIN_DEFAULT));
    EXPECT_EQ(ncclWinGetUserPtr(me.comm, win, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(said("outUserPtr is NULL")) << lastError();
    // A window is its communicator's: another one is refused.
    ncclComm_t other = reinterpret_cast<ncclComm_t>(&stray);
    EXPECT_EQ(ncclWinGetUserPtr(other, win, &user), ncclInvalidArgument);
    EXPECT_TRUE(said("belongs to communicator")) << lastError();
    EXPECT_EQ(ncclCommWindowDeregister(other, win), ncclInvalidArgument);
    NCCL_OK(ncclCommWindowDeregister(me.comm, win));
  });
}

// A host communicator holds no GPU memory a suspend keeps: all it holds is what a suspend
// releases (nccl_elastic_test.cc follows it through a suspend).
TEST(NcclMemStats, AHostCommunicatorHoldsWhatASuspendReleases) {
  nccl_test::runRanks(Mode::kThreads, 2, [](Rank& me) {
    uint64_t stats[4];
    for (ncclCommMemStat_t stat :
         {ncclStatGpuMemSuspend, ncclStatGpuMemSuspended, ncclStatGpuMemPersist, ncclStatGpuMemTotal}) {
      stats[stat] = 12345;
      NCCL_OK(ncclCommMemStats(me.comm, stat, &stats[stat]));
    }
    EXPECT_EQ(stats[ncclStatGpuMemSuspended], 0u);
    EXPECT_EQ(stats[ncclStatGpuMemPersist], 0u);
    EXPECT_EQ(stats[ncclStatGpuMemTotal], stats[ncclStatGpuMemSuspend]);
    EXPECT_NE(stats[ncclStatGpuMemSuspend], 12345u);
    uint64_t value = 0;
    EXPECT_EQ(ncclCommMemStats(me.comm, static_cast<ncclCommMemStat_t>(7), &value), ncclInvalidArgument);
    EXPECT_TRUE(said("stat is 7")) << lastError();
    EXPECT_EQ(ncclCommMemStats(me.comm, ncclStatGpuMemTotal, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(said("ncclCommMemStats: value is NULL")) << lastError();
  });
  uint64_t value = 0;
  EXPECT_NE(ncclCommMemStats(nullptr, ncclStatGpuMemTotal, &value), ncclSuccess);
  EXPECT_FALSE(lastError().empty());
}

// Every ncclXConfig with a config that sets every field Weft accepts: the results are exact.
TEST(NcclCollConfig, EveryCollectiveRunsWithAConfig) {
  nccl_test::runRanks(Mode::kThreads, 3, [](Rank& me) {
    ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
    config.minCTAs = 1;
    config.maxCTAs = 4;
    config.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY;
    config.userProfilerTag = 42;
    config.algSelection = "ring";
    config.forceAlgSelection = 0;  // a wish: Weft chooses
    const int n = me.nranks, r = me.rank;
    int32_t one = r + 1, sum = -1;
    NCCL_OK(ncclAllReduceConfig(&one, &sum, 1, ncclInt32, ncclSum, me.comm, nullptr, &config));
    EXPECT_EQ(sum, 6);
    NCCL_OK(ncclAllReduceConfig(&one, &sum, 1, ncclInt32, ncclMax, me.comm, nullptr, nullptr));
    EXPECT_EQ(sum, 3) << "a NULL config is the plain call";
    int32_t b = r == 2 ? 77 : -1;
    NCCL_OK(ncclBroadcastConfig(&b, &b, 1, ncclInt32, 2, me.comm, nullptr, &config));
    EXPECT_EQ(b, 77);
    int32_t red = -1;
    NCCL_OK(ncclReduceConfig(&one, &red, 1, ncclInt32, ncclProd, 0, me.comm, nullptr, &config));
    if (r == 0) {
      EXPECT_EQ(red, 6);
    }
    std::vector<int32_t> all(n, -1), blocks(n), mine(1, -1);
    NCCL_OK(ncclAllGatherConfig(&one, all.data(), 1, ncclInt32, me.comm, nullptr, &config));
    for (int p = 0; p < n; ++p) EXPECT_EQ(all[p], p + 1);
    for (int p = 0; p < n; ++p) blocks[p] = 10 * r + p;
    NCCL_OK(ncclReduceScatterConfig(blocks.data(), mine.data(), 1, ncclInt32, ncclSum, me.comm, nullptr, &config));
    EXPECT_EQ(mine[0], 30 + 3 * r);  // sum over q of 10q + r
    NCCL_OK(ncclAlltoAllConfig(blocks.data(), all.data(), 1, ncclInt32, me.comm, nullptr, &config));
    for (int p = 0; p < n; ++p) EXPECT_EQ(all[p], 10 * p + r);
    NCCL_OK(ncclGatherConfig(&one, all.data(), 1, ncclInt32, 1, me.comm, nullptr, &config));
    if (r == 1) {
      EXPECT_EQ(all[2], 3);
    }
    NCCL_OK(ncclScatterConfig(blocks.data(), mine.data(), 1, ncclInt32, 0, me.comm, nullptr, &config));
    EXPECT_EQ(mine[0], r) << "rank 0's block r is 10*0 + r";
  });
}

TEST(NcclCollConfig, BadConfigsAreRefusedBeforeAnythingRuns) {
  nccl_test::runRanks(Mode::kThreads, 1, [](Rank& me) {
    float x = 1.0f, y = -1.0f;
    auto run = [&](const ncclCollConfig_t& c) {
      return ncclAllReduceConfig(&x, &y, 1, ncclFloat, ncclSum, me.comm, nullptr, &c);
    };
    ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
    c.magic = 0;
    EXPECT_EQ(run(c), ncclInvalidArgument);
    EXPECT_TRUE(said("start from NCCL_COLLCONFIG_INITIALIZER")) << lastError();
    c = NCCL_COLLCONFIG_INITIALIZER;
    c.size = 8;
    EXPECT_EQ(run(c), ncclInvalidArgument);
    EXPECT_TRUE(said("config->size is 8")) << lastError();
    c = NCCL_COLLCONFIG_INITIALIZER;
    c.minCTAs = 0;
    EXPECT_EQ(run(c), ncclInvalidArgument);
    EXPECT_TRUE(said("it must be positive")) << lastError();
    c = NCCL_COLLCONFIG_INITIALIZER;
    c.minCTAs = 8;
    c.maxCTAs = 2;
    EXPECT_EQ(run(c), ncclInvalidArgument);
    EXPECT_TRUE(said("minCTAs (8) is larger than config->maxCTAs (2)")) << lastError();
    c = NCCL_COLLCONFIG_INITIALIZER;
    c.CTAPolicy = 0x10;
    EXPECT_EQ(run(c), ncclInvalidArgument);
    EXPECT_TRUE(said("config->CTAPolicy is 16")) << lastError();
    c = NCCL_COLLCONFIG_INITIALIZER;
    c.cgaClusterSize = 9;
    EXPECT_EQ(run(c), ncclInvalidArgument);
    c = NCCL_COLLCONFIG_INITIALIZER;
    c.forceAlgSelection = 2;
    EXPECT_EQ(run(c), ncclInvalidArgument);
    EXPECT_TRUE(said("forceAlgSelection is 2")) << lastError();
    c = NCCL_COLLCONFIG_INITIALIZER;
    c.algSelection = "tree";  // forced by the initialiser's forceAlgSelection = 1
    EXPECT_EQ(run(c), ncclInvalidUsage);
    EXPECT_TRUE(said("set forceAlgSelection = 0")) << lastError();
    c = NCCL_COLLCONFIG_INITIALIZER;
    c.launchCompletionEvent = reinterpret_cast<cudaEvent_t>(&x);
    EXPECT_EQ(run(c), ncclInvalidUsage);
    EXPECT_TRUE(said("cannot record CUDA events")) << lastError();
    EXPECT_EQ(y, -1.0f) << "nothing ran";

    // An older, shorter struct: what lies past its size is not read.
    c = NCCL_COLLCONFIG_INITIALIZER;
    c.size = offsetof(ncclCollConfig_t, algSelection);
    c.algSelection = "tree";
    c.forceAlgSelection = 1;
    NCCL_OK(run(c));
    EXPECT_EQ(y, 1.0f);
  });
}

// The fields of 2.29-2.31 are ignored, but values NCCL would refuse are refused.
TEST(NcclConfig232, NewFieldsAreCheckedAndIgnored) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.hostCftMode = 7;
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclInvalidArgument);
  EXPECT_TRUE(said("config->hostCftMode is 7")) << lastError();
  config = NCCL_CONFIG_INITIALIZER;
  config.nvlsHostMode = 4;
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclInvalidArgument);
  EXPECT_TRUE(said("config->nvlsHostMode is 0x4")) << lastError();
  config = NCCL_CONFIG_INITIALIZER;
  config.hostCftMode = ncclHostCftDisable;
  config.nvlsHostMode = ncclNvlsHostModeDisableTransport | ncclNvlsHostModeDisableSymmetricMultimem;
  config.graphUsageMode = 1;
  config.maxP2pPeers = 4;
  ASSERT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclSuccess) << lastError();
  int count = 0;
  EXPECT_EQ(ncclCommCount(comm, &count), ncclSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// A caller built against 2.28's header passes 80 bytes and version 22809: what follows (here
// bytes that would be invalid as hostCftMode / nvlsHostMode) is not read.
TEST(NcclConfig232, ACallerOf228PassesTheShorterStruct) {
  std::vector<unsigned char> bytes(sizeof(ncclConfig_t), 0xff);
  ncclConfig_t init = NCCL_CONFIG_INITIALIZER;
  std::memcpy(bytes.data(), &init, offsetof(ncclConfig_t, graphUsageMode));
  auto* config = reinterpret_cast<ncclConfig_t*>(bytes.data());
  config->size = offsetof(ncclConfig_t, graphUsageMode);
  config->version = NCCL_VERSION(2, 28, 9);
  ASSERT_EQ(config->size, 80u);
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, config), ncclSuccess) << lastError();
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  config->size = sizeof(ncclConfig_t);  // the same bytes read as 2.32's struct: refused
  config->version = NCCL_VERSION_CODE;
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, config), ncclInvalidArgument);
  EXPECT_TRUE(said("config->hostCftMode is -1")) << lastError();
}

TEST(NcclEncryption, PlaintextIsAcceptedAKeyIsNot) {
  ncclEncryptionConfig_t config = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  EXPECT_EQ(ncclSetEncryption(&config), ncclSuccess) << lastError();
  EXPECT_EQ(ncclSetEncryption(nullptr), ncclInvalidArgument);
  EXPECT_TRUE(said("ncclSetEncryption: config is NULL")) << lastError();
  config.magic = 1;
  EXPECT_EQ(ncclSetEncryption(&config), ncclInvalidArgument);
  EXPECT_TRUE(said("NCCL_ENCRYPTION_CONFIG_INITIALIZER")) << lastError();
  config = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  config.mode = 5;
  EXPECT_EQ(ncclSetEncryption(&config), ncclInvalidArgument);
  EXPECT_TRUE(said("config->mode is 5")) << lastError();
  config.mode = NCCL_ENCRYPTION_MODE_PSK;
  config.psk = "secret";
  EXPECT_EQ(ncclSetEncryption(&config), ncclInvalidUsage);
  EXPECT_TRUE(said("do not encrypt")) << lastError();
}

}  // namespace
