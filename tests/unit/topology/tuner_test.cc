#include "topology/tuner.h"

#include <gtest/gtest.h>

#include <limits>
#include <utility>
#include <vector>

#include "collectives/traffic.h"
#include "topology/global_system.h"
#include "topology/machines.h"

namespace weft {
namespace topo {
namespace {

coll::Algo pick(int nRanks, int64_t bytes, const std::string& forced = "",
                coll::CollKind kind = coll::CollKind::kAllReduce, int nNodes = 1) {
  TunerInput in;
  in.kind = kind;
  in.nRanks = nRanks;
  in.bytes = bytes;
  in.forcedAlgo = forced;
  in.treeMaxBytes = 65536;
  in.doublingMaxBytes = 8192;
  in.nNodes = nNodes;
  coll::Algo out = coll::Algo::kPairwise;
  Status s = chooseRuleAlgo(in, &out);
  EXPECT_TRUE(s.isOk()) << s.message();
  return out;
}

TEST(Tuner, SizeRulePicksDoublingThenTreeThenRing) {
  EXPECT_EQ(pick(8, 8), coll::Algo::kRecursiveDoubling);
  EXPECT_EQ(pick(8, 8192), coll::Algo::kRecursiveDoubling);
  EXPECT_EQ(pick(8, 8193), coll::Algo::kTree);
  EXPECT_EQ(pick(8, 65536), coll::Algo::kTree);
  EXPECT_EQ(pick(8, 65537), coll::Algo::kRing);
  // Two ranks: the tree gains nothing over the ring.
  EXPECT_EQ(pick(2, 16384), coll::Algo::kRing);
  EXPECT_EQ(pick(2, 64), coll::Algo::kRecursiveDoubling);
  // The tree's limit is per host.
  EXPECT_EQ(pick(8, 65537, "", coll::CollKind::kAllReduce, 2), coll::Algo::kTree);
  EXPECT_EQ(pick(8, 131073, "", coll::CollKind::kAllReduce, 2), coll::Algo::kRing);
}

// The same bands serve every collective, from each algorithm's row (coll::AlgoTraits::ruleBand):
// broadcast and reduce have no doubling, so the tree from the first byte; the rest only their
// default.
TEST(Tuner, SizeRuleBandsServeEveryCollective) {
  for (coll::CollKind kind : {coll::CollKind::kBroadcast, coll::CollKind::kReduce}) {
    EXPECT_EQ(pick(8, 8, "", kind), coll::Algo::kTree);
    EXPECT_EQ(pick(8, 65536, "", kind), coll::Algo::kTree);
    EXPECT_EQ(pick(8, 65537, "", kind), coll::Algo::kRing);
    EXPECT_EQ(pick(2, 8, "", kind), coll::Algo::kRing);
    EXPECT_EQ(pick(8, 131072, "", kind, 2), coll::Algo::kTree);
  }
  EXPECT_EQ(pick(8, 8, "", coll::CollKind::kAllGather), coll::Algo::kRing);
  EXPECT_EQ(pick(8, 8, "", coll::CollKind::kReduceScatter), coll::Algo::kRing);
  EXPECT_EQ(pick(8, 8, "", coll::CollKind::kAllToAll), coll::Algo::kPairwise);
}

TEST(Tuner, ForcedAlgorithmWinsAndIsCaseInsensitive) {
  EXPECT_EQ(pick(8, 1 << 30, "Tree"), coll::Algo::kTree);
  EXPECT_EQ(pick(8, 8, "RING"), coll::Algo::kRing);
  EXPECT_EQ(pick(8, 1 << 30, "doubling"), coll::Algo::kRecursiveDoubling);
}

// WEFT_ALGO forces the algorithm in each collective that has a schedule of it, as NCCL_ALGO
// does; the others keep the rule's choice.
TEST(Tuner, ForcedAlgorithmAppliesToEveryCollectiveThatHasIt) {
  EXPECT_EQ(pick(8, 8, "ring", coll::CollKind::kBroadcast), coll::Algo::kRing);
  EXPECT_EQ(pick(8, 1 << 30, "tree", coll::CollKind::kReduce), coll::Algo::kTree);
  EXPECT_EQ(pick(8, 8, "doubling", coll::CollKind::kBroadcast), coll::Algo::kTree);
  EXPECT_EQ(pick(8, 8, "tree", coll::CollKind::kAllGather), coll::Algo::kRing);
  EXPECT_EQ(pick(8, 8, "pairwise", coll::CollKind::kAllReduce), coll::Algo::kRecursiveDoubling);
  EXPECT_EQ(pick(8, 8, "pairwise", coll::CollKind::kAllToAll), coll::Algo::kPairwise);
}

TEST(Tuner, UnknownForcedAlgorithmIsAnErrorNamingTheChoices) {
  TunerInput in;
  in.forcedAlgo = "NVLS";
  coll::Algo out;
  Status s = chooseRuleAlgo(in, &out);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("WEFT_ALGO=NVLS names no algorithm"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("ring, tree, pairwise or doubling"), std::string::npos) << s.message();
}

// ---- The model-driven tuner ----

using coll::Algo;
using coll::CollKind;

constexpr uint64_t kHostA = 0x1111;
constexpr uint64_t kHostB = 0x2222;

// `perHost` ranks on each of `hosts` copies of `sys`, rank i of a host on its GPU i (or a host
// rank when gpus is false), built as rank 0 builds it (its host the full model).
GlobalSystem communicator(const System& sys, int hosts, int perHost, bool gpus) {
  const std::vector<int> gpuNodes = sys.nodesOfType(NodeType::kGpu);
  std::vector<RankDescription> descs;
  for (int h = 0; h < hosts; ++h) {
    for (int i = 0; i < perHost; ++i) {
      RankIdentity id;
      id.rank = static_cast<int>(descs.size());
      id.hostHash = h == 0 ? kHostA : kHostB + static_cast<uint64_t>(h);
      if (gpus) {
        id.device = i;
        id.gpuBusId = sys.nodes[static_cast<size_t>(gpuNodes[static_cast<size_t>(i)])].pci.busId;
      }
      descs.push_back(describeRank(sys, id));
    }
  }
  GlobalSystem g;
  Status s = buildGlobalSystem(descs, kHostA, &sys, &g);
  EXPECT_TRUE(s.isOk()) << s.message();
  return g;
}

Tuner build(const GlobalSystem* g, int nRanks, const TunerSettings& settings = TunerSettings()) {
  Tuner t;
  coll::ScheduleWorkSource work;  // the host model's work, from the schedules (as src/core passes it)
  Status s = Tuner::build(g, nRanks, settings, &work, &t);
  EXPECT_TRUE(s.isOk()) << s.message();
  return t;
}

TEST(Tuner, SizeClassesArePowersOfTwo) {
  EXPECT_EQ(tunerSizeClass(0), 0);
  EXPECT_EQ(tunerSizeClass(1), 0);
  EXPECT_EQ(tunerSizeClass(2), 1);
  EXPECT_EQ(tunerSizeClass(3), 2);
  EXPECT_EQ(tunerSizeClass(4096), 12);
  EXPECT_EQ(tunerSizeClass(4097), 13);
  EXPECT_EQ(tunerClassBytes(13), 8192);
  EXPECT_EQ(tunerSizeClass(int64_t{1} << 50), kTunerSizeClasses - 1);
}

// The same node at 4 channels (WEFT_MAX_NCHANNELS' default): each channel is bounded by what
// its thread block sends, and a tree all-reduce sends about 2 bytes per buffer byte where the
// ring sends 2(n-1)/n = 1.75, so the ring wins the large sizes here too, as NCCL picks it; the
// tree keeps the small ones (its latency is log n steps, the ring's 2(n-1)).
TEST(Tuner, NvlinkNodeAtFourChannelsStillRingForLarge) {
  const GlobalSystem g = communicator(machines::dgxH100(), 1, 8, true);
  TunerSettings settings;
  settings.maxChannels = 4;
  const Tuner t = build(&g, 8, settings);
  ASSERT_EQ(t.model(), TunerModel::kDevice) << t.why();
  EXPECT_NE(t.choose(CollKind::kAllReduce, 8).algo, Algo::kRing);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, int64_t{1} << 28).algo, Algo::kRing);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, int64_t{1} << 30).algo, Algo::kRing);
}

// On an NVLink/NVSwitch node of 8 GPUs, with NCCL's 32 channels allowed: a latency algorithm
// (tree or doubling) for small all-reduces, the ring for the largest, more channels with size.
TEST(Tuner, NvlinkNodeRingForLargeLatencyAlgorithmsForSmall) {
  const GlobalSystem g = communicator(machines::dgxH100(), 1, 8, true);
  TunerSettings settings;
  settings.maxChannels = 32;
  const Tuner t = build(&g, 8, settings);
  ASSERT_EQ(t.model(), TunerModel::kDevice) << t.why();
  const TunerChoice small = t.choose(CollKind::kAllReduce, 8);
  EXPECT_NE(small.algo, Algo::kRing);
  EXPECT_EQ(small.protocol, Protocol::kLL);
  EXPECT_GT(small.predictedUs, 0);
  const TunerChoice large = t.choose(CollKind::kAllReduce, int64_t{1} << 30);
  EXPECT_EQ(large.algo, Algo::kRing);
  EXPECT_EQ(large.protocol, Protocol::kSimple);
  EXPECT_GT(large.channels, small.channels);
  int channels = 0;
  double time = 0;
  for (int k = 0; k <= 30; ++k) {
    const TunerChoice c = t.choose(CollKind::kAllReduce, tunerClassBytes(k));
    EXPECT_GE(c.channels, channels) << "channels shrink at 2^" << k;
    EXPECT_GE(c.predictedUs, time) << "predicted time falls at 2^" << k;
    EXPECT_LE(c.channels, 32);
    channels = c.channels;
    time = c.predictedUs;
  }
  // Within a class the choice is the same; the class is priced at its largest size.
  EXPECT_EQ(t.choose(CollKind::kAllGather, 5000), t.choose(CollKind::kAllGather, 8192));
}

// The communicator's default channel bound (WEFT_MAX_NCHANNELS = 4) bounds the table.
TEST(Tuner, ChannelBoundsHold) {
  const GlobalSystem g = communicator(machines::mi300x(), 1, 8, true);
  TunerSettings settings;
  settings.minChannels = 2;
  settings.maxChannels = 4;
  const Tuner t = build(&g, 8, settings);
  ASSERT_EQ(t.model(), TunerModel::kDevice) << t.why();
  for (CollKind kind : tunedCollectives()) {
    for (int k = 0; k < kTunerSizeClasses; ++k) {
      const TunerChoice c = t.choose(kind, tunerClassBytes(k));
      EXPECT_GE(c.channels, 2) << collName(kind) << " 2^" << k;
      EXPECT_LE(c.channels, 4) << collName(kind) << " 2^" << k;
      EXPECT_TRUE(coll::algoSupported(kind, c.algo)) << collName(kind) << " 2^" << k;
    }
  }
}

TEST(Tuner, ForcedAlgorithmIsHonouredAndTheModelStillPicksChannels) {
  const GlobalSystem g = communicator(machines::dgxH100(), 1, 8, true);
  TunerSettings settings;
  settings.maxChannels = 32;
  settings.forcedAlgo = "RING";
  const Tuner t = build(&g, 8, settings);
  ASSERT_EQ(t.model(), TunerModel::kDevice) << t.why();
  for (int k = 0; k < kTunerSizeClasses; ++k) {
    const TunerChoice c = t.choose(CollKind::kAllReduce, tunerClassBytes(k));
    EXPECT_EQ(c.algo, Algo::kRing) << "2^" << k;
    EXPECT_GT(c.predictedUs, 0) << "2^" << k;
  }
  EXPECT_LT(t.choose(CollKind::kAllReduce, 8).channels, t.choose(CollKind::kAllReduce, 1 << 30).channels);
  // Every collective that has the ring takes it (as NCCL_ALGO); one without it keeps its own.
  EXPECT_EQ(t.choose(CollKind::kBroadcast, 8).algo, Algo::kRing);
  EXPECT_EQ(t.choose(CollKind::kAllToAll, 8).algo, Algo::kPairwise);
  // An algorithm the device model does not price (recursive doubling) is still honoured, with
  // the size rule's channels and no prediction.
  settings.forcedAlgo = "doubling";
  const Tuner d = build(&g, 8, settings);
  EXPECT_EQ(d.choose(CollKind::kAllReduce, 1 << 30).algo, Algo::kRecursiveDoubling);
  EXPECT_EQ(d.choose(CollKind::kAllReduce, 1 << 30).predictedUs, -1);
  EXPECT_EQ(d.choose(CollKind::kAllReduce, 3 << 20).channels, 4);  // 4 MiB class: 4 channels by the rule
  settings.forcedAlgo = "nvls";
  Tuner bad;
  EXPECT_EQ(Tuner::build(&g, 8, settings, nullptr, &bad).code(), weftInvalidArgument);
}

// No system (or an empty one): the size rule, evaluated at the call's own size.
TEST(Tuner, FallsBackToTheSizeRuleWithoutASystem) {
  const GlobalSystem empty;
  for (const GlobalSystem* g : {static_cast<const GlobalSystem*>(nullptr), &empty}) {
    const Tuner t = build(g, 8);
    EXPECT_EQ(t.model(), TunerModel::kSizeRule);
    EXPECT_NE(t.why().find("no system model"), std::string::npos) << t.why();
    EXPECT_EQ(t.choose(CollKind::kAllReduce, 8192).algo, Algo::kRecursiveDoubling);
    EXPECT_EQ(t.choose(CollKind::kAllReduce, 8193).algo, Algo::kTree);
    EXPECT_EQ(t.choose(CollKind::kAllReduce, 65537).algo, Algo::kRing);
    EXPECT_EQ(t.choose(CollKind::kBroadcast, 1000).algo, Algo::kTree);
    EXPECT_EQ(t.choose(CollKind::kBroadcast, 1 << 20).algo, Algo::kRing);
    EXPECT_EQ(t.choose(CollKind::kAllReduce, 3 << 20).channels, 3);  // one channel per MiB
    EXPECT_EQ(t.choose(CollKind::kAllReduce, 64 << 20).channels, 4);
    EXPECT_EQ(t.choose(CollKind::kAllReduce, 100).predictedUs, -1);
  }
}

// WEFT_TREE_MAX_BYTES / WEFT_DOUBLING_MAX_BYTES set: the size rule decides, at any threshold.
TEST(Tuner, SizeRuleSettingsSelectTheSizeRule) {
  const GlobalSystem g = communicator(machines::dgxH100(), 1, 8, true);
  TunerSettings settings;
  settings.sizeRuleSet = true;
  settings.treeMaxBytes = 100000;
  const Tuner t = build(&g, 8, settings);
  EXPECT_EQ(t.model(), TunerModel::kSizeRule);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 100000).algo, Algo::kTree);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 100001).algo, Algo::kRing);
}

// Ranks sharing a GPU, or GPU and host ranks mixed: no device model, the size rule.
TEST(Tuner, NoDeviceModelForPartialOrSharedGpus) {
  const GlobalSystem part = communicator(machines::dgxH100(), 1, 4, true);
  const Tuner t = build(&part, 4);
  EXPECT_EQ(t.model(), TunerModel::kSizeRule);
  EXPECT_NE(t.why().find("only some"), std::string::npos) << t.why();
}

// Host ranks: the host model; doubling for the smallest all-reduce, the ring for large ones,
// and a sensible table for every collective.
TEST(Tuner, HostRanksUseTheHostModel) {
  for (int n : {2, 4, 8}) {
    const GlobalSystem g = communicator(machines::pcie4Gpu(), 1, n, false);
    const Tuner t = build(&g, n);
    ASSERT_EQ(t.model(), TunerModel::kHost) << t.why();
    EXPECT_EQ(t.choose(CollKind::kAllReduce, 8).algo, Algo::kRecursiveDoubling) << n;
    EXPECT_EQ(t.choose(CollKind::kAllReduce, 256 << 20).algo, Algo::kRing) << n;
    double time = 0;
    for (int k = 0; k <= 28; ++k) {
      const TunerChoice c = t.choose(CollKind::kAllReduce, tunerClassBytes(k));
      EXPECT_GE(c.predictedUs, time) << n << " ranks, 2^" << k;
      time = c.predictedUs;
    }
    const std::vector<std::string> lines = t.describe(CollKind::kAllReduce);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines[0].rfind("allreduce 0 B - ", 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find("doubling/Simple x1, predicted"), std::string::npos) << lines[0];
    EXPECT_NE(lines.back().find(" - larger: ring/"), std::string::npos) << lines.back();
  }
}

// Host ranks on several hosts: the host model's socket constants are not calibrated, so the
// size rule decides, as before the model.
TEST(Tuner, HostRanksAcrossHostsKeepTheSizeRule) {
  const GlobalSystem g = communicator(machines::pcie4Gpu(), 2, 2, false);
  const Tuner t = build(&g, 4);
  EXPECT_EQ(t.model(), TunerModel::kSizeRule);
  EXPECT_NE(t.why().find("not calibrated"), std::string::npos) << t.why();
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 16384).algo, Algo::kTree);
  EXPECT_EQ(t.choose(CollKind::kAllReduce, 16384).predictedUs, -1);
  EXPECT_EQ(t.hostWhy(), "");
}

// pcie4Gpu with the CPUs of `mask` (its other CPU nodes emptied).
System hostWithCpus(const std::string& mask) {
  System sys = machines::pcie4Gpu();
  for (int cpu : sys.nodesOfType(NodeType::kCpu)) sys.nodes[static_cast<size_t>(cpu)].cpu.affinity = "";
  sys.nodes[static_cast<size_t>(sys.nodesOfType(NodeType::kCpu)[0])].cpu.affinity = mask;
  return sys;
}

// Four ranks on a host of two CPUs take turns: every time but the call's fixed cost at least
// twice as long (exactly, but for the ring, whose hops cost sharedChainHopUs more), and, where a rank sends more
// than its FIFOs hold, a wait for the descheduled reader per FIFO-full on top, which more
// channels shorten. Ranks with CPUs of their own have no such waits: never more channels, and
// the same algorithms but for the all-reduce (FourRanksOnTwoCpusUseTheTreeFrom16To64KiB).
TEST(Tuner, MoreRanksThanCpusStretchTheHostModel) {
  const GlobalSystem g2 = communicator(hostWithCpus("00000003"), 1, 4, false);
  const GlobalSystem gMany = communicator(hostWithCpus("ffff,ffffffff"), 1, 4, false);
  const Tuner shared = build(&g2, 4);
  const Tuner own = build(&gMany, 4);
  ASSERT_EQ(shared.model(), TunerModel::kHost);
  ASSERT_EQ(own.model(), TunerModel::kHost);
  const double callUs = HostCostParams().callUs;
  bool moreChannels = false;
  for (CollKind kind : tunedCollectives()) {
    for (int k = 0; k <= 30; ++k) {
      const TunerChoice a = shared.choose(kind, tunerClassBytes(k));
      const TunerChoice b = own.choose(kind, tunerClassBytes(k));
      // Sharing moves a choice only through what it adds: a chain's hops push it off the ring
      // (within one FIFO, k <= 18), the readers' waits weigh what each algorithm sends (beyond).
      if (a.algo != b.algo && k <= 18) {
        EXPECT_TRUE(coll::algoTraits(b.algo).chainsEveryRank && !coll::algoTraits(a.algo).chainsEveryRank)
            << collName(kind) << " 2^" << k;
      }
      EXPECT_GE(a.channels, b.channels) << collName(kind) << " 2^" << k;
      moreChannels = moreChannels || a.channels > b.channels;
      if (k <= 18) EXPECT_EQ(a.channels, b.channels) << collName(kind) << " 2^" << k;  // within one FIFO
      if (k <= 18 && a.algo == b.algo && !coll::algoTraits(a.algo).chainsEveryRank) {
        EXPECT_NEAR(a.predictedUs - callUs, 2 * (b.predictedUs - callUs), 1e-6 * a.predictedUs);
      } else {
        EXPECT_GE(a.predictedUs - callUs, 2 * (b.predictedUs - callUs) * (1 - 1e-9)) << collName(kind) << " 2^" << k;
      }
    }
  }
  EXPECT_TRUE(moreChannels) << "the readers' waits never paid for a channel";
  EXPECT_EQ(shared.choose(CollKind::kAllReduce, 64 << 20).channels, 4);
}

// Four ranks on two CPUs (the CI shape). Session 19, AMD EPYC VM, weft-perf -np 4 with
// WEFT_ALGO forced (HostCostParams::sharedChainHopUs): doubling ahead up to 64 KiB, the ring
// from 128 KiB, the tree level with doubling at best (as on the Intel VM of session 13, where
// it was a little ahead at 32-64 KiB). With a CPU each, the ring from 16 KiB: its hops wait for
// no turns.
TEST(Tuner, FourRanksOnTwoCpusUseDoublingTo64KiBThenTheRing) {
  const GlobalSystem g2 = communicator(hostWithCpus("00000003"), 1, 4, false);
  const GlobalSystem gMany = communicator(hostWithCpus("ffff,ffffffff"), 1, 4, false);
  const Tuner shared = build(&g2, 4);
  const Tuner own = build(&gMany, 4);
  for (int k = 0; k <= 30; ++k) {
    const Algo want = k <= 16 ? Algo::kRecursiveDoubling : Algo::kRing;
    EXPECT_EQ(shared.choose(CollKind::kAllReduce, tunerClassBytes(k)).algo, want) << "2^" << k;
  }
  EXPECT_EQ(shared.choose(CollKind::kAllReduce, 512 << 10).channels, 1);
  EXPECT_EQ(own.choose(CollKind::kAllReduce, 8 << 10).algo, Algo::kRecursiveDoubling);
  EXPECT_EQ(own.choose(CollKind::kAllReduce, 16 << 10).algo, Algo::kRing);
}

// Two ranks, a CPU each (the 2-vCPU development VM, measured at real-time priority in session
// 12, perf/RESULTS.md "Medium sizes on the Intel VM"): recursive doubling up to 64 KiB, then
// the ring on one channel (ahead of doubling from 128 KiB, and of 2 and 4 channels at 1-16
// MiB, where the model once chose 2 and 4 for the readers' waits).
TEST(Tuner, TwoRanksWithACpuEachUseOneRingFrom128KiB) {
  const GlobalSystem g = communicator(hostWithCpus("00000003"), 1, 2, false);
  const Tuner t = build(&g, 2);
  ASSERT_EQ(t.model(), TunerModel::kHost) << t.why();
  for (int k = 0; k <= 16; ++k) {
    EXPECT_EQ(t.choose(CollKind::kAllReduce, tunerClassBytes(k)).algo, Algo::kRecursiveDoubling) << "2^" << k;
  }
  for (int k = 17; k <= 28; ++k) {
    const TunerChoice c = t.choose(CollKind::kAllReduce, tunerClassBytes(k));
    EXPECT_EQ(c.algo, Algo::kRing) << "2^" << k;
    EXPECT_EQ(c.channels, 1) << "2^" << k;
  }
}

// The host model's time with in.work that of the algorithm's schedule at in.bytes (an
// all-reduce here, whose call bytes are the model's).
double hostTime(HostCostInput in) {
  coll::ScheduleWorkSource source;
  if (!source.work(in.collective, in.algorithm, in.nRanks, in.bytes, &in.work)) in.work = HostWork();
  return predictHostTime(in);
}

// Ranks sharing CPUs: twice the time, and each hop of a chain through every rank (the ring's
// 2(n - 1) in the all-reduce, n - 1 in the all-gather: coll::AlgoTraits::chainsEveryRank)
// sharedChainHopUs more; the tree and doubling just twice.
TEST(HostCostModel, RanksSharingCpusStretchTheRingMore) {
  const HostCostParams p;
  for (auto [kind, algo, extraHops] :
       {std::tuple{CollKind::kAllReduce, Algo::kRing, 6}, {CollKind::kAllGather, Algo::kRing, 3},
        {CollKind::kAllReduce, Algo::kTree, 0}, {CollKind::kAllReduce, Algo::kRecursiveDoubling, 0}}) {
    HostCostInput in;
    in.nRanks = 4;
    in.bytes = 32 << 10;
    in.collective = kind;
    in.algorithm = algo;
    const double own = hostTime(in);
    in.ranksPerCpu = 2;
    EXPECT_NEAR(hostTime(in) - p.callUs, 2 * (own - p.callUs) + 2 * extraHops * p.sharedChainHopUs, 1e-9)
        << coll::algoName(algo);
  }
}

TEST(HostCostModel, PricesWhatTheAlgorithmsDo) {
  HostCostInput in;
  in.nRanks = 4;
  in.bytes = 64 << 20;
  in.algorithm = Algo::kRing;
  const double ring = hostTime(in);
  in.algorithm = Algo::kRecursiveDoubling;
  const double doubling = hostTime(in);
  EXPECT_LT(ring, doubling) << "doubling moves the whole buffer each round";
  in.bytes = 8;
  in.algorithm = Algo::kRing;
  const double ringSmall = hostTime(in);
  in.algorithm = Algo::kRecursiveDoubling;
  EXPECT_LT(hostTime(in), ringSmall) << "log2 n hops against 2(n - 1)";
  in.collective = CollKind::kAllGather;
  EXPECT_EQ(hostTime(in), std::numeric_limits<double>::infinity()) << "no doubling all-gather";
  in.nHosts = 2;
  in.collective = CollKind::kAllReduce;
  EXPECT_GT(hostTime(in), ringSmall) << "sockets cost more than shared memory";
}

}  // namespace
}  // namespace topo
}  // namespace weft
