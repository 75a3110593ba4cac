// The emulated device (emulated_runtime.cc): host memory posing as one GPU. Its device queries,
// the registry behind pointerInfo and the frees, IPC handles mapped by a forked child (and the
// handles it refuses, as CUDA would), the lane launch's runner hook, and WEFT_GPU_BACKEND.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "device/device.h"
#include "device/gpu_loader.h"
#include "unit/device/device_test_util.h"

namespace weft {
namespace device {
namespace {

using testing::TempDir;

// Runs `body` in a forked child and returns its exit status (-1: it did not exit normally). The
// child never returns into GoogleTest: its result is its exit status, and its messages go to
// stderr, where ctest shows them.
int inChild(const std::function<int()>& body) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) return -2;
  if (pid == 0) {
    int rc = 99;
    try {
      rc = body();
    } catch (...) {
      rc = 98;
    }
    std::fflush(nullptr);
    _exit(rc);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -3;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A pid that no process has: a child that has exited and been reaped (the kernel hands pids out
// in increasing order, so it is not reused within a test).
int deadPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return static_cast<int>(pid);
}

bool contains(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

TEST(EmulatedRuntime, PosesAsOneGpu) {
  Runtime& rt = emulatedRuntime();
  EXPECT_STREQ(rt.name(), "emulated");
  EXPECT_NE(rt.description().find("host memory posing as one GPU"), std::string::npos) << rt.description();
  EXPECT_EQ(rt.deviceCount(), 1);

  DeviceProps p;
  ASSERT_TRUE(rt.deviceProps(0, &p).isOk());
  EXPECT_EQ(p.name, "Weft emulated device");
  EXPECT_EQ(p.arch, "emulated");
  EXPECT_EQ(p.pciBusId, "0000:00:00.0");
  EXPECT_EQ(p.uuid[8], '-');
  EXPECT_EQ(p.warpSize, 1);
  EXPECT_EQ(p.multiProcessors, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) * 4);
  EXPECT_EQ(p.totalMemoryBytes, static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE));

  Status s = rt.deviceProps(1, &p);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_TRUE(contains(s, "deviceProps(1): there is one device, 0")) << s.message();
  EXPECT_EQ(rt.deviceProps(-1, &p).code(), weftInvalidArgument);

  EXPECT_TRUE(rt.setDevice(0).isOk());
  EXPECT_EQ(rt.setDevice(1).code(), weftInvalidArgument);
  int device = -1;
  ASSERT_TRUE(rt.getDevice(&device).isOk());
  EXPECT_EQ(device, 0);
  bool can = false;
  ASSERT_TRUE(rt.canAccessPeer(0, 0, &can).isOk());
  EXPECT_TRUE(can);
  EXPECT_EQ(rt.canAccessPeer(0, 1, &can).code(), weftInvalidArgument);
  EXPECT_TRUE(rt.enablePeerAccess(0).isOk());
  EXPECT_EQ(rt.enablePeerAccess(2).code(), weftInvalidArgument);
}

TEST(EmulatedRuntime, PosesAsSeveralGpusOnRequest) {
  Runtime& rt = emulatedRuntime();
  setenv("WEFT_EMULATED_DEVICES", "3", 1);
  EXPECT_EQ(rt.deviceCount(), 3);
  DeviceProps p;
  ASSERT_TRUE(rt.deviceProps(2, &p).isOk());
  EXPECT_EQ(p.pciBusId, "0000:02:00.0");
  // A UUID per GPU, stable, in the 8-4-4-4-12 form: one GPU asked twice is one, two are two.
  DeviceProps again, other;
  ASSERT_TRUE(rt.deviceProps(2, &again).isOk());
  ASSERT_TRUE(rt.deviceProps(1, &other).isOk());
  EXPECT_EQ(p.uuid.size(), 36u) << p.uuid;
  EXPECT_EQ(p.uuid, again.uuid);
  EXPECT_NE(p.uuid, other.uuid);
  Status s = rt.deviceProps(3, &p);
  EXPECT_TRUE(contains(s, "deviceProps(3): the emulated devices are 0..2")) << s.message();
  // The current device is the thread's: a new thread starts on device 0.
  ASSERT_TRUE(rt.setDevice(2).isOk());
  int device = -1;
  ASSERT_TRUE(rt.getDevice(&device).isOk());
  EXPECT_EQ(device, 2);
  std::thread([&] {
    int other = -1;
    EXPECT_TRUE(rt.getDevice(&other).isOk());
    EXPECT_EQ(other, 0);
  }).join();
  // Device memory belongs to the device current when it was allocated.
  void* mem = nullptr;
  ASSERT_TRUE(rt.allocDevice(100, &mem).isOk());
  PointerInfo info;
  ASSERT_TRUE(rt.pointerInfo(static_cast<char*>(mem) + 50, &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kDevice);
  EXPECT_EQ(info.device, 2);
  bool can = false;
  ASSERT_TRUE(rt.canAccessPeer(2, 1, &can).isOk());
  EXPECT_TRUE(can);
  EXPECT_TRUE(rt.freeDevice(mem).isOk());
  ASSERT_TRUE(rt.setDevice(0).isOk());
  unsetenv("WEFT_EMULATED_DEVICES");
  EXPECT_EQ(rt.deviceCount(), 1);
  EXPECT_EQ(rt.setDevice(1).code(), weftInvalidArgument);
}

TEST(EmulatedRuntime, PointerInfoKnowsEveryAllocation) {
  Runtime& rt = emulatedRuntime();
  void* dev = nullptr;
  void* pinned = nullptr;
  ASSERT_TRUE(rt.allocDevice(1000, &dev).isOk());
  ASSERT_NE(dev, nullptr);
  ASSERT_TRUE(rt.allocHost(300, &pinned).isOk());
  ASSERT_NE(pinned, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pinned) % 256, 0u);
  char* d = static_cast<char*>(dev);
  char* h = static_cast<char*>(pinned);

  PointerInfo info;
  for (char* p : {d, d + 1, d + 999}) {
    ASSERT_TRUE(rt.pointerInfo(p, &info).isOk());
    EXPECT_EQ(info.kind, MemoryKind::kDevice) << static_cast<const void*>(p);
    EXPECT_EQ(info.device, 0);
  }
  // One past the end belongs to nobody the runtime knows.
  ASSERT_TRUE(rt.pointerInfo(d + 1000, &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kHost);
  EXPECT_EQ(info.device, -1);
  for (char* p : {h, h + 299}) {
    ASSERT_TRUE(rt.pointerInfo(p, &info).isOk());
    EXPECT_EQ(info.kind, MemoryKind::kPinnedHost);
    EXPECT_EQ(info.device, -1);
  }
  ASSERT_TRUE(rt.pointerInfo(h + 300, &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kHost);
  int local = 0;
  ASSERT_TRUE(rt.pointerInfo(&local, &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kHost);
  EXPECT_EQ(rt.pointerInfo(nullptr, &info).code(), weftInvalidArgument);

  // Device memory is host memory: copies and memsets reach it directly.
  std::vector<int32_t> src(250), back(250, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<int32_t>(i * 3 + 1);
  ASSERT_TRUE(rt.copy(dev, src.data(), 1000, CopyKind::kHostToDevice).isOk());
  ASSERT_TRUE(rt.copyAsync(pinned, dev, 300, CopyKind::kDefault, nullptr).isOk());
  ASSERT_TRUE(rt.memset(d + 300, 0x7f, 4).isOk());
  ASSERT_TRUE(rt.copy(back.data(), dev, 1000, CopyKind::kDeviceToHost).isOk());
  EXPECT_EQ(back[0], 1);
  EXPECT_EQ(back[74], 74 * 3 + 1);
  EXPECT_EQ(back[75], 0x7f7f7f7f);
  EXPECT_EQ(back[76], 76 * 3 + 1);
  EXPECT_EQ(std::memcmp(pinned, src.data(), 300), 0);

  ASSERT_TRUE(rt.freeDevice(dev).isOk());
  ASSERT_TRUE(rt.freeHost(pinned).isOk());
  ASSERT_TRUE(rt.pointerInfo(d, &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kHost) << "freed";
}

TEST(EmulatedRuntime, ZeroBytesAndNullFrees) {
  Runtime& rt = emulatedRuntime();
  void* p = reinterpret_cast<void*>(1);
  ASSERT_TRUE(rt.allocDevice(0, &p).isOk());
  EXPECT_EQ(p, nullptr);
  EXPECT_TRUE(rt.freeDevice(nullptr).isOk());
  EXPECT_TRUE(rt.freeHost(nullptr).isOk());
}

TEST(EmulatedRuntime, FreeingWhatItDidNotAllocateIsRefused) {
  Runtime& rt = emulatedRuntime();
  int local = 0;
  Status s = rt.freeDevice(&local);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_TRUE(contains(s, "not device memory from allocDevice")) << s.message();

  void* dev = nullptr;
  void* pinned = nullptr;
  ASSERT_TRUE(rt.allocDevice(64, &dev).isOk());
  ASSERT_TRUE(rt.allocHost(64, &pinned).isOk());
  s = rt.freeDevice(static_cast<char*>(dev) + 8);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_TRUE(contains(s, "points inside device memory from allocDevice, not at its start")) << s.message();
  s = rt.freeDevice(pinned);
  EXPECT_EQ(s.code(), weftInvalidUsage);
  EXPECT_TRUE(contains(s, "that is pinned host memory from allocHost; release it with freeHost")) << s.message();
  s = rt.freeHost(dev);
  EXPECT_EQ(s.code(), weftInvalidUsage);
  EXPECT_TRUE(contains(s, "release it with freeDevice")) << s.message();

  ASSERT_TRUE(rt.freeDevice(dev).isOk());
  s = rt.freeDevice(dev);
  EXPECT_EQ(s.code(), weftInvalidArgument) << "freed twice";
  EXPECT_TRUE(contains(s, "already released")) << s.message();
  ASSERT_TRUE(rt.freeHost(pinned).isOk());
}

TEST(EmulatedRuntime, InstancesShareTheOneDevice) {
  std::unique_ptr<Runtime> other = makeEmulatedRuntime();
  void* dev = nullptr;
  ASSERT_TRUE(emulatedRuntime().allocDevice(128, &dev).isOk());
  PointerInfo info;
  ASSERT_TRUE(other->pointerInfo(dev, &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kDevice);
  EXPECT_TRUE(other->freeDevice(dev).isOk());
}

TEST(EmulatedRuntime, HostRegisterIsRememberedAndRefusedTwice) {
  Runtime& rt = emulatedRuntime();
  std::vector<char> buf(8192);
  EXPECT_TRUE(rt.hostRegister(nullptr, 0).isOk());
  EXPECT_EQ(rt.hostRegister(nullptr, 16).code(), weftInvalidArgument);
  ASSERT_TRUE(rt.hostRegister(buf.data() + 4096, 4096).isOk());
  PointerInfo info;
  ASSERT_TRUE(rt.pointerInfo(buf.data() + 5000, &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kPinnedHost);
  ASSERT_TRUE(rt.pointerInfo(buf.data() + 4095, &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kHost);
  // Overlapping the registered range from below, and again exactly.
  EXPECT_EQ(rt.hostRegister(buf.data(), 4097).code(), weftInvalidUsage);
  EXPECT_EQ(rt.hostRegister(buf.data() + 4096, 10).code(), weftInvalidUsage);
  EXPECT_TRUE(rt.hostRegister(buf.data(), 4096).isOk()) << "adjacent, not overlapping";
  EXPECT_TRUE(rt.hostUnregister(buf.data()).isOk());
  EXPECT_TRUE(rt.hostUnregister(buf.data() + 4096).isOk());
  Status s = rt.hostUnregister(buf.data() + 4096);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_TRUE(contains(s, "not host memory registered with hostRegister")) << s.message();
}

TEST(EmulatedRuntime, StreamsAndEvents) {
  Runtime& rt = emulatedRuntime();
  Stream stream = nullptr;
  Event start = nullptr, end = nullptr;
  ASSERT_TRUE(rt.streamCreate(&stream).isOk());
  ASSERT_TRUE(rt.eventCreate(&start, EventKind::kTiming).isOk());
  ASSERT_TRUE(rt.eventCreate(&end, EventKind::kTiming).isOk());
  float ms = -1;
  EXPECT_EQ(rt.eventElapsedMs(start, end, &ms).code(), weftInvalidUsage) << "never recorded";
  ASSERT_TRUE(rt.eventRecord(start, stream).isOk());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(rt.eventRecord(end, stream).isOk());
  ASSERT_TRUE(rt.streamWaitEvent(stream, end).isOk());
  EXPECT_EQ(rt.streamWaitEvent(stream, nullptr).code(), weftInvalidArgument);
  bool done = false;
  ASSERT_TRUE(rt.eventQuery(end, &done).isOk());
  EXPECT_TRUE(done);
  ASSERT_TRUE(rt.streamQuery(stream, &done).isOk());
  EXPECT_TRUE(done);
  ASSERT_TRUE(rt.eventElapsedMs(start, end, &ms).isOk());
  EXPECT_GE(ms, 4.0f);
  EXPECT_TRUE(rt.streamSynchronize(stream).isOk());
  EXPECT_TRUE(rt.eventDestroy(start).isOk());
  EXPECT_TRUE(rt.eventDestroy(end).isOk());
  EXPECT_TRUE(rt.streamDestroy(stream).isOk());
  EXPECT_EQ(rt.streamDestroy(nullptr).code(), weftInvalidArgument);
}

TEST(EmulatedRuntime, NoStreamIsCapturedAndGraphsNeedAGpuRuntime) {
  Runtime& rt = emulatedRuntime();
  Stream stream = nullptr;
  ASSERT_TRUE(rt.streamCreate(&stream).isOk());
  bool capturing = true;
  ASSERT_TRUE(rt.streamIsCapturing(stream, &capturing).isOk());
  EXPECT_FALSE(capturing);
  Graph graph = reinterpret_cast<Graph>(&stream);
  Status begin = rt.graphCaptureBegin(stream);
  Status end = rt.graphCaptureEnd(stream, &graph);
  EXPECT_EQ(graph, nullptr);
  for (const Status& s : {begin, end, rt.graphLaunch(reinterpret_cast<Graph>(&stream), stream)}) {
    EXPECT_EQ(s.code(), weftInvalidUsage);
    EXPECT_NE(s.message().find("emulated runtime: graph"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("graphs need a GPU runtime"), std::string::npos) << s.message();
  }
  EXPECT_TRUE(rt.graphDestroy(nullptr).isOk());
  EXPECT_TRUE(rt.streamDestroy(stream).isOk());
}

// The child maps the parent's allocation from the handle, checks the parent's bytes and writes
// its own; the parent sees them in the same pages.
TEST(EmulatedRuntime, IpcHandleMapsTheSameMemoryInAnotherProcess) {
  Runtime& rt = emulatedRuntime();
  constexpr size_t kBytes = 10000;  // not a whole number of pages
  void* dev = nullptr;
  ASSERT_TRUE(rt.allocDevice(kBytes, &dev).isOk());
  unsigned char* d = static_cast<unsigned char*>(dev);
  for (size_t i = 0; i < kBytes; ++i) d[i] = static_cast<unsigned char>(i * 13 + 5);
  IpcHandle handle;
  ASSERT_TRUE(rt.ipcExport(dev, &handle).isOk());

  int rc = inChild([&]() -> int {
    Runtime& crt = emulatedRuntime();
    void* mapped = nullptr;
    Status s = crt.ipcImport(handle, &mapped);
    if (!s.isOk()) {
      std::fprintf(stderr, "child: %s\n", s.message().c_str());
      return 1;
    }
    if (mapped == dev) return 2;  // a fresh mapping, not the parent's inherited one
    unsigned char* m = static_cast<unsigned char*>(mapped);
    for (size_t i = 0; i < kBytes; ++i) {
      if (m[i] != static_cast<unsigned char>(i * 13 + 5)) return 3;
    }
    PointerInfo info;
    if (!crt.pointerInfo(m + kBytes - 1, &info).isOk() || info.kind != MemoryKind::kDevice || info.device != 0) {
      return 4;
    }
    for (size_t i = 0; i < kBytes; ++i) m[i] = static_cast<unsigned char>(255 - i % 251);
    if (!crt.ipcClose(mapped).isOk()) return 5;
    if (crt.ipcClose(mapped).isOk()) return 6;  // closed twice
    return 0;
  });
  ASSERT_EQ(rc, 0) << "the child failed at check " << rc;
  for (size_t i = 0; i < kBytes; ++i) ASSERT_EQ(d[i], static_cast<unsigned char>(255 - i % 251)) << "byte " << i;
  ASSERT_TRUE(rt.freeDevice(dev).isOk());
}

TEST(EmulatedRuntime, IpcImportInTheExportingProcessIsRefusedLikeCuda) {
  Runtime& rt = emulatedRuntime();
  void* dev = nullptr;
  ASSERT_TRUE(rt.allocDevice(4096, &dev).isOk());
  IpcHandle handle;
  ASSERT_TRUE(rt.ipcExport(dev, &handle).isOk());
  void* mapped = reinterpret_cast<void*>(1);
  Status s = rt.ipcImport(handle, &mapped);
  EXPECT_EQ(s.code(), weftInvalidUsage);
  EXPECT_EQ(mapped, nullptr);
  EXPECT_TRUE(contains(s, "IPC handles are for other processes; in the same process use the pointer")) << s.message();
  ASSERT_TRUE(rt.freeDevice(dev).isOk());
}

TEST(EmulatedRuntime, IpcExportNeedsTheStartOfADeviceAllocation) {
  Runtime& rt = emulatedRuntime();
  void* dev = nullptr;
  void* pinned = nullptr;
  ASSERT_TRUE(rt.allocDevice(4096, &dev).isOk());
  ASSERT_TRUE(rt.allocHost(4096, &pinned).isOk());
  IpcHandle handle;
  for (void* p : {static_cast<void*>(static_cast<char*>(dev) + 64), pinned, static_cast<void*>(nullptr)}) {
    Status s = rt.ipcExport(p, &handle);
    EXPECT_EQ(s.code(), weftInvalidArgument) << p;
    EXPECT_TRUE(contains(s, "not the start of an allocDevice allocation")) << s.message();
  }
  EXPECT_EQ(rt.ipcClose(dev).code(), weftInvalidUsage) << "not imported";
  ASSERT_TRUE(rt.freeDevice(dev).isOk());
  ASSERT_TRUE(rt.freeHost(pinned).isOk());
}

TEST(EmulatedRuntime, BadIpcHandlesSayWhatIsWrong) {
  Runtime& rt = emulatedRuntime();
  void* dev = nullptr;
  ASSERT_TRUE(rt.allocDevice(4096, &dev).isOk());
  IpcHandle good;
  ASSERT_TRUE(rt.ipcExport(dev, &good).isOk());
  void* mapped = nullptr;

  // Another runtime's handle (or garbage).
  IpcHandle bad = good;
  bad.bytes[0] ^= 0xff;
  Status s = rt.ipcImport(bad, &mapped);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_TRUE(contains(s, "not an IPC handle of the emulated runtime")) << s.message();
  EXPECT_TRUE(contains(s, "WEFT_GPU_BACKEND=emulated")) << s.message();

  // A handle from a process that has exited (the pid sits at bytes 8..11).
  bad = good;
  int32_t pid = deadPid();
  std::memcpy(bad.bytes + 8, &pid, sizeof(pid));
  s = rt.ipcImport(bad, &mapped);
  EXPECT_EQ(s.code(), weftRemoteError);
  EXPECT_TRUE(contains(s, "process " + std::to_string(pid) + ", which exported the handle, has exited")) << s.message();

  // A corrupted one.
  bad = good;
  int32_t fd = -5;
  std::memcpy(bad.bytes + 12, &fd, sizeof(fd));
  s = rt.ipcImport(bad, &mapped);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_TRUE(contains(s, "corrupted handle")) << s.message();
  EXPECT_EQ(mapped, nullptr);
  ASSERT_TRUE(rt.freeDevice(dev).isOk());
}

// The exporter freed the allocation before the child imported it: the fd is closed (or holds
// another file by then), and the child is told so.
TEST(EmulatedRuntime, IpcImportAfterTheExporterFreedIsRefused) {
  Runtime& rt = emulatedRuntime();
  void* dev = nullptr;
  ASSERT_TRUE(rt.allocDevice(4096, &dev).isOk());
  IpcHandle handle;
  ASSERT_TRUE(rt.ipcExport(dev, &handle).isOk());
  ASSERT_TRUE(rt.freeDevice(dev).isOk());
  // Another allocation may take the same fd number; the handle must not open it.
  void* other = nullptr;
  ASSERT_TRUE(rt.allocDevice(4096, &other).isOk());
  int rc = inChild([&]() -> int {
    void* mapped = nullptr;
    Status s = emulatedRuntime().ipcImport(handle, &mapped);
    if (s.isOk()) return 1;
    if (s.code() != weftRemoteError) return 2;
    if (s.message().find("no longer holds the allocation") == std::string::npos) {
      std::fprintf(stderr, "child: %s\n", s.message().c_str());
      return 3;
    }
    return 0;
  });
  EXPECT_EQ(rc, 0) << "the child failed at check " << rc;
  ASSERT_TRUE(rt.freeDevice(other).isOk());
}

TEST(EmulatedRuntime, LaunchReduceCopyIsNotEmulated) {
  ReduceCopyArgs args;
  float a[4] = {1, 2, 3, 4}, b[4] = {};
  args.nSrcs = 1;
  args.srcs[0] = a;
  args.nDsts = 1;
  args.dsts[0] = b;
  args.count = 4;
  Status s = emulatedRuntime().launchReduceCopy(args, nullptr);
  EXPECT_EQ(s.code(), weftInternalError);
  EXPECT_TRUE(contains(s, "runs only the lane program")) << s.message();
  args.nSrcs = 0;
  EXPECT_EQ(emulatedRuntime().launchReduceCopy(args, nullptr).code(), weftInvalidArgument) << "checked first";
}

// The host lane runner for one test, restored after it.
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
uint32_t failingRunner(const LaneLaunch& launch, BlockSlots*) {
  ++gRuns;
  launch.error->code = kLanePeerAborted;
  launch.error->lane = 0;
  return kLanePeerAborted;
}

// One lane of one step that copies nothing through no FIFO: the smallest launch the checks take.
struct OneLane {
  LaneDesc lane;
  LaneStep step;
  LaneError error;
  float send[4] = {}, recv[4] = {};
  LaneLaunch launch() {
    lane.firstStep = 0;
    lane.nSteps = 1;
    lane.sliceElems = 4;
    lane.iterations = 1;
    LaneLaunch l;
    l.nLanes = 1;
    l.lanes = &lane;
    l.steps = &step;
    l.nBuffers = 1;
    l.buffers[0] = LaneBuffers{send, recv, nullptr};
    l.error = &error;
    return l;
  }
};

TEST(EmulatedRuntime, LaunchLanesRunsTheRegisteredRunner) {
  OneLane t;
  LaneLaunch launch = t.launch();
  ASSERT_TRUE(checkLaneLaunch(launch).isOk()) << checkLaneLaunch(launch).message();
  {
    RunnerScope none(nullptr);
    Status s = emulatedRuntime().launchLanes(launch, nullptr);
    EXPECT_EQ(s.code(), weftInternalError);
    EXPECT_TRUE(contains(s, "the host lane runner is not registered")) << s.message();
  }
  RunnerScope scope(&failingRunner);
  gRuns = 0;
  // Like a kernel's, the lanes' failure is in *launch.error, not in the launch's status.
  EXPECT_TRUE(emulatedRuntime().launchLanes(launch, nullptr).isOk());
  EXPECT_EQ(gRuns, 1);
  EXPECT_EQ(t.error.code, kLanePeerAborted);
  LaneLaunch broken = launch;
  broken.error = nullptr;
  EXPECT_EQ(emulatedRuntime().launchLanes(broken, nullptr).code(), weftInvalidArgument) << "checked first";
  EXPECT_EQ(gRuns, 1);
}

// What another agent polls while lanes run (FIFO counters and slots, flags, the error record)
// must come from allocDeviceShared / allocHostShared: a launch that polls a private allocation
// is refused, naming the word, as on an AMD GPU it could hang (device.h, Sharing).
TEST(EmulatedRuntime, LaunchRefusesPolledMemoryNotSharedWithOtherAgents) {
  Runtime& rt = emulatedRuntime();
  constexpr size_t kBytes = 4096;
  void *sharedDevice = nullptr, *sharedHost = nullptr, *privateDevice = nullptr, *privateHost = nullptr;
  ASSERT_TRUE(rt.allocDeviceShared(kBytes, &sharedDevice).isOk());
  ASSERT_TRUE(rt.allocHostShared(kBytes, &sharedHost).isOk());
  ASSERT_TRUE(rt.allocDevice(kBytes, &privateDevice).isOk());
  ASSERT_TRUE(rt.allocHost(kBytes, &privateHost).isOk());
  std::vector<char> registered(2 * 4096 + 4096);
  char* page = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(registered.data()) + 4095) / 4096 * 4096);
  ASSERT_TRUE(rt.hostRegister(page, 4096).isOk());
  // Field i of the launch, placed at byte 64 * i of `base`.
  auto at = [](void* base, int i) { return static_cast<char*>(base) + 64 * i; };
  const char* names[] = {"the slots", "the sizes", "the stamps", "head", "tail", "the cursor",
                         "its abort flag", "the peer's abort flag", "the abort flag", "the error record",
                         "the LL lines"};
  RunnerScope scope(&failingRunner);
  for (void* privateBase : {privateDevice, privateHost}) {
    for (int odd = -1; odd < 11; ++odd) {
      OneLane t;
      LaneLaunch launch = t.launch();
      // Everything shared (device memory for the FIFO, pinned host memory for the flags), but
      // field `odd` private; -1: none.
      auto place = [&](int i, void* sharedBase) { return at(i == odd ? privateBase : sharedBase, i); };
      FifoView f;
      f.data = place(0, sharedDevice);
      f.stride = 64;
      f.nSlots = 1;
      f.slotBytes = 64;
      f.sizes = reinterpret_cast<uint64_t*>(place(1, sharedDevice));
      f.stamps = reinterpret_cast<uint64_t*>(place(2, sharedDevice));
      f.head = reinterpret_cast<uint64_t*>(place(3, sharedDevice));
      f.tail = reinterpret_cast<uint64_t*>(place(4, sharedDevice));
      f.cursor = reinterpret_cast<uint64_t*>(place(5, sharedDevice));
      f.selfAbort = reinterpret_cast<uint32_t*>(place(6, sharedHost));
      f.peerAbort = reinterpret_cast<uint32_t*>(place(7, page));  // registered: coherent
      f.ll = reinterpret_cast<uint64_t*>(place(10, sharedDevice));  // the receiver polls the lines
      f.llStride = 128;
      f.peer = 3;
      launch.fifos = &f;
      launch.nFifos = 1;
      launch.abortFlag = reinterpret_cast<uint32_t*>(place(8, sharedHost));
      launch.error = reinterpret_cast<LaneError*>(place(9, sharedHost));
      *launch.error = LaneError();
      gRuns = 0;
      Status s = rt.launchLanes(launch, nullptr);
      if (odd < 0) {
        EXPECT_TRUE(s.isOk()) << s.message();
        EXPECT_EQ(gRuns, 1);
        continue;
      }
      EXPECT_EQ(s.code(), weftInvalidUsage) << names[odd];
      EXPECT_TRUE(contains(s, names[odd])) << s.message();
      EXPECT_TRUE(contains(s, "allocDeviceShared / allocHostShared")) << s.message();
      EXPECT_TRUE(contains(s, privateBase == privateDevice ? "device memory from allocDevice"
                                                             : "pinned host memory from allocHost"))
          << s.message();
      EXPECT_EQ(contains(s, "FIFO 0 (rank 3)"), odd < 8 || odd == 10) << s.message();
      EXPECT_EQ(gRuns, 0) << "refused before any lane runs";
    }
  }
  EXPECT_TRUE(rt.hostUnregister(page).isOk());
  EXPECT_TRUE(rt.freeDevice(sharedDevice).isOk());
  EXPECT_TRUE(rt.freeDevice(privateDevice).isOk());
  EXPECT_TRUE(rt.freeHost(sharedHost).isOk());
  EXPECT_TRUE(rt.freeHost(privateHost).isOk());
}

TEST(EmulatedRuntime, LoaderPicksItOnlyByName) {
  GpuLoadOptions o;
  o.backend = "emulated";
  o.dirs = {"/nonexistent"};
  GpuLoadResult r = loadGpuRuntime(o);
  ASSERT_NE(r.runtime, nullptr);
  EXPECT_STREQ(r.runtime->name(), "emulated");
  EXPECT_EQ(r.report, "GPU backend: emulated (host memory posing as one GPU; for tests)");
  EXPECT_TRUE(r.refused.empty());

  // "auto" only ever tries the modules.
  TempDir dir;
  o.backend = "auto";
  o.dirs = {dir.path()};
  o.searchDefaultPath = false;
  r = loadGpuRuntime(o);
  EXPECT_EQ(r.runtime, nullptr);
  EXPECT_EQ(r.report.find("emulated"), std::string::npos) << r.report;
}

// gpuRuntime() decides once per process, so the child decides with WEFT_GPU_BACKEND=emulated
// and logs its one INFO line to a file the parent reads.
TEST(EmulatedRuntime, GpuRuntimeWithTheBackendVariable) {
  TempDir dir;
  const std::string log = dir.path() + "/log.txt";
  int rc = inChild([&]() -> int {
    setenv("WEFT_GPU_BACKEND", "emulated", 1);
    setenv("WEFT_DEBUG", "INFO", 1);
    setenv("WEFT_DEBUG_SUBSYS", "INIT", 1);
    setenv("WEFT_DEBUG_FILE", log.c_str(), 1);
    reloadLogSettings();
    Runtime* rt = gpuRuntime();
    if (rt == nullptr) return 1;
    if (std::strcmp(rt->name(), "emulated") != 0) return 2;
    if (gpuRuntime() != rt) return 3;
    // The runtime gpuRuntime() gave and emulatedRuntime() see the same device.
    void* dev = nullptr;
    PointerInfo info;
    if (!rt->allocDevice(64, &dev).isOk()) return 4;
    if (!emulatedRuntime().pointerInfo(dev, &info).isOk() || info.kind != MemoryKind::kDevice) return 5;
    if (!emulatedRuntime().freeDevice(dev).isOk()) return 6;
    return 0;
  });
  ASSERT_EQ(rc, 0) << "the child failed at check " << rc;
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("GPU backend: emulated (host memory posing as one GPU; for tests)"), std::string::npos)
      << text.str();
}

TEST(DeviceProps, UuidsPrintAsHexGroups) {
  const unsigned char bytes[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                   0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10};
  EXPECT_EQ(formatUuid(bytes), "01234567-89ab-cdef-fedc-ba9876543210");
  const unsigned char none[16] = {};
  EXPECT_EQ(formatUuid(none), "");  // a runtime without UUIDs: unknown, never all zeros
}

}  // namespace
}  // namespace device
}  // namespace weft
