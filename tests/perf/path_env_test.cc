// The environment weft-perf sets (perf/path_env.h): --weft-net's variables, and NCCL's setup when
// ranks share a GPU, for every branch (no GPU shared, threads, NCCL 2.30+, older NCCL) with and
// without the user's own values. Pure functions: no GPU, no NCCL.
#include "perf/path_env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace weft::perf {
namespace {

using Vars = std::vector<std::pair<std::string, std::string>>;

// Whether some note contains every one of needles.
bool hasNote(const EnvPlan& p, std::initializer_list<const char*> needles) {
  for (const std::string& n : p.notes) {
    bool all = true;
    for (const char* needle : needles) all = all && n.find(needle) != std::string::npos;
    if (all) return true;
  }
  return false;
}

NcclShareQuery sharedProcesses(int version) {
  NcclShareQuery q;
  q.gpuShared = true;
  q.ncclVersion = version;
  q.rank = 3;
  return q;
}

TEST(PerfPathEnv, WeftNetSetsTheNetworkPath) {
  const EnvPlan p = planWeftNet({});
  EXPECT_EQ(
      p.set,
      (Vars{
          {"WEFT_P2P_DISABLE", "1"}, {"WEFT_SHM_DISABLE", "1"}, {"WEFT_SOCKET_IFNAME", "lo"}, {"WEFT_NET", "socket"}}));
  EXPECT_EQ(p.path, "network path (WEFT_P2P_DISABLE=1 WEFT_SHM_DISABLE=1): socket transport over lo");
  EXPECT_TRUE(p.skip.empty());
  EXPECT_TRUE(p.notes.empty());
}

// The interface and the transport the user chose stay; the two switches are the flag's point.
TEST(PerfPathEnv, WeftNetKeepsTheUsersInterfaceAndTransport) {
  const EnvPlan p = planWeftNet(
      {{"WEFT_SOCKET_IFNAME", "eth0"}, {"WEFT_NET", "ofi"}, {"WEFT_SHM_DISABLE", "0"}, {"WEFT_P2P_DISABLE", "1"}});
  EXPECT_EQ(p.set, (Vars{{"WEFT_P2P_DISABLE", "1"}, {"WEFT_SHM_DISABLE", "1"}}));
  EXPECT_EQ(p.path, "network path (WEFT_P2P_DISABLE=1 WEFT_SHM_DISABLE=1): WEFT_NET=ofi over eth0");
  ASSERT_EQ(p.notes.size(), 3u);
  EXPECT_TRUE(hasNote(p, {"WEFT_SHM_DISABLE=0", "--weft-net sets 1"}));
  EXPECT_TRUE(hasNote(p, {"WEFT_SOCKET_IFNAME=eth0 kept from the environment"}));
  EXPECT_TRUE(hasNote(p, {"WEFT_NET=ofi kept from the environment"}));
  EXPECT_FALSE(hasNote(p, {"WEFT_P2P_DISABLE"})) << "its value already was 1";
}

// No GPU serves two ranks: NCCL runs as it always did, whatever the version or the launch.
TEST(PerfPathEnv, NcclWithAGpuPerRankSetsNothing) {
  for (const bool threads : {false, true}) {
    for (const int version : {22304, 23000}) {
      NcclShareQuery q;
      q.ranksAreThreads = threads;
      q.ncclVersion = version;
      const EnvPlan p = planNcclSharing(q);
      EXPECT_TRUE(p.set.empty());
      EXPECT_TRUE(p.skip.empty());
      EXPECT_TRUE(p.path.empty());
      EXPECT_TRUE(p.notes.empty());
    }
  }
  // With --weft-net the two libraries take different paths: a note says so.
  NcclShareQuery q;
  q.weftNet = true;
  const EnvPlan p = planNcclSharing(q);
  EXPECT_TRUE(p.set.empty());
  EXPECT_TRUE(p.skip.empty());
  EXPECT_TRUE(hasNote(p, {"different paths", "--weft-net"}));
}

// Threads of one process cannot have a NCCL_HOSTID each: skipped, saying what to do instead.
TEST(PerfPathEnv, NcclOnASharedGpuSkipsRanksThatAreThreads) {
  for (const int version : {21805, 22304, 23000, 23101}) {
    NcclShareQuery q = sharedProcesses(version);
    q.ranksAreThreads = true;
    const EnvPlan p = planNcclSharing(q);
    EXPECT_TRUE(p.set.empty()) << version;
    EXPECT_TRUE(p.path.empty());
    EXPECT_NE(p.skip.find("threads"), std::string::npos) << p.skip;
    EXPECT_NE(p.skip.find("NCCL_HOSTID"), std::string::npos) << p.skip;
    EXPECT_NE(p.skip.find("run the ranks as processes"), std::string::npos) << p.skip;
  }
}

// NCCL 2.30 and later: one switch, and NCCL keeps the ranks on its intra-node transports.
TEST(PerfPathEnv, NcclFrom230EnablesSeveralRanksPerGpu) {
  const EnvPlan p = planNcclSharing(sharedProcesses(23000));
  EXPECT_EQ(p.set, (Vars{{"NCCL_MULTI_RANK_GPU_ENABLE", "1"}}));
  EXPECT_TRUE(p.skip.empty());
  EXPECT_EQ(p.path, "several ranks per GPU (NCCL_MULTI_RANK_GPU_ENABLE=1), on NCCL's intra-node transports");
  EXPECT_TRUE(p.notes.empty());
  // --weft-net would set Weft's network path against NCCL's intra-node one: a note says so.
  NcclShareQuery q = sharedProcesses(23102);
  q.weftNet = true;
  EXPECT_TRUE(hasNote(planNcclSharing(q), {"different paths", "drop --weft-net"}));
}

TEST(PerfPathEnv, NcclFrom230KeepsTheUsersSwitch) {
  NcclShareQuery q = sharedProcesses(23000);
  q.user = {{"NCCL_MULTI_RANK_GPU_ENABLE", "1"}};
  EnvPlan p = planNcclSharing(q);
  EXPECT_TRUE(p.set.empty());
  EXPECT_TRUE(hasNote(p, {"NCCL_MULTI_RANK_GPU_ENABLE=1 kept from the environment"}));
  EXPECT_FALSE(hasNote(p, {"refuses"}));
  // Kept even when it says no, and the note tells what will happen.
  q.user = {{"NCCL_MULTI_RANK_GPU_ENABLE", "0"}};
  p = planNcclSharing(q);
  EXPECT_TRUE(p.set.empty());
  EXPECT_NE(p.path.find("NCCL_MULTI_RANK_GPU_ENABLE=0"), std::string::npos) << p.path;
  EXPECT_TRUE(hasNote(p, {"NCCL_MULTI_RANK_GPU_ENABLE=0 kept", "refuses ranks that share a GPU unless it is 1"}));
}

// Before 2.30: a host id per process, NCCL's socket transport over lo, and the advice to put Weft
// on its network path too.
TEST(PerfPathEnv, NcclBefore230MakesEveryProcessAHost) {
  const EnvPlan p = planNcclSharing(sharedProcesses(22999));
  EXPECT_EQ(p.set, (Vars{{"NCCL_HOSTID", "weft-perf-rank-3"}, {"NCCL_SOCKET_IFNAME", "lo"}, {"NCCL_NET", "Socket"}}));
  EXPECT_TRUE(p.skip.empty());
  EXPECT_EQ(p.path, "socket transport over lo (NCCL_HOSTID per rank)");
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_TRUE(hasNote(p, {"add --weft-net", "like-with-like"}));
  // Each rank its own id.
  NcclShareQuery q = sharedProcesses(22304);
  q.rank = 0;
  EXPECT_EQ(planNcclSharing(q).set[0], (std::pair<std::string, std::string>{"NCCL_HOSTID", "weft-perf-rank-0"}));
  // With --weft-net given, nothing to advise.
  q.weftNet = true;
  EXPECT_TRUE(planNcclSharing(q).notes.empty());
}

TEST(PerfPathEnv, NcclBefore230KeepsTheUsersVariables) {
  NcclShareQuery q = sharedProcesses(22304);
  q.weftNet = true;
  q.user = {{"NCCL_HOSTID", "mine"}, {"NCCL_SOCKET_IFNAME", "eth0"}, {"NCCL_NET", "IB"}};
  const EnvPlan p = planNcclSharing(q);
  EXPECT_TRUE(p.set.empty());
  EXPECT_EQ(p.path, "NCCL_NET=IB transport over eth0 (NCCL_HOSTID from the environment)");
  EXPECT_TRUE(hasNote(p, {"NCCL_HOSTID=mine kept from the environment", "Duplicate GPU detected"}));
  EXPECT_TRUE(hasNote(p, {"NCCL_SOCKET_IFNAME=eth0 kept from the environment"}));
  EXPECT_TRUE(hasNote(p, {"NCCL_NET=IB kept from the environment"}));
  // NCCL_NET matches NCCL's names without regard to case.
  q.user = {{"NCCL_NET", "socket"}};
  EXPECT_EQ(planNcclSharing(q).path, "socket transport over lo (NCCL_HOSTID per rank)");
}

// Across hosts lo reaches no other rank: NCCL picks its interface, unless the user named one.
TEST(PerfPathEnv, NcclBefore230AcrossHostsLeavesTheInterfaceToNccl) {
  NcclShareQuery q = sharedProcesses(22304);
  q.nHosts = 2;
  q.weftNet = true;
  EnvPlan p = planNcclSharing(q);
  EXPECT_EQ(p.set, (Vars{{"NCCL_HOSTID", "weft-perf-rank-3"}, {"NCCL_NET", "Socket"}}));
  EXPECT_EQ(p.path, "socket transport over NCCL's default interface (NCCL_HOSTID per rank)");
  EXPECT_TRUE(hasNote(p, {"NCCL_SOCKET_IFNAME left unset", "2 hosts"}));
  q.user = {{"NCCL_SOCKET_IFNAME", "ib0"}};
  p = planNcclSharing(q);
  EXPECT_EQ(p.path, "socket transport over ib0 (NCCL_HOSTID per rank)");
  EXPECT_FALSE(hasNote(p, {"left unset"}));
}

// The environment helpers: empty values count as unset; applyEnv overwrites.
TEST(PerfPathEnv, ReadsAndWritesTheEnvironment) {
  setenv("PERF_PATH_ENV_TEST_A", "x", 1);
  setenv("PERF_PATH_ENV_TEST_B", "", 1);
  unsetenv("PERF_PATH_ENV_TEST_C");
  EXPECT_EQ(currentEnv({"PERF_PATH_ENV_TEST_A", "PERF_PATH_ENV_TEST_B", "PERF_PATH_ENV_TEST_C"}),
            (EnvSnapshot{{"PERF_PATH_ENV_TEST_A", "x"}}));
  EnvPlan p;
  p.set = {{"PERF_PATH_ENV_TEST_A", "y"}, {"PERF_PATH_ENV_TEST_C", "z"}};
  applyEnv(p);
  EXPECT_STREQ(std::getenv("PERF_PATH_ENV_TEST_A"), "y");
  EXPECT_STREQ(std::getenv("PERF_PATH_ENV_TEST_C"), "z");
  for (const char* n : {"PERF_PATH_ENV_TEST_A", "PERF_PATH_ENV_TEST_B", "PERF_PATH_ENV_TEST_C"}) unsetenv(n);
  EXPECT_EQ(weftNetVariables().size(), 4u);
  EXPECT_EQ(ncclShareVariables().size(), 4u);
}

}  // namespace
}  // namespace weft::perf
