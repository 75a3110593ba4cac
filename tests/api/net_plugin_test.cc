// A two-rank collective through an external network plugin (include/weft/net_v1.h): the
// loopback plugin built beside the tests, named by WEFT_NET_PLUGIN, carries every byte between
// the ranks (WEFT_SHM_DISABLE=1 puts them on the network path). A broken plugin fails the
// first collective (which connects) with the loader's sentence instead of falling back silently.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "weft/weft.h"

namespace {

using weft_test::Mode;
using weft_test::Rank;
using weft_test::runRanks;

std::string pluginPath(const char* variant) {
  return std::string(WEFT_TEST_NET_PLUGIN_DIR) + "/libweft_test_net_" + variant + ".so";
}

class NetPluginApi : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    setenv("WEFT_SHM_DISABLE", "1", 1);
    setenv("WEFT_NET_PLUGIN", pluginPath("loopback").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("WEFT_SHM_DISABLE");
    unsetenv("WEFT_NET_PLUGIN");
  }
};

// Messages the loopback plugin has sent in this process (0 when it is not loaded here).
uint64_t loopbackMessages() {
  void* lib = dlopen(pluginPath("loopback").c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return 0;
  auto count = reinterpret_cast<uint64_t (*)()>(dlsym(lib, "weftTestLoopbackMessagesSent"));
  uint64_t n = count ? count() : 0;
  dlclose(lib);
  return n;
}

TEST_P(NetPluginApi, AllReduceAndBroadcastOverTwoRanksAreExact) {
  const uint64_t before = loopbackMessages();
  runRanks(GetParam(), 2, [&](Rank& r) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{300000}}) {
      std::vector<int32_t> send(count), recv(count, -1);
      for (size_t i = 0; i < count; ++i) send[i] = static_cast<int32_t>(i % 1000) + 1000 * r.rank;
      ASSERT_EQ(weftAllReduce(send.data(), recv.data(), count, weftInt32, weftSum, r.comm, nullptr), weftSuccess)
          << weftGetLastError(r.comm);
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(recv[i], static_cast<int32_t>(2 * (i % 1000) + 1000)) << "rank " << r.rank << " index " << i;
      }
      std::vector<int32_t> b(count, 0);
      for (size_t i = 0; i < count && r.rank == 1; ++i) b[i] = static_cast<int32_t>(i * 3 + 1);
      ASSERT_EQ(weftBroadcast(b.data(), b.data(), count, weftInt32, 1, r.comm, nullptr), weftSuccess)
          << weftGetLastError(r.comm);
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(b[i], static_cast<int32_t>(i * 3 + 1)) << "rank " << r.rank;
    }
  });
  // Ranks as threads share this process: the plugin it loaded carried the traffic.
  if (GetParam() == Mode::kThreads) {
    EXPECT_GT(loopbackMessages(), before);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, NetPluginApi, ::testing::Values(Mode::kThreads, Mode::kProcesses),
                         [](const ::testing::TestParamInfo<Mode>& p) {
                           return std::string(weft_test::modeName(p.param));
                         });

TEST(NetPluginApiErrors, ABrokenPluginFailsTheFirstCollectiveWithTheLoadersSentence) {
  setenv("WEFT_SHM_DISABLE", "1", 1);
  setenv("WEFT_NET_PLUGIN", pluginPath("short_table").c_str(), 1);
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  weftResult_t result[2];
  std::string message[2];
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      weftComm_t comm = nullptr;
      result[r] = weftCommInitRank(&comm, 2, id, r);
      if (result[r] == weftSuccess) {
        // Connections are made by the first operation that needs them.
        int32_t v = r;
        result[r] = weftAllReduce(&v, &v, 1, weftInt32, weftSum, comm, nullptr);
      }
      message[r] = weftGetLastError(comm);
      if (comm) weftCommDestroy(comm);
    });
  }
  for (auto& t : ranks) t.join();
  unsetenv("WEFT_SHM_DISABLE");
  unsetenv("WEFT_NET_PLUGIN");
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(result[r], weftSuccess) << "rank " << r;
    EXPECT_NE(message[r].find("rebuild the plugin against this Weft's net_v1.h"), std::string::npos)
        << "rank " << r << ": " << message[r];
  }
}

}  // namespace
