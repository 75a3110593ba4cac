// Mixed communicators: host ranks (host buffers, stream NULL) and GPU ranks (device buffers of
// the emulated device, a stream) in one communicator, ranks as threads. weftCommInitAll's
// devlist entry -1 makes a host rank. Every collective, send/recv, gather/scatter and the
// barrier, integer types, results checked bit for bit on every rank, for several placements of
// the host ranks; and what is refused.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "device_routes.h"
#include "core/comm.h"
#include "device/device.h"
#include "weft/weft.h"

namespace {

struct UseEmulatedDevice {
  UseEmulatedDevice() { setenv("WEFT_GPU_BACKEND", "emulated", 1); }
} useEmulatedDevice;

weft::device::Runtime& rt() { return *weft::device::gpuRuntime(); }

// Which ranks are on host memory: bit r set for a host rank.
struct Layout {
  const char* name;
  int nRanks;
  unsigned hostMask;
};

bool isHost(const Layout& l, int rank) { return (l.hostMask >> rank & 1u) != 0; }

// Runs fn(rank, comm) on the layout's ranks, one thread each; host ranks get devlist -1.
void onRanks(const Layout& l, const std::function<void(int, weftComm_t)>& fn) {
  std::vector<weftComm_t> comms(static_cast<size_t>(l.nRanks));
  std::vector<int> devlist(static_cast<size_t>(l.nRanks));
  for (int r = 0; r < l.nRanks; ++r) devlist[static_cast<size_t>(r)] = isHost(l, r) ? -1 : 0;
  ASSERT_EQ(weftCommInitAll(comms.data(), l.nRanks, devlist.data()), weftSuccess) << weftGetLastError(nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < l.nRanks; ++r) threads.emplace_back([&, r] { fn(r, comms[static_cast<size_t>(r)]); });
  for (auto& t : threads) t.join();
  for (auto c : comms) EXPECT_EQ(weftCommDestroy(c), weftSuccess);
}

// A rank's buffer: device memory of the emulated GPU on a GPU rank, plain memory on a host rank.
class Buffer {
 public:
  Buffer(bool host, size_t bytes) : host_(host), bytes_(bytes + 8) {
    if (host_) {
      ptr_ = std::malloc(bytes_);
    } else {
      EXPECT_TRUE(rt().allocDevice(bytes_, &ptr_).isOk());
    }
    std::memset(ptr_, 0xee, bytes_);
  }
  ~Buffer() {
    if (host_) {
      std::free(ptr_);
    } else {
      (void)rt().freeDevice(ptr_);
    }
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  bool host_;
  size_t bytes_;
  void* ptr_ = nullptr;
};

// What rank r contributes at element i (small: sums of a few ranks stay exact in every type).
template <typename T>
T valueOf(int rank, size_t i) {
  return static_cast<T>(rank * 13 + static_cast<int>(i % 101) + 1);
}

class Mixed : public ::testing::TestWithParam<Layout> {};

INSTANTIATE_TEST_SUITE_P(Layouts, Mixed,
                         ::testing::Values(Layout{"TwoHostThenTwoGpu", 4, 0x3u}, Layout{"Interleaved", 4, 0x5u},
                                           Layout{"OneHostLast", 4, 0x8u}, Layout{"OneGpuFirst", 4, 0xeu},
                                           Layout{"ThreeRanks", 3, 0x2u}),
                         [](const ::testing::TestParamInfo<Layout>& p) { return std::string(p.param.name); });

// The per-rank context of one case: the rank's stream (null on host ranks) and a sync.
struct RankCtx {
  int rank;
  int n;
  bool host;
  weftComm_t comm;
  weft::device::Stream stream = nullptr;
  weftStream_t s() const { return static_cast<weftStream_t>(stream); }
  void sync() const {
    if (!host) ASSERT_TRUE(rt().streamSynchronize(stream).isOk());
    weftResult_t async = weftSuccess;
    ASSERT_EQ(weftCommGetAsyncError(comm, &async), weftSuccess);
    ASSERT_EQ(async, weftSuccess) << weftGetLastError(comm);
  }
};

template <typename T>
void allReduce(const RankCtx& c, size_t count, weftDataType_t type, weftRedOp_t op) {
  Buffer send(c.host, count * sizeof(T)), recv(c.host, count * sizeof(T));
  for (size_t i = 0; i < count; ++i) send.as<T>()[i] = valueOf<T>(c.rank, i);
  ASSERT_EQ(weftAllReduce(send.as<T>(), recv.as<T>(), count, type, op, c.comm, c.s()), weftSuccess)
      << weftGetLastError(c.comm);
  c.sync();
  for (size_t i = 0; i < count; ++i) {
    T want = valueOf<T>(0, i);
    for (int r = 1; r < c.n; ++r) want = op == weftMax ? std::max(want, valueOf<T>(r, i)) : T(want + valueOf<T>(r, i));
    ASSERT_EQ(recv.as<T>()[i], want) << "all-reduce rank " << c.rank << " count " << count << " i " << i;
  }
}

void allGatherAndReduceScatter(const RankCtx& c, size_t count) {
  const size_t n = static_cast<size_t>(c.n);
  Buffer send(c.host, count * n * 4), recv(c.host, count * n * 4);
  for (size_t i = 0; i < count; ++i) send.as<int32_t>()[i] = valueOf<int32_t>(c.rank, i);
  ASSERT_EQ(weftAllGather(send.as<int32_t>(), recv.as<int32_t>(), count, weftInt32, c.comm, c.s()), weftSuccess)
      << weftGetLastError(c.comm);
  c.sync();
  for (size_t i = 0; i < count * n; ++i) {
    ASSERT_EQ(recv.as<int32_t>()[i], valueOf<int32_t>(static_cast<int>(i / count), i % count))
        << "all-gather rank " << c.rank << " i " << i;
  }
  for (size_t i = 0; i < count * n; ++i) send.as<int32_t>()[i] = valueOf<int32_t>(c.rank, i);
  ASSERT_EQ(weftReduceScatter(send.as<int32_t>(), recv.as<int32_t>(), count, weftInt32, weftSum, c.comm, c.s()),
            weftSuccess)
      << weftGetLastError(c.comm);
  c.sync();
  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0;
    for (int r = 0; r < c.n; ++r) want += valueOf<int32_t>(r, c.rank * count + i);
    ASSERT_EQ(recv.as<int32_t>()[i], want) << "reduce-scatter rank " << c.rank << " i " << i;
  }
}

void rooted(const RankCtx& c, size_t count, int root) {
  Buffer send(c.host, count * 8), recv(c.host, count * 8);
  for (size_t i = 0; i < count; ++i) send.as<int64_t>()[i] = valueOf<int64_t>(c.rank, i);
  ASSERT_EQ(weftBroadcast(send.as<int64_t>(), recv.as<int64_t>(), count, weftInt64, root, c.comm, c.s()), weftSuccess)
      << weftGetLastError(c.comm);
  c.sync();
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(recv.as<int64_t>()[i], valueOf<int64_t>(root, i)) << "broadcast root " << root << " rank " << c.rank;
  }
  std::memset(recv.as<int64_t>(), 0, count * 8);
  ASSERT_EQ(weftReduce(send.as<int64_t>(), recv.as<int64_t>(), count, weftInt64, weftSum, root, c.comm, c.s()),
            weftSuccess)
      << weftGetLastError(c.comm);
  c.sync();
  for (size_t i = 0; i < count && c.rank == root; ++i) {
    int64_t want = 0;
    for (int r = 0; r < c.n; ++r) want += valueOf<int64_t>(r, i);
    ASSERT_EQ(recv.as<int64_t>()[i], want) << "reduce root " << root << " i " << i;
  }
}

void allToAll(const RankCtx& c, size_t count) {
  const size_t n = static_cast<size_t>(c.n);
  Buffer send(c.host, count * n * 4), recv(c.host, count * n * 4);
  // Block p goes to rank p: element i of it is valueOf(rank, p * count + i).
  for (size_t i = 0; i < count * n; ++i) send.as<int32_t>()[i] = valueOf<int32_t>(c.rank, i);
  ASSERT_EQ(weftAllToAll(send.as<int32_t>(), recv.as<int32_t>(), count, weftInt32, c.comm, c.s()), weftSuccess)
      << weftGetLastError(c.comm);
  c.sync();
  for (size_t i = 0; i < count * n; ++i) {
    const int from = static_cast<int>(i / count);
    ASSERT_EQ(recv.as<int32_t>()[i], valueOf<int32_t>(from, c.rank * count + i % count))
        << "all-to-all rank " << c.rank << " i " << i;
  }
}

void sendRecvAndGather(const RankCtx& c, size_t count, int root) {
  const size_t n = static_cast<size_t>(c.n);
  Buffer send(c.host, count), recv(c.host, count * n);
  for (size_t i = 0; i < count; ++i) send.as<uint8_t>()[i] = valueOf<uint8_t>(c.rank, i);
  // Around the ring both ways: to the next rank and from the previous one, and back.
  const int next = (c.rank + 1) % c.n, prev = (c.rank + c.n - 1) % c.n;
  ASSERT_EQ(weftGroupStart(), weftSuccess);
  ASSERT_EQ(weftSend(send.as<uint8_t>(), count, weftUint8, next, c.comm, c.s()), weftSuccess);
  ASSERT_EQ(weftRecv(recv.as<uint8_t>(), count, weftUint8, prev, c.comm, c.s()), weftSuccess);
  ASSERT_EQ(weftSend(send.as<uint8_t>(), count, weftUint8, prev, c.comm, c.s()), weftSuccess);
  ASSERT_EQ(weftRecv(recv.as<uint8_t>() + count, count, weftUint8, next, c.comm, c.s()), weftSuccess);
  ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(c.comm);
  c.sync();
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(recv.as<uint8_t>()[i], valueOf<uint8_t>(prev, i)) << "recv from prev, rank " << c.rank;
    ASSERT_EQ(recv.as<uint8_t>()[count + i], valueOf<uint8_t>(next, i)) << "recv from next, rank " << c.rank;
  }
  ASSERT_EQ(weftGather(send.as<uint8_t>(), recv.as<uint8_t>(), count, weftUint8, root, c.comm, c.s()), weftSuccess)
      << weftGetLastError(c.comm);
  c.sync();
  for (size_t i = 0; i < count * n && c.rank == root; ++i) {
    ASSERT_EQ(recv.as<uint8_t>()[i], valueOf<uint8_t>(static_cast<int>(i / count), i % count)) << "gather i " << i;
  }
  ASSERT_EQ(weftScatter(recv.as<uint8_t>(), send.as<uint8_t>(), count, weftUint8, root, c.comm, c.s()), weftSuccess)
      << weftGetLastError(c.comm);
  c.sync();
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(send.as<uint8_t>()[i], valueOf<uint8_t>(c.rank, i)) << "scatter";
}

TEST_P(Mixed, EveryCollectiveBitExact) {
  const Layout l = GetParam();
  onRanks(l, [&](int rank, weftComm_t comm) {
    RankCtx c{rank, l.nRanks, isHost(l, rank), comm};
    if (!c.host) ASSERT_TRUE(rt().streamCreate(&c.stream).isOk());
    // 1 and odd counts, and one past a 256 KiB slot (several slices per step).
    for (size_t count : {size_t{1}, size_t{7}, size_t{4099}, size_t{70001}}) {
      allReduce<int32_t>(c, count, weftInt32, weftSum);
      allReduce<uint8_t>(c, count, weftUint8, weftSum);
      allReduce<int64_t>(c, count, weftInt64, weftMax);
      allGatherAndReduceScatter(c, count);
      for (int root = 0; root < l.nRanks; ++root) rooted(c, count, root);
      allToAll(c, count);
      sendRecvAndGather(c, count, count % static_cast<size_t>(l.nRanks));
      ASSERT_EQ(weftBarrier(comm, c.s()), weftSuccess) << weftGetLastError(comm);
      c.sync();
    }
    if (c.stream) {
      ASSERT_TRUE(rt().streamDestroy(c.stream).isOk());
    }
  });
}

// Ranks as processes, over each route: GPU ranks reach each other through IPC handles ("p2p")
// or staged through shared memory ("staged"); host ranks' edges go through shared memory
// between processes, or all edges through sockets ("socket"). A host rank's process joins
// under a HostRankScope, as a process without a GPU would (the GPU runtime may already be
// chosen for this process before the fork).
class MixedProcesses : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { weft::testing_routes::useRoute(GetParam()); }
  void TearDown() override { weft::testing_routes::clearRoute(); }
};
INSTANTIATE_TEST_SUITE_P(Routes, MixedProcesses, ::testing::Values("p2p", "staged", "socket"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST_P(MixedProcesses, EveryCollectiveBitExact) {
  const Layout l{"Processes", 4, 0x5u};
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  std::vector<pid_t> children;
  for (int r = 0; r < l.nRanks; ++r) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid != 0) {
      children.push_back(pid);
      continue;
    }
    weftComm_t comm = nullptr;
    {
      weft::core::HostRankScope host(isHost(l, r));
      if (weftCommInitRank(&comm, l.nRanks, id, r) != weftSuccess) _exit(10);
    }
    RankCtx c{r, l.nRanks, isHost(l, r), comm};
    if (!c.host && !rt().streamCreate(&c.stream).isOk()) _exit(11);
    for (size_t count : {size_t{1}, size_t{4099}, size_t{70001}}) {
      allReduce<int32_t>(c, count, weftInt32, weftSum);
      allGatherAndReduceScatter(c, count);
      rooted(c, count, 1);
      rooted(c, count, 2);
      allToAll(c, count);
      sendRecvAndGather(c, count, 3);
    }
    const bool failed = ::testing::Test::HasFailure();
    if (c.stream) (void)rt().streamDestroy(c.stream);
    if (weftCommDestroy(comm) != weftSuccess) _exit(12);
    _exit(failed ? 13 : 0);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
}

// A GPU rank's call with host buffers and stream NULL is refused at once, with the ranks named;
// so is a host rank's call with a stream. (Peers that then make the call are told of the
// refusal by the liveness record, as for any refused call.)
TEST(MixedRefusals, EachSideKeepsToItsOwnMemory) {
  const Layout l{"TwoAndTwo", 4, 0x3u};
  onRanks(l, [&](int rank, weftComm_t comm) {
    int32_t host[4] = {1, 2, 3, 4};
    if (rank == 2) {
      EXPECT_EQ(weftAllReduce(host, host, 4, weftInt32, weftSum, comm, nullptr), weftInvalidUsage);
      const std::string text = weftGetLastError(comm);
      EXPECT_NE(text.find("GPU 0 of a mixed communicator (ranks 2, 3 on GPUs, ranks 0, 1 on host memory)"),
                std::string::npos)
          << text;
      EXPECT_EQ(weftBarrier(comm, nullptr), weftInvalidUsage);
    }
    if (rank == 0) {
      weft::device::Stream stream = nullptr;
      ASSERT_TRUE(rt().streamCreate(&stream).isOk());
      EXPECT_EQ(weftAllReduce(host, host, 4, weftInt32, weftSum, comm, static_cast<weftStream_t>(stream)),
                weftInvalidUsage);
      EXPECT_NE(std::string(weftGetLastError(comm)).find("no GPU was current"), std::string::npos)
          << weftGetLastError(comm);
      ASSERT_TRUE(rt().streamDestroy(stream).isOk());
    }
  });
}

// devlist -1 makes a host rank; anything below is refused.
TEST(MixedRefusals, DevlistBelowMinusOne) {
  weftComm_t comms[2] = {nullptr, nullptr};
  int devlist[2] = {-2, 0};
  EXPECT_EQ(weftCommInitAll(comms, 2, devlist), weftInvalidArgument);
  EXPECT_NE(std::string(weftGetLastError(nullptr)).find("-1 makes a host rank"), std::string::npos)
      << weftGetLastError(nullptr);
}

}  // namespace
