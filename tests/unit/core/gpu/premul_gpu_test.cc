// Premul-sum on a real GPU (ctest label `gpu`): the lane kernels compiled by nvcc / hipcc give
// the host executor's results bit for bit (reduce.h: the product is rounded before the sum, never
// fused into an FMA), for every datatype, with scalars and inputs that round; and a device-resident
// scalar is read each time a collective runs. Two ranks as threads on device 0 (with two ranks a
// sum has one order, so host and device must agree whatever the algorithm). Skips, with the
// loader's reason, on a machine without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "device/device.h"
#include "device/gpu_loader.h"
#include "unit/device/device_test_util.h"
#include "weft/weft.h"

namespace weft {
namespace device {
namespace {

GpuLoadResult& loaded() {
  static GpuLoadResult result = [] {
    GpuLoadOptions o;
    o.dirs = {testing::moduleDir()};
    o.searchDefaultPath = false;
    return loadGpuRuntime(o);
  }();
  return result;
}

const weftDataType_t kAllTypes[] = {weftInt8,    weftUint8,    weftInt32,      weftUint32,
                                    weftInt64,   weftUint64,   weftFloat16,    weftFloat32,
                                    weftFloat64, weftBfloat16, weftFloat8e4m3, weftFloat8e5m2};

size_t sizeOf(weftDataType_t t) {
  switch (t) {
    case weftInt8:
    case weftUint8:
    case weftFloat8e4m3:
    case weftFloat8e5m2:
      return 1;
    case weftFloat16:
    case weftBfloat16:
      return 2;
    case weftInt32:
    case weftUint32:
    case weftFloat32:
      return 4;
    default:
      return 8;
  }
}

// Random elements that are finite and of moderate size (so products neither overflow nor
// vanish), with every mantissa bit random, so products and sums round; random bits for integers.
// A small float format's bits: sign, an exponent field within [lo, hi], a random mantissa.
uint64_t smallFloat(std::mt19937_64& rng, int manBits, int expBits, uint32_t lo, uint32_t hi) {
  const uint64_t r = rng();
  const uint64_t exp = lo + r % (hi - lo + 1);
  const uint64_t man = (r >> 8) & ((uint64_t{1} << manBits) - 1);
  const uint64_t sign = (r >> 40) & 1;
  return (sign << (expBits + manBits)) | (exp << manBits) | man;
}

void randomElement(weftDataType_t t, std::mt19937_64& rng, void* out) {
  uint64_t bits = rng();
  switch (t) {
    case weftFloat16:
      bits = smallFloat(rng, 10, 5, 12, 17);
      break;  // 2^-3 .. 2^2
    case weftBfloat16:
      bits = smallFloat(rng, 7, 8, 124, 129);
      break;  // 2^-3 .. 2^2
    case weftFloat8e4m3:
      bits = smallFloat(rng, 3, 4, 4, 9);
      break;  // 2^-3 .. 2^2
    case weftFloat8e5m2:
      bits = smallFloat(rng, 2, 5, 12, 17);
      break;  // 2^-3 .. 2^2
    case weftFloat32: {
      const float f = static_cast<float>(static_cast<int64_t>(rng() % 8192) - 4096) / 1024.0f + 1.0f / 3.0f;
      std::memcpy(out, &f, 4);
      return;
    }
    case weftFloat64: {
      const double d = static_cast<double>(static_cast<int64_t>(rng() % 8192) - 4096) / 1024.0 + 1.0 / 3.0;
      std::memcpy(out, &d, 8);
      return;
    }
    default:
      break;
  }
  std::memcpy(out, &bits, sizeOf(t));
}

class PreMulSumGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    rt_ = loaded().runtime.get();
    if (rt_ == nullptr) GTEST_SKIP() << "no GPU: " << loaded().report;
    setenv("WEFT_TIMEOUT_S", "120", 0);
    ASSERT_TRUE(rt_->setDevice(0).isOk());
    std::vector<int> devlist(2, 0);
    ASSERT_EQ(weftCommInitAll(comms_, 2, devlist.data()), weftSuccess) << weftGetLastError(nullptr);
  }
  void TearDown() override {
    for (weftComm_t c : comms_) {
      if (c != nullptr) {
        EXPECT_EQ(weftCommDestroy(c), weftSuccess);
      }
    }
  }
  // Runs body(rank, comm) on both ranks.
  template <typename F>
  void onRanks(F body) {
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        ASSERT_TRUE(rt_->setDevice(0).isOk());
        body(r, comms_[r]);
      });
    }
    for (auto& t : threads) t.join();
  }
  Runtime* rt_ = nullptr;
  weftComm_t comms_[2] = {nullptr, nullptr};
};

TEST_F(PreMulSumGpu, KernelsMatchTheHostExecutorBitForBit) {
  const size_t count = 100003;
  onRanks([&](int rank, weftComm_t comm) {
    Stream stream = nullptr;
    ASSERT_TRUE(rt_->streamCreate(&stream).isOk());
    for (weftDataType_t type : kAllTypes) {
      const size_t es = sizeOf(type), bytes = count * es;
      std::mt19937_64 rng(1000 * static_cast<uint64_t>(type) + static_cast<uint64_t>(rank));
      std::vector<char> in(bytes), hostOut(bytes), deviceOut(bytes);
      for (size_t i = 0; i < count; ++i) randomElement(type, rng, in.data() + i * es);
      uint64_t scalar = 0;
      randomElement(type, rng, &scalar);
      weftRedOp_t op;
      ASSERT_EQ(weftRedOpCreatePreMulSum(&op, &scalar, type, weftScalarHostImmediate, comm), weftSuccess)
          << weftGetLastError(comm);
      // The host executor.
      ASSERT_EQ(weftAllReduce(in.data(), hostOut.data(), count, type, op, comm, nullptr), weftSuccess)
          << weftGetLastError(comm);
      // The lane kernels.
      void* dSend = nullptr;
      void* dRecv = nullptr;
      ASSERT_TRUE(rt_->allocDevice(bytes, &dSend).isOk());
      ASSERT_TRUE(rt_->allocDevice(bytes, &dRecv).isOk());
      ASSERT_TRUE(rt_->copy(dSend, in.data(), bytes, CopyKind::kHostToDevice).isOk());
      ASSERT_EQ(weftAllReduce(dSend, dRecv, count, type, op, comm, stream), weftSuccess) << weftGetLastError(comm);
      ASSERT_TRUE(rt_->streamSynchronize(stream).isOk());
      ASSERT_TRUE(rt_->copy(deviceOut.data(), dRecv, bytes, CopyKind::kDeviceToHost).isOk());
      size_t differ = 0, first = count;
      for (size_t i = 0; i < count; ++i) {
        if (std::memcmp(hostOut.data() + i * es, deviceOut.data() + i * es, es) != 0) {
          ++differ;
          if (first == count) first = i;
        }
      }
      EXPECT_EQ(differ, 0u) << "datatype " << type << ": " << differ << " elements differ, the first at " << first;
      (void)rt_->freeDevice(dSend);
      (void)rt_->freeDevice(dRecv);
      EXPECT_EQ(weftRedOpDestroy(op, comm), weftSuccess);
    }
    weftResult_t async = weftInternalError;
    EXPECT_EQ(weftCommGetAsyncError(comm, &async), weftSuccess);
    EXPECT_EQ(async, weftSuccess) << weftGetLastError(comm);
    (void)rt_->streamDestroy(stream);
  });
}

TEST_F(PreMulSumGpu, DeviceScalarIsReadAtEachRun) {
  const size_t count = 4096;
  onRanks([&](int rank, weftComm_t comm) {
    Stream stream = nullptr;
    ASSERT_TRUE(rt_->streamCreate(&stream).isOk());
    void* dScalar = nullptr;
    void* dSend = nullptr;
    void* dRecv = nullptr;
    ASSERT_TRUE(rt_->allocDevice(sizeof(float), &dScalar).isOk());
    ASSERT_TRUE(rt_->allocDevice(count * sizeof(float), &dSend).isOk());
    ASSERT_TRUE(rt_->allocDevice(count * sizeof(float), &dRecv).isOk());
    std::vector<float> x(count), y(count);
    for (size_t i = 0; i < count; ++i) x[i] = static_cast<float>(i % 64);
    ASSERT_TRUE(rt_->copy(dSend, x.data(), count * sizeof(float), CopyKind::kHostToDevice).isOk());
    float s = 1.0f;
    ASSERT_TRUE(rt_->copy(dScalar, &s, sizeof(s), CopyKind::kHostToDevice).isOk());
    weftRedOp_t op;
    ASSERT_EQ(weftRedOpCreatePreMulSum(&op, dScalar, weftFloat32, weftScalarDevice, comm), weftSuccess)
        << weftGetLastError(comm);
    for (int round = 1; round <= 3; ++round) {
      s = static_cast<float>(rank + round);  // ranks 0 and 1: factor (round) + (round + 1)
      ASSERT_TRUE(rt_->copy(dScalar, &s, sizeof(s), CopyKind::kHostToDevice).isOk());
      ASSERT_EQ(weftAllReduce(dSend, dRecv, count, weftFloat32, op, comm, stream), weftSuccess);
      ASSERT_TRUE(rt_->streamSynchronize(stream).isOk());
      ASSERT_TRUE(rt_->copy(y.data(), dRecv, count * sizeof(float), CopyKind::kDeviceToHost).isOk());
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(y[i], static_cast<float>(2 * round + 1) * x[i]) << round << " " << i;
      // Host buffers with the device scalar: read through the runtime when the call runs.
      std::vector<float> hostOut(count);
      ASSERT_EQ(weftAllReduce(x.data(), hostOut.data(), count, weftFloat32, op, comm, nullptr), weftSuccess)
          << weftGetLastError(comm);
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(hostOut[i], y[i]) << round << " " << i;
    }
    EXPECT_EQ(weftRedOpDestroy(op, comm), weftSuccess);
    (void)rt_->freeDevice(dScalar);
    (void)rt_->freeDevice(dSend);
    (void)rt_->freeDevice(dRecv);
    (void)rt_->streamDestroy(stream);
  });
}

}  // namespace
}  // namespace device
}  // namespace weft
