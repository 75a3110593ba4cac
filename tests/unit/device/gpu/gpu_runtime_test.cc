// The GPU runtime on a real device (ctest label `gpu`): memory, copies, streams, events, IPC
// export, pointer queries, errors that name the call, and a reduce-copy launch checked against
// exact answers. Each test skips with the loader's reason on a machine without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <regex>
#include <vector>

#include "device/gpu_loader.h"
#include "unit/device/device_test_util.h"

namespace weft {
namespace device {
namespace {

// The runtime of the modules this build made, loaded once per process.
GpuLoadResult& loaded() {
  static GpuLoadResult result = [] {
    GpuLoadOptions o;
    o.dirs = {testing::moduleDir()};
    o.searchDefaultPath = false;
    return loadGpuRuntime(o);
  }();
  return result;
}

class GpuRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rt_ = loaded().runtime.get();
    if (rt_ == nullptr) GTEST_SKIP() << "no GPU: " << loaded().report;
    ASSERT_TRUE(rt_->setDevice(0).isOk());
  }
  // Device memory freed at the end of the test.
  void* deviceBuffer(size_t bytes) {
    void* p = nullptr;
    Status s = rt_->allocDevice(bytes, &p);
    EXPECT_TRUE(s.isOk()) << s.message();
    buffers_.push_back(p);
    return p;
  }
  void TearDown() override {
    for (void* p : buffers_) EXPECT_TRUE(rt_->freeDevice(p).isOk());
  }
  Runtime* rt_ = nullptr;
  std::vector<void*> buffers_;
};

TEST_F(GpuRuntimeTest, DevicePropertiesAreQueriedNotAssumed) {
  for (int d = 0; d < rt_->deviceCount(); ++d) {
    DeviceProps p;
    Status s = rt_->deviceProps(d, &p);
    ASSERT_TRUE(s.isOk()) << s.message();
    EXPECT_FALSE(p.name.empty());
    EXPECT_TRUE(p.warpSize == 32 || p.warpSize == 64) << p.warpSize;
    EXPECT_GT(p.multiProcessors, 0);
    EXPECT_GT(p.totalMemoryBytes, 0u);
    EXPECT_TRUE(std::regex_match(p.arch, std::regex("sm_[0-9]+|gfx[0-9a-f]+"))) << p.arch;
    EXPECT_TRUE(std::regex_match(p.pciBusId, std::regex("[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-9]")))
        << p.pciBusId;
  }
}

TEST_F(GpuRuntimeTest, CopiesRoundTripAndPointersAreClassified) {
  const size_t n = (1 << 20) + 3;
  std::vector<uint8_t> in(n), out(n, 0);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<uint8_t>(i * 31 + 7);
  void* a = deviceBuffer(n);
  void* b = deviceBuffer(n);
  ASSERT_TRUE(rt_->copy(a, in.data(), n, CopyKind::kHostToDevice).isOk());
  ASSERT_TRUE(rt_->copy(b, a, n, CopyKind::kDeviceToDevice).isOk());
  ASSERT_TRUE(rt_->copy(out.data(), b, n, CopyKind::kDefault).isOk());
  EXPECT_EQ(out, in);

  PointerInfo info;
  ASSERT_TRUE(rt_->pointerInfo(a, &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kDevice);
  EXPECT_EQ(info.device, 0);
  ASSERT_TRUE(rt_->pointerInfo(static_cast<char*>(a) + 100, &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kDevice) << "inside an allocation";
  ASSERT_TRUE(rt_->pointerInfo(in.data(), &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kHost);
  EXPECT_EQ(info.device, -1);
  void* pinned = nullptr;
  ASSERT_TRUE(rt_->allocHost(4096, &pinned).isOk());
  ASSERT_TRUE(rt_->pointerInfo(pinned, &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kPinnedHost);
  EXPECT_TRUE(rt_->freeHost(pinned).isOk());
}

TEST_F(GpuRuntimeTest, StreamsEventsAndAsyncWork) {
  const size_t n = 64 << 20;
  void* a = deviceBuffer(n);
  Stream s = nullptr;
  Event start = nullptr, end = nullptr;
  ASSERT_TRUE(rt_->streamCreate(&s).isOk());
  ASSERT_TRUE(rt_->eventCreate(&start).isOk());
  ASSERT_TRUE(rt_->eventCreate(&end).isOk());
  ASSERT_TRUE(rt_->eventRecord(start, s).isOk());
  ASSERT_TRUE(rt_->memsetAsync(a, 0x3c, n, s).isOk());
  ASSERT_TRUE(rt_->eventRecord(end, s).isOk());
  bool done = false;
  ASSERT_TRUE(rt_->streamQuery(s, &done).isOk());  // either answer is right; no error
  ASSERT_TRUE(rt_->eventSynchronize(end).isOk());
  ASSERT_TRUE(rt_->eventQuery(end, &done).isOk());
  EXPECT_TRUE(done);
  ASSERT_TRUE(rt_->streamSynchronize(s).isOk());
  ASSERT_TRUE(rt_->streamQuery(s, &done).isOk());
  EXPECT_TRUE(done);
  float ms = -1;
  ASSERT_TRUE(rt_->eventElapsedMs(start, end, &ms).isOk());
  EXPECT_GE(ms, 0.0f);
  std::vector<uint8_t> tail(16);
  ASSERT_TRUE(rt_->copyAsync(tail.data(), static_cast<char*>(a) + n - 16, 16, CopyKind::kDeviceToHost, s).isOk());
  ASSERT_TRUE(rt_->streamSynchronize(s).isOk());
  EXPECT_EQ(tail, std::vector<uint8_t>(16, 0x3c));
  EXPECT_TRUE(rt_->eventDestroy(start).isOk());
  EXPECT_TRUE(rt_->eventDestroy(end).isOk());
  EXPECT_TRUE(rt_->streamDestroy(s).isOk());
}

TEST_F(GpuRuntimeTest, ErrorsNameTheCallTheDeviceAndTheRuntimeError) {
  void* p = nullptr;
  Status s = rt_->allocDevice(size_t{1} << 60, &p);
  EXPECT_EQ(s.code(), weftUnhandledDeviceError);
  EXPECT_TRUE(std::regex_search(
      s.message(), std::regex(R"(^(cuda|hip)Malloc\(1048576 TiB\) on device 0: (.+ \()?(cuda|hip)Error[A-Za-z]+\)?$)")))
      << s.message();
  s = rt_->setDevice(rt_->deviceCount());
  EXPECT_EQ(s.code(), weftUnhandledDeviceError);
  EXPECT_NE(s.message().find("SetDevice(" + std::to_string(rt_->deviceCount()) + ")"), std::string::npos)
      << s.message();
  // The failures above do not leak into the next call.
  void* ok = deviceBuffer(256);
  EXPECT_NE(ok, nullptr);
}

TEST_F(GpuRuntimeTest, IpcExportGivesAHandle) {
  void* a = deviceBuffer(1 << 20);
  IpcHandle h{};
  Status s = rt_->ipcExport(a, &h);
  ASSERT_TRUE(s.isOk()) << s.message();
  bool nonzero = false;
  for (uint8_t b : h.bytes) nonzero |= b != 0;
  EXPECT_TRUE(nonzero);
}

TEST_F(GpuRuntimeTest, ReduceCopySumsIntoEveryDestination) {
  const size_t n = 1000003;
  std::vector<float> host(n);
  ReduceCopyArgs args;
  args.type = weftFloat32;
  args.op = weftSum;
  args.nSrcs = 3;
  args.nDsts = 2;
  args.count = n;
  for (int k = 0; k < 3; ++k) {
    for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>((i % 1000) * (k + 1));
    void* src = deviceBuffer(n * sizeof(float));
    ASSERT_TRUE(rt_->copy(src, host.data(), n * sizeof(float), CopyKind::kHostToDevice).isOk());
    args.srcs[k] = src;
  }
  for (int j = 0; j < 2; ++j) args.dsts[j] = deviceBuffer(n * sizeof(float));
  Status s = rt_->launchReduceCopy(args, nullptr);
  if (s.code() == weftInternalError && s.message().find("built without") != std::string::npos) {
    GTEST_SKIP() << s.message();
  }
  ASSERT_TRUE(s.isOk()) << s.message();
  ASSERT_TRUE(rt_->streamSynchronize(nullptr).isOk());
  for (int j = 0; j < 2; ++j) {
    ASSERT_TRUE(rt_->copy(host.data(), args.dsts[j], n * sizeof(float), CopyKind::kDeviceToHost).isOk());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(host[i], static_cast<float>((i % 1000) * 6)) << "dst " << j << " at " << i;
  }
}

TEST_F(GpuRuntimeTest, ReduceCopyChecksWhereBuffersLive) {
  std::vector<float> pageable(16, 1.0f);
  ReduceCopyArgs args;
  args.nSrcs = 1;
  args.srcs[0] = pageable.data();
  args.nDsts = 1;
  args.dsts[0] = deviceBuffer(16 * sizeof(float));
  args.count = 16;
  Status s = rt_->launchReduceCopy(args, nullptr);
  // Devices that read pageable memory (HMM, ATS) accept it; the others must refuse it, by name.
  if (!s.isOk()) {
    EXPECT_EQ(s.code(), weftInvalidArgument) << s.message();
    EXPECT_NE(s.message().find("srcs[0]"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("pageable host memory"), std::string::npos) << s.message();
  }
  ASSERT_TRUE(rt_->streamSynchronize(nullptr).isOk());
  args.nSrcs = 0;
  EXPECT_EQ(rt_->launchReduceCopy(args, nullptr).code(), weftInvalidArgument);
}

}  // namespace
}  // namespace device
}  // namespace weft
