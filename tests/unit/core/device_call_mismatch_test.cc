// Ranks that make different calls on device buffers (issue 13, item 1), on the emulated device
// (host memory posing as one GPU): whatever differs (count, datatype, op, collective, a skipped
// call), no rank's call succeeds, neither when it is enqueued nor once its stream is done, every
// rank sees its failure within a second of making the call, and every rank reports the same
// sentence naming both calls, as the host path does (tests/api/call_mismatch_test.cc). Over
// every device route (GPU peer memory, and the bridges over shared memory and over sockets),
// with ranks as threads and as forked processes. Agreeing ranks are not disturbed.
//
// Ranks that disagree on a root: in a rooted schedule a rank may finish without hearing from
// every other (a broadcast's root only sends), so rooted calls on device buffers first run the
// call-check token lane on the host (Communicator::runCallTokens).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "device_routes.h"
#include "device/device.h"
#include "fixtures/call_check_bounds.h"
#include "weft/weft.h"

namespace {

using weft_test::kFailWithinSeconds;

// Before anything asks for the GPU runtime (it is chosen once per process).
struct UseEmulatedDevice {
  UseEmulatedDevice() { setenv("WEFT_GPU_BACKEND", "emulated", 1); }
} useEmulatedDevice;

weft::device::Runtime& rt() { return *weft::device::gpuRuntime(); }

constexpr int kRanks = 2;     // the ranks of most cases
constexpr int kMaxRanks = 4;  // the most any case uses
constexpr size_t kMessageBytes = 1024;
// The largest buffer a case uses: 16 MiB of floats (CountLarge).
constexpr size_t kBufferBytes = (16u << 20) + 64;

// What one rank's call gave, in memory that forked ranks share with the test.
struct Outcome {
  int called = 0;  // 1 once the rank made its call and looked for its error
  int enqueued = -1;
  int async = -1;
  double seconds = 0;
  char message[kMessageBytes] = {0};
};

class SharedOutcomes {
 public:
  SharedOutcomes() {
    void* p = mmap(nullptr, sizeof(Outcome) * kMaxRanks, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) std::abort();
    outcomes_ = new (p) Outcome[kMaxRanks];
  }
  ~SharedOutcomes() { munmap(outcomes_, sizeof(Outcome) * kMaxRanks); }
  Outcome& operator[](int r) { return outcomes_[r]; }

 private:
  Outcome* outcomes_;
};

struct DeviceBuffers {
  DeviceBuffers() {
    EXPECT_TRUE(rt().allocDevice(kBufferBytes, &in).isOk());
    EXPECT_TRUE(rt().allocDevice(kBufferBytes, &out).isOk());
    EXPECT_TRUE(rt().streamCreate(&stream).isOk());
  }
  ~DeviceBuffers() {
    (void)rt().freeDevice(in);
    (void)rt().freeDevice(out);
    (void)rt().streamDestroy(stream);
  }
  void* in = nullptr;
  void* out = nullptr;
  weft::device::Stream stream = nullptr;
};

// One rank's part of a case: its call(s) on device buffers and a stream.
using Body = std::function<weftResult_t(int rank, weftComm_t comm, DeviceBuffers& b)>;

// Joins the communicator, makes the call, waits for its stream and asks for the asynchronous
// error, timing it all from the call on. Returns the communicator, for the caller to destroy.
weftComm_t runRank(int rank, int nRanks, const weftUniqueId& id, const Body& body, Outcome* out) {
  weftComm_t comm = nullptr;
  if (weftCommInitRank(&comm, nRanks, id, rank) != weftSuccess) {
    std::snprintf(out->message, sizeof(out->message), "init failed: %s", weftGetLastError(nullptr));
    return nullptr;
  }
  {
    DeviceBuffers b;
    const auto start = std::chrono::steady_clock::now();
    weftResult_t enqueued = body(rank, comm, b);
    (void)rt().streamSynchronize(b.stream);
    weftResult_t async = weftSuccess;
    if (weftCommGetAsyncError(comm, &async) != weftSuccess) async = weftInternalError;
    out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out->enqueued = enqueued;
    out->async = async;
    std::snprintf(out->message, sizeof(out->message), "%s", weftGetLastError(comm));
    out->called = 1;
  }
  return comm;
}

constexpr char kRemedy[] =
    ". Every rank must make the same calls in the same order with the same count, type, op and root";

// The sentence a message carries: from "rank N called" to the end of the remedy (a later call
// refused by the failed communicator quotes it inside its own message).
std::string sentenceOf(const std::string& message) {
  size_t at = message.find(" called ");
  if (at == std::string::npos) return "";
  size_t start = message.rfind("rank ", at);
  if (start == std::string::npos) return "";
  size_t end = message.find(kRemedy, at);
  return end == std::string::npos ? message.substr(start) : message.substr(start, end + sizeof(kRemedy) - 1 - start);
}

// Parameters: the device route ("p2p", "shm", "socket") and whether ranks are processes.
class DeviceCallMismatch : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  void SetUp() override { weft::testing_routes::useRoute(route()); }
  void TearDown() override { weft::testing_routes::clearRoute(); }
  weft_test::SlowHeartbeat slowHeartbeat_;
  const std::string& route() const { return std::get<0>(GetParam()); }
  bool processes() const { return std::get<1>(GetParam()); }

  void run(const Body& body, SharedOutcomes& outcomes, int nRanks = kRanks) {
    weftUniqueId id;
    ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
    if (!processes()) {
      // Threads of one process share the emulated device's memory: a rank's FIFOs go only once
      // every rank is done (a real GPU's free waits for the kernels that use the memory).
      std::vector<weftComm_t> comms(nRanks, nullptr);
      std::vector<std::thread> threads;
      for (int r = 0; r < nRanks; ++r) {
        threads.emplace_back([&, r] { comms[r] = runRank(r, nRanks, id, body, &outcomes[r]); });
      }
      for (auto& t : threads) t.join();
      for (weftComm_t c : comms) (void)weftCommDestroy(c);
      return;
    }
    std::vector<pid_t> children;
    for (int r = 0; r < nRanks; ++r) {
      pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        (void)weftCommDestroy(runRank(r, nRanks, id, body, &outcomes[r]));
        _exit(0);
      }
      children.push_back(pid);
    }
    // Not a performance bound: a rank that hangs would otherwise hold the test for ever.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (pid_t pid : children) {
      int status = 0;
      while (waitpid(pid, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          kill(pid, SIGKILL);
          (void)waitpid(pid, &status, 0);
          ADD_FAILURE() << "a rank (pid " << pid << ") did not finish within 60 s";
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }

  // Runs body on both ranks and checks: no rank's call succeeded, each failed as invalid usage
  // at once (kFailWithinSeconds), and each carries `sentence`, the same on every rank.
  void expectEveryRankFails(const Body& body, const std::string& sentence, int nRanks = kRanks) {
    SharedOutcomes outcomes;
    run(body, outcomes, nRanks);
    for (int r = 0; r < nRanks; ++r) {
      const Outcome& o = outcomes[r];
      ASSERT_EQ(o.called, 1) << "rank " << r << " never made its call: " << o.message;
      EXPECT_TRUE(o.enqueued != weftSuccess || o.async != weftSuccess)
          << "rank " << r << " completed a call its peer disagreed on";
      const int result = o.enqueued != weftSuccess ? o.enqueued : o.async;
      EXPECT_EQ(result, weftInvalidUsage) << "rank " << r << ": " << o.message;
      EXPECT_LT(o.seconds, kFailWithinSeconds) << "rank " << r << " took " << o.seconds << " s to see its failure";
      EXPECT_EQ(sentenceOf(o.message), sentence + kRemedy) << "rank " << r << ": " << o.message;
    }
  }
};

TEST_P(DeviceCallMismatch, CountSmall) {
  expectEveryRankFails(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        return weftAllReduce(b.in, b.out, rank == 0 ? 1000 : 2000, weftFloat32, weftSum, comm, b.stream);
      },
      "rank 1 called allreduce #1 (count 2000, float, sum) while rank 0 called allreduce #1 (count 1000, float, sum)");
}

TEST_P(DeviceCallMismatch, CountLarge) {
  // 8 MiB against 16 MiB of floats.
  expectEveryRankFails(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        return weftAllReduce(b.in, b.out, (rank == 0 ? 8u : 16u) << 18, weftFloat32, weftSum, comm, b.stream);
      },
      "rank 1 called allreduce #1 (count 4194304, float, sum) while rank 0 called allreduce #1 (count 2097152, "
      "float, sum)");
}

TEST_P(DeviceCallMismatch, Datatype) {
  // float against double at 1M elements: the float rank's messages are half the size.
  expectEveryRankFails(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        return weftAllReduce(b.in, b.out, 1u << 20, rank == 0 ? weftFloat32 : weftFloat64, weftSum, comm, b.stream);
      },
      "rank 1 called allreduce #1 (count 1048576, double, sum) while rank 0 called allreduce #1 (count 1048576, "
      "float, sum)");
}

TEST_P(DeviceCallMismatch, Op) {
  expectEveryRankFails(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        return weftAllReduce(b.in, b.out, 1000, weftFloat32, rank == 0 ? weftSum : weftMax, comm, b.stream);
      },
      "rank 1 called allreduce #1 (count 1000, float, max) while rank 0 called allreduce #1 (count 1000, float, sum)");
}

TEST_P(DeviceCallMismatch, Collective) {
  // The same bytes on the wire: an all-reduce of 2n elements moves n per rank over two ranks,
  // as an all-gather of n does.
  expectEveryRankFails(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        if (rank == 0) return weftAllReduce(b.in, b.out, 8192, weftFloat32, weftSum, comm, b.stream);
        return weftAllGather(b.in, b.out, 4096, weftFloat32, comm, b.stream);
      },
      "rank 1 called allgather #1 (count 4096, float) while rank 0 called allreduce #1 (count 8192, float, sum)");
}

TEST_P(DeviceCallMismatch, SkippedCall) {
  // Rank 1 skips the first of two calls: its first call meets rank 0's first.
  expectEveryRankFails(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        if (rank == 0) {
          weftResult_t first = weftAllReduce(b.in, b.out, 1000, weftFloat32, weftSum, comm, b.stream);
          if (first != weftSuccess) return first;
        }
        return weftAllReduce(b.in, b.out, 3000, weftFloat32, weftSum, comm, b.stream);
      },
      "rank 1 called allreduce #1 (count 3000, float, sum) while rank 0 called allreduce #1 (count 1000, float, sum)");
}

// Both ranks name themselves the root of a broadcast: each only sends.
TEST_P(DeviceCallMismatch, Root) {
  expectEveryRankFails(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        return weftBroadcast(b.in, b.out, 5000, weftFloat32, rank, comm, b.stream);
      },
      "rank 1 called broadcast #1 (count 5000, float, root 1) while rank 0 called broadcast #1 (count 5000, float, "
      "root 0)");
}

// Both ranks name themselves the root of a reduce: each only receives.
TEST_P(DeviceCallMismatch, RootReduceBothReceive) {
  expectEveryRankFails(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        return weftReduce(b.in, b.out, 300, weftFloat32, weftSum, rank, comm, b.stream);
      },
      "rank 1 called reduce #1 (count 300, float, sum, root 1) while rank 0 called reduce #1 (count 300, float, "
      "sum, root 0)");
}

// Four ranks, one of which names itself the root: ranks whose tree neighbours agree with them
// would finish, and the odd one wait for a FIFO no peer makes.
TEST_P(DeviceCallMismatch, RootAmongFour) {
  expectEveryRankFails(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        return weftBroadcast(b.in, b.out, 1000, weftFloat32, rank == 3 ? 3 : 0, comm, b.stream);
      },
      "rank 3 called broadcast #1 (count 1000, float, root 3) while rank 0 called broadcast #1 (count 1000, float, "
      "root 0)",
      4);
}

// Gather and scatter move data as direct sends and receives, but are stamped and token-checked as
// collectives (comm_rooted.cc): with roots 0/0/0/3 every rank fails, none waits for the time-out.
TEST_P(DeviceCallMismatch, RootAmongFourGather) {
  expectEveryRankFails(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        return weftGather(b.in, b.out, 300, weftFloat32, rank == 3 ? 3 : 0, comm, b.stream);
      },
      "rank 3 called gather #1 (count 300, float, root 3) while rank 0 called gather #1 (count 300, float, root 0)", 4);
}

TEST_P(DeviceCallMismatch, RootAmongFourScatter) {
  expectEveryRankFails(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        return weftScatter(b.in, b.out, 300, weftFloat32, rank == 3 ? 3 : 0, comm, b.stream);
      },
      "rank 3 called scatter #1 (count 300, float, root 3) while rank 0 called scatter #1 (count 300, float, root 0)",
      4);
}

// Both ranks name themselves the root of a gather: each only receives.
TEST_P(DeviceCallMismatch, RootGatherBothReceive) {
  expectEveryRankFails(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        return weftGather(b.in, b.out, 300, weftFloat32, rank, comm, b.stream);
      },
      "rank 1 called gather #1 (count 300, float, root 1) while rank 0 called gather #1 (count 300, float, root 0)");
}

// The odd root after agreeing rooted calls of every root (their launches are built and connected).
// A rank may find its last agreeing launch aborted by the others' failure when its odd call starts
// and report that earlier call: the sentence names the latest call the ranks disagree on, against
// the lowest rank that reported the majority's version of it (rank 0, or rank 1 when rank 0 was
// still in the earlier call). Every rank carries the same one.
TEST_P(DeviceCallMismatch, RootAmongFourAfterAgreeingCalls) {
  SharedOutcomes outcomes;
  run(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        for (int root = 0; root < 4; ++root) {
          weftResult_t agreed = weftReduce(b.in, b.out, 64, weftFloat32, weftSum, root, comm, b.stream);
          if (agreed != weftSuccess) return agreed;
        }
        return weftReduce(b.in, b.out, 64, weftFloat32, weftSum, rank == 2 ? 1 : 3, comm, b.stream);
      },
      outcomes, 4);
  const std::string odd = "rank 2 called reduce #5 (count 64, float, sum, root 1) while rank ";
  const std::string major = " called reduce #5 (count 64, float, sum, root 3)";
  const std::string first = sentenceOf(outcomes[0].message);
  EXPECT_TRUE(first == odd + "0" + major + kRemedy || first == odd + "1" + major + kRemedy) << outcomes[0].message;
  for (int r = 0; r < 4; ++r) {
    const Outcome& o = outcomes[r];
    ASSERT_EQ(o.called, 1) << "rank " << r << " never made its call: " << o.message;
    EXPECT_TRUE(o.enqueued != weftSuccess || o.async != weftSuccess) << "rank " << r << " completed its call";
    EXPECT_LT(o.seconds, kFailWithinSeconds) << "rank " << r << " took " << o.seconds << " s to see its failure";
    EXPECT_EQ(sentenceOf(o.message), first) << "rank " << r << ": " << o.message;
  }
}

// Three ranks, one of which differs: ranks whose lanes never read the odd rank's slots learn of
// the mismatch through their peers' abort flags, and the sentence names the odd rank against the
// majority, on every rank.
TEST_P(DeviceCallMismatch, TheOddRankIsNamedOnEveryRank) {
  expectEveryRankFails(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        return weftAllReduce(b.in, b.out, 3000, weftFloat32, rank == 2 ? weftMin : weftSum, comm, b.stream);
      },
      "rank 2 called allreduce #1 (count 3000, float, min) while rank 0 called allreduce #1 (count 3000, float, sum)",
      3);
}

// A receive of another size than the send: the receiving rank fails at once naming its own
// send/recv group. (The sending rank's launch may already be complete by then: like a root that
// only sends, nothing on the device path waits for its message to be consumed.)
TEST_P(DeviceCallMismatch, ReceiveOfAnotherSizeNamesTheGroup) {
  SharedOutcomes outcomes;
  run(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        if (rank == 0) return weftSend(b.in, 1000, weftFloat32, 1, comm, b.stream);
        return weftRecv(b.out, 2000, weftFloat32, 0, comm, b.stream);
      },
      outcomes);
  const Outcome& o = outcomes[1];
  ASSERT_EQ(o.called, 1) << o.message;
  EXPECT_TRUE(o.enqueued != weftSuccess || o.async != weftSuccess) << "the receive of the wrong size succeeded";
  EXPECT_LT(o.seconds, kFailWithinSeconds) << "the receiving rank took " << o.seconds << " s to see its failure";
  EXPECT_NE(sentenceOf(o.message).find("rank 1 called a send/recv group #1 (1 operations)"), std::string::npos)
      << o.message;
}

// Rank 1 looks for its error only 2 s after its call (it computes meanwhile): its lanes failed
// long before, and rank 0 reported at once. Both must still carry the same sentence.
TEST_P(DeviceCallMismatch, ALateAsyncCheckGivesTheSameSentence) {
  SharedOutcomes outcomes;
  run(
      [](int rank, weftComm_t comm, DeviceBuffers& b) {
        weftResult_t r = weftAllReduce(b.in, b.out, rank == 0 ? 1000 : 2000, weftFloat32, weftSum, comm, b.stream);
        if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(2));
        return r;
      },
      outcomes);
  const std::string sentence =
      "rank 1 called allreduce #1 (count 2000, float, sum) while rank 0 called allreduce #1 (count 1000, float, sum)";
  for (int r = 0; r < kRanks; ++r) {
    const Outcome& o = outcomes[r];
    ASSERT_EQ(o.called, 1) << "rank " << r << " never made its call: " << o.message;
    EXPECT_TRUE(o.enqueued != weftSuccess || o.async != weftSuccess) << "rank " << r << " completed its call";
    EXPECT_EQ(sentenceOf(o.message), sentence + kRemedy) << "rank " << r << ": " << o.message;
  }
}

TEST_P(DeviceCallMismatch, AgreeingRanksSucceed) {
  SharedOutcomes outcomes;
  run(
      [](int, weftComm_t comm, DeviceBuffers& b) {
        for (int i = 0; i < 10; ++i) {
          weftResult_t r = weftAllReduce(b.in, b.out, 1000 + i, weftFloat32, weftSum, comm, b.stream);
          if (r == weftSuccess) r = weftBroadcast(b.in, b.out, 777 + i, weftFloat32, i % kRanks, comm, b.stream);
          if (r == weftSuccess) r = weftGather(b.in, b.out, 555 + i, weftFloat32, (i + 1) % kRanks, comm, b.stream);
          if (r == weftSuccess) r = weftScatter(b.out, b.in, 333 + i, weftFloat32, i % kRanks, comm, b.stream);
          if (r != weftSuccess) return r;
        }
        return weftSuccess;
      },
      outcomes);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(outcomes[r].called, 1) << "rank " << r << ": " << outcomes[r].message;
    EXPECT_EQ(outcomes[r].enqueued, weftSuccess) << outcomes[r].message;
    EXPECT_EQ(outcomes[r].async, weftSuccess) << outcomes[r].message;
  }
}

INSTANTIATE_TEST_SUITE_P(Via, DeviceCallMismatch,
                         ::testing::Combine(::testing::Values("p2p", "shm", "socket"), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<DeviceCallMismatch::ParamType>& i) {
                           return std::get<0>(i.param) + (std::get<1>(i.param) ? "_processes" : "_threads");
                         });

}  // namespace
