// weftRedOpCreatePreMulSum / weftRedOpDestroy on host memory: every reducing collective
// (all-reduce, reduce-scatter, reduce) with every algorithm (WEFT_ALGO), every datatype, counts
// 0, 1, odd and larger, in place and out of place, ranks as threads and as processes, over
// shared memory and over sockets; each rank has its own scalar (the result is the sum over
// ranks of scalar_r * x_r). Inputs are chosen so that every product and partial sum is exact in
// the type, whatever order an algorithm adds in; a second test checks the rounding of the
// product (reduce.h) where the order cannot matter (1 and 2 ranks). Then the error cases.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/datatypes.h"
#include "harness.h"

namespace weft_test {
namespace {

using weft::coll::BFloat16;
using weft::coll::Fp8E4M3;
using weft::coll::Fp8E5M2;
using weft::coll::Half;

const weftDataType_t kAllTypes[] = {weftInt8,    weftUint8,    weftInt32,      weftUint32,
                                    weftInt64,   weftUint64,   weftFloat16,    weftFloat32,
                                    weftFloat64, weftBfloat16, weftFloat8e4m3, weftFloat8e5m2};

using Bytes = std::vector<char>;

bool isInteger(weftDataType_t t) {
  return t == weftInt8 || t == weftUint8 || t == weftInt32 || t == weftUint32 || t == weftInt64 || t == weftUint64;
}
bool isFp8(weftDataType_t t) { return t == weftFloat8e4m3 || t == weftFloat8e5m2; }

// Stores an exact small value; integers wrap modulo 2^bits (so -1 is 255 in uint8).
void put(weftDataType_t t, void* buf, size_t i, double v) {
  if (isInteger(t)) {
    const int64_t w = static_cast<int64_t>(v);
    std::memcpy(static_cast<char*>(buf) + i * typeSize(t), &w, typeSize(t));  // little-endian: the low bytes
  } else {
    storeValue(t, buf, i, v);
  }
}

// Two input schemes whose products and every partial sum over up to 5 ranks are exact in the
// type: scheme 0 for every type (scalars +-2, inputs -1..1: sums are even, |sum| <= 10, exact
// even in E5M2); scheme 1 for the types with 8 or more significant bits (scalars -3..1, inputs
// -3..3: |sum| <= 45).
double scalarOf(int scheme, int rank) { return scheme == 0 ? (rank % 2 ? -2.0 : 2.0) : static_cast<double>(rank - 3); }
double inputOf(int scheme, int rank, size_t g) {
  return scheme == 0 ? static_cast<double>((static_cast<size_t>(rank) * 5 + g * 3) % 3) - 1.0
                     : static_cast<double>((static_cast<size_t>(rank) * 7 + g) % 7) - 3.0;
}
std::vector<int> schemesFor(weftDataType_t t) { return isFp8(t) ? std::vector<int>{0} : std::vector<int>{0, 1}; }

Bytes inputs(weftDataType_t t, int scheme, int rank, size_t count) {
  Bytes b(count * typeSize(t) + 1, 0x5a);
  for (size_t g = 0; g < count; ++g) put(t, b.data(), g, inputOf(scheme, rank, g));
  return b;
}

// sum_r scalar_r * x_r(g), exact, stored once to the type (integers wrapped). Started from the
// first product, not from 0: 0 * -3 is -0, and -0 stays -0 only if every product is -0 (IEEE, in
// any order).
Bytes expected(weftDataType_t t, int scheme, int nranks, size_t first, size_t count) {
  Bytes b(count * typeSize(t) + 1, 0);
  for (size_t i = 0; i < count; ++i) {
    double sum = scalarOf(scheme, 0) * inputOf(scheme, 0, first + i);
    for (int r = 1; r < nranks; ++r) sum += scalarOf(scheme, r) * inputOf(scheme, r, first + i);
    put(t, b.data(), i, sum);
  }
  return b;
}

// The op's scalar on this rank, in the op's type.
weftRedOp_t makeOp(weftComm_t comm, weftDataType_t t, double scalar) {
  uint64_t bytes = 0;
  put(t, &bytes, 0, scalar);
  weftRedOp_t op = weftSum;
  EXPECT_EQ(weftRedOpCreatePreMulSum(&op, &bytes, t, weftScalarHostImmediate, comm), weftSuccess)
      << weftGetLastError(comm);
  bytes = 0xdeadbeefdeadbeefull;  // read at creation: changing it afterwards changes nothing
  return op;
}

// (how ranks run, how many, over sockets instead of shared memory)
class PreMulSum : public ::testing::TestWithParam<std::tuple<Mode, int, bool>> {
 protected:
  void SetUp() override {
    if (!std::get<2>(GetParam())) return;
    setenv("WEFT_SHM_DISABLE", "1", 1);
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  }
  void TearDown() override {
    unsetenv("WEFT_SHM_DISABLE");
    unsetenv("WEFT_SOCKET_IFNAME");
    unsetenv("WEFT_ALGO");
    unsetenv("WEFT_TREE_MAX_BYTES");
  }
  Mode mode() const { return std::get<0>(GetParam()); }
  int nranks() const { return std::get<1>(GetParam()); }
};

TEST_P(PreMulSum, EveryReducingCollectiveAlgorithmAndType) {
  // ring: reduce as a chain too (no tree for any size); tree: all-reduce's double binary tree
  // and reduce's binary tree (WEFT_TREE_MAX_BYTES set selects the size rule, and the sizes here
  // are below it); doubling (reduce as the tuner picks).
  for (const char* algo : {"ring", "tree", "doubling"}) {
    setenv("WEFT_ALGO", algo, 1);
    if (std::string(algo) == "ring") {
      setenv("WEFT_TREE_MAX_BYTES", "0", 1);
    } else if (std::string(algo) == "tree") {
      setenv("WEFT_TREE_MAX_BYTES", "65536", 1);
    } else {
      unsetenv("WEFT_TREE_MAX_BYTES");
    }
    runRanks(mode(), nranks(), [&](Rank& r) {
      const int n = r.nranks;
      for (weftDataType_t type : kAllTypes) {
        const size_t es = typeSize(type);
        for (int scheme : schemesFor(type)) {
          const weftRedOp_t op = makeOp(r.comm, type, scalarOf(scheme, r.rank));
          for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1531}}) {
            for (bool inPlace : {false, true}) {
              const std::string what = std::string(algo) + " " + weft::coll::dataTypeName(type) + " scheme " +
                                       std::to_string(scheme) + " count " + std::to_string(count) +
                                       (inPlace ? " in place" : "") + " rank " + std::to_string(r.rank);
              // All-reduce.
              Bytes send = inputs(type, scheme, r.rank, count);
              Bytes recv(send.size(), 0x5a);
              void* out = inPlace ? send.data() : recv.data();
              ASSERT_EQ(weftAllReduce(send.data(), out, count, type, op, r.comm, nullptr), weftSuccess)
                  << weftGetLastError(r.comm);
              Bytes want = expected(type, scheme, n, 0, count);
              EXPECT_EQ(countMismatches(type, out, want.data(), count), 0u) << "allreduce " << what;
              // Reduce-scatter: rank r gets block r.
              send = inputs(type, scheme, r.rank, count * n);
              recv.assign(count * es + 1, 0x5a);
              out = inPlace ? send.data() + r.rank * count * es : recv.data();
              ASSERT_EQ(weftReduceScatter(send.data(), out, count, type, op, r.comm, nullptr), weftSuccess)
                  << weftGetLastError(r.comm);
              want = expected(type, scheme, n, r.rank * count, count);
              EXPECT_EQ(countMismatches(type, out, want.data(), count), 0u) << "reducescatter " << what;
              // Reduce, to a root that moves with the count; a non-root's buffer stays as it was.
              const int root = static_cast<int>(count % static_cast<size_t>(n));
              send = inputs(type, scheme, r.rank, count);
              recv.assign(send.size(), 0x5a);
              out = inPlace ? send.data() : recv.data();
              const Bytes before(static_cast<char*>(out), static_cast<char*>(out) + count * es);
              ASSERT_EQ(weftReduce(send.data(), out, count, type, op, root, r.comm, nullptr), weftSuccess)
                  << weftGetLastError(r.comm);
              if (r.rank == root) {
                want = expected(type, scheme, n, 0, count);
                EXPECT_EQ(countMismatches(type, out, want.data(), count), 0u) << "reduce root " << root << " " << what;
              } else {
                EXPECT_EQ(countMismatches(type, out, before.data(), count), 0u) << "reduce non-root " << what;
              }
            }
          }
          EXPECT_EQ(weftRedOpDestroy(op, r.comm), weftSuccess) << weftGetLastError(r.comm);
        }
      }
    });
  }
}

// Many slots and uneven blocks, one type per class.
TEST_P(PreMulSum, LargeAllReduce) {
  for (const char* algo : {"ring", "tree"}) {
    setenv("WEFT_ALGO", algo, 1);
    runRanks(mode(), nranks(), [&](Rank& r) {
      for (weftDataType_t type : {weftFloat32, weftInt64, weftBfloat16}) {
        const size_t count = 300007;
        const weftRedOp_t op = makeOp(r.comm, type, scalarOf(1, r.rank));
        Bytes send = inputs(type, 1, r.rank, count);
        Bytes recv(send.size());
        ASSERT_EQ(weftAllReduce(send.data(), recv.data(), count, type, op, r.comm, nullptr), weftSuccess)
            << weftGetLastError(r.comm);
        Bytes want = expected(type, 1, r.nranks, 0, count);
        EXPECT_EQ(countMismatches(type, recv.data(), want.data(), count), 0u) << algo << " " << type;
        EXPECT_EQ(weftRedOpDestroy(op, r.comm), weftSuccess);
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, PreMulSum,
                         ::testing::Combine(::testing::Values(Mode::kThreads), ::testing::Values(1, 2, 3, 4, 5),
                                            ::testing::Values(false)),
                         [](const auto& p) { return "n" + std::to_string(std::get<1>(p.param)); });
INSTANTIATE_TEST_SUITE_P(Processes, PreMulSum,
                         ::testing::Combine(::testing::Values(Mode::kProcesses), ::testing::Values(2, 3),
                                            ::testing::Values(false)),
                         [](const auto& p) { return "n" + std::to_string(std::get<1>(p.param)); });
// Over sockets (processes: threads of one process talk directly): large sends of a rank's own
// input would go by reference (the transport reads the bytes), which a premul-sum must not do.
INSTANTIATE_TEST_SUITE_P(SocketProcesses, PreMulSum,
                         ::testing::Combine(::testing::Values(Mode::kProcesses), ::testing::Values(3),
                                            ::testing::Values(true)),
                         [](const auto& p) { return "n" + std::to_string(std::get<1>(p.param)); });

// ---- Rounding: the product is rounded to the type once, then summed like weftSum ----

// The result for 1 or 2 ranks (a + b is the same either way round), from the definition.
template <typename T>
void roundedExpected(const std::vector<double>& xs, const std::vector<double>& ss, void* out) {
  auto product = [](double x, double s) -> T {
    if constexpr (std::is_same<T, double>::value) {
      return x * s;
    } else if constexpr (std::is_same<T, float>::value) {
      return static_cast<float>(x) * static_cast<float>(s);
    } else {
      return T(static_cast<float>(T(static_cast<float>(x))) * static_cast<float>(T(static_cast<float>(s))));
    }
  };
  T acc = product(xs[0], ss[0]);
  if (xs.size() == 2) {
    const T b = product(xs[1], ss[1]);
    if constexpr (std::is_same<T, double>::value || std::is_same<T, float>::value) {
      acc = acc + b;
    } else {
      acc = T(static_cast<float>(acc) + static_cast<float>(b));
    }
  }
  std::memcpy(out, &acc, sizeof(T));
}

void roundedExpected(weftDataType_t t, const std::vector<double>& xs, const std::vector<double>& ss, void* out) {
  switch (t) {
    case weftFloat16:
      return roundedExpected<Half>(xs, ss, out);
    case weftFloat32:
      return roundedExpected<float>(xs, ss, out);
    case weftFloat64:
      return roundedExpected<double>(xs, ss, out);
    case weftBfloat16:
      return roundedExpected<BFloat16>(xs, ss, out);
    case weftFloat8e4m3:
      return roundedExpected<Fp8E4M3>(xs, ss, out);
    case weftFloat8e5m2:
      return roundedExpected<Fp8E5M2>(xs, ss, out);
    default:
      FAIL() << "not a floating type: " << t;
  }
}

// Inputs and scalars that are not exact: x = 0.1 * (g % 13) - 0.6 + 0.37 r, s = 1/3 + r / 4, each
// first stored to the type (what the user passes), with the scalar read from the type.
double roundingInput(int rank, size_t g) { return 0.1 * static_cast<double>(g % 13) - 0.6 + 0.37 * rank; }
double roundingScalar(int rank) { return 1.0 / 3.0 + 0.25 * rank; }

class PreMulSumRounding : public ::testing::TestWithParam<std::tuple<Mode, int>> {};

TEST_P(PreMulSumRounding, ProductRoundedOnceThenSummed) {
  const int n = std::get<1>(GetParam());
  runRanks(std::get<0>(GetParam()), n, [&](Rank& r) {
    for (weftDataType_t type : {weftFloat16, weftFloat32, weftFloat64, weftBfloat16, weftFloat8e4m3, weftFloat8e5m2}) {
      const size_t es = typeSize(type), count = 101;
      uint64_t scalar = 0;
      storeValue(type, &scalar, 0, roundingScalar(r.rank));
      weftRedOp_t op;
      ASSERT_EQ(weftRedOpCreatePreMulSum(&op, &scalar, type, weftScalarHostImmediate, r.comm), weftSuccess)
          << weftGetLastError(r.comm);
      Bytes send(count * es), recv(count * es), want(count * es);
      for (size_t g = 0; g < count; ++g) storeValue(type, send.data(), g, roundingInput(r.rank, g));
      ASSERT_EQ(weftAllReduce(send.data(), recv.data(), count, type, op, r.comm, nullptr), weftSuccess)
          << weftGetLastError(r.comm);
      for (size_t g = 0; g < count; ++g) {
        std::vector<double> xs, ss;
        for (int p = 0; p < n; ++p) {
          // What rank p passed: its input and scalar as stored in the type.
          Bytes x(es);
          uint64_t s = 0;
          storeValue(type, x.data(), 0, roundingInput(p, g));
          storeValue(type, &s, 0, roundingScalar(p));
          xs.push_back(loadValue(type, x.data(), 0));
          ss.push_back(loadValue(type, &s, 0));
        }
        roundedExpected(type, xs, ss, want.data() + g * es);
      }
      EXPECT_EQ(countMismatches(type, recv.data(), want.data(), count), 0u) << "type " << type;
      EXPECT_EQ(weftRedOpDestroy(op, r.comm), weftSuccess);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, PreMulSumRounding,
                         ::testing::Values(std::make_tuple(Mode::kThreads, 1), std::make_tuple(Mode::kThreads, 2),
                                           std::make_tuple(Mode::kProcesses, 2)),
                         [](const auto& p) {
                           return std::string(modeName(std::get<0>(p.param))) + "_n" +
                                  std::to_string(std::get<1>(p.param));
                         });

// ---- Errors ----

#define EXPECT_ERROR(call, code, needle)                                    \
  do {                                                                      \
    EXPECT_EQ((call), (code));                                              \
    const std::string text = weftGetLastError(r.comm);                      \
    EXPECT_NE(text.find(needle), std::string::npos) << "message: " << text; \
  } while (0)

TEST(PreMulSumErrors, BadArgumentsWrongTypeDestroyedAndForeignOps) {
  runRanks(Mode::kThreads, 2, [&](Rank& r) {
    float one = 1.0f;
    weftRedOp_t op = weftSum;
    EXPECT_ERROR(weftRedOpCreatePreMulSum(nullptr, &one, weftFloat32, weftScalarHostImmediate, r.comm),
                 weftInvalidArgument, "op is NULL");
    EXPECT_ERROR(weftRedOpCreatePreMulSum(&op, nullptr, weftFloat32, weftScalarHostImmediate, r.comm),
                 weftInvalidArgument, "scalar is NULL");
    EXPECT_ERROR(
        weftRedOpCreatePreMulSum(&op, &one, static_cast<weftDataType_t>(weftNumTypes), weftScalarHostImmediate, r.comm),
        weftInvalidArgument, "is not a weftDataType_t");
    EXPECT_ERROR(weftRedOpCreatePreMulSum(&op, &one, weftFloat32, static_cast<weftScalarResidence_t>(7), r.comm),
                 weftInvalidArgument, "residence 7");
    EXPECT_EQ(weftRedOpCreatePreMulSum(&op, &one, weftFloat32, weftScalarHostImmediate, nullptr), weftInvalidArgument);
    // No GPU runtime in this test binary (or, on a GPU machine, a host pointer): refused now.
    EXPECT_ERROR(weftRedOpCreatePreMulSum(&op, &one, weftFloat32, weftScalarDevice, r.comm), weftInvalidArgument,
                 "weftScalarHostImmediate");
    EXPECT_EQ(op, weftSum) << "a refused creation must not write *op";

    // Every rank that creates ops in the same order gets the same values.
    weftRedOp_t a, b, c;
    ASSERT_EQ(weftRedOpCreatePreMulSum(&a, &one, weftFloat32, weftScalarHostImmediate, r.comm), weftSuccess);
    ASSERT_EQ(weftRedOpCreatePreMulSum(&b, &one, weftInt32, weftScalarHostImmediate, r.comm), weftSuccess);
    EXPECT_GE(static_cast<int>(a), weftNumOps);
    EXPECT_NE(a, b);
    EXPECT_EQ(weftRedOpDestroy(b, r.comm), weftSuccess);
    ASSERT_EQ(weftRedOpCreatePreMulSum(&c, &one, weftFloat64, weftScalarHostImmediate, r.comm), weftSuccess);
    EXPECT_NE(c, b) << "a destroyed op's value is not handed out again at once";
    int mine[3] = {static_cast<int>(a), static_cast<int>(b), static_cast<int>(c)};
    std::vector<int> all(6);
    ASSERT_EQ(weftAllGather(mine, all.data(), 3, weftInt32, r.comm, nullptr), weftSuccess);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(all[k], all[3 + k]) << "op " << k << " differs between the ranks";

    float x[4] = {1, 2, 3, 4}, y[4] = {};
    // Another datatype than the op's.
    EXPECT_ERROR(weftAllReduce(x, y, 4, weftFloat64, a, r.comm, nullptr), weftInvalidArgument,
                 "made for datatype float but the call's datatype is double");
    // A destroyed op, in every reducing collective; destroying it again.
    EXPECT_ERROR(weftAllReduce(x, y, 4, weftInt32, b, r.comm, nullptr), weftInvalidArgument,
                 "was destroyed by weftRedOpDestroy");
    EXPECT_ERROR(weftReduceScatter(x, y, 2, weftInt32, b, r.comm, nullptr), weftInvalidArgument, "was destroyed");
    EXPECT_ERROR(weftReduce(x, y, 4, weftInt32, b, 0, r.comm, nullptr), weftInvalidArgument, "was destroyed");
    EXPECT_ERROR(weftRedOpDestroy(b, r.comm), weftInvalidArgument, "was destroyed");
    // Ops nobody made, and built-in ones.
    EXPECT_ERROR(weftRedOpDestroy(weftSum, r.comm), weftInvalidArgument, "built-in op");
    EXPECT_ERROR(weftRedOpDestroy(static_cast<weftRedOp_t>(static_cast<int>(c) + 1), r.comm), weftInvalidArgument,
                 "never made by this communicator");
    EXPECT_ERROR(weftAllReduce(x, y, 4, weftFloat32, static_cast<weftRedOp_t>(-3), r.comm, nullptr),
                 weftInvalidArgument, "is not a weftRedOp_t");
    EXPECT_ERROR(weftAllReduce(x, y, 4, weftFloat32, static_cast<weftRedOp_t>(0x7ffffff0), r.comm, nullptr),
                 weftInvalidArgument, "not a weftRedOp_t of this communicator");

    // An op of another communicator (a one-rank communicator of this thread) is refused on this
    // one and the other way round, whatever their values.
    weftComm_t other = nullptr;
    ASSERT_EQ(weftCommInitAll(&other, 1, nullptr), weftSuccess);
    weftRedOp_t foreign;
    ASSERT_EQ(weftRedOpCreatePreMulSum(&foreign, &one, weftFloat32, weftScalarHostImmediate, other), weftSuccess);
    // Both are their communicator's first op: equal only when the two communicators' 10-bit tags
    // collide (1 in 1024), and then the call below is a valid one.
    if (foreign != a) {
      EXPECT_ERROR(weftAllReduce(x, y, 4, weftFloat32, foreign, r.comm, nullptr), weftInvalidArgument,
                   "this communicator");
    }
    float z[4] = {};
    weftRedOp_t fresh;
    ASSERT_EQ(weftRedOpCreatePreMulSum(&fresh, &one, weftFloat32, weftScalarHostImmediate, r.comm), weftSuccess);
    EXPECT_NE(weftAllReduce(x, z, 4, weftFloat32, fresh, other, nullptr), weftSuccess)
        << "an op made after the other communicator's only op must not be valid there";
    EXPECT_EQ(weftRedOpDestroy(foreign, other), weftSuccess);
    EXPECT_EQ(weftCommDestroy(other), weftSuccess);

    // Refused calls leave the communicator usable: a premul-sum still runs, with its scalar.
    float two = 2.0f;
    weftRedOp_t twice;
    ASSERT_EQ(weftRedOpCreatePreMulSum(&twice, &two, weftFloat32, weftScalarHostImmediate, r.comm), weftSuccess);
    ASSERT_EQ(weftAllReduce(x, y, 4, weftFloat32, twice, r.comm, nullptr), weftSuccess) << weftGetLastError(r.comm);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i], 2.0f * x[i] * 2) << i;  // two ranks, each 2x
    for (weftRedOp_t o : {a, c, fresh, twice}) EXPECT_EQ(weftRedOpDestroy(o, r.comm), weftSuccess);
  });
}

}  // namespace
}  // namespace weft_test
