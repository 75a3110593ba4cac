// Residency on the emulated GPU (WEFT_GPU_BACKEND=emulated with WEFT_EMULATED_SMS and
// WEFT_EMULATED_BLOCKS_PER_SM): a launch's blocks beyond what the GPU holds resident do not
// start until resident ones end, as on hardware. Lanes spin for their peers, so several ranks on
// one GPU whose launches together need more blocks than fit would wait for each other until the
// time-out. A group that fuses many collectives, or a large send/receive group, must therefore run
// as several launches, each within the rank's share of the resident blocks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "device/device.h"
#include "device/gpu_loader.h"
#include "weft/weft.h"

namespace {

struct UseEmulatedDevice {
  UseEmulatedDevice() { setenv("WEFT_GPU_BACKEND", "emulated", 1); }
} useEmulatedDevice;

weft::device::Runtime& rt() { return *weft::device::gpuRuntime(); }

// A small emulated GPU: `sms` SMs of two resident lane blocks, and a short time-out, so that a
// launch which over-subscribes it fails within seconds rather than hanging for the default 30
// minutes.
class SmallGpu : public ::testing::Test {
 protected:
  void use(int sms) {
    setenv("WEFT_EMULATED_SMS", std::to_string(sms).c_str(), 1);
    setenv("WEFT_EMULATED_BLOCKS_PER_SM", "2", 1);
    setenv("WEFT_TIMEOUT_S", "5", 1);
  }
  void TearDown() override {
    unsetenv("WEFT_EMULATED_SMS");
    unsetenv("WEFT_EMULATED_BLOCKS_PER_SM");
    unsetenv("WEFT_TIMEOUT_S");
  }
};

struct Buffers {
  explicit Buffers(size_t elems) : elems(elems) {
    EXPECT_TRUE(rt().allocDevice(elems * sizeof(int32_t), &send).isOk());
    EXPECT_TRUE(rt().allocDevice(elems * sizeof(int32_t), &recv).isOk());
  }
  ~Buffers() {
    (void)rt().freeDevice(send);
    (void)rt().freeDevice(recv);
  }
  int32_t* s() { return static_cast<int32_t*>(send); }
  int32_t* r() { return static_cast<int32_t*>(recv); }
  size_t elems;
  void* send = nullptr;
  void* recv = nullptr;
};

void onRanks(int n, const std::function<void(int, weftComm_t)>& fn) {
  std::vector<weftComm_t> comms(static_cast<size_t>(n));
  ASSERT_EQ(weftCommInitAll(comms.data(), n, nullptr), weftSuccess) << weftGetLastError(nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { fn(r, comms[static_cast<size_t>(r)]); });
  for (auto& t : threads) t.join();
  for (auto c : comms) EXPECT_EQ(weftCommDestroy(c), weftSuccess);
}

int32_t valueOf(int rank, int op, size_t i) { return rank * 1000 + op * 37 + static_cast<int32_t>(i % 97); }

TEST(DeviceResidency, TheEmulatedGpuReportsItsSmsAndOccupancy) {
  setenv("WEFT_EMULATED_SMS", "3", 1);
  setenv("WEFT_EMULATED_BLOCKS_PER_SM", "5", 1);
  weft::device::DeviceProps p;
  ASSERT_TRUE(rt().deviceProps(0, &p).isOk());
  EXPECT_EQ(p.multiProcessors, 3);
  EXPECT_EQ(p.laneBlocksPerUnit, 5);
  unsetenv("WEFT_EMULATED_SMS");
  unsetenv("WEFT_EMULATED_BLOCKS_PER_SM");
}

// Four ranks on a GPU holding 4 lane blocks: one each. A group of 12 all-reduces per rank would
// be one launch of 12 blocks per rank, of which at most 4 (over all ranks) run: rank 0's first
// four lanes would wait for ever for peers whose blocks never start.
TEST_F(SmallGpu, AFusedGroupLargerThanTheRanksShareRunsAsSeveralLaunches) {
  use(2);
  const int nRanks = 4, nOps = 12;
  const size_t count = 300;
  onRanks(nRanks, [&](int rank, weftComm_t comm) {
    std::vector<Buffers> bufs;
    bufs.reserve(nOps);
    for (int op = 0; op < nOps; ++op) bufs.emplace_back(count);
    weft::device::Stream stream = nullptr;
    ASSERT_TRUE(rt().streamCreate(&stream).isOk());
    for (int op = 0; op < nOps; ++op) {
      for (size_t i = 0; i < count; ++i) bufs[op].s()[i] = valueOf(rank, op, i), bufs[op].r()[i] = -1;
    }
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    for (int op = 0; op < nOps; ++op) {
      weftAllReduce(bufs[op].send, bufs[op].recv, count, weftInt32, weftSum, comm, stream);
    }
    ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(comm);
    ASSERT_TRUE(rt().streamSynchronize(stream).isOk());
    weftResult_t async = weftSuccess;
    ASSERT_EQ(weftCommGetAsyncError(comm, &async), weftSuccess);
    ASSERT_EQ(async, weftSuccess) << weftGetLastError(comm);
    for (int op = 0; op < nOps; ++op) {
      for (size_t i = 0; i < count; ++i) {
        int32_t want = 0;
        for (int r = 0; r < nRanks; ++r) want += valueOf(r, op, i);
        ASSERT_EQ(bufs[op].r()[i], want) << "rank " << rank << " op " << op << " i " << i;
      }
    }
    (void)rt().streamDestroy(stream);
  });
}

// Three ranks, each sending 20 messages to each of the others and receiving as many: 80 lanes
// per rank in one group (more than 32, once refused), on a GPU holding 6 lane blocks (two per
// rank). The messages run in an order every rank agrees on, a few at a time.
TEST_F(SmallGpu, ALargeSendReceiveGroupRunsAsSeveralLaunches) {
  use(3);
  const int nRanks = 3, nMsgs = 20;
  const size_t count = 100;
  onRanks(nRanks, [&](int rank, weftComm_t comm) {
    Buffers b(count * nMsgs * nRanks);
    weft::device::Stream stream = nullptr;
    ASSERT_TRUE(rt().streamCreate(&stream).isOk());
    for (size_t i = 0; i < b.elems; ++i) b.s()[i] = valueOf(rank, 0, i), b.r()[i] = -1;
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    // Receives first on odd ranks: the order of calls within a group must not matter.
    for (int pass = 0; pass < 2; ++pass) {
      const bool sends = (pass == 0) == (rank % 2 == 0);
      for (int peer = 0; peer < nRanks; ++peer) {
        if (peer == rank) continue;
        for (int m = 0; m < nMsgs; ++m) {
          // Message m from s to d is the slice (s * nMsgs + m) of s's send buffer, landing in
          // the slice (s * nMsgs + m) of d's receive buffer.
          if (sends) {
            weftSend(b.s() + (rank * nMsgs + m) * count, count, weftInt32, peer, comm, stream);
          } else {
            weftRecv(b.r() + (peer * nMsgs + m) * count, count, weftInt32, peer, comm, stream);
          }
        }
      }
    }
    ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(comm);
    ASSERT_TRUE(rt().streamSynchronize(stream).isOk());
    weftResult_t async = weftSuccess;
    ASSERT_EQ(weftCommGetAsyncError(comm, &async), weftSuccess);
    ASSERT_EQ(async, weftSuccess) << weftGetLastError(comm);
    for (int peer = 0; peer < nRanks; ++peer) {
      for (size_t i = 0; i < count * nMsgs; ++i) {
        const size_t at = peer * nMsgs * count + i;
        ASSERT_EQ(b.r()[at], peer == rank ? -1 : valueOf(peer, 0, at)) << "rank " << rank << " from " << peer;
      }
    }
    (void)rt().streamDestroy(stream);
  });
}

}  // namespace
