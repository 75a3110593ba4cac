// FIFO initialisation on the emulated GPU, whose memsets wait on their stream as a GPU's do
// (cudaMemset runs on the legacy default stream whenever the device gets to it). A FIFO zeroed
// with such a memset and offered to the peer at once can be wiped after the peer's first
// writes: here the memset runs at the next call that follows the legacy stream (a synchronous
// copy of the results), after the first collective used the FIFO, and the next collective then
// finds its counters reset. Zeroed, synchronized, then offered, the FIFO keeps working.
#include <gtest/gtest.h>

#include <cstdlib>
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

TEST(DeviceFifoInit, TheEmulatedMemsetWaitsOnItsStream) {
  void* dev = nullptr;
  ASSERT_TRUE(rt().allocDevice(64, &dev).isOk());
  auto* bytes = static_cast<unsigned char*>(dev);
  weft::device::Stream s = nullptr;
  ASSERT_TRUE(rt().streamCreate(&s).isOk());
  // On the legacy stream: still undone after work on another stream, done by a synchronous copy.
  ASSERT_TRUE(rt().memset(dev, 0x11, 16).isOk());
  ASSERT_TRUE(rt().streamSynchronize(s).isOk());
  EXPECT_EQ(bytes[0], 0);
  unsigned char back[16] = {};
  ASSERT_TRUE(rt().copy(back, dev, 16, weft::device::CopyKind::kDeviceToHost).isOk());
  EXPECT_EQ(back[15], 0x11);
  // On a stream: undone after a synchronous copy, done by synchronizing that stream.
  ASSERT_TRUE(rt().memsetAsync(bytes + 16, 0x22, 16, s).isOk());
  ASSERT_TRUE(rt().copy(back, dev, 16, weft::device::CopyKind::kDeviceToHost).isOk());
  EXPECT_EQ(bytes[16], 0);
  ASSERT_TRUE(rt().streamSynchronize(s).isOk());
  EXPECT_EQ(bytes[31], 0x22);
  // Freeing synchronizes the device: nothing queued is left to write freed memory.
  ASSERT_TRUE(rt().memsetAsync(bytes + 32, 0x33, 16, s).isOk());
  ASSERT_TRUE(rt().streamDestroy(s).isOk());
  EXPECT_EQ(bytes[40], 0x33);
  ASSERT_TRUE(rt().memset(bytes + 48, 0x44, 16).isOk());
  ASSERT_TRUE(rt().freeDevice(dev).isOk());
}

// Two ranks on one emulated GPU (the p2p transport: each receiver's FIFO block is device memory
// the sender writes). Each collective's results are read with a synchronous copy, as programs do.
TEST(DeviceFifoInit, FifosStayIntactAfterTheLegacyStreamRuns) {
  setenv("WEFT_TIMEOUT_S", "5", 1);
  const int n = 2;
  const size_t count = 4096;
  std::vector<weftComm_t> comms(n);
  ASSERT_EQ(weftCommInitAll(comms.data(), n, nullptr), weftSuccess) << weftGetLastError(nullptr);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      weftComm_t comm = comms[static_cast<size_t>(rank)];
      void* send = nullptr;
      void* recv = nullptr;
      weft::device::Stream stream = nullptr;
      ASSERT_TRUE(rt().allocDevice(count * sizeof(int32_t), &send).isOk());
      ASSERT_TRUE(rt().allocDevice(count * sizeof(int32_t), &recv).isOk());
      ASSERT_TRUE(rt().streamCreate(&stream).isOk());
      std::vector<int32_t> host(count), back(count);
      for (int iter = 0; iter < 4; ++iter) {
        for (size_t i = 0; i < count; ++i) host[i] = static_cast<int32_t>(rank * 100000 + iter * 1000 + i % 1000);
        ASSERT_TRUE(rt().copy(send, host.data(), count * sizeof(int32_t), weft::device::CopyKind::kHostToDevice).isOk());
        ASSERT_EQ(weftAllReduce(send, recv, count, weftInt32, weftSum, comm, stream), weftSuccess)
            << weftGetLastError(comm);
        ASSERT_TRUE(rt().streamSynchronize(stream).isOk());
        weftResult_t async = weftSuccess;
        ASSERT_EQ(weftCommGetAsyncError(comm, &async), weftSuccess);
        ASSERT_EQ(async, weftSuccess) << "rank " << rank << " iteration " << iter << ": " << weftGetLastError(comm);
        ASSERT_TRUE(rt().copy(back.data(), recv, count * sizeof(int32_t), weft::device::CopyKind::kDeviceToHost).isOk());
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(back[i], static_cast<int32_t>(100000 + 2 * (iter * 1000 + i % 1000))) << "iteration " << iter;
        }
      }
      (void)rt().streamDestroy(stream);
      (void)rt().freeDevice(send);
      (void)rt().freeDevice(recv);
    });
  }
  for (auto& t : threads) t.join();
  for (auto c : comms) EXPECT_EQ(weftCommDestroy(c), weftSuccess);
  unsetenv("WEFT_TIMEOUT_S");
}

}  // namespace
