// weft-nettest: one rank of a multi-host test (tests/netns/netns.sh launches one per rank, in
// network namespaces that stand for hosts). The rank, size, root address and secret come from
// WEFT_RANK, WEFT_NRANKS, WEFT_ROOT_ADDR and WEFT_ROOT_SECRET (weftCommInitFromEnv).
//
//   weft-nettest collectives [quick]   every collective, type, op; bit-exact (nettest_collectives.cc)
//   weft-nettest loop N                N all-reduces of 4 MiB, each checked ("rank R: iteration I ok")
//   weft-nettest abort                 rank 0 aborts a collective that rank 1 never joins
//   weft-nettest stranger HOST:PORT [HOLD_S]   pokes the bootstrap root (nettest_stranger.cc)
//
// Every failure prints the library's message (weftGetLastError) to stderr; the exit status is 0
// only when everything checked out.
#include "nettest.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace nettest {

void printApiError(int rank, const char* what, weftResult_t result, weftComm_t comm) {
  std::fprintf(stderr, "rank %d: %s failed (%s): %s\n", rank, what, weftGetErrorString(result), weftGetLastError(comm));
}

bool initFromEnv(weftComm_t* comm, int* rank, int* nranks) {
  weftResult_t r = weftCommInitFromEnv(comm, nullptr);
  if (r != weftSuccess) {
    const char* env = std::getenv("WEFT_RANK");
    std::fprintf(stderr, "rank %s: weftCommInitFromEnv failed (%s): %s\n", env ? env : "?", weftGetErrorString(r),
                 weftGetLastError(nullptr));
    return false;
  }
  weftCommUserRank(*comm, rank);
  weftCommCount(*comm, nranks);
  return true;
}

namespace {

// ---- loop: a steady stream of all-reduces, for the kill and link-down tests ----------------

int runLoop(long iterations) {
  weftComm_t comm = nullptr;
  int rank = 0, n = 1;
  if (!initFromEnv(&comm, &rank, &n)) return 1;
  const size_t count = size_t{1} << 20;  // 4 MiB of uint32: ring all-reduce over several channels
  const uint32_t ranksSum = static_cast<uint32_t>(n) * static_cast<uint32_t>(n + 1) / 2;
  std::vector<uint32_t> send(count), recv(count);
  const double start = nowS();
  for (long it = 0; it < iterations; ++it) {
    // Rank r contributes (r + 1) * (i + it): the sum is (i + it) * n(n+1)/2, wrapping.
    for (size_t i = 0; i < count; ++i) send[i] = static_cast<uint32_t>(rank + 1) * static_cast<uint32_t>(i + it);
    weftResult_t r = weftAllReduce(send.data(), recv.data(), count, weftUint32, weftSum, comm, nullptr);
    if (r != weftSuccess) {
      char what[96];
      std::snprintf(what, sizeof(what), "weftAllReduce in iteration %ld (%.2f s into the loop)", it, nowS() - start);
      printApiError(rank, what, r, comm);
      weftCommDestroy(comm);
      return 1;
    }
    for (size_t i = 0; i < count; ++i) {
      uint32_t want = ranksSum * static_cast<uint32_t>(i + it);
      if (recv[i] != want) {
        std::fprintf(stderr,
                     "rank %d: FAIL loop iteration %ld: allreduce uint32 sum count %zu: index %zu: got %u, "
                     "expected %u\n",
                     rank, it, count, i, recv[i], want);
        weftCommDestroy(comm);
        return 1;
      }
    }
    std::printf("rank %d: iteration %ld ok\n", rank, it);
    std::fflush(stdout);
  }
  weftResult_t r = weftCommDestroy(comm);
  if (r != weftSuccess) printApiError(rank, "weftCommDestroy", r, nullptr);
  return r == weftSuccess ? 0 : 1;
}

// ---- abort: weftCommAbort unblocks a collective in flight; a new communicator works --------

constexpr size_t kAbortCount = 1 << 16;
constexpr double kAbortAfterS = 1.0;
// Rank 0 aborts after kAbortAfterS and then lingers, so that the peers' failure comes from the
// abort and not from rank 0's exit.
constexpr double kPeerSleepS = 3.0;
constexpr double kRootLingerS = 4.0;

// A fresh two-rank communicator inside this process (weftCommInitAll, one thread, a group).
bool freshCommunicatorWorks(int rank) {
  weftComm_t comms[2] = {nullptr, nullptr};
  weftResult_t r = weftCommInitAll(comms, 2, nullptr);
  if (r != weftSuccess) {
    printApiError(rank, "weftCommInitAll (the new communicator after the error)", r, nullptr);
    return false;
  }
  std::vector<int64_t> send[2], recv[2];
  for (int c = 0; c < 2; ++c) {
    send[c].assign(kAbortCount, 0);
    recv[c].assign(kAbortCount, -1);
    for (size_t i = 0; i < kAbortCount; ++i) send[c][i] = static_cast<int64_t>(i) * (c + 1) - 7;
  }
  weftGroupStart();
  for (int c = 0; c < 2; ++c) {
    weftAllReduce(send[c].data(), recv[c].data(), kAbortCount, weftInt64, weftSum, comms[c], nullptr);
  }
  r = weftGroupEnd();
  bool ok = r == weftSuccess;
  if (!ok) printApiError(rank, "weftAllReduce on the new communicator", r, nullptr);
  for (int c = 0; ok && c < 2; ++c) {
    for (size_t i = 0; i < kAbortCount; ++i) {
      int64_t want = static_cast<int64_t>(i) * 3 - 14;
      if (recv[c][i] != want) {
        std::fprintf(stderr, "rank %d: FAIL abort: new communicator rank %d index %zu: got %lld, expected %lld\n", rank,
                     c, i, static_cast<long long>(recv[c][i]), static_cast<long long>(want));
        ok = false;
        break;
      }
    }
  }
  for (int c = 0; c < 2; ++c) weftCommDestroy(comms[c]);
  if (ok) std::printf("rank %d: abort: a new communicator (weftCommInitAll) all-reduced correctly\n", rank);
  return ok;
}

int runAbort() {
  weftComm_t comm = nullptr;
  int rank = 0, n = 1;
  // The ring, whose every step needs the neighbour: recursive doubling (the tuner's choice for
  // two ranks on one host at this size) lets rank 1 finish on the data rank 0 sent before it
  // aborted, and then there is no wait for the abort to interrupt.
  setenv("WEFT_ALGO", "ring", 0);
  if (!initFromEnv(&comm, &rank, &n)) return 1;
  if (n < 2) {
    std::fprintf(stderr, "rank %d: abort needs at least 2 ranks\n", rank);
    return 2;
  }
  std::vector<int32_t> send(kAbortCount, rank + 1), recv(kAbortCount, 0);
  // One all-reduce that everyone joins: the connections exist, so the abort below interrupts a
  // wait for data rather than connection setup.
  weftResult_t r = weftAllReduce(send.data(), recv.data(), kAbortCount, weftInt32, weftSum, comm, nullptr);
  if (r != weftSuccess) {
    printApiError(rank, "the first weftAllReduce", r, comm);
    return 1;
  }
  bool ok = true;
  if (rank == 0) {
    std::atomic<double> abortedAt{0}, abortReturnedAt{0};
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::duration<double>(kAbortAfterS));
      abortedAt.store(nowS());
      weftCommAbort(comm);  // frees comm
      abortReturnedAt.store(nowS());
    });
    // The peers are asleep: this waits until the abort.
    r = weftAllReduce(send.data(), recv.data(), kAbortCount, weftInt32, weftSum, comm, nullptr);
    double returnedAt = nowS();
    // comm may be gone now: the message is this thread's (weftGetLastError(NULL)).
    std::string message = weftGetLastError(nullptr);
    aborter.join();
    double unblock = returnedAt - abortedAt.load();
    double abortCall = abortReturnedAt.load() - abortedAt.load();
    std::printf(
        "rank 0: abort: the all-reduce returned %s %.3f s after weftCommAbort (which returned after %.3f s): %s\n",
        weftGetErrorString(r), unblock, abortCall, message.c_str());
    if (r != weftRemoteError && r != weftInvalidUsage) {
      std::fprintf(stderr,
                   "rank 0: FAIL abort: the aborted all-reduce returned %s, not weftRemoteError or "
                   "weftInvalidUsage: %s\n",
                   weftGetErrorString(r), message.c_str());
      ok = false;
    }
    if (abortedAt.load() == 0 || unblock >= 1.0 || unblock < -0.01) {
      std::fprintf(stderr, "rank 0: FAIL abort: the all-reduce returned %.3f s after weftCommAbort (limit 1 s)\n",
                   unblock);
      ok = false;
    }
    if (abortCall >= 1.0) {
      std::fprintf(stderr, "rank 0: FAIL abort: weftCommAbort took %.3f s (limit 1 s)\n", abortCall);
      ok = false;
    }
  } else {
    std::this_thread::sleep_for(std::chrono::duration<double>(kPeerSleepS));
    double t0 = nowS();
    r = weftAllReduce(send.data(), recv.data(), kAbortCount, weftInt32, weftSum, comm, nullptr);
    double took = nowS() - t0;
    weftResult_t async = weftSuccess;
    weftResult_t q = weftCommGetAsyncError(comm, &async);
    std::printf("rank %d: abort: the all-reduce after rank 0 aborted returned %s after %.3f s; async error %s: %s\n",
                rank, weftGetErrorString(r), took, weftGetErrorString(async), weftGetLastError(comm));
    if (r == weftSuccess) {
      std::fprintf(stderr, "rank %d: FAIL abort: an all-reduce with an aborted rank 0 succeeded\n", rank);
      ok = false;
    }
    if (q != weftSuccess || async == weftSuccess || async == weftInProgress) {
      std::fprintf(stderr,
                   "rank %d: FAIL abort: weftCommGetAsyncError returned %s with error %s after a failed "
                   "all-reduce; expected the communicator's error\n",
                   rank, weftGetErrorString(q), weftGetErrorString(async));
      ok = false;
    }
    r = weftCommDestroy(comm);
    if (r != weftSuccess) {
      printApiError(rank, "weftCommDestroy after the error", r, nullptr);
      ok = false;
    }
  }
  ok = freshCommunicatorWorks(rank) && ok;
  if (rank == 0) std::this_thread::sleep_for(std::chrono::duration<double>(kRootLingerS));
  return ok ? 0 : 1;
}

int usage() {
  std::fprintf(stderr,
               "usage: weft-nettest collectives [quick] | loop N | abort | stranger HOST:PORT [HOLD_S]\n"
               "  ranks get WEFT_RANK, WEFT_NRANKS, WEFT_ROOT_ADDR, WEFT_ROOT_SECRET from the environment\n");
  return 2;
}

}  // namespace
}  // namespace nettest

int main(int argc, char** argv) {
  if (argc < 2) return nettest::usage();
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const char* mode = argv[1];
  if (std::strcmp(mode, "collectives") == 0) {
    bool quick = argc > 2 && std::strcmp(argv[2], "quick") == 0;
    return nettest::runCollectives(quick);
  }
  if (std::strcmp(mode, "loop") == 0 && argc > 2) return nettest::runLoop(std::atol(argv[2]));
  if (std::strcmp(mode, "abort") == 0) return nettest::runAbort();
  if (std::strcmp(mode, "stranger") == 0 && argc > 2) {
    return nettest::runStranger(argv[2], argc > 3 ? std::atof(argv[3]) : 8.0);
  }
  return nettest::usage();
}
