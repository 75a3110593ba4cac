// Routes on the model machines of machines.h (the same hardware as tests/fixtures/topo), and
// WEFT_P2P_LEVEL's parsing.
#include "topology/route.h"

#include <gtest/gtest.h>

#include "topology/machines.h"
#include "topology/paths.h"

namespace weft {
namespace topo {
namespace {

// The route between GPUs i and j (by dev) of one machine, at `level`.
Route gpuRoute(const System& sys, int i, int j, P2pLevel level) {
  PathMatrix m = computePaths(sys);
  const std::vector<int> gpus = sys.nodesOfType(NodeType::kGpu);
  RouteEnd a{i, 0, gpus[static_cast<size_t>(i)]};
  RouteEnd b{j, 0, gpus[static_cast<size_t>(j)]};
  return route(a, b, &m.at(a.gpu, b.gpu), level);
}

TEST(Route, NvlinkOnDgxH100IsP2p) {
  const System sys = machines::dgxH100();
  EXPECT_EQ(defaultP2pLevel(sys), P2pLevel::kPxb);  // Intel sockets
  Route r = gpuRoute(sys, 0, 7, defaultP2pLevel(sys));
  EXPECT_EQ(r.kind, RouteKind::kP2p) << r.reason;
  EXPECT_NE(r.reason.find("NVLink"), std::string::npos) << r.reason;
  // LOC forbids peer access even over NVLink, as NCCL_P2P_LEVEL=LOC does.
  EXPECT_EQ(gpuRoute(sys, 0, 7, P2pLevel::kLoc).kind, RouteKind::kStaged);
}

TEST(Route, XgmiOnMi300xIsP2p) {
  const System sys = machines::mi300x();
  EXPECT_EQ(defaultP2pLevel(sys), P2pLevel::kSys);  // AMD sockets
  EXPECT_EQ(gpuRoute(sys, 0, 5, defaultP2pLevel(sys)).kind, RouteKind::kP2p);
}

TEST(Route, PcieAcrossSocketsIsStaged) {
  const System sys = machines::pcie4Gpu();
  const P2pLevel level = defaultP2pLevel(sys);
  Route same = gpuRoute(sys, 0, 1, level);  // under one switch
  EXPECT_EQ(same.kind, RouteKind::kP2p) << same.reason;
  Route across = gpuRoute(sys, 0, 2, level);  // socket 0 to socket 1
  EXPECT_EQ(across.kind, RouteKind::kStaged) << across.reason;
  EXPECT_NE(across.reason.find("SYS"), std::string::npos) << across.reason;
  // WEFT_P2P_LEVEL=SYS allows it; PIX still allows the pair under one switch, NVL does not.
  EXPECT_EQ(gpuRoute(sys, 0, 2, P2pLevel::kSys).kind, RouteKind::kP2p);
  EXPECT_EQ(gpuRoute(sys, 0, 1, P2pLevel::kPix).kind, RouteKind::kP2p);
  EXPECT_EQ(gpuRoute(sys, 0, 1, P2pLevel::kNvl).kind, RouteKind::kStaged);
}

TEST(Route, HostsAndHostRanks) {
  RouteEnd gpuA{0, 0, 5}, gpuB{1, 1, 5}, hostA{2, 0, -1}, hostB{3, 0, -1};
  EXPECT_EQ(route(gpuA, gpuB, nullptr, P2pLevel::kSys).kind, RouteKind::kNet);
  EXPECT_EQ(route(gpuA, gpuB, nullptr, P2pLevel::kSys).reason,
            "different hosts; GPU-direct not allowed: rank 0's GPU-to-NIC path is unknown");
  // With NICs known, a net route names the one each end's traffic goes through.
  RouteEnd railA{0, 0, 5, true, "mlx5_5"}, railB{1, 1, 2, true, "mlx5_2"};
  EXPECT_EQ(route(railA, railB, nullptr, P2pLevel::kSys).reason,
            "different hosts; out through NIC mlx5_5, in through NIC mlx5_2; GPU-direct not allowed: rank 0's "
            "GPU-to-NIC path is unknown");
  EXPECT_EQ(route(railB, gpuA, nullptr, P2pLevel::kSys).reason,
            "different hosts; out through NIC mlx5_2, in through NIC (none); GPU-direct not allowed: rank 1's "
            "GPU-to-NIC path is unknown");
  EXPECT_EQ(route(hostA, RouteEnd{9, 1, -1, true, "eth0"}, nullptr, P2pLevel::kSys).reason,
            "different hosts; out through NIC (none), in through NIC eth0")
      << "host ranks: no GPU-direct verdict";
  EXPECT_EQ(route(hostA, hostB, nullptr, P2pLevel::kSys).kind, RouteKind::kShm);
  EXPECT_EQ(route(gpuA, hostA, nullptr, P2pLevel::kSys).kind, RouteKind::kShm);
  RouteEnd sameGpu{4, 0, 5};
  EXPECT_EQ(route(gpuA, sameGpu, nullptr, P2pLevel::kLoc).kind, RouteKind::kP2p);
  // GPUs the model does not place: the runtime decides (p2p where it allows peer access).
  RouteEnd otherGpu{5, 0, 6};
  Route unplaced = route(gpuA, otherGpu, nullptr, P2pLevel::kSys);
  EXPECT_EQ(unplaced.kind, RouteKind::kP2p);
  EXPECT_NE(unplaced.reason.find("runtime"), std::string::npos) << unplaced.reason;
  // A path the model knows to be absent stages.
  Path none;
  none.type = PathType::kDis;
  EXPECT_EQ(route(gpuA, otherGpu, &none, P2pLevel::kSys).kind, RouteKind::kStaged);
}

// Across hosts, GPU-direct is allowed where both GPUs reach their NICs within the GDR level
// (NCCL_NET_GDR_LEVEL, default PXB), else not, naming the end that is too far.
TEST(Route, GpuDirectOnlyWhereBothGpuToNicPathsAllowIt) {
  RouteEnd pix{0, 0, 5, true, "mlx5_0", PathType::kPix}, pxb{1, 1, 5, true, "mlx5_1", PathType::kPxb};
  RouteEnd phb{2, 1, 6, true, "mlx5_2", PathType::kPhb}, sys{3, 1, 7, true, "eth0", PathType::kSys};
  Route both = route(pix, pxb, nullptr, P2pLevel::kSys);
  EXPECT_EQ(both.kind, RouteKind::kNet);
  EXPECT_TRUE(both.gpuDirect) << both.reason;
  EXPECT_NE(both.reason.find("GPU-direct allowed (GPU-to-NIC PIX and PXB within GDR level PXB)"), std::string::npos)
      << both.reason;
  Route far = route(pix, phb, nullptr, P2pLevel::kSys);
  EXPECT_FALSE(far.gpuDirect);
  EXPECT_NE(far.reason.find("rank 2's GPU reaches NIC mlx5_2 through PHB, beyond GDR level PXB"), std::string::npos)
      << far.reason;
  EXPECT_FALSE(route(sys, pix, nullptr, P2pLevel::kSys).gpuDirect);
  // A wider GDR level admits the host bridge; PIX alone excludes the second switch.
  EXPECT_TRUE(route(pix, phb, nullptr, P2pLevel::kSys, P2pLevel::kPhb).gpuDirect);
  EXPECT_FALSE(route(pix, pxb, nullptr, P2pLevel::kSys, P2pLevel::kPix).gpuDirect);
  // Same host: never a GPU-direct (network) route.
  RouteEnd pixSameHost{4, 0, 6, true, "mlx5_0", PathType::kPix};
  EXPECT_FALSE(route(pix, pixSameHost, nullptr, P2pLevel::kSys).gpuDirect);
}

// GPUs over NVLink whose processes do not both see both GPUs (different CUDA_VISIBLE_DEVICES)
// have no peer access: staged, naming the rank that does not see; the same GPU stays p2p.
TEST(Route, AGpuTheProcessDoesNotSeeIsStaged) {
  const System sys = machines::dgxH100();
  PathMatrix m = computePaths(sys);
  const std::vector<int> gpus = sys.nodesOfType(NodeType::kGpu);
  RouteEnd a{0, 0, gpus[0]};
  RouteEnd b{1, 0, gpus[7]};
  ASSERT_EQ(route(a, b, &m.at(a.gpu, b.gpu), P2pLevel::kSys).kind, RouteKind::kP2p);
  b.seesOther = false;
  Route r = route(a, b, &m.at(a.gpu, b.gpu), P2pLevel::kSys);
  EXPECT_EQ(r.kind, RouteKind::kStaged);
  EXPECT_NE(r.reason.find("rank 1's process does not see the peer's GPU"), std::string::npos) << r.reason;
  EXPECT_EQ(route(b, a, &m.at(b.gpu, a.gpu), P2pLevel::kSys).kind, RouteKind::kStaged);  // both ends alike
  EXPECT_EQ(route(a, b, nullptr, P2pLevel::kSys).kind, RouteKind::kStaged);  // unplaced GPUs too
  RouteEnd same{2, 0, gpus[0], false};
  EXPECT_EQ(route(a, same, &m.at(a.gpu, same.gpu), P2pLevel::kSys).kind, RouteKind::kP2p);
}

TEST(Route, P2pLevelParsing) {
  P2pLevel l = P2pLevel::kLoc;
  EXPECT_TRUE(parseP2pLevel("phb", &l));
  EXPECT_EQ(l, P2pLevel::kPhb);
  EXPECT_TRUE(parseP2pLevel("5", &l));
  EXPECT_EQ(l, P2pLevel::kSys);
  EXPECT_FALSE(parseP2pLevel("NODE", &l));
  EXPECT_FALSE(parseP2pLevel("6", &l));
  EXPECT_EQ(l, P2pLevel::kSys);  // untouched
  std::string warning;
  const System intel = machines::pcie4Gpu();
  EXPECT_EQ(chooseP2pLevel("NVL", intel, &warning), P2pLevel::kNvl);
  EXPECT_TRUE(warning.empty());
  EXPECT_EQ(chooseP2pLevel("bogus", intel, &warning), P2pLevel::kPxb);
  EXPECT_NE(warning.find("WEFT_P2P_LEVEL=bogus"), std::string::npos) << warning;
  EXPECT_NE(warning.find("using PXB"), std::string::npos) << warning;
}

}  // namespace
}  // namespace topo
}  // namespace weft
