// Type and op names, and the small-float conversions weft-perf uses to write inputs and read
// results (see datatypes.h).
#include "perf/datatypes.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace weft::perf {
namespace {

struct TypeNames {
  const char* name;
  size_t size;
  bool isFloat;
  bool isSigned;
  const char* aliases[4];
};

const TypeNames kTypes[weftNumTypes] = {
    {"int8", 1, false, true, {"char", nullptr}},
    {"uint8", 1, false, false, {nullptr}},
    {"int32", 4, false, true, {"int", nullptr}},
    {"uint32", 4, false, false, {nullptr}},
    {"int64", 8, false, true, {nullptr}},
    {"uint64", 8, false, false, {nullptr}},
    {"half", 2, true, true, {"float16", "fp16", nullptr}},
    {"float", 4, true, true, {"float32", "fp32", nullptr}},
    {"double", 8, true, true, {"float64", "fp64", nullptr}},
    {"bfloat16", 2, true, true, {"bf16", nullptr}},
    {"f8e4m3", 1, true, true, {"fp8_e4m3", "fp8e4m3", "e4m3", nullptr}},
    {"f8e5m2", 1, true, true, {"fp8_e5m2", "fp8e5m2", "e5m2", nullptr}},
};

const char* const kOpNames[weftNumOps] = {"sum", "prod", "max", "min", "avg"};

const TypeNames& names(weftDataType_t t) { return kTypes[static_cast<int>(t) % weftNumTypes]; }

}  // namespace

const char* typeName(weftDataType_t t) { return names(t).name; }
size_t typeSize(weftDataType_t t) { return names(t).size; }
bool typeIsFloat(weftDataType_t t) { return names(t).isFloat; }
bool typeIsSigned(weftDataType_t t) { return names(t).isSigned; }

bool typeFromName(const char* name, weftDataType_t* t) {
  for (int i = 0; i < weftNumTypes; ++i) {
    bool match = std::strcmp(name, kTypes[i].name) == 0;
    for (int a = 0; !match && kTypes[i].aliases[a]; ++a) match = std::strcmp(name, kTypes[i].aliases[a]) == 0;
    if (match) {
      *t = static_cast<weftDataType_t>(i);
      return true;
    }
  }
  return false;
}

std::string allTypeNames() {
  std::string s;
  for (int i = 0; i < weftNumTypes; ++i) {
    if (i) s += '|';
    s += kTypes[i].name;
  }
  return s;
}

const char* opName(weftRedOp_t op) {
  const int i = static_cast<int>(op);
  return i >= 0 && i < weftNumOps ? kOpNames[i] : "none";
}

bool opFromName(const char* name, weftRedOp_t* op) {
  for (int i = 0; i < weftNumOps; ++i) {
    if (std::strcmp(name, kOpNames[i]) == 0) {
      *op = static_cast<weftRedOp_t>(i);
      return true;
    }
  }
  return false;
}

uint32_t miniFloatEncode(const MiniFloatFormat& f, double x) {
  const int m = f.mantBits;
  const uint32_t expMax = (1u << f.expBits) - 1;
  const uint32_t mantMask = (1u << m) - 1;
  const uint32_t sign = std::signbit(x) ? 1u << (f.expBits + m) : 0u;
  const uint32_t nanBits = sign | (expMax << m) | mantMask;
  if (std::isnan(x)) return nanBits;
  const int bias = (1 << (f.expBits - 1)) - 1;
  const int emin = 1 - bias;
  // The largest finite value: IEEE-like formats reserve the top exponent; e4m3 only S.1111.111.
  const double maxFinite = f.ieeeSpecials ? std::ldexp(2.0 - std::ldexp(1.0, -m), static_cast<int>(expMax) - 1 - bias)
                                          : std::ldexp(2.0 - std::ldexp(1.0, 1 - m), static_cast<int>(expMax) - bias);
  const uint32_t overflowBits = f.ieeeSpecials ? (sign | (expMax << m)) : nanBits;
  double a = std::fabs(x);
  if (std::isinf(a)) return overflowBits;
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);                       // a = frac * 2^e, frac in [0.5, 1)
  const int lead = std::max(e - 1, emin);  // exponent of the quantum's leading bit, subnormals share emin
  const double quantum = std::ldexp(1.0, lead - m);
  const double q = std::nearbyint(a / quantum);  // ties to even under the default rounding mode
  const double v = q * quantum;
  if (v > maxFinite) return overflowBits;
  if (v < std::ldexp(1.0, emin)) return sign | static_cast<uint32_t>(q);  // subnormal (or zero)
  int e2;
  std::frexp(v, &e2);
  const int ev = e2 - 1;
  const uint32_t mant = static_cast<uint32_t>(std::ldexp(v, m - ev)) & mantMask;
  return sign | (static_cast<uint32_t>(ev + bias) << m) | mant;
}

double miniFloatDecode(const MiniFloatFormat& f, uint32_t bits) {
  const int m = f.mantBits;
  const uint32_t expMax = (1u << f.expBits) - 1;
  const uint32_t mantMask = (1u << m) - 1;
  const bool neg = (bits >> (f.expBits + m)) & 1u;
  const uint32_t ef = (bits >> m) & expMax;
  const uint32_t mant = bits & mantMask;
  const int bias = (1 << (f.expBits - 1)) - 1;
  double v;
  if (ef == expMax && f.ieeeSpecials) {
    v = mant ? std::nan("") : HUGE_VAL;
  } else if (ef == expMax && mant == mantMask) {
    v = std::nan("");
  } else if (ef == 0) {
    v = std::ldexp(static_cast<double>(mant), 1 - bias - m);
  } else {
    v = std::ldexp(static_cast<double>(mant | (1u << m)), static_cast<int>(ef) - bias - m);
  }
  return neg ? -v : v;
}

double loadElement(weftDataType_t t, const void* buf, size_t index) {
  return visitType(t, [&](auto e) {
    using E = decltype(e);
    return E::load(static_cast<const typename E::Storage*>(buf)[index]);
  });
}

void storeElement(weftDataType_t t, void* buf, size_t index, double x) {
  visitType(t, [&](auto e) {
    using E = decltype(e);
    static_cast<typename E::Storage*>(buf)[index] = E::store(x);
  });
}

double roundToType(weftDataType_t t, double x) {
  if (!typeIsFloat(t)) return std::trunc(x);
  return visitType(t, [&](auto e) {
    using E = decltype(e);
    return E::load(E::store(x));
  });
}

}  // namespace weft::perf
