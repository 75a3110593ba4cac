// Tests for collectives/reduce.h: every (datatype, op) host function and the device-style loop
// templates against a reference that computes exactly (double / 64-bit integers) and rounds once
// the way the numerics promise; sizes 0, 1, 7, 1000 and 1027, unaligned and in-place buffers;
// plus hand-computed answers for wrap-around, saturation, ties and NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "collectives/reduce.h"

namespace weft {
namespace coll {
namespace {

template <typename T>
constexpr bool kIsFloat = IsReducedFloat<T>::value || std::is_floating_point<T>::value;

template <typename T>
double toDouble(T v) {
  if constexpr (IsReducedFloat<T>::value) {
    return static_cast<float>(v);
  } else {
    return static_cast<double>(v);
  }
}

template <typename T>
bool isNan(T v) {
  if constexpr (kIsFloat<T>) {
    return std::isnan(toDouble(v));
  } else {
    return false;
  }
}

template <typename T>
uint64_t bitsOf(T v) {
  uint64_t r = 0;
  std::memcpy(&r, &v, sizeof(T));
  return r;
}

// Equal encodings; any NaN matches any NaN.
template <typename T>
bool sameResult(T want, T got) {
  return isNan(want) ? isNan(got) : bitsOf(want) == bitsOf(got);
}

template <typename T>
std::string show(T v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g (bits 0x%llx)", toDouble(v), static_cast<unsigned long long>(bitsOf(v)));
  return buf;
}

// The reference: exact arithmetic in double or 64 bits, then the one rounding the op promises
// (to float and then to the storage type for everything but double; wrap-around for integers).
template <typename T>
T reference(weftRedOp_t op, T a, T b, uint32_t divisor) {
  if constexpr (std::is_integral<T>::value) {
    using W = std::conditional_t<std::is_signed<T>::value, int64_t, uint64_t>;
    const uint64_t ua = static_cast<uint64_t>(static_cast<W>(a)), ub = static_cast<uint64_t>(static_cast<W>(b));
    const T sum = static_cast<T>(ua + ub);
    switch (op) {
      case weftSum:
        return sum;
      case weftProd:
        return static_cast<T>(ua * ub);  // the low bits of a product do not depend on the high ones
      case weftMax:
        return static_cast<W>(a) > static_cast<W>(b) ? a : b;
      case weftMin:
        return static_cast<W>(a) < static_cast<W>(b) ? a : b;
      default:
        return divisor <= 1 ? sum : static_cast<T>(static_cast<W>(sum) / static_cast<W>(divisor));
    }
  } else {
    const double da = toDouble(a), db = toDouble(b);
    if (op == weftMax || op == weftMin) {
      if (std::isnan(da)) return a;
      if (std::isnan(db)) return b;
      return (op == weftMax ? da > db : da < db) ? a : b;
    }
    double r;
    if (op == weftSum || (op == weftAvg && divisor <= 1)) {
      r = da + db;
    } else if (op == weftProd) {
      r = da * db;  // exact unless T is double (then it is double's own rounding)
    } else if (std::is_same<T, double>::value) {
      r = (da + db) / divisor;
    } else {
      r = static_cast<double>(static_cast<float>(da + db)) / divisor;  // the sum is rounded to float first
    }
    if constexpr (std::is_same<T, double>::value) {
      return r;
    } else {
      return T(static_cast<float>(r));  // double then float rounding is innocuous for + * / (53 >= 2*24+2)
    }
  }
}

template <typename T>
T fromDouble(double v) {
  if constexpr (IsReducedFloat<T>::value) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

template <typename T>
T randomBits(std::mt19937_64& rng) {
  const uint64_t r = rng();
  T v;
  std::memcpy(&v, &r, sizeof(T));
  return v;
}

template <typename T>
T negate(T x) {
  if constexpr (std::is_integral<T>::value) {
    return static_cast<T>(0 - static_cast<uint64_t>(x));
  } else {
    return fromDouble<T>(-toDouble(x));
  }
}

// Inputs: random encodings (every NaN, inf, denormal and overflow the type has), values whose
// results are exact (small dyadic numbers), extremes, and pairs that are equal or opposite.
template <typename T>
void makeInputs(size_t n, uint64_t seed, std::vector<T>* a, std::vector<T>* b) {
  std::mt19937_64 rng(seed);
  const auto small = [&rng]() {
    if constexpr (kIsFloat<T>) {
      return fromDouble<T>(static_cast<double>(static_cast<int64_t>(rng() % 257) - 128) / 8);
    } else {
      return static_cast<T>(rng() % 100);
    }
  };
  const auto extreme = [&rng]() {
    if constexpr (IsReducedFloat<T>::value) {
      return randomBits<T>(rng);
    } else {
      const T values[] = {std::numeric_limits<T>::max(), std::numeric_limits<T>::lowest(), T(0), T(1)};
      return values[rng() % 4];
    }
  };
  a->resize(n);
  b->resize(n);
  for (size_t i = 0; i < n; ++i) {
    T x, y;
    const unsigned kind = static_cast<unsigned>(rng() % 8);
    if (kind < 4) {
      x = randomBits<T>(rng);
      y = randomBits<T>(rng);
    } else if (kind < 6) {
      x = small();
      y = small();
    } else if (kind == 6) {
      x = extreme();
      y = extreme();
    } else {
      x = randomBits<T>(rng);
      y = (rng() & 1) ? x : negate(x);
    }
    (*a)[i] = x;
    (*b)[i] = y;
  }
}

enum class Layout { kSeparate, kUnaligned, kMixedOffsets, kInPlaceA, kInPlaceB };

const char* layoutName(Layout l) {
  switch (l) {
    case Layout::kSeparate:
      return "separate";
    case Layout::kUnaligned:
      return "unaligned";
    case Layout::kMixedOffsets:
      return "mixed-offsets";
    case Layout::kInPlaceA:
      return "dst==a";
    default:
      return "dst==b";
  }
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
class ReduceFunctionTest : public ::testing::Test {};

using AllTypes =
    ::testing::Types<Case<int8_t, weftInt8>, Case<uint8_t, weftUint8>, Case<int32_t, weftInt32>,
                     Case<uint32_t, weftUint32>, Case<int64_t, weftInt64>, Case<uint64_t, weftUint64>,
                     Case<Half, weftFloat16>, Case<float, weftFloat32>, Case<double, weftFloat64>,
                     Case<BFloat16, weftBfloat16>, Case<Fp8E4M3, weftFloat8e4m3>, Case<Fp8E5M2, weftFloat8e5m2>>;
TYPED_TEST_SUITE(ReduceFunctionTest, AllTypes, CaseName);

// Runs fn on n elements in the given layout and checks every element and the guard elements
// around dst. Returns the number of mismatches (reported, at most a few).
template <typename T>
int runAndCheck(ReduceFn fn, weftRedOp_t op, size_t n, Layout layout, uint32_t divisor, uint64_t seed) {
  std::vector<T> a, b;
  makeInputs<T>(n, seed, &a, &b);
  constexpr size_t kGuard = 64 / sizeof(T) + 2;  // keeps the separate layout's offsets a cache line
  size_t offD = kGuard, offA = kGuard, offB = kGuard;
  if (layout == Layout::kUnaligned) offD = offA = offB = kGuard + 1;
  if (layout == Layout::kMixedOffsets) offD = kGuard + 1, offA = kGuard + 2, offB = kGuard + 3;
  const T canary = fromDouble<T>(kIsFloat<T> ? 3.0 : 77.0);
  std::vector<T> bufA(n + 2 * kGuard + 4, canary), bufB(bufA.size(), canary), bufD(bufA.size(), canary);
  std::copy(a.begin(), a.end(), bufA.begin() + offA);
  std::copy(b.begin(), b.end(), bufB.begin() + offB);
  std::vector<T>* dstBuf = layout == Layout::kInPlaceA ? &bufA : layout == Layout::kInPlaceB ? &bufB : &bufD;
  if (layout == Layout::kInPlaceA) offD = offA;
  if (layout == Layout::kInPlaceB) offD = offB;

  const std::vector<T> beforeA = bufA, beforeB = bufB;

  fn(dstBuf->data() + offD, bufA.data() + offA, bufB.data() + offB, n, divisor);

  int bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const T want = reference(op, a[i], b[i], divisor);
    const T got = (*dstBuf)[offD + i];
    if (!sameResult(want, got) && ++bad <= 3) {
      ADD_FAILURE() << redOpName(op) << " n=" << n << " " << layoutName(layout) << " divisor=" << divisor << " i=" << i
                    << ": " << show(a[i]) << " op " << show(b[i]) << " = " << show(got) << ", want " << show(want);
    }
  }
  // Nothing outside dst changes: not the guards, not an input that is not dst.
  for (size_t i = 0; i < bufA.size(); ++i) {
    const bool inDst = i >= offD && i < offD + n;
    const bool ok = (dstBuf == &bufD && inDst) || bitsOf(bufD[i]) == bitsOf(canary);
    const bool okA = (dstBuf == &bufA && inDst) || bitsOf(bufA[i]) == bitsOf(beforeA[i]);
    const bool okB = (dstBuf == &bufB && inDst) || bitsOf(bufB[i]) == bitsOf(beforeB[i]);
    if (!ok || !okA || !okB) {
      ADD_FAILURE() << redOpName(op) << " n=" << n << " " << layoutName(layout) << ": wrote outside dst at " << i;
      ++bad;
      break;
    }
  }
  return bad;
}

TYPED_TEST(ReduceFunctionTest, MatchesReferenceEveryOpSizeAndLayout) {
  using T = typename TypeParam::Type;
  const weftDataType_t type = TypeParam::type;
  for (int o = 0; o < weftNumOps; ++o) {
    const weftRedOp_t op = static_cast<weftRedOp_t>(o);
    const ReduceFn fn = reduceFunction(type, op);
    ASSERT_NE(fn, nullptr) << redOpName(op);
    const std::vector<uint32_t> divisors = op == weftAvg ? std::vector<uint32_t>{0, 1, 3, 4} : std::vector<uint32_t>{3};
    for (size_t n : {0, 1, 7, 1000, 1027}) {
      for (Layout layout :
           {Layout::kSeparate, Layout::kUnaligned, Layout::kMixedOffsets, Layout::kInPlaceA, Layout::kInPlaceB}) {
        for (uint32_t d : divisors) {
          EXPECT_EQ(runAndCheck<T>(fn, op, n, layout, d, n * 131 + o * 7 + d), 0)
              << redOpName(op) << " n=" << n << " " << layoutName(layout) << " divisor=" << d;
        }
      }
    }
  }
  // n = 0 touches nothing, not even the pointers.
  for (int o = 0; o < weftNumOps; ++o)
    reduceFunction(type, static_cast<weftRedOp_t>(o))(nullptr, nullptr, nullptr, 0, 4);
}

// The templates the device kernels instantiate, run as 3 "threads" striding over the data.
template <typename T, typename Op>
void stridedReduce(T* dst, const T* a, const T* b, size_t n) {
  for (size_t t = 0; t < 3; ++t) reduceInto<T, Op>(dst, a, b, n, t, 3);
}

TYPED_TEST(ReduceFunctionTest, DeviceTemplatesMatchReference) {
  using T = typename TypeParam::Type;
  std::vector<T> a, b;
  const size_t n = 1000;
  makeInputs<T>(n, 99, &a, &b);
  std::vector<T> d(n);
  const weftRedOp_t ops[] = {weftSum, weftProd, weftMax, weftMin, weftAvg};
  for (weftRedOp_t op : ops) {
    switch (op) {
      case weftSum:
        stridedReduce<T, OpSum<T>>(d.data(), a.data(), b.data(), n);
        break;
      case weftProd:
        stridedReduce<T, OpProd<T>>(d.data(), a.data(), b.data(), n);
        break;
      case weftMax:
        stridedReduce<T, OpMax<T>>(d.data(), a.data(), b.data(), n);
        break;
      case weftMin:
        stridedReduce<T, OpMin<T>>(d.data(), a.data(), b.data(), n);
        break;
      default:
        for (size_t t = 0; t < 3; ++t) sumDivideInto<T>(d.data(), a.data(), b.data(), n, 3, t, 3);
        break;
    }
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
      const T want = reference(op, a[i], b[i], 3);
      if (!sameResult(want, d[i]) && ++bad <= 3) {
        ADD_FAILURE() << redOpName(op) << " i=" << i << ": " << show(a[i]) << ", " << show(b[i]) << " gave "
                      << show(d[i]) << ", want " << show(want);
      }
    }
    EXPECT_EQ(bad, 0) << redOpName(op);
  }
}

// One element through the host function.
template <typename T>
T apply1(weftDataType_t type, weftRedOp_t op, T a, T b, uint32_t divisor = 1) {
  T d;
  reduceFunction(type, op)(&d, &a, &b, 1, divisor);
  return d;
}

template <typename T>
uint32_t bits1(weftDataType_t type, weftRedOp_t op, float a, float b, uint32_t divisor = 1) {
  return apply1<T>(type, op, T(a), T(b), divisor).bits;
}

TEST(ReduceKnownAnswer, IntegersWrap) {
  EXPECT_EQ(apply1<int8_t>(weftInt8, weftSum, 127, 1), -128);
  EXPECT_EQ(apply1<int8_t>(weftInt8, weftSum, -128, -1), 127);
  EXPECT_EQ(apply1<uint8_t>(weftUint8, weftSum, 200, 100), 44);
  EXPECT_EQ(apply1<int32_t>(weftInt32, weftSum, INT32_MAX, 1), INT32_MIN);
  EXPECT_EQ(apply1<uint64_t>(weftUint64, weftSum, UINT64_MAX, 2), 1u);
  EXPECT_EQ(apply1<int64_t>(weftInt64, weftSum, INT64_MIN, -1), INT64_MAX);
  EXPECT_EQ(apply1<int8_t>(weftInt8, weftProd, 16, 16), 0);
  EXPECT_EQ(apply1<int8_t>(weftInt8, weftProd, -128, -1), -128);
  EXPECT_EQ(apply1<int8_t>(weftInt8, weftProd, 11, 13), -113);  // 143 - 256
  EXPECT_EQ(apply1<uint8_t>(weftUint8, weftProd, 255, 255), 1);
  EXPECT_EQ(apply1<int32_t>(weftInt32, weftProd, 65536, 65536), 0);
  EXPECT_EQ(apply1<int32_t>(weftInt32, weftProd, 46341, 46341), -2147479015);  // 2147488281 - 2^32
  EXPECT_EQ(apply1<uint32_t>(weftUint32, weftProd, 0xFFFFFFFFu, 0xFFFFFFFFu), 1u);
  EXPECT_EQ(apply1<int64_t>(weftInt64, weftProd, INT64_MAX, 3), INT64_MAX - 2);
  EXPECT_EQ(apply1<int64_t>(weftInt64, weftMax, -5, 3), 3);
  EXPECT_EQ(apply1<uint64_t>(weftUint64, weftMin, UINT64_MAX, 3), 3u);
  EXPECT_EQ(apply1<int8_t>(weftInt8, weftMin, -128, 127), -128);
}

TEST(ReduceKnownAnswer, IntegerAvgDividesTheWrappedSumOnce) {
  EXPECT_EQ(apply1<int32_t>(weftInt32, weftAvg, 5, 6, 1), 11);  // divisor 1: an intermediate sum
  EXPECT_EQ(apply1<int32_t>(weftInt32, weftAvg, 5, 6, 0), 11);
  EXPECT_EQ(apply1<int32_t>(weftInt32, weftAvg, 5, 6, 4), 2);
  EXPECT_EQ(apply1<int32_t>(weftInt32, weftAvg, -7, 0, 2), -3);  // toward zero
  EXPECT_EQ(apply1<int64_t>(weftInt64, weftAvg, -9, 0, 4), -2);
  EXPECT_EQ(apply1<int8_t>(weftInt8, weftAvg, 100, 100, 4), -14);   // -56 / 4
  EXPECT_EQ(apply1<int8_t>(weftInt8, weftAvg, -100, -28, 200), 0);  // divisor wider than the type
  EXPECT_EQ(apply1<uint8_t>(weftUint8, weftAvg, 200, 100, 4), 11);  // 44 / 4
  EXPECT_EQ(apply1<uint32_t>(weftUint32, weftAvg, 0xFFFFFFFFu, 0xFFFFFFFFu, 3), 0x55555554u);
  EXPECT_EQ(apply1<uint64_t>(weftUint64, weftAvg, UINT64_MAX, 0, 3), UINT64_MAX / 3);
  EXPECT_EQ(apply1<int32_t>(weftInt32, weftSum, 5, 6, 4), 11);  // other ops ignore the divisor
}

TEST(ReduceKnownAnswer, FloatsNaNAndAvg) {
  const float nan = std::nanf("");
  EXPECT_TRUE(std::isnan(apply1<float>(weftFloat32, weftMax, nan, 1.0f)));
  EXPECT_TRUE(std::isnan(apply1<float>(weftFloat32, weftMax, 1.0f, nan)));
  EXPECT_TRUE(std::isnan(apply1<float>(weftFloat32, weftMin, nan, 1.0f)));
  EXPECT_TRUE(std::isnan(apply1<float>(weftFloat32, weftMin, -HUGE_VALF, nan)));
  EXPECT_TRUE(std::isnan(apply1<double>(weftFloat64, weftMax, 1.0, std::nan(""))));
  EXPECT_EQ(apply1<float>(weftFloat32, weftMax, -HUGE_VALF, 2.5f), 2.5f);
  EXPECT_EQ(apply1<float>(weftFloat32, weftAvg, 1.0f, 2.0f, 3), 1.0f);
  EXPECT_EQ(apply1<float>(weftFloat32, weftAvg, 1.0f, 2.0f, 4), 0.75f);
  EXPECT_EQ(apply1<float>(weftFloat32, weftAvg, 1.0f, 2.0f, 1), 3.0f);
  EXPECT_EQ(apply1<double>(weftFloat64, weftAvg, 0.5, 1.0, 3), 0.5);
  EXPECT_EQ(apply1<float>(weftFloat32, weftSum, 16777216.0f, 1.0f), 16777216.0f);  // tie: even
  // NaN anywhere in a vectorised block comes through.
  std::vector<float> a(1000, 1.0f), b(1000, 2.0f), d(1000);
  a[17] = nan;
  b[500] = nan;
  for (weftRedOp_t op : {weftMax, weftMin}) {
    reduceFunction(weftFloat32, op)(d.data(), a.data(), b.data(), d.size(), 1);
    EXPECT_TRUE(std::isnan(d[17]) && std::isnan(d[500])) << redOpName(op);
    EXPECT_EQ(d[18], op == weftMax ? 2.0f : 1.0f);
  }
}

TEST(ReduceKnownAnswer, ReducedPrecisionRoundsOnceInFloat) {
  // Half
  EXPECT_EQ(bits1<Half>(weftFloat16, weftSum, 65504.0f, 16.0f), 0x7C00u);  // 65520: tie, even is inf
  EXPECT_EQ(bits1<Half>(weftFloat16, weftSum, 65504.0f, 8.0f), 0x7BFFu);
  EXPECT_EQ(bits1<Half>(weftFloat16, weftSum, 2048.0f, 1.0f), 0x6800u);        // 2049: tie, even 2048
  EXPECT_EQ(bits1<Half>(weftFloat16, weftSum, 2048.0f, 3.0f), 0x6802u);        // 2051: tie, even 2052
  EXPECT_EQ(bits1<Half>(weftFloat16, weftProd, 0x1p-12f, 0x1p-12f), 0x0001u);  // 2^-24: smallest denormal
  EXPECT_EQ(bits1<Half>(weftFloat16, weftAvg, 1.0f, 1.0f, 3), 0x3955u);        // 2/3
  EXPECT_EQ(bits1<Half>(weftFloat16, weftAvg, 1.0f, 2.0f, 4), 0x3A00u);        // 0.75
  EXPECT_EQ(bits1<Half>(weftFloat16, weftMax, -1.0f, -2.0f), 0xBC00u);
  EXPECT_TRUE(std::isnan(static_cast<float>(apply1<Half>(weftFloat16, weftMax, Half::fromBits(0x7E00u), Half(1.0f)))));
  EXPECT_TRUE(std::isnan(static_cast<float>(apply1<Half>(weftFloat16, weftMin, Half(1.0f), Half::fromBits(0xFE01u)))));
  // BFloat16
  EXPECT_EQ(bits1<BFloat16>(weftBfloat16, weftSum, 256.0f, 1.0f), 0x4380u);   // 257: tie, even 256
  EXPECT_EQ(bits1<BFloat16>(weftBfloat16, weftSum, 256.0f, 3.0f), 0x4382u);   // 259: tie, even 260
  EXPECT_EQ(bits1<BFloat16>(weftBfloat16, weftProd, 3.0f, 3.0f), 0x4110u);    // 9
  EXPECT_EQ(bits1<BFloat16>(weftBfloat16, weftAvg, 3.0f, 3.0f, 4), 0x3FC0u);  // 1.5
  // Fp8E4M3 saturates
  EXPECT_EQ(bits1<Fp8E4M3>(weftFloat8e4m3, weftSum, 448.0f, 448.0f), 0x7Eu);
  EXPECT_EQ(bits1<Fp8E4M3>(weftFloat8e4m3, weftProd, 20.0f, 30.0f), 0x7Eu);
  EXPECT_EQ(bits1<Fp8E4M3>(weftFloat8e4m3, weftProd, -448.0f, 2.0f), 0xFEu);
  EXPECT_EQ(bits1<Fp8E4M3>(weftFloat8e4m3, weftSum, 256.0f, 16.0f), 0x78u);      // 272: tie, even 256
  EXPECT_EQ(bits1<Fp8E4M3>(weftFloat8e4m3, weftAvg, 448.0f, 448.0f, 4), 0x76u);  // 224, not 448/4 of a clamped sum
  EXPECT_EQ(apply1<Fp8E4M3>(weftFloat8e4m3, weftSum, Fp8E4M3::fromBits(0x7F), Fp8E4M3(1.0f)).bits & 0x7Fu, 0x7Fu);
  EXPECT_EQ(apply1<Fp8E4M3>(weftFloat8e4m3, weftMin, Fp8E4M3(1.0f), Fp8E4M3::fromBits(0xFF)).bits & 0x7Fu, 0x7Fu);
  // Fp8E5M2 overflows to inf
  EXPECT_EQ(bits1<Fp8E5M2>(weftFloat8e5m2, weftSum, 57344.0f, 57344.0f), 0x7Cu);
  EXPECT_EQ(bits1<Fp8E5M2>(weftFloat8e5m2, weftSum, 57344.0f, 4096.0f), 0x7Cu);  // 61440: tie, even is inf
  EXPECT_EQ(bits1<Fp8E5M2>(weftFloat8e5m2, weftSum, 57344.0f, 2048.0f), 0x7Bu);
  EXPECT_EQ(bits1<Fp8E5M2>(weftFloat8e5m2, weftAvg, 57344.0f, 57344.0f, 2), 0x7Bu);
}

TEST(ReduceDispatch, InvalidTypeOrOpGivesNull) {
  EXPECT_EQ(reduceFunction(static_cast<weftDataType_t>(weftNumTypes), weftSum), nullptr);
  EXPECT_EQ(reduceFunction(static_cast<weftDataType_t>(-1), weftSum), nullptr);
  EXPECT_EQ(reduceFunction(weftFloat32, static_cast<weftRedOp_t>(weftNumOps)), nullptr);
  EXPECT_EQ(reduceFunction(weftFloat32, static_cast<weftRedOp_t>(-1)), nullptr);
  for (int t = 0; t < weftNumTypes; ++t) {
    for (int o = 0; o < weftNumOps; ++o) {
      EXPECT_NE(reduceFunction(static_cast<weftDataType_t>(t), static_cast<weftRedOp_t>(o)), nullptr) << t << " " << o;
    }
  }
}

}  // namespace
}  // namespace coll
}  // namespace weft

namespace weft {
namespace coll {
namespace {

// reduceCopyFunction stores exactly what reduceFunction computes, to both destinations, in
// one pass, for every type and op, including tails shorter than a cache line.
TEST(ReduceCopy, BothOutputsEqualTheSingleOutputReduction) {
  for (int t = 0; t < weftNumTypes; ++t) {
    for (int o = 0; o < weftNumOps; ++o) {
      auto type = static_cast<weftDataType_t>(t);
      auto op = static_cast<weftRedOp_t>(o);
      size_t es = dataTypeSize(type);
      for (size_t n : {size_t{0}, size_t{1}, size_t{63}, size_t{1000}}) {
        for (uint32_t divisor : {0u, 3u}) {
          std::vector<unsigned char> a(n * es + 1), b(n * es + 1);
          for (size_t i = 0; i < a.size(); ++i) {
            // Small magnitudes keep every type finite; bytes vary so that every lane differs.
            a[i] = static_cast<unsigned char>((i * 7 + 3) % 61);
            b[i] = static_cast<unsigned char>((i * 13 + 5) % 59);
          }
          std::vector<unsigned char> one(n * es + 1, 0xee), d1(n * es + 1, 0xdd), d2(n * es + 1, 0xcc);
          reduceFunction(type, op)(one.data(), a.data(), b.data(), n, divisor);
          reduceCopyFunction(type, op)(d1.data(), d2.data(), a.data(), b.data(), n, divisor);
          EXPECT_EQ(0, std::memcmp(one.data(), d1.data(), n * es)) << "type " << t << " op " << o << " n " << n;
          EXPECT_EQ(0, std::memcmp(one.data(), d2.data(), n * es)) << "type " << t << " op " << o << " n " << n;
          EXPECT_EQ(d1[n * es], 0xdd) << "wrote past the end";
          EXPECT_EQ(d2[n * es], 0xcc) << "wrote past the end";
        }
      }
    }
  }
  EXPECT_EQ(reduceCopyFunction(static_cast<weftDataType_t>(99), weftSum), nullptr);
}

// copyStreaming: every size around the 64-byte loop and every destination alignment gives the
// source's bytes, and nothing outside the destination range is written.
TEST(CopyStreaming, EverySizeAndAlignmentCopiesExactly) {
  std::vector<uint8_t> src(4096 + 200);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t bytes : {0, 1, 15, 63, 64, 65, 127, 128, 129, 191, 1000, 4096 + 77}) {
    for (size_t dstOff = 0; dstOff < 64; dstOff += 5) {
      for (size_t srcOff : {0, 3}) {
        std::vector<uint8_t> dst(bytes + 256, 0xEE);
        uint8_t* d = dst.data() + 64 + dstOff;
        copyStreaming(d, src.data() + srcOff, bytes);
        ASSERT_EQ(std::memcmp(d, src.data() + srcOff, bytes), 0) << bytes << " bytes, dst +" << dstOff;
        for (uint8_t* p = dst.data(); p < dst.data() + dst.size(); ++p) {
          if (p < d || p >= d + bytes) {
            ASSERT_EQ(*p, 0xEE) << bytes << " bytes, dst +" << dstOff;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace coll
}  // namespace weft
