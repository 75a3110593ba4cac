// weft-fault-probe: one rank of a faulty job, for perf/fault_matrix.sh (docs/failures.md's "Failures
// and what you see" table). Every rank joins through the environment (weftCommInitFromEnv:
// WEFT_RANK, WEFT_NRANKS, WEFT_ROOT_ADDR, WEFT_ROOT_SECRET), makes one agreeing all-reduce so
// that the connections exist, then makes the call the fault is about, and prints one line:
//   rank R: <result> after T ms: <weftGetLastError's message>
// T is the time the faulty call took on this rank. Rank 1 is the odd one out in every fault.
//
//   weft-fault-probe count-small|count-large|datatype|op|collective|root|skipped|stopped|killed|ok
#include <signal.h>
#include <weft/weft.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using Call = std::function<weftResult_t(weftComm_t, int rank)>;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Buffers big enough for every case (16 MiB elements of 8 bytes at most), set to 1.
std::vector<char>& buffer(int which) {
  static std::vector<char> buffers[2] = {std::vector<char>(16u << 21, 1), std::vector<char>(16u << 21, 1)};
  return buffers[which];
}

weftResult_t allReduce(weftComm_t comm, size_t count, weftDataType_t type, weftRedOp_t op) {
  return weftAllReduce(buffer(0).data(), buffer(1).data(), count, type, op, comm, nullptr);
}

// The faulty call of each case; rank 1 differs from rank 0 (the ranks past 1 follow rank 0).
Call faultyCall(const std::string& kind) {
  if (kind == "count-small")
    return [](weftComm_t c, int r) { return allReduce(c, r == 1 ? 2000 : 1000, weftFloat32, weftSum); };
  if (kind == "count-large") {
    return [](weftComm_t c, int r) { return allReduce(c, (r == 1 ? 16u : 8u) << 18, weftFloat32, weftSum); };
  }
  if (kind == "datatype") {
    return [](weftComm_t c, int r) { return allReduce(c, 1u << 20, r == 1 ? weftFloat64 : weftFloat32, weftSum); };
  }
  if (kind == "op")
    return [](weftComm_t c, int r) { return allReduce(c, 1000, weftFloat32, r == 1 ? weftMax : weftSum); };
  if (kind == "collective") {
    // The same bytes on the wire over two ranks: all-reduce of 2n elements, all-gather of n.
    return [](weftComm_t c, int r) {
      if (r != 1) return allReduce(c, 8192, weftFloat32, weftSum);
      return weftAllGather(buffer(0).data(), buffer(1).data(), 4096, weftFloat32, c, nullptr);
    };
  }
  if (kind == "root") {
    // Rank 1 thinks it is the root; the others take rank 0.
    return [](weftComm_t c, int r) {
      return weftBroadcast(buffer(0).data(), buffer(0).data(), 5000, weftFloat32, r == 1 ? 1 : 0, c, nullptr);
    };
  }
  if (kind == "skipped") {
    // Rank 1 skips a call of 1000 elements that the others make before one of 3000.
    return [](weftComm_t c, int r) {
      if (r != 1) {
        weftResult_t first = allReduce(c, 1000, weftFloat32, weftSum);
        if (first != weftSuccess) return first;
      }
      return allReduce(c, 3000, weftFloat32, weftSum);
    };
  }
  if (kind == "stopped" || kind == "killed") {
    // Rank 1 is stopped (SIGSTOP: every thread, its heartbeat too) or killed before the call.
    int sig = kind == "stopped" ? SIGSTOP : SIGKILL;
    return [sig](weftComm_t c, int r) {
      if (r == 1) raise(sig);
      return allReduce(c, 1u << 20, weftFloat32, weftSum);
    };
  }
  if (kind == "ok") return [](weftComm_t c, int) { return allReduce(c, 1u << 20, weftFloat32, weftSum); };
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  Call call = argc == 2 ? faultyCall(argv[1]) : nullptr;
  if (!call) {
    std::fprintf(stderr,
                 "usage: %s count-small|count-large|datatype|op|collective|root|skipped|stopped|killed|ok\n"
                 "  (one rank; WEFT_RANK, WEFT_NRANKS, WEFT_ROOT_ADDR, WEFT_ROOT_SECRET name the job)\n",
                 argv[0]);
    return 2;
  }
  const char* rankText = std::getenv("WEFT_RANK");
  int rank = rankText ? std::atoi(rankText) : -1;
  auto start = std::chrono::steady_clock::now();
  weftComm_t comm = nullptr;
  weftResult_t result = weftCommInitFromEnv(&comm, nullptr);
  if (result != weftSuccess) {
    std::printf("rank %d: init %s after %.3f ms: %s\n", rank, weftGetErrorString(result), 1e3 * secondsSince(start),
                weftGetLastError(nullptr));
    return 1;
  }
  result = allReduce(comm, 1u << 20, weftFloat32, weftSum);
  if (result != weftSuccess) {
    std::printf("rank %d: warm-up %s: %s\n", rank, weftGetErrorString(result), weftGetLastError(comm));
    return 1;
  }
  start = std::chrono::steady_clock::now();
  result = call(comm, rank);
  double seconds = secondsSince(start);
  if (result == weftSuccess) {
    std::printf("rank %d: success after %.3f ms\n", rank, 1e3 * seconds);
  } else {
    std::printf("rank %d: %s after %.3f ms: %s\n", rank, weftGetErrorString(result), 1e3 * seconds,
                weftGetLastError(comm));
  }
  std::fflush(stdout);
  weftCommDestroy(comm);
  return result == weftSuccess ? 0 : 1;
}
