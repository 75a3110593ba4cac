// Element-wise reduction: the op functors and chunk loops that every executor runs, and the
// run-time dispatch (type, op) -> function that the host executor calls.
//
// The functors and loops are WEFT_HOST_DEVICE templates: the device kernels
// (collectives/device/) instantiate them with a thread index and stride, the host with 0 and 1,
// so the unit tests exercise the arithmetic the GPUs run.
//
// Numerics, for every executor:
//  - Half, BFloat16 and FP8 are computed in float and rounded once to the storage type per
//    call (datatypes.h: nearest-even; E4M3 saturates to +-448, the others overflow to inf).
//  - Integer sum and prod wrap modulo 2^bits (computed in unsigned arithmetic: no UB).
//  - Max and min propagate NaN: if either operand is NaN the result is NaN (the NaN operand
//    itself; a if both are). So a NaN on any rank shows in the result whatever order the ranks
//    are combined in, which is what a user looking for divergence needs (fmaxf would hide it).
//    For equal operands (+0 and -0 included) the second operand is returned.
//  - Avg is a sum with one division at the end: intermediate steps add, and the step that adds
//    the last contribution computes (a + b) / divisor, divisor = number of ranks; in float for
//    float and the reduced-precision types, in double for double, integer division (toward
//    zero, of the wrapped sum) for integers.
//  - PreMulSum (weftRedOpCreatePreMulSum; a scalar s of the op's datatype, each rank its own):
//    every rank's input element x is multiplied by that rank's s exactly once, where it enters
//    the data flow (the step that reads the send buffer), and the products are then summed
//    exactly like weftSum. The product is preMul(x, s) = OpProd<T>::apply(x, s): for Half,
//    BFloat16 and FP8, float(x) * float(s) rounded once to the storage type (nearest-even; E4M3
//    saturating); float in float, double in double; integers wrap modulo 2^bits. Not fused:
//    each product is rounded to T before it is added, so the result is the weftSum of
//    round_T(x_r * s_r) over the ranks r, in the order the algorithm adds (with 2 ranks:
//    round_T(round_T(x_0 * s_0) + round_T(x_1 * s_1))). Host and device call the same preMul
//    and OpSum, and preMul is never fused with the sum, so their results are bit-identical
//    (NaN payloads aside: GPUs return a canonical NaN from arithmetic on a NaN).
#ifndef WEFT_COLLECTIVES_REDUCE_H_
#define WEFT_COLLECTIVES_REDUCE_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "collectives/datatypes.h"
#include "device/platform.h"
#include "weft/weft.h"

namespace weft {
namespace coll {

// The storage types that are computed in float.
template <typename T>
struct IsReducedFloat : std::false_type {};
template <>
struct IsReducedFloat<Half> : std::true_type {};
template <>
struct IsReducedFloat<BFloat16> : std::true_type {};
template <>
struct IsReducedFloat<Fp8E4M3> : std::true_type {};
template <>
struct IsReducedFloat<Fp8E5M2> : std::true_type {};

namespace detail {
// Integer arithmetic is done in an unsigned type at least as wide as unsigned int, so that
// neither signed overflow nor promotion of small types to (signed) int can be UB.
template <typename T>
using WrapType = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
}  // namespace detail

template <typename T>
struct OpSum {
  WEFT_HOST_DEVICE static T apply(T a, T b) {
    if constexpr (IsReducedFloat<T>::value) {
      return T(static_cast<float>(a) + static_cast<float>(b));
    } else if constexpr (std::is_integral<T>::value) {
      using U = detail::WrapType<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      return a + b;
    }
  }
};

template <typename T>
struct OpProd {
  WEFT_HOST_DEVICE static T apply(T a, T b) {
    if constexpr (IsReducedFloat<T>::value) {
      return T(static_cast<float>(a) * static_cast<float>(b));
    } else if constexpr (std::is_integral<T>::value) {
      using U = detail::WrapType<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    } else {
      return a * b;
    }
  }
};

// Max and min return one of the operands unchanged (no rounding needed); a NaN operand wins.
template <typename T>
struct OpMax {
  WEFT_HOST_DEVICE static T apply(T a, T b) {
    if constexpr (IsReducedFloat<T>::value) {
      const float fa = static_cast<float>(a), fb = static_cast<float>(b);
      return (fa > fb || fa != fa) ? a : b;  // b NaN: fa > fb is false, so b
    } else if constexpr (std::is_floating_point<T>::value) {
      return (a > b || a != a) ? a : b;
    } else {
      return a > b ? a : b;
    }
  }
};

template <typename T>
struct OpMin {
  WEFT_HOST_DEVICE static T apply(T a, T b) {
    if constexpr (IsReducedFloat<T>::value) {
      const float fa = static_cast<float>(a), fb = static_cast<float>(b);
      return (fa < fb || fa != fa) ? a : b;
    } else if constexpr (std::is_floating_point<T>::value) {
      return (a < b || a != a) ? a : b;
    } else {
      return a < b ? a : b;
    }
  }
};

// The final step of avg for one element: (a + b) / divisor, rounded once.
template <typename T>
WEFT_HOST_DEVICE inline T sumDivide(T a, T b, uint32_t divisor) {
  if constexpr (IsReducedFloat<T>::value) {
    return T((static_cast<float>(a) + static_cast<float>(b)) / static_cast<float>(divisor));
  } else if constexpr (std::is_same<T, double>::value) {
    return (a + b) / static_cast<double>(divisor);
  } else if constexpr (std::is_floating_point<T>::value) {
    return (a + b) / static_cast<float>(divisor);
  } else if constexpr (std::is_signed<T>::value) {
    return static_cast<T>(static_cast<int64_t>(OpSum<T>::apply(a, b)) / static_cast<int64_t>(divisor));
  } else {
    return static_cast<T>(static_cast<uint64_t>(OpSum<T>::apply(a, b)) / divisor);
  }
}

// PreMulSum's product for one element (see the numerics above): the rank's own input times
// the op's scalar, rounded once to T. For float and double the multiplication must stay a
// rounded product: a compiler may otherwise contract it with the sum that follows into one
// fused multiply-add (nvcc and hipcc do by default), which rounds once where the host rounds
// twice. __fmul_rn / __dmul_rn are never contracted (CUDA); clang (HIP, and clang on the host)
// honours the pragma for the multiplication written here; the host build compiles collectives
// with -ffp-contract=off for GCC (collectives/CMakeLists.txt). The reduced types need none of
// this: their product is rounded to T by an integer conversion before anything is added.
template <typename T>
WEFT_HOST_DEVICE inline T preMul(T x, T scalar) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  if constexpr (std::is_same<T, float>::value) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(x, scalar);
#else
    return x * scalar;
#endif
  } else if constexpr (std::is_same<T, double>::value) {
#if defined(__CUDA_ARCH__)
    return __dmul_rn(x, scalar);
#else
    return x * scalar;
#endif
  } else {
    return OpProd<T>::apply(x, scalar);
  }
}

// dst[i] = Op(a[i], b[i]) for i = first, first + stride, ... < n. dst may be a or b (each
// element is read before it is written) but must not overlap them otherwise.
template <typename T, typename Op>
WEFT_HOST_DEVICE inline void reduceInto(T* dst, const T* a, const T* b, size_t n, size_t first, size_t stride) {
  for (size_t i = first; i < n; i += stride) dst[i] = Op::apply(a[i], b[i]);
}

// The final step of avg: dst[i] = (a[i] + b[i]) / divisor, same iteration and aliasing rules.
template <typename T>
WEFT_HOST_DEVICE inline void sumDivideInto(T* dst, const T* a, const T* b, size_t n, uint32_t divisor, size_t first,
                                           size_t stride) {
  for (size_t i = first; i < n; i += stride) dst[i] = sumDivide(a[i], b[i], divisor);
}

// Host dispatch. dst[i] = a[i] op b[i] for i < n, on host memory; dst may be a or b exactly.
// For weftAvg: divisor > 1 makes this the final step (sum, then divide by divisor once);
// divisor <= 1 just sums (an intermediate step). Other ops ignore divisor.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t n, uint32_t divisor);

// The host function for (type, op); nullptr if either is invalid.
ReduceFn reduceFunction(weftDataType_t type, weftRedOp_t op);

// The same reduction stored to two places in one pass (dst and dst2, e.g. the receive buffer
// and the slot that forwards the result); neither may overlap a or b unless it equals it.
using ReduceCopyFn = void (*)(void* dst, void* dst2, const void* a, const void* b, size_t n, uint32_t divisor);
ReduceCopyFn reduceCopyFunction(weftDataType_t type, weftRedOp_t op);

// PreMulSum where a rank's own contribution enters: dst[i] = preMul(own[i], *scalar) when in is
// null, else OpSum(preMul(own[i], *scalar), in[i]); also stored to dst2 when it is not null.
// scalar points to one element of the type (host memory). dst may be own or in exactly. The
// other steps of a premul-sum combine with reduceFunction(type, weftSum).
using PreMulFn = void (*)(void* dst, void* dst2, const void* own, const void* in, size_t n, const void* scalar);
PreMulFn preMulFunction(weftDataType_t type);

// Copies `bytes` from src to dst (the two must not overlap) with non-temporal stores that
// bypass the caches (x86-64: movntdq, 64 bytes a loop; the unaligned head and the tail by
// memcpy; elsewhere all of it by memcpy), then fences them (sfence), so that a slot or flag
// posted after it is ordered after the data. For outputs larger than the last-level cache,
// whose lines would only evict what the next steps read (host_executor.cc, WEFT_STREAM_STORE_BYTES).
void copyStreaming(void* dst, const void* src, size_t bytes);
// copyStreaming without the fence, for a caller that streams many pieces and fences once
// (fenceStreams) before anything tells a peer they are there.
void copyStreamingUnfenced(void* dst, const void* src, size_t bytes);
void fenceStreams();

// The reduction of reduceCopyFunction with dst written by non-temporal stores in the same pass
// (fenced before it returns; dst2, when not null, with normal stores), for the types whose host
// loop is the plain one (integers, float, double); nullptr for the others (Half, BFloat16, FP8:
// their vectorised kernels go through reduceStreaming) and for invalid ones.
ReduceCopyFn reduceStreamFunction(weftDataType_t type, weftRedOp_t op);

// reduce(a, b) of n elements of elemSize bytes into dst with non-temporal stores (fenced, as
// copyStreaming), and with normal stores into dst2 when it is not null (the slot that forwards
// the result: its reader wants it in a cache). Works in pieces that stay in the first-level
// cache: each is reduced into dst2 (or a buffer of this thread's) and streamed from there into
// dst. dst may be a or b exactly; dst2 overlaps none of them.
void reduceStreaming(ReduceFn reduce, void* dst, void* dst2, const void* a, const void* b, size_t n, size_t elemSize,
                     uint32_t divisor);

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_REDUCE_H_
