// Ranks that make different calls on device buffers (the emulated device: host memory posing
// as one GPU), ranks as threads: the lane program refuses a slot stamped with another call
// (collectives/call_stamp.h), so no rank's launch completes successfully, and a rank that read
// such a slot says that the ranks made different calls. Agreeing ranks are not disturbed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "device/device.h"
#include "weft/weft.h"

namespace {

// Before anything asks for the GPU runtime (it is chosen once per process).
struct UseEmulatedDevice {
  UseEmulatedDevice() { setenv("WEFT_GPU_BACKEND", "emulated", 1); }
} useEmulatedDevice;

weft::device::Runtime& rt() { return *weft::device::gpuRuntime(); }

struct DeviceBytes {
  explicit DeviceBytes(size_t n) { EXPECT_TRUE(rt().allocDevice(n + 8, &ptr).isOk()); }
  ~DeviceBytes() { (void)rt().freeDevice(ptr); }
  void* ptr = nullptr;
};

struct Outcome {
  weftResult_t enqueued = weftSuccess;
  weftResult_t async = weftSuccess;
  std::string message;
};

// Runs `call` on two thread ranks with device buffers and the default stream, waits for the
// stream, and records what each rank's communicator reports.
std::vector<Outcome> runTwo(const std::function<weftResult_t(int, weftComm_t, void*, void*)>& call) {
  std::vector<weftComm_t> comms(2);
  EXPECT_EQ(weftCommInitAll(comms.data(), 2, nullptr), weftSuccess) << weftGetLastError(nullptr);
  std::vector<Outcome> out(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      DeviceBytes in(1 << 23), res(1 << 23);
      weftComm_t comm = comms[static_cast<size_t>(r)];
      out[r].enqueued = call(r, comm, in.ptr, res.ptr);
      (void)rt().streamSynchronize(weft::device::defaultStreamHandle());
      EXPECT_EQ(weftCommGetAsyncError(comm, &out[r].async), weftSuccess);
      out[r].message = weftGetLastError(comm);
    });
  }
  for (auto& t : threads) t.join();
  for (auto c : comms) (void)weftCommDestroy(c);
  return out;
}

void expectNoRankSucceeded(const std::vector<Outcome>& out) {
  bool someoneNamedIt = false;
  for (int r = 0; r < 2; ++r) {
    const bool failed = out[r].enqueued != weftSuccess || out[r].async != weftSuccess;
    EXPECT_TRUE(failed) << "rank " << r << " completed a call its peer disagreed on";
    someoneNamedIt = someoneNamedIt || out[r].message.find("the ranks made different calls") != std::string::npos;
  }
  EXPECT_TRUE(someoneNamedIt) << out[0].message << "\n" << out[1].message;
}

TEST(DeviceCallMismatch, OpThatKeepsTheByteCountIsRefused) {
  expectNoRankSucceeded(runTwo([](int rank, weftComm_t comm, void* in, void* res) {
    return weftAllReduce(in, res, 1000, weftFloat32, rank == 0 ? weftSum : weftMax, comm, WEFT_STREAM_DEFAULT);
  }));
}

TEST(DeviceCallMismatch, DatatypeIsRefused) {
  expectNoRankSucceeded(runTwo([](int rank, weftComm_t comm, void* in, void* res) {
    // float vs double at 1M elements: the float rank's messages are half the size.
    return weftAllReduce(in, res, 1u << 20, rank == 0 ? weftFloat32 : weftFloat64, weftSum, comm,
                         WEFT_STREAM_DEFAULT);
  }));
}

TEST(DeviceCallMismatch, CollectiveWithTheSameBytesIsRefused) {
  expectNoRankSucceeded(runTwo([](int rank, weftComm_t comm, void* in, void* res) {
    if (rank == 0) return weftAllReduce(in, res, 8192, weftFloat32, weftSum, comm, WEFT_STREAM_DEFAULT);
    return weftAllGather(in, res, 4096, weftFloat32, comm, WEFT_STREAM_DEFAULT);
  }));
}

TEST(DeviceCallMismatch, AgreeingRanksSucceed) {
  std::vector<Outcome> out = runTwo([](int, weftComm_t comm, void* in, void* res) {
    for (int i = 0; i < 10; ++i) {
      weftResult_t r = weftAllReduce(in, res, 1000 + i, weftFloat32, weftSum, comm, WEFT_STREAM_DEFAULT);
      if (r != weftSuccess) return r;
    }
    return weftSuccess;
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(out[r].enqueued, weftSuccess) << out[r].message;
    EXPECT_EQ(out[r].async, weftSuccess) << out[r].message;
  }
}

}  // namespace
