// The communicator's tuner (src/core/comm_topology.h buildCommTuner, topology/tuner.h): every
// rank computes the same table from inputs that reach it in different orders, the table a
// communicator uses is the one weft-topo shows (tunerForMachine), and rank 0 logs it under
// TUNING at INFO.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/log.h"
#include "core/api_internal.h"
#include "core/comm.h"
#include "core/comm_topology.h"
#include "topology/machines.h"
#include "topology/topo_file.h"
#include "weft/weft.h"

namespace {

using weft::topo::GlobalSystem;
using weft::topo::NodeType;
using weft::topo::RankDescription;
using weft::topo::System;
using weft::topo::Tuner;
using weft::topo::TunerModel;

constexpr uint64_t kHosts[] = {0xa1, 0xb2, 0xc3};

// The same machine with its top-level CPU blocks (and everything under them) in reverse order:
// another node numbering, the same hardware. Written in the dialect that keeps its GPU links
// (NCCL's NVLinks, RCCL's xGMI).
System reordered(const System& sys) {
  const bool xgmi = std::any_of(sys.links.begin(), sys.links.end(),
                                [](const weft::topo::Link& l) { return l.type == weft::topo::LinkType::kXgmi; });
  std::istringstream in(weft::topo::writeTopologyXml(sys, xgmi ? 2 : 1));
  std::vector<std::string> head, tail;
  std::vector<std::string> blocks;
  bool inCpu = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  <cpu ", 0) == 0) {
      blocks.emplace_back();
      inCpu = true;
    }
    if (inCpu) {
      blocks.back() += line + "\n";
    } else {
      (blocks.empty() ? head : tail).push_back(line);
    }
    if (line.rfind("  </cpu>", 0) == 0) inCpu = false;
  }
  std::string xml;
  for (const std::string& l : head) xml += l + "\n";
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) xml += *b;
  for (const std::string& l : tail) xml += l + "\n";
  System out;
  weft::Status s = weft::topo::parseTopologyXml(xml, "reordered.xml", &out);
  EXPECT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(out.nodesOfType(NodeType::kGpu).size(), sys.nodesOfType(NodeType::kGpu).size());
  EXPECT_EQ(out.links.size(), sys.links.size());
  return out;
}

// `perHost` ranks on each of `hosts` hosts of `sys`, rank i of a host on the host's GPU i (bus
// id order of the original model), or host ranks.
std::vector<RankDescription> describe(const System& sys, int hosts, int perHost, bool gpus) {
  const std::vector<int> gpuNodes = sys.nodesOfType(NodeType::kGpu);
  std::vector<RankDescription> descs;
  for (int h = 0; h < hosts; ++h) {
    for (int i = 0; i < perHost; ++i) {
      weft::topo::RankIdentity id;
      id.rank = static_cast<int>(descs.size());
      id.hostHash = kHosts[h];
      if (gpus) {
        id.device = i;
        id.gpuBusId = sys.nodes[static_cast<size_t>(gpuNodes[static_cast<size_t>(i)])].pci.busId;
      }
      descs.push_back(weft::topo::describeRank(sys, id));
    }
  }
  return descs;
}

// Every rank builds the tuner as buildCommTopology does: its own host's model (`models`, by
// host, alternating between the two orders per rank), its own host as the local one.
std::vector<Tuner> everyRanksTuner(const std::vector<RankDescription>& descs, const System& model,
                                   const weft::topo::TunerSettings& settings) {
  const System other = reordered(model);
  std::vector<Tuner> tuners;
  for (size_t r = 0; r < descs.size(); ++r) {
    const System& local = r % 2 == 0 ? model : other;
    GlobalSystem g;
    weft::Status s = weft::topo::buildGlobalSystem(descs, descs[r].hostHash, &local, &g);
    EXPECT_TRUE(s.isOk()) << s.message();
    tuners.emplace_back();
    s = weft::core::buildCommTuner(descs, g, settings, &tuners.back());
    EXPECT_TRUE(s.isOk()) << s.message();
  }
  return tuners;
}

void expectSameTables(const std::vector<Tuner>& tuners, TunerModel model) {
  ASSERT_FALSE(tuners.empty());
  EXPECT_EQ(tuners[0].model(), model) << tuners[0].why();
  for (size_t r = 1; r < tuners.size(); ++r) {
    EXPECT_TRUE(tuners[r].sameTable(tuners[0])) << "rank " << r << " differs from rank 0";
    EXPECT_EQ(tuners[r].why(), tuners[0].why()) << "rank " << r;
  }
}

TEST(CommTuner, EveryRankBuildsTheSameTable) {
  weft::topo::TunerSettings settings;
  settings.maxChannels = 16;
  // One host, 8 GPUs (NVSwitch, xGMI, PCIe): each rank's local model numbers the nodes its way.
  for (const System& sys : {weft::topo::machines::dgxH100(), weft::topo::machines::mi300x()}) {
    expectSameTables(everyRanksTuner(describe(sys, 1, 8, true), sys, settings), TunerModel::kDevice);
  }
  const System pcie = weft::topo::machines::pcie4Gpu();
  expectSameTables(everyRanksTuner(describe(pcie, 1, 4, true), pcie, settings), TunerModel::kDevice);
  // Three hosts: each builder's own host is its full model, the others described.
  const System dgx = weft::topo::machines::dgxH100();
  expectSameTables(everyRanksTuner(describe(dgx, 3, 8, true), dgx, settings), TunerModel::kDevice);
  // Host ranks, one host and two.
  expectSameTables(everyRanksTuner(describe(pcie, 1, 4, false), pcie, settings), TunerModel::kHost);
  expectSameTables(everyRanksTuner(describe(pcie, 2, 3, false), pcie, settings), TunerModel::kSizeRule);
}

// The rank order of the descriptions is the communicator's and the same everywhere; what may
// differ is which host builds. A table built by a process of the last host equals rank 0's.
TEST(CommTuner, TheBuildersHostDoesNotMatter) {
  const System dgx = weft::topo::machines::dgxH100();
  const std::vector<RankDescription> descs = describe(dgx, 2, 8, true);
  Tuner first, last;
  GlobalSystem a, b;
  ASSERT_TRUE(weft::topo::buildGlobalSystem(descs, kHosts[0], &dgx, &a).isOk());
  ASSERT_TRUE(weft::topo::buildGlobalSystem(descs, kHosts[1], nullptr, &b).isOk());
  ASSERT_TRUE(weft::core::buildCommTuner(descs, a, weft::topo::TunerSettings(), &first).isOk());
  ASSERT_TRUE(weft::core::buildCommTuner(descs, b, weft::topo::TunerSettings(), &last).isOk());
  EXPECT_TRUE(first.sameTable(last));
}

struct EnvGuard {
  ~EnvGuard() {
    for (const char* v :
         {"WEFT_ALGO", "WEFT_TREE_MAX_BYTES", "WEFT_DEBUG_SUBSYS", "WEFT_TOPO_FILE", "WEFT_EMULATED_DEVICES"}) {
      unsetenv(v);
    }
    setenv("WEFT_DEBUG", "WARN", 1);
    weft::reloadLogSettings();
  }
};

struct Comms {
  explicit Comms(int n) : comms(static_cast<size_t>(n)) {
    result = weftCommInitAll(comms.data(), n, nullptr);
    if (result != weftSuccess) comms.clear();
  }
  ~Comms() {
    for (auto c : comms) weftCommDestroy(c);
  }
  const Tuner& tuner(int r) const { return comms[static_cast<size_t>(r)]->impl->topology()->tuner; }
  std::vector<weftComm_t> comms;
  weftResult_t result;
};

int countOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Rank 0 logs the table once, in the lines weft-topo prints. The ranks of this test binary
// share the emulated GPU (no device model: the size rule); host-memory calls get the host model.
TEST(CommTuner, CommunicatorLogsItsTableOnce) {
  EnvGuard guard;
  setenv("WEFT_DEBUG", "INFO", 1);
  setenv("WEFT_DEBUG_SUBSYS", "TUNING", 1);
  weft::reloadLogSettings();
  testing::internal::CaptureStderr();
  std::vector<std::string> expected;
  {
    Comms c(3);
    ASSERT_EQ(c.result, weftSuccess) << weftGetLastError(nullptr);
    EXPECT_EQ(c.tuner(0).hostWhy(), "host cost model, 3 ranks on 1 host") << c.tuner(0).why();
    expected = weft::core::tunerTableLines(c.tuner(0));
  }
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_GT(expected.size(), 2u);
  EXPECT_NE(std::find(expected.begin(), expected.end(), "host-memory calls: host cost model, 3 ranks on 1 host"),
            expected.end());
  for (const std::string& line : expected) EXPECT_EQ(countOf(log, "tuner: " + line + "\n"), 1) << line << "\n" << log;
}

// WEFT_ALGO forces the algorithm of every collective that has it; WEFT_TREE_MAX_BYTES selects
// the size rule.
TEST(CommTuner, OverridesReachTheCommunicator) {
  EnvGuard guard;
  setenv("WEFT_ALGO", "tree", 1);
  {
    Comms c(4);
    ASSERT_EQ(c.result, weftSuccess) << weftGetLastError(nullptr);
    EXPECT_FALSE(c.tuner(0).hostWhy().empty());
    for (int64_t bytes : {int64_t{8}, int64_t{1} << 30}) {
      for (bool host : {false, true}) {
        EXPECT_EQ(c.tuner(0).choose(weft::coll::CollKind::kAllReduce, bytes, host).algo, weft::coll::Algo::kTree);
        EXPECT_EQ(c.tuner(0).choose(weft::coll::CollKind::kBroadcast, bytes, host).algo, weft::coll::Algo::kTree);
        EXPECT_EQ(c.tuner(0).choose(weft::coll::CollKind::kAllGather, bytes, host).algo, weft::coll::Algo::kRing);
      }
    }
  }
  unsetenv("WEFT_ALGO");
  setenv("WEFT_TREE_MAX_BYTES", "65536", 1);
  Comms c(4);
  ASSERT_EQ(c.result, weftSuccess) << weftGetLastError(nullptr);
  EXPECT_EQ(c.tuner(0).model(), TunerModel::kSizeRule);
  EXPECT_EQ(c.tuner(0).hostWhy(), "");
  EXPECT_EQ(c.tuner(0).choose(weft::coll::CollKind::kAllReduce, 65536, true).algo, weft::coll::Algo::kTree);
  EXPECT_EQ(c.tuner(0).choose(weft::coll::CollKind::kAllReduce, 3 << 20, true).channels, 3);
}

// The table weft-topo shows for N ranks on a machine is the one a communicator of N ranks on it
// builds: four emulated GPUs posing as a PCIe server's (WEFT_TOPO_FILE) ...
TEST(CommTuner, WeftTopoShowsTheCommunicatorsTable) {
  EnvGuard guard;
  System pcie = weft::topo::machines::pcie4Gpu();
  const std::vector<int> gpus = pcie.nodesOfType(NodeType::kGpu);
  for (size_t i = 0; i < gpus.size(); ++i) {
    char bus[32];
    std::snprintf(bus, sizeof(bus), "0000:%02zx:00.0", i);
    pcie.nodes[static_cast<size_t>(gpus[i])].pci.busId = bus;
  }
  const std::string path = std::string(::testing::TempDir()) + "/weft_tuner_" + std::to_string(getpid()) + ".xml";
  std::ofstream(path) << weft::topo::writeTopologyXml(pcie, 1);
  setenv("WEFT_EMULATED_DEVICES", "4", 1);
  setenv("WEFT_TOPO_FILE", path.c_str(), 1);
  {
    std::shared_ptr<const System> local;
    ASSERT_TRUE(weft::core::localTopology(0, &local).isOk());
    Tuner shown;
    ASSERT_TRUE(weft::core::tunerForMachine(*local, 1, 4, weft::core::tunerSettingsFromParams(), &shown).isOk());
    Comms c(4);
    ASSERT_EQ(c.result, weftSuccess) << weftGetLastError(nullptr);
    EXPECT_EQ(c.tuner(0).model(), TunerModel::kDevice) << c.tuner(0).why();
    EXPECT_TRUE(c.tuner(0).sameTable(shown)) << c.tuner(0).why() << " / " << shown.why();
  }
  unsetenv("WEFT_TOPO_FILE");
  unsetenv("WEFT_EMULATED_DEVICES");
  std::remove(path.c_str());
  // ... and host ranks on this machine: the host-memory table of a communicator of 4.
  std::shared_ptr<const System> local;
  ASSERT_TRUE(weft::core::localTopology(0, &local).isOk());
  Tuner shown;
  ASSERT_TRUE(weft::core::tunerForMachine(*local, 1, 4, weft::core::tunerSettingsFromParams(), &shown).isOk());
  Comms c(4);
  ASSERT_EQ(c.result, weftSuccess) << weftGetLastError(nullptr);
  ASSERT_EQ(shown.model(), TunerModel::kHost) << shown.why();
  for (weft::coll::CollKind kind : weft::topo::tunedCollectives()) {
    EXPECT_EQ(c.tuner(0).describe(kind, true), shown.describe(kind)) << weft::coll::collName(kind);
  }
  Tuner none;
  EXPECT_EQ(weft::core::tunerForMachine(*local, 1, 0, weft::core::tunerSettingsFromParams(), &none).code(),
            weftInvalidArgument);
}

}  // namespace
