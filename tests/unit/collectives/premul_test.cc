// Premul-sum (reduce.h's numerics): the host function against a reference written from the
// definition (product rounded once to the type, then a sum like weftSum), the device templates
// (reduce_copy.cuh's PreMulSumStep, the lane program's) against the host function bit for bit,
// and the reference interpreter proving that every algorithm multiplies every contribution
// exactly once when the executors multiply wherever a step reads the send buffer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "collectives/datatypes.h"
#include "collectives/device/reduce_copy.cuh"
#include "collectives/interpreter.h"
#include "collectives/reduce.h"
#include "collectives/schedule.h"
#include "schedule_cases.h"

namespace weft {
namespace coll {
namespace {

template <typename T>
uint64_t bitsOf(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

template <typename T>
bool isNan(T v) {
  if constexpr (IsReducedFloat<T>::value) {
    return std::isnan(static_cast<float>(v));
  } else if constexpr (std::is_floating_point<T>::value) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// Equal bits, or both NaN (a NaN's payload is the hardware's business).
template <typename T>
bool same(T a, T b) {
  return bitsOf(a) == bitsOf(b) || (isNan(a) && isNan(b));
}

// Equal bits, except where one float operation met two NaNs: which of them comes out is the
// compiler's operand order in the device templates compiled for the host, while the host
// kernels keep the first (reduce_lowp.h); there both must be NaN.
template <typename T>
bool sameUpToTwoNaNs(T got, T want, T own, T scalar, const T* in) {
  if (bitsOf(got) == bitsOf(want)) return true;
  const bool productOfNaNs = isNan(own) && isNan(scalar);
  const bool sumOfNaNs = in != nullptr && isNan(preMul(own, scalar)) && isNan(*in);
  return (productOfNaNs || sumOfNaNs) && isNan(got) && isNan(want);
}

// The definition, written without reduce.h: reduced types in float, rounded once; integers
// modulo 2^bits (through uint64_t, where the arithmetic is defined).
template <typename T>
T refProduct(T x, T s) {
  if constexpr (IsReducedFloat<T>::value) {
    return T(static_cast<float>(x) * static_cast<float>(s));
  } else if constexpr (std::is_integral<T>::value) {
    return static_cast<T>(static_cast<uint64_t>(x) * static_cast<uint64_t>(s));
  } else {
    return x * s;
  }
}
template <typename T>
T refSum(T a, T b) {
  if constexpr (IsReducedFloat<T>::value) {
    return T(static_cast<float>(a) + static_cast<float>(b));
  } else if constexpr (std::is_integral<T>::value) {
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}

// Random elements: every bit pattern for the small types (NaN, inf, denormals included); for
// float and double mostly moderate values, with specials mixed in.
template <typename T>
std::vector<T> randomValues(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits = rng();
    if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value) {
      if (bits % 8 != 0) {
        v[i] = static_cast<T>(static_cast<double>(static_cast<int64_t>(rng() % 2000001) - 1000000) / 1024.0);
        continue;
      }
    }
    std::memcpy(&v[i], &bits, sizeof(T));
  }
  return v;
}

template <typename T, weftDataType_t kType>
struct Case {
  using Type = T;
  static constexpr weftDataType_t type = kType;
};
struct CaseName {
  template <typename C>
  static std::string GetName(int) {
    return dataTypeName(C::type);
  }
};
template <typename C>
class PreMulSum : public ::testing::Test {};
using AllTypes =
    ::testing::Types<Case<int8_t, weftInt8>, Case<uint8_t, weftUint8>, Case<int32_t, weftInt32>,
                     Case<uint32_t, weftUint32>, Case<int64_t, weftInt64>, Case<uint64_t, weftUint64>,
                     Case<Half, weftFloat16>, Case<float, weftFloat32>, Case<double, weftFloat64>,
                     Case<BFloat16, weftBfloat16>, Case<Fp8E4M3, weftFloat8e4m3>, Case<Fp8E5M2, weftFloat8e5m2>>;
TYPED_TEST_SUITE(PreMulSum, AllTypes, CaseName);

TYPED_TEST(PreMulSum, HostFunctionIsTheDefinition) {
  using T = typename TypeParam::Type;
  const PreMulFn fn = preMulFunction(TypeParam::type);
  ASSERT_NE(fn, nullptr);
  for (size_t n : {size_t{1}, size_t{7}, size_t{1000}, size_t{1027}}) {
    for (uint64_t seed : {1, 2, 3}) {
      const std::vector<T> own = randomValues<T>(n, seed * 977 + n);
      const std::vector<T> in = randomValues<T>(n, seed * 131 + n);
      const T scalar = randomValues<T>(1, seed + 5 * n)[0];
      std::vector<T> copy(n), sum(n), sum2(n), inPlace = own;
      fn(copy.data(), nullptr, own.data(), nullptr, n, &scalar);
      fn(sum.data(), sum2.data(), own.data(), in.data(), n, &scalar);
      fn(inPlace.data(), nullptr, inPlace.data(), nullptr, n, &scalar);  // a copy onto itself
      int bad = 0;
      for (size_t i = 0; i < n && bad < 3; ++i) {
        const T p = refProduct(own[i], scalar);
        const T s = refSum(p, in[i]);
        if (!same(copy[i], p) || !same(inPlace[i], p) || !same(sum[i], s) || bitsOf(sum2[i]) != bitsOf(sum[i])) {
          ++bad;
          ADD_FAILURE() << "n " << n << " i " << i << ": own 0x" << std::hex << bitsOf(own[i]) << " scalar 0x"
                        << bitsOf(scalar) << " in 0x" << bitsOf(in[i]) << ": product 0x" << bitsOf(copy[i])
                        << " (in place 0x" << bitsOf(inPlace[i]) << "), want 0x" << bitsOf(p) << "; sum 0x"
                        << bitsOf(sum[i]) << " / 0x" << bitsOf(sum2[i]) << ", want 0x" << bitsOf(s);
        }
      }
    }
  }
  // Nothing is touched for n = 0.
  fn(nullptr, nullptr, nullptr, nullptr, 0, nullptr);
}

// The device's combining step (reduce_copy.cuh) computes what the host function does, bit for bit,
// for any thread split and any alignment (the pack path and the element paths).
TYPED_TEST(PreMulSum, DeviceStepMatchesHostBitForBit) {
  using T = typename TypeParam::Type;
  const PreMulFn fn = preMulFunction(TypeParam::type);
  const size_t n = 1000;
  const std::vector<T> own = randomValues<T>(n + 8, 11);
  const std::vector<T> in = randomValues<T>(n + 8, 12);
  const T scalar = randomValues<T>(1, 13)[0];
  for (size_t offset : {size_t{0}, size_t{1}}) {  // offset 1 of one buffer only: no packs for wide types
    for (int nSrcs : {1, 2}) {
      std::vector<T> want(n + 8), want2(n + 8);
      fn(want.data(), nullptr, own.data(), nSrcs == 2 ? in.data() + offset : nullptr, n, &scalar);
      for (size_t threads : {size_t{1}, size_t{3}, size_t{32}}) {
        std::vector<T> got(n + 8), got2(n + 8);
        const void* srcs[2] = {own.data(), in.data() + offset};
        void* dsts[2] = {got.data(), got2.data()};
        for (size_t t = 0; t < threads; ++t) {
          kernel::reduceCopy<T>(kernel::PreMulSumStep<T>{scalar, true}, nSrcs, srcs, 2, dsts, n, t, threads);
        }
        size_t wrong = 0;
        for (size_t i = 0; i < n; ++i) {
          const T* x = nSrcs == 2 ? &in[i + offset] : nullptr;
          wrong += !sameUpToTwoNaNs(got[i], want[i], own[i], scalar, x) ||
                   !sameUpToTwoNaNs(got2[i], want[i], own[i], scalar, x);
        }
        EXPECT_EQ(wrong, 0u) << "sources " << nSrcs << " threads " << threads << " offset " << offset;
      }
    }
  }
  // Without scaleFirst (a step that does not read this rank's input) it is weftSum's step.
  std::vector<T> got(n), want(n);
  const void* srcs[2] = {own.data(), in.data()};
  void* dsts[1] = {got.data()};
  kernel::reduceCopy<T>(kernel::PreMulSumStep<T>{scalar, false}, 2, srcs, 1, dsts, n, 0, 1);
  reduceFunction(TypeParam::type, weftSum)(want.data(), own.data(), in.data(), n, 0);
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool twoNaNs = isNan(own[i]) && isNan(in[i]) && isNan(got[i]) && isNan(want[i]);
    wrong += bitsOf(got[i]) != bitsOf(want[i]) && !twoNaNs;
  }
  EXPECT_EQ(wrong, 0u);
}

// The numerics written in reduce.h, on values where the choice shows: the product is rounded to
// the storage type before the sum (fusing would round once and give another answer here).
TEST(PreMulSumKnownAnswer, ProductRoundedBeforeTheSum) {
  // bfloat16 (8 significant bits): (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 rounds to 1 + 2^-6, so adding
  // -(1 + 2^-6) gives exactly 0. Fused (the product kept in float) it would give 2^-14.
  const PreMulFn fn = preMulFunction(weftBfloat16);
  const BFloat16 x = BFloat16(1.0078125f), s = BFloat16(1.0078125f);
  const BFloat16 in = BFloat16(-1.015625f);
  ASSERT_EQ(static_cast<float>(x), 1.0078125f);
  ASSERT_EQ(static_cast<float>(in), -1.015625f);
  BFloat16 out;
  fn(&out, nullptr, &x, &in, 1, &s);
  EXPECT_EQ(static_cast<float>(out), 0.0f);
  fn(&out, nullptr, &x, nullptr, 1, &s);
  EXPECT_EQ(static_cast<float>(out), 1.015625f);
  // Integers wrap like weftProd: 100 * 3 = 300 = 44 mod 256; + 250 = 294 = 38 mod 256.
  const PreMulFn u8 = preMulFunction(weftUint8);
  const uint8_t ux = 100, us = 3, uin = 250;
  uint8_t uo = 0;
  u8(&uo, nullptr, &ux, &uin, 1, &us);
  EXPECT_EQ(uo, 38);
  // E4M3 saturates: 300 * 2 -> 448.
  const PreMulFn e4 = preMulFunction(weftFloat8e4m3);
  const Fp8E4M3 ex = Fp8E4M3(256.0f), es = Fp8E4M3(2.0f);
  Fp8E4M3 eo;
  e4(&eo, nullptr, &ex, nullptr, 1, &es);
  EXPECT_EQ(static_cast<float>(eo), 448.0f);
  // Half: 0.1 is not exact; the product is rounded to half before the sum.
  const PreMulFn h = preMulFunction(weftFloat16);
  const Half hx = Half(0.1f), hs = Half(3.0f), hin = Half(1000.0f);
  Half ho;
  h(&ho, nullptr, &hx, &hin, 1, &hs);
  const float product = static_cast<float>(Half(static_cast<float>(hx) * 3.0f));
  EXPECT_EQ(ho.bits, Half(product + 1000.0f).bits);
}

TEST(PreMulSumDispatch, InvalidTypeGivesNull) {
  EXPECT_EQ(preMulFunction(static_cast<weftDataType_t>(weftNumTypes)), nullptr);
  EXPECT_EQ(preMulFunction(static_cast<weftDataType_t>(-1)), nullptr);
  for (int t = 0; t < weftNumTypes; ++t) EXPECT_NE(preMulFunction(static_cast<weftDataType_t>(t)), nullptr) << t;
  EXPECT_STREQ(redOpName(static_cast<weftRedOp_t>(weftNumOps + 3)), "premulsum");
}

// ---- The interpreter: every reducing algorithm multiplies every contribution exactly once ----

VerifyOptions preMulOptions(int64_t slice, bool inPlace, bool preMul = true) {
  VerifyOptions o;
  o.sliceElems = slice;
  o.inPlace = inPlace;
  o.preMul = preMul;
  return o;
}

using testing::AlgoCase;
using testing::scheduleParams;

const AlgoCase kReducing[] = {{CollKind::kAllReduce, Algo::kRing},
                              {CollKind::kAllReduce, Algo::kTree},
                              {CollKind::kAllReduce, Algo::kRecursiveDoubling},
                              {CollKind::kReduceScatter, Algo::kRing},
                              {CollKind::kReduce, Algo::kRing},
                              {CollKind::kReduce, Algo::kTree}};

TEST(PreMulSumInterpreter, EveryReducingAlgorithmMultipliesEachContributionOnce) {
  for (const AlgoCase& c : kReducing) {
    for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16, 17, 33, 64}) {
      for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{40}}) {
        for (bool inPlace : {false, true}) {
          for (int channels : {1, 2}) {
            const int root = n / 2;
            ScheduleParams p = scheduleParams(c.kind, c.algo, n, count, channels, root);
            if (!validateParams(p).empty()) continue;
            for (int64_t slice : {int64_t{1}, int64_t{3}, int64_t{64}}) {
              EXPECT_EQ(verifySchedule(p, preMulOptions(slice, inPlace)), "")
                  << collName(c.kind) << " " << algoName(c.algo) << " n " << n << " count " << count
                  << (inPlace ? " in place" : "") << " channels " << channels << " slice " << slice;
            }
          }
        }
      }
    }
  }
}

// In place, the send and receive buffers are the same memory: a step that reads its own input
// through Buf::kRecv moves the right values, but executors multiply only what is read as
// Buf::kSend, so that contribution would be summed unmultiplied.
TEST(PreMulSumInterpreter, OwnInputReadThroughTheReceiveBufferIsCaught) {
  ScheduleParams p = scheduleParams(CollKind::kAllReduce, Algo::kRing, 4, 40, 1, 0);
  std::vector<RankSchedule> s = buildAllSchedules(p);
  bool changed = false;
  for (Step& st : s[2].lanes[0].steps) {
    if (stepReads(st.kind) && st.srcBuf == Buf::kSend) {
      st.srcBuf = Buf::kRecv;
      changed = true;
      break;
    }
  }
  ASSERT_TRUE(changed);
  EXPECT_EQ(verifySchedules(p, s, preMulOptions(3, true, false)), "");  // fine for the built-in ops
  std::string err = verifySchedules(p, s, preMulOptions(3, true));
  EXPECT_NE(err.find("3 pre-multiplied"), std::string::npos) << err;
}

// A second read of the send buffer after it was overwritten in place would multiply twice.
TEST(PreMulSumInterpreter, MultiplyingTwiceIsCaught) {
  ScheduleParams p = scheduleParams(CollKind::kAllReduce, Algo::kRing, 1, 10, 1, 0);
  std::vector<RankSchedule> s = buildAllSchedules(p);
  ASSERT_EQ(s[0].lanes[0].steps.size(), 1u);
  Step again = s[0].lanes[0].steps[0];
  ASSERT_EQ(again.kind, StepKind::kCopy);
  again.final = false;
  s[0].lanes[0].steps.push_back(again);
  EXPECT_EQ(verifySchedules(p, s, preMulOptions(4, true, false)), "");  // copies onto themselves: no-ops
  std::string err = verifySchedules(p, s, preMulOptions(4, true));
  EXPECT_NE(err.find("multiplied twice"), std::string::npos) << err;
}

}  // namespace
}  // namespace coll
}  // namespace weft
