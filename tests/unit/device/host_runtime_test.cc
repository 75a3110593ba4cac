// The host runtime: the device interface over plain memory, as executors and transports use it
// for host buffers and on machines without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "base/os.h"
#include "device/device.h"
#include "device/host_memory_runtime.h"

namespace weft {
namespace device {
namespace {

TEST(HostRuntime, HasNoDevices) {
  Runtime& rt = hostRuntime();
  EXPECT_STREQ(rt.name(), "host");
  EXPECT_EQ(rt.deviceCount(), 0);
  int device = 7;
  ASSERT_TRUE(rt.getDevice(&device).isOk());
  EXPECT_EQ(device, -1);
  Status s = rt.setDevice(0);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("setDevice(0)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("no devices"), std::string::npos) << s.message();
  DeviceProps props;
  EXPECT_EQ(rt.deviceProps(0, &props).code(), weftInvalidArgument);
  bool can = true;
  EXPECT_EQ(rt.canAccessPeer(0, 1, &can).code(), weftInvalidArgument);
  EXPECT_EQ(rt.enablePeerAccess(1).code(), weftInvalidArgument);
}

class HostAlloc : public ::testing::TestWithParam<size_t> {};

TEST_P(HostAlloc, AlignedWritableAndFreed) {
  Runtime& rt = hostRuntime();
  const size_t bytes = GetParam();
  for (bool pinned : {false, true}) {
    void* p = reinterpret_cast<void*>(1);
    ASSERT_TRUE((pinned ? rt.allocHost(bytes, &p) : rt.allocDevice(bytes, &p)).isOk());
    if (bytes == 0) {
      EXPECT_EQ(p, nullptr);
    } else {
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u) << "aligned like cudaMalloc";
      std::memset(p, 0xab, bytes);
      PointerInfo info;
      ASSERT_TRUE(rt.pointerInfo(p, &info).isOk());
      EXPECT_EQ(info.kind, MemoryKind::kHost);
      EXPECT_EQ(info.device, -1);
    }
    EXPECT_TRUE((pinned ? rt.freeHost(p) : rt.freeDevice(p)).isOk());
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, HostAlloc, ::testing::Values(0, 1, 255, 4096, 1000003));

TEST(HostRuntime, AllocationFailureNamesTheCallAndSize) {
  void* p = reinterpret_cast<void*>(1);
  Status s = hostRuntime().allocDevice(size_t{1} << 62, &p);
  EXPECT_EQ(s.code(), weftSystemError);
  EXPECT_EQ(p, nullptr);
  EXPECT_NE(s.message().find("allocDevice(" + formatBytes(size_t{1} << 62) + ")"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("memory"), std::string::npos) << s.message();
}

TEST(HostRuntime, FreeingNullIsFine) {
  EXPECT_TRUE(hostRuntime().freeDevice(nullptr).isOk());
  EXPECT_TRUE(hostRuntime().freeHost(nullptr).isOk());
}

TEST(HostRuntime, CopiesInEveryDirectionAndOnStreams) {
  Runtime& rt = hostRuntime();
  std::vector<int32_t> src(1001), dst(1001, -1);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<int32_t>(i * 7 - 3);
  for (CopyKind kind :
       {CopyKind::kHostToDevice, CopyKind::kDeviceToHost, CopyKind::kDeviceToDevice, CopyKind::kDefault}) {
    std::fill(dst.begin(), dst.end(), -1);
    ASSERT_TRUE(rt.copy(dst.data(), src.data(), src.size() * sizeof(int32_t), kind).isOk());
    EXPECT_EQ(dst, src);
    std::fill(dst.begin(), dst.end(), -1);
    ASSERT_TRUE(rt.copyAsync(dst.data(), src.data(), src.size() * sizeof(int32_t), kind, nullptr).isOk());
    EXPECT_EQ(dst, src) << "host copies are done when the call returns";
  }
  // Overlapping ranges behave like memmove.
  std::vector<uint8_t> buf = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(rt.copy(buf.data() + 1, buf.data(), 4, CopyKind::kDefault).isOk());
  EXPECT_EQ(buf, (std::vector<uint8_t>{1, 1, 2, 3, 4, 6}));
}

TEST(HostRuntime, NullPointersAreRejectedOnlyWhenThereIsData) {
  Runtime& rt = hostRuntime();
  char byte = 0;
  EXPECT_TRUE(rt.copy(nullptr, nullptr, 0, CopyKind::kDefault).isOk());
  EXPECT_TRUE(rt.memset(nullptr, 0, 0).isOk());
  Status s = rt.copy(nullptr, &byte, 1, CopyKind::kDefault);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("copy(1 B): null pointer"), std::string::npos) << s.message();
  s = rt.memsetAsync(nullptr, 0, 10, nullptr);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("memset"), std::string::npos) << s.message();
  PointerInfo info;
  EXPECT_EQ(rt.pointerInfo(nullptr, &info).code(), weftInvalidArgument);
}

TEST(HostRuntime, Memset) {
  Runtime& rt = hostRuntime();
  std::vector<uint8_t> buf(37, 0);
  ASSERT_TRUE(rt.memset(buf.data() + 1, 0x5a, 35).isOk());
  EXPECT_EQ(buf[0], 0);
  EXPECT_EQ(buf[1], 0x5a);
  EXPECT_EQ(buf[35], 0x5a);
  EXPECT_EQ(buf[36], 0);
  ASSERT_TRUE(rt.memsetAsync(buf.data(), 1, buf.size(), nullptr).isOk());
  EXPECT_EQ(buf[36], 1);
}

TEST(HostRuntime, StreamsCompleteAtOnce) {
  Runtime& rt = hostRuntime();
  Stream a = nullptr, b = nullptr;
  ASSERT_TRUE(rt.streamCreate(&a).isOk());
  ASSERT_TRUE(rt.streamCreate(&b).isOk());
  EXPECT_NE(a, nullptr);
  EXPECT_NE(a, b) << "each stream is its own token";
  bool done = false;
  ASSERT_TRUE(rt.streamQuery(a, &done).isOk());
  EXPECT_TRUE(done);
  EXPECT_TRUE(rt.streamSynchronize(a).isOk());
  EXPECT_TRUE(rt.streamSynchronize(nullptr).isOk());
  EXPECT_TRUE(rt.streamDestroy(a).isOk());
  EXPECT_TRUE(rt.streamDestroy(b).isOk());
  Status s = rt.streamDestroy(nullptr);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("default stream"), std::string::npos) << s.message();
}

TEST(HostRuntime, EventsMeasureTime) {
  Runtime& rt = hostRuntime();
  Event start = nullptr, end = nullptr;
  ASSERT_TRUE(rt.eventCreate(&start, EventKind::kTiming).isOk());
  ASSERT_TRUE(rt.eventCreate(&end, EventKind::kTiming).isOk());
  float ms = -1;
  Status s = rt.eventElapsedMs(start, end, &ms);
  EXPECT_EQ(s.code(), weftInvalidUsage);
  EXPECT_NE(s.message().find("never recorded"), std::string::npos) << s.message();

  ASSERT_TRUE(rt.eventRecord(start, nullptr).isOk());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(rt.eventRecord(end, nullptr).isOk());
  bool done = false;
  ASSERT_TRUE(rt.eventQuery(end, &done).isOk());
  EXPECT_TRUE(done);
  ASSERT_TRUE(rt.eventSynchronize(end).isOk());
  ASSERT_TRUE(rt.eventElapsedMs(start, end, &ms).isOk());
  EXPECT_GE(ms, 19.0f);
  EXPECT_LT(ms, 5000.0f);
  ASSERT_TRUE(rt.eventElapsedMs(end, start, &ms).isOk());
  EXPECT_LE(ms, -19.0f) << "reversed events give a negative time, as CUDA does";
  EXPECT_TRUE(rt.eventDestroy(start).isOk());
  EXPECT_TRUE(rt.eventDestroy(end).isOk());
  EXPECT_EQ(rt.eventRecord(nullptr, nullptr).code(), weftInvalidArgument);
}

TEST(HostRuntime, StreamsWaitForEventsAtOnce) {
  Runtime& rt = hostRuntime();
  Stream s = nullptr;
  Event e = nullptr;
  ASSERT_TRUE(rt.streamCreate(&s).isOk());
  ASSERT_TRUE(rt.eventCreate(&e, EventKind::kSync).isOk());
  ASSERT_TRUE(rt.eventRecord(e, nullptr).isOk());
  EXPECT_TRUE(rt.streamWaitEvent(s, e).isOk());
  EXPECT_TRUE(rt.streamWaitEvent(nullptr, e).isOk()) << "the default stream waits too";
  Status bad = rt.streamWaitEvent(s, nullptr);
  EXPECT_EQ(bad.code(), weftInvalidArgument);
  EXPECT_NE(bad.message().find("streamWaitEvent(null event)"), std::string::npos) << bad.message();
  EXPECT_TRUE(rt.eventDestroy(e).isOk());
  EXPECT_TRUE(rt.streamDestroy(s).isOk());
}

// An event made for ordering only cannot time, as with cudaEventDisableTiming; the counter of
// timing events (which the library's own paths never make) sees only timing ones.
TEST(HostRuntime, SyncEventsDoNotTime) {
  Runtime& rt = hostRuntime();
  const uint64_t before = HostMemoryRuntime::timingEventsCreated();
  Event sync = nullptr, timed = nullptr;
  ASSERT_TRUE(rt.eventCreate(&sync, EventKind::kSync).isOk());
  EXPECT_EQ(HostMemoryRuntime::timingEventsCreated(), before);
  ASSERT_TRUE(rt.eventCreate(&timed, EventKind::kTiming).isOk());
  EXPECT_EQ(HostMemoryRuntime::timingEventsCreated(), before + 1);
  ASSERT_TRUE(rt.eventRecord(sync, nullptr).isOk());
  ASSERT_TRUE(rt.eventRecord(timed, nullptr).isOk());
  float ms = -1;
  Status s = rt.eventElapsedMs(sync, timed, &ms);
  EXPECT_EQ(s.code(), weftInvalidUsage);
  EXPECT_NE(s.message().find("start event was created without timing"), std::string::npos) << s.message();
  s = rt.eventElapsedMs(timed, sync, &ms);
  EXPECT_NE(s.message().find("end event was created without timing"), std::string::npos) << s.message();
  EXPECT_TRUE(rt.eventDestroy(sync).isOk());
  EXPECT_TRUE(rt.eventDestroy(timed).isOk());
}

TEST(HostRuntime, RegisteringHostMemoryIsANoOp) {
  Runtime& rt = hostRuntime();
  std::vector<uint8_t> buf(8192, 7);
  ASSERT_TRUE(rt.hostRegister(buf.data(), buf.size()).isOk());
  EXPECT_EQ(buf, std::vector<uint8_t>(8192, 7)) << "registering leaves the contents alone";
  PointerInfo info;
  ASSERT_TRUE(rt.pointerInfo(buf.data(), &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kHost);
  EXPECT_TRUE(rt.hostUnregister(buf.data()).isOk());
  EXPECT_TRUE(rt.hostRegister(nullptr, 0).isOk());
  EXPECT_TRUE(rt.hostUnregister(nullptr).isOk());
  Status s = rt.hostRegister(nullptr, 4096);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("hostRegister(4 KiB): null pointer"), std::string::npos) << s.message();
}

TEST(HostRuntime, IpcNeedsAGpuRuntime) {
  Runtime& rt = hostRuntime();
  IpcHandle handle{};
  void* p = nullptr;
  for (Status s : {rt.ipcExport(&handle, &handle), rt.ipcImport(handle, &p), rt.ipcClose(&handle)}) {
    EXPECT_EQ(s.code(), weftInvalidUsage);
    EXPECT_NE(s.message().find("IPC handles need a GPU runtime"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("shared-memory transport"), std::string::npos) << s.message();
  }
}

TEST(HostRuntime, NoStreamIsCapturedAndGraphsNeedAGpuRuntime) {
  Runtime& rt = hostRuntime();
  Stream stream = nullptr;
  ASSERT_TRUE(rt.streamCreate(&stream).isOk());
  bool capturing = true;
  ASSERT_TRUE(rt.streamIsCapturing(stream, &capturing).isOk());
  EXPECT_FALSE(capturing);
  capturing = true;
  ASSERT_TRUE(rt.streamIsCapturing(nullptr, &capturing).isOk());
  EXPECT_FALSE(capturing);
  Graph graph = reinterpret_cast<Graph>(&stream);
  for (Status s : {rt.graphCaptureBegin(stream), rt.graphCaptureEnd(stream, &graph), rt.graphLaunch(graph, stream),
                   rt.graphDestroy(reinterpret_cast<Graph>(&stream))}) {
    EXPECT_EQ(s.code(), weftInvalidUsage);
    EXPECT_NE(s.message().find("graphs need a GPU runtime"), std::string::npos) << s.message();
  }
  EXPECT_EQ(graph, nullptr) << "graphCaptureEnd leaves no graph behind when it fails";
  EXPECT_TRUE(rt.graphDestroy(nullptr).isOk());
  EXPECT_TRUE(rt.streamDestroy(stream).isOk());
}

TEST(MemoryKind, Names) {
  EXPECT_STREQ(memoryKindName(MemoryKind::kHost), "host");
  EXPECT_STREQ(memoryKindName(MemoryKind::kPinnedHost), "pinned host");
  EXPECT_STREQ(memoryKindName(MemoryKind::kDevice), "device");
  EXPECT_STREQ(memoryKindName(MemoryKind::kManaged), "managed");
}

}  // namespace
}  // namespace device
}  // namespace weft
