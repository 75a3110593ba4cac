// Vectorised host reductions for the reduced-precision floats (Half, BFloat16, Fp8E4M3,
// Fp8E5M2), bit-identical to the element-wise functors of reduce.h, in several instruction-set
// variants chosen at run time from the CPU's features.
//
// Every variant computes exactly what OpSum / OpProd / OpMax / OpMin / sumDivide / preMul do:
// widen both operands to float (exact), compute in float (IEEE, the same single operation), and
// round once back with datatypes.h's rules (nearest-even, NaN kept quiet with its payload,
// E4M3 saturating to +-448). One case is decided here rather than left to the compiler: an
// arithmetic step whose operands are both NaN returns the first operand's NaN (a in a + b, x in
// x * s, the partial product in premul's sum). The scalar loops leave that to the compiler's
// operand order, which GCC varies between types and even between a loop's blocks and its tail.
// Only the means differ:
//  - kPortable: branch-free integer bit arithmetic in plain C++ (bfloat16: two shifts and a
//    rounding add), which the compiler vectorises for the baseline instruction set (any CPU);
//  - kAvx2: the same arithmetic compiled for AVX2, and F16C's vcvtph2ps / vcvtps2ph for Half;
//  - kAvx512: the same compiled for AVX-512 (F, BW, VL, DQ), Half through vcvtph2ps / vcvtps2ph
//    on 16 lanes, FP8 through the half conversions (widening exactly; narrowing by rounding to
//    odd into half, then to nearest even: one exact rounding);
//  - kAvx512Bf16: kAvx512 with BFloat16 rounded by vcvtneps2bf16, whose lanes with a float
//    denormal input (which the instruction flushes to zero) are redone with the bit arithmetic;
//  - kAvx512Vbmi: kAvx512Bf16 with the FP8 sum's byte work done by AVX-512 VBMI and GFNI
//    (fp8 to half by GF(2) affine bit maps, the rounded halves' bytes gathered by vpermt2b);
//  - kAvx512Fp16: kAvx512Vbmi with the Half sum in AVX-512 FP16's own arithmetic (vaddph on 32
//    lanes, rounding to nearest-even by its immediate). The same encodings: the float sum of two
//    halves rounded to float and then to half is the half-rounded exact sum, because float's 24
//    bits are at least twice half's 11 plus 2 (double rounding is then innocuous for +, - , x, /);
//    a NaN operand wins as above (vaddph returns its first source's NaN, quieted), and the
//    instruction neither flushes denormals nor reads MXCSR's DAZ/FTZ.
// kScalar is the element-wise loop of reduce.cc, the reference the others are tested against.
// The variants are compiled in one file with target attributes, so the library still runs on
// a CPU without them; hostSimdSupported() asks the CPU (and the OS, for the AVX state).
#ifndef WEFT_COLLECTIVES_REDUCE_LOWP_H_
#define WEFT_COLLECTIVES_REDUCE_LOWP_H_

#include "collectives/reduce.h"

namespace weft {
namespace coll {

enum class HostSimd : int { kScalar = 0, kPortable, kAvx2, kAvx512, kAvx512Bf16, kAvx512Vbmi, kAvx512Fp16, kCount };

const char* hostSimdName(HostSimd simd);

// Whether this CPU (and OS) can run the variant; kScalar and kPortable always can.
bool hostSimdSupported(HostSimd simd);

// The fastest supported variant (detected once).
HostSimd bestHostSimd();

// What reduceFunction & co. use: WEFT_HOST_SIMD when this CPU runs it (read once), else
// bestHostSimd(). WEFT_HOST_SIMD=scalar runs the element-wise loops of before (measurements).
HostSimd defaultHostSimd();

// The reduced-precision functions of one variant; nullptr for kScalar, for other types, or for
// an invalid op. The caller falls back to the scalar functions of reduce.cc then.
ReduceFn lowpReduceFunction(weftDataType_t type, weftRedOp_t op, HostSimd simd);
ReduceCopyFn lowpReduceCopyFunction(weftDataType_t type, weftRedOp_t op, HostSimd simd);
PreMulFn lowpPreMulFunction(weftDataType_t type, HostSimd simd);
// half and bfloat16 (x86): the reduce-copy that writes its first output with non-temporal
// stores (reduceStreamFunction, reduce.h); nullptr for FP8, kScalar, other types or ops.
ReduceCopyFn lowpReduceStreamFunction(weftDataType_t type, weftRedOp_t op, HostSimd simd);

// reduceFunction / reduceCopyFunction / preMulFunction with the variant forced (tests and
// benchmarks compare them): the variant's function for a reduced-precision type, the scalar
// one otherwise. The unforced functions use defaultHostSimd().
ReduceFn reduceFunctionFor(weftDataType_t type, weftRedOp_t op, HostSimd simd);
ReduceCopyFn reduceCopyFunctionFor(weftDataType_t type, weftRedOp_t op, HostSimd simd);
PreMulFn preMulFunctionFor(weftDataType_t type, HostSimd simd);
// reduceStreamFunction (reduce.h) with the variant forced: float sum from kAvx2 up has its own
// 256-bit kernel, half and bfloat16 the variant's blocks; every other (type, op) is the same in
// every variant.
ReduceCopyFn reduceStreamFunctionFor(weftDataType_t type, weftRedOp_t op, HostSimd simd);

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_REDUCE_LOWP_H_
