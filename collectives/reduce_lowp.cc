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
//
// That loop, with the portable converters, is reduce_lowp_blocks.h's; here are the native
// converters of the x86 variants, the variants, and the pick of a variant's entry point for a
// (type, op) (through dispatch.h).
#include "collectives/reduce_lowp.h"

#include <cstring>
#include <type_traits>

#include "collectives/dispatch.h"
#include "collectives/reduce_lowp_blocks.h"

namespace weft {
namespace coll {
namespace lowp {

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

}  // namespace lowp

using lowp::forVariant;
using lowp::PreMulOf;
using lowp::ReduceOf;
using lowp::Entry;

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
