// The block loop every reduced-precision host variant runs (reduce_lowp.cc, which says how):
// the portable block conversions, each op's float operation on the lanes of a block, the bodies
// that combine one block, and the loops over a range (forBlocks, runSum, runReduce, runPreMul).
// Plain inline functions and templates: reduce_lowp.cc compiles them into each variant's entry
// points under the variant's target attribute (flatten). Included by reduce_lowp.cc only, with
// reduce_lowp_fp8.h (the FP8 whole-register sums) on x86.
#ifndef WEFT_COLLECTIVES_REDUCE_LOWP_BLOCKS_H_
#define WEFT_COLLECTIVES_REDUCE_LOWP_BLOCKS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "collectives/datatypes.h"
#include "collectives/reduce.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define WEFT_LOWP_X86 1
#include <immintrin.h>
// GCC 12's AVX-512 conversion intrinsics pass _mm256_undefined_si256() as their merge source,
// which -Wmaybe-uninitialized reports at every use; the value is never read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The whole-register FP8 sums, and the target attributes of the variants (WEFT_TARGET_*).
#include "collectives/reduce_lowp_fp8.h"
#else
#define WEFT_LOWP_X86 0
#endif
// The helpers are plain inline functions; each variant's entry points are flattened (every call
// inlined, recursively), which compiles the helpers for the entry point's instruction set.
#define WEFT_INLINE inline
#if defined(__GNUC__)
#define WEFT_FLATTEN __attribute__((flatten))
#else
#define WEFT_FLATTEN
#endif

namespace weft {
namespace coll {
namespace lowp {

constexpr size_t kBlock = 32;

// The storage format and encoding width of each reduced type.
template <typename T>
struct LowpTraits;
template <>
struct LowpTraits<Half> {
  using Format = detail::HalfFormat;
  using Bits = uint16_t;
};
template <>
struct LowpTraits<BFloat16> {
  using Format = detail::BFloat16Format;
  using Bits = uint16_t;
};
template <>
struct LowpTraits<Fp8E4M3> {
  using Format = detail::Fp8E4M3Format;
  using Bits = uint8_t;
};
template <>
struct LowpTraits<Fp8E5M2> {
  using Format = detail::Fp8E5M2Format;
  using Bits = uint8_t;
};

inline uint32_t floatBits(float f) { return bitCast<uint32_t>(f); }
inline float bitsFloat(uint32_t u) { return bitCast<float>(u); }

// MiniFloat::toFloat without branches: every case computed, one selected.
template <typename F>
WEFT_INLINE uint32_t widenBits(uint32_t bits) {
  if constexpr (std::is_same<F, detail::BFloat16Format>::value) {
    // The top half of a float; a NaN is quieted (its payload kept).
    const uint32_t u = bits << 16;
    return (u & 0x7FFFFFFFu) > 0x7F800000u ? u | 0x400000u : u;
  }
  const uint32_t sign = (bits >> (F::kExponentBits + F::kMantissaBits)) << 31;
  const uint32_t e = (bits >> F::kMantissaBits) & F::kExpMask;
  const uint32_t m = bits & F::kManMask;
  const bool special = e == F::kExpMask && (F::kHasInfinity || m == F::kManMask);
  const uint32_t specialOut = (F::kHasInfinity && m == 0) ? 0x7F800000u : 0x7FC00000u | (m << F::kShift);
  const uint32_t normalOut = ((e + F::kBiasDiff) << 23) | (m << F::kShift);
  uint32_t denormalOut;
  if constexpr (F::kBiasDiff == 0) {
    denormalOut = m << F::kShift;  // a float denormal
  } else {
    // m * 2^(1 - bias - manBits): exact, and a float normal (m == 0 gives +0).
    constexpr float kUnit = 1.0f / static_cast<float>(1ull << (F::kBias - 1 + F::kMantissaBits));
    denormalOut = floatBits(static_cast<float>(static_cast<int32_t>(m)) * kUnit);
  }
  const uint32_t out = special ? specialOut : (e != 0 ? normalOut : denormalOut);
  return sign | out;
}

// MiniFloat::fromFloat without branches (same arithmetic, every path computed, one selected).
template <typename F>
WEFT_INLINE uint32_t narrowBits(uint32_t u) {
  if constexpr (std::is_same<F, detail::BFloat16Format>::value) {
    // Normal and denormal results round the same way here (the exponent ranges are the same);
    // a carry into the exponent is the right result, and never reaches the sign.
    const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    return (u & 0x7FFFFFFFu) > 0x7F800000u ? (u >> 16) | 0x40u : rounded;
  }
  const uint32_t sign = (u >> 31) << (F::kExponentBits + F::kMantissaBits);
  const uint32_t abs = u & 0x7FFFFFFFu;
  const uint32_t nanOut = F::kHasInfinity ? F::kNaN | ((abs & 0x7FFFFFu) >> F::kShift) : F::kNaN;
  // Normal results (and overflow): rebias, round the low kShift bits to nearest even.
  const uint32_t v = abs - (F::kBiasDiff << 23);
  uint32_t normal = (v + ((1u << (F::kShift - 1)) - 1) + ((v >> F::kShift) & 1)) >> F::kShift;
  if (F::kHasInfinity) normal = normal > F::kInf ? F::kInf : normal;
  // Denormal results: shift the significand right by s (the scalar code's s > 25 gives 0, and
  // so does any s from 25 to 31 here, as m < 2^24). Lanes that are not denormal results may
  // have any s0, 0 and wrapped values included; they are clamped into 1..31 to keep the shifts
  // defined (their result is not selected).
  const uint32_t e = abs >> 23;
  const uint32_t m = (abs & 0x7FFFFFu) | (e != 0 ? 0x800000u : 0u);
  const uint32_t s0 = F::kBiasDiff + 1 + F::kShift - (e != 0 ? e : 1u);
  const uint32_t s = s0 - 1u > 30u ? 31u : s0;
  const uint32_t denormal = (m + ((1u << (s - 1)) - 1) + ((m >> s) & 1)) >> s;
  uint32_t r = abs >= ((F::kBiasDiff + 1) << 23) ? normal : denormal;
  if (!F::kHasInfinity) r = abs > F::kMaxFiniteFloatBits ? F::kMaxFinite : r;  // satfinite
  r = abs > 0x7F800000u ? nanOut : r;
  return sign | r;
}

// Portable block conversions.
template <typename T>
struct PortableCvt {
  using F = typename LowpTraits<T>::Format;
  using Bits = typename LowpTraits<T>::Bits;
  static WEFT_INLINE void widen(const Bits* in, float* out) {
    for (size_t k = 0; k < kBlock; ++k) out[k] = bitsFloat(widenBits<F>(in[k]));
  }
  static WEFT_INLINE void narrow(const float* in, Bits* out) {
    for (size_t k = 0; k < kBlock; ++k) out[k] = static_cast<Bits>(narrowBits<F>(floatBits(in[k])));
  }
};

// The float operation of each op (sum, prod, the last step of avg, premul's product and sum).
// An arithmetic operation on one NaN returns that NaN quieted, on every CPU we build for; on two
// NaNs, x86 returns its first source operand, and which operand a compiler puts first is its
// own choice (the operations commute for it): the scalar loops of reduce.cc keep sometimes the
// one, sometimes the other NaN, even between the blocks and the tail of one loop. The lanes
// decide it themselves: with a NaN first operand the result is that operand (already quiet:
// widening quiets). Every other input gives the scalar loops' result bit for bit.
// The result is computed before the select, whatever a is: GCC (-ftrapping-math) will not
// if-convert, and so not vectorise, a float operation that only runs on one side of a branch.
WEFT_INLINE float pickFirstNaN(float a, float result) { return a != a ? a : result; }

struct SumLanes {
  WEFT_INLINE float operator()(float a, float b) const { return pickFirstNaN(a, a + b); }
};
struct ProdLanes {
  WEFT_INLINE float operator()(float a, float b) const { return pickFirstNaN(a, a * b); }
};
struct SumDivideLanes {
  float divisor;
  WEFT_INLINE float operator()(float a, float b) const { return pickFirstNaN(a, (a + b) / divisor); }
};

// Max and min select an operand's encoding; a NaN first operand wins, as in OpMax / OpMin
// (both comparisons evaluated: no branch).
struct MaxSelect {
  WEFT_INLINE bool operator()(float a, float b) const { return (a > b) | (a != a); }
};
struct MinSelect {
  WEFT_INLINE bool operator()(float a, float b) const { return (a < b) | (a != a); }
};

// The bodies: one block of encodings in (a, b), one out, in local arrays.
// out = round(lanes(widen(a), widen(b))).
template <typename Cvt, typename Lanes>
struct ArithBody {
  Lanes lanes;
  using Bits = typename Cvt::Bits;
  WEFT_INLINE void operator()(const Bits* a, const Bits* b, Bits* out) const {
    float fa[kBlock], fb[kBlock];
    Cvt::widen(a, fa);
    Cvt::widen(b, fb);
    for (size_t k = 0; k < kBlock; ++k) fa[k] = lanes(fa[k], fb[k]);
    Cvt::narrow(fa, out);
  }
};

// out = select(widen(a), widen(b)) ? a : b.
template <typename Cvt, typename Select>
struct SelectBody {
  Select select;
  using Bits = typename Cvt::Bits;
  WEFT_INLINE void operator()(const Bits* a, const Bits* b, Bits* out) const {
    float fa[kBlock], fb[kBlock];
    Cvt::widen(a, fa);
    Cvt::widen(b, fb);
    for (size_t k = 0; k < kBlock; ++k) {
      const Bits keepA = static_cast<Bits>(0) - static_cast<Bits>(select(fa[k], fb[k]));  // all ones or 0
      out[k] = static_cast<Bits>((a[k] & keepA) | (b[k] & ~keepA));
    }
  }
};

// PreMulSum: out = round(widen(round(widen(x) * s)) + widen(in)), or without `in` just the
// rounded product (preMul, then OpSum: two roundings, never fused).
template <typename Cvt>
struct PreMulBody {
  float s;
  bool withInput;
  using Bits = typename Cvt::Bits;
  WEFT_INLINE void operator()(const Bits* x, const Bits* in, Bits* out) const {
    float fx[kBlock], fin[kBlock];
    Cvt::widen(x, fx);
    for (size_t k = 0; k < kBlock; ++k) fx[k] = ProdLanes{}(fx[k], s);
    Cvt::narrow(fx, out);
    if (!withInput) return;
    Cvt::widen(out, fx);
    Cvt::widen(in, fin);
    for (size_t k = 0; k < kBlock; ++k) fx[k] = SumLanes{}(fx[k], fin[k]);
    Cvt::narrow(fx, out);
  }
};

// A whole block's encodings into dst (16-byte aligned) with stores that bypass the caches.
template <typename Bits>
WEFT_INLINE void streamBlock(Bits* dst, const Bits* out) {
  static_assert(kBlock * sizeof(Bits) % 16 == 0, "a block is whole 16-byte stores");
#if WEFT_LOWP_X86
  for (size_t k = 0; k < kBlock * sizeof(Bits); k += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(reinterpret_cast<char*>(dst) + k),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const char*>(out) + k)));
  }
#else
  std::memcpy(dst, out, kBlock * sizeof(Bits));
#endif
}

// One block of `count` <= kBlock elements at offset i: load (zero-padded), body, store
// (kStream: a whole block, streamed into dst).
template <bool kStream, typename Bits, typename Body>
WEFT_INLINE void oneBlock(Bits* dst, Bits* dst2, const Bits* a, const Bits* b, size_t i, size_t count,
                          const Body& body) {
  Bits ba[kBlock] = {}, bb[kBlock] = {}, out[kBlock];
  std::memcpy(ba, a + i, count * sizeof(Bits));
  if (b != nullptr) std::memcpy(bb, b + i, count * sizeof(Bits));
  body(ba, bb, out);
  if constexpr (kStream) {
    streamBlock(dst + i, out);
  } else {
    std::memcpy(dst + i, out, count * sizeof(Bits));
  }
  if (dst2 != nullptr) std::memcpy(dst2 + i, out, count * sizeof(Bits));
}

// Runs body over a and b (b may be null) block by block, storing to dst and, if not null,
// dst2. All loads of a block precede its stores, so dst may alias a or b. The tail (n % kBlock)
// goes through the same body in zero-padded arrays, so every element follows one rule (and any
// split of the range gives the same encodings). kStream: the whole blocks from dst's first
// 64-byte boundary on go to dst with non-temporal stores (each then fills whole cache lines),
// the elements before it and the tail with normal ones; a dst not aligned to its element
// streams nothing. The caller fences.
template <typename T, bool kStream = false, typename Body>
WEFT_INLINE void forBlocks(void* dstv, void* dst2v, const void* av, const void* bv, size_t n, const Body& body) {
  using Bits = typename Body::Bits;
  static_assert(sizeof(Bits) == sizeof(T), "the body's encodings are the type's");
  Bits* dst = static_cast<Bits*>(dstv);
  Bits* dst2 = static_cast<Bits*>(dst2v);
  const Bits* a = static_cast<const Bits*>(av);
  const Bits* b = static_cast<const Bits*>(bv);
  size_t i = 0;
  if constexpr (kStream) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(dst);
    size_t head = at % sizeof(Bits) != 0 ? n : ((64 - (at & 63)) & 63) / sizeof(Bits);
    head = head < n ? head : n;
    for (; i + kBlock <= head; i += kBlock) oneBlock<false>(dst, dst2, a, b, i, kBlock, body);
    if (i < head) oneBlock<false>(dst, dst2, a, b, i, head - i, body);
    for (i = head; i + kBlock <= n; i += kBlock) oneBlock<true>(dst, dst2, a, b, i, kBlock, body);
  } else {
    for (; i + kBlock <= n; i += kBlock) oneBlock<false>(dst, dst2, a, b, i, kBlock, body);
  }
  if (i < n) oneBlock<false>(dst, dst2, a, b, i, n - i, body);
}

// A converter with a whole-register sum beside its blocks (Fp8Avx512Sum) names it here;
// kStreams: the sum also has runStream, which stores dst with non-temporal stores.
template <typename Cvt>
struct WholeRegisterSum {
  static constexpr bool kHas = false;
  static constexpr bool kStreams = false;
};

// dst (and dst2) = a + b: through the converter's whole-register sum where it has one (for
// kStream, one that streams), the rest (and the blocks it leaves) block by block.
template <typename Cvt, typename T, bool kStream = false>
WEFT_INLINE void runSum(void* dstv, void* dst2v, const void* av, const void* bv, size_t n) {
  using Whole = WholeRegisterSum<Cvt>;
  if constexpr (Whole::kHas && (!kStream || Whole::kStreams)) {
    using Bits = typename Cvt::Bits;
    Bits* dst = static_cast<Bits*>(dstv);
    Bits* dst2 = static_cast<Bits*>(dst2v);
    const Bits* a = static_cast<const Bits*>(av);
    const Bits* b = static_cast<const Bits*>(bv);
    auto blocks = [&](size_t first, size_t count) {
      forBlocks<T>(dst + first, dst2 == nullptr ? nullptr : dst2 + first, a + first, b + first, count,
                   ArithBody<Cvt, SumLanes>{});
    };
    size_t done;
    if constexpr (kStream) {
      done = Whole::Sum::runStream(dst, dst2, a, b, n, blocks);
    } else {
      done = Whole::Sum::run(dst, dst2, a, b, n, blocks);
    }
    if (done < n) blocks(done, n - done);
  } else {
    forBlocks<T, kStream>(dstv, dst2v, av, bv, n, ArithBody<Cvt, SumLanes>{});
  }
}

template <typename Cvt, typename T, int kOp, bool kStream = false>
WEFT_INLINE void runReduce(void* dst, void* dst2, const void* a, const void* b, size_t n, uint32_t divisor) {
  if (kOp == weftProd) {
    forBlocks<T, kStream>(dst, dst2, a, b, n, ArithBody<Cvt, ProdLanes>{});
  } else if (kOp == weftMax) {
    forBlocks<T, kStream>(dst, dst2, a, b, n, SelectBody<Cvt, MaxSelect>{});
  } else if (kOp == weftMin) {
    forBlocks<T, kStream>(dst, dst2, a, b, n, SelectBody<Cvt, MinSelect>{});
  } else if (kOp == weftAvg && divisor > 1) {
    forBlocks<T, kStream>(dst, dst2, a, b, n, ArithBody<Cvt, SumDivideLanes>{{static_cast<float>(divisor)}});
  } else {
    runSum<Cvt, T, kStream>(dst, dst2, a, b, n);
  }
}

template <typename Cvt, typename T>
WEFT_INLINE void runPreMul(void* dst, void* dst2, const void* x, const void* in, size_t n, const void* scalar) {
  if (n == 0) return;  // touches nothing, the scalar included
  T s;
  std::memcpy(&s, scalar, sizeof(T));
  forBlocks<T>(dst, dst2, x, in, n, PreMulBody<Cvt>{static_cast<float>(s), in != nullptr});
}

}  // namespace lowp
}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_REDUCE_LOWP_BLOCKS_H_
