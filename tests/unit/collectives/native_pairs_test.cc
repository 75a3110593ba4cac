// What the GPU's packed half and bfloat16 adds (reduce_copy.cuh, HADD2) compute is the exact sum
// rounded once to T (IEEE 754). The host, and the per-element path of the kernels, compute
// OpSum: the float sum rounded to T. These tests show the two agree bit for bit for every half
// against a spread of second operands, and for bfloat16 likewise, with a reference that rounds
// the sum to nearest even by itself; the kernels may then add pairs natively.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "collectives/datatypes.h"
#include "collectives/reduce.h"

namespace weft {
namespace coll {
namespace {

// x rounded to nearest even with `manBits` fraction bits, `minExp` the least normal exponent
// and `maxFinite` the largest finite value; infinity past the midpoint above maxFinite. x is
// the sum in double: exact for halves, and for bfloat16 rounded to 53 bits, which rounds to 8
// as the exact sum does (53 >= 2 * 8 + 2).
double roundTo(double x, int manBits, int minExp, double maxFinite) {
  if (x == 0 || std::isinf(x)) return x;
  const double top = maxFinite + std::ldexp(1.0, std::ilogb(maxFinite) - manBits - 1);  // the midpoint
  if (std::fabs(x) >= top) return std::copysign(INFINITY, x);
  const int e = std::max(std::ilogb(x), minExp);
  const double ulp = std::ldexp(1.0, e - manBits);
  return std::nearbyint(x / ulp) * ulp;  // x / ulp is exact; nearbyint rounds to even
}

template <typename T>
int mismatches(int manBits, int minExp, double maxFinite, uint32_t bStride) {
  int bad = 0;
  for (uint32_t a = 0; a < 0x10000; ++a) {
    for (uint32_t b = a % bStride; b < 0x10000; b += bStride) {
      const T x = T::fromBits(static_cast<uint16_t>(a)), y = T::fromBits(static_cast<uint16_t>(b));
      const double fx = static_cast<float>(x), fy = static_cast<float>(y);
      if (std::isnan(fx) || std::isnan(fy)) continue;
      const double want = roundTo(fx + fy, manBits, minExp, maxFinite);
      const T got = OpSum<T>::apply(x, y);
      const T wantT = T(static_cast<float>(want));  // exactly representable: no rounding here
      // Zero's sign: IEEE gives +0 for (+0) + (-0) and x + (-x), as float does.
      if (got.bits != wantT.bits && !(want == 0 && (got.bits & 0x7fff) == 0)) {
        if (++bad <= 5) ADD_FAILURE() << std::hex << a << " + " << b << ": " << got.bits << " vs " << wantT.bits;
      }
    }
  }
  return bad;
}

TEST(NativePairs, HalfSumIsTheCorrectlyRoundedSum) {
  EXPECT_EQ(mismatches<Half>(10, -14, 65504.0, 127), 0);
}

TEST(NativePairs, BFloat16SumIsTheCorrectlyRoundedSum) {
  EXPECT_EQ(mismatches<BFloat16>(7, -126, std::ldexp(255.0 / 128.0, 127), 127), 0);
}

// The reference itself: ties go to even, overflow past the midpoint, subnormals keep their ulp.
TEST(NativePairs, TheReferenceRoundsToNearestEven) {
  EXPECT_EQ(roundTo(1.0 + std::ldexp(1.0, -11), 10, -14, 65504.0), 1.0);
  EXPECT_EQ(roundTo(1.0 + 3 * std::ldexp(1.0, -11), 10, -14, 65504.0), 1.0 + std::ldexp(1.0, -9));
  EXPECT_EQ(roundTo(65519.0, 10, -14, 65504.0), 65504.0);
  EXPECT_TRUE(std::isinf(roundTo(65520.0, 10, -14, 65504.0)));
  EXPECT_EQ(roundTo(std::ldexp(3.0, -26), 10, -14, 65504.0), std::ldexp(1.0, -24));  // 0.75 ulp -> 1 ulp
}

}  // namespace
}  // namespace coll
}  // namespace weft
