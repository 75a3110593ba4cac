// The run-time dispatches from a call's values to the templates that compute it, written once
// (docs/architecture.md, "The tables"): a weftDataType_t to its storage type, and a reduction op
// to what combines two elements. Host reduce (reduce.cc, reduce_lowp.cc), the lane program run on
// the host (device_lanes.cc) and the kernels (device/kernels.cu, device/lane_kernels.cu) all pick
// their instantiation through these two; none keeps its own switch. Adding a datatype or an op
// means one case here plus its functor (reduce.h) and conversions (datatypes.h).
//
// Each takes a callable and calls it with a tag that names the choice as a type, so that the
// caller instantiates its own template for it (a host function pointer, a lane program's steps, a
// kernel launch); an unknown value returns `otherwise` without calling it. WEFT_HOST_DEVICE:
// nvcc, hipcc and the host compiler compile the same source.
#ifndef WEFT_COLLECTIVES_DISPATCH_H_
#define WEFT_COLLECTIVES_DISPATCH_H_

#include <stdint.h>

#include <type_traits>
#include <utility>

#include "collectives/datatypes.h"
#include "collectives/reduce.h"
#include "device/kernel_api.h"
#include "device/platform.h"
#include "weft/weft.h"

namespace weft {
namespace coll {

// The storage type a datatype dispatch picked.
template <typename T>
struct TypeTag {
  using type = T;
};

// What an op dispatch picked: an op whose every step is the same pairwise functor (sum, prod,
// max, min: Functor::apply(a, b), reduce.h); avg, which sums and divides on the step that adds
// the last contribution; or premul-sum (device::kLaneOpPreMulSum, the lane program's code for
// it), which multiplies each rank's own input by its scalar and then sums. kOp: the op's value.
template <typename Op, int kCode>
struct PairwiseOp {
  using Functor = Op;
  static constexpr int kOp = kCode;
};
struct AvgOp {
  static constexpr int kOp = weftAvg;
};
struct PreMulSumOp {
  static constexpr int kOp = device::kLaneOpPreMulSum;
};

template <typename Tag>
struct IsPairwiseOp : std::false_type {};
template <typename Op, int kCode>
struct IsPairwiseOp<PairwiseOp<Op, kCode>> : std::true_type {};

// nvcc checks that a host-device function calls only host-device functions; these two call the
// caller's callable, which is host code where the caller is (a kernel launch), so the check is
// left to the callable's own instantiation.
#if defined(__CUDACC__) && !defined(__clang__)
#pragma nv_exec_check_disable
#endif
// Calls f(TypeTag<T>{}) for the storage type T of `type`; `otherwise` for an unknown type.
template <typename R, typename F>
WEFT_HOST_DEVICE inline R withDataType(weftDataType_t type, R otherwise, F&& f) {
  switch (type) {
    case weftInt8: return f(TypeTag<int8_t>{});
    case weftUint8: return f(TypeTag<uint8_t>{});
    case weftInt32: return f(TypeTag<int32_t>{});
    case weftUint32: return f(TypeTag<uint32_t>{});
    case weftInt64: return f(TypeTag<int64_t>{});
    case weftUint64: return f(TypeTag<uint64_t>{});
    case weftFloat16: return f(TypeTag<Half>{});
    case weftFloat32: return f(TypeTag<float>{});
    case weftFloat64: return f(TypeTag<double>{});
    case weftBfloat16: return f(TypeTag<BFloat16>{});
    case weftFloat8e4m3: return f(TypeTag<Fp8E4M3>{});
    case weftFloat8e5m2: return f(TypeTag<Fp8E5M2>{});
    default: return otherwise;
  }
}

#if defined(__CUDACC__) && !defined(__clang__)
#pragma nv_exec_check_disable
#endif
// Calls f with the tag of `op` for elements of type T: PairwiseOp<OpSum<T>, weftSum> and the
// like, AvgOp, or PreMulSumOp for device::kLaneOpPreMulSum (a caller without premul-sum returns
// its "unknown" for that tag); `otherwise` for any other value.
template <typename T, typename R, typename F>
WEFT_HOST_DEVICE inline R withRedOp(int op, R otherwise, F&& f) {
  switch (op) {
    case weftSum: return f(PairwiseOp<OpSum<T>, weftSum>{});
    case weftProd: return f(PairwiseOp<OpProd<T>, weftProd>{});
    case weftMax: return f(PairwiseOp<OpMax<T>, weftMax>{});
    case weftMin: return f(PairwiseOp<OpMin<T>, weftMin>{});
    case weftAvg: return f(AvgOp{});
    case device::kLaneOpPreMulSum: return f(PreMulSumOp{});
    default: return otherwise;
  }
}

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_DISPATCH_H_
