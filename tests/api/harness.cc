#include "harness.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "collectives/datatypes.h"

namespace weft_test {

using weft::coll::BFloat16;
using weft::coll::Fp8E4M3;
using weft::coll::Fp8E5M2;
using weft::coll::Half;

namespace {

void runBody(int rank, int n, const weftUniqueId& id, const std::function<void(Rank&)>& body) {
  Rank r;
  r.rank = rank;
  r.nranks = n;
  weftResult_t res = weftCommInitRank(&r.comm, n, id, rank);
  ASSERT_EQ(res, weftSuccess) << "rank " << rank << ": " << weftGetLastError(nullptr);
  body(r);
  EXPECT_EQ(weftCommDestroy(r.comm), weftSuccess);
}

}  // namespace

void runRanks(Mode mode, int n, const std::function<void(Rank&)>& body, int timeoutS) {
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess) << weftGetLastError(nullptr);
  if (mode == Mode::kThreads) {
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { runBody(r, n, id, body); });
    for (auto& t : threads) t.join();
    return;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      runBody(r, n, id, body);
      std::fflush(stdout);
      _exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    pids.push_back(pid);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutS);
  std::vector<bool> done(pids.size(), false);
  size_t remaining = pids.size();
  while (remaining > 0) {
    for (size_t r = 0; r < pids.size(); ++r) {
      if (done[r]) continue;
      int status = 0;
      pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got == 0) continue;
      done[r] = true;
      --remaining;
      if (WIFSIGNALED(status)) {
        ADD_FAILURE() << "rank " << r << " (pid " << pids[r] << ") was killed by signal " << WTERMSIG(status);
      } else {
        EXPECT_EQ(WEXITSTATUS(status), 0) << "rank " << r << " failed (see its output above)";
      }
    }
    if (remaining > 0 && std::chrono::steady_clock::now() > deadline) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (!done[r]) kill(pids[r], SIGKILL), waitpid(pids[r], nullptr, 0);
      }
      ADD_FAILURE() << "ranks still running after " << timeoutS << " s: killed";
      return;
    }
    if (remaining > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

double inputValue(weftRedOp_t op, int rank, size_t i) {
  switch (op) {
    case weftProd:
      return ((static_cast<size_t>(rank) + i) % 7 == 0) ? 2.0 : 1.0;  // at most two 2s per element up to 8 ranks
    case weftMax:
    case weftMin:
      return static_cast<double>((static_cast<size_t>(rank) * 5 + i * 3) % 8);
    default:
      return static_cast<double>((static_cast<size_t>(rank) + 3 * i) % 2);  // sums stay <= nranks
  }
}

size_t typeSize(weftDataType_t type) { return weft::coll::dataTypeSize(type); }

void storeValue(weftDataType_t type, void* buf, size_t i, double v) {
  switch (type) {
    case weftInt8: static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v); break;
    case weftUint8: static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v); break;
    case weftInt32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v); break;
    case weftUint32: static_cast<uint32_t*>(buf)[i] = static_cast<uint32_t>(v); break;
    case weftInt64: static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v); break;
    case weftUint64: static_cast<uint64_t*>(buf)[i] = static_cast<uint64_t>(v); break;
    case weftFloat16: static_cast<Half*>(buf)[i] = Half(static_cast<float>(v)); break;
    case weftFloat32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case weftFloat64: static_cast<double*>(buf)[i] = v; break;
    case weftBfloat16: static_cast<BFloat16*>(buf)[i] = BFloat16(static_cast<float>(v)); break;
    case weftFloat8e4m3: static_cast<Fp8E4M3*>(buf)[i] = Fp8E4M3(static_cast<float>(v)); break;
    case weftFloat8e5m2: static_cast<Fp8E5M2*>(buf)[i] = Fp8E5M2(static_cast<float>(v)); break;
    default: break;
  }
}

double loadValue(weftDataType_t type, const void* buf, size_t i) {
  switch (type) {
    case weftInt8: return static_cast<const int8_t*>(buf)[i];
    case weftUint8: return static_cast<const uint8_t*>(buf)[i];
    case weftInt32: return static_cast<const int32_t*>(buf)[i];
    case weftUint32: return static_cast<const uint32_t*>(buf)[i];
    case weftInt64: return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case weftUint64: return static_cast<double>(static_cast<const uint64_t*>(buf)[i]);
    case weftFloat16: return static_cast<float>(static_cast<const Half*>(buf)[i]);
    case weftFloat32: return static_cast<const float*>(buf)[i];
    case weftFloat64: return static_cast<const double*>(buf)[i];
    case weftBfloat16: return static_cast<float>(static_cast<const BFloat16*>(buf)[i]);
    case weftFloat8e4m3: return static_cast<float>(static_cast<const Fp8E4M3*>(buf)[i]);
    case weftFloat8e5m2: return static_cast<float>(static_cast<const Fp8E5M2*>(buf)[i]);
    default: return 0;
  }
}

void storeExpected(weftDataType_t type, weftRedOp_t op, int nranks, size_t i, void* out) {
  double acc = inputValue(op, 0, i);
  for (int r = 1; r < nranks; ++r) {
    double v = inputValue(op, r, i);
    switch (op) {
      case weftProd: acc *= v; break;
      case weftMax: acc = v > acc ? v : acc; break;
      case weftMin: acc = v < acc ? v : acc; break;
      default: acc += v; break;
    }
  }
  if (op == weftAvg) {
    bool isInt = type == weftInt8 || type == weftUint8 || type == weftInt32 || type == weftUint32 ||
                 type == weftInt64 || type == weftUint64;
    if (isInt) {
      acc = static_cast<double>(static_cast<long long>(acc) / nranks);
    } else if (type == weftFloat64) {
      acc = acc / nranks;
    } else {
      acc = static_cast<double>(static_cast<float>(acc) / static_cast<float>(nranks));  // once, in float
    }
  }
  storeValue(type, out, 0, acc);
}

size_t countMismatches(weftDataType_t type, const void* got, const void* expected, size_t count) {
  size_t es = typeSize(type), wrong = 0;
  const char* g = static_cast<const char*>(got);
  const char* e = static_cast<const char*>(expected);
  for (size_t i = 0; i < count; ++i) wrong += std::memcmp(g + i * es, e + i * es, es) != 0;
  return wrong;
}

}  // namespace weft_test
