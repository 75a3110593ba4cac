// The checks every runtime applies before a lane launch (checkLaneLaunch), and the host runtime's
// launchLanes, which hands a checked launch to the registered host lane runner.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device/device.h"

namespace weft {
namespace device {
namespace {

// Tables for a valid launch of three lanes over two fused collectives.
struct Tables {
  std::vector<LaneDesc> lanes = std::vector<LaneDesc>(3);
  std::vector<LaneStep> steps = std::vector<LaneStep>(6);
  std::vector<FifoView> fifos = std::vector<FifoView>(2);
  LaneError error;
  std::vector<float> send = std::vector<float>(64), recv = std::vector<float>(64);

  Tables() {
    for (int i = 0; i < 3; ++i) {
      lanes[i].firstStep = 2 * i;
      lanes[i].nSteps = 2;
      lanes[i].buffers = i % 2;
      lanes[i].sliceElems = 16;
      lanes[i].iterations = 4;
    }
  }
  LaneLaunch launch() {
    LaneLaunch l;
    l.type = weftFloat32;
    l.op = weftSum;
    l.nLanes = 3;
    l.lanes = lanes.data();
    l.steps = steps.data();
    l.fifos = fifos.data();
    l.nFifos = 2;
    l.nBuffers = 2;
    for (int b = 0; b < 2; ++b) l.buffers[b] = LaneBuffers{send.data(), recv.data(), nullptr};
    l.error = &error;
    return l;
  }
};

// The host lane runner for one test: replaced for the test's length, then restored, so that the
// tests hold whatever the rest of the binary registered (libweft's collectives register theirs).
class RunnerScope {
 public:
  explicit RunnerScope(HostLaneRunner runner) : saved_(hostLaneRunner()) { setHostLaneRunner(runner); }
  ~RunnerScope() { setHostLaneRunner(saved_); }
  RunnerScope(const RunnerScope&) = delete;
  RunnerScope& operator=(const RunnerScope&) = delete;

 private:
  HostLaneRunner saved_;
};

int gRuns = 0;
const LaneLaunch* gLastLaunch = nullptr;

// Records the launch and fails like a lane that timed out would.
uint32_t timingOutRunner(const LaneLaunch& launch, BlockSlots*) {
  ++gRuns;
  gLastLaunch = &launch;
  launch.error->code = kLaneTimeout;
  launch.error->lane = launch.nLanes - 1;
  return kLaneTimeout;
}

void expectRejected(const LaneLaunch& launch, const std::string& words) {
  Status s = checkLaneLaunch(launch);
  EXPECT_EQ(s.code(), weftInvalidArgument) << words;
  EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
  EXPECT_EQ(s.message().rfind("lane launch: ", 0), 0u) << s.message();
  // The host runtime checks the same way and runs nothing.
  RunnerScope scope(timingOutRunner);
  gRuns = 0;
  Status h = hostRuntime().launchLanes(launch, nullptr);
  EXPECT_EQ(h.code(), weftInvalidArgument);
  EXPECT_EQ(h.message(), s.message());
  EXPECT_EQ(gRuns, 0);
}

TEST(LaneLaunchArgs, ValidLaunchesPass) {
  Tables t;
  EXPECT_TRUE(checkLaneLaunch(t.launch()).isOk());
  // No FIFOs (a local copy), one lane, the extremes of the counts.
  LaneLaunch l = t.launch();
  l.nFifos = 0;
  l.fifos = nullptr;
  l.nLanes = 1;
  l.threadsPerLane = 1;
  EXPECT_TRUE(checkLaneLaunch(l).isOk());
  std::vector<LaneDesc> many(1024);
  l = t.launch();
  l.nLanes = 1024;
  l.lanes = many.data();
  l.nBuffers = kMaxFusedOps;
  l.threadsPerLane = 512;
  l.op = weftAvg;
  l.divisor = 1;
  EXPECT_TRUE(checkLaneLaunch(l).isOk());
  // A lane with nothing to do.
  t.lanes[1].nSteps = 0;
  t.lanes[1].iterations = 0;
  EXPECT_TRUE(checkLaneLaunch(t.launch()).isOk());
}

TEST(LaneLaunchArgs, TypeOpAndDivisor) {
  Tables t;
  LaneLaunch l = t.launch();
  l.type = static_cast<weftDataType_t>(weftNumTypes);
  expectRejected(l, "datatype 12 is not a weftDataType_t");
  l = t.launch();
  l.type = static_cast<weftDataType_t>(-1);
  expectRejected(l, "datatype -1");
  l = t.launch();
  // weftNumOps is the lane program's premul-sum (kLaneOpPreMulSum); values past it are no op.
  l.op = kLaneOpPreMulSum;
  EXPECT_TRUE(checkLaneLaunch(l).isOk());
  l.op = static_cast<weftRedOp_t>(weftNumOps + 1);
  expectRejected(l, "op 6 is neither a weftRedOp_t nor kLaneOpPreMulSum");
  l.op = static_cast<weftRedOp_t>(-1);
  expectRejected(l, "op -1 is neither");
  l = t.launch();
  l.op = weftAvg;
  l.divisor = 0;
  expectRejected(l, "weftAvg with divisor 0");
  l.op = weftSum;  // only avg divides
  EXPECT_TRUE(checkLaneLaunch(l).isOk());
}

TEST(LaneLaunchArgs, CountsOutOfRange) {
  Tables t;
  for (int n : {0, -1, 1025}) {
    LaneLaunch l = t.launch();
    l.nLanes = n;
    expectRejected(l, "nLanes is " + std::to_string(n) + "; it must be 1 to 1024");
  }
  for (int n : {0, -1, kMaxFusedOps + 1}) {
    LaneLaunch l = t.launch();
    l.nBuffers = n;
    expectRejected(l, "nBuffers is " + std::to_string(n) + "; it must be 1 to " + std::to_string(kMaxFusedOps));
  }
  for (int n : {-1, 513, 1024}) {
    LaneLaunch l = t.launch();
    l.threadsPerLane = n;
    expectRejected(l, "threadsPerLane is " + std::to_string(n) + "; it must be 1 to 512, or 0 for the default");
  }
  LaneLaunch l = t.launch();
  l.nFifos = -1;
  expectRejected(l, "nFifos is -1");
}

TEST(LaneLaunchArgs, MissingTables) {
  Tables t;
  LaneLaunch l = t.launch();
  l.lanes = nullptr;
  expectRejected(l, "the lane table is null");
  l = t.launch();
  l.steps = nullptr;
  expectRejected(l, "the step table is null");
  l = t.launch();
  l.fifos = nullptr;
  expectRejected(l, "the FIFO table is null with nFifos 2");
  l = t.launch();
  l.error = nullptr;
  expectRejected(l, "error is null");
}

TEST(LaneLaunchArgs, LanesNameTheirFaults) {
  {
    Tables t;
    t.lanes[2].firstStep = -1;
    expectRejected(t.launch(), "lane 2 has firstStep -1 and nSteps 2; neither may be negative");
  }
  {
    Tables t;
    t.lanes[1].nSteps = -3;
    expectRejected(t.launch(), "lane 1 has firstStep 2 and nSteps -3");
  }
  {
    Tables t;
    t.lanes[0].buffers = 2;
    expectRejected(t.launch(), "lane 0 names buffers 2 of a launch with 2");
  }
  {
    Tables t;
    t.lanes[2].buffers = -1;
    expectRejected(t.launch(), "lane 2 names buffers -1");
  }
  {
    Tables t;
    t.lanes[1].sliceElems = 0;
    expectRejected(t.launch(), "lane 1 has sliceElems 0; it must be at least 1");
  }
  {
    Tables t;
    t.lanes[0].iterations = -1;
    expectRejected(t.launch(), "lane 0 has -1 iterations");
  }
}

TEST(HostRuntimeLanes, WithoutARunnerTheLaunchIsAnInternalError) {
  RunnerScope scope(nullptr);
  Tables t;
  Status s = hostRuntime().launchLanes(t.launch(), nullptr);
  EXPECT_EQ(s.code(), weftInternalError);
  EXPECT_NE(s.message().find("the host lane runner is not registered (link libweft's collectives)"), std::string::npos)
      << s.message();
  // Bad launches are still bad launches.
  LaneLaunch l = t.launch();
  l.nLanes = 0;
  EXPECT_EQ(hostRuntime().launchLanes(l, nullptr).code(), weftInvalidArgument);
}

// The lane table the runtime checks is hostLanes when set (the host's copy of a table in device
// memory), and maxLaneSteps, when given, bounds every lane's steps (the kernel sizes its shared
// memory by it).
TEST(LaneLaunchArgs, HostLanesAreTheOnesChecked) {
  Tables t;
  Tables device;  // stands for the device copy, which the host must not need to read
  device.lanes[1].sliceElems = 0;
  LaneLaunch l = device.launch();
  l.hostLanes = t.lanes.data();
  EXPECT_TRUE(checkLaneLaunch(l).isOk());
  t.lanes[2].buffers = 5;
  expectRejected(l, "lane 2 names buffers 5");
}

TEST(LaneLaunchArgs, MaxLaneStepsBoundsEveryLane) {
  Tables t;
  LaneLaunch l = t.launch();
  l.maxLaneSteps = 2;
  EXPECT_TRUE(checkLaneLaunch(l).isOk());
  l.maxLaneSteps = 0;  // unknown: no bound
  EXPECT_TRUE(checkLaneLaunch(l).isOk());
  l.maxLaneSteps = 1;
  expectRejected(l, "lane 0 has 2 steps, more than maxLaneSteps 1");
  l.maxLaneSteps = -1;
  expectRejected(l, "maxLaneSteps is -1");
}

TEST(HostRuntimeLanes, RunsToTheEndAndLeavesFailuresInTheLaunch) {
  RunnerScope scope(timingOutRunner);
  gRuns = 0;
  gLastLaunch = nullptr;
  Tables t;
  const LaneLaunch l = t.launch();
  Stream stream = nullptr;
  ASSERT_TRUE(hostRuntime().streamCreate(&stream).isOk());
  // Like a kernel launch: the call succeeds, and the lanes' failure is in *error.
  Status s = hostRuntime().launchLanes(l, stream);
  EXPECT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(gRuns, 1);
  EXPECT_EQ(gLastLaunch, &l) << "the runner sees the caller's launch";
  EXPECT_EQ(t.error.code, kLaneTimeout);
  EXPECT_EQ(t.error.lane, 2);
  EXPECT_TRUE(hostRuntime().streamDestroy(stream).isOk());
}

}  // namespace
}  // namespace device
}  // namespace weft
