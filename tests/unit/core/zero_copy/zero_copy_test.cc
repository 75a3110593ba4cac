// Zero-copy collectives on registered host buffers (src/core/comm_zero_copy.cc, collectives/direct_host.h):
// every collective that has the path, with ranks as threads and as processes, 2 to 4 ranks,
// counts from 1 to past a million (odd ones included), in place and out of place; results exact.
// Communicator::zeroCopyCallsRun() shows which path ran: every rank registered (weftMemAlloc
// memory across processes) goes zero-copy, any rank not registered makes all of them copy.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "api/harness.h"
#include "core/comm.h"
#include "weft/weft.h"

namespace weft_test {
namespace {

using weft::core::Communicator;

// A rank's buffer: weftMemAlloc'd and registered, or plain memory (registered or not).
class Buffer {
 public:
  enum Kind { kAllocatedRegistered, kMallocRegistered, kMallocPlain };
  Buffer(weftComm_t comm, size_t bytes, Kind kind) : comm_(comm) {
    if (kind == kAllocatedRegistered) {
      EXPECT_EQ(weftMemAlloc(&data_, bytes), weftSuccess) << weftGetLastError(nullptr);
      allocated_ = true;
    } else {
      plain_.resize(bytes);
      data_ = plain_.data();
    }
    if (kind != kMallocPlain) {
      EXPECT_EQ(weftCommRegister(comm, data_, bytes, &handle_), weftSuccess);
    }
  }
  ~Buffer() {
    if (handle_ != nullptr) {
      EXPECT_EQ(weftCommDeregister(comm_, handle_), weftSuccess);
    }
    if (allocated_) {
      EXPECT_EQ(weftMemFree(data_), weftSuccess);
    }
  }
  int32_t* ints() { return static_cast<int32_t*>(data_); }
  float* floats() { return static_cast<float*>(data_); }

 private:
  weftComm_t comm_;
  void* data_ = nullptr;
  void* handle_ = nullptr;
  bool allocated_ = false;
  std::vector<char> plain_;
};

int32_t valueOf(int rank, size_t i) { return static_cast<int32_t>(rank * 1000003 + static_cast<int64_t>(i % 100000)); }
// Elements i of [0, elems) where got(i) != want(i), with the first one named.
template <typename Got, typename Want>
void expectAll(const char* what, size_t elems, Got got, Want want) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < elems; ++i) {
    if (got(i) != want(i) && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": first wrong element " << first << " of " << elems;
}

int32_t sumOf(int n, size_t i) {
  int64_t s = 0;
  for (int r = 0; r < n; ++r) s += valueOf(r, i);
  return static_cast<int32_t>(s);
}

// Runs every covered collective on the rank's buffers of `kind` (rank 0's are `rank0Kind`), in
// place and out of place, and checks every element. Returns the number of collectives called.
int runAll(Rank& r, size_t count, Buffer::Kind kind, Buffer::Kind rank0Kind) {
  const int n = r.nranks;
  const Buffer::Kind mine = r.rank == 0 ? rank0Kind : kind;
  const size_t big = count * static_cast<size_t>(n);
  Buffer send(r.comm, big * sizeof(int32_t), mine);
  Buffer recv(r.comm, big * sizeof(int32_t), mine);
  int calls = 0;
  auto fill = [&](int32_t* p, size_t elems) {
    for (size_t i = 0; i < elems; ++i) p[i] = valueOf(r.rank, i);
  };
  for (bool inPlace : {false, true}) {
    SCOPED_TRACE(std::string(inPlace ? "in place" : "out of place") + ", count " + std::to_string(count));
    int32_t* out = recv.ints();
    int32_t* in = inPlace ? out : send.ints();
    fill(in, count);
    EXPECT_EQ(weftAllReduce(in, out, count, weftInt32, weftSum, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
    expectAll("all-reduce", count, [&](size_t i) { return out[i]; }, [&](size_t i) { return sumOf(n, i); });
    // Reduce-scatter: rank r's result is block r of the inputs (in place: inside its input).
    fill(inPlace ? out : in, big);
    int32_t* rsOut = inPlace ? out + count * static_cast<size_t>(r.rank) : out;
    EXPECT_EQ(weftReduceScatter(inPlace ? out : in, rsOut, count, weftInt32, weftSum, r.comm, nullptr), weftSuccess);
    expectAll("reduce-scatter", count, [&](size_t i) { return rsOut[i]; },
              [&](size_t i) { return sumOf(n, i + count * static_cast<size_t>(r.rank)); });
    // All-gather: every rank's count elements, in rank order (in place: already at its block).
    int32_t* agIn = inPlace ? out + count * static_cast<size_t>(r.rank) : in;
    fill(agIn, count);
    EXPECT_EQ(weftAllGather(agIn, out, count, weftInt32, r.comm, nullptr), weftSuccess);
    expectAll("all-gather", big, [&](size_t i) { return out[i]; },
              [&](size_t i) { return valueOf(static_cast<int>(i / count), i % count); });
    // Broadcast from the last rank.
    fill(in, count);
    EXPECT_EQ(weftBroadcast(in, out, count, weftInt32, n - 1, r.comm, nullptr), weftSuccess);
    expectAll("broadcast", count, [&](size_t i) { return out[i]; }, [&](size_t i) { return valueOf(n - 1, i); });
    calls += 4;
  }
  // Average of floats (exact: small integers, divided by n once at the end).
  float* f = send.floats();
  for (size_t i = 0; i < count; ++i) f[i] = static_cast<float>(r.rank * n + static_cast<int>(i % 5) * n);
  EXPECT_EQ(weftAllReduce(f, recv.floats(), count, weftFloat32, weftAvg, r.comm, nullptr), weftSuccess);
  expectAll("avg", count, [&](size_t i) { return recv.floats()[i]; },
            [&](size_t i) { return static_cast<float>((n - 1) * n / 2 + static_cast<int>(i % 5) * n); });
  return calls + 1;
}

// All-reduces only (sum out of place and in place, avg): the collective a rank whose buffers are
// not registered stages (WEFT_ZERO_COPY_STAGE). Returns the number of calls.
int runAllReduces(Rank& r, size_t count, Buffer::Kind kind, Buffer::Kind rank0Kind) {
  const int n = r.nranks;
  Buffer send(r.comm, count * sizeof(int32_t), r.rank == 0 ? rank0Kind : kind);
  Buffer recv(r.comm, count * sizeof(int32_t), r.rank == 0 ? rank0Kind : kind);
  for (bool inPlace : {false, true}) {
    int32_t* out = recv.ints();
    int32_t* in = inPlace ? out : send.ints();
    for (size_t i = 0; i < count; ++i) in[i] = valueOf(r.rank, i);
    EXPECT_EQ(weftAllReduce(in, out, count, weftInt32, weftSum, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
    expectAll(inPlace ? "all-reduce in place" : "all-reduce", count, [&](size_t i) { return out[i]; },
              [&](size_t i) { return sumOf(n, i); });
    // The input stays as it was out of place (a staging rank reads it, never writes it).
    if (!inPlace) expectAll("input", count, [&](size_t i) { return in[i]; }, [&](size_t i) { return valueOf(r.rank, i); });
  }
  float* f = send.floats();
  for (size_t i = 0; i < count; ++i) f[i] = static_cast<float>(r.rank * n + static_cast<int>(i % 5) * n);
  EXPECT_EQ(weftAllReduce(f, recv.floats(), count, weftFloat32, weftAvg, r.comm, nullptr), weftSuccess);
  expectAll("avg", count, [&](size_t i) { return recv.floats()[i]; },
            [&](size_t i) { return static_cast<float>((n - 1) * n / 2 + static_cast<int>(i % 5) * n); });
  return 3;
}

struct Case {
  Mode mode;
  int nranks;
};

class ZeroCopy : public ::testing::TestWithParam<Case> {
 protected:
  // Every size, to test the small ones; no staging but where a test asks for it.
  void SetUp() override {
    setenv("WEFT_ZERO_COPY_MIN_BYTES", "1", 1);
    setenv("WEFT_ZERO_COPY_STAGE", "0", 1);
  }
  void TearDown() override {
    unsetenv("WEFT_ZERO_COPY_MIN_BYTES");
    unsetenv("WEFT_ZERO_COPY_STAGE");
    unsetenv("WEFT_STREAM_STORE_BYTES");
  }

  // Runs `run` (runAll, runAllReduces) for each count and checks how many calls ran zero-copy
  // (all or none).
  void check(Buffer::Kind kind, Buffer::Kind rank0Kind, bool expectZeroCopy,
             int (*run)(Rank&, size_t, Buffer::Kind, Buffer::Kind) = runAll) {
    const Case c = GetParam();
    const uint64_t before = Communicator::zeroCopyCallsRun();
    int perRank = 0;
    for (size_t count : {size_t{1}, size_t{7}, size_t{4099}, size_t{262147}}) {
      runRanks(c.mode, c.nranks, [&](Rank& r) {
        const uint64_t mineBefore = Communicator::zeroCopyCallsRun();
        const int calls = run(r, count, kind, rank0Kind);
        // A process runs only its own rank: its count is exact.
        if (c.mode == Mode::kProcesses) {
          EXPECT_EQ(Communicator::zeroCopyCallsRun() - mineBefore, expectZeroCopy ? uint64_t(calls) : 0u);
        }
        if (r.rank == 0) perRank += calls;
      });
    }
    if (c.mode == Mode::kThreads) {
      const uint64_t expected = expectZeroCopy ? static_cast<uint64_t>(perRank) * c.nranks : 0;
      EXPECT_EQ(Communicator::zeroCopyCallsRun() - before, expected);
    }
  }
};

TEST_P(ZeroCopy, AllocatedAndRegisteredBuffersGoZeroCopy) {
  check(Buffer::kAllocatedRegistered, Buffer::kAllocatedRegistered, true);
}

TEST_P(ZeroCopy, OneRankNotRegisteredMakesEveryRankCopy) {
  check(Buffer::kAllocatedRegistered, Buffer::kMallocPlain, false);
}

// Registered plain memory: threads address it anyway; processes cannot map it, so they copy.
TEST_P(ZeroCopy, RegisteredPlainMemoryIsZeroCopyOnlyBetweenThreads) {
  check(Buffer::kMallocRegistered, Buffer::kMallocRegistered, GetParam().mode == Mode::kThreads);
}

// WEFT_ZERO_COPY_STAGE: a rank whose buffers are plain memory stages its peers' blocks through
// shared memory of its own, so every all-reduce runs zero-copy, whoever registered.
TEST_P(ZeroCopy, AllReduceStagesBuffersThatAreNotRegistered) {
  setenv("WEFT_ZERO_COPY_STAGE", "1", 1);
  check(Buffer::kAllocatedRegistered, Buffer::kMallocPlain, true, runAllReduces);
  check(Buffer::kMallocPlain, Buffer::kMallocPlain, true, runAllReduces);
  check(Buffer::kMallocRegistered, Buffer::kAllocatedRegistered, true, runAllReduces);
}

// WEFT_STREAM_STORE_BYTES down to 64 bytes: every all-reduce block of 64 bytes and up, out of
// place, writes every rank's output with streaming stores (direct_host.h); results stay exact
// (sum, avg), in place keeps cached stores.
TEST_P(ZeroCopy, AllReduceStreamsLargeBlocksIntoEveryOutput) {
  setenv("WEFT_STREAM_STORE_BYTES", "64", 1);
  check(Buffer::kAllocatedRegistered, Buffer::kAllocatedRegistered, true, runAllReduces);
  unsetenv("WEFT_STREAM_STORE_BYTES");
}

INSTANTIATE_TEST_SUITE_P(Ranks, ZeroCopy,
                         ::testing::Values(Case{Mode::kThreads, 2}, Case{Mode::kThreads, 3}, Case{Mode::kThreads, 4},
                                           Case{Mode::kProcesses, 2}, Case{Mode::kProcesses, 3},
                                           Case{Mode::kProcesses, 4}),
                         [](const ::testing::TestParamInfo<Case>& p) {
                           return std::string(modeName(p.param.mode)) + std::to_string(p.param.nranks);
                         });

// Below WEFT_ZERO_COPY_MIN_BYTES (its default, 256 KiB) the FIFOs carry the call, registered or not.
TEST(ZeroCopySize, SmallCallsCopy) {
  const uint64_t before = Communicator::zeroCopyCallsRun();
  runRanks(Mode::kThreads, 2, [](Rank& r) {
    const size_t count = 1000;
    Buffer b(r.comm, count * sizeof(int32_t), Buffer::kAllocatedRegistered);
    for (size_t i = 0; i < count; ++i) b.ints()[i] = valueOf(r.rank, i);
    ASSERT_EQ(weftAllReduce(b.ints(), b.ints(), count, weftInt32, weftSum, r.comm, nullptr), weftSuccess);
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(b.ints()[i], sumOf(2, i));
  });
  EXPECT_EQ(Communicator::zeroCopyCallsRun(), before);
}

// After a handshake finds a rank not registered, the next candidates copy without asking (1, 2,
// 4 .. 64 of them while it keeps failing); registered buffers go zero-copy again after that gap.
TEST(ZeroCopySize, CopiedCallsSkipTheHandshakeForAWhile) {
  setenv("WEFT_ZERO_COPY_MIN_BYTES", "1", 1);
  setenv("WEFT_ZERO_COPY_STAGE", "0", 1);
  const uint64_t before = Communicator::zeroCopyCallsRun();
  runRanks(Mode::kThreads, 2, [](Rank& r) {
    const size_t count = 1000;
    Buffer reg(r.comm, count * sizeof(int32_t), Buffer::kAllocatedRegistered);
    Buffer plain(r.comm, count * sizeof(int32_t), Buffer::kMallocPlain);
    // plain: handshake fails, skip 1 | reg: skipped | reg: zero-copy | plain: fails, skip 1 |
    // plain: skipped | reg: zero-copy | plain: fails, skip 1 | plain: skipped | plain: fails, skip 2
    for (Buffer* b : {&plain, &reg, &reg, &plain, &plain, &reg, &plain, &plain, &plain}) {
      for (size_t i = 0; i < count; ++i) b->ints()[i] = valueOf(r.rank, i);
      ASSERT_EQ(weftAllReduce(b->ints(), b->ints(), count, weftInt32, weftSum, r.comm, nullptr), weftSuccess);
      expectAll("all-reduce", count, [&](size_t i) { return b->ints()[i]; }, [&](size_t i) { return sumOf(2, i); });
    }
  });
  EXPECT_EQ(Communicator::zeroCopyCallsRun() - before, 4u);  // 2 calls x 2 ranks
  unsetenv("WEFT_ZERO_COPY_MIN_BYTES");
  unsetenv("WEFT_ZERO_COPY_STAGE");
}

// Memory a process allocated before it forked its ranks: each child offers the parent's segment,
// which its peer maps by the parent's name; twice, with new communicators (mappings cached).
TEST(ZeroCopySize, MemoryAllocatedBeforeForkServesTheChildren) {
  setenv("WEFT_ZERO_COPY_MIN_BYTES", "1", 1);
  const size_t count = 262147;
  void* bufs[2] = {nullptr, nullptr};
  for (void*& b : bufs) ASSERT_EQ(weftMemAlloc(&b, count * sizeof(int32_t)), weftSuccess);
  for (int round = 0; round < 2; ++round) {
    runRanks(Mode::kProcesses, 2, [&](Rank& r) {
      auto* p = static_cast<int32_t*>(bufs[r.rank]);
      void* handle = nullptr;
      ASSERT_EQ(weftCommRegister(r.comm, p, count * sizeof(int32_t), &handle), weftSuccess);
      for (size_t i = 0; i < count; ++i) p[i] = valueOf(r.rank, i);
      const uint64_t before = Communicator::zeroCopyCallsRun();
      ASSERT_EQ(weftAllReduce(p, p, count, weftInt32, weftSum, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
      EXPECT_EQ(Communicator::zeroCopyCallsRun() - before, 1u);
      expectAll("all-reduce", count, [&](size_t i) { return p[i]; }, [&](size_t i) { return sumOf(2, i); });
    });
  }
  // The buffers are shared with the children: the parent sees their result.
  expectAll("parent's view", count, [&](size_t i) { return static_cast<int32_t*>(bufs[0])[i]; },
            [&](size_t i) { return sumOf(2, i); });
  for (void* b : bufs) EXPECT_EQ(weftMemFree(b), weftSuccess);
  unsetenv("WEFT_ZERO_COPY_MIN_BYTES");
}

// Ranks that disagree on a zero-copy call fail it, all of them, and say so (the handshake is stamped).
TEST(ZeroCopySize, DisagreeingCallsFailOnEveryRank) {
  setenv("WEFT_ZERO_COPY_MIN_BYTES", "1", 1);
  runRanks(Mode::kProcesses, 2, [](Rank& r) {
    const size_t count = 4096;
    Buffer b(r.comm, 2 * count * sizeof(int32_t), Buffer::kAllocatedRegistered);
    const size_t mine = r.rank == 0 ? count : count + 1;
    weftResult_t res = weftAllReduce(b.ints(), b.ints(), mine, weftInt32, weftSum, r.comm, nullptr);
    EXPECT_NE(res, weftSuccess) << "rank " << r.rank << " returned success for a call its peer disagreed on";
    EXPECT_NE(std::string(weftGetLastError(r.comm)).find("allreduce"), std::string::npos) << weftGetLastError(r.comm);
  }, 120);
  unsetenv("WEFT_ZERO_COPY_MIN_BYTES");
}

}  // namespace
}  // namespace weft_test
