// The low-latency protocol through the whole device path on the emulated GPU: small calls go as
// LL lines on GPU peer-memory FIFOs (p2p), in slots on staged ones (shm, sockets), never with
// WEFT_DEVICE_LL_MAX_BYTES=0, and large calls in slots; results exact every time. A lane runner
// wrapped around the host one counts, per launch, the message steps marked LL and whether their
// FIFOs carry LL regions (what the lane program then does with them is device_lanes_ll_test's).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "collectives/device_executor.h"
#include "collectives/step_kind.h"
#include "device/device.h"
#include "device_routes.h"
#include "weft/weft.h"

namespace {

struct UseEmulatedDevice {
  UseEmulatedDevice() { setenv("WEFT_GPU_BACKEND", "emulated", 1); }
} useEmulatedDevice;

weft::device::Runtime& rt() { return *weft::device::gpuRuntime(); }

// Message steps seen by the wrapped runner: LL on a FIFO with an LL region (lines), LL without
// one (LL-sized slots), and not LL.
std::atomic<int> gLines{0}, gLLSlots{0}, gSlots{0};

uint32_t countingRunner(const weft::device::LaneLaunch& launch, weft::device::BlockSlots* slots) {
  for (int32_t i = 0; i < launch.nLanes; ++i) {
    const weft::device::LaneDesc& d = launch.lanes[i];
    for (int32_t s = d.firstStep; s < d.firstStep + d.nSteps; ++s) {
      const weft::device::LaneStep& st = launch.steps[s];
      const int32_t fifo = st.sendFifo >= 0 ? st.sendFifo : st.recvFifo;
      if (fifo < 0) continue;
      std::atomic<int>& n = st.ll == 0 ? gSlots : launch.fifos[fifo].ll != nullptr ? gLines : gLLSlots;
      n.fetch_add(1);
    }
  }
  return weft::coll::runLanesOnHost(launch, slots);
}

class DeviceLL : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_NE(weft::device::gpuRuntime(), nullptr);
    weft::testing_routes::useRoute(GetParam());
    gLines = gLLSlots = gSlots = 0;
  }
  void TearDown() override {
    weft::coll::registerHostLaneRunner();
    weft::testing_routes::clearRoute();
    unsetenv("WEFT_DEVICE_LL_MAX_BYTES");
  }
};
INSTANTIATE_TEST_SUITE_P(Via, DeviceLL, ::testing::Values("p2p", "shm", "socket"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// A 3-rank all-reduce of `count` int32 (rank r's element i: r * 1000 + i) on every rank, three
// times, checked; ranks whose devlist entry is -1 are host ranks (host buffers, stream NULL).
void allReduce(size_t count, std::vector<int> devlist = {}) {
  const int n = 3;
  std::vector<weftComm_t> comms(n);
  ASSERT_EQ(weftCommInitAll(comms.data(), n, devlist.empty() ? nullptr : devlist.data()), weftSuccess)
      << weftGetLastError(nullptr);
  weft::device::setHostLaneRunner(&countingRunner);  // after init, which registers the host one
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      const bool host = !devlist.empty() && devlist[static_cast<size_t>(r)] < 0;
      std::vector<int32_t> in(count), out(count);
      for (size_t i = 0; i < count; ++i) in[i] = r * 1000 + static_cast<int32_t>(i);
      void *send = in.data(), *recv = out.data();
      weft::device::Stream stream = nullptr;
      if (!host) {
        ASSERT_TRUE(rt().allocDevice(count * 4, &send).isOk());
        ASSERT_TRUE(rt().allocDevice(count * 4, &recv).isOk());
        ASSERT_TRUE(rt().streamCreate(&stream).isOk());
        ASSERT_TRUE(rt().copy(send, in.data(), count * 4, weft::device::CopyKind::kHostToDevice).isOk());
      }
      for (int call = 0; call < 3; ++call) {
        weftComm_t comm = comms[static_cast<size_t>(r)];
        ASSERT_EQ(weftAllReduce(send, recv, count, weftInt32, weftSum, comm, stream), weftSuccess)
            << weftGetLastError(comm);
        if (!host) {
          ASSERT_TRUE(rt().streamSynchronize(stream).isOk());
          ASSERT_TRUE(rt().copy(out.data(), recv, count * 4, weft::device::CopyKind::kDeviceToHost).isOk());
        }
        for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], 3000 + 3 * static_cast<int32_t>(i)) << r << " " << i;
      }
      if (!host) {
        (void)rt().freeDevice(send);
        (void)rt().freeDevice(recv);
        (void)rt().streamDestroy(stream);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto c : comms) EXPECT_EQ(weftCommDestroy(c), weftSuccess);
}

TEST_P(DeviceLL, SmallCallsGoAsLinesOnPeerMemoryAndAsSlotsWhenStaged) {
  allReduce(1001);  // about 1.3 KiB per step: LL
  EXPECT_EQ(gSlots.load(), 0);
  if (GetParam() == "p2p") {
    EXPECT_GT(gLines.load(), 0);
    EXPECT_EQ(gLLSlots.load(), 0);
  } else {
    EXPECT_EQ(gLines.load(), 0);
    EXPECT_GT(gLLSlots.load(), 0);
  }
}

TEST_P(DeviceLL, LargeCallsAndAThresholdOfZeroUseSlots) {
  allReduce(3 * 65536);  // 256 KiB of a rank's part: 32 KiB or more per step, above the 16 KiB default
  EXPECT_GT(gSlots.load(), 0);
  EXPECT_EQ(gLines.load() + gLLSlots.load(), 0);
  setenv("WEFT_DEVICE_LL_MAX_BYTES", "0", 1);
  gSlots = 0;
  allReduce(1001);
  EXPECT_GT(gSlots.load(), 0);
  EXPECT_EQ(gLines.load() + gLLSlots.load(), 0);
}

// A mixed communicator: rank 2 on host memory, ranks 0 and 1 on the (emulated) GPU (4 KiB: the
// recursive doubling pairs 0 with 1 and folds 2 into 0). The GPU pair's FIFOs carry LL lines
// over peer memory; the host rank's edges, staged by the bridge, carry the same messages in
// slots of the LL size, on both ends; the sums are exact.
TEST(DeviceLLMixed, HostRanksAndGpuRanksAgreeOnEveryMessage) {
  ASSERT_NE(weft::device::gpuRuntime(), nullptr);
  gLines = gLLSlots = gSlots = 0;
  allReduce(1001, {0, 0, -1});
  EXPECT_GT(gLines.load(), 0);
  EXPECT_GT(gLLSlots.load(), 0);
  EXPECT_EQ(gSlots.load(), 0);
  gLines = gLLSlots = gSlots = 0;
  allReduce(3 * 65536, {0, -1, 0});
  EXPECT_EQ(gLines.load() + gLLSlots.load(), 0);
  EXPECT_GT(gSlots.load(), 0);
  weft::coll::registerHostLaneRunner();
}

}  // namespace
