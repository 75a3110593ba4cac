// weft-perf's GPU access (perf/gpu_api.h) and the rank buffers on top of it (rank_buffers.h),
// without a GPU: the sentence that says why there is none (every library tried, and why each
// was not used), --mem auto resolving to host memory on such a machine and --mem device
// refused with that sentence, and every call of the layer through a stand-in runtime on host
// memory (fake/fake_gpu_runtime.cc, prefix "fake"), which also carries the rank buffers' copies.
#include "perf/gpu_api.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "perf/options.h"
#include "perf/rank_buffers.h"

namespace weft::perf {
namespace {

// The stand-in runtime with n devices granting allocations up to `memory` bytes.
GpuLoadResult loadFake(int devices, size_t memory = size_t{1} << 40) {
  void* lib = dlopen(WEFT_TEST_FAKE_GPU, RTLD_NOW | RTLD_LOCAL);  // the handle loadGpuApi gets too
  EXPECT_NE(lib, nullptr) << dlerror();
  if (lib == nullptr) return {};
  reinterpret_cast<void (*)(int)>(dlsym(lib, "fakeTestSetDevices"))(devices);
  reinterpret_cast<void (*)(size_t)>(dlsym(lib, "fakeTestSetMemoryLimit"))(memory);
  return loadGpuApi({{"fake", {WEFT_TEST_FAKE_GPU}}});
}

TEST(PerfGpuApi, NamesEveryLibraryThatIsMissing) {
  const GpuLoadResult r =
      loadGpuApi({{"cuda", {"libweft-no-cudart.so", "libweft-no-cudart.so.12"}}, {"hip", {"libweft-no-hip.so.6"}}});
  EXPECT_EQ(r.api, nullptr);
  EXPECT_EQ(r.whyNot,
            "no GPU (libweft-no-cudart.so, libweft-no-cudart.so.12: not found; libweft-no-hip.so.6: not found)");
  EXPECT_EQ(loadGpuApi({}).whyNot, "no GPU (no GPU runtime was named)");
}

// A library that loads but is no GPU runtime: the functions it lacks, by name.
TEST(PerfGpuApi, SaysWhatALibraryLacks) {
  const GpuLoadResult r = loadGpuApi({{"cuda", {"libm.so.6"}}});
  EXPECT_EQ(r.api, nullptr);
  EXPECT_EQ(r.whyNot.rfind("no GPU (libm.so.6: lacks cudaGetDeviceCount, cudaSetDevice, ", 0), 0u) << r.whyNot;
}

// This machine, through the libraries weft-perf really tries.
TEST(PerfGpuApi, RefusesWithEveryLibraryTriedWhenThereIsNoGpu) {
  std::string why;
  if (GpuApi* gpu = gpuApi(&why)) GTEST_SKIP() << "a GPU is present: " << gpu->file() << ", " << gpu->version();
  EXPECT_EQ(why.rfind("no GPU (", 0), 0u) << why;
  EXPECT_EQ(why.back(), ')') << why;
  // The first file of each runtime is named, whether it was missing or found no device.
  for (const GpuLibrary& lib : defaultGpuLibraries()) {
    EXPECT_NE(why.find(lib.files[0]), std::string::npos) << lib.files[0] << " in: " << why;
  }
  // A runtime that loaded says which call found nothing.
  if (why.find(defaultGpuLibraries()[0].files[0] + ": ") != std::string::npos) {
    EXPECT_NE(why.find("cudaGetDeviceCount"), std::string::npos) << why;
  }
  // Asked again, the same answer (decided once per process).
  std::string again;
  EXPECT_EQ(gpuApi(&again), nullptr);
  EXPECT_EQ(again, why);
}

// --mem auto is host memory here, and --mem device is refused with the reason.
TEST(PerfGpuApi, MemoryResolvesToHostWithoutAGpu) {
  std::string why;
  if (gpuApi(&why)) GTEST_SKIP() << "a GPU is present";
  MemKind m = MemKind::kAuto;
  std::string error;
  ASSERT_TRUE(resolveMemory(MemKind::kAuto, why.c_str(), &m, &error));
  EXPECT_EQ(m, MemKind::kHost);
  EXPECT_FALSE(resolveMemory(MemKind::kDevice, why.c_str(), &m, &error));
  EXPECT_EQ(error, "--mem device: " + why + "; run with --mem host");
}

TEST(PerfGpuApi, ARuntimeWithoutDevicesSaysSo) {
  const GpuLoadResult r = loadFake(0);
  EXPECT_EQ(r.api, nullptr);
  EXPECT_EQ(r.whyNot, std::string("no GPU (") + WEFT_TEST_FAKE_GPU +
                          ": fakeGetDeviceCount: no fake device is detected (fakeErrorNoDevice))");
}

TEST(PerfGpuApi, EveryCallThroughAStandInRuntime) {
  GpuLoadResult r = loadFake(2);
  ASSERT_NE(r.api, nullptr) << r.whyNot;
  GpuApi& gpu = *r.api;
  EXPECT_EQ(gpu.prefix(), "fake");
  EXPECT_EQ(gpu.file(), WEFT_TEST_FAKE_GPU);
  EXPECT_EQ(gpu.deviceCount(), 2);
  EXPECT_EQ(gpu.version(), "CUDA runtime 12.4, driver 12.8");
  EXPECT_EQ(gpu.deviceName(1), "Fake GPU 1");
  EXPECT_EQ(gpu.pciBusId(1), "0000:17:01.0");
  EXPECT_EQ(gpu.deviceName(7), "");  // no such device: nothing to say, and no error left behind

  ASSERT_TRUE(gpu.setDevice(1).ok());
  int dev = -1;
  ASSERT_TRUE(gpu.getDevice(&dev).ok());
  EXPECT_EQ(dev, 1);
  EXPECT_EQ(gpu.setDevice(5).error,
            "fakeSetDevice(5): invalid device ordinal (fakeErrorInvalidDevice) (this process "
            "sees 2 GPUs)");

  void* d = nullptr;
  ASSERT_TRUE(gpu.malloc(&d, 64).ok());
  std::vector<char> in(64), out(64, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<char>(i);
  ASSERT_TRUE(gpu.memcpy(d, in.data(), 64, GpuCopy::kHostToDevice).ok());
  ASSERT_TRUE(gpu.memcpy(out.data(), d, 64, GpuCopy::kDeviceToHost).ok());
  EXPECT_EQ(out, in);
  GpuStream s = nullptr;
  ASSERT_TRUE(gpu.streamCreate(&s, kGpuStreamNonBlocking).ok());
  ASSERT_TRUE(gpu.memsetAsync(d, 7, 64, s).ok());
  ASSERT_TRUE(gpu.memcpyAsync(out.data(), d, 64, GpuCopy::kDeviceToHost, s).ok());
  ASSERT_TRUE(gpu.streamSynchronize(s).ok());
  EXPECT_EQ(out, std::vector<char>(64, 7));
  GpuEvent a = nullptr, b = nullptr;
  ASSERT_TRUE(gpu.eventCreate(&a).ok());
  ASSERT_TRUE(gpu.eventCreate(&b).ok());
  float ms = -1;
  // Not recorded yet: the call that failed, the GPU, the runtime's sentence and name.
  EXPECT_EQ(gpu.eventElapsedMs(a, b, &ms).error,
            "fakeEventElapsedTime() on GPU 1: invalid argument (fakeErrorInvalidValue)");
  ASSERT_TRUE(gpu.eventRecord(a, s).ok());
  ASSERT_TRUE(gpu.eventRecord(b, s).ok());
  ASSERT_TRUE(gpu.eventSynchronize(b).ok());
  ASSERT_TRUE(gpu.eventElapsedMs(a, b, &ms).ok());
  EXPECT_GE(ms, 0.0f);
  EXPECT_TRUE(gpu.eventDestroy(a).ok());
  EXPECT_TRUE(gpu.eventDestroy(b).ok());
  EXPECT_TRUE(gpu.streamDestroy(s).ok());
  EXPECT_TRUE(gpu.free(d).ok());
  EXPECT_TRUE(gpu.free(nullptr).ok());

  void* huge = nullptr;
  EXPECT_EQ(gpu.malloc(&huge, size_t{3} << 40).error,
            "fakeMalloc(3 TiB) on GPU 1: out of memory (fakeErrorMemoryAllocation)");
  EXPECT_EQ(huge, nullptr);
  EXPECT_TRUE(gpu.malloc(&huge, 0).ok());  // 0 bytes: nullptr, as the device runtime does
  EXPECT_EQ(huge, nullptr);
}

TEST(PerfRankBuffers, HostBuffersAreTheirOwnMirrors) {
  std::unique_ptr<RankBuffers> b;
  std::string error;
  ASSERT_TRUE(RankBuffers::make(4096, nullptr, &b, &error)) << error;
  EXPECT_FALSE(b->onDevice());
  EXPECT_EQ(b->stream(), nullptr);
  EXPECT_EQ(b->mirror(b->send() + 10), b->send() + 10);
  EXPECT_EQ(b->mirror(b->recv() + 4096), b->recv() + 4096);
  EXPECT_TRUE(b->upload(b->recv(), 4096).ok());
  EXPECT_TRUE(b->synchronize().ok());
}

// Device buffers: offsets into send() and recv() map onto the mirrors, uploads and downloads
// move exactly the range asked for.
TEST(PerfRankBuffers, DeviceBuffersMoveThroughTheirMirrors) {
  GpuLoadResult r = loadFake(1);
  ASSERT_NE(r.api, nullptr) << r.whyNot;
  std::unique_ptr<RankBuffers> b;
  std::string error;
  ASSERT_TRUE(RankBuffers::make(256, r.api.get(), &b, &error)) << error;
  EXPECT_TRUE(b->onDevice());
  EXPECT_NE(b->stream(), nullptr);
  char* hs = b->mirror(b->send());
  char* hr = b->mirror(b->recv());
  EXPECT_NE(hs, b->send());
  EXPECT_NE(hr, b->recv());
  EXPECT_EQ(b->mirror(b->recv() + 100), hr + 100);
  EXPECT_EQ(b->mirror(b->send() + 255), hs + 255);

  std::memset(hs, 1, 256);
  std::memset(hr, 2, 256);
  ASSERT_TRUE(b->upload(b->send(), 256).ok());
  ASSERT_TRUE(b->upload(b->recv() + 16, 32).ok());  // only [16, 48) of recv
  std::memset(hs, 0, 256);
  std::memset(hr, 0, 256);
  ASSERT_TRUE(b->download(b->send() + 8, 8).ok());
  ASSERT_TRUE(b->download(b->recv(), 256).ok());
  EXPECT_EQ(hs[7], 0);
  EXPECT_EQ(hs[8], 1);
  EXPECT_EQ(hs[15], 1);
  EXPECT_EQ(hs[16], 0);
  EXPECT_EQ(hr[16], 2);
  EXPECT_EQ(hr[47], 2);
  EXPECT_NE(hr[48], 2);  // never uploaded: whatever the device memory held
  EXPECT_TRUE(b->synchronize().ok());
}

TEST(PerfRankBuffers, ADeviceThatIsTooSmallSaysWhatToLower) {
  GpuLoadResult r = loadFake(1, 4096);
  ASSERT_NE(r.api, nullptr) << r.whyNot;
  ASSERT_TRUE(r.api->setDevice(0).ok());  // the buffers go where the rank's thread points
  std::unique_ptr<RankBuffers> b;
  std::string error;
  EXPECT_FALSE(RankBuffers::make(8192, r.api.get(), &b, &error));
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(error, "fakeMalloc(8 KiB) on GPU 0: out of memory (fakeErrorMemoryAllocation); lower -e/--maxbytes");
}

}  // namespace
}  // namespace weft::perf
