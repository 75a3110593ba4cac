// Premul-sum ops on the device path, on the emulated device (WEFT_GPU_BACKEND=emulated: host
// memory posing as one GPU, launches run by the lane program compiled for the host): every
// reducing collective, algorithm and datatype, with the scalar as a host immediate and in
// device memory, in place and out of place; a device scalar read each time a collective runs,
// on a stream and on host buffers (NULL stream: read through the device runtime); a fused
// group; a device scalar that is not device memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "collectives/datatypes.h"
#include "device/device.h"
#include "device/gpu_loader.h"
#include "weft/weft.h"

namespace {

using weft::coll::dataTypeSize;

// Before anything asks for the GPU runtime (it is chosen once per process).
struct UseEmulatedDevice {
  UseEmulatedDevice() { setenv("WEFT_GPU_BACKEND", "emulated", 1); }
} useEmulatedDevice;

weft::device::Runtime& rt() { return *weft::device::gpuRuntime(); }

const weftDataType_t kAllTypes[] = {weftInt8,    weftUint8,    weftInt32,      weftUint32,
                                    weftInt64,   weftUint64,   weftFloat16,    weftFloat32,
                                    weftFloat64, weftBfloat16, weftFloat8e4m3, weftFloat8e5m2};

bool isInteger(weftDataType_t t) {
  return t == weftInt8 || t == weftUint8 || t == weftInt32 || t == weftUint32 || t == weftInt64 || t == weftUint64;
}

// Stores a small exact value: integers wrap modulo 2^bits, floats are exact in every type here.
void put(weftDataType_t t, void* buf, size_t i, double v) {
  char* at = static_cast<char*>(buf) + i * dataTypeSize(t);
  if (isInteger(t)) {
    const int64_t w = static_cast<int64_t>(v);
    std::memcpy(at, &w, dataTypeSize(t));  // little-endian: the low bytes
    return;
  }
  const float f = static_cast<float>(v);
  switch (t) {
    case weftFloat16: {
      auto x = weft::coll::Half(f);
      std::memcpy(at, &x, 2);
      break;
    }
    case weftBfloat16: {
      auto x = weft::coll::BFloat16(f);
      std::memcpy(at, &x, 2);
      break;
    }
    case weftFloat8e4m3: {
      auto x = weft::coll::Fp8E4M3(f);
      std::memcpy(at, &x, 1);
      break;
    }
    case weftFloat8e5m2: {
      auto x = weft::coll::Fp8E5M2(f);
      std::memcpy(at, &x, 1);
      break;
    }
    case weftFloat32:
      std::memcpy(at, &f, 4);
      break;
    default:
      std::memcpy(at, &v, 8);
      break;
  }
}

// As in tests/api/premul_test.cc: products and partial sums exact in the type over up to 4
// ranks whatever the order (scheme 0: scalars +-2, inputs -1..1; scheme 1, not for FP8:
// scalars -3..0, inputs -3..3), each rank with its own scalar.
double scalarOf(int scheme, int rank) { return scheme == 0 ? (rank % 2 ? -2.0 : 2.0) : static_cast<double>(rank - 3); }
double inputOf(int scheme, int rank, size_t g) {
  return scheme == 0 ? static_cast<double>((static_cast<size_t>(rank) * 5 + g * 3) % 3) - 1.0
                     : static_cast<double>((static_cast<size_t>(rank) * 7 + g) % 7) - 3.0;
}
std::vector<int> schemesFor(weftDataType_t t) {
  return t == weftFloat8e4m3 || t == weftFloat8e5m2 ? std::vector<int>{0} : std::vector<int>{0, 1};
}
// The expected result from the first product on, so that a sum of -0s stays -0 (IEEE).
void expected(weftDataType_t t, int scheme, int nranks, size_t first, size_t count, std::vector<char>* out) {
  out->assign(count * dataTypeSize(t) + 1, 0);
  for (size_t i = 0; i < count; ++i) {
    double sum = scalarOf(scheme, 0) * inputOf(scheme, 0, first + i);
    for (int r = 1; r < nranks; ++r) sum += scalarOf(scheme, r) * inputOf(scheme, r, first + i);
    put(t, out->data(), i, sum);
  }
}
size_t mismatches(weftDataType_t t, const void* got, const void* want, size_t count) {
  size_t es = dataTypeSize(t), bad = 0;
  for (size_t i = 0; i < count; ++i) {
    bad += std::memcmp(static_cast<const char*>(got) + i * es, static_cast<const char*>(want) + i * es, es) != 0;
  }
  return bad;
}

// Device memory of `bytes`, freed on scope exit (the emulated device's memory is host memory).
struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes) { EXPECT_TRUE(rt().allocDevice(bytes + 1, &ptr).isOk()); }
  ~DeviceBuffer() { (void)rt().freeDevice(ptr); }
  char* c() { return static_cast<char*>(ptr); }
  void* ptr = nullptr;
};

struct Stream {
  Stream() { EXPECT_TRUE(rt().streamCreate(&s).isOk()); }
  ~Stream() { (void)rt().streamDestroy(s); }
  void sync() { ASSERT_TRUE(rt().streamSynchronize(s).isOk()); }
  weft::device::Stream s = nullptr;
};

void onRanks(int n, const std::function<void(int, weftComm_t)>& fn) {
  std::vector<weftComm_t> comms(static_cast<size_t>(n));
  ASSERT_EQ(weftCommInitAll(comms.data(), n, nullptr), weftSuccess) << weftGetLastError(nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { fn(r, comms[static_cast<size_t>(r)]); });
  for (auto& t : threads) t.join();
  for (auto c : comms) EXPECT_EQ(weftCommDestroy(c), weftSuccess);
}

// The op with this rank's scalar, as an immediate or in device memory (`scalarMemory`).
weftRedOp_t makeOp(weftComm_t comm, weftDataType_t t, double scalar, bool onDevice, DeviceBuffer* scalarMemory) {
  uint64_t bytes = 0;
  put(t, &bytes, 0, scalar);
  void* where = &bytes;
  if (onDevice) {
    std::memcpy(scalarMemory->ptr, &bytes, dataTypeSize(t));
    where = scalarMemory->ptr;
  }
  weftRedOp_t op = weftSum;
  EXPECT_EQ(weftRedOpCreatePreMulSum(&op, where, t, onDevice ? weftScalarDevice : weftScalarHostImmediate, comm),
            weftSuccess)
      << weftGetLastError(comm);
  return op;
}

class PreMulSumDevice : public ::testing::TestWithParam<int> {
 protected:
  void TearDown() override {
    unsetenv("WEFT_ALGO");
    unsetenv("WEFT_TREE_MAX_BYTES");
  }
};

TEST_P(PreMulSumDevice, EveryReducingCollectiveAlgorithmTypeAndResidence) {
  const int n = GetParam();
  for (const char* algo : {"ring", "tree", "doubling"}) {
    setenv("WEFT_ALGO", algo, 1);
    if (std::string(algo) == "ring") {
      setenv("WEFT_TREE_MAX_BYTES", "0", 1);  // reduce as a chain
    } else {
      unsetenv("WEFT_TREE_MAX_BYTES");
    }
    onRanks(n, [&](int rank, weftComm_t comm) {
      Stream stream;
      DeviceBuffer scalarMemory(8);
      for (weftDataType_t type : kAllTypes) {
        const size_t es = dataTypeSize(type);
        for (int scheme : schemesFor(type)) {
          for (bool onDevice : {false, true}) {
            const weftRedOp_t op = makeOp(comm, type, scalarOf(scheme, rank), onDevice, &scalarMemory);
            for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1531}}) {
              for (bool inPlace : {false, true}) {
                const std::string what = std::string(algo) + " " + weft::coll::dataTypeName(type) + " scheme " +
                                         std::to_string(scheme) + (onDevice ? " device scalar" : " immediate") +
                                         " count " + std::to_string(count) + (inPlace ? " in place" : "") + " rank " +
                                         std::to_string(rank);
                DeviceBuffer send(count * n * es), recv(count * n * es);
                std::vector<char> want;
                // All-reduce.
                for (size_t g = 0; g < count; ++g) put(type, send.c(), g, inputOf(scheme, rank, g));
                char* out = inPlace ? send.c() : recv.c();
                ASSERT_EQ(weftAllReduce(send.ptr, out, count, type, op, comm, stream.s), weftSuccess)
                    << weftGetLastError(comm);
                stream.sync();
                expected(type, scheme, n, 0, count, &want);
                EXPECT_EQ(mismatches(type, out, want.data(), count), 0u) << "allreduce " << what;
                // Reduce-scatter.
                for (size_t g = 0; g < count * n; ++g) put(type, send.c(), g, inputOf(scheme, rank, g));
                out = inPlace ? send.c() + rank * count * es : recv.c();
                ASSERT_EQ(weftReduceScatter(send.ptr, out, count, type, op, comm, stream.s), weftSuccess)
                    << weftGetLastError(comm);
                stream.sync();
                expected(type, scheme, n, rank * count, count, &want);
                EXPECT_EQ(mismatches(type, out, want.data(), count), 0u) << "reducescatter " << what;
                // Reduce to a root that moves with the count.
                const int root = static_cast<int>(count % static_cast<size_t>(n));
                for (size_t g = 0; g < count; ++g) put(type, send.c(), g, inputOf(scheme, rank, g));
                out = inPlace ? send.c() : recv.c();
                ASSERT_EQ(weftReduce(send.ptr, out, count, type, op, root, comm, stream.s), weftSuccess)
                    << weftGetLastError(comm);
                stream.sync();
                if (rank == root) {
                  expected(type, scheme, n, 0, count, &want);
                  EXPECT_EQ(mismatches(type, out, want.data(), count), 0u) << "reduce " << what;
                }
              }
            }
            EXPECT_EQ(weftRedOpDestroy(op, comm), weftSuccess);
          }
        }
      }
      weftResult_t async = weftInternalError;
      EXPECT_EQ(weftCommGetAsyncError(comm, &async), weftSuccess);
      EXPECT_EQ(async, weftSuccess);
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, PreMulSumDevice, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) { return "n" + std::to_string(i.param); });

// weftScalarDevice: the scalar is read when the collective runs, not when the op is made, both
// by the lanes (a stream) and by the host executor (host buffers, NULL stream).
TEST(PreMulSumDeviceScalar, ReadEachTimeACollectiveRuns) {
  const int n = 3;
  onRanks(n, [&](int rank, weftComm_t comm) {
    Stream stream;
    DeviceBuffer scalar(sizeof(float)), send(64 * sizeof(float)), recv(64 * sizeof(float));
    float* s = reinterpret_cast<float*>(scalar.ptr);
    float* x = reinterpret_cast<float*>(send.ptr);
    float* y = reinterpret_cast<float*>(recv.ptr);
    *s = 1.0f;
    weftRedOp_t op;
    ASSERT_EQ(weftRedOpCreatePreMulSum(&op, scalar.ptr, weftFloat32, weftScalarDevice, comm), weftSuccess)
        << weftGetLastError(comm);
    for (int i = 0; i < 64; ++i) x[i] = static_cast<float>(i);
    std::vector<float> hostIn(64), hostOut(64);
    for (int i = 0; i < 64; ++i) hostIn[i] = static_cast<float>(i);
    // Each round every rank sets its scalar to rank + round before the calls: sum = i * sum_r(r + round).
    for (int round = 1; round <= 3; ++round) {
      *s = static_cast<float>(rank + round);
      const float factor = static_cast<float>(n * round + n * (n - 1) / 2);
      ASSERT_EQ(weftAllReduce(send.ptr, recv.ptr, 64, weftFloat32, op, comm, stream.s), weftSuccess)
          << weftGetLastError(comm);
      stream.sync();
      for (int i = 0; i < 64; ++i) ASSERT_EQ(y[i], factor * static_cast<float>(i)) << "device, round " << round;
      ASSERT_EQ(weftAllReduce(hostIn.data(), hostOut.data(), 64, weftFloat32, op, comm, nullptr), weftSuccess)
          << weftGetLastError(comm);
      for (int i = 0; i < 64; ++i) ASSERT_EQ(hostOut[i], factor * static_cast<float>(i)) << "host, round " << round;
    }
    EXPECT_EQ(weftRedOpDestroy(op, comm), weftSuccess);
  });
}

// Collectives of a group that share the op run as one launch, each with the scalar.
TEST(PreMulSumDeviceGroup, FusedCollectivesShareTheOp) {
  const int n = 2;
  onRanks(n, [&](int rank, weftComm_t comm) {
    Stream stream;
    DeviceBuffer a(100 * 4), ar(100 * 4), b(100 * 4), br(100 * 4);
    float* as = reinterpret_cast<float*>(a.ptr);
    float* bs = reinterpret_cast<float*>(b.ptr);
    for (int i = 0; i < 100; ++i) as[i] = static_cast<float>(i), bs[i] = static_cast<float>(-i);
    float scalar = rank == 0 ? 0.5f : 4.0f;
    weftRedOp_t op;
    ASSERT_EQ(weftRedOpCreatePreMulSum(&op, &scalar, weftFloat32, weftScalarHostImmediate, comm), weftSuccess);
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    ASSERT_EQ(weftAllReduce(a.ptr, ar.ptr, 100, weftFloat32, op, comm, stream.s), weftSuccess);
    ASSERT_EQ(weftAllReduce(b.ptr, br.ptr, 100, weftFloat32, op, comm, stream.s), weftSuccess);
    ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(comm);
    stream.sync();
    const float* ao = reinterpret_cast<const float*>(ar.ptr);
    const float* bo = reinterpret_cast<const float*>(br.ptr);
    for (int i = 0; i < 100; ++i) {
      ASSERT_EQ(ao[i], 4.5f * static_cast<float>(i)) << i;
      ASSERT_EQ(bo[i], -4.5f * static_cast<float>(i)) << i;
    }
    EXPECT_EQ(weftRedOpDestroy(op, comm), weftSuccess);
  });
}

TEST(PreMulSumDeviceScalar, MustBeMemoryTheDeviceReaches) {
  onRanks(1, [&](int, weftComm_t comm) {
    float pageable = 2.0f;
    weftRedOp_t op = weftSum;
    EXPECT_EQ(weftRedOpCreatePreMulSum(&op, &pageable, weftFloat32, weftScalarDevice, comm), weftInvalidArgument);
    const std::string text = weftGetLastError(comm);
    EXPECT_NE(text.find("pageable host memory"), std::string::npos) << text;
    EXPECT_NE(text.find("weftScalarHostImmediate"), std::string::npos) << text;
    EXPECT_EQ(op, weftSum);
  });
}

}  // namespace
