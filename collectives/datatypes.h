// Element types of the collectives: the storage types for the reduced-precision floats
// (binary16, bfloat16, OCP FP8 E4M3 and E5M2) and facts about weftDataType_t / weftRedOp_t.
//
// The conversions are written once, in plain C++ integer arithmetic, as WEFT_HOST_DEVICE code:
// the host executor and the unit tests use them here, and the CUDA / HIP kernels compile the
// same source (no vendor intrinsics, no <cmath>). Reductions on these types convert to float,
// compute, and round back once (reduce.h).
//
// float -> small conversion rounds to nearest, ties to even; NaN stays NaN; denormals are
// exact in both directions. Overflow gives +-inf for Half, BFloat16 and Fp8E5M2. Fp8E4M3 has
// no infinity: values (and infinities) beyond the largest finite 448 saturate to +-448, which
// is the "satfinite" convention of CUDA's __nv_fp8_e4m3 and therefore of NCCL.
#ifndef WEFT_COLLECTIVES_DATATYPES_H_
#define WEFT_COLLECTIVES_DATATYPES_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "device/platform.h"
#include "weft/weft.h"

namespace weft {
namespace coll {

// Reinterprets the bytes of `from` as a To (std::bit_cast is C++20; memcpy compiles to a
// register move on every target, device included).
template <typename To, typename From>
WEFT_HOST_DEVICE inline To bitCast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bitCast needs types of equal size");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

namespace detail {

// A binary floating-point format with 1 sign bit, kExpBits exponent bits (IEEE bias) and
// kManBits mantissa bits, narrower than float. kHasInf: IEEE-like (all-ones exponent is inf or
// NaN); otherwise the OCP E4M3 kind, where only S.1111.111 is NaN and there is no infinity.
template <int kExpBits, int kManBits, bool kHasInf>
struct MiniFloat {
  static constexpr int kExponentBits = kExpBits;
  static constexpr int kMantissaBits = kManBits;
  static constexpr bool kHasInfinity = kHasInf;
  static constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  static constexpr uint32_t kBiasDiff = 127 - kBias;  // float exponent field - ours
  static constexpr int kShift = 23 - kManBits;        // mantissa bits dropped from a float
  static constexpr uint32_t kExpMask = (1u << kExpBits) - 1;
  static constexpr uint32_t kManMask = (1u << kManBits) - 1;
  static constexpr uint32_t kSignBit = 1u << (kExpBits + kManBits);
  static constexpr uint32_t kInf = kExpMask << kManBits;
  static constexpr uint32_t kNaN = kHasInf ? kInf | (1u << (kManBits - 1)) : kInf | kManMask;
  static constexpr uint32_t kMaxFinite = kHasInf ? kInf - 1 : kNaN - 1;
  // kMaxFinite as the bits of a float (exact: every value of ours is a float).
  static constexpr uint32_t kMaxFiniteFloatBits =
      (((kMaxFinite >> kManBits) + kBiasDiff) << 23) | ((kMaxFinite & kManMask) << kShift);

  WEFT_HOST_DEVICE static uint32_t fromFloat(float f) {
    const uint32_t u = bitCast<uint32_t>(f);
    const uint32_t sign = (u >> 31) << (kExpBits + kManBits);
    const uint32_t abs = u & 0x7FFFFFFFu;
    if (abs > 0x7F800000u) {  // NaN: keep it quiet, and keep what fits of the payload
      if (kHasInf) return sign | kNaN | ((abs & 0x7FFFFFu) >> kShift);
      return sign | kNaN;
    }
    if (!kHasInf && abs > kMaxFiniteFloatBits) return sign | kMaxFinite;  // satfinite
    uint32_t r;
    if (abs >= (kBiasDiff + 1) << 23) {
      // A normal number of ours (or an overflow): rebias, then round away the low kShift
      // bits to nearest even; a carry out of the mantissa correctly bumps the exponent.
      const uint32_t v = abs - (kBiasDiff << 23);
      r = (v + ((1u << (kShift - 1)) - 1) + ((v >> kShift) & 1)) >> kShift;
      if (kHasInf && r > kInf) r = kInf;
    } else {
      // Below our smallest normal: the result is a denormal count of our smallest unit,
      // 2^(1 - kBias - kManBits); shift the full significand right by the distance, rounding.
      uint32_t e = abs >> 23;
      uint32_t m = abs & 0x7FFFFFu;
      if (e != 0) {
        m |= 0x800000u;
      } else {
        e = 1;  // a float denormal has the exponent of the smallest normal, no hidden bit
      }
      const uint32_t s = kBiasDiff + 1 + kShift - e;  // > kShift here
      // m < 2^24, so from a shift of 25 on, m / 2^s < 1/2 rounds to zero.
      r = s > 25 ? 0 : (m + ((1u << (s - 1)) - 1) + ((m >> s) & 1)) >> s;
    }
    return sign | r;
  }

  WEFT_HOST_DEVICE static float toFloat(uint32_t bits) {
    const uint32_t sign = (bits >> (kExpBits + kManBits)) << 31;
    uint32_t e = (bits >> kManBits) & kExpMask;
    uint32_t m = bits & kManMask;
    uint32_t out;
    if (e == kExpMask && (kHasInf || m == kManMask)) {
      out = (kHasInf && m == 0) ? 0x7F800000u : 0x7FC00000u | (m << kShift);
    } else if (e != 0) {
      out = ((e + kBiasDiff) << 23) | (m << kShift);
    } else if (m == 0) {
      out = 0;
    } else if (kBiasDiff == 0) {
      out = m << kShift;  // same exponent range as float: our denormal is a float denormal
    } else {
      // Our denormal is a float normal: normalise the significand.
      e = kBiasDiff + 1;
      while ((m & (1u << kManBits)) == 0) {
        m <<= 1;
        --e;
      }
      out = (e << 23) | ((m & kManMask) << kShift);
    }
    return bitCast<float>(sign | out);
  }
};

using HalfFormat = MiniFloat<5, 10, true>;
using BFloat16Format = MiniFloat<8, 7, true>;
using Fp8E4M3Format = MiniFloat<4, 3, false>;
using Fp8E5M2Format = MiniFloat<5, 2, true>;

}  // namespace detail

// The storage types: trivially copyable, the size of the element, conversions explicit.
// fromBits() builds one from its encoding; `bits` is the encoding.

// IEEE 754 binary16: bias 15, max finite 65504.
struct Half {
  uint16_t bits;
  Half() = default;
  WEFT_HOST_DEVICE explicit Half(float f) : bits(static_cast<uint16_t>(detail::HalfFormat::fromFloat(f))) {}
  WEFT_HOST_DEVICE explicit operator float() const { return detail::HalfFormat::toFloat(bits); }
  WEFT_HOST_DEVICE static Half fromBits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

// bfloat16: the top half of a float (bias 127, 7 mantissa bits).
struct BFloat16 {
  uint16_t bits;
  BFloat16() = default;
  WEFT_HOST_DEVICE explicit BFloat16(float f) : bits(static_cast<uint16_t>(detail::BFloat16Format::fromFloat(f))) {}
  WEFT_HOST_DEVICE explicit operator float() const { return detail::BFloat16Format::toFloat(bits); }
  WEFT_HOST_DEVICE static BFloat16 fromBits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

// OCP FP8 E4M3: bias 7, no infinities, NaN = S.1111.111, max finite 448 (0x7E); saturating.
struct Fp8E4M3 {
  uint8_t bits;
  Fp8E4M3() = default;
  WEFT_HOST_DEVICE explicit Fp8E4M3(float f) : bits(static_cast<uint8_t>(detail::Fp8E4M3Format::fromFloat(f))) {}
  WEFT_HOST_DEVICE explicit operator float() const { return detail::Fp8E4M3Format::toFloat(bits); }
  WEFT_HOST_DEVICE static Fp8E4M3 fromBits(uint8_t b) {
    Fp8E4M3 h;
    h.bits = b;
    return h;
  }
};

// OCP FP8 E5M2: bias 15, IEEE-like (inf = S.11111.00), max finite 57344 (0x7B).
struct Fp8E5M2 {
  uint8_t bits;
  Fp8E5M2() = default;
  WEFT_HOST_DEVICE explicit Fp8E5M2(float f) : bits(static_cast<uint8_t>(detail::Fp8E5M2Format::fromFloat(f))) {}
  WEFT_HOST_DEVICE explicit operator float() const { return detail::Fp8E5M2Format::toFloat(bits); }
  WEFT_HOST_DEVICE static Fp8E5M2 fromBits(uint8_t b) {
    Fp8E5M2 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2, "16-bit storage types must be 2 bytes");
static_assert(sizeof(Fp8E4M3) == 1 && sizeof(Fp8E5M2) == 1, "fp8 storage types must be 1 byte");

inline bool isValidDataType(int type) { return type >= 0 && type < weftNumTypes; }
inline bool isValidRedOp(int op) { return op >= 0 && op < weftNumOps; }

// Bytes per element; 0 for an invalid type.
WEFT_HOST_DEVICE inline size_t dataTypeSize(weftDataType_t type) {
  switch (type) {
    case weftInt8:
    case weftUint8:
    case weftFloat8e4m3:
    case weftFloat8e5m2:
      return 1;
    case weftFloat16:
    case weftBfloat16:
      return 2;
    case weftInt32:
    case weftUint32:
    case weftFloat32:
      return 4;
    case weftInt64:
    case weftUint64:
    case weftFloat64:
      return 8;
    default:
      return 0;
  }
}

// The names nccl-tests prints ("float", "bfloat16", "f8e4m3", ...); "invalid" otherwise.
inline const char* dataTypeName(weftDataType_t type) {
  switch (type) {
    case weftInt8:
      return "int8";
    case weftUint8:
      return "uint8";
    case weftInt32:
      return "int32";
    case weftUint32:
      return "uint32";
    case weftInt64:
      return "int64";
    case weftUint64:
      return "uint64";
    case weftFloat16:
      return "half";
    case weftFloat32:
      return "float";
    case weftFloat64:
      return "double";
    case weftBfloat16:
      return "bfloat16";
    case weftFloat8e4m3:
      return "f8e4m3";
    case weftFloat8e5m2:
      return "f8e5m2";
    default:
      return "invalid";
  }
}

// "sum", "prod", "max", "min", "avg"; "premulsum" for the ops weftRedOpCreatePreMulSum makes
// (values from weftNumOps up); "invalid" otherwise.
inline const char* redOpName(weftRedOp_t op) {
  switch (op) {
    case weftSum:
      return "sum";
    case weftProd:
      return "prod";
    case weftMax:
      return "max";
    case weftMin:
      return "min";
    case weftAvg:
      return "avg";
    default:
      return static_cast<int>(op) >= weftNumOps ? "premulsum" : "invalid";
  }
}

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_DATATYPES_H_
