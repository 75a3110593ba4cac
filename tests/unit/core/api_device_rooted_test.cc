// weftGather / weftScatter on device buffers and WEFT_STREAM_DEFAULT, on the emulated device
// (WEFT_GPU_BACKEND=emulated: host memory posing as one GPU), ranks as threads.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "device/device.h"
#include "weft/weft.h"

namespace {

// Before anything asks for the GPU runtime (it is chosen once per process).
struct UseEmulatedDevice {
  UseEmulatedDevice() { setenv("WEFT_GPU_BACKEND", "emulated", 1); }
} useEmulatedDevice;

weft::device::Runtime& rt() { return *weft::device::gpuRuntime(); }

int32_t valueOf(int rank, size_t i) { return rank * 100000 + static_cast<int32_t>(i); }

void onRanks(int n, const std::function<void(int, weftComm_t)>& fn) {
  std::vector<weftComm_t> comms(static_cast<size_t>(n));
  ASSERT_EQ(weftCommInitAll(comms.data(), n, nullptr), weftSuccess) << weftGetLastError(nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { fn(r, comms[static_cast<size_t>(r)]); });
  for (auto& t : threads) t.join();
  for (auto c : comms) EXPECT_EQ(weftCommDestroy(c), weftSuccess);
}

struct DeviceInts {
  explicit DeviceInts(size_t n) : count(n) { EXPECT_TRUE(rt().allocDevice(n * sizeof(int32_t) + 4, &ptr).isOk()); }
  ~DeviceInts() { (void)rt().freeDevice(ptr); }
  int32_t* p() { return static_cast<int32_t*>(ptr); }
  size_t count;
  void* ptr = nullptr;
};

// Each stream kind: one the test makes, and WEFT_STREAM_DEFAULT.
class DeviceRooted : public ::testing::TestWithParam<bool> {
 protected:
  bool defaultStream() const { return GetParam(); }
};
INSTANTIATE_TEST_SUITE_P(Streams, DeviceRooted, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Default" : "Created"; });

TEST_P(DeviceRooted, GatherAndScatterEveryRoot) {
  for (int n : {1, 3, 4}) {
    onRanks(n, [&](int rank, weftComm_t comm) {
      weft::device::Stream made = nullptr;
      if (!defaultStream()) {
        ASSERT_TRUE(rt().streamCreate(&made).isOk());
      }
      weftStream_t stream = defaultStream() ? WEFT_STREAM_DEFAULT : static_cast<weftStream_t>(made);
      for (size_t count : {size_t{1}, size_t{7}, size_t{4099}}) {
        for (int root = 0; root < n; ++root) {
          for (bool inPlace : {false, true}) {
            DeviceInts mine(count), all(count * n);
            for (size_t i = 0; i < count; ++i) mine.p()[i] = valueOf(rank, i);
            for (size_t i = 0; i < count * n; ++i) all.p()[i] = -1;
            const int32_t* in = mine.p();
            if (inPlace && rank == root) {
              for (size_t i = 0; i < count; ++i) all.p()[root * count + i] = valueOf(rank, i);
              in = all.p() + root * count;
            }
            ASSERT_EQ(weftGather(in, all.p(), count, weftInt32, root, comm, stream), weftSuccess)
                << weftGetLastError(comm);
            ASSERT_TRUE(rt().streamSynchronize(defaultStream() ? weft::device::defaultStreamHandle() : made).isOk());
            for (size_t i = 0; i < count * n; ++i) {
              int32_t want = rank == root ? valueOf(static_cast<int>(i / count), i % count) : -1;
              ASSERT_EQ(all.p()[i], want) << "gather n " << n << " root " << root << " rank " << rank << " i " << i;
            }
            // Scatter back what the root holds, block r to rank r.
            DeviceInts block(count);
            for (size_t i = 0; i < count; ++i) block.p()[i] = -7;
            if (rank == root) {
              for (size_t i = 0; i < count * n; ++i) all.p()[i] = valueOf(root + 10, i);
            }
            int32_t* out = inPlace && rank == root ? all.p() + root * count : block.p();
            ASSERT_EQ(weftScatter(all.p(), out, count, weftInt32, root, comm, stream), weftSuccess)
                << weftGetLastError(comm);
            ASSERT_TRUE(rt().streamSynchronize(defaultStream() ? weft::device::defaultStreamHandle() : made).isOk());
            for (size_t i = 0; i < count; ++i) {
              ASSERT_EQ(out[i], valueOf(root + 10, rank * count + i)) << "scatter root " << root << " rank " << rank;
            }
          }
        }
      }
      if (made) {
        ASSERT_TRUE(rt().streamDestroy(made).isOk());
      }
    });
  }
}

TEST(DeviceDefaultStream, EveryCollectiveAndAGroupAcceptIt) {
  const int n = 3;
  const size_t count = 1001;
  onRanks(n, [&](int rank, weftComm_t comm) {
    DeviceInts send(count * n), recv(count * n);
    for (size_t i = 0; i < count * n; ++i) send.p()[i] = valueOf(rank, i), recv.p()[i] = -1;
    ASSERT_EQ(weftAllReduce(send.p(), recv.p(), count, weftInt32, weftSum, comm, WEFT_STREAM_DEFAULT), weftSuccess)
        << weftGetLastError(comm);
    ASSERT_EQ(weftCommFinalize(comm), weftSuccess);
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(recv.p()[i], valueOf(0, i) + valueOf(1, i) + valueOf(2, i));
    // A group of sends and receives around a ring on the default stream.
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    ASSERT_EQ(weftSend(send.p(), count, weftInt32, (rank + 1) % n, comm, WEFT_STREAM_DEFAULT), weftSuccess);
    ASSERT_EQ(weftRecv(recv.p(), count, weftInt32, (rank + n - 1) % n, comm, WEFT_STREAM_DEFAULT), weftSuccess);
    ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(comm);
    ASSERT_TRUE(rt().streamSynchronize(weft::device::defaultStreamHandle()).isOk());
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(recv.p()[i], valueOf((rank + n - 1) % n, i));
    ASSERT_EQ(weftBarrier(comm, WEFT_STREAM_DEFAULT), weftSuccess) << weftGetLastError(comm);
  });
}

TEST(DeviceDefaultStream, CannotBeDestroyed) {
  weft::Status s = rt().streamDestroy(weft::device::defaultStreamHandle());
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("default stream"), std::string::npos) << s.message();
}

TEST(DeviceRootedArguments, DeviceBuffersAreChecked) {
  onRanks(2, [&](int rank, weftComm_t comm) {
    std::vector<int32_t> pageable(8, 0);
    DeviceInts dev(16);
    // The root's spread buffer must be device memory with a stream.
    if (rank == 0) {
      EXPECT_EQ(weftGather(dev.p(), pageable.data(), 4, weftInt32, 0, comm, WEFT_STREAM_DEFAULT), weftInvalidArgument);
      EXPECT_NE(std::string(weftGetLastError(comm)).find("weftGather: recvbuff (32 bytes) is pageable host memory"),
                std::string::npos)
          << weftGetLastError(comm);
    }
    EXPECT_EQ(weftScatter(dev.p(), pageable.data(), 4, weftInt32, 0, comm, WEFT_STREAM_DEFAULT), weftInvalidArgument);
    EXPECT_NE(std::string(weftGetLastError(comm)).find("weftScatter: recvbuff (16 bytes) is pageable host memory"),
              std::string::npos)
        << weftGetLastError(comm);
  });
}

}  // namespace

namespace {

TEST(DeviceMemory, MemAllocGivesDeviceMemoryOfTheCurrentGpu) {
  void* p = nullptr;
  ASSERT_EQ(weftMemAlloc(&p, 3000), weftSuccess) << weftGetLastError(nullptr);
  weftMemKind_t kind = weftMemHost;
  int dev = -1;
  ASSERT_EQ(weftMemQuery(p, &kind, &dev), weftSuccess);
  EXPECT_EQ(kind, weftMemDevice);
  EXPECT_EQ(dev, 0);
  // weftMemQuery says what the runtime knows: pinned host memory, and plain host memory.
  void* pinned = nullptr;
  ASSERT_TRUE(rt().allocHost(64, &pinned).isOk());
  ASSERT_EQ(weftMemQuery(pinned, &kind, &dev), weftSuccess);
  EXPECT_EQ(kind, weftMemPinnedHost);
  EXPECT_EQ(dev, -1);
  ASSERT_TRUE(rt().freeHost(pinned).isOk());
  int local = 0;
  ASSERT_EQ(weftMemQuery(&local, &kind, &dev), weftSuccess);
  EXPECT_EQ(kind, weftMemHost);
  // It serves a collective on a stream.
  onRanks(2, [&](int rank, weftComm_t comm) {
    void* buf = nullptr;
    ASSERT_EQ(weftMemAlloc(&buf, 16 * sizeof(int32_t)), weftSuccess);
    auto* v = static_cast<int32_t*>(buf);
    for (int i = 0; i < 16; ++i) v[i] = rank + i;
    ASSERT_EQ(weftAllReduce(buf, buf, 16, weftInt32, weftSum, comm, WEFT_STREAM_DEFAULT), weftSuccess)
        << weftGetLastError(comm);
    ASSERT_EQ(weftCommFinalize(comm), weftSuccess);
    for (int i = 0; i < 16; ++i) ASSERT_EQ(v[i], 1 + 2 * i);
    EXPECT_EQ(weftMemFree(buf), weftSuccess);
  });
  EXPECT_EQ(weftMemFree(p), weftSuccess);
  EXPECT_EQ(weftMemFree(p), weftInvalidArgument);
}

}  // namespace

namespace {

TEST(DeviceInitAll, NullDevlistPutsRankIOnDeviceIModuloTheCount) {
  // Three emulated devices, four ranks: 0, 1, 2, 0.
  setenv("WEFT_EMULATED_DEVICES", "3", 1);
  ASSERT_EQ(rt().deviceCount(), 3);
  std::vector<weftComm_t> comms(4);
  ASSERT_EQ(weftCommInitAll(comms.data(), 4, nullptr), weftSuccess) << weftGetLastError(nullptr);
  for (int i = 0; i < 4; ++i) {
    int dev = -2;
    ASSERT_EQ(weftCommDevice(comms[i], &dev), weftSuccess);
    EXPECT_EQ(dev, i % 3) << "rank " << i;
  }
  // A collective on device buffers of each rank's own device.
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      ASSERT_TRUE(rt().setDevice(i % 3).isOk());
      DeviceInts v(33);
      weft::device::PointerInfo info;
      ASSERT_TRUE(rt().pointerInfo(v.p(), &info).isOk());
      EXPECT_EQ(info.device, i % 3);
      for (int k = 0; k < 33; ++k) v.p()[k] = valueOf(i, static_cast<size_t>(k));
      ASSERT_EQ(weftAllReduce(v.p(), v.p(), 33, weftInt32, weftSum, comms[i], WEFT_STREAM_DEFAULT), weftSuccess)
          << weftGetLastError(comms[i]);
      ASSERT_EQ(weftCommFinalize(comms[i]), weftSuccess);
      for (int k = 0; k < 33; ++k) {
        int32_t want = 0;
        for (int p = 0; p < 4; ++p) want += valueOf(p, static_cast<size_t>(k));
        ASSERT_EQ(v.p()[k], want) << "rank " << i << " k " << k;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto c : comms) EXPECT_EQ(weftCommDestroy(c), weftSuccess);
  // A devlist naming a device the machine lacks is refused before any rank starts.
  const int bad[] = {0, 3};
  EXPECT_EQ(weftCommInitAll(comms.data(), 2, bad), weftInvalidArgument);
  EXPECT_NE(std::string(weftGetLastError(nullptr)).find("devlist[1] is 3, but this machine has GPUs 0..2"),
            std::string::npos)
      << weftGetLastError(nullptr);
  unsetenv("WEFT_EMULATED_DEVICES");
}

// A non-blocking init runs on its own thread (which starts on device 0); the communicator must
// use the caller's current GPU: device 1 of two emulated ones.
TEST(DeviceInitNonBlocking, UsesTheCallersDevice) {
  setenv("WEFT_EMULATED_DEVICES", "2", 1);
  ASSERT_TRUE(rt().setDevice(1).isOk());
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  weftConfig_t cfg = WEFT_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  weftComm_t comm = nullptr;
  ASSERT_EQ(weftCommInitRankConfig(&comm, 1, id, 0, &cfg), weftInProgress);
  weftResult_t state = weftInProgress;
  for (int i = 0; i < 5000 && state == weftInProgress; ++i) {
    ASSERT_EQ(weftCommGetAsyncError(comm, &state), weftSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(state, weftSuccess) << weftGetLastError(comm);
  int dev = -2;
  ASSERT_EQ(weftCommDevice(comm, &dev), weftSuccess);
  EXPECT_EQ(dev, 1);
  EXPECT_EQ(weftCommDestroy(comm), weftSuccess);
  ASSERT_TRUE(rt().setDevice(0).isOk());
  unsetenv("WEFT_EMULATED_DEVICES");
}

// Aborting a non-blocking init that waits for a rank that never comes returns at once.
TEST(DeviceInitNonBlocking, AbortReturnsPromptly) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  weftConfig_t cfg = WEFT_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  cfg.timeoutS = 60;
  weftComm_t comm = nullptr;
  ASSERT_EQ(weftCommInitRankConfig(&comm, 2, id, 0, &cfg), weftInProgress);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(weftCommAbort(comm), weftSuccess);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  // The id's root still waits for the rank that never came: stop it, as other tests of this
  // binary count the roots left running.
  bool stopped = false;
  EXPECT_TRUE(weft::core::stopRoot(id, &stopped).isOk());
  EXPECT_TRUE(stopped);
}

}  // namespace
