// Tests for collectives/reduce_lowp.h: every vectorised variant this CPU can run, forced one by
// one, gives bit for bit the defined results (widen, one float operation, round with
// datatypes.h, the first NaN of two kept) — NaN payloads, infinities, denormals, rounding ties
// and E4M3 saturation included — and the scalar loops of reduce.cc (HostSimd::kScalar, the code
// the reduced-precision types ran before) give the same, except that they may keep the second
// of two NaN operands. Inputs: all
// 256 x 256 fp8 pairs; all 65536 half / bfloat16 encodings against a spread of partners (special
// values, boundaries, random encodings) and against random permutations of themselves.
#include "collectives/reduce_lowp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace weft {
namespace coll {
namespace {

const HostSimd kVectorVariants[] = {HostSimd::kPortable,    HostSimd::kAvx2,       HostSimd::kAvx512,
                                    HostSimd::kAvx512Bf16, HostSimd::kAvx512Vbmi, HostSimd::kAvx512Fp16};
const weftDataType_t kLowpTypes[] = {weftFloat16, weftBfloat16, weftFloat8e4m3, weftFloat8e5m2};
const weftRedOp_t kOps[] = {weftSum, weftProd, weftMax, weftMin, weftAvg};

// The encodings as unsigned integers of the type's width, in a byte buffer.
using Encodings = std::vector<uint8_t>;

Encodings encode(const std::vector<uint32_t>& values, size_t width) {
  Encodings out(values.size() * width);
  for (size_t i = 0; i < values.size(); ++i) std::memcpy(&out[i * width], &values[i], width);  // little endian
  return out;
}

uint32_t encodingAt(const Encodings& buf, size_t i, size_t width) {
  uint32_t v = 0;
  std::memcpy(&v, &buf[i * width], width);
  return v;
}

// The defined answer for one element, written out with datatypes.h's conversions: widen, one
// float operation, round. An operation on one NaN gives that NaN; on two NaNs the first
// operand's, or the second's with `flip` (the scalar loops leave that choice to the compiler).
template <typename T>
float widenOf(uint32_t e) {
  T t;
  std::memcpy(&t, &e, sizeof(T));
  return static_cast<float>(t);
}

template <typename T>
uint32_t narrowOf(float f) {
  const T t(f);
  uint32_t out = 0;
  std::memcpy(&out, &t, sizeof(T));
  return out;
}

float arith(char op, float a, float b, bool flip, uint32_t divisor) {
  if (a != a) return (b != b && flip) ? b : a;
  if (b != b) return b;
  if (op == '*') return a * b;
  return divisor > 1 ? (a + b) / static_cast<float>(divisor) : a + b;
}

template <typename T>
uint32_t definedResult(weftRedOp_t op, uint32_t a, uint32_t b, uint32_t divisor, bool flip) {
  T ta, tb;
  std::memcpy(&ta, &a, sizeof(T));
  std::memcpy(&tb, &b, sizeof(T));
  const float fa = widenOf<T>(a), fb = widenOf<T>(b);
  switch (op) {
    case weftMax:
      return OpMax<T>::apply(ta, tb).bits;  // selects, no arithmetic
    case weftMin:
      return OpMin<T>::apply(ta, tb).bits;
    case weftProd:
      return narrowOf<T>(arith('*', fa, fb, flip, 1));
    case weftAvg:
      return narrowOf<T>(arith('+', fa, fb, flip, divisor));
    default:
      return narrowOf<T>(arith('+', fa, fb, flip, 1));
  }
}

uint32_t definedFor(weftDataType_t type, weftRedOp_t op, uint32_t a, uint32_t b, uint32_t divisor, bool flip) {
  switch (type) {
    case weftFloat16:
      return definedResult<Half>(op, a, b, divisor, flip);
    case weftBfloat16:
      return definedResult<BFloat16>(op, a, b, divisor, flip);
    case weftFloat8e4m3:
      return definedResult<Fp8E4M3>(op, a, b, divisor, flip);
    default:
      return definedResult<Fp8E5M2>(op, a, b, divisor, flip);
  }
}

std::string describe(weftDataType_t type, weftRedOp_t op, HostSimd simd, uint32_t divisor) {
  return std::string(dataTypeName(type)) + " " + redOpName(op) + " divisor " + std::to_string(divisor) + " on " +
         hostSimdName(simd);
}

// The defined results of a op b, checked against the scalar loop of reduce.cc (today's code):
// equal except where both operands are NaN, where the scalar loop may keep either NaN.
Encodings checkedReference(weftDataType_t type, weftRedOp_t op, const Encodings& a, const Encodings& b,
                           uint32_t divisor, size_t* nanChoices) {
  const size_t width = dataTypeSize(type);
  const size_t n = a.size() / width;
  Encodings scalar(a.size()), want(a.size());
  reduceFunctionFor(type, op, HostSimd::kScalar)(scalar.data(), a.data(), b.data(), n, divisor);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t ea = encodingAt(a, i, width), eb = encodingAt(b, i, width), s = encodingAt(scalar, i, width);
    const uint32_t w = definedFor(type, op, ea, eb, divisor, false);
    std::memcpy(&want[i * width], &w, width);
    if (s == w) continue;
    ++*nanChoices;
    EXPECT_EQ(s, definedFor(type, op, ea, eb, divisor, true))
        << describe(type, op, HostSimd::kScalar, divisor) << std::hex << ": a 0x" << ea << " b 0x" << eb;
  }
  return want;
}

// Runs the forced variant on a and b (one output, two outputs, in place) and compares every
// element with the defined results; returns the number of mismatches.
size_t compareVariant(weftDataType_t type, weftRedOp_t op, HostSimd simd, const Encodings& a, const Encodings& b,
                      uint32_t divisor, const Encodings& want) {
  const size_t width = dataTypeSize(type);
  const size_t n = a.size() / width;
  Encodings got(a.size()), copy1(a.size()), copy2(a.size()), inPlace = a;
  reduceFunctionFor(type, op, simd)(got.data(), a.data(), b.data(), n, divisor);
  reduceCopyFunctionFor(type, op, simd)(copy1.data(), copy2.data(), a.data(), b.data(), n, divisor);
  reduceFunctionFor(type, op, simd)(inPlace.data(), inPlace.data(), b.data(), n, divisor);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t w = encodingAt(want, i, width), g = encodingAt(got, i, width);
    const bool ok = g == w && encodingAt(copy1, i, width) == w && encodingAt(copy2, i, width) == w &&
                    encodingAt(inPlace, i, width) == w;
    if (!ok && ++bad <= 5) {
      ADD_FAILURE() << describe(type, op, simd, divisor) << std::hex << ": a 0x" << encodingAt(a, i, width) << " b 0x"
                    << encodingAt(b, i, width) << ": want 0x" << w << ", variant 0x" << g << " (copy 0x"
                    << encodingAt(copy1, i, width) << "/0x" << encodingAt(copy2, i, width) << ", in place 0x"
                    << encodingAt(inPlace, i, width) << ")";
    }
  }
  return bad;
}

// Partners for every 16-bit encoding: zeros, infinities, NaNs with payloads, the extreme
// denormals and normals, one and its neighbours (ties when added), and random encodings.
std::vector<uint32_t> partners16(weftDataType_t type) {
  std::vector<uint32_t> p = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0x3C01,
                             0xBC00, 0x3BFF, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE01,
                             0x7C01, 0x7D55, 0x4000, 0x0200, 0x1400, 0x6800, 0x5BFF, 0x2001};
  if (type == weftBfloat16) {
    p = {0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x3F80, 0x3F81, 0xBF80, 0x3F7F, 0x7F7F, 0xFF7F,
         0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x7FAA, 0x4000, 0x0040, 0x3B80, 0x4B80, 0x5F00, 0x0101};
  }
  std::mt19937 rng(16);
  for (int i = 0; i < 16; ++i) p.push_back(rng() & 0xFFFF);
  return p;
}

std::vector<HostSimd> runnableVariants() {
  std::vector<HostSimd> out;
  for (HostSimd simd : kVectorVariants) {
    if (hostSimdSupported(simd)) out.push_back(simd);
  }
  return out;
}

TEST(LowpVariants, PortableAlwaysRunsAndTheBestIsSupported) {
  EXPECT_TRUE(hostSimdSupported(HostSimd::kScalar));
  EXPECT_TRUE(hostSimdSupported(HostSimd::kPortable));
  EXPECT_TRUE(hostSimdSupported(bestHostSimd()));
  EXPECT_FALSE(hostSimdSupported(HostSimd::kCount));
  EXPECT_NE(bestHostSimd(), HostSimd::kScalar);
  std::printf("this CPU runs:");
  for (HostSimd simd : runnableVariants()) std::printf(" %s", hostSimdName(simd));
  std::printf(" (default %s)\n", hostSimdName(bestHostSimd()));
}

TEST(LowpVariants, EveryRunnableVariantHasItsOwnFunctions) {
  for (HostSimd simd : runnableVariants()) {
    for (weftDataType_t type : kLowpTypes) {
      for (weftRedOp_t op : kOps) {
        ASSERT_NE(lowpReduceFunction(type, op, simd), nullptr) << describe(type, op, simd, 0);
        ASSERT_NE(lowpReduceCopyFunction(type, op, simd), nullptr) << describe(type, op, simd, 0);
        EXPECT_NE(reduceFunctionFor(type, op, simd), reduceFunctionFor(type, op, HostSimd::kScalar));
      }
      ASSERT_NE(lowpPreMulFunction(type, simd), nullptr);
    }
    // Other types, the scalar variant and invalid ops have none.
    EXPECT_EQ(lowpReduceFunction(weftFloat32, weftSum, simd), nullptr);
    EXPECT_EQ(lowpReduceFunction(weftFloat16, static_cast<weftRedOp_t>(weftNumOps), simd), nullptr);
  }
  EXPECT_EQ(lowpReduceFunction(weftFloat16, weftSum, HostSimd::kScalar), nullptr);
  EXPECT_EQ(reduceFunction(weftBfloat16, weftSum), reduceFunctionFor(weftBfloat16, weftSum, defaultHostSimd()));
}

TEST(LowpExhaustive, Fp8AllPairsEveryOpAndVariant) {
  std::vector<uint32_t> a(65536), b(65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    a[i] = i & 0xFF;
    b[i] = i >> 8;
  }
  const Encodings ea = encode(a, 1), eb = encode(b, 1);
  for (weftDataType_t type : {weftFloat8e4m3, weftFloat8e5m2}) {
    for (weftRedOp_t op : kOps) {
      for (uint32_t divisor : {1u, 2u, 3u, 7u}) {
        if (op != weftAvg && divisor != 1) continue;
        size_t nanChoices = 0;
        const Encodings want = checkedReference(type, op, ea, eb, divisor, &nanChoices);
        for (HostSimd simd : runnableVariants()) {
          EXPECT_EQ(compareVariant(type, op, simd, ea, eb, divisor, want), 0u) << describe(type, op, simd, divisor);
        }
      }
    }
  }
}

// Every pair of finite FP8 encodings (E5M2: infinities left out too), laid out so that nearly
// every block of 64 holds no special value: the AVX-512 variants sum such blocks in whole
// registers (Fp8Avx512Sum; avx512-vbmi: Fp8VbmiSum), the others through the block path. The
// pairs of the test above put a NaN or an infinity in most blocks of 64, and would miss that
// path. Sum and avg by one (which is a sum).
TEST(LowpExhaustive, Fp8FiniteSumsInFullBlocks) {
  for (weftDataType_t type : {weftFloat8e4m3, weftFloat8e5m2}) {
    const uint32_t special = type == weftFloat8e4m3 ? 0x7F : 0x7C;  // magnitudes from here on
    std::vector<uint32_t> a, b;
    for (uint32_t x = 0; x < 256; ++x) {
      for (uint32_t y = 0; y < 256; ++y) {
        if ((x & 0x7F) >= special || (y & 0x7F) >= special) continue;
        a.push_back(x);
        b.push_back(y);
      }
    }
    const Encodings ea = encode(a, 1), eb = encode(b, 1);
    for (weftRedOp_t op : {weftSum, weftAvg}) {
      size_t nanChoices = 0;
      const Encodings want = checkedReference(type, op, ea, eb, 1, &nanChoices);
      EXPECT_EQ(nanChoices, 0u);
      for (HostSimd simd : runnableVariants()) {
        EXPECT_EQ(compareVariant(type, op, simd, ea, eb, 1, want), 0u) << describe(type, op, simd, 1);
      }
    }
  }
}

TEST(LowpExhaustive, SixteenBitEveryEncodingAgainstPartners) {
  std::vector<uint32_t> all(65536);
  std::iota(all.begin(), all.end(), 0u);
  for (weftDataType_t type : {weftFloat16, weftBfloat16}) {
    const Encodings ea = encode(all, 2);
    std::vector<Encodings> others;
    for (uint32_t p : partners16(type)) others.push_back(encode(std::vector<uint32_t>(65536, p), 2));
    std::mt19937 rng(3);
    for (int k = 0; k < 2; ++k) {
      std::vector<uint32_t> perm = all;
      std::shuffle(perm.begin(), perm.end(), rng);
      others.push_back(encode(perm, 2));
    }
    size_t nanChoices = 0;
    for (weftRedOp_t op : kOps) {
      const uint32_t divisor = op == weftAvg ? 3 : 1;
      for (const Encodings& eb : others) {
        const Encodings want = checkedReference(type, op, ea, eb, divisor, &nanChoices);
        const Encodings wantSwapped = checkedReference(type, op, eb, ea, divisor, &nanChoices);
        for (HostSimd simd : runnableVariants()) {
          ASSERT_EQ(compareVariant(type, op, simd, ea, eb, divisor, want), 0u) << describe(type, op, simd, divisor);
          ASSERT_EQ(compareVariant(type, op, simd, eb, ea, divisor, wantSwapped), 0u)
              << describe(type, op, simd, divisor);
        }
      }
    }
    std::printf("%s: the scalar loops kept the second of two NaNs in %zu results\n", dataTypeName(type), nanChoices);
  }
}

// Every one of the 2^32 pairs of 16-bit encodings, for the sums on whole registers that take
// another road to the blocks' encodings (reduce_lowp.cc): half in AVX-512 FP16 arithmetic
// (vaddph; the reason is double rounding's, reduce_lowp.h) against F16C conversions around a
// float add (avx512-vbmi), and bfloat16 rounded by vcvtneps2bf16 with its denormal fix-up
// (avx512-bf16) against the block path's bit arithmetic (avx512); the references are held to the
// defined answer above.
void expectAllPairsEqual(weftDataType_t type, HostSimd simd, HostSimd reference) {
  if (!hostSimdSupported(simd)) GTEST_SKIP() << "this CPU does not run " << hostSimdName(simd);
  const ReduceFn got = reduceFunctionFor(type, weftSum, simd);
  const ReduceFn want = reduceFunctionFor(type, weftSum, reference);
  std::vector<uint16_t> a(65536), b(65536), x(65536), y(65536);
  std::iota(b.begin(), b.end(), uint16_t{0});
  for (uint32_t v = 0; v < 65536; ++v) {
    std::fill(a.begin(), a.end(), static_cast<uint16_t>(v));
    got(x.data(), a.data(), b.data(), b.size(), 0);
    want(y.data(), a.data(), b.data(), b.size(), 0);
    ASSERT_EQ(x, y) << dataTypeName(type) << " on " << hostSimdName(simd) << ", a 0x" << std::hex << v;
  }
}

TEST(LowpExhaustive, HalfSumInFp16ArithmeticEqualsTheFloatSumForAllPairs) {
  expectAllPairsEqual(weftFloat16, HostSimd::kAvx512Fp16, HostSimd::kAvx512Vbmi);
}

TEST(LowpExhaustive, BFloat16SumInWholeRegistersEqualsTheBlocksForAllPairs) {
  expectAllPairsEqual(weftBfloat16, HostSimd::kAvx512Bf16, HostSimd::kAvx512);
}

// PreMulSum's first step for one element: round(x * s), then with an input round(p + in).
template <typename T>
uint32_t definedPreMul(uint32_t x, uint32_t s, const uint32_t* in, bool flipProduct, bool flipSum) {
  const uint32_t p = narrowOf<T>(arith('*', widenOf<T>(x), widenOf<T>(s), flipProduct, 1));
  if (in == nullptr) return p;
  return narrowOf<T>(arith('+', widenOf<T>(p), widenOf<T>(*in), flipSum, 1));
}

uint32_t definedPreMulFor(weftDataType_t type, uint32_t x, uint32_t s, const uint32_t* in, int flips) {
  const bool f1 = (flips & 1) != 0, f2 = (flips & 2) != 0;
  switch (type) {
    case weftFloat16:
      return definedPreMul<Half>(x, s, in, f1, f2);
    case weftBfloat16:
      return definedPreMul<BFloat16>(x, s, in, f1, f2);
    case weftFloat8e4m3:
      return definedPreMul<Fp8E4M3>(x, s, in, f1, f2);
    default:
      return definedPreMul<Fp8E5M2>(x, s, in, f1, f2);
  }
}

// Every encoding of the element times a spread of scalars (NaN, infinity, zero, denormal,
// fractions, large), with and without an incoming partial sum: each variant gives the defined
// results, and the scalar loop the same up to its choice between two NaNs.
void checkPreMul(weftDataType_t type, uint32_t s, bool withInput) {
  const size_t width = dataTypeSize(type);
  const uint32_t count = width == 1 ? 256 : 65536;
  std::vector<uint32_t> all(count), rev(count);
  std::iota(all.begin(), all.end(), 0u);
  std::reverse_copy(all.begin(), all.end(), rev.begin());
  const Encodings ex = encode(all, width), ein = encode(rev, width);
  const uint8_t* in = withInput ? ein.data() : nullptr;
  Encodings scalar(ex.size());
  preMulFunctionFor(type, HostSimd::kScalar)(scalar.data(), nullptr, ex.data(), in, count, &s);
  const std::string what =
      std::string(dataTypeName(type)) + " premul, scalar 0x" + std::to_string(s) + (withInput ? " with input" : "");
  for (HostSimd simd : runnableVariants()) {
    Encodings got(ex.size()), got2(ex.size());
    preMulFunctionFor(type, simd)(got.data(), got2.data(), ex.data(), in, count, &s);
    ASSERT_EQ(got, got2) << what << " on " << hostSimdName(simd);
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t want = definedPreMulFor(type, all[i], s, withInput ? &rev[i] : nullptr, 0);
      ASSERT_EQ(encodingAt(got, i, width), want) << what << " on " << hostSimdName(simd) << ", x " << all[i];
    }
  }
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t got = encodingAt(scalar, i, width);
    bool some = false;
    for (int flips = 0; flips < 4; ++flips) {
      some = some || got == definedPreMulFor(type, all[i], s, withInput ? &rev[i] : nullptr, flips);
    }
    ASSERT_TRUE(some) << what << " on the scalar loop, x " << all[i] << ": " << got;
  }
}

TEST(LowpExhaustive, PreMulEveryEncodingAgainstScalars) {
  for (weftDataType_t type : kLowpTypes) {
    std::vector<uint32_t> scalars = partners16(type);
    if (dataTypeSize(type) == 1) {
      scalars = {0x00, 0x80, 0x01, 0x7F, 0xFF, 0x7C, 0x7B, 0x38, 0x3C, 0x30, 0x44, 0xB9, 0x7E, 0x08};
    }
    for (uint32_t s : scalars) {
      for (bool withInput : {false, true}) checkPreMul(type, s, withInput);
    }
  }
}

// Sizes around the block length (32 elements) and unaligned starts: the blocks and the
// zero-padded tail together cover every element exactly once and touch nothing else.
TEST(LowpLayout, OddSizesAndUnalignedBuffersGiveTheDefinedResults) {
  std::mt19937 rng(7);
  for (weftDataType_t type : kLowpTypes) {
    const size_t width = dataTypeSize(type);
    for (size_t n : {0, 1, 31, 32, 33, 64, 95, 1000, 1027}) {
      for (size_t offset : {0, 1, 3}) {
        std::vector<uint32_t> va(n + offset), vb(n + offset);
        for (size_t i = 0; i < va.size(); ++i) {
          va[i] = rng() & (width == 1 ? 0xFF : 0xFFFF);
          vb[i] = rng() & (width == 1 ? 0xFF : 0xFFFF);
        }
        const Encodings a = encode(va, width), b = encode(vb, width);
        for (HostSimd simd : runnableVariants()) {
          for (weftRedOp_t op : kOps) {
            Encodings got(a.size() + width, 0xA5);
            reduceFunctionFor(type, op, simd)(got.data() + offset * width, a.data() + offset * width,
                                              b.data() + offset * width, n, 4);
            for (size_t i = 0; i < n + offset + 1; ++i) {
              const uint32_t fill = width == 1 ? 0xA5 : 0xA5A5;
              const uint32_t want =
                  (i < offset || i == n + offset) ? fill : definedFor(type, op, va[i], vb[i], 4, false);
              ASSERT_EQ(encodingAt(got, i, width), want) << describe(type, op, simd, 4) << " n " << n << " at " << i;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace coll
}  // namespace weft
