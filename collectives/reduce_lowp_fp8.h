// The FP8 sums of reduce_lowp.cc that run whole blocks of 64 (AVX2: 32) finite elements in
// registers: Fp8Avx512Sum (AVX-512 with F16C), Fp8VbmiSum (the same with VBMI and GFNI byte
// work) and Fp8Avx2Sum. Included by reduce_lowp.cc only, which runs them and falls back to its
// block path for blocks holding a special value; x86 with GCC's target attributes only.
#ifndef WEFT_COLLECTIVES_REDUCE_LOWP_FP8_H_
#define WEFT_COLLECTIVES_REDUCE_LOWP_FP8_H_

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "collectives/datatypes.h"

#define WEFT_TARGET_AVX2 __attribute__((target("avx2,f16c")))
#define WEFT_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c")))
#define WEFT_TARGET_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c,avx512bf16")))
#define WEFT_TARGET_AVX512VBMI \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c,avx512bf16,avx512vbmi,gfni")))
#define WEFT_TARGET_AVX512FP16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c,avx512bf16,avx512vbmi,gfni,avx512fp16")))

namespace weft {
namespace coll {
namespace lowp_fp8 {

// FP8 sums 64 elements at a time without leaving registers, for blocks whose inputs are all
// finite (E4M3: no NaN; E5M2: no infinity or NaN): the others, rare, go through the block
// path. Each encoding becomes a half exactly (E4M3 as the value / 256: the sum of two scaled
// values is the scaled sum, so nothing is multiplied back), two halves are added in float
// (exact for E4M3; for E5M2 rounded once, as the block path does), the sum goes to half rounded
// toward zero with a sticky last bit when the float had bits below the half's mantissa (the sums
// that fall below half's normal range are multiples of the FP8 denormal step, exact in half),
// and the half rounds to nearest even on its top bits, as in Fp8Avx512Cvt::narrow. E4M3
// saturates; an E5M2 sum past the largest finite rounds to infinity through the same addition.
// The results are those of the block path bit for bit (LowpExhaustive.Fp8FiniteSumsInFullBlocks).
template <typename T>
struct Fp8Avx512Sum {
  static constexpr bool kE4M3 = std::is_same<T, Fp8E4M3>::value;
  static constexpr int kDrop = kE4M3 ? 7 : 8;
  // 32 encodings, zero-extended to 16 bits, to halves.
  WEFT_TARGET_AVX512 static inline __m512i toHalf(__m512i w) {
    if constexpr (kE4M3) {
      // S.EEEE.MMM << 7 puts E and M in a half's fields (bias 15 for 7: the value / 256); the
      // sign lands on bit 14, and adding it once more first carries it to bit 15.
      return _mm512_slli_epi16(_mm512_add_epi16(w, _mm512_and_si512(w, _mm512_set1_epi16(0x80))), 7);
    } else {
      return _mm512_slli_epi16(w, 8);
    }
  }
  // 16 floats to halves rounded toward zero, and which were inexact (bits below the half's).
  WEFT_TARGET_AVX512 static inline __m256i towardZero(__m512 f, __mmask16* inexact) {
    *inexact = _mm512_test_epi32_mask(_mm512_castps_si512(f), _mm512_set1_epi32(0x1FFF));
    return _mm512_cvtps_ph(f, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  }
  // 32 halves of a and of b: their sums as halves toward zero, with the inexact lanes.
  WEFT_TARGET_AVX512 static inline __m512i add(__m512i ha, __m512i hb, __mmask32* inexact) {
    const __m512 lo =
        _mm512_add_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(ha)), _mm512_cvtph_ps(_mm512_castsi512_si256(hb)));
    const __m512 hi = _mm512_add_ps(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(ha, 1)),
                                    _mm512_cvtph_ps(_mm512_extracti64x4_epi64(hb, 1)));
    __mmask16 inexactLo, inexactHi;
    const __m256i l = towardZero(lo, &inexactLo), h = towardZero(hi, &inexactHi);
    *inexact = _mm512_kunpackw(inexactHi, inexactLo);
    return _mm512_inserti64x4(_mm512_castsi256_si512(l), h, 1);
  }
  // 32 halves (toward zero, with their inexact lanes) to encodings in 16-bit lanes.
  WEFT_TARGET_AVX512 static inline __m512i toFp8(__m512i h, __mmask32 inexact) {
    h = _mm512_mask_mov_epi16(h, inexact, _mm512_or_si512(h, _mm512_set1_epi16(1)));
    const __m512i abs = _mm512_and_si512(h, _mm512_set1_epi16(0x7FFF));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi16(abs, kDrop), _mm512_set1_epi16(1));
    const __m512i bias = _mm512_set1_epi16((1 << (kDrop - 1)) - 1);
    __m512i r = _mm512_srli_epi16(_mm512_add_epi16(_mm512_add_epi16(abs, bias), lsb), kDrop);
    if constexpr (kE4M3) r = _mm512_min_epu16(r, _mm512_set1_epi16(0x7E));
    return _mm512_ternarylogic_epi32(r, _mm512_srli_epi16(h, 8), _mm512_set1_epi16(0x80), 0xF8);  // r | sign
  }
  // Sums whole blocks of 64 from the start; returns how many elements it did.
  template <typename Block>
  WEFT_TARGET_AVX512 static inline size_t run(uint8_t* dst, uint8_t* dst2, const uint8_t* a, const uint8_t* b,
                                                   size_t n, const Block& block) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i magnitude = _mm512_set1_epi8(0x7F);
    const __m512i special = _mm512_set1_epi8(kE4M3 ? 0x7F : 0x7C);
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
      const __m512i va = _mm512_loadu_si512(a + i), vb = _mm512_loadu_si512(b + i);
      if ((_mm512_cmpge_epu8_mask(_mm512_and_si512(va, magnitude), special) |
           _mm512_cmpge_epu8_mask(_mm512_and_si512(vb, magnitude), special)) != 0) {
        block(i, 64);
        continue;
      }
      __mmask32 inexact0, inexact1;
      const __m512i s0 =
          add(toHalf(_mm512_unpacklo_epi8(va, zero)), toHalf(_mm512_unpacklo_epi8(vb, zero)), &inexact0);
      const __m512i s1 =
          add(toHalf(_mm512_unpackhi_epi8(va, zero)), toHalf(_mm512_unpackhi_epi8(vb, zero)), &inexact1);
      const __m512i out = _mm512_packus_epi16(toFp8(s0, inexact0), toFp8(s1, inexact1));
      _mm512_storeu_si512(dst + i, out);
      if (dst2 != nullptr) _mm512_storeu_si512(dst2 + i, out);
    }
    return i;
  }
};
// The FP8 sum of Fp8Avx512Sum with byte-level instructions (AVX-512 VBMI and GFNI), same
// results bit for bit. Widening: an E5M2 encoding is the high byte of its half (one unpack
// with zero); an E4M3 one is the half S.EEEE.MMM << 7 (the value / 256), whose two bytes are
// bit permutations of the encoding, one GF(2) affine map each (gf2p8affineqb), then unpacked
// together. Narrowing: the half toward zero with its sticky bit rounds to nearest even on its
// own sign-magnitude bits (the carry stays below the sign: sums stay under 0x7C80), and the
// encoding is that half's high byte (E5M2), or the high byte of the half shifted left once,
// capped at 0x7E, with the sign put back (E4M3); vpermt2b gathers those bytes of 64 lanes
// into element order in one instruction, where Fp8Avx512Sum shifts and packs.
template <typename T>
struct Fp8VbmiSum {
  static constexpr bool kE4M3 = std::is_same<T, Fp8E4M3>::value;
  static constexpr int kDrop = kE4M3 ? 7 : 8;
  using Base = Fp8Avx512Sum<T>;
  // The 8x8 bit matrix of gf2p8affineqb as a qword: rows[i] selects the input bits of output
  // bit i, and row i sits in byte 7 - i.
  static constexpr uint64_t matrix(const uint8_t (&rows)[8]) {
    uint64_t m = 0;
    for (int i = 0; i < 8; ++i) m |= static_cast<uint64_t>(rows[i]) << (8 * (7 - i));
    return m;
  }
  // E4M3 S.EEEE.MMM: the half's high byte is S | EEEEMM (bits 7, then 6..1 down by one), its
  // low byte the last M in bit 7.
  static constexpr uint8_t kHighRows[8] = {0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x00, 0x80};
  static constexpr uint8_t kLowRows[8] = {0, 0, 0, 0, 0, 0, 0, 0x01};
  // 64 encodings to 32 halves of bytes 0-7 of each 128-bit lane (lo) and of bytes 8-15 (hi).
  WEFT_TARGET_AVX512VBMI static inline void toHalves(__m512i v, __m512i* lo, __m512i* hi) {
    if constexpr (kE4M3) {
      const __m512i high = _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(matrix(kHighRows)), 0);
      const __m512i low = _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(matrix(kLowRows)), 0);
      *lo = _mm512_unpacklo_epi8(low, high);
      *hi = _mm512_unpackhi_epi8(low, high);
    } else {
      *lo = _mm512_unpacklo_epi8(_mm512_setzero_si512(), v);
      *hi = _mm512_unpackhi_epi8(_mm512_setzero_si512(), v);
    }
  }
  // 32 halves toward zero with their inexact lanes, rounded to nearest even at bit kDrop in
  // place (the low bits left over are dropped by the caller's byte selection).
  WEFT_TARGET_AVX512VBMI static inline __m512i rounded(__m512i h, __mmask32 inexact) {
    h = _mm512_mask_mov_epi16(h, inexact, _mm512_or_si512(h, _mm512_set1_epi16(1)));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi16(h, kDrop), _mm512_set1_epi16(1));
    return _mm512_add_epi16(_mm512_add_epi16(h, _mm512_set1_epi16((1 << (kDrop - 1)) - 1)), lsb);
  }
  // Where each element's byte is, for vpermt2b over the two rounded vectors (lo, hi): element
  // 16L + k of 128-bit lane L is word 8L + k of lo (k < 8) or of hi (k >= 8, less 8); its high
  // byte is 2 * word + 1, and hi's bytes are numbered from 64.
  WEFT_TARGET_AVX512VBMI static inline __m512i highBytes() {
    alignas(64) uint8_t idx[64];
    for (int e = 0; e < 64; ++e) {
      const int lane = e / 16, k = e % 16;
      idx[e] = static_cast<uint8_t>((k < 8 ? 0 : 64) + 2 * (8 * lane + k % 8) + 1);
    }
    return _mm512_load_si512(idx);
  }
  // The two rounded vectors of 32 halves to 64 encodings in element order.
  WEFT_TARGET_AVX512VBMI static inline __m512i encodings(__m512i lo, __m512i hi, __m512i idx) {
    if constexpr (kE4M3) {
      const __m512i signs = _mm512_permutex2var_epi8(lo, idx, hi);
      __m512i mag = _mm512_permutex2var_epi8(_mm512_slli_epi16(lo, 1), idx, _mm512_slli_epi16(hi, 1));
      mag = _mm512_min_epu8(mag, _mm512_set1_epi8(0x7E));
      return _mm512_ternarylogic_epi32(mag, signs, _mm512_set1_epi8(static_cast<char>(0x80)), 0xF8);  // mag | sign
    } else {
      return _mm512_permutex2var_epi8(lo, idx, hi);
    }
  }
  template <typename Block>
  WEFT_TARGET_AVX512VBMI static inline size_t run(uint8_t* dst, uint8_t* dst2, const uint8_t* a,
                                                       const uint8_t* b, size_t n, const Block& block) {
    const __m512i magnitude = _mm512_set1_epi8(0x7F);
    const __m512i special = _mm512_set1_epi8(kE4M3 ? 0x7F : 0x7C);
    const __m512i idx = highBytes();
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
      const __m512i va = _mm512_loadu_si512(a + i), vb = _mm512_loadu_si512(b + i);
      if ((_mm512_cmpge_epu8_mask(_mm512_and_si512(va, magnitude), special) |
           _mm512_cmpge_epu8_mask(_mm512_and_si512(vb, magnitude), special)) != 0) {
        block(i, 64);
        continue;
      }
      __m512i alo, ahi, blo, bhi;
      toHalves(va, &alo, &ahi);
      toHalves(vb, &blo, &bhi);
      __mmask32 inexactLo, inexactHi;
      const __m512i lo = Base::add(alo, blo, &inexactLo), hi = Base::add(ahi, bhi, &inexactHi);
      const __m512i out = encodings(rounded(lo, inexactLo), rounded(hi, inexactHi), idx);
      _mm512_storeu_si512(dst + i, out);
      if (dst2 != nullptr) _mm512_storeu_si512(dst2 + i, out);
    }
    return i;
  }
};
// The same sum on AVX2 and F16C, 32 elements at a time: no mask registers, so the sticky bit
// goes into the float itself (bit 13, the half's last, set when any bit below it is) before
// the conversion toward zero carries it over.
template <typename T>
struct Fp8Avx2Sum {
  static constexpr bool kE4M3 = std::is_same<T, Fp8E4M3>::value;
  static constexpr int kDrop = kE4M3 ? 7 : 8;
  WEFT_TARGET_AVX2 static inline __m256i toHalf(__m256i w) {
    if constexpr (kE4M3) {
      return _mm256_slli_epi16(_mm256_add_epi16(w, _mm256_and_si256(w, _mm256_set1_epi16(0x80))), 7);
    } else {
      return _mm256_slli_epi16(w, 8);
    }
  }
  WEFT_TARGET_AVX2 static inline __m128i towardZero(__m256 f) {
    const __m256i bits = _mm256_castps_si256(f);
    const __m256i low = _mm256_and_si256(bits, _mm256_set1_epi32(0x1FFF));
    const __m256i sticky = _mm256_and_si256(_mm256_add_epi32(low, _mm256_set1_epi32(0x1FFF)), _mm256_set1_epi32(0x2000));
    return _mm256_cvtps_ph(_mm256_castsi256_ps(_mm256_or_si256(bits, sticky)), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  }
  // 16 halves of a and of b: their sums as halves toward zero, sticky in the last bit.
  WEFT_TARGET_AVX2 static inline __m256i add(__m256i ha, __m256i hb) {
    const __m256 lo =
        _mm256_add_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(ha)), _mm256_cvtph_ps(_mm256_castsi256_si128(hb)));
    const __m256 hi =
        _mm256_add_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(ha, 1)), _mm256_cvtph_ps(_mm256_extracti128_si256(hb, 1)));
    return _mm256_set_m128i(towardZero(hi), towardZero(lo));
  }
  WEFT_TARGET_AVX2 static inline __m256i toFp8(__m256i h) {
    const __m256i abs = _mm256_and_si256(h, _mm256_set1_epi16(0x7FFF));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi16(abs, kDrop), _mm256_set1_epi16(1));
    const __m256i bias = _mm256_set1_epi16((1 << (kDrop - 1)) - 1);
    __m256i r = _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(abs, bias), lsb), kDrop);
    if constexpr (kE4M3) r = _mm256_min_epu16(r, _mm256_set1_epi16(0x7E));
    return _mm256_or_si256(r, _mm256_and_si256(_mm256_srli_epi16(h, 8), _mm256_set1_epi16(0x80)));
  }
  template <typename Block>
  WEFT_TARGET_AVX2 static inline size_t run(uint8_t* dst, uint8_t* dst2, const uint8_t* a, const uint8_t* b,
                                                 size_t n, const Block& block) {
    const __m256i zero = _mm256_setzero_si256();
    const __m256i magnitude = _mm256_set1_epi8(0x7F);
    const __m256i belowSpecial = _mm256_set1_epi8(kE4M3 ? 0x7E : 0x7B);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
      const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
      const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
      const __m256i special = _mm256_or_si256(_mm256_cmpgt_epi8(_mm256_and_si256(va, magnitude), belowSpecial),
                                              _mm256_cmpgt_epi8(_mm256_and_si256(vb, magnitude), belowSpecial));
      if (!_mm256_testz_si256(special, special)) {
        block(i, 32);
        continue;
      }
      const __m256i s0 = add(toHalf(_mm256_unpacklo_epi8(va, zero)), toHalf(_mm256_unpacklo_epi8(vb, zero)));
      const __m256i s1 = add(toHalf(_mm256_unpackhi_epi8(va, zero)), toHalf(_mm256_unpackhi_epi8(vb, zero)));
      const __m256i out = _mm256_packus_epi16(toFp8(s0), toFp8(s1));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), out);
      if (dst2 != nullptr) _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst2 + i), out);
    }
    return i;
  }
};

}  // namespace lowp_fp8
}  // namespace coll
}  // namespace weft

#endif  // x86 and GCC
#endif  // WEFT_COLLECTIVES_REDUCE_LOWP_FP8_H_
