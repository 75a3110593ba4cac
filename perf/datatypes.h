// Datatypes and reduction ops as weft-perf names, sizes and reads/writes them. Half, bfloat16
// and the two fp8 formats are stored as raw bits; converting to them rounds to nearest even,
// as the library does after each reduction step.
#ifndef WEFT_PERF_DATATYPES_H_
#define WEFT_PERF_DATATYPES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "weft/weft.h"

namespace weft::perf {

const char* typeName(weftDataType_t t);  // nccl-tests spelling: int8 ... half float double bfloat16 f8e4m3 f8e5m2
size_t typeSize(weftDataType_t t);
bool typeFromName(const char* name, weftDataType_t* t);  // also float16, float32, bf16, fp8_e4m3, ...
std::string allTypeNames();                              // "int8|uint8|...|f8e5m2"
bool typeIsFloat(weftDataType_t t);
bool typeIsSigned(weftDataType_t t);

const char* opName(weftRedOp_t op);  // sum prod max min avg
bool opFromName(const char* name, weftRedOp_t* op);

// A binary floating-point format with an implicit leading bit. ieeeSpecials: the all-ones
// exponent holds inf/NaN (half, bfloat16, e5m2); otherwise only S.1111.111 is NaN and
// there is no inf (e4m3, the OCP "FN" variant).
struct MiniFloatFormat {
  int expBits;
  int mantBits;
  bool ieeeSpecials;
};
inline constexpr MiniFloatFormat kHalfFormat{5, 10, true};
inline constexpr MiniFloatFormat kBf16Format{8, 7, true};
inline constexpr MiniFloatFormat kE4m3Format{4, 3, false};
inline constexpr MiniFloatFormat kE5m2Format{5, 2, true};

// Round to nearest, ties to even; out of range gives inf (NaN for e4m3); NaN stays NaN.
uint32_t miniFloatEncode(const MiniFloatFormat& f, double x);
double miniFloatDecode(const MiniFloatFormat& f, uint32_t bits);

// One element of type t at buf[index], as a double (exact for every value weft-perf writes).
double loadElement(weftDataType_t t, const void* buf, size_t index);
// Stores x rounded to the type (integers: truncated toward zero, saturating is not attempted).
void storeElement(weftDataType_t t, void* buf, size_t index, double x);
// x rounded to the nearest value of type t (floating types; integers truncate toward zero).
double roundToType(weftDataType_t t, double x);

// Element access by type, for loops that must not switch per element:
//   visitType(t, [&](auto e) { using E = decltype(e); E::Storage* p = ...; E::load(p[i]); });
template <typename S>
struct IntElem {
  using Storage = S;
  static double load(S v) { return static_cast<double>(v); }
  static S store(double x) { return static_cast<S>(x); }
};
struct FloatElem {
  using Storage = float;
  static double load(float v) { return v; }
  static float store(double x) { return static_cast<float>(x); }
};
struct DoubleElem {
  using Storage = double;
  static double load(double v) { return v; }
  static double store(double x) { return x; }
};
template <typename S, const MiniFloatFormat& F>
struct MiniElem {
  using Storage = S;
  static double load(S v) { return miniFloatDecode(F, v); }
  static S store(double x) { return static_cast<S>(miniFloatEncode(F, x)); }
};

template <typename Fn>
decltype(auto) visitType(weftDataType_t t, Fn&& fn) {
  switch (t) {
    case weftInt8:
      return fn(IntElem<int8_t>{});
    case weftUint8:
      return fn(IntElem<uint8_t>{});
    case weftInt32:
      return fn(IntElem<int32_t>{});
    case weftUint32:
      return fn(IntElem<uint32_t>{});
    case weftInt64:
      return fn(IntElem<int64_t>{});
    case weftUint64:
      return fn(IntElem<uint64_t>{});
    case weftFloat16:
      return fn(MiniElem<uint16_t, kHalfFormat>{});
    case weftFloat32:
      return fn(FloatElem{});
    case weftFloat64:
      return fn(DoubleElem{});
    case weftBfloat16:
      return fn(MiniElem<uint16_t, kBf16Format>{});
    case weftFloat8e4m3:
      return fn(MiniElem<uint8_t, kE4m3Format>{});
    default:
      return fn(MiniElem<uint8_t, kE5m2Format>{});
  }
}

}  // namespace weft::perf

#endif  // WEFT_PERF_DATATYPES_H_
