// Ranks that make different calls (issue 13, item 1): whatever differs (count, datatype, op,
// collective, root, a skipped call), every rank fails the call at once with one sentence naming
// both calls, and no rank returns success. Over shared memory and over sockets, with ranks as
// threads and as forked processes.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "fixtures/call_check_bounds.h"
#include "harness.h"

namespace weft_test {
namespace {

using weft_test::kFailWithinSeconds;

constexpr int kRanks = 2;
constexpr size_t kMessageBytes = 1024;

// What each rank's failing call returned, in memory that forked ranks share with the test.
struct Outcome {
  int called = 0;  // 1 once the rank made its call
  int result = -1;
  double seconds = 0;
  char message[kMessageBytes] = {0};
};

class SharedOutcomes {
 public:
  explicit SharedOutcomes(int n) : n_(n) {
    void* p = mmap(nullptr, sizeof(Outcome) * n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) std::abort();
    outcomes_ = new (p) Outcome[n];
  }
  ~SharedOutcomes() { munmap(outcomes_, sizeof(Outcome) * n_); }
  Outcome& operator[](int r) { return outcomes_[r]; }

 private:
  int n_;
  Outcome* outcomes_;
};

// Runs `call` on every rank, timing it and keeping its result and the communicator's message.
void record(Rank& r, Outcome* out, const std::function<weftResult_t()>& call) {
  auto start = std::chrono::steady_clock::now();
  weftResult_t result = call();
  out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out->result = result;
  out->called = 1;
  if (result != weftSuccess) std::snprintf(out->message, sizeof(out->message), "%s", weftGetLastError(r.comm));
}

// The sentence a message carries: from "rank N called" to the end.
std::string sentenceOf(const std::string& message) {
  size_t at = message.find(" called ");
  if (at == std::string::npos) return "";
  size_t start = message.rfind("rank ", at);
  return start == std::string::npos ? "" : message.substr(start);
}

// `sentence` with "while rank 0" naming `rank` instead.
std::string withMajorityRank(std::string sentence, int rank) {
  const std::string named = " while rank 0 ";
  size_t at = sentence.find(named);
  if (at != std::string::npos) sentence.replace(at, named.size(), " while rank " + std::to_string(rank) + " ");
  return sentence;
}

// Parameters: how ranks run, and whether they talk over sockets instead of shared memory.
class CallMismatch : public ::testing::TestWithParam<std::tuple<Mode, bool>> {
 protected:
  void SetUp() override {
    if (!overSockets()) return;
    setenv("WEFT_SHM_DISABLE", "1", 1);
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  }
  void TearDown() override {
    unsetenv("WEFT_SHM_DISABLE");
    unsetenv("WEFT_SOCKET_IFNAME");
  }
  Mode mode() const { return std::get<0>(GetParam()); }
  bool overSockets() const { return std::get<1>(GetParam()); }
  weft_test::SlowHeartbeat slowHeartbeat_;

  // Runs body on nRanks ranks and checks: no rank succeeded, each failed with
  // weftInvalidUsage at once (kFailWithinSeconds), and all carry `sentence` (the whole message
  // ends with the remedy). `sentence` names rank 0 for the majority's call; any rank in `majority` may be named
  // instead: the sentence is built from the calls the ranks were in when they failed, and a rank
  // still finishing an earlier call (slow to be scheduled) is failed there by its peers' report,
  // so the majority is named by its lowest rank that had reached the disagreeing call.
  void expectEveryRankFails(const std::function<weftResult_t(Rank&)>& body, const std::string& sentence,
                            int nRanks = kRanks, const std::vector<int>& majority = {0}) {
    const std::string remedy = ". Every rank must make the same calls in the same order with the same count, type, "
                               "op and root";
    std::vector<std::string> accepted;
    for (int m : majority) accepted.push_back(withMajorityRank(sentence, m) + remedy);
    SharedOutcomes outcomes(nRanks);
    runRanks(mode(), nRanks, [&](Rank& r) { record(r, &outcomes[r.rank], [&] { return body(r); }); }, 120);
    for (int r = 0; r < nRanks; ++r) {
      const Outcome& o = outcomes[r];
      ASSERT_EQ(o.called, 1) << "rank " << r << " never returned";
      EXPECT_NE(o.result, weftSuccess) << "rank " << r << " returned success for a call its peer disagreed on";
      EXPECT_EQ(o.result, weftInvalidUsage) << "rank " << r << ": " << o.message;
      // See kFailWithinSeconds: a failure that waited for the heartbeat or a time-out fails this.
      EXPECT_LT(o.seconds, kFailWithinSeconds) << "rank " << r << " took " << o.seconds << " s to fail";
      EXPECT_NE(std::find(accepted.begin(), accepted.end(), sentenceOf(o.message)), accepted.end())
          << "rank " << r << ": " << o.message << "\nexpected: " << accepted[0];
    }
  }
};

std::vector<char> bytes(size_t n) { return std::vector<char>(n + 1, 1); }

TEST_P(CallMismatch, CountSmall) {
  expectEveryRankFails(
      [](Rank& r) {
        size_t count = r.rank == 0 ? 1000 : 2000;
        auto in = bytes(count * 4), out = bytes(count * 4);
        return weftAllReduce(in.data(), out.data(), count, weftFloat32, weftSum, r.comm, nullptr);
      },
      "rank 1 called allreduce #1 (count 2000, float, sum) while rank 0 called allreduce #1 (count 1000, float, sum)");
}

TEST_P(CallMismatch, CountLarge) {
  // 8 MiB against 16 MiB: the smaller rank used to return success with wrong data.
  expectEveryRankFails(
      [](Rank& r) {
        size_t count = (r.rank == 0 ? 8u : 16u) << 18;
        auto in = bytes(count * 4), out = bytes(count * 4);
        return weftAllReduce(in.data(), out.data(), count, weftFloat32, weftSum, r.comm, nullptr);
      },
      "rank 1 called allreduce #1 (count 4194304, float, sum) while rank 0 called allreduce #1 (count 2097152, "
      "float, sum)");
}

TEST_P(CallMismatch, Datatype) {
  expectEveryRankFails(
      [](Rank& r) {
        const size_t count = 1u << 20;
        weftDataType_t type = r.rank == 0 ? weftFloat32 : weftFloat64;
        auto in = bytes(count * 8), out = bytes(count * 8);
        return weftAllReduce(in.data(), out.data(), count, type, weftSum, r.comm, nullptr);
      },
      "rank 1 called allreduce #1 (count 1048576, double, sum) while rank 0 called allreduce #1 (count 1048576, "
      "float, sum)");
}

TEST_P(CallMismatch, Op) {
  expectEveryRankFails(
      [](Rank& r) {
        const size_t count = 1000;
        auto in = bytes(count * 4), out = bytes(count * 4);
        return weftAllReduce(in.data(), out.data(), count, weftFloat32, r.rank == 0 ? weftSum : weftMax, r.comm,
                             nullptr);
      },
      "rank 1 called allreduce #1 (count 1000, float, max) while rank 0 called allreduce #1 (count 1000, float, sum)");
}

TEST_P(CallMismatch, Collective) {
  // The same bytes on the wire: an all-reduce of 2n elements moves n per rank over two ranks,
  // as an all-gather of n does.
  expectEveryRankFails(
      [](Rank& r) {
        const size_t n = 4096;
        auto in = bytes(2 * n * 4), out = bytes(2 * n * 4);
        if (r.rank == 0) return weftAllReduce(in.data(), out.data(), 2 * n, weftFloat32, weftSum, r.comm, nullptr);
        return weftAllGather(in.data(), out.data(), n, weftFloat32, r.comm, nullptr);
      },
      "rank 1 called allgather #1 (count 4096, float) while rank 0 called allreduce #1 (count 8192, float, sum)");
}

TEST_P(CallMismatch, Root) {
  // Both ranks think they are the root: each only sends.
  expectEveryRankFails(
      [](Rank& r) {
        const size_t count = 5000;
        auto buf = bytes(count * 4);
        return weftBroadcast(buf.data(), buf.data(), count, weftFloat32, r.rank, r.comm, nullptr);
      },
      "rank 1 called broadcast #1 (count 5000, float, root 1) while rank 0 called broadcast #1 (count 5000, float, "
      "root 0)");
}

// Each of two ranks names the other the root of a broadcast: both only receive, and no data
// message shows the disagreement.
TEST_P(CallMismatch, RootBroadcastBothReceive) {
  expectEveryRankFails(
      [](Rank& r) {
        const size_t count = 300;
        auto buf = bytes(count * 4);
        return weftBroadcast(buf.data(), buf.data(), count, weftFloat32, 1 - r.rank, r.comm, nullptr);
      },
      "rank 1 called broadcast #1 (count 300, float, root 0) while rank 0 called broadcast #1 (count 300, float, "
      "root 1)");
}

// A rooted collective of `count` floats per block with `root`, on buffers large enough for any
// of them on up to four ranks.
weftResult_t rootedCall(const std::string& kind, Rank& r, size_t count, int root) {
  auto in = bytes(count * 4 * 4), out = bytes(count * 4 * 4);
  if (kind == "broadcast") return weftBroadcast(in.data(), out.data(), count, weftFloat32, root, r.comm, nullptr);
  if (kind == "reduce") return weftReduce(in.data(), out.data(), count, weftFloat32, weftSum, root, r.comm, nullptr);
  if (kind == "gather") return weftGather(in.data(), out.data(), count, weftFloat32, root, r.comm, nullptr);
  return weftScatter(in.data(), out.data(), count, weftFloat32, root, r.comm, nullptr);
}

// "broadcast #3 (count 64, float, root 1)"
std::string rootedText(const std::string& kind, int seq, size_t count, int root) {
  return kind + " #" + std::to_string(seq) + " (count " + std::to_string(count) + ", float" +
         (kind == "reduce" ? ", sum" : "") + ", root " + std::to_string(root) + ")";
}

// Two ranks after agreeing calls of both roots (their FIFOs exist, so the calls run without the
// token lane and a stalled rank probes its peer, Communicator::runCachedPlan): both ranks naming
// the other the root, or both naming themselves, fail every rank, for every rooted collective.
TEST_P(CallMismatch, RootsOfTwoRanksAfterAgreeingCalls) {
  for (const std::string kind : {"broadcast", "reduce", "gather", "scatter"}) {
    for (bool bothSelf : {false, true}) {
      SCOPED_TRACE(kind + (bothSelf ? ": each names itself the root" : ": each names the other the root"));
      expectEveryRankFails(
          [&](Rank& r) {
            for (int root = 0; root < 2; ++root) {
              weftResult_t agreed = rootedCall(kind, r, 64, root);
              if (agreed != weftSuccess) return agreed;
            }
            return rootedCall(kind, r, 64, bothSelf ? r.rank : 1 - r.rank);
          },
          "rank 1 called " + rootedText(kind, 3, 64, bothSelf ? 1 : 0) + " while rank 0 called " +
              rootedText(kind, 3, 64, bothSelf ? 0 : 1));
    }
  }
}

// Two ranks, counts that differ after agreeing calls of both counts (the stamps differ; the
// receiver refuses the message and the sender, waiting for it to be taken, fails with it); and a
// count only one rank called before: that rank runs its data lanes, the other runs the token lane
// alone (its first call of that shape), and the one finds the other's token.
TEST_P(CallMismatch, CountsOfTwoRanksAfterAgreeingCalls) {
  for (const std::string kind : {"broadcast", "reduce", "gather", "scatter"}) {
    for (int root = 0; root < 2; ++root) {
      SCOPED_TRACE(kind + ", root " + std::to_string(root));
      expectEveryRankFails(
          [&](Rank& r) {
            for (size_t count : {size_t{64}, size_t{65}}) {
              weftResult_t agreed = rootedCall(kind, r, count, root);
              if (agreed != weftSuccess) return agreed;
            }
            return rootedCall(kind, r, r.rank == 1 ? 65 : 64, root);
          },
          "rank 1 called " + rootedText(kind, 3, 65, root) + " while rank 0 called " + rootedText(kind, 3, 64, root));
      expectEveryRankFails(
          [&](Rank& r) {
            weftResult_t agreed = rootedCall(kind, r, 64, root);
            if (agreed != weftSuccess) return agreed;
            return rootedCall(kind, r, r.rank == 1 ? 66 : 64, root);
          },
          "rank 1 called " + rootedText(kind, 2, 66, root) + " while rank 0 called " + rootedText(kind, 2, 64, root));
    }
  }
}

// Two ranks, count 0 against a count after agreeing calls of both: the rank with nothing to move
// runs the token lane alone (probes would leave it without evidence), and its peer finds the token.
TEST_P(CallMismatch, CountZeroOfTwoRanksAfterAgreeingCalls) {
  for (const std::string kind : {"broadcast", "reduce", "gather", "scatter"}) {
    SCOPED_TRACE(kind);
    expectEveryRankFails(
        [&](Rank& r) {
          for (size_t count : {size_t{0}, size_t{5}}) {
            weftResult_t agreed = rootedCall(kind, r, count, 0);
            if (agreed != weftSuccess) return agreed;
          }
          return rootedCall(kind, r, r.rank == 1 ? 5 : 0, 0);
        },
        "rank 1 called " + rootedText(kind, 3, 5, 0) + " while rank 0 called " + rootedText(kind, 3, 0, 0));
  }
}

// A non-rooted collective of `count` floats (per block where the collective has blocks), on
// buffers large enough for any of them on up to four ranks.
weftResult_t unrootedCall(const std::string& kind, Rank& r, size_t count) {
  auto in = bytes(count * 4 * 4), out = bytes(count * 4 * 4);
  if (kind == "allreduce") return weftAllReduce(in.data(), out.data(), count, weftFloat32, weftSum, r.comm, nullptr);
  if (kind == "allgather") return weftAllGather(in.data(), out.data(), count, weftFloat32, r.comm, nullptr);
  if (kind == "reducescatter") {
    return weftReduceScatter(in.data(), out.data(), count, weftFloat32, weftSum, r.comm, nullptr);
  }
  return weftAllToAll(in.data(), out.data(), count, weftFloat32, r.comm, nullptr);
}

// "allreduce #3 (count 64, float, sum)"
std::string unrootedText(const std::string& kind, int seq, size_t count) {
  const bool reduces = kind == "allreduce" || kind == "reducescatter";
  return kind + " #" + std::to_string(seq) + " (count " + std::to_string(count) + ", float" + (reduces ? ", sum" : "") +
         ")";
}

const char* const kUnrootedKinds[] = {"allreduce", "allgather", "reducescatter", "alltoall"};

// A non-rooted collective of count 0 moves nothing: it used to return success at once on its
// rank whatever the peers called. It runs the call-check token lane alone now, so both ranks of
// count 0 against 1000 fail naming both calls: on the first call of the shape (the peer runs the
// tokens before connecting its FIFOs), and after agreeing calls of both counts (the peer, waiting
// for data, finds the token where it does not read). Either rank may be the one with count 0.
TEST_P(CallMismatch, CountZeroAgainstCountUnrooted) {
  for (const std::string kind : kUnrootedKinds) {
    for (int zeroRank = 0; zeroRank < 2; ++zeroRank) {
      for (bool agreedBefore : {false, true}) {
        SCOPED_TRACE(kind + ": rank " + std::to_string(zeroRank) + " calls count 0" +
                     (agreedBefore ? ", after agreeing calls of counts 0 and 1000" : ""));
        const int seq = agreedBefore ? 3 : 1;
        expectEveryRankFails(
            [&](Rank& r) {
              if (agreedBefore) {
                for (size_t count : {size_t{0}, size_t{1000}}) {
                  weftResult_t agreed = unrootedCall(kind, r, count);
                  if (agreed != weftSuccess) return agreed;
                }
              }
              return unrootedCall(kind, r, r.rank == zeroRank ? 0 : 1000);
            },
            "rank 1 called " + unrootedText(kind, seq, zeroRank == 1 ? 0 : 1000) + " while rank 0 called " +
                unrootedText(kind, seq, zeroRank == 0 ? 0 : 1000));
      }
    }
  }
}

// Count 0 on both ranks, but different collectives (or the same collective with another type):
// the stamps on the token lane differ.
TEST_P(CallMismatch, CountZeroOfAnotherCollective) {
  expectEveryRankFails(
      [](Rank& r) { return unrootedCall(r.rank == 0 ? "allreduce" : "allgather", r, 0); },
      "rank 1 called allgather #1 (count 0, float) while rank 0 called allreduce #1 (count 0, float, sum)");
  expectEveryRankFails(
      [](Rank& r) {
        float x = 0;
        return weftAllReduce(&x, &x, 0, r.rank == 0 ? weftFloat32 : weftFloat64, weftSum, r.comm, nullptr);
      },
      "rank 1 called allreduce #1 (count 0, double, sum) while rank 0 called allreduce #1 (count 0, float, sum)");
  // Against a rooted collective of count 0 (which runs the token lane alone too).
  expectEveryRankFails(
      [](Rank& r) {
        if (r.rank == 1) return rootedCall("broadcast", r, 0, 0);
        return unrootedCall("alltoall", r, 0);
      },
      "rank 1 called broadcast #1 (count 0, float, root 0) while rank 0 called alltoall #1 (count 0, float)");
}

// Four ranks, one of which calls count 0 (first call, and after agreeing calls of both counts).
TEST_P(CallMismatch, CountZeroAmongFour) {
  for (const std::string kind : kUnrootedKinds) {
    for (bool agreedBefore : {false, true}) {
      SCOPED_TRACE(kind + (agreedBefore ? ", after agreeing calls" : ""));
      const int seq = agreedBefore ? 3 : 1;
      expectEveryRankFails(
          [&](Rank& r) {
            if (agreedBefore) {
              for (size_t count : {size_t{1000}, size_t{0}}) {
                weftResult_t agreed = unrootedCall(kind, r, count);
                if (agreed != weftSuccess) return agreed;
              }
            }
            return unrootedCall(kind, r, r.rank == 2 ? 0 : 1000);
          },
          "rank 2 called " + unrootedText(kind, seq, 0) + " while rank 0 called " + unrootedText(kind, seq, 1000), 4,
          {0, 1, 3});
    }
  }
}

// A count-0 call inside a group against a call of count 1000 in the peer's group: the group fails
// on both ranks, naming both calls.
TEST_P(CallMismatch, CountZeroInsideAGroup) {
  expectEveryRankFails(
      [](Rank& r) {
        auto in = bytes(1000 * 4), out = bytes(1000 * 4);
        if (weftGroupStart() != weftSuccess) return weftInternalError;
        weftResult_t queued = weftAllReduce(in.data(), out.data(), r.rank == 1 ? 0 : 1000, weftFloat32, weftSum,
                                            r.comm, nullptr);
        if (queued == weftSuccess) {
          queued = weftAllGather(in.data(), out.data(), 8, weftFloat32, r.comm, nullptr);
        }
        weftResult_t ended = weftGroupEnd();
        return queued != weftSuccess ? queued : ended;
      },
      "rank 1 called allreduce #1 (count 0, float, sum) while rank 0 called allreduce #1 (count 1000, float, sum)");
}

// Agreeing calls of count 0, of every kind, between calls that move data, succeed on every rank
// (two and four ranks), in a group too, and the data calls around them are right.
TEST_P(CallMismatch, AgreeingCountZeroCallsSucceed) {
  for (int n : {2, 4}) {
    runRanks(
        mode(), n,
        [](Rank& r) {
          for (int round = 0; round < 3; ++round) {
            for (const std::string kind : kUnrootedKinds) {
              ASSERT_EQ(unrootedCall(kind, r, 0), weftSuccess) << kind << ": " << weftGetLastError(r.comm);
              ASSERT_EQ(rootedCall("reduce", r, 0, round % r.nranks), weftSuccess) << weftGetLastError(r.comm);
              std::vector<float> in(64, static_cast<float>(r.rank + 1)), out(64, -1);
              ASSERT_EQ(weftAllReduce(in.data(), out.data(), 64, weftFloat32, weftSum, r.comm, nullptr), weftSuccess)
                  << weftGetLastError(r.comm);
              const float sum = static_cast<float>(r.nranks * (r.nranks + 1) / 2);
              EXPECT_EQ(std::count(out.begin(), out.end(), sum), 64);
            }
            ASSERT_EQ(weftGroupStart(), weftSuccess);
            for (const std::string kind : kUnrootedKinds) ASSERT_EQ(unrootedCall(kind, r, 0), weftSuccess);
            ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(r.comm);
          }
        },
        120);
  }
}

// Three ranks (the token lane beside the data once the FIFOs exist): rank 2 names another root
// after agreeing calls of every root, for every rooted collective.
TEST_P(CallMismatch, RootAmongThreeAfterAgreeingCalls) {
  for (const std::string kind : {"broadcast", "reduce", "gather", "scatter"}) {
    SCOPED_TRACE(kind);
    expectEveryRankFails(
        [&](Rank& r) {
          for (int root = 0; root < 3; ++root) {
            weftResult_t agreed = rootedCall(kind, r, 32, root);
            if (agreed != weftSuccess) return agreed;
          }
          return rootedCall(kind, r, 32, r.rank == 2 ? 1 : 0);
        },
        "rank 2 called " + rootedText(kind, 4, 32, 1) + " while rank 0 called " + rootedText(kind, 4, 32, 0), 3,
        {0, 1});
  }
}

// WEFT_CHECK_SENDS=1 for the scope: sends wait for their receivers.
struct CheckSends {
  CheckSends() { setenv("WEFT_CHECK_SENDS", "1", 1); }
  ~CheckSends() { unsetenv("WEFT_CHECK_SENDS"); }
};

// A send of another size than its receive: the receiver refuses the message and fails at once
// naming its send/recv group. With WEFT_CHECK_SENDS=1 the sender's group completes only once its
// receiver took its messages, so it fails too instead of returning success. That is off by
// default: on the 2-vCPU VM, loaded by other builds, the wait made 8 B send/recv 1.5-1.7 times
// slower (perf/RESULTS.md, "Call fingerprint cost"), and the sender then returns success, as it
// did for every setting before 2026-11-24. (A sender stops waiting once a message waits for it,
// since its receiver may be sending to it outside a group: SendsThenReceivesOutsideAGroup.)
TEST_P(CallMismatch, SendOfAnotherSizeFailsBothRanks) {
  CheckSends checkSends;
  SharedOutcomes outcomes(kRanks);
  runRanks(
      mode(), kRanks,
      [&](Rank& r) {
        record(r, &outcomes[r.rank], [&] {
          auto buf = bytes(2000 * 4);
          if (r.rank == 0) return weftSend(buf.data(), 1000, weftFloat32, 1, r.comm, nullptr);
          return weftRecv(buf.data(), 2000, weftFloat32, 0, r.comm, nullptr);
        });
      },
      120);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(outcomes[r].called, 1) << "rank " << r << " never returned";
    EXPECT_EQ(outcomes[r].result, weftInvalidUsage) << "rank " << r << ": " << outcomes[r].message;
    EXPECT_LT(outcomes[r].seconds, kFailWithinSeconds) << "rank " << r << ": " << outcomes[r].message;
  }
  EXPECT_NE(std::string(outcomes[1].message).find("rank 1 called a send/recv group #1 (1 operations) while rank 0 "),
            std::string::npos)
      << outcomes[1].message;
  // The sender names the receiver when the receiver's report reached it through their FIFO; when
  // it came first through the liveness record, which says only that the calls disagreed, the
  // sentence names the sender's own group.
  EXPECT_NE(std::string(outcomes[0].message).find("rank 0 called a send/recv group #1 (1 operations)"),
            std::string::npos)
      << outcomes[0].message;
}

// Ranks that each send to the other and then receive, outside a group (and three ranks that do so
// around a ring): a send that waited for its receiver would wait for ever here; it stops waiting
// once a message waits for it. Every call succeeds. (Messages the FIFO holds whole: a larger one
// waits for free slots while it is sent, and then these ranks wait for ever, with or without the
// checks, as NCCL's would: such exchanges belong in a group. So does the first exchange around a
// ring of three, whose sending ends wait in connect for receiving ends the next rank makes only
// in its receive: a group exchange connects the FIFOs first.)
TEST_P(CallMismatch, SendsThenReceivesOutsideAGroup) {
  CheckSends checkSends;
  for (int n : {2, 3}) {
    runRanks(
        mode(), n,
        [n](Rank& r) {
          const int next = (r.rank + 1) % n, prev = (r.rank + n - 1) % n;
          int32_t a = r.rank, b = -1;
          ASSERT_EQ(weftGroupStart(), weftSuccess);
          ASSERT_EQ(weftSend(&a, 1, weftInt32, next, r.comm, nullptr), weftSuccess);
          ASSERT_EQ(weftRecv(&b, 1, weftInt32, prev, r.comm, nullptr), weftSuccess);
          ASSERT_EQ(weftGroupEnd(), weftSuccess) << weftGetLastError(r.comm);
          for (size_t count : {size_t{10}, size_t{50000}}) {
            std::vector<int32_t> out(count, r.rank), in(count, -1);
            ASSERT_EQ(weftSend(out.data(), count, weftInt32, next, r.comm, nullptr), weftSuccess)
                << weftGetLastError(r.comm);
            ASSERT_EQ(weftRecv(in.data(), count, weftInt32, prev, r.comm, nullptr), weftSuccess)
                << weftGetLastError(r.comm);
            EXPECT_EQ(std::count(in.begin(), in.end(), prev), static_cast<long>(count));
          }
        },
        120);
  }
}

TEST_P(CallMismatch, SkippedCall) {
  // Rank 1 skips the first of two calls: its first call meets rank 0's first.
  expectEveryRankFails(
      [](Rank& r) {
        auto in = bytes(3000 * 4), out = bytes(3000 * 4);
        if (r.rank == 0) {
          weftResult_t first = weftAllReduce(in.data(), out.data(), 1000, weftFloat32, weftSum, r.comm, nullptr);
          if (first != weftSuccess) return first;
        }
        return weftAllReduce(in.data(), out.data(), 3000, weftFloat32, weftSum, r.comm, nullptr);
      },
      "rank 1 called allreduce #1 (count 3000, float, sum) while rank 0 called allreduce #1 (count 1000, float, sum)");
}

// Three ranks, one of which differs: the sentence names it against the majority, on every rank.
TEST(CallMismatchMajority, TheOddRankIsNamedOnEveryRank) {
  const weft_test::SlowHeartbeat slowHeartbeat;
  SharedOutcomes outcomes(3);
  runRanks(
      Mode::kThreads, 3,
      [&](Rank& r) {
        record(r, &outcomes[r.rank], [&] {
          const size_t count = 777;
          auto in = bytes(count * 4), out = bytes(count * 4);
          return weftAllReduce(in.data(), out.data(), count, weftFloat32, r.rank == 2 ? weftMin : weftSum, r.comm,
                               nullptr);
        });
      },
      120);
  for (int r = 0; r < 3; ++r) {
    ASSERT_EQ(outcomes[r].called, 1) << "rank " << r << " never returned";
    EXPECT_EQ(outcomes[r].result, weftInvalidUsage) << "rank " << r << ": " << outcomes[r].message;
    EXPECT_LT(outcomes[r].seconds, kFailWithinSeconds) << "rank " << r << " took " << outcomes[r].seconds << " s to fail";
    EXPECT_EQ(sentenceOf(outcomes[r].message),
              "rank 2 called allreduce #1 (count 777, float, min) while rank 0 called allreduce #1 (count 777, float, "
              "sum). Every rank must make the same calls in the same order with the same count, type, op and root")
        << "rank " << r;
  }
}

// Four ranks, one of which names itself the root: in a rooted schedule a rank may finish without
// hearing from every other, so ranks whose neighbours agreed with them used to return success and
// the odd "root" waited in connect until the time-out. The call-check token lane (schedule.h,
// callTokenLane) fails every rank. Before it (2026-11-24): ranks 0 and 2 succeeded, rank 3 waited.
TEST_P(CallMismatch, RootAmongFourBroadcast) {
  expectEveryRankFails(
      [](Rank& r) {
        const size_t count = 1000;
        auto in = bytes(count * 4), out = bytes(count * 4);
        return weftBroadcast(in.data(), out.data(), count, weftFloat32, r.rank == 3 ? 3 : 0, r.comm, nullptr);
      },
      "rank 3 called broadcast #1 (count 1000, float, root 3) while rank 0 called broadcast #1 (count 1000, float, "
      "root 0)",
      4, {0, 1, 2});
}

TEST_P(CallMismatch, RootAmongFourReduce) {
  expectEveryRankFails(
      [](Rank& r) {
        const size_t count = 1000;
        auto in = bytes(count * 4), out = bytes(count * 4);
        return weftReduce(in.data(), out.data(), count, weftFloat32, weftSum, r.rank == 3 ? 3 : 0, r.comm, nullptr);
      },
      "rank 3 called reduce #1 (count 1000, float, sum, root 3) while rank 0 called reduce #1 (count 1000, float, "
      "sum, root 0)",
      4, {0, 1, 2});
}

// Gather and scatter with roots 0/0/0/3: they move data as direct sends and receives, but are
// stamped and token-checked as collectives (comm_rooted.cc). Before that (2026-11-24), as
// send/recv groups with per-pair stamps, ranks 1 and 2 returned success and ranks 0 and 3 waited
// until WEFT_TIMEOUT_S.
TEST_P(CallMismatch, RootAmongFourGather) {
  expectEveryRankFails(
      [](Rank& r) {
        const size_t count = 300;
        auto in = bytes(count * 4), out = bytes(count * 4 * 4);
        return weftGather(in.data(), out.data(), count, weftFloat32, r.rank == 3 ? 3 : 0, r.comm, nullptr);
      },
      "rank 3 called gather #1 (count 300, float, root 3) while rank 0 called gather #1 (count 300, float, root 0)",
      4, {0, 1, 2});
}

TEST_P(CallMismatch, RootAmongFourScatter) {
  expectEveryRankFails(
      [](Rank& r) {
        const size_t count = 300;
        auto in = bytes(count * 4 * 4), out = bytes(count * 4);
        return weftScatter(in.data(), out.data(), count, weftFloat32, r.rank == 3 ? 3 : 0, r.comm, nullptr);
      },
      "rank 3 called scatter #1 (count 300, float, root 3) while rank 0 called scatter #1 (count 300, float, root 0)",
      4, {0, 1, 2});
}

// Both ranks name themselves the root of a gather (each only receives), then of a scatter after
// agreeing calls of every root (the FIFOs exist, the tokens run beside the data).
TEST_P(CallMismatch, RootGatherBothReceive) {
  expectEveryRankFails(
      [](Rank& r) {
        const size_t count = 300;
        auto in = bytes(count * 4), out = bytes(count * 4 * 2);
        return weftGather(in.data(), out.data(), count, weftFloat32, r.rank, r.comm, nullptr);
      },
      "rank 1 called gather #1 (count 300, float, root 1) while rank 0 called gather #1 (count 300, float, root 0)");
}

TEST_P(CallMismatch, RootScatterAfterAgreeingCalls) {
  expectEveryRankFails(
      [](Rank& r) {
        const size_t count = 64;
        auto in = bytes(count * 4 * 4), out = bytes(count * 4);
        for (int root = 0; root < 4; ++root) {
          weftResult_t agreed = weftScatter(in.data(), out.data(), count, weftFloat32, root, r.comm, nullptr);
          if (agreed != weftSuccess) return agreed;
          agreed = weftGather(out.data(), in.data(), count, weftFloat32, root, r.comm, nullptr);
          if (agreed != weftSuccess) return agreed;
        }
        return weftScatter(in.data(), out.data(), count, weftFloat32, r.rank == 2 ? 1 : 3, r.comm, nullptr);
      },
      "rank 2 called scatter #9 (count 64, float, root 1) while rank 0 called scatter #9 (count 64, float, root 3)",
      4, {0, 1, 3});
}

// A gather of another count than its peers' (same root): the counts are in the stamp.
TEST_P(CallMismatch, GatherCount) {
  expectEveryRankFails(
      [](Rank& r) {
        const size_t count = r.rank == 1 ? 200 : 100;
        auto in = bytes(count * 4), out = bytes(count * 4 * 2);
        return weftGather(in.data(), out.data(), count, weftFloat32, 0, r.comm, nullptr);
      },
      "rank 1 called gather #1 (count 200, float, root 0) while rank 0 called gather #1 (count 100, float, root 0)");
}

// Both ranks name themselves the root of a reduce: each only receives, so nothing the data lanes
// carry shows the disagreement.
TEST_P(CallMismatch, RootReduceBothReceive) {
  expectEveryRankFails(
      [](Rank& r) {
        const size_t count = 300;
        auto in = bytes(count * 4), out = bytes(count * 4);
        return weftReduce(in.data(), out.data(), count, weftFloat32, weftSum, r.rank, r.comm, nullptr);
      },
      "rank 1 called reduce #1 (count 300, float, sum, root 1) while rank 0 called reduce #1 (count 300, float, "
      "sum, root 0)");
}

// The odd root after agreeing calls of the same shape (the plans are connected and the token lane
// runs beside the data): still every rank fails.
TEST_P(CallMismatch, RootAmongFourAfterAgreeingCalls) {
  expectEveryRankFails(
      [](Rank& r) {
        const size_t count = 64;
        auto in = bytes(count * 4), out = bytes(count * 4);
        for (int root = 0; root < 4; ++root) {
          weftResult_t agreed = weftBroadcast(in.data(), out.data(), count, weftFloat32, root, r.comm, nullptr);
          if (agreed != weftSuccess) return agreed;
        }
        return weftBroadcast(in.data(), out.data(), count, weftFloat32, r.rank == 2 ? 1 : 3, r.comm, nullptr);
      },
      "rank 2 called broadcast #5 (count 64, float, root 1) while rank 0 called broadcast #5 (count 64, float, "
      "root 3)",
      4, {0, 1, 3});
}

// Ranks that agree are not disturbed: many calls of different shapes in a row all succeed.
TEST(CallMismatchAgreement, AgreeingRanksSucceedCallAfterCall) {
  runRanks(Mode::kThreads, 3, [](Rank& r) {
    for (int i = 0; i < 50; ++i) {
      size_t count = 1 + static_cast<size_t>(i) * 37;
      auto in = bytes(count * 4 * 3), out = bytes(count * 4 * 3);
      ASSERT_EQ(weftAllReduce(in.data(), out.data(), count, weftFloat32, weftSum, r.comm, nullptr), weftSuccess)
          << weftGetLastError(r.comm);
      ASSERT_EQ(weftBroadcast(in.data(), out.data(), count, weftFloat32, i % 3, r.comm, nullptr), weftSuccess)
          << weftGetLastError(r.comm);
      ASSERT_EQ(weftReduce(in.data(), out.data(), count, weftFloat32, weftMax, i % 3, r.comm, nullptr), weftSuccess)
          << weftGetLastError(r.comm);
      ASSERT_EQ(weftGather(in.data(), out.data(), count, weftFloat32, i % 3, r.comm, nullptr), weftSuccess)
          << weftGetLastError(r.comm);
      ASSERT_EQ(weftScatter(out.data(), in.data(), count, weftFloat32, (i + 1) % 3, r.comm, nullptr), weftSuccess)
          << weftGetLastError(r.comm);
    }
  });
}

std::string caseName(const ::testing::TestParamInfo<CallMismatch::ParamType>& info) {
  return std::string(modeName(std::get<0>(info.param))) + (std::get<1>(info.param) ? "_sockets" : "_shm");
}

INSTANTIATE_TEST_SUITE_P(Modes, CallMismatch,
                         ::testing::Combine(::testing::Values(Mode::kThreads, Mode::kProcesses),
                                            ::testing::Bool()),
                         caseName);

}  // namespace
}  // namespace weft_test
