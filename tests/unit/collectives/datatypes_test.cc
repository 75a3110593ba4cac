// Tests for collectives/datatypes.h: the reduced-precision storage types against a reference
// written independently (double arithmetic with ldexp / nearbyint and a table of every value
// the format holds), exhaustively over encodings and on every rounding boundary; plus the
// datatype tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "collectives/datatypes.h"

namespace weft {
namespace coll {
namespace {

// A binary format described by its widths, decoded and encoded the slow, obvious way.
struct Format {
  int expBits;
  int manBits;
  bool hasInf;  // false: OCP E4M3 (no infinity, only S.1111.111 is NaN, saturating)
  int bias() const { return (1 << (expBits - 1)) - 1; }
  uint32_t patterns() const { return 1u << (1 + expBits + manBits); }
  uint32_t signBit() const { return 1u << (expBits + manBits); }
};

constexpr Format kHalfFmt{5, 10, true};
constexpr Format kBf16Fmt{8, 7, true};
constexpr Format kE4M3Fmt{4, 3, false};
constexpr Format kE5M2Fmt{5, 2, true};

double refDecode(const Format& f, uint32_t bits) {
  const bool neg = (bits & f.signBit()) != 0;
  const uint32_t expAll = (1u << f.expBits) - 1;
  const uint32_t e = (bits >> f.manBits) & expAll;
  const uint32_t m = bits & ((1u << f.manBits) - 1);
  double mag;
  if (f.hasInf && e == expAll) {
    mag = m == 0 ? HUGE_VAL : std::nan("");
  } else if (!f.hasInf && e == expAll && m == (1u << f.manBits) - 1) {
    mag = std::nan("");
  } else if (e == 0) {
    mag = std::ldexp(static_cast<double>(m), 1 - f.bias() - f.manBits);
  } else {
    mag = std::ldexp(static_cast<double>((1u << f.manBits) | m), static_cast<int>(e) - f.bias() - f.manBits);
  }
  return neg ? -mag : mag;
}

// Rounds a (non-NaN) double to the format: nearest, ties to even, then looks the result up in a
// table of every non-negative finite value. Overflow: inf, or the max finite for E4M3.
class RefEncoder {
 public:
  explicit RefEncoder(const Format& f) : f_(f) {
    for (uint32_t b = 0; b < f.signBit(); ++b) {
      const double v = refDecode(f, b);
      if (std::isfinite(v)) table_.emplace_back(v, b);
    }
    std::sort(table_.begin(), table_.end());
    maxFinite_ = table_.back().first;
    maxBits_ = table_.back().second;
  }

  uint32_t encode(double x) const {
    const uint32_t sign = std::signbit(x) ? f_.signBit() : 0;
    const double ax = std::fabs(x);
    double r = HUGE_VAL;
    if (!std::isinf(ax)) {
      const int minExp = 1 - f_.bias();
      const int e = ax == 0 ? minExp : std::max(std::ilogb(ax), minExp);
      const double quantum = std::ldexp(1.0, e - f_.manBits);
      r = std::nearbyint(ax / quantum) * quantum;  // the default rounding mode: ties to even
    }
    if (r > maxFinite_) return sign | (f_.hasInf ? ((1u << f_.expBits) - 1) << f_.manBits : maxBits_);
    auto it = std::lower_bound(table_.begin(), table_.end(), std::make_pair(r, 0u));
    EXPECT_TRUE(it != table_.end() && it->first == r) << "reference rounded to a value not in the table";
    return sign | it->second;
  }

  const std::vector<std::pair<double, uint32_t>>& values() const { return table_; }
  double maxFinite() const { return maxFinite_; }

 private:
  Format f_;
  std::vector<std::pair<double, uint32_t>> table_;
  double maxFinite_;
  uint32_t maxBits_;
};

float floatFromBits(uint32_t b) { return bitCast<float>(b); }

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

// Every encoding: decodes to the reference value, and converts back to itself (NaN to a NaN).
template <typename T>
void checkAllPatterns(const Format& f) {
  const RefEncoder ref(f);
  int failures = 0;
  for (uint32_t b = 0; b < f.patterns() && failures < 10; ++b) {
    const T v = T::fromBits(static_cast<decltype(T::bits)>(b));
    const float x = static_cast<float>(v);
    const double want = refDecode(f, b);
    if (std::isnan(want)) {
      const bool ok = std::isnan(x) && std::isnan(refDecode(f, T(x).bits));
      if (!ok) ++failures;
      EXPECT_TRUE(ok) << "NaN pattern " << hex(b) << " decoded to " << x << " re-encoded " << hex(T(x).bits);
      continue;
    }
    const bool ok = static_cast<double>(x) == want && std::signbit(x) == std::signbit(want) && T(x).bits == b;
    if (!ok) ++failures;
    EXPECT_TRUE(ok) << "pattern " << hex(b) << ": decoded " << x << " (want " << want << "), re-encoded "
                    << hex(T(x).bits);
  }
}

// float -> T against the reference on every tie between neighbours (and one float ulp either
// side), past the largest finite value, on float denormals, and on random floats.
std::vector<float> roundingInputs(const Format& f) {
  const RefEncoder ref(f);
  std::vector<float> xs;
  const auto& vals = ref.values();
  for (size_t i = 0; i + 1 < vals.size(); ++i) {
    const double mid = (vals[i].first + vals[i + 1].first) / 2;
    const float m = static_cast<float>(mid);
    EXPECT_EQ(static_cast<double>(m), mid) << "a midpoint of the format is not a float";
    for (float x : {m, std::nextafter(m, 0.0f), std::nextafter(m, HUGE_VALF)}) {
      xs.push_back(x);
      xs.push_back(-x);
    }
  }
  // Around and beyond the largest finite value: the next step up would be max + ulp.
  const double ulpAtMax = vals.back().first - vals[vals.size() - 2].first;
  for (double d :
       {ref.maxFinite(), ref.maxFinite() + ulpAtMax / 2, ref.maxFinite() + ulpAtMax, ref.maxFinite() * 4, 3.0e38}) {
    const float x = static_cast<float>(d);
    for (float y : {x, std::nextafter(x, 0.0f), std::nextafter(x, HUGE_VALF), HUGE_VALF}) {
      xs.push_back(y);
      xs.push_back(-y);
    }
  }
  for (uint32_t b : {0x1u, 0x7FFFu, 0x8000u, 0x8001u, 0x18000u, 0x7FFFFFu, 0x800000u, 0x80000000u}) {
    xs.push_back(floatFromBits(b));
    xs.push_back(floatFromBits(b | 0x80000000u));
  }
  std::mt19937 rng(12345);
  for (int i = 0; i < 200000; ++i) {
    const float x = floatFromBits(static_cast<uint32_t>(rng()));
    if (!std::isnan(x)) xs.push_back(x);
  }
  // Random floats within the format's range, where most of its values are.
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> expo(-f.bias() - f.manBits - 1, f.bias() + 1);
  for (int i = 0; i < 200000; ++i) xs.push_back(static_cast<float>(std::ldexp(mant(rng), expo(rng))));
  return xs;
}

template <typename T>
void checkRounding(const Format& f) {
  const RefEncoder ref(f);
  int failures = 0;
  for (float x : roundingInputs(f)) {
    const uint32_t want = ref.encode(x);
    const uint32_t got = T(x).bits;
    if (got != want && ++failures <= 10) {
      ADD_FAILURE() << "float " << x << " (" << hex(bitCast<uint32_t>(x)) << ") converted to " << hex(got) << ", want "
                    << hex(want);
    }
  }
  EXPECT_EQ(failures, 0);
  // NaN of any sign and payload stays NaN.
  for (uint32_t b : {0x7FC00000u, 0x7F800001u, 0x7FBFFFFFu, 0xFFC00000u, 0xFF800001u, 0x7FFFFFFFu, 0x7F802000u}) {
    EXPECT_TRUE(std::isnan(refDecode(f, T(floatFromBits(b)).bits))) << "float NaN " << hex(b);
  }
}

TEST(DatatypeHalf, AllPatternsRoundTrip) { checkAllPatterns<Half>(kHalfFmt); }
TEST(DatatypeBFloat16, AllPatternsRoundTrip) { checkAllPatterns<BFloat16>(kBf16Fmt); }
TEST(DatatypeFp8E4M3, AllPatternsRoundTrip) { checkAllPatterns<Fp8E4M3>(kE4M3Fmt); }
TEST(DatatypeFp8E5M2, AllPatternsRoundTrip) { checkAllPatterns<Fp8E5M2>(kE5M2Fmt); }

TEST(DatatypeHalf, RoundingMatchesReference) { checkRounding<Half>(kHalfFmt); }
TEST(DatatypeBFloat16, RoundingMatchesReference) { checkRounding<BFloat16>(kBf16Fmt); }
TEST(DatatypeFp8E4M3, RoundingMatchesReference) { checkRounding<Fp8E4M3>(kE4M3Fmt); }
TEST(DatatypeFp8E5M2, RoundingMatchesReference) { checkRounding<Fp8E5M2>(kE5M2Fmt); }

template <typename T>
uint32_t enc(float x) {
  return T(x).bits;
}

template <typename T>
float dec(uint32_t b) {
  return static_cast<float>(T::fromBits(static_cast<decltype(T::bits)>(b)));
}

TEST(DatatypeHalf, KnownValues) {
  EXPECT_EQ(enc<Half>(1.0f), 0x3C00u);
  EXPECT_EQ(enc<Half>(-2.0f), 0xC000u);
  EXPECT_EQ(enc<Half>(-0.0f), 0x8000u);
  EXPECT_EQ(enc<Half>(65504.0f), 0x7BFFu);
  EXPECT_EQ(enc<Half>(65519.996f), 0x7BFFu);  // just below the tie: max finite
  EXPECT_EQ(enc<Half>(65520.0f), 0x7C00u);    // tie with 65536: even is inf
  EXPECT_EQ(enc<Half>(-1e10f), 0xFC00u);      // overflow
  EXPECT_EQ(enc<Half>(HUGE_VALF), 0x7C00u);
  EXPECT_EQ(enc<Half>(1.0f + 0x1p-11f), 0x3C00u);      // tie: 1.0 is even
  EXPECT_EQ(enc<Half>(1.0f + 3 * 0x1p-11f), 0x3C02u);  // tie: 1+2ulp is even
  EXPECT_EQ(enc<Half>(0x1p-24f), 0x0001u);             // smallest denormal
  EXPECT_EQ(enc<Half>(0x1p-25f), 0x0000u);             // tie with 0: even
  EXPECT_EQ(enc<Half>(0x1.8p-25f), 0x0001u);           // 0.75 unit: up
  EXPECT_EQ(enc<Half>(0x1.8p-24f), 0x0002u);           // 1.5 units: tie, even is 2
  EXPECT_EQ(enc<Half>(0x1p-14f - 0x1p-25f), 0x0400u);  // rounds up into the smallest normal
  EXPECT_EQ(dec<Half>(0x0001u), 0x1p-24f);
  EXPECT_EQ(dec<Half>(0x03FFu), 0x3FFp-24f);
  EXPECT_EQ(dec<Half>(0x7BFFu), 65504.0f);
  EXPECT_TRUE(std::isinf(dec<Half>(0xFC00u)) && dec<Half>(0xFC00u) < 0);
  EXPECT_TRUE(std::isnan(dec<Half>(0x7C01u)));
  EXPECT_TRUE(std::isnan(dec<Half>(0xFE00u)));
}

TEST(DatatypeBFloat16, KnownValues) {
  EXPECT_EQ(enc<BFloat16>(1.0f), 0x3F80u);
  EXPECT_EQ(enc<BFloat16>(floatFromBits(0x3F808000u)), 0x3F80u);  // tie: even
  EXPECT_EQ(enc<BFloat16>(floatFromBits(0x3F818000u)), 0x3F82u);  // tie: even
  EXPECT_EQ(enc<BFloat16>(floatFromBits(0x3F808001u)), 0x3F81u);  // above the tie
  EXPECT_EQ(enc<BFloat16>(floatFromBits(0x7F7F7FFFu)), 0x7F7Fu);  // largest that stays finite
  EXPECT_EQ(enc<BFloat16>(floatFromBits(0x7F7FFFFFu)), 0x7F80u);  // float max overflows
  EXPECT_EQ(enc<BFloat16>(floatFromBits(0x00008000u)), 0x0000u);  // float denormal, tie: even
  EXPECT_EQ(enc<BFloat16>(floatFromBits(0x00018000u)), 0x0002u);  // float denormal, tie: even
  EXPECT_EQ(enc<BFloat16>(floatFromBits(0x007FFFFFu)), 0x0080u);  // rounds up to the smallest normal
  EXPECT_EQ(dec<BFloat16>(0x0001u), floatFromBits(0x00010000u));
  EXPECT_EQ(dec<BFloat16>(0xC040u), -3.0f);
  EXPECT_TRUE(std::isnan(dec<BFloat16>(0x7F81u)));
  EXPECT_TRUE(std::isnan(dec<BFloat16>(enc<BFloat16>(floatFromBits(0x7F800001u)))));  // payload only in low bits
}

TEST(DatatypeFp8E4M3, KnownValues) {
  EXPECT_EQ(dec<Fp8E4M3>(0x7Eu), 448.0f);
  EXPECT_EQ(dec<Fp8E4M3>(0xFEu), -448.0f);
  EXPECT_EQ(dec<Fp8E4M3>(0x78u), 256.0f);  // exponent all ones is a normal number here
  EXPECT_TRUE(std::isnan(dec<Fp8E4M3>(0x7Fu)));
  EXPECT_TRUE(std::isnan(dec<Fp8E4M3>(0xFFu)));
  EXPECT_EQ(dec<Fp8E4M3>(0x38u), 1.0f);
  EXPECT_EQ(dec<Fp8E4M3>(0x08u), 0x1p-6f);  // smallest normal
  EXPECT_EQ(dec<Fp8E4M3>(0x01u), 0x1p-9f);  // smallest denormal
  EXPECT_EQ(dec<Fp8E4M3>(0x07u), 0x7p-9f);
  EXPECT_EQ(enc<Fp8E4M3>(448.0f), 0x7Eu);
  // Saturation (satfinite): everything past 448, infinities included, becomes +-448.
  EXPECT_EQ(enc<Fp8E4M3>(449.0f), 0x7Eu);
  EXPECT_EQ(enc<Fp8E4M3>(464.0f), 0x7Eu);
  EXPECT_EQ(enc<Fp8E4M3>(1e6f), 0x7Eu);
  EXPECT_EQ(enc<Fp8E4M3>(-1e6f), 0xFEu);
  EXPECT_EQ(enc<Fp8E4M3>(HUGE_VALF), 0x7Eu);
  EXPECT_EQ(enc<Fp8E4M3>(-HUGE_VALF), 0xFEu);
  EXPECT_EQ(enc<Fp8E4M3>(std::nanf("")) & 0x7Fu, 0x7Fu);
  EXPECT_EQ(enc<Fp8E4M3>(1.0625f), 0x38u);   // 1 + half ulp: tie, even
  EXPECT_EQ(enc<Fp8E4M3>(1.1875f), 0x3Au);   // 1 + 1.5 ulp: tie, even
  EXPECT_EQ(enc<Fp8E4M3>(0x1p-10f), 0x00u);  // half the smallest denormal: tie, even
  EXPECT_EQ(enc<Fp8E4M3>(0x1.8p-10f), 0x01u);
  EXPECT_EQ(enc<Fp8E4M3>(-0x1.8p-9f), 0x82u);  // 1.5 units: tie, even
}

TEST(DatatypeFp8E5M2, KnownValues) {
  EXPECT_EQ(dec<Fp8E5M2>(0x7Bu), 57344.0f);
  EXPECT_TRUE(std::isinf(dec<Fp8E5M2>(0x7Cu)));
  EXPECT_TRUE(std::isnan(dec<Fp8E5M2>(0x7Du)));
  EXPECT_TRUE(std::isnan(dec<Fp8E5M2>(0xFFu)));
  EXPECT_EQ(dec<Fp8E5M2>(0x3Cu), 1.0f);
  EXPECT_EQ(dec<Fp8E5M2>(0x04u), 0x1p-14f);
  EXPECT_EQ(dec<Fp8E5M2>(0x01u), 0x1p-16f);
  EXPECT_EQ(enc<Fp8E5M2>(57344.0f), 0x7Bu);
  EXPECT_EQ(enc<Fp8E5M2>(61439.0f), 0x7Bu);
  EXPECT_EQ(enc<Fp8E5M2>(61440.0f), 0x7Cu);  // tie with 65536: even is inf
  EXPECT_EQ(enc<Fp8E5M2>(-1e6f), 0xFCu);
  EXPECT_EQ(enc<Fp8E5M2>(1.125f), 0x3Cu);  // tie, even
  EXPECT_EQ(enc<Fp8E5M2>(1.375f), 0x3Eu);  // tie, even
  EXPECT_EQ(enc<Fp8E5M2>(0x1p-17f), 0x00u);
  EXPECT_EQ(enc<Fp8E5M2>(0x1.8p-16f), 0x02u);
  EXPECT_TRUE(std::isnan(dec<Fp8E5M2>(enc<Fp8E5M2>(std::nanf("")))));
}

#if defined(__FLT16_MANT_DIG__) && defined(__x86_64__)
// The compiler's own _Float16 is an independent implementation of binary16.
TEST(DatatypeHalf, MatchesCompilerFloat16) {
  int failures = 0;
  for (float x : roundingInputs(kHalfFmt)) {
    const _Float16 h = static_cast<_Float16>(x);
    if (bitCast<uint16_t>(h) != Half(x).bits && ++failures <= 10) ADD_FAILURE() << "float " << x;
  }
  EXPECT_EQ(failures, 0);
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float want = static_cast<float>(bitCast<_Float16>(static_cast<uint16_t>(b)));
    const float got = static_cast<float>(Half::fromBits(static_cast<uint16_t>(b)));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << hex(b);
    } else {
      ASSERT_EQ(bitCast<uint32_t>(got), bitCast<uint32_t>(want)) << hex(b);
    }
  }
}
#endif

TEST(DatatypeTables, SizesNamesValidity) {
  const struct {
    weftDataType_t type;
    size_t size;
    const char* name;
  } rows[] = {
      {weftInt8, 1, "int8"},         {weftUint8, 1, "uint8"},       {weftInt32, 4, "int32"},
      {weftUint32, 4, "uint32"},     {weftInt64, 8, "int64"},       {weftUint64, 8, "uint64"},
      {weftFloat16, 2, "half"},      {weftFloat32, 4, "float"},     {weftFloat64, 8, "double"},
      {weftBfloat16, 2, "bfloat16"}, {weftFloat8e4m3, 1, "f8e4m3"}, {weftFloat8e5m2, 1, "f8e5m2"},
  };
  static_assert(sizeof(rows) / sizeof(rows[0]) == weftNumTypes, "a datatype is missing from the test");
  for (const auto& r : rows) {
    EXPECT_EQ(dataTypeSize(r.type), r.size) << r.name;
    EXPECT_STREQ(dataTypeName(r.type), r.name);
    EXPECT_TRUE(isValidDataType(r.type));
  }
  EXPECT_EQ(sizeof(Half), 2u);
  EXPECT_EQ(sizeof(BFloat16), 2u);
  EXPECT_EQ(sizeof(Fp8E4M3), 1u);
  EXPECT_EQ(sizeof(Fp8E5M2), 1u);
  EXPECT_FALSE(isValidDataType(-1));
  EXPECT_FALSE(isValidDataType(weftNumTypes));
  EXPECT_EQ(dataTypeSize(static_cast<weftDataType_t>(weftNumTypes)), 0u);
  EXPECT_STREQ(dataTypeName(static_cast<weftDataType_t>(99)), "invalid");

  const char* ops[] = {"sum", "prod", "max", "min", "avg"};
  static_assert(sizeof(ops) / sizeof(ops[0]) == weftNumOps, "an op is missing from the test");
  for (int op = 0; op < weftNumOps; ++op) {
    EXPECT_TRUE(isValidRedOp(op));
    EXPECT_STREQ(redOpName(static_cast<weftRedOp_t>(op)), ops[op]);
  }
  EXPECT_FALSE(isValidRedOp(-1));
  EXPECT_FALSE(isValidRedOp(weftNumOps));
  // Values from weftNumOps up are the ops weftRedOpCreatePreMulSum makes (built-in ops stay valid
  // alone: a premul-sum is checked against its communicator's table).
  EXPECT_STREQ(redOpName(static_cast<weftRedOp_t>(weftNumOps)), "premulsum");
  EXPECT_STREQ(redOpName(static_cast<weftRedOp_t>(-1)), "invalid");
}

}  // namespace
}  // namespace coll
}  // namespace weft
