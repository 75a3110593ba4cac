// The GPU runtime on a real device (ctest label `gpu`): memory, copies, streams, events, IPC
// export, pointer queries, host registration, errors that name the call, and reduce-copy and
// lane-program launches checked against exact answers. Each test skips with the loader's reason
// on a machine without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>
#include <thread>
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
  // Pinned host memory freed at the end of the test.
  void* pinnedBuffer(size_t bytes) {
    void* p = nullptr;
    Status s = rt_->allocHost(bytes, &p);
    EXPECT_TRUE(s.isOk()) << s.message();
    pinned_.push_back(p);
    return p;
  }
  void TearDown() override {
    for (void* p : buffers_) EXPECT_TRUE(rt_->freeDevice(p).isOk());
    for (void* p : pinned_) EXPECT_TRUE(rt_->freeHost(p).isOk());
  }
  Runtime* rt_ = nullptr;
  std::vector<void*> buffers_;
  std::vector<void*> pinned_;
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
  ASSERT_TRUE(rt_->eventCreate(&start, EventKind::kTiming).isOk());
  ASSERT_TRUE(rt_->eventCreate(&end, EventKind::kTiming).isOk());
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

// A copy and a memset captured once, replayed three times: each replay reads the source as it
// is then, not as it was at the capture, and the capture itself runs nothing.
TEST_F(GpuRuntimeTest, GraphsCaptureAStreamAndReplayIt) {
  const size_t n = (1 << 20) + 5;
  void* src = deviceBuffer(n);
  void* dst = deviceBuffer(n);
  void* flag = deviceBuffer(64);
  std::vector<uint8_t> host(n, 0x77), flagHost(64);
  ASSERT_TRUE(rt_->copy(dst, host.data(), n, CopyKind::kHostToDevice).isOk());
  ASSERT_TRUE(rt_->memset(flag, 0, 64).isOk());
  Stream s = nullptr;
  ASSERT_TRUE(rt_->streamCreate(&s).isOk());
  bool capturing = true;
  ASSERT_TRUE(rt_->streamIsCapturing(s, &capturing).isOk());
  EXPECT_FALSE(capturing);
  EXPECT_EQ(rt_->graphCaptureBegin(nullptr).code(), weftInvalidArgument) << "the default stream";

  ASSERT_TRUE(rt_->graphCaptureBegin(s).isOk());
  ASSERT_TRUE(rt_->streamIsCapturing(s, &capturing).isOk());
  EXPECT_TRUE(capturing);
  Status copied = rt_->copyAsync(dst, src, n, CopyKind::kDeviceToDevice, s);
  Status set = rt_->memsetAsync(flag, 0x5a, 64, s);
  Graph graph = nullptr;
  Status end = rt_->graphCaptureEnd(s, &graph);
  ASSERT_TRUE(copied.isOk()) << copied.message();
  ASSERT_TRUE(set.isOk()) << set.message();
  ASSERT_TRUE(end.isOk()) << end.message();
  ASSERT_NE(graph, nullptr);
  ASSERT_TRUE(rt_->streamIsCapturing(s, &capturing).isOk());
  EXPECT_FALSE(capturing);
  ASSERT_TRUE(rt_->streamSynchronize(s).isOk());
  ASSERT_TRUE(rt_->copy(host.data(), dst, n, CopyKind::kDeviceToHost).isOk());
  EXPECT_EQ(host, std::vector<uint8_t>(n, 0x77)) << "the capture ran the copy";

  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < n; ++i) host[i] = static_cast<uint8_t>(i * 7 + round * 13);
    ASSERT_TRUE(rt_->copy(src, host.data(), n, CopyKind::kHostToDevice).isOk());
    ASSERT_TRUE(rt_->memset(flag, 0, 64).isOk());
    Status launched = rt_->graphLaunch(graph, s);
    ASSERT_TRUE(launched.isOk()) << launched.message();
    ASSERT_TRUE(rt_->streamSynchronize(s).isOk());
    std::vector<uint8_t> got(n);
    ASSERT_TRUE(rt_->copy(got.data(), dst, n, CopyKind::kDeviceToHost).isOk());
    ASSERT_EQ(got, host) << "round " << round;
    ASSERT_TRUE(rt_->copy(flagHost.data(), flag, 64, CopyKind::kDeviceToHost).isOk());
    ASSERT_EQ(flagHost, std::vector<uint8_t>(64, 0x5a)) << "round " << round;
  }
  EXPECT_EQ(rt_->graphLaunch(nullptr, s).code(), weftInvalidArgument);
  EXPECT_TRUE(rt_->graphDestroy(graph).isOk());
  EXPECT_TRUE(rt_->graphDestroy(nullptr).isOk());
  EXPECT_TRUE(rt_->streamDestroy(s).isOk());
}

// An allocation while a stream is being captured (global mode) is refused, and the error says
// why and what to do; the stream leaves capture mode when the capture ends, whatever its result.
TEST_F(GpuRuntimeTest, AnAllocationDuringACaptureSaysWhyItFailed) {
  Stream s = nullptr;
  ASSERT_TRUE(rt_->streamCreate(&s).isOk());
  ASSERT_TRUE(rt_->graphCaptureBegin(s).isOk());
  void* p = nullptr;
  Status alloc = rt_->allocDevice(1 << 20, &p);
  Graph graph = nullptr;
  Status end = rt_->graphCaptureEnd(s, &graph);  // may say the capture was invalidated
  if (alloc.isOk()) {
    EXPECT_TRUE(rt_->freeDevice(p).isOk());
    // CUDA refuses allocations in a global-mode capture; some HIP versions let them through.
    EXPECT_STRNE(rt_->name(), "cuda") << "cudaMalloc during a global-mode capture succeeded";
  } else {
    EXPECT_EQ(alloc.code(), weftInvalidUsage) << alloc.message();
    EXPECT_NE(alloc.message().find("being captured into a graph"), std::string::npos) << alloc.message();
    EXPECT_NE(alloc.message().find("before the capture begins or after it ends"), std::string::npos) << alloc.message();
  }
  if (!end.isOk()) {
    EXPECT_EQ(graph, nullptr) << end.message();
  }
  EXPECT_TRUE(rt_->graphDestroy(graph).isOk());
  bool capturing = true;
  ASSERT_TRUE(rt_->streamIsCapturing(s, &capturing).isOk());
  EXPECT_FALSE(capturing);
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

TEST_F(GpuRuntimeTest, RegisteredHostMemoryIsPinnedUntilUnregistered) {
  const size_t bytes = 1 << 20;
  void* host = std::aligned_alloc(4096, bytes);
  ASSERT_NE(host, nullptr);
  std::memset(host, 0, bytes);
  Status s = rt_->hostRegister(host, bytes);
  ASSERT_TRUE(s.isOk()) << s.message();
  PointerInfo info;
  ASSERT_TRUE(rt_->pointerInfo(host, &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kPinnedHost);
  // A kernel writes it at the host's address.
  void* ones = deviceBuffer(bytes);
  ASSERT_TRUE(rt_->memset(ones, 1, bytes).isOk());
  ReduceCopyArgs args;
  args.type = weftUint8;
  args.nSrcs = 1;
  args.srcs[0] = ones;
  args.nDsts = 1;
  args.dsts[0] = host;
  args.count = bytes;
  s = rt_->launchReduceCopy(args, nullptr);
  if (s.isOk()) {
    ASSERT_TRUE(rt_->streamSynchronize(nullptr).isOk());
    EXPECT_EQ(static_cast<uint8_t*>(host)[0], 1);
    EXPECT_EQ(static_cast<uint8_t*>(host)[bytes - 1], 1);
  } else {
    EXPECT_NE(s.message().find("built without"), std::string::npos) << s.message();
  }
  s = rt_->hostUnregister(host);
  EXPECT_TRUE(s.isOk()) << s.message();
  ASSERT_TRUE(rt_->pointerInfo(host, &info).isOk());
  EXPECT_EQ(info.kind, MemoryKind::kHost);
  std::free(host);
  EXPECT_EQ(rt_->hostRegister(nullptr, 4096).code(), weftInvalidArgument);
}

// The lane program on device 0. A FIFO is one block of device or pinned host memory: kSlots slots
// of kSliceElems int32, then sizes[kSlots], head, tail, side 0's cursor, side 1's cursor, then
// side 0's abort flag and side 1's. Side 0 sends, side 1 receives. Each "rank" is one lane of one
// step, launched on its own stream; two ranks in one process exchange through the FIFO.
class GpuLanesTest : public GpuRuntimeTest {
 protected:
  // LaneStep::kind values: encodeStepKind (collectives/step_kind.h, whose static_asserts fix them).
  static constexpr uint8_t kSend = 0;
  static constexpr uint8_t kRecv = 1;
  static constexpr uint8_t kRecvReduceCopy = 3;
  static constexpr int64_t kSliceElems = 1024;
  static constexpr uint64_t kSlots = 4;
  static constexpr uint64_t kSlotBytes = kSliceElems * sizeof(int32_t);
  // More slices than slots, so the sender waits for the receiver; the last slice has 675.
  static constexpr int64_t kCount = 97 * kSliceElems + 675;

  struct Fifo {
    char* data = nullptr;
    uint64_t* words = nullptr;
    uint32_t* aborts = nullptr;
    bool pinned = false;
  };

  void makeFifo(bool pinned, Fifo* f) {
    const size_t bytes = kSlots * kSlotBytes + (kSlots + 4) * sizeof(uint64_t) + 2 * sizeof(uint32_t);
    char* base = static_cast<char*>(pinned ? pinnedBuffer(bytes) : deviceBuffer(bytes));
    ASSERT_NE(base, nullptr);
    if (pinned) {
      std::memset(base, 0, bytes);
    } else {
      ASSERT_TRUE(rt_->memset(base, 0, bytes).isOk());
    }
    f->data = base;
    f->words = reinterpret_cast<uint64_t*>(base + kSlots * kSlotBytes);
    f->aborts = reinterpret_cast<uint32_t*>(f->words + kSlots + 4);
    f->pinned = pinned;
  }

  static FifoView view(const Fifo& f, int side) {
    FifoView v;
    v.data = f.data;
    v.stride = kSlotBytes;
    v.nSlots = kSlots;
    v.slotBytes = kSlotBytes;
    v.sizes = f.words;
    v.head = f.words + kSlots;
    v.tail = f.words + kSlots + 1;
    v.cursor = f.words + kSlots + 2 + side;
    v.selfAbort = f.aborts + side;
    v.peerAbort = f.aborts + (1 - side);
    v.peer = 1 - side;
    return v;
  }

  // The FIFO's words (sizes, head, tail, cursors) and abort flags as they are now.
  void readFifo(const Fifo& f, std::vector<uint64_t>* words, std::vector<uint32_t>* aborts) {
    words->resize(kSlots + 4);
    aborts->resize(2);
    ASSERT_TRUE(rt_->copy(words->data(), f.words, words->size() * sizeof(uint64_t), CopyKind::kDefault).isOk());
    ASSERT_TRUE(rt_->copy(aborts->data(), f.aborts, aborts->size() * sizeof(uint32_t), CopyKind::kDefault).isOk());
  }

  struct Rank {
    LaneError* error = nullptr;  // pinned host memory
    void* send = nullptr;        // device memory, count int32 each
    void* recv = nullptr;
    LaneLaunch launch;
  };

  // One lane of one step of `kind` over `count` int32 through side `side` of `fifo`. The lane
  // table is pinned host memory (the runtime reads it before the launch), the step and FIFO
  // tables device memory. The send buffer holds i on side 0 and 3i on side 1; recv holds -1.
  void makeRank(const Fifo& fifo, int side, uint8_t kind, weftRedOp_t op, int64_t count, Rank* k) {
    auto* lane = static_cast<LaneDesc*>(pinnedBuffer(sizeof(LaneDesc)));
    k->error = static_cast<LaneError*>(pinnedBuffer(sizeof(LaneError)));
    auto* step = static_cast<LaneStep*>(deviceBuffer(sizeof(LaneStep)));
    auto* fifos = static_cast<FifoView*>(deviceBuffer(sizeof(FifoView)));
    k->send = deviceBuffer(count * sizeof(int32_t));
    k->recv = deviceBuffer(count * sizeof(int32_t));
    if (abort_ == nullptr) {
      abort_ = static_cast<uint32_t*>(pinnedBuffer(sizeof(uint32_t)));
      ASSERT_NE(abort_, nullptr);
      *abort_ = 0;
    }
    ASSERT_TRUE(lane != nullptr && k->error != nullptr);

    std::vector<int32_t> in(count);
    for (int64_t i = 0; i < count; ++i) in[i] = static_cast<int32_t>(i * (2 * side + 1));
    ASSERT_TRUE(rt_->copy(k->send, in.data(), count * sizeof(int32_t), CopyKind::kHostToDevice).isOk());
    ASSERT_TRUE(rt_->memset(k->recv, 0xff, count * sizeof(int32_t)).isOk());

    *lane = LaneDesc{};
    lane->nSteps = 1;
    lane->sliceElems = kSliceElems;
    lane->iterations = (count + kSliceElems - 1) / kSliceElems;
    *k->error = LaneError{};

    LaneStep st;
    st.kind = kind;
    st.srcBuf = 0;
    st.dstBuf = 1;
    st.final = 1;
    st.sendFifo = kind == kSend ? 0 : -1;
    st.recvFifo = kind == kSend ? -1 : 0;
    st.count = count;
    ASSERT_TRUE(rt_->copy(step, &st, sizeof(st), CopyKind::kHostToDevice).isOk());
    const FifoView v = view(fifo, side);
    ASSERT_TRUE(rt_->copy(fifos, &v, sizeof(v), CopyKind::kHostToDevice).isOk());

    LaneLaunch& l = k->launch;
    l.type = weftInt32;
    l.op = op;
    l.divisor = 2;
    l.nLanes = 1;
    l.lanes = lane;
    l.steps = step;
    l.fifos = fifos;
    l.nFifos = 1;
    l.nBuffers = 1;
    l.buffers[0] = LaneBuffers{k->send, k->recv, nullptr};
    l.abortFlag = abort_;
    l.error = k->error;
    l.timeoutNs = 20ull * 1000 * 1000 * 1000;  // a broken protocol fails the test instead of hanging it
  }

  // Launches `k` on `stream`; skips the test when the module has no kernels.
  void launch(const Rank& k, Stream stream) {
    Status s = rt_->launchLanes(k.launch, stream);
    if (s.code() == weftInternalError && s.message().find("built without") != std::string::npos) {
      GTEST_SKIP() << s.message();
    }
    ASSERT_TRUE(s.isOk()) << s.message();
  }

  Stream stream() {
    Stream s = nullptr;
    EXPECT_TRUE(rt_->streamCreate(&s).isOk());
    streams_.push_back(s);
    return s;
  }

  void TearDown() override {
    // Whatever a failed test left running stops (its lanes time out) before the memory goes.
    for (Stream s : streams_) {
      EXPECT_TRUE(rt_->streamSynchronize(s).isOk());
      EXPECT_TRUE(rt_->streamDestroy(s).isOk());
    }
    GpuRuntimeTest::TearDown();
  }

  static std::string describe(const LaneError& e) {
    return "code " + std::to_string(e.code) + ", lane " + std::to_string(e.lane) + ", step " + std::to_string(e.step) +
           ", fifo " + std::to_string(e.fifo) + ", iteration " + std::to_string(e.iteration) + ", detail " +
           std::to_string(e.detail);
  }

  // Rank 0 sends kCount int32 to rank 1, whose step is `recvKind`; *out is rank 1's receive
  // buffer afterwards.
  void exchange(uint8_t recvKind, weftRedOp_t op, bool pinnedFifo, std::vector<int32_t>* out) {
    Fifo fifo;
    makeFifo(pinnedFifo, &fifo);
    if (HasFatalFailure()) return;
    Rank ranks[2];
    makeRank(fifo, 0, kSend, op, kCount, &ranks[0]);
    if (HasFatalFailure()) return;
    makeRank(fifo, 1, recvKind, op, kCount, &ranks[1]);
    if (HasFatalFailure()) return;
    Stream streams[2] = {stream(), stream()};
    // The receiver first: it waits for slices the sender has not posted yet.
    for (int r : {1, 0}) {
      launch(ranks[r], streams[r]);
      if (IsSkipped() || HasFatalFailure()) return;
    }
    for (int r = 0; r < 2; ++r) {
      Status s = rt_->streamSynchronize(streams[r]);
      ASSERT_TRUE(s.isOk()) << "rank " << r << ": " << s.message();
      EXPECT_EQ(ranks[r].error->code, kLaneOk) << "rank " << r << ": " << describe(*ranks[r].error);
    }
    // Every slice went through: posted, released, and counted by each side; nobody aborted.
    const uint64_t slices = (kCount + kSliceElems - 1) / kSliceElems;
    std::vector<uint64_t> words;
    std::vector<uint32_t> aborts;
    readFifo(fifo, &words, &aborts);
    EXPECT_EQ(words[kSlots], slices) << "head";
    EXPECT_EQ(words[kSlots + 1], slices) << "tail";
    EXPECT_EQ(words[kSlots + 2], slices) << "the sender's cursor";
    EXPECT_EQ(words[kSlots + 3], slices) << "the receiver's cursor";
    EXPECT_EQ(words[(slices - 1) % kSlots], (kCount - (slices - 1) * kSliceElems) * sizeof(int32_t))
        << "the last slice's byte count";
    EXPECT_EQ(aborts, std::vector<uint32_t>(2, 0));
    out->assign(kCount, 0);
    ASSERT_TRUE(rt_->copy(out->data(), ranks[1].recv, kCount * sizeof(int32_t), CopyKind::kDeviceToHost).isOk());
  }

  uint32_t* abort_ = nullptr;  // the host's abort flag for every launch of the test
  std::vector<Stream> streams_;
};

TEST_F(GpuLanesTest, SendToRecvCopiesEverySlice) {
  std::vector<int32_t> out;
  exchange(kRecv, weftSum, /*pinnedFifo=*/false, &out);
  if (IsSkipped() || HasFatalFailure()) return;
  for (int64_t i = 0; i < kCount; ++i) ASSERT_EQ(out[i], static_cast<int32_t>(i)) << "element " << i;
}

TEST_F(GpuLanesTest, SendToRecvThroughPinnedHostMemory) {
  std::vector<int32_t> out;
  exchange(kRecv, weftMax, /*pinnedFifo=*/true, &out);
  if (IsSkipped() || HasFatalFailure()) return;
  for (int64_t i = 0; i < kCount; ++i) ASSERT_EQ(out[i], static_cast<int32_t>(i)) << "element " << i;
}

TEST_F(GpuLanesTest, RecvReduceCopyAveragesOnTheFinalStep) {
  std::vector<int32_t> out;
  exchange(kRecvReduceCopy, weftAvg, /*pinnedFifo=*/false, &out);
  if (IsSkipped() || HasFatalFailure()) return;
  // (i + 3i) / 2.
  for (int64_t i = 0; i < kCount; ++i) ASSERT_EQ(out[i], static_cast<int32_t>(2 * i)) << "element " << i;
}

// The host plays the sender through a FIFO in pinned memory, late: until it posts, the lane
// blocks its stream, and a second stream that waits for the lane's event must block too.
TEST_F(GpuLanesTest, StreamsWaitForEventsOfOtherStreams) {
  Fifo fifo;
  makeFifo(/*pinned=*/true, &fifo);
  if (HasFatalFailure()) return;
  Rank receiver;
  makeRank(fifo, 1, kRecv, weftSum, kSliceElems, &receiver);
  if (HasFatalFailure()) return;
  void* copied = deviceBuffer(kSlotBytes);
  ASSERT_TRUE(rt_->memset(copied, 0, kSlotBytes).isOk());
  Stream first = stream(), second = stream();
  Event received = nullptr;
  ASSERT_TRUE(rt_->eventCreate(&received, EventKind::kSync).isOk());
  launch(receiver, first);
  if (IsSkipped() || HasFatalFailure()) return;
  ASSERT_TRUE(rt_->eventRecord(received, first).isOk());
  Status s = rt_->streamWaitEvent(second, received);
  ASSERT_TRUE(s.isOk()) << s.message();
  ASSERT_TRUE(rt_->copyAsync(copied, receiver.recv, kSlotBytes, CopyKind::kDeviceToDevice, second).isOk());

  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  bool done = true;
  ASSERT_TRUE(rt_->streamQuery(second, &done).isOk());
  EXPECT_FALSE(done) << "the copy waits for the lane, which waits for the host";
  // Post one slice: its data, its byte count, then head (release).
  auto* slot = reinterpret_cast<int32_t*>(fifo.data);
  for (int64_t i = 0; i < kSliceElems; ++i) slot[i] = static_cast<int32_t>(7 * i + 1);
  fifo.words[0] = kSlotBytes;
  __atomic_store_n(&fifo.words[kSlots], uint64_t{1}, __ATOMIC_RELEASE);

  ASSERT_TRUE(rt_->streamSynchronize(second).isOk());
  EXPECT_EQ(receiver.error->code, kLaneOk) << describe(*receiver.error);
  EXPECT_EQ(__atomic_load_n(&fifo.words[kSlots + 1], __ATOMIC_ACQUIRE), 1u) << "the lane released the slot";
  std::vector<int32_t> out(kSliceElems);
  ASSERT_TRUE(rt_->copy(out.data(), copied, kSlotBytes, CopyKind::kDeviceToHost).isOk());
  for (int64_t i = 0; i < kSliceElems; ++i) ASSERT_EQ(out[i], static_cast<int32_t>(7 * i + 1)) << "element " << i;
  EXPECT_EQ(rt_->streamWaitEvent(second, nullptr).code(), weftInvalidArgument);
  EXPECT_TRUE(rt_->eventDestroy(received).isOk());
}

TEST_F(GpuLanesTest, ALaneWithoutAPeerTimesOutAndSaysWhere) {
  Fifo fifo;
  makeFifo(/*pinned=*/false, &fifo);
  if (HasFatalFailure()) return;
  Rank receiver;
  makeRank(fifo, 1, kRecv, weftSum, kSliceElems, &receiver);
  if (HasFatalFailure()) return;
  receiver.launch.timeoutNs = 100ull * 1000 * 1000;
  Stream s = stream();
  launch(receiver, s);
  if (IsSkipped() || HasFatalFailure()) return;
  ASSERT_TRUE(rt_->streamSynchronize(s).isOk()) << "a lane's failure is not the launch's";
  const LaneError& e = *receiver.error;
  EXPECT_EQ(e.code, kLaneTimeout) << describe(e);
  EXPECT_EQ(e.lane, 0);
  EXPECT_EQ(e.step, 0);
  EXPECT_EQ(e.fifo, 0);
  EXPECT_EQ(e.iteration, 0);
  std::vector<uint64_t> words;
  std::vector<uint32_t> aborts;
  readFifo(fifo, &words, &aborts);
  EXPECT_EQ(aborts[1], 1u) << "the receiver told its peer";
  EXPECT_EQ(aborts[0], 0u);
  EXPECT_EQ(words[kSlots + 1], 0u) << "nothing released";
}

TEST_F(GpuLanesTest, TheHostsAbortFlagStopsALane) {
  Fifo fifo;
  makeFifo(/*pinned=*/false, &fifo);
  if (HasFatalFailure()) return;
  Rank receiver;
  makeRank(fifo, 1, kRecv, weftSum, kSliceElems, &receiver);
  if (HasFatalFailure()) return;
  Stream s = stream();
  launch(receiver, s);
  if (IsSkipped() || HasFatalFailure()) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  __atomic_store_n(abort_, 1u, __ATOMIC_RELEASE);
  ASSERT_TRUE(rt_->streamSynchronize(s).isOk());
  EXPECT_EQ(receiver.error->code, kLaneAborted) << describe(*receiver.error);
}

TEST_F(GpuLanesTest, TheLaneTableMustBeReadableByTheHost) {
  LaneDesc* lane = static_cast<LaneDesc*>(deviceBuffer(sizeof(LaneDesc)));
  LaneStep* step = static_cast<LaneStep*>(deviceBuffer(sizeof(LaneStep)));
  LaneError* error = static_cast<LaneError*>(pinnedBuffer(sizeof(LaneError)));
  LaneLaunch l;
  l.nLanes = 1;
  l.lanes = lane;
  l.steps = step;
  l.nBuffers = 1;
  l.error = error;
  Status s = rt_->launchLanes(l, nullptr);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("lane table"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("device memory"), std::string::npos) << s.message();
  // In host memory it gets the checks every runtime applies.
  LaneDesc* hostLane = static_cast<LaneDesc*>(pinnedBuffer(sizeof(LaneDesc)));
  *hostLane = LaneDesc{};
  l.lanes = hostLane;
  l.nBuffers = 0;
  s = rt_->launchLanes(l, nullptr);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("nBuffers is 0"), std::string::npos) << s.message();
  // In device memory with a host copy (hostLanes, as DeviceTables gives): the copy is checked.
  l.lanes = lane;
  l.hostLanes = hostLane;
  s = rt_->launchLanes(l, nullptr);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("nBuffers is 0"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace device
}  // namespace weft
