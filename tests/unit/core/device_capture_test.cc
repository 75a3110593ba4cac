// DevicePath during graph capture, on a machine without a GPU. A runtime that wraps the emulated
// device says the caller's stream is being captured and records every call DevicePath makes
// meanwhile, so the tests see that a captured call makes none of the calls capture forbids and
// launches on the caller's stream, that what needs setting up is refused with what to do, and
// that what a graph may replay outlives the launch cache and the staging buffer's growth. One
// rank, so the launches need no FIFOs (the refusals come before any connecting); the
// gpu-labelled tests (unit/core/gpu) capture and replay two ranks on a real GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "collectives/device_executor.h"
#include "collectives/schedule.h"
#include "core/device_path.h"
#include "device/device.h"
#include "device/gpu_loader.h"

namespace weft {
namespace core {
namespace {

using device::Event;
using device::Graph;
using device::Stream;

// The emulated device, except that a chosen stream is being captured; every call made while it
// is gets recorded by name.
class CaptureRuntime final : public device::Runtime {
 public:
  explicit CaptureRuntime(device::Runtime& base) : base_(base) {}

  // From now on `stream` is being captured (null: no stream is).
  void capture(Stream stream) {
    std::lock_guard<std::mutex> lock(mu_);
    capturing_ = stream;
    captureCalls_.clear();
    launchStreams_.clear();
    copyTargets_.clear();
  }
  // The calls made since capture() while a stream was being captured.
  std::vector<std::string> captureCalls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return captureCalls_;
  }
  // The calls among them that capture forbids or that DevicePath has no business making then.
  std::vector<std::string> unexpectedCaptureCalls() const {
    static const std::set<std::string> allowed = {"getDevice", "setDevice",   "streamIsCapturing", "pointerInfo",
                                                  "copyAsync", "memsetAsync", "launchLanes"};
    std::vector<std::string> out;
    for (const std::string& c : captureCalls()) {
      if (allowed.count(c) == 0) out.push_back(c);
    }
    return out;
  }
  std::vector<Stream> launchStreams() const {
    std::lock_guard<std::mutex> lock(mu_);
    return launchStreams_;
  }
  std::vector<void*> copyTargets() const {
    std::lock_guard<std::mutex> lock(mu_);
    return copyTargets_;
  }
  const device::LaneLaunch& lastLaunch() const { return lastLaunch_; }
  // How many frees (freeHost and freeDevice) there have been so far, and whether `p` was freed
  // by one of those after the first `mark` (an address may be freed and handed out again).
  size_t frees() const {
    std::lock_guard<std::mutex> lock(mu_);
    return freed_.size();
  }
  bool freedSince(size_t mark, const void* p) const {
    std::lock_guard<std::mutex> lock(mu_);
    return std::find(freed_.begin() + static_cast<std::ptrdiff_t>(std::min(mark, freed_.size())), freed_.end(), p) !=
           freed_.end();
  }

  const char* name() const override { return base_.name(); }
  std::string description() const override { return base_.description(); }
  int deviceCount() const override { return base_.deviceCount(); }
  Status deviceProps(int device, device::DeviceProps* out) const override {
    note("deviceProps");
    return base_.deviceProps(device, out);
  }
  Status setDevice(int device) override {
    note("setDevice");
    return base_.setDevice(device);
  }
  Status getDevice(int* device) const override {
    note("getDevice");
    return base_.getDevice(device);
  }
  Status canAccessPeer(int device, int peer, bool* out) const override {
    note("canAccessPeer");
    return base_.canAccessPeer(device, peer, out);
  }
  Status enablePeerAccess(int peer) override {
    note("enablePeerAccess");
    return base_.enablePeerAccess(peer);
  }
  Status allocDevice(size_t bytes, void** out) override {
    note("allocDevice");
    return base_.allocDevice(bytes, out);
  }
  Status freeDevice(void* ptr) override {
    note("freeDevice");
    {
      std::lock_guard<std::mutex> lock(mu_);
      freed_.push_back(ptr);
    }
    return base_.freeDevice(ptr);
  }
  Status allocHost(size_t bytes, void** out) override {
    note("allocHost");
    return base_.allocHost(bytes, out);
  }
  Status allocDeviceShared(size_t bytes, void** out) override {
    note("allocDeviceShared");
    return base_.allocDeviceShared(bytes, out);
  }
  Status allocHostShared(size_t bytes, void** out) override {
    note("allocHostShared");
    return base_.allocHostShared(bytes, out);
  }
  Status freeHost(void* ptr) override {
    note("freeHost");
    {
      std::lock_guard<std::mutex> lock(mu_);
      freed_.push_back(ptr);
    }
    return base_.freeHost(ptr);
  }
  Status pointerInfo(const void* ptr, device::PointerInfo* out) const override {
    note("pointerInfo");
    return base_.pointerInfo(ptr, out);
  }
  Status copy(void* dst, const void* src, size_t bytes, device::CopyKind kind) override {
    note("copy");
    return base_.copy(dst, src, bytes, kind);
  }
  Status copyAsync(void* dst, const void* src, size_t bytes, device::CopyKind kind, Stream stream) override {
    if (note("copyAsync")) {
      std::lock_guard<std::mutex> lock(mu_);
      copyTargets_.push_back(dst);
      launchStreams_.push_back(stream);
    }
    return base_.copyAsync(dst, src, bytes, kind, stream);
  }
  Status memset(void* dst, int value, size_t bytes) override {
    note("memset");
    return base_.memset(dst, value, bytes);
  }
  Status memsetAsync(void* dst, int value, size_t bytes, Stream stream) override {
    note("memsetAsync");
    return base_.memsetAsync(dst, value, bytes, stream);
  }
  Status streamCreate(Stream* out) override {
    note("streamCreate");
    return base_.streamCreate(out);
  }
  Status streamDestroy(Stream stream) override {
    note("streamDestroy");
    return base_.streamDestroy(stream);
  }
  Status streamSynchronize(Stream stream) override {
    note("streamSynchronize");
    return base_.streamSynchronize(stream);
  }
  Status streamQuery(Stream stream, bool* done) override {
    note("streamQuery");
    return base_.streamQuery(stream, done);
  }
  Status eventCreate(Event* out, device::EventKind kind) override {
    note("eventCreate");
    return base_.eventCreate(out, kind);
  }
  Status eventDestroy(Event event) override {
    note("eventDestroy");
    return base_.eventDestroy(event);
  }
  Status eventRecord(Event event, Stream stream) override {
    note("eventRecord");
    return base_.eventRecord(event, stream);
  }
  Status eventSynchronize(Event event) override {
    note("eventSynchronize");
    return base_.eventSynchronize(event);
  }
  Status eventQuery(Event event, bool* done) override {
    note("eventQuery");
    return base_.eventQuery(event, done);
  }
  Status eventElapsedMs(Event start, Event end, float* ms) override {
    note("eventElapsedMs");
    return base_.eventElapsedMs(start, end, ms);
  }
  Status ipcExport(void* ptr, device::IpcHandle* out) override {
    note("ipcExport");
    return base_.ipcExport(ptr, out);
  }
  Status ipcImport(const device::IpcHandle& handle, void** out) override {
    note("ipcImport");
    return base_.ipcImport(handle, out);
  }
  Status ipcClose(void* ptr) override {
    note("ipcClose");
    return base_.ipcClose(ptr);
  }
  Status launchReduceCopy(const device::ReduceCopyArgs& args, Stream stream) override {
    note("launchReduceCopy");
    return base_.launchReduceCopy(args, stream);
  }
  Status launchLanes(const device::LaneLaunch& launch, Stream stream) override {
    if (note("launchLanes")) {
      std::lock_guard<std::mutex> lock(mu_);
      launchStreams_.push_back(stream);
    }
    lastLaunch_ = launch;
    // The emulated device runs the lanes now, which lets the tests check a captured call's
    // result too.
    return base_.launchLanes(launch, stream);
  }
  Status streamWaitEvent(Stream stream, Event event) override {
    note("streamWaitEvent");
    return base_.streamWaitEvent(stream, event);
  }
  Status hostRegister(void* ptr, size_t bytes) override {
    note("hostRegister");
    return base_.hostRegister(ptr, bytes);
  }
  Status hostUnregister(void* ptr) override {
    note("hostUnregister");
    return base_.hostUnregister(ptr);
  }
  Status streamIsCapturing(Stream stream, bool* capturing) override {
    note("streamIsCapturing");
    std::lock_guard<std::mutex> lock(mu_);
    *capturing = capturing_ != nullptr && stream == capturing_;
    return Status::ok();
  }
  Status graphCaptureBegin(Stream stream) override { return base_.graphCaptureBegin(stream); }
  Status graphCaptureEnd(Stream stream, Graph* out) override { return base_.graphCaptureEnd(stream, out); }
  Status graphLaunch(Graph graph, Stream stream) override { return base_.graphLaunch(graph, stream); }
  Status graphDestroy(Graph graph) override { return base_.graphDestroy(graph); }

 private:
  // Records `call` if a stream is being captured; says whether it was.
  bool note(const char* call) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (capturing_ == nullptr) return false;
    captureCalls_.push_back(call);
    return true;
  }

  device::Runtime& base_;
  mutable std::mutex mu_;
  Stream capturing_ = nullptr;
  mutable std::vector<std::string> captureCalls_;
  std::vector<Stream> launchStreams_;
  std::vector<void*> copyTargets_;
  std::vector<const void*> freed_;  // in order
  device::LaneLaunch lastLaunch_;
};

// One rank has no peers: its launches connect nothing.
class NoPeers final : public coll::ConnectionProvider {
 public:
  Status connect(const std::vector<coll::ConnectionKey>& keys, const Deadline&) override {
    EXPECT_TRUE(keys.empty());
    ++connects;
    return Status::ok();
  }
  Connection* get(const coll::ConnectionKey&) override { return nullptr; }
  Status healthCheck() override { return Status::ok(); }
  int connects = 0;
};

float valueOf(int seed, size_t i) { return static_cast<float>((seed * 7 + static_cast<int>(i) * 3) % 19) - 9.0f; }

class DeviceCapture : public ::testing::Test {
 protected:
  void SetUp() override {
    coll::registerHostLaneRunner();
    Status s = DevicePath::create(&rt_, 0, 0, 5.0, &path_);
    ASSERT_TRUE(s.isOk()) << s.message();
    ASSERT_TRUE(rt_.streamCreate(&user_).isOk());
  }
  void TearDown() override {
    rt_.capture(nullptr);
    path_.reset();
    for (void* p : buffers_) EXPECT_TRUE(rt_.freeDevice(p).isOk());
    EXPECT_TRUE(rt_.streamDestroy(user_).isOk());
  }
  // `count` floats of device memory, freed at the end of the test.
  float* buffer(size_t count) {
    void* p = nullptr;
    EXPECT_TRUE(rt_.allocDevice(count * sizeof(float), &p).isOk());
    buffers_.push_back(p);
    return static_cast<float*>(p);
  }
  static void fill(float* p, size_t count, int seed) {
    for (size_t i = 0; i < count; ++i) p[i] = valueOf(seed, i);
  }
  // One rank's all-reduce (sum) or all-to-all of `count` floats on the user's stream.
  Status run(coll::CollKind kind, int64_t count, const float* send, float* recv) {
    coll::ScheduleParams p;
    p.kind = kind;
    p.algo = kind == coll::CollKind::kAllToAll ? coll::Algo::kPairwise : coll::Algo::kRing;
    p.nRanks = 1;
    p.count = count;
    EXPECT_EQ(coll::validateParams(p), "");
    schedules_.push_back(std::make_unique<coll::RankSchedule>(coll::buildSchedule(p, 0)));
    DeviceCall c;
    c.schedule = schedules_.back().get();
    c.shape = {static_cast<int>(kind), static_cast<int>(p.algo), p.root, p.nChannels, p.count};
    c.sendbuff = send;
    c.recvbuff = recv;
    c.scratchBytes = static_cast<size_t>(coll::scratchBufferCount(p)) * sizeof(float);
    c.sendBytes = static_cast<size_t>(coll::sendBufferCount(p)) * sizeof(float);
    c.stageSend = kind == coll::CollKind::kAllToAll && send == recv && count > 0;
    c.what = std::string("rank 0: ") + (kind == coll::CollKind::kAllToAll ? "alltoall" : "allreduce") + " #" +
             std::to_string(++seq_);
    return path_->enqueue({c}, {}, weftFloat32, DeviceOp{}, 64 << 10, user_, &peers_);
  }
  // A one-rank collective copies its input: recv must hold fill(seed).
  static void expectFilled(const float* recv, size_t count, int seed) {
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(recv[i], valueOf(seed, i)) << "element " << i;
  }
  static bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  }

  CaptureRuntime rt_{device::emulatedRuntime()};
  NoPeers peers_;
  std::unique_ptr<DevicePath> path_;
  Stream user_ = nullptr;
  std::vector<void*> buffers_;
  std::vector<std::unique_ptr<coll::RankSchedule>> schedules_;
  int seq_ = 0;
};

using Kind = coll::CollKind;

TEST_F(DeviceCapture, AWarmedUpShapeIsCapturedOnTheCallersStreamWithoutSetUp) {
  const size_t n = 100;
  float* send = buffer(n);
  float* recv = buffer(n);
  fill(send, n, 1);
  ASSERT_TRUE(run(Kind::kAllReduce, n, send, recv).isOk());
  expectFilled(recv, n, 1);
  EXPECT_EQ(peers_.connects, 1);

  // Other buffers, same shape: the launch built above serves the capture.
  float* send2 = buffer(n);
  float* recv2 = buffer(n);
  fill(send2, n, 2);
  rt_.capture(user_);
  Status s = run(Kind::kAllReduce, n, send2, recv2);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(rt_.unexpectedCaptureCalls(), std::vector<std::string>{});
  EXPECT_EQ(rt_.launchStreams(), std::vector<Stream>{user_}) << "a captured launch goes on the caller's stream";
  EXPECT_EQ(peers_.connects, 1);
  EXPECT_EQ(rt_.lastLaunch().buffers[0].sendbuff, send2);
  EXPECT_EQ(rt_.lastLaunch().buffers[0].recvbuff, recv2);
  expectFilled(recv2, n, 2);
}

TEST_F(DeviceCapture, TheFirstCallOfAShapeIsRefusedWithWhatToDo) {
  float* send = buffer(200);
  float* recv = buffer(200);
  fill(send, 200, 3);
  ASSERT_TRUE(run(Kind::kAllReduce, 100, send, recv).isOk());
  rt_.capture(user_);
  Status s = run(Kind::kAllReduce, 200, send, recv);
  EXPECT_EQ(s.code(), weftInvalidUsage);
  EXPECT_TRUE(contains(s.message(), "rank 0: allreduce #2: the first call of this collective shape")) << s.message();
  EXPECT_TRUE(contains(s.message(), "cannot happen during graph capture")) << s.message();
  EXPECT_TRUE(contains(s.message(), "run it once before capturing")) << s.message();
  // A refusal, not a failure: the API reports it without putting the communicator in its error
  // state (and reading it clears it).
  EXPECT_TRUE(path_->takeRefusal());
  EXPECT_FALSE(path_->takeRefusal());
  EXPECT_EQ(rt_.unexpectedCaptureCalls(), std::vector<std::string>{});
  EXPECT_TRUE(rt_.launchStreams().empty());
  EXPECT_EQ(peers_.connects, 1) << "nothing was connected during the capture";

  // Once run outside the capture, the shape can be captured.
  rt_.capture(nullptr);
  ASSERT_TRUE(run(Kind::kAllReduce, 200, send, recv).isOk());
  EXPECT_FALSE(path_->refusedLast());
  expectFilled(recv, 200, 3);
  rt_.capture(user_);
  s = run(Kind::kAllReduce, 200, send, recv);
  EXPECT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(rt_.unexpectedCaptureCalls(), std::vector<std::string>{});
}

TEST_F(DeviceCapture, AnInPlaceAllToAllThatNeedsALargerStagingBufferIsRefused) {
  const size_t n = 100;
  float* a = buffer(n);
  float* b = buffer(n);
  fill(a, n, 4);
  // Out of place, the shape is built but no staging buffer is needed ...
  ASSERT_TRUE(run(Kind::kAllToAll, n, a, b).isOk());
  expectFilled(b, n, 4);
  // ... in place, the same shape needs one, which capture cannot allocate.
  rt_.capture(user_);
  Status s = run(Kind::kAllToAll, n, a, a);
  EXPECT_EQ(s.code(), weftInvalidUsage);
  EXPECT_TRUE(contains(s.message(), "rank 0: alltoall #2: an in-place all-to-all needs a staging buffer of 512 bytes"))
      << s.message();
  EXPECT_TRUE(contains(s.message(), "run the call once in place before capturing")) << s.message();
  EXPECT_EQ(rt_.unexpectedCaptureCalls(), std::vector<std::string>{});
  EXPECT_TRUE(rt_.launchStreams().empty());

  rt_.capture(nullptr);
  ASSERT_TRUE(run(Kind::kAllToAll, n, a, a).isOk());
  expectFilled(a, n, 4);
  fill(a, n, 5);
  rt_.capture(user_);
  s = run(Kind::kAllToAll, n, a, a);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(rt_.unexpectedCaptureCalls(), std::vector<std::string>{});
  // The copy into staging and the lanes, both on the caller's stream.
  EXPECT_EQ(rt_.launchStreams(), (std::vector<Stream>{user_, user_}));
  expectFilled(a, n, 5);
}

TEST_F(DeviceCapture, LaunchesAGraphMayReplayOutliveTheLaunchCache) {
  float* send = buffer(400);
  float* recv = buffer(400);
  fill(send, 400, 6);
  ASSERT_TRUE(run(Kind::kAllReduce, 1, send, recv).isOk());
  ASSERT_TRUE(run(Kind::kAllReduce, 2, send, recv).isOk());
  rt_.capture(user_);
  ASSERT_TRUE(run(Kind::kAllReduce, 1, send, recv).isOk());
  const device::LaneDesc* captured = rt_.lastLaunch().lanes;
  const size_t mark = rt_.frees();
  rt_.capture(nullptr);

  // More shapes than the cache holds: it drops what no graph captured.
  for (int64_t count = 3; count < 303; ++count) ASSERT_TRUE(run(Kind::kAllReduce, count, send, recv).isOk());
  expectFilled(recv, 302, 6);
  EXPECT_FALSE(rt_.freedSince(mark, captured)) << "the captured launch's tables were freed";

  rt_.capture(user_);
  Status s = run(Kind::kAllReduce, 1, send, recv);
  EXPECT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(rt_.lastLaunch().lanes, captured);
  // The shape that was only run, never captured, was dropped: capturing it is refused again.
  s = run(Kind::kAllReduce, 2, send, recv);
  EXPECT_EQ(s.code(), weftInvalidUsage) << s.message();
  EXPECT_EQ(rt_.unexpectedCaptureCalls(), std::vector<std::string>{});
}

TEST_F(DeviceCapture, AStagingBufferAGraphCopiesIntoIsKeptWhenItGrows) {
  float* a = buffer(1000);
  fill(a, 100, 7);
  ASSERT_TRUE(run(Kind::kAllToAll, 100, a, a).isOk());
  rt_.capture(user_);
  ASSERT_TRUE(run(Kind::kAllToAll, 100, a, a).isOk());
  ASSERT_EQ(rt_.copyTargets().size(), 1u);
  void* staging = rt_.copyTargets().front();
  const size_t mark = rt_.frees();
  rt_.capture(nullptr);

  // A larger in-place all-to-all, run now: a new staging buffer, the captured one kept.
  fill(a, 1000, 8);
  ASSERT_TRUE(run(Kind::kAllToAll, 1000, a, a).isOk());
  expectFilled(a, 1000, 8);
  EXPECT_FALSE(rt_.freedSince(mark, staging)) << "a graph may still copy into the staging buffer it captured";
  path_.reset();
  EXPECT_TRUE(rt_.freedSince(mark, staging)) << "the communicator's device path frees it when it goes";
}

}  // namespace
}  // namespace core
}  // namespace weft
