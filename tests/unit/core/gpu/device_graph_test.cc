// Collectives captured into CUDA / HIP graphs on a real GPU (ctest label `gpu`), through the C
// API: two ranks as threads on device 0 run an all-reduce once (the warm-up that builds its
// launch), capture the same call on their streams, and replay the graph with new inputs, each
// result checked exactly; a call of a shape never run before is refused during a capture without
// spoiling it. Each test skips with the loader's reason on a machine without a GPU.
//
// Captures use the runtime's global mode, like PyTorch's: while any thread captures, a call that
// capture forbids fails in every thread. So the ranks capture one at a time, between barriers,
// and nobody copies or synchronizes while a capture is open.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
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

// The runtime of the modules this build made (the same module libweft.so loads, so its streams,
// buffers and graphs are the library's too), loaded once per process.
GpuLoadResult& loaded() {
  static GpuLoadResult result = [] {
    GpuLoadOptions o;
    o.dirs = {testing::moduleDir()};
    o.searchDefaultPath = false;
    return loadGpuRuntime(o);
  }();
  return result;
}

// Small integers, so that every sum is exact in float.
float inputOf(int rank, int round, size_t i) {
  return static_cast<float>(static_cast<int>((static_cast<size_t>(rank + 1) * 31 + round * 7 + i * 3) % 41) - 20);
}

// Threads wait here for each other; a thread that fails gives up the barrier, so the others stop
// waiting instead of hanging.
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  bool wait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (broken_) return false;
    const int generation = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return true;
    }
    cv_.wait(lock, [&] { return generation_ != generation || broken_; });
    return !broken_;
  }
  void breakIt() {
    std::lock_guard<std::mutex> lock(mu_);
    broken_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const int n_;
  int arrived_ = 0;
  int generation_ = 0;
  bool broken_ = false;
};

// One rank's stream, buffers and graph, released whatever happens.
struct RankResources {
  explicit RankResources(Runtime* runtime) : rt(runtime) {}
  ~RankResources() {
    if (graph != nullptr) (void)rt->graphDestroy(graph);
    if (send != nullptr) (void)rt->freeDevice(send);
    if (recv != nullptr) (void)rt->freeDevice(recv);
    if (stream != nullptr) (void)rt->streamDestroy(stream);
  }
  Runtime* rt;
  Stream stream = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  Graph graph = nullptr;
};

class DeviceGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    rt_ = loaded().runtime.get();
    if (rt_ == nullptr) GTEST_SKIP() << "no GPU: " << loaded().report;
    // A rank that fails must not leave the other waiting for half an hour.
    setenv("WEFT_TIMEOUT_S", "120", 0);
    ASSERT_TRUE(rt_->setDevice(0).isOk());
  }
  // The comms of weftCommInitAll on `n` ranks, all on device 0.
  void initRanks(int n, std::vector<weftComm_t>* comms) {
    comms->assign(static_cast<size_t>(n), nullptr);
    std::vector<int> devlist(static_cast<size_t>(n), 0);
    ASSERT_EQ(weftCommInitAll(comms->data(), n, devlist.data()), weftSuccess) << weftGetLastError(nullptr);
    for (weftComm_t c : *comms) {
      int dev = -1;
      ASSERT_EQ(weftCommDevice(c, &dev), weftSuccess);
      ASSERT_EQ(dev, 0) << "libweft.so found no GPU where this test did";
    }
  }
  Runtime* rt_ = nullptr;
};

// "" when `s` is ok, else what failed.
std::string failed(const char* what, const Status& s) { return s.isOk() ? "" : std::string(what) + ": " + s.message(); }

TEST_F(DeviceGraph, TwoRanksReplayACapturedAllReduceWithNewInputs) {
  const int nRanks = 2;
  const size_t count = (1 << 20) + 7;  // many slices, and a ragged last one
  const size_t bytes = count * sizeof(float);
  std::vector<weftComm_t> comms;
  initRanks(nRanks, &comms);
  if (HasFatalFailure()) return;
  Barrier barrier(nRanks);
  std::mutex captureMutex;

  // Runs rank `rank`'s part; returns "" or what went wrong.
  auto rankBody = [&](int rank) -> std::string {
    weftComm_t comm = comms[static_cast<size_t>(rank)];
    Runtime& rt = *rt_;
    RankResources res(rt_);
    std::vector<float> host(count);
    std::string why;
    if (!(why = failed("setDevice", rt.setDevice(0))).empty()) return why;
    if (!(why = failed("streamCreate", rt.streamCreate(&res.stream))).empty()) return why;
    if (!(why = failed("allocDevice", rt.allocDevice(bytes, &res.send))).empty()) return why;
    if (!(why = failed("allocDevice", rt.allocDevice(bytes, &res.recv))).empty()) return why;
    auto upload = [&](int round) {
      for (size_t i = 0; i < count; ++i) host[i] = inputOf(rank, round, i);
      return failed("copy to the device", rt.copy(res.send, host.data(), bytes, CopyKind::kHostToDevice));
    };
    // "" when recv holds the sum of every rank's input of `round`.
    auto check = [&](int round, const char* when) -> std::string {
      Status s = rt.copy(host.data(), res.recv, bytes, CopyKind::kDeviceToHost);
      if (!s.isOk()) return failed("copy from the device", s);
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int r = 0; r < nRanks; ++r) want += inputOf(r, round, i);
        if (host[i] != want) {
          return std::string(when) + ": element " + std::to_string(i) + " is " + std::to_string(host[i]) +
                 ", expected " + std::to_string(want) + " (round " + std::to_string(round) + ")";
        }
      }
      return "";
    };
    auto allReduce = [&](const char* when) -> std::string {
      weftResult_t r = weftAllReduce(res.send, res.recv, count, weftFloat32, weftSum, comm, res.stream);
      return r == weftSuccess ? "" : std::string(when) + ": weftAllReduce: " + weftGetLastError(comm);
    };

    // Warm-up: the first call of the shape connects the FIFOs and builds the launch.
    if (!(why = upload(0)).empty() || !(why = allReduce("warm-up")).empty()) return why;
    if (!(why = failed("streamSynchronize", rt.streamSynchronize(res.stream))).empty()) return why;
    if (!(why = check(0, "warm-up")).empty()) return why;

    // Round 1's input is in place before the capture: had the captured call run, recv would
    // hold round 1's sum afterwards instead of round 0's.
    if (!(why = upload(1)).empty()) return why;
    if (!barrier.wait()) return "another rank failed";
    {
      std::lock_guard<std::mutex> lock(captureMutex);
      if (!(why = failed("graphCaptureBegin", rt.graphCaptureBegin(res.stream))).empty()) return why;
      bool capturing = false;
      Status s = rt.streamIsCapturing(res.stream, &capturing);
      std::string call = allReduce("during the capture");
      Status end = rt.graphCaptureEnd(res.stream, &res.graph);
      if (!s.isOk() || !capturing) return "streamIsCapturing did not see the capture: " + s.message();
      if (!call.empty()) return call;
      if (!(why = failed("graphCaptureEnd", end)).empty()) return why;
      if (!(why = failed("streamIsCapturing", rt.streamIsCapturing(res.stream, &capturing))).empty()) return why;
      if (capturing) return "the stream is still capturing after graphCaptureEnd";
    }
    if (!barrier.wait()) return "another rank failed";
    if (!(why = failed("streamSynchronize", rt.streamSynchronize(res.stream))).empty()) return why;
    if (!(why = check(0, "after the capture (the captured call must not have run)")).empty()) return why;

    // Each replay reads the send buffer as it is then and runs the whole all-reduce again.
    for (int round = 1; round <= 3; ++round) {
      if (round > 1 && !(why = upload(round)).empty()) return why;
      if (!(why = failed("graphLaunch", rt.graphLaunch(res.graph, res.stream))).empty()) return why;
      if (!(why = failed("streamSynchronize", rt.streamSynchronize(res.stream))).empty()) return why;
      if (!(why = check(round, "replay")).empty()) return why;
    }
    // The communicator goes on as before: its FIFOs' counts moved with the replays.
    if (!(why = upload(4)).empty() || !(why = allReduce("after the replays")).empty()) return why;
    if (!(why = failed("streamSynchronize", rt.streamSynchronize(res.stream))).empty()) return why;
    if (!(why = check(4, "after the replays")).empty()) return why;
    weftResult_t async = weftInternalError;
    if (weftCommGetAsyncError(comm, &async) != weftSuccess || async != weftSuccess) {
      return std::string("weftCommGetAsyncError: ") + weftGetLastError(comm);
    }
    return "";
  };

  std::vector<std::string> errors(nRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < nRanks; ++r) {
    threads.emplace_back([&, r] {
      errors[static_cast<size_t>(r)] = rankBody(r);
      if (!errors[static_cast<size_t>(r)].empty()) barrier.breakIt();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < nRanks; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
  for (weftComm_t c : comms) EXPECT_EQ(weftCommDestroy(c), weftSuccess);
}

TEST_F(DeviceGraph, AShapeNeverRunBeforeIsRefusedWithoutSpoilingTheCapture) {
  std::vector<weftComm_t> comms;
  initRanks(1, &comms);
  if (HasFatalFailure()) return;
  weftComm_t comm = comms[0];
  RankResources res(rt_);
  ASSERT_TRUE(rt_->streamCreate(&res.stream).isOk());
  ASSERT_TRUE(rt_->allocDevice(2048 * sizeof(float), &res.send).isOk());
  ASSERT_TRUE(rt_->allocDevice(2048 * sizeof(float), &res.recv).isOk());
  ASSERT_TRUE(rt_->memset(res.send, 0, 2048 * sizeof(float)).isOk());
  // Another shape runs first, so that the communicator's device side exists.
  ASSERT_EQ(weftAllReduce(res.send, res.recv, 1024, weftFloat32, weftSum, comm, res.stream), weftSuccess)
      << weftGetLastError(comm);
  ASSERT_TRUE(rt_->streamSynchronize(res.stream).isOk());

  ASSERT_TRUE(rt_->graphCaptureBegin(res.stream).isOk());
  weftResult_t r = weftAllReduce(res.send, res.recv, 2048, weftFloat32, weftSum, comm, res.stream);
  std::string text = weftGetLastError(comm);
  Status end = rt_->graphCaptureEnd(res.stream, &res.graph);
  EXPECT_EQ(r, weftInvalidUsage) << text;
  EXPECT_NE(text.find("rank 0: allreduce"), std::string::npos) << text;
  EXPECT_NE(text.find("cannot happen during graph capture; run it once before capturing"), std::string::npos) << text;
  // The refusal made no call the capture forbids: it ends cleanly (with nothing in it).
  EXPECT_TRUE(end.isOk()) << end.message();
  bool capturing = true;
  ASSERT_TRUE(rt_->streamIsCapturing(res.stream, &capturing).isOk());
  EXPECT_FALSE(capturing);
  EXPECT_EQ(weftCommDestroy(comm), weftSuccess);
}

}  // namespace
}  // namespace device
}  // namespace weft
