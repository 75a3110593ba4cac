// The vectorised reduced-precision host reductions of reduce_lowp.h.
//
// One loop shape for every variant: take a block of kBlock elements of each input into local
// arrays (all loads of a block precede its stores, so dst may alias a or b), widen them to
// float, combine lane by lane, round back, store. A converter (Cvt) supplies widen and narrow
// for a block; the portable converter is branch-free C++ that the compiler vectorises, the
// native ones use F16C / AVX-512 conversions. Each variant's entry points are instances of the
// same templates under a different target attribute: GCC compiles everything inlined into
// them for that instruction set (flatten). The tail (n % kBlock) runs through the same code in
// a zero-padded block.
#include "collectives/reduce_lowp.h"

#include <cstring>
#include <type_traits>

#include "collectives/dispatch.h"

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
namespace {

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
#if WEFT_LOWP_X86
// Half through F16C on 8 lanes (rounding from the immediate: nearest-even whatever MXCSR says,
// as the integer code of datatypes.h; a NaN keeps its sign and top payload bits and is quieted,
// also as there).
struct HalfF16cCvt {
  using Bits = uint16_t;
  WEFT_TARGET_AVX2 static WEFT_INLINE void widen(const uint16_t* in, float* out) {
    for (size_t k = 0; k < kBlock; k += 8) {
      _mm256_storeu_ps(out + k, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + k))));
    }
  }
  WEFT_TARGET_AVX2 static WEFT_INLINE void narrow(const float* in, uint16_t* out) {
    for (size_t k = 0; k < kBlock; k += 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + k), _mm256_cvtps_ph(_mm256_loadu_ps(in + k), 0));
    }
  }
};

// Half through the AVX-512 forms on 16 lanes.
struct HalfAvx512Cvt {
  using Bits = uint16_t;
  WEFT_TARGET_AVX512 static WEFT_INLINE void widen(const uint16_t* in, float* out) {
    for (size_t k = 0; k < kBlock; k += 16) {
      _mm512_storeu_ps(out + k, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + k))));
    }
  }
  WEFT_TARGET_AVX512 static WEFT_INLINE void narrow(const float* in, uint16_t* out) {
    for (size_t k = 0; k < kBlock; k += 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + k), _mm512_cvtps_ph(_mm512_loadu_ps(in + k), 0));
    }
  }
};

// BFloat16 rounded by vcvtneps2bf16 (nearest-even; NaN quieted with its top payload bits, as
// datatypes.h does). The instruction flushes float denormal inputs to zero where datatypes.h
// rounds them; lanes holding one are redone with the bit arithmetic (sign | the rounded top
// half, the scalar code's denormal path for bfloat16).
struct BFloat16Avx512Cvt {
  using Bits = uint16_t;
  WEFT_TARGET_AVX512BF16 static WEFT_INLINE void widen(const uint16_t* in, float* out) {
    PortableCvt<BFloat16>::widen(in, out);
  }
  // 16 floats to their encodings.
  WEFT_TARGET_AVX512BF16 static WEFT_INLINE __m256i narrow16(__m512 x) {
    const __m512i one = _mm512_set1_epi32(1);
    const __m256bh rounded = _mm512_cvtneps_pbh(x);
    __m256i r;
    std::memcpy(&r, &rounded, sizeof r);
    const __m512i xi = _mm512_castps_si512(x);
    const __m512i abs = _mm512_and_si512(xi, _mm512_set1_epi32(0x7FFFFFFF));
    // 0 < abs < 2^23: abs - 1 < 0x7FFFFF unsigned.
    const __mmask16 denormal = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(abs, one), _mm512_set1_epi32(0x7FFFFF));
    if (denormal != 0) {
      const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(xi, 16), one);
      const __m512i sum = _mm512_add_epi32(_mm512_add_epi32(xi, _mm512_set1_epi32(0x7FFF)), lsb);
      r = _mm256_mask_blend_epi16(denormal, r, _mm512_cvtepi32_epi16(_mm512_srli_epi32(sum, 16)));
    }
    return r;
  }
  WEFT_TARGET_AVX512BF16 static WEFT_INLINE void narrow(const float* in, uint16_t* out) {
    for (size_t k = 0; k < kBlock; k += 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + k), narrow16(_mm512_loadu_ps(in + k)));
    }
  }
};

// The loops of a 2-byte sum on whole registers, 32 elements at a time, for a struct whose
// sum32(a, b) combines two registers of encodings; ATTR: its variant's target. run stores dst
// (and dst2) with normal stores; runStream stores dst with non-temporal stores from its first
// 64-byte boundary, leaving the elements before it to the blocks; both leave the tail (fewer
// than 32) to the caller.
#define WEFT_WHOLE_REGISTER_SUM16(ATTR)                                                                             \
  template <bool kStream>                                                                                         \
  ATTR static WEFT_INLINE size_t from(size_t i, uint16_t* dst, uint16_t* dst2, const uint16_t* a, const uint16_t* b, \
                                      size_t n) {                                                                 \
    for (; i + 32 <= n; i += 32) {                                                                                \
      const __m512i out = sum32(_mm512_loadu_si512(a + i), _mm512_loadu_si512(b + i));                            \
      if constexpr (kStream) {                                                                                    \
        _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), out);                                           \
      } else {                                                                                                    \
        _mm512_storeu_si512(dst + i, out);                                                                        \
      }                                                                                                           \
      if (dst2 != nullptr) _mm512_storeu_si512(dst2 + i, out);                                                    \
    }                                                                                                             \
    return i;                                                                                                     \
  }                                                                                                               \
  template <typename Block>                                                                                       \
  ATTR static WEFT_INLINE size_t run(uint16_t* dst, uint16_t* dst2, const uint16_t* a, const uint16_t* b, size_t n, \
                                     const Block&) {                                                              \
    return from<false>(0, dst, dst2, a, b, n);                                                                    \
  }                                                                                                               \
  template <typename Block>                                                                                       \
  ATTR static WEFT_INLINE size_t runStream(uint16_t* dst, uint16_t* dst2, const uint16_t* a, const uint16_t* b,     \
                                           size_t n, const Block& block) {                                        \
    const uintptr_t at = reinterpret_cast<uintptr_t>(dst);                                                        \
    if (at % sizeof(uint16_t) != 0) return 0; /* never on whole lines: all blocks, normal stores */               \
    const size_t head = ((64 - (at & 63)) & 63) / sizeof(uint16_t);                                               \
    if (head + 32 > n) return 0;                                                                                  \
    if (head > 0) block(0, head);                                                                                 \
    return from<true>(head, dst, dst2, a, b, n);                                                                  \
  }

// The bfloat16 sum on whole registers, the same encodings as the blocks (ArithBody with
// SumLanes): widen (the top half of a float), add, a NaN first operand kept (quieted, as
// widening quiets it) whichever operand the add returned, narrow.
struct Bf16Avx512Sum {
  WEFT_TARGET_AVX512BF16 static WEFT_INLINE __m512 widen16(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  WEFT_TARGET_AVX512BF16 static WEFT_INLINE __m256i sum16(__m256i ha, __m256i hb) {
    const __m512 fa = widen16(ha), fb = widen16(hb);
    const __mmask16 nanA = _mm512_cmp_ps_mask(fa, fa, _CMP_UNORD_Q);
    const __m512i r = _mm512_castps_si512(_mm512_add_ps(fa, fb));
    const __m512i kept = _mm512_mask_or_epi32(r, nanA, _mm512_castps_si512(fa), _mm512_set1_epi32(0x400000));
    return BFloat16Avx512Cvt::narrow16(_mm512_castsi512_ps(kept));
  }
  WEFT_TARGET_AVX512BF16 static WEFT_INLINE __m512i sum32(__m512i va, __m512i vb) {
    const __m256i lo = sum16(_mm512_castsi512_si256(va), _mm512_castsi512_si256(vb));
    const __m256i hi = sum16(_mm512_extracti64x4_epi64(va, 1), _mm512_extracti64x4_epi64(vb, 1));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  WEFT_WHOLE_REGISTER_SUM16(WEFT_TARGET_AVX512BF16)
};

// Half in the FP16 variant: the AVX-512 blocks for every other op, and sums in AVX-512 FP16's
// own arithmetic (reduce_lowp.h says why the encodings are the same): vaddph with its rounding
// fixed to nearest-even by the immediate, whatever MXCSR says, as the blocks' conversions. A NaN
// first operand is kept (quieted) whichever operand the compiler made the instruction's first.
struct HalfFp16Cvt : HalfAvx512Cvt {};
struct HalfFp16Sum {
  WEFT_TARGET_AVX512FP16 static WEFT_INLINE __m512i sum32(__m512i va, __m512i vb) {
    const __m512h ha = _mm512_castsi512_ph(va);
    const __mmask32 nanA = _mm512_cmp_ph_mask(ha, ha, _CMP_UNORD_Q);
    const __m512i r = _mm512_castph_si512(
        _mm512_add_round_ph(ha, _mm512_castsi512_ph(vb), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return _mm512_mask_blend_epi16(nanA, r, _mm512_or_si512(va, _mm512_set1_epi16(0x200)));
  }
  WEFT_WHOLE_REGISTER_SUM16(WEFT_TARGET_AVX512FP16)
};

template <>
struct WholeRegisterSum<HalfFp16Cvt> {
  static constexpr bool kHas = true;
  static constexpr bool kStreams = true;
  using Sum = HalfFp16Sum;
};

template <>
struct WholeRegisterSum<BFloat16Avx512Cvt> {
  static constexpr bool kHas = true;
  static constexpr bool kStreams = true;
  using Sum = Bf16Avx512Sum;
};
// FP8 through the half conversions on 16 lanes. Widening: an E5M2 encoding is the top byte of
// a half; an E4M3 one, with its exponent field placed in a half's, is the value / 256 (its
// NaN, S.1111.111, is set apart). Narrowing rounds once, exactly: the value (scaled by 1/256
// for E4M3) goes to half rounded toward zero with a sticky last bit when inexact ("round to
// odd", 8 bits finer than FP8 at every magnitude, denormals included), and that half rounds
// to nearest even on its top bits, which is the direct rounding. NaN and E4M3's saturation
// are selected as in datatypes.h.
template <typename T>
struct Fp8Avx512Cvt {
  using Bits = uint8_t;
  static constexpr bool kE4M3 = std::is_same<T, Fp8E4M3>::value;
  static constexpr int kDrop = kE4M3 ? 7 : 8;  // half bits below the FP8 mantissa
  WEFT_TARGET_AVX512 static WEFT_INLINE void widen(const uint8_t* in, float* out) {
    for (size_t k = 0; k < kBlock; k += 16) {
      const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + k)));
      if constexpr (kE4M3) {
        const __m256i mag = _mm256_and_si256(b, _mm256_set1_epi16(0x7F));
        const __m256i sign = _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8);
        const __m512 f =
            _mm512_mul_ps(_mm512_cvtph_ps(_mm256_or_si256(_mm256_slli_epi16(mag, 7), sign)), _mm512_set1_ps(256.0f));
        const __mmask16 nan = _mm256_cmpeq_epi16_mask(mag, _mm256_set1_epi16(0x7F));
        const __m512 nanValue = _mm512_or_ps(_mm512_and_ps(f, _mm512_castsi512_ps(_mm512_set1_epi32(INT32_MIN))),
                                             _mm512_castsi512_ps(_mm512_set1_epi32(0x7FF00000)));
        _mm512_storeu_ps(out + k, _mm512_mask_blend_ps(nan, f, nanValue));
      } else {
        _mm512_storeu_ps(out + k, _mm512_cvtph_ps(_mm256_slli_epi16(b, 8)));
      }
    }
  }
  WEFT_TARGET_AVX512 static WEFT_INLINE void narrow(const float* in, uint8_t* out) {
    for (size_t k = 0; k < kBlock; k += 16) {
      const __m512i xi = _mm512_castps_si512(_mm512_loadu_ps(in + k));
      const __m512i abs = _mm512_and_si512(xi, _mm512_set1_epi32(0x7FFFFFFF));
      __m512 a = _mm512_castsi512_ps(abs);
      if (kE4M3) a = _mm512_mul_ps(a, _mm512_set1_ps(1.0f / 256.0f));
      const __m256i t = _mm512_cvtps_ph(a, _MM_FROUND_TO_ZERO);
      const __mmask16 inexact = _mm512_cmp_ps_mask(_mm512_cvtph_ps(t), a, _CMP_NEQ_UQ);
      const __m256i odd = _mm256_mask_mov_epi16(t, inexact, _mm256_or_si256(t, _mm256_set1_epi16(1)));
      const __m256i lsb = _mm256_and_si256(_mm256_srli_epi16(odd, kDrop), _mm256_set1_epi16(1));
      const __m256i bias = _mm256_set1_epi16((1 << (kDrop - 1)) - 1);
      __m256i r = _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(odd, bias), lsb), kDrop);
      const __mmask16 nan = _mm512_cmpgt_epu32_mask(abs, _mm512_set1_epi32(0x7F800000));
      if constexpr (kE4M3) {
        const __mmask16 saturate = _mm512_cmpgt_epu32_mask(abs, _mm512_set1_epi32(0x43E00000));  // 448.0f
        r = _mm256_mask_mov_epi16(r, saturate, _mm256_set1_epi16(0x7E));
        r = _mm256_mask_mov_epi16(r, nan, _mm256_set1_epi16(0x7F));
      } else {
        const __m512i payload = _mm512_srli_epi32(_mm512_and_si512(abs, _mm512_set1_epi32(0x7FFFFF)), 21);
        const __m256i nanOut = _mm512_cvtepi32_epi16(_mm512_or_si512(payload, _mm512_set1_epi32(0x7E)));
        r = _mm256_mask_mov_epi16(r, nan, nanOut);
      }
      const __m256i sign = _mm512_cvtepi32_epi16(_mm512_srli_epi32(xi, 31));
      r = _mm256_or_si256(r, _mm256_slli_epi16(sign, 7));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + k), _mm256_cvtepi16_epi8(r));
    }
  }
};
// FP8 in the AVX2 variant: the portable blocks, and Fp8Avx2Sum for sums.
template <typename T>
struct Fp8Avx2Cvt : PortableCvt<T> {};

template <typename T>
struct WholeRegisterSum<Fp8Avx2Cvt<T>> {
  static constexpr bool kHas = true;
  static constexpr bool kStreams = false;
  using Sum = lowp_fp8::Fp8Avx2Sum<T>;
};
template <typename T>
struct WholeRegisterSum<Fp8Avx512Cvt<T>> {
  static constexpr bool kHas = true;
  static constexpr bool kStreams = false;
  using Sum = lowp_fp8::Fp8Avx512Sum<T>;
};
// FP8 in the VBMI variant: the AVX-512 blocks, and Fp8VbmiSum for sums.
template <typename T>
struct Fp8VbmiCvt : Fp8Avx512Cvt<T> {};
template <typename T>
struct WholeRegisterSum<Fp8VbmiCvt<T>> {
  static constexpr bool kHas = true;
  static constexpr bool kStreams = false;
  using Sum = lowp_fp8::Fp8VbmiSum<T>;
};
#endif  // WEFT_LOWP_X86

// A variant: its converter per type, and its entry points compiled under ATTR.
#define WEFT_LOWP_VARIANT(NAME, ATTR, CVT)                                                                            \
  struct NAME {                                                                                                       \
    template <typename T, int kOp>                                                                                    \
    WEFT_FLATTEN ATTR static void reduce(void* d, const void* a, const void* b, size_t n, uint32_t divisor) {         \
      runReduce<CVT<T>, T, kOp>(d, nullptr, a, b, n, divisor);                                                        \
    }                                                                                                                 \
    template <typename T, int kOp>                                                                                    \
    WEFT_FLATTEN ATTR static void reduceCopy(void* d, void* d2, const void* a, const void* b, size_t n,               \
                                             uint32_t divisor) {                                                      \
      runReduce<CVT<T>, T, kOp>(d, d2, a, b, n, divisor);                                                             \
    }                                                                                                                 \
    template <typename T, int kOp>                                                                                    \
    WEFT_FLATTEN ATTR static void reduceStream(void* d, void* d2, const void* a, const void* b, size_t n,             \
                                               uint32_t divisor) {                                                    \
      runReduce<CVT<T>, T, kOp, true>(d, d2, a, b, n, divisor);                                                       \
      fenceStreams(); /* before a flag another rank reads */                                                          \
    }                                                                                                                 \
    template <typename T>                                                                                             \
    WEFT_FLATTEN ATTR static void preMul(void* d, void* d2, const void* x, const void* in, size_t n, const void* s) { \
      runPreMul<CVT<T>, T>(d, d2, x, in, n, s);                                                                       \
    }                                                                                                                 \
  }

#define WEFT_NO_ATTR
WEFT_LOWP_VARIANT(PortableVariant, WEFT_NO_ATTR, PortableCvt);

#if WEFT_LOWP_X86
template <typename T>
using Avx2Cvt = std::conditional_t<std::is_same<T, Half>::value, HalfF16cCvt,
                                   std::conditional_t<std::is_same<T, BFloat16>::value, PortableCvt<T>, Fp8Avx2Cvt<T>>>;
template <typename T>
using Avx512Cvt =
    std::conditional_t<std::is_same<T, Half>::value, HalfAvx512Cvt,
                       std::conditional_t<std::is_same<T, BFloat16>::value, PortableCvt<T>, Fp8Avx512Cvt<T>>>;
template <typename T>
using Avx512Bf16Cvt = std::conditional_t<std::is_same<T, BFloat16>::value, BFloat16Avx512Cvt, Avx512Cvt<T>>;
template <typename T>
using Avx512VbmiCvt = std::conditional_t<sizeof(T) == 1, Fp8VbmiCvt<T>, Avx512Bf16Cvt<T>>;
template <typename T>
using Avx512Fp16Cvt = std::conditional_t<std::is_same<T, Half>::value, HalfFp16Cvt, Avx512VbmiCvt<T>>;

WEFT_LOWP_VARIANT(Avx2Variant, WEFT_TARGET_AVX2, Avx2Cvt);
WEFT_LOWP_VARIANT(Avx512Variant, WEFT_TARGET_AVX512, Avx512Cvt);
WEFT_LOWP_VARIANT(Avx512Bf16Variant, WEFT_TARGET_AVX512BF16, Avx512Bf16Cvt);
WEFT_LOWP_VARIANT(Avx512VbmiVariant, WEFT_TARGET_AVX512VBMI, Avx512VbmiCvt);
WEFT_LOWP_VARIANT(Avx512Fp16Variant, WEFT_TARGET_AVX512FP16, Avx512Fp16Cvt);
#endif

// Calls pick.template operator()<T>() for the reduced-precision storage type of `type` (dispatch.h);
// nullptr for the others.
template <typename Pick>
auto forLowpType(weftDataType_t type, Pick pick) -> decltype(pick.template operator()<Half>()) {
  using Fn = decltype(pick.template operator()<Half>());
  return withDataType(type, Fn{nullptr}, [&](auto t) -> Fn {
    using T = typename decltype(t)::type;
    if constexpr (IsReducedFloat<T>::value) {
      return pick.template operator()<T>();
    } else {
      return nullptr;
    }
  });
}

// A variant's entry points: reduce, reduceCopy, and reduceCopy streaming its first output.
enum class Entry { kReduce, kCopy, kStream };

// V's entry point for T and an op known at compile time.
template <typename V, Entry kEntry, typename T, int kOp>
constexpr auto entryPoint() {
  if constexpr (kEntry == Entry::kReduce) {
    return &V::template reduce<T, kOp>;
  } else if constexpr (kEntry == Entry::kCopy) {
    return &V::template reduceCopy<T, kOp>;
  } else {
    return &V::template reduceStream<T, kOp>;
  }
}

template <typename V, Entry kEntry>
struct PickReduce {
  weftRedOp_t op;
  // The op's entry point (dispatch.h); premul-sum has its own (PickPreMul).
  template <typename T>
  auto operator()() const -> decltype(entryPoint<V, kEntry, T, weftSum>()) {
    using Fn = decltype(entryPoint<V, kEntry, T, weftSum>());
    return withRedOp<T>(op, Fn{nullptr}, [](auto tag) -> Fn {
      constexpr int kOp = decltype(tag)::kOp;
      if constexpr (kOp < weftNumOps) {
        return entryPoint<V, kEntry, T, kOp>();
      } else {
        return nullptr;
      }
    });
  }
};

template <typename V>
struct PickPreMul {
  template <typename T>
  PreMulFn operator()() const {
    return V::template preMul<T>;
  }
};

// Calls pick.template operator()<Variant>() for a supported variant other than kScalar.
template <typename Fn, typename Pick>
Fn forVariant(HostSimd simd, Pick pick) {
  if (simd == HostSimd::kScalar || !hostSimdSupported(simd)) return nullptr;
  switch (simd) {
#if WEFT_LOWP_X86
    case HostSimd::kAvx2:
      return pick.template operator()<Avx2Variant>();
    case HostSimd::kAvx512:
      return pick.template operator()<Avx512Variant>();
    case HostSimd::kAvx512Bf16:
      return pick.template operator()<Avx512Bf16Variant>();
    case HostSimd::kAvx512Vbmi:
      return pick.template operator()<Avx512VbmiVariant>();
    case HostSimd::kAvx512Fp16:
      return pick.template operator()<Avx512Fp16Variant>();
#endif
    default:
      return pick.template operator()<PortableVariant>();
  }
}

// The kEntry function of a type and op, in variant V. Streaming: the 2-byte types only (FP8 sums
// have whole-register kernels that store normally; reduceStreaming streams them piecewise).
template <Entry kEntry>
struct ReduceOf {
  weftDataType_t type;
  weftRedOp_t op;
  template <typename V>
  auto operator()() const {
    const bool fp8 = type == weftFloat8e4m3 || type == weftFloat8e5m2;
    return kEntry == Entry::kStream && fp8 ? nullptr : forLowpType(type, PickReduce<V, kEntry>{op});
  }
};

struct PreMulOf {
  weftDataType_t type;
  template <typename V>
  PreMulFn operator()() const {
    return forLowpType(type, PickPreMul<V>{});
  }
};

}  // namespace

ReduceFn lowpReduceFunction(weftDataType_t type, weftRedOp_t op, HostSimd simd) {
  return forVariant<ReduceFn>(simd, ReduceOf<Entry::kReduce>{type, op});
}

ReduceCopyFn lowpReduceCopyFunction(weftDataType_t type, weftRedOp_t op, HostSimd simd) {
  return forVariant<ReduceCopyFn>(simd, ReduceOf<Entry::kCopy>{type, op});
}

PreMulFn lowpPreMulFunction(weftDataType_t type, HostSimd simd) { return forVariant<PreMulFn>(simd, PreMulOf{type}); }

ReduceCopyFn lowpReduceStreamFunction(weftDataType_t type, weftRedOp_t op, HostSimd simd) {
#if WEFT_LOWP_X86
  return forVariant<ReduceCopyFn>(simd, ReduceOf<Entry::kStream>{type, op});
#else
  (void)type, (void)op, (void)simd;
  return nullptr;
#endif
}

}  // namespace coll
}  // namespace weft
