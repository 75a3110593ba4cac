// Several communicators on one stream inside a group. On a GPU, launches are asynchronous and
// ordered by streams and events: if communicator A forks from the caller's stream S, launches
// and joins S (S waits for A's kernel) before B forks from S, B's kernel waits for A's, while
// A's lanes wait for B's: the two kernels wait for each other. The emulated device runs each
// launch to its end before the call returns, so it cannot hang on this; instead a runtime that
// wraps it records the dependency graph the calls would build on a GPU (each stream's work in
// order, a wait on an event after the work recorded before it), and the tests check that
// neither launch depends on the other when every communicator forks before any launches
// (DevicePath::beginGroup / endGroup), and that the one-at-a-time order does make B depend on A.
// One rank per path, so the launches connect no FIFOs. An API test drives two communicators on
// one stream through weftGroupStart/End and checks the results.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "collectives/device_executor.h"
#include "collectives/schedule.h"
#include "core/device_path.h"
#include "device/device.h"
#include "device/gpu_loader.h"
#include "weft/weft.h"

namespace weft {
namespace core {
namespace {

using device::Event;
using device::Graph;
using device::Stream;

// The emulated device, recording what each stream's work would wait for on a GPU.
class OrderRuntime final : public device::Runtime {
 public:
  explicit OrderRuntime(device::Runtime& base) : base_(base) {}

  // Indices of the launches so far, in order.
  std::vector<int> launches() const {
    std::lock_guard<std::mutex> lock(mu_);
    return launches_;
  }
  // Adds a marker op on `stream` (the caller's next work) and returns its index.
  int mark(Stream stream) { return add(stream, {}); }
  // True when op `later` cannot start before op `earlier` has finished.
  bool dependsOn(int later, int earlier) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int> todo{later};
    std::set<int> seen;
    while (!todo.empty()) {
      int op = todo.back();
      todo.pop_back();
      for (int d : deps_[static_cast<size_t>(op)]) {
        if (d == earlier) return true;
        if (seen.insert(d).second) todo.push_back(d);
      }
    }
    return false;
  }

  const char* name() const override { return base_.name(); }
  std::string description() const override { return base_.description(); }
  int deviceCount() const override { return base_.deviceCount(); }
  Status deviceProps(int d, device::DeviceProps* out) const override { return base_.deviceProps(d, out); }
  Status setDevice(int d) override { return base_.setDevice(d); }
  Status getDevice(int* d) const override { return base_.getDevice(d); }
  Status canAccessPeer(int d, int p, bool* out) const override { return base_.canAccessPeer(d, p, out); }
  Status enablePeerAccess(int p) override { return base_.enablePeerAccess(p); }
  Status allocDevice(size_t n, void** out) override { return base_.allocDevice(n, out); }
  Status freeDevice(void* p) override { return base_.freeDevice(p); }
  Status allocHost(size_t n, void** out) override { return base_.allocHost(n, out); }
  Status allocDeviceShared(size_t n, void** out) override { return base_.allocDeviceShared(n, out); }
  Status allocHostShared(size_t n, void** out) override { return base_.allocHostShared(n, out); }
  Status freeHost(void* p) override { return base_.freeHost(p); }
  Status pointerInfo(const void* p, device::PointerInfo* out) const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++pointerQueries_;
    }
    return base_.pointerInfo(p, out);
  }
  Status copy(void* d, const void* s, size_t n, device::CopyKind k) override { return base_.copy(d, s, n, k); }
  Status copyAsync(void* d, const void* s, size_t n, device::CopyKind k, Stream st) override {
    add(st, {});
    return base_.copyAsync(d, s, n, k, st);
  }
  Status memset(void* d, int v, size_t n) override { return base_.memset(d, v, n); }
  Status memsetAsync(void* d, int v, size_t n, Stream st) override {
    add(st, {});
    return base_.memsetAsync(d, v, n, st);
  }
  Status streamCreate(Stream* out) override { return base_.streamCreate(out); }
  Status streamDestroy(Stream s) override { return base_.streamDestroy(s); }
  Status streamSynchronize(Stream s) override { return base_.streamSynchronize(s); }
  Status streamQuery(Stream s, bool* done) override { return base_.streamQuery(s, done); }
  Status eventCreate(Event* out, device::EventKind kind) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++eventsMade_[kind == device::EventKind::kTiming ? 1 : 0];
    return base_.eventCreate(out, kind);
  }
  Status eventDestroy(Event e) override { return base_.eventDestroy(e); }
  Status eventRecord(Event e, Stream s) override {
    const int op = add(s, {});
    std::lock_guard<std::mutex> lock(mu_);
    recordedAt_[e] = op;
    return base_.eventRecord(e, s);
  }
  Status eventSynchronize(Event e) override { return base_.eventSynchronize(e); }
  Status eventQuery(Event e, bool* done) override { return base_.eventQuery(e, done); }
  Status eventElapsedMs(Event a, Event b, float* ms) override { return base_.eventElapsedMs(a, b, ms); }
  Status ipcExport(void* p, device::IpcHandle* out) override { return base_.ipcExport(p, out); }
  Status ipcImport(const device::IpcHandle& h, void** out) override { return base_.ipcImport(h, out); }
  Status ipcClose(void* p) override { return base_.ipcClose(p); }
  Status launchReduceCopy(const device::ReduceCopyArgs& a, Stream s) override { return base_.launchReduceCopy(a, s); }
  Status launchLanes(const device::LaneLaunch& l, Stream s) override {
    const int op = add(s, {});
    {
      std::lock_guard<std::mutex> lock(mu_);
      launches_.push_back(op);
    }
    return base_.launchLanes(l, s);
  }
  Status streamWaitEvent(Stream s, Event e) override {
    int at = -1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = recordedAt_.find(e);
      if (it != recordedAt_.end()) at = it->second;
    }
    add(s, at >= 0 ? std::vector<int>{at} : std::vector<int>{});
    return base_.streamWaitEvent(s, e);
  }
  Status hostRegister(void* p, size_t n) override { return base_.hostRegister(p, n); }
  Status hostUnregister(void* p) override { return base_.hostUnregister(p); }
  Status streamIsCapturing(Stream s, bool* c) override { return base_.streamIsCapturing(s, c); }
  Status graphCaptureBegin(Stream s) override { return base_.graphCaptureBegin(s); }
  Status graphCaptureEnd(Stream s, Graph* out) override { return base_.graphCaptureEnd(s, out); }
  Status graphLaunch(Graph g, Stream s) override { return base_.graphLaunch(g, s); }
  Status graphDestroy(Graph g) override { return base_.graphDestroy(g); }

 private:
  // A new op on `stream` after its previous one and after `extra`; returns its index.
  int add(Stream stream, std::vector<int> extra) {
    std::lock_guard<std::mutex> lock(mu_);
    const Stream key = device::isDefaultStreamHandle(stream) ? nullptr : stream;
    auto last = lastOn_.find(key);
    if (last != lastOn_.end()) extra.push_back(last->second);
    deps_.push_back(std::move(extra));
    const int op = static_cast<int>(deps_.size()) - 1;
    lastOn_[key] = op;
    return op;
  }

  device::Runtime& base_;
  mutable std::mutex mu_;
  std::vector<std::vector<int>> deps_;  // per op: the ops it waits for directly
  std::map<Stream, int> lastOn_;
  std::map<Event, int> recordedAt_;
  std::vector<int> launches_;
  std::map<int, int> eventsMade_;  // [0]: kSync, [1]: kTiming
  mutable int pointerQueries_ = 0;

 public:
  int eventsMade(device::EventKind kind) {
    std::lock_guard<std::mutex> lock(mu_);
    return eventsMade_[kind == device::EventKind::kTiming ? 1 : 0];
  }
  int pointerQueries() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pointerQueries_;
  }
};

class NoPeers final : public coll::ConnectionProvider {
 public:
  Status connect(const std::vector<coll::ConnectionKey>&, const Deadline&) override { return Status::ok(); }
  Connection* get(const coll::ConnectionKey&) override { return nullptr; }
  Status healthCheck() override { return Status::ok(); }
};

class DeviceGroupOrder : public ::testing::Test {
 protected:
  void SetUp() override {
    coll::registerHostLaneRunner();
    for (auto* p : {&a_, &b_}) {
      Status s = DevicePath::create(&rt_, 0, 0, 5.0, p);
      ASSERT_TRUE(s.isOk()) << s.message();
    }
    ASSERT_TRUE(rt_.streamCreate(&user_).isOk());
    for (void** p : {&send_, &recvA_, &recvB_}) ASSERT_TRUE(rt_.allocDevice(kCount * sizeof(float), p).isOk());
    coll::ScheduleParams params;
    params.kind = coll::CollKind::kAllReduce;
    params.algo = coll::Algo::kRing;
    params.nRanks = 1;
    params.count = kCount;
    ASSERT_EQ(coll::validateParams(params), "");
    schedule_ = coll::buildSchedule(params, 0);
    call_.schedule = &schedule_;
    call_.shape = {static_cast<int>(params.kind), static_cast<int>(params.algo), params.root, params.nChannels,
                   params.count};
    call_.sendbuff = send_;
    call_.scratchBytes = static_cast<size_t>(coll::scratchBufferCount(params)) * sizeof(float);
    call_.sendBytes = static_cast<size_t>(coll::sendBufferCount(params)) * sizeof(float);
    call_.what = "rank 0: allreduce";
  }
  void TearDown() override {
    a_.reset();
    b_.reset();
    for (void* p : {send_, recvA_, recvB_}) EXPECT_TRUE(rt_.freeDevice(p).isOk());
    EXPECT_TRUE(rt_.streamDestroy(user_).isOk());
  }
  Status enqueue(DevicePath* path, void* recv) {
    DeviceCall c = call_;
    c.recvbuff = recv;
    return path->enqueue({c}, {}, weftFloat32, DeviceOp{}, 64 << 10, user_, &peers_);
  }

  static constexpr int64_t kCount = 1000;
  OrderRuntime rt_{device::emulatedRuntime()};
  NoPeers peers_;
  std::unique_ptr<DevicePath> a_, b_;
  Stream user_ = nullptr;
  void* send_ = nullptr;
  void* recvA_ = nullptr;
  void* recvB_ = nullptr;
  coll::RankSchedule schedule_;
  DeviceCall call_;
};

TEST_F(DeviceGroupOrder, OneAtATimeTheSecondLaunchWaitsForTheFirst) {
  ASSERT_TRUE(enqueue(a_.get(), recvA_).isOk());
  ASSERT_TRUE(enqueue(b_.get(), recvB_).isOk());
  const std::vector<int> l = rt_.launches();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_TRUE(rt_.dependsOn(l[1], l[0])) << "the model must see the cross-wait the group order avoids";
}

TEST_F(DeviceGroupOrder, ForkedTogetherNeitherLaunchWaitsForTheOther) {
  ASSERT_TRUE(a_->beginGroup({user_}).isOk());
  ASSERT_TRUE(b_->beginGroup({user_}).isOk());
  ASSERT_TRUE(enqueue(a_.get(), recvA_).isOk());
  ASSERT_TRUE(enqueue(b_.get(), recvB_).isOk());
  ASSERT_TRUE(a_->endGroup().isOk());
  ASSERT_TRUE(b_->endGroup().isOk());
  const int next = rt_.mark(user_);  // the caller's next work on its stream
  const std::vector<int> l = rt_.launches();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_FALSE(rt_.dependsOn(l[1], l[0]));
  EXPECT_FALSE(rt_.dependsOn(l[0], l[1]));
  EXPECT_TRUE(rt_.dependsOn(next, l[0]));
  EXPECT_TRUE(rt_.dependsOn(next, l[1]));
  // The results are there, and a later call forks and joins on its own again.
  EXPECT_EQ(static_cast<float*>(recvB_)[7], static_cast<float*>(send_)[7]);
  ASSERT_TRUE(enqueue(a_.get(), recvA_).isOk());
  const int after = rt_.mark(user_);
  EXPECT_TRUE(rt_.dependsOn(after, rt_.launches().back()));
}

// The device path's events only order streams: none is made with timing (cudaEventDisableTiming
// on a GPU, cheaper to record and wait for), and a call asks the runtime no pointer attributes
// of the path's own tables (the GPU runtime answers those from its own allocations).
TEST_F(DeviceGroupOrder, EventsWithoutTimingAndNoPointerQueriesPerCall) {
  EXPECT_GE(rt_.eventsMade(device::EventKind::kSync), 4);  // two per path
  EXPECT_EQ(rt_.eventsMade(device::EventKind::kTiming), 0);
  ASSERT_TRUE(enqueue(a_.get(), recvA_).isOk());
  const int queries = rt_.pointerQueries();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(enqueue(a_.get(), recvA_).isOk());
  EXPECT_EQ(rt_.pointerQueries(), queries);
  EXPECT_EQ(rt_.eventsMade(device::EventKind::kTiming), 0);
}

// Two communicators of one rank pair, driven by one thread, each with an all-reduce on the same
// stream in one group.
TEST(DeviceGroupApi, TwoCommunicatorsOnOneStreamInOneGroup) {
  setenv("WEFT_GPU_BACKEND", "emulated", 1);
  device::Runtime& rt = *device::gpuRuntime();
  const int n = 2;
  const size_t count = 500;
  std::vector<weftComm_t> comms(n);
  ASSERT_EQ(weftCommInitAll(comms.data(), n, nullptr), weftSuccess) << weftGetLastError(nullptr);
  Stream stream = nullptr;
  ASSERT_TRUE(rt.streamCreate(&stream).isOk());
  std::vector<void*> send(n), recv(n);
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(rt.allocDevice(count * sizeof(int32_t), &send[r]).isOk());
    ASSERT_TRUE(rt.allocDevice(count * sizeof(int32_t), &recv[r]).isOk());
    for (size_t i = 0; i < count; ++i) static_cast<int32_t*>(send[r])[i] = static_cast<int32_t>(r * 1000 + i);
  }
  ASSERT_EQ(weftGroupStart(), weftSuccess);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(weftAllReduce(send[r], recv[r], count, weftInt32, weftSum, comms[r], stream), weftSuccess);
  }
  ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(comms[0]);
  ASSERT_TRUE(rt.streamSynchronize(stream).isOk());
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(static_cast<int32_t*>(recv[r])[i], static_cast<int32_t>(1000 + 2 * i)) << "rank " << r;
    }
    EXPECT_TRUE(rt.freeDevice(send[r]).isOk());
    EXPECT_TRUE(rt.freeDevice(recv[r]).isOk());
  }
  EXPECT_TRUE(rt.streamDestroy(stream).isOk());
  for (auto c : comms) EXPECT_EQ(weftCommDestroy(c), weftSuccess);
}

}  // namespace
}  // namespace core
}  // namespace weft
