// Host reduction functions, one per (datatype, op), for the host executor.
//
// The loops work in blocks: load a block of a and b into locals, combine, store. Because every
// load of a block precedes its stores, dst may alias a or b, and g++ -O2 (whose cost model does
// not version loops for aliasing or add epilogues) vectorises the fixed-length inner loops for
// the float and integer types. The tail, and the reduced-precision types, run element by element.
#include "collectives/reduce.h"

namespace weft {
namespace coll {
namespace {

template <typename T, typename Combine>
inline void hostLoop(T* dst, const T* a, const T* b, size_t n, Combine combine) {
  constexpr size_t kBlock = 64 / sizeof(T);  // one cache line
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    T va[kBlock], vb[kBlock];
    for (size_t k = 0; k < kBlock; ++k) va[k] = a[i + k];
    for (size_t k = 0; k < kBlock; ++k) vb[k] = b[i + k];
    for (size_t k = 0; k < kBlock; ++k) dst[i + k] = combine(va[k], vb[k]);
  }
  for (; i < n; ++i) dst[i] = combine(a[i], b[i]);
}

template <typename T, typename Op>
void reduceHost(void* dst, const void* a, const void* b, size_t n, uint32_t /*divisor*/) {
  hostLoop(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), n,
           [](T x, T y) { return Op::apply(x, y); });
}

template <typename T>
void avgHost(void* dst, const void* a, const void* b, size_t n, uint32_t divisor) {
  if (divisor <= 1) return reduceHost<T, OpSum<T>>(dst, a, b, n, divisor);
  hostLoop(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), n,
           [divisor](T x, T y) { return sumDivide(x, y, divisor); });
}

template <typename T>
ReduceFn functionFor(weftRedOp_t op) {
  switch (op) {
    case weftSum:
      return reduceHost<T, OpSum<T>>;
    case weftProd:
      return reduceHost<T, OpProd<T>>;
    case weftMax:
      return reduceHost<T, OpMax<T>>;
    case weftMin:
      return reduceHost<T, OpMin<T>>;
    case weftAvg:
      return avgHost<T>;
    default:
      return nullptr;
  }
}

}  // namespace

ReduceFn reduceFunction(weftDataType_t type, weftRedOp_t op) {
  switch (type) {
    case weftInt8:
      return functionFor<int8_t>(op);
    case weftUint8:
      return functionFor<uint8_t>(op);
    case weftInt32:
      return functionFor<int32_t>(op);
    case weftUint32:
      return functionFor<uint32_t>(op);
    case weftInt64:
      return functionFor<int64_t>(op);
    case weftUint64:
      return functionFor<uint64_t>(op);
    case weftFloat16:
      return functionFor<Half>(op);
    case weftFloat32:
      return functionFor<float>(op);
    case weftFloat64:
      return functionFor<double>(op);
    case weftBfloat16:
      return functionFor<BFloat16>(op);
    case weftFloat8e4m3:
      return functionFor<Fp8E4M3>(op);
    case weftFloat8e5m2:
      return functionFor<Fp8E5M2>(op);
    default:
      return nullptr;
  }
}

}  // namespace coll
}  // namespace weft
