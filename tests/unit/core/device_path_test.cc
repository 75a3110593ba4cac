// The device path of the C API on the emulated device (WEFT_GPU_BACKEND=emulated: host memory
// posing as one GPU): collectives with a stream, ranks as threads (p2p direct pointers) and as
// processes (p2p over IPC handles), fused groups, argument checks for device buffers, and lane
// failures reported through weftCommGetAsyncError. The same code runs a real GPU's launches; the
// gpu-labelled tests cover those.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "device_routes.h"
#include "device/device.h"
#include "device/gpu_loader.h"
#include "weft/weft.h"

namespace {

// Before anything asks for the GPU runtime (it is chosen once per process).
struct UseEmulatedDevice {
  UseEmulatedDevice() { setenv("WEFT_GPU_BACKEND", "emulated", 1); }
} useEmulatedDevice;

weft::device::Runtime& rt() { return *weft::device::gpuRuntime(); }

float inputOf(int rank, size_t i) { return static_cast<float>(static_cast<int>((rank * 13 + i * 5) % 31) - 15); }

struct DeviceBuffers {
  DeviceBuffers(size_t sendElems, size_t recvElems) {
    EXPECT_TRUE(rt().allocDevice(sendElems * sizeof(float), &send).isOk());
    EXPECT_TRUE(rt().allocDevice(recvElems * sizeof(float), &recv).isOk());
    EXPECT_TRUE(rt().streamCreate(&stream).isOk());
  }
  ~DeviceBuffers() {
    (void)rt().freeDevice(send);
    (void)rt().freeDevice(recv);
    (void)rt().streamDestroy(stream);
  }
  float* s() { return static_cast<float*>(send); }
  float* r() { return static_cast<float*>(recv); }
  void* send = nullptr;
  void* recv = nullptr;
  weft::device::Stream stream = nullptr;
};

// Runs fn(rank, comm) on n ranks, one thread each, over weftCommInitAll.
void onRanks(int n, const std::function<void(int, weftComm_t)>& fn) {
  std::vector<weftComm_t> comms(static_cast<size_t>(n));
  ASSERT_EQ(weftCommInitAll(comms.data(), n, nullptr), weftSuccess) << weftGetLastError(nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { fn(r, comms[static_cast<size_t>(r)]); });
  for (auto& t : threads) t.join();
  for (auto c : comms) EXPECT_EQ(weftCommDestroy(c), weftSuccess);
}

// How device FIFOs travel: GPU peer memory (p2p), or staged through pinned host memory over
// shared memory or over TCP sockets on the loopback interface (the device bridge).
class DeviceRoutes : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { weft::testing_routes::useRoute(GetParam()); }
  void TearDown() override { weft::testing_routes::clearRoute(); }
};
INSTANTIATE_TEST_SUITE_P(Via, DeviceRoutes, ::testing::Values("p2p", "shm", "socket"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST(DevicePath, TheEmulatedDeviceIsTheGpuRuntime) {
  ASSERT_NE(weft::device::gpuRuntime(), nullptr);
  EXPECT_STREQ(rt().name(), "emulated");
}

TEST_P(DeviceRoutes, EveryCollectiveOnThreads) {
  const int n = 3;
  const size_t count = 1000;
  onRanks(n, [&](int rank, weftComm_t comm) {
    int dev = -2;
    ASSERT_EQ(weftCommDevice(comm, &dev), weftSuccess);
    EXPECT_EQ(dev, 0);
    DeviceBuffers b(count * n, count * n);
    auto fill = [&] {
      for (size_t i = 0; i < count * n; ++i) b.s()[i] = inputOf(rank, i), b.r()[i] = -99.0f;
    };
    auto sync = [&] { ASSERT_TRUE(rt().streamSynchronize(b.stream).isOk()); };
    // All-reduce (sum) and avg.
    fill();
    ASSERT_EQ(weftAllReduce(b.send, b.recv, count, weftFloat32, weftSum, comm, b.stream), weftSuccess)
        << weftGetLastError(comm);
    sync();
    for (size_t i = 0; i < count; ++i) {
      float want = inputOf(0, i) + inputOf(1, i) + inputOf(2, i);
      ASSERT_EQ(b.r()[i], want) << "allreduce rank " << rank << " i " << i;
    }
    // All-gather.
    fill();
    ASSERT_EQ(weftAllGather(b.send, b.recv, count, weftFloat32, comm, b.stream), weftSuccess);
    sync();
    for (size_t i = 0; i < count * n; ++i) ASSERT_EQ(b.r()[i], inputOf(static_cast<int>(i / count), i % count));
    // Reduce-scatter.
    fill();
    ASSERT_EQ(weftReduceScatter(b.send, b.recv, count, weftFloat32, weftMax, comm, b.stream), weftSuccess);
    sync();
    for (size_t i = 0; i < count; ++i) {
      size_t j = rank * count + i;
      ASSERT_EQ(b.r()[i], std::max(inputOf(0, j), std::max(inputOf(1, j), inputOf(2, j))));
    }
    // Broadcast and reduce from root 1.
    fill();
    ASSERT_EQ(weftBroadcast(b.send, b.recv, count, weftFloat32, 1, comm, b.stream), weftSuccess);
    sync();
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(b.r()[i], inputOf(1, i));
    fill();
    ASSERT_EQ(weftReduce(b.send, b.recv, count, weftFloat32, weftSum, 1, comm, b.stream), weftSuccess);
    sync();
    if (rank == 1) {
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(b.r()[i], inputOf(0, i) + inputOf(1, i) + inputOf(2, i));
    }
    // All-to-all, out of place and in place.
    for (bool inPlace : {false, true}) {
      fill();
      void* recv = inPlace ? b.send : b.recv;
      ASSERT_EQ(weftAllToAll(b.send, recv, count, weftFloat32, comm, b.stream), weftSuccess);
      sync();
      const float* got = static_cast<const float*>(recv);
      for (size_t i = 0; i < count * n; ++i) {
        ASSERT_EQ(got[i], inputOf(static_cast<int>(i / count), rank * count + i % count)) << "in place " << inPlace;
      }
    }
    weftResult_t async = weftInternalError;
    EXPECT_EQ(weftCommGetAsyncError(comm, &async), weftSuccess);
    EXPECT_EQ(async, weftSuccess);
  });
}

TEST(DevicePath, GroupsFuseCollectivesIntoOneLaunch) {
  const int n = 2;
  onRanks(n, [&](int rank, weftComm_t comm) {
    DeviceBuffers a(100, 100), b(100, 100);
    for (int i = 0; i < 100; ++i) a.s()[i] = inputOf(rank, i), b.s()[i] = 2 * inputOf(rank, i);
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    ASSERT_EQ(weftAllReduce(a.send, a.recv, 100, weftFloat32, weftSum, comm, a.stream), weftSuccess);
    ASSERT_EQ(weftAllReduce(b.send, b.recv, 100, weftFloat32, weftSum, comm, a.stream), weftSuccess);
    ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(comm);
    ASSERT_TRUE(rt().streamSynchronize(a.stream).isOk());
    for (int i = 0; i < 100; ++i) {
      ASSERT_EQ(a.r()[i], inputOf(0, i) + inputOf(1, i));
      ASSERT_EQ(b.r()[i], 2 * (inputOf(0, i) + inputOf(1, i)));
    }
  });
}

TEST(DevicePath, BuffersMustBeOnTheDevice) {
  onRanks(2, [&](int rank, weftComm_t comm) {
    DeviceBuffers b(16, 16);
    std::vector<float> pageable(16);
    EXPECT_EQ(weftAllReduce(pageable.data(), b.recv, 16, weftFloat32, weftSum, comm, b.stream),
              weftInvalidArgument);
    std::string text = weftGetLastError(comm);
    EXPECT_NE(text.find("sendbuff"), std::string::npos) << text;
    EXPECT_NE(text.find("pageable host memory"), std::string::npos) << text;
    EXPECT_EQ(weftSend(pageable.data(), 4, weftFloat32, 1 - rank, comm, b.stream), weftInvalidArgument);
    // A group's sends and receives on device buffers use one stream.
    DeviceBuffers other(16, 16);
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    weftSend(b.send, 4, weftFloat32, 1 - rank, comm, b.stream);
    weftRecv(b.recv, 4, weftFloat32, 1 - rank, comm, other.stream);
    EXPECT_EQ(weftGroupEnd(), weftInvalidUsage);
    EXPECT_NE(std::string(weftGetLastError(comm)).find("one stream"), std::string::npos) << weftGetLastError(comm);
  });
}

TEST_P(DeviceRoutes, SendsAndReceivesPairUpInCallOrder) {
  const int n = 3;
  onRanks(n, [&](int rank, weftComm_t comm) {
    // To the right twice (two messages on one pair and direction), from the left twice, and a
    // send to itself, all in one group.
    const size_t count = 3000;
    DeviceBuffers a(count, count), b(count, count), self(count, count);
    for (size_t i = 0; i < count; ++i) {
      a.s()[i] = inputOf(rank, i);
      b.s()[i] = -inputOf(rank, i);
      self.s()[i] = 7.0f * rank;
    }
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    weftSend(a.send, count, weftFloat32, right, comm, a.stream);
    weftSend(b.send, count, weftFloat32, right, comm, a.stream);
    weftRecv(a.recv, count, weftFloat32, left, comm, a.stream);
    weftRecv(b.recv, count, weftFloat32, left, comm, a.stream);
    weftSend(self.send, count, weftFloat32, rank, comm, a.stream);
    weftRecv(self.recv, count, weftFloat32, rank, comm, a.stream);
    ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(comm);
    ASSERT_TRUE(rt().streamSynchronize(a.stream).isOk());
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(a.r()[i], inputOf(left, i));
      ASSERT_EQ(b.r()[i], -inputOf(left, i));
      ASSERT_EQ(self.r()[i], 7.0f * rank);
    }
    // A barrier on the stream, and a lone send/recv pair outside a group between ranks 0 and 1.
    ASSERT_EQ(weftBarrier(comm, a.stream), weftSuccess) << weftGetLastError(comm);
    if (rank == 0) {
      ASSERT_EQ(weftSend(a.send, 10, weftFloat32, 1, comm, a.stream), weftSuccess);
    }
    if (rank == 1) {
      ASSERT_EQ(weftRecv(a.recv, 10, weftFloat32, 0, comm, a.stream), weftSuccess);
    }
    ASSERT_TRUE(rt().streamSynchronize(a.stream).isOk());
    if (rank == 1) {
      EXPECT_EQ(a.r()[9], inputOf(0, 9));
    }
  });
}

// More than kMaxFusedOps (32) sends and receives: once refused, now run as several launches.
TEST(DevicePath, AGroupOfMoreThan32DeviceSendsAndReceivesRuns) {
  onRanks(2, [&](int rank, weftComm_t comm) {
    const int n = 17;
    DeviceBuffers b(n, n);
    for (int i = 0; i < n; ++i) b.s()[i] = static_cast<float>(rank * 100 + i), b.r()[i] = -1.0f;
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    for (int i = 0; i < n; ++i) {
      weftSend(b.s() + i, 1, weftFloat32, 1 - rank, comm, b.stream);
      weftRecv(b.r() + i, 1, weftFloat32, 1 - rank, comm, b.stream);
    }
    ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(comm);
    ASSERT_TRUE(rt().streamSynchronize(b.stream).isOk());
    for (int i = 0; i < n; ++i) ASSERT_EQ(b.r()[i], static_cast<float>((1 - rank) * 100 + i)) << i;
  });
}

// Two ranks as threads with a 1-second time-out.
void initPair(weftComm_t comms[2]) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::vector<std::thread> init;
  for (int r = 0; r < 2; ++r) {
    init.emplace_back([&, r] {
      weftConfig_t config = WEFT_CONFIG_INITIALIZER;
      config.timeoutS = 1;
      ASSERT_EQ(weftCommInitRankConfig(&comms[r], 2, id, r, &config), weftSuccess);
    });
  }
  for (auto& t : init) t.join();
  ASSERT_TRUE(comms[0] && comms[1]);
}

TEST_P(DeviceRoutes, ASilentPeerIsAnAsyncTimeoutNamingIt) {
  weftComm_t comms[2] = {nullptr, nullptr};
  initPair(comms);
  DeviceBuffers b0(64, 64), b1(64, 64);
  // One collective together (it connects the device FIFOs) ...
  std::thread peer([&] { EXPECT_EQ(weftAllReduce(b1.send, b1.recv, 64, weftFloat32, weftSum, comms[1], b1.stream), weftSuccess); });
  ASSERT_EQ(weftAllReduce(b0.send, b0.recv, 64, weftFloat32, weftSum, comms[0], b0.stream), weftSuccess);
  peer.join();
  // ... then rank 1 stops calling. The call is enqueued (on the emulated device it returns once
  // the lanes gave up); the failure is asynchronous.
  ASSERT_EQ(weftAllReduce(b0.send, b0.recv, 64, weftFloat32, weftSum, comms[0], b0.stream), weftSuccess);
  weftResult_t async = weftSuccess;
  ASSERT_EQ(weftCommGetAsyncError(comms[0], &async), weftSuccess);
  EXPECT_EQ(async, weftTimeout);
  std::string text = weftGetLastError(comms[0]);
  EXPECT_NE(text.find("allreduce #2"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1"), std::string::npos) << text;
  EXPECT_NE(text.find("time-out"), std::string::npos) << text;
  // The communicator refuses further work, and finalize reports the failure.
  EXPECT_EQ(weftAllReduce(b0.send, b0.recv, 64, weftFloat32, weftSum, comms[0], b0.stream), weftInvalidUsage);
  EXPECT_NE(weftCommFinalize(comms[0]), weftSuccess);
  // Rank 1 catches up: its second call matches what rank 0 sent before giving up. Its third
  // waits for rank 0, whose lanes told it of the failure: it fails at once, not at the time-out.
  EXPECT_EQ(weftAllReduce(b1.send, b1.recv, 64, weftFloat32, weftSum, comms[1], b1.stream), weftSuccess);
  ASSERT_EQ(weftCommGetAsyncError(comms[1], &async), weftSuccess);
  EXPECT_EQ(async, weftSuccess) << weftGetLastError(comms[1]);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(weftAllReduce(b1.send, b1.recv, 64, weftFloat32, weftSum, comms[1], b1.stream), weftSuccess);
  ASSERT_EQ(weftCommGetAsyncError(comms[1], &async), weftSuccess);
  EXPECT_EQ(async, weftRemoteError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(900));
  EXPECT_NE(std::string(weftGetLastError(comms[1])).find("rank 0 reported a failure"), std::string::npos)
      << weftGetLastError(comms[1]);
  EXPECT_EQ(weftCommDestroy(comms[0]), weftSuccess);
  EXPECT_EQ(weftCommDestroy(comms[1]), weftSuccess);
}

TEST(DevicePath, APeerThatNeverConnectsFailsTheCallAtItsDeadline) {
  weftComm_t comms[2] = {nullptr, nullptr};
  initPair(comms);
  DeviceBuffers b(64, 64);
  weftResult_t r = weftAllReduce(b.send, b.recv, 64, weftFloat32, weftSum, comms[0], b.stream);
  EXPECT_EQ(r, weftTimeout) << weftGetLastError(comms[0]);
  EXPECT_NE(std::string(weftGetLastError(comms[0])).find("rank 1"), std::string::npos) << weftGetLastError(comms[0]);
  EXPECT_EQ(weftCommDestroy(comms[0]), weftSuccess);
  EXPECT_EQ(weftCommDestroy(comms[1]), weftSuccess);
}

// Two processes: the p2p transport maps the peer's FIFO through IPC handles; the bridges stage
// it through pinned host memory.
TEST_P(DeviceRoutes, ProcessesAllReduce) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::vector<pid_t> children;
  for (int r = 0; r < 2; ++r) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      weftComm_t comm = nullptr;
      if (weftCommInitRank(&comm, 2, id, r) != weftSuccess) _exit(10);
      {
        DeviceBuffers b(4096, 4096);
        for (int i = 0; i < 4096; ++i) b.s()[i] = inputOf(r, static_cast<size_t>(i));
        if (weftAllReduce(b.send, b.recv, 4096, weftFloat32, weftSum, comm, b.stream) != weftSuccess) code = 11;
        if (code == 0 && !rt().streamSynchronize(b.stream).isOk()) code = 12;
        weftResult_t async = weftSuccess;
        if (code == 0 && (weftCommGetAsyncError(comm, &async) != weftSuccess || async != weftSuccess)) {
          fprintf(stderr, "rank %d: %s\n", r, weftGetLastError(comm));
          code = 15;
        }
        for (int i = 0; code == 0 && i < 4096; ++i) {
          if (b.r()[i] != inputOf(0, static_cast<size_t>(i)) + inputOf(1, static_cast<size_t>(i))) {
            fprintf(stderr, "rank %d: element %d is %f, expected %f\n", r, i, b.r()[i], inputOf(0, static_cast<size_t>(i)) + inputOf(1, static_cast<size_t>(i)));
            code = 13;
          }
        }
      }
      if (weftCommDestroy(comm) != weftSuccess && code == 0) code = 14;
      _exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
}

}  // namespace
