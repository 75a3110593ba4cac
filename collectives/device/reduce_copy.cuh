// The element-wise body of every reduction kernel: dst_j[i] = op(src_0[i], ..., src_{k-1}[i])
// for k = 1..8 sources and 1..4 destinations, plus copy and two-input reduce as special cases.
//
// kernels.cu runs these with (tid, nthreads) = (global thread index, threads in the grid); the
// host tests run them with (t, T) for every t < T. Each element belongs to exactly one tid, and a
// thread reads all sources of an element before it stores it, so a destination may equal a
// source exactly (in place) but must not overlap one otherwise.
//
// The arithmetic is collectives/reduce.h's: the same op functors applied pairwise, left to right
// over the sources, with the result rounded to T after every step, and avg's division applied
// on the last step only; a premul-sum multiplies the first source (a rank's own input) by its
// scalar before anything is added (Step::first). So the result equals a chain of the host
// functions of reduce.cc bit for bit (NaN payloads aside: GPUs return a canonical NaN from
// arithmetic on a NaN).
#ifndef WEFT_COLLECTIVES_DEVICE_REDUCE_COPY_CUH_
#define WEFT_COLLECTIVES_DEVICE_REDUCE_COPY_CUH_

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "collectives/device/pack.cuh"
#include "collectives/dispatch.h"
#include "collectives/reduce.h"
#include "device/platform.h"

// Sums of half and bfloat16 on the GPU: two elements per instruction (HADD2, HADD2.BF16 /
// v_pk_add_f16) instead of a conversion to float, an add and a rounding per element. Bit for bit
// the host's result (reduce.h: the float sum rounded to T): an IEEE add rounds the exact sum once,
// and rounding it first to float (24 bits) and then to T is the same rounding, since 24 >= 2p + 2
// for p = 11 (half) and 8 (bfloat16) (double rounding is innocuous then); a float also keeps T's
// subnormals. NaN payloads aside, as everywhere on the GPU. Half on NVIDIA and AMD, bfloat16 on
// NVIDIA sm_80 and later (its packed add is sm_80's); elsewhere the per-element path.
#if defined(__CUDACC__) && !defined(__HIPCC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 530
#define WEFT_NATIVE_HALF2 1
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define WEFT_NATIVE_BF162 1
#endif
#elif defined(__HIPCC__)
#include <hip/hip_fp16.h>
#if defined(__HIP_DEVICE_COMPILE__)
#define WEFT_NATIVE_HALF2 1
#endif
#endif
#ifndef WEFT_NATIVE_HALF2
#define WEFT_NATIVE_HALF2 0
#endif
#ifndef WEFT_NATIVE_BF162
#define WEFT_NATIVE_BF162 0
#endif

namespace weft {
namespace coll {
namespace kernel {

constexpr int kMaxSrcs = 8;
constexpr int kMaxDsts = 4;
// Packs each thread has in flight per iteration of the main loop (loads issued before use).
constexpr int kUnroll = 4;

// A Step combines the sources of an element: acc = first(src0), then acc = mid(acc, src_s) for
// the middle sources and last(acc, src_{k-1}) for the last one.

// The combining step of sum, prod, min and max: the same at every step.
template <typename T, typename Op>
struct PairwiseStep {
  WEFT_HOST_DEVICE T first(T a) const { return a; }
  WEFT_HOST_DEVICE T mid(T a, T b) const { return Op::apply(a, b); }
  WEFT_HOST_DEVICE T last(T a, T b) const { return Op::apply(a, b); }
};

// Avg: sums, and the step that adds the last source divides by divisor (reduce.cc's avgHost).
template <typename T>
struct AvgStep {
  uint32_t divisor;
  WEFT_HOST_DEVICE T first(T a) const { return a; }
  WEFT_HOST_DEVICE T mid(T a, T b) const { return OpSum<T>::apply(a, b); }
  WEFT_HOST_DEVICE T last(T a, T b) const { return divisor > 1 ? sumDivide(a, b, divisor) : OpSum<T>::apply(a, b); }
};

// A copy has one source, so its step is never called.
template <typename T>
struct CopyStep {
  WEFT_HOST_DEVICE T first(T a) const { return a; }
  WEFT_HOST_DEVICE T mid(T a, T) const { return a; }
  WEFT_HOST_DEVICE T last(T a, T) const { return a; }
};

// PreMulSum (reduce.h): with scaleFirst, the first source is a rank's own input and is multiplied
// by the scalar (rounded once to T); every combination is a sum.
template <typename T>
struct PreMulSumStep {
  T scalar;
  bool scaleFirst;
  WEFT_HOST_DEVICE T first(T a) const { return scaleFirst ? preMul(a, scalar) : a; }
  WEFT_HOST_DEVICE T mid(T a, T b) const { return OpSum<T>::apply(a, b); }
  WEFT_HOST_DEVICE T last(T a, T b) const { return OpSum<T>::apply(a, b); }
};

// The steps of one op for the lane program (lane_program.cuh): the Step a schedule step uses,
// from whether it is final (avg divides) and whether its first source is this rank's own input
// (premul-sum multiplies). kScalesOwn: a copy of the own input onto itself is not a no-op.
template <typename T, typename Op>
struct PairwiseSteps {
  static constexpr bool kScalesOwn = false;
  WEFT_HOST_DEVICE PairwiseStep<T, Op> pick(bool /*final*/, bool /*own*/, T /*scalar*/) const { return {}; }
};

template <typename T>
struct AvgSteps {
  static constexpr bool kScalesOwn = false;
  uint32_t divisor;
  WEFT_HOST_DEVICE AvgStep<T> pick(bool final, bool /*own*/, T /*scalar*/) const {
    return AvgStep<T>{final ? divisor : 0u};
  }
};

template <typename T>
struct PreMulSumSteps {
  static constexpr bool kScalesOwn = true;
  WEFT_HOST_DEVICE PreMulSumStep<T> pick(bool /*final*/, bool own, T scalar) const {
    return PreMulSumStep<T>{scalar, own};
  }
};

// The steps the lane program runs for an op dispatch's tag (dispatch.h, withRedOp); `divisor`:
// avg's rank count.
template <typename T, typename Op, int kCode>
WEFT_HOST_DEVICE PairwiseSteps<T, Op> laneStepsFor(PairwiseOp<Op, kCode>, uint32_t /*divisor*/) {
  return {};
}
template <typename T>
WEFT_HOST_DEVICE AvgSteps<T> laneStepsFor(AvgOp, uint32_t divisor) {
  return AvgSteps<T>{divisor};
}
template <typename T>
WEFT_HOST_DEVICE PreMulSumSteps<T> laneStepsFor(PreMulSumOp, uint32_t /*divisor*/) {
  return {};
}

// Elements [begin, end), one per thread per iteration, through Access (pack.cuh).
template <typename T, typename Access, typename Step>
WEFT_HOST_DEVICE inline void reduceCopyElements(const Step& step, int nSrcs, const void* const* srcs, int nDsts,
                                                void* const* dsts, size_t begin, size_t end, size_t tid,
                                                size_t nthreads) {
  for (size_t i = begin + tid; i < end; i += nthreads) {
    T acc = step.first(Access::template load<T>(srcs[0], i));
    for (int s = 1; s < nSrcs; ++s) {
      const T x = Access::template load<T>(srcs[s], i);
      acc = s == nSrcs - 1 ? step.last(acc, x) : step.mid(acc, x);
    }
    for (int d = 0; d < nDsts; ++d) Access::template store<T>(dsts[d], i, acc);
  }
}

// The pair type the device adds natively for T, where it does: __hadd2 takes either.
template <typename T>
struct NativePair;
#if WEFT_NATIVE_HALF2
template <>
struct NativePair<Half> {
  using type = __half2;
};
#endif
#if WEFT_NATIVE_BF162
template <>
struct NativePair<BFloat16> {
  using type = __nv_bfloat162;
};
#endif
#if WEFT_NATIVE_HALF2 || WEFT_NATIVE_BF162
// A pack of T seen as the pairs one instruction each adds.
template <typename T>
struct alignas(16) PackPairs {
  using Pair = typename NativePair<T>::type;
  static constexpr int kPairs = static_cast<int>(kPackBytes / sizeof(Pair));
  Pair v[kPairs];
};
template <typename T>
WEFT_DEVICE inline void addPairs(Pack<T>& acc, const Pack<T>& x) {
  PackPairs<T> a = bitCast<PackPairs<T>>(acc);
  const PackPairs<T> b = bitCast<PackPairs<T>>(x);
  WEFT_UNROLL for (int i = 0; i < PackPairs<T>::kPairs; ++i) a.v[i] = __hadd2(a.v[i], b.v[i]);
  acc = bitCast<Pack<T>>(a);
}
#endif

// Whether combinePack adds packs of T natively (above) for Step: a sum, at every step.
template <typename T, typename Step>
struct NativePairSum {
  static constexpr bool value =
      std::is_same<Step, PairwiseStep<T, OpSum<T>>>::value &&
      ((std::is_same<T, Half>::value && WEFT_NATIVE_HALF2) || (std::is_same<T, BFloat16>::value && WEFT_NATIVE_BF162));
};

template <typename T, typename Step>
WEFT_HOST_DEVICE inline void combinePack(const Step& step, bool last, Pack<T>& acc, const Pack<T>& x) {
#if WEFT_NATIVE_HALF2 || WEFT_NATIVE_BF162
  if constexpr (NativePairSum<T, Step>::value) {
    addPairs(acc, x);
    return;
  }
#endif
  if (last) {
    WEFT_UNROLL for (int e = 0; e < Pack<T>::kElems; ++e) acc.e[e] = step.last(acc.e[e], x.e[e]);
  } else {
    WEFT_UNROLL for (int e = 0; e < Pack<T>::kElems; ++e) acc.e[e] = step.mid(acc.e[e], x.e[e]);
  }
}

// kU packs, p, p + stride, ..., of buffers whose pack 0 starts at byte `offset` (16-aligned).
template <int kU, typename T, typename Step>
WEFT_HOST_DEVICE inline void reduceCopyPackGroup(const Step& step, int nSrcs, const void* const* srcs, int nDsts,
                                                 void* const* dsts, size_t offset, size_t p, size_t stride) {
  Pack<T> acc[kU];
  // Every load of a source is issued before the combine that needs it.
  WEFT_UNROLL for (int u = 0; u < kU; ++u) {
    acc[u] = loadPack<T>(static_cast<const char*>(srcs[0]) + offset + (p + u * stride) * kPackBytes);
  }
  WEFT_UNROLL for (int u = 0; u < kU; ++u) {
    WEFT_UNROLL for (int e = 0; e < Pack<T>::kElems; ++e) acc[u].e[e] = step.first(acc[u].e[e]);
  }
  for (int s = 1; s < nSrcs; ++s) {
    Pack<T> x[kU];
    WEFT_UNROLL for (int u = 0; u < kU; ++u) {
      x[u] = loadPack<T>(static_cast<const char*>(srcs[s]) + offset + (p + u * stride) * kPackBytes);
    }
    const bool last = s == nSrcs - 1;
    WEFT_UNROLL for (int u = 0; u < kU; ++u) combinePack(step, last, acc[u], x[u]);
  }
  for (int d = 0; d < nDsts; ++d) {
    WEFT_UNROLL for (int u = 0; u < kU; ++u) {
      storePack(static_cast<char*>(dsts[d]) + offset + (p + u * stride) * kPackBytes, acc[u]);
    }
  }
}

// Packs [0, nPacks) from byte `offset`: pack p goes to thread p % nthreads, so neighbouring
// threads touch neighbouring 16 bytes (coalesced), kUnroll packs at a time while they last.
template <typename T, typename Step>
WEFT_HOST_DEVICE inline void reduceCopyPacks(const Step& step, int nSrcs, const void* const* srcs, int nDsts,
                                             void* const* dsts, size_t offset, size_t nPacks, size_t tid,
                                             size_t nthreads) {
  size_t p = tid;
  for (; p + (kUnroll - 1) * nthreads < nPacks; p += kUnroll * nthreads) {
    reduceCopyPackGroup<kUnroll, T>(step, nSrcs, srcs, nDsts, dsts, offset, p, nthreads);
  }
  for (; p < nPacks; p += nthreads) reduceCopyPackGroup<1, T>(step, nSrcs, srcs, nDsts, dsts, offset, p, nthreads);
}

// dsts[j][i] = srcs[0][i] step srcs[1][i] step ... for i < count, the share of thread tid of
// nthreads. 1 <= nSrcs <= kMaxSrcs, 1 <= nDsts <= kMaxDsts; count 0 touches nothing.
template <typename T, typename Step>
WEFT_HOST_DEVICE inline void reduceCopy(const Step& step, int nSrcs, const void* const* srcs, int nDsts,
                                        void* const* dsts, size_t count, size_t tid, size_t nthreads) {
  if (count == 0) return;
  const AccessPlan plan = planAccess<T>(nSrcs, srcs, nDsts, dsts, count);
  switch (plan.path) {
    case AccessPath::kBytes:
      reduceCopyElements<T, ByteAccess>(step, nSrcs, srcs, nDsts, dsts, 0, count, tid, nthreads);
      return;
    case AccessPath::kElements:
      reduceCopyElements<T, TypedAccess>(step, nSrcs, srcs, nDsts, dsts, 0, count, tid, nthreads);
      return;
    case AccessPath::kPacks: {
      const size_t packed = plan.nPacks * Pack<T>::kElems;
      reduceCopyElements<T, TypedAccess>(step, nSrcs, srcs, nDsts, dsts, 0, plan.head, tid, nthreads);
      reduceCopyPacks<T>(step, nSrcs, srcs, nDsts, dsts, plan.head * sizeof(T), plan.nPacks, tid, nthreads);
      reduceCopyElements<T, TypedAccess>(step, nSrcs, srcs, nDsts, dsts, plan.head + packed, count, tid, nthreads);
      return;
    }
  }
}

// dst[i] = src[i] for i < count (any alignments).
template <typename T>
WEFT_HOST_DEVICE inline void copy(void* dst, const void* src, size_t count, size_t tid, size_t nthreads) {
  const void* srcs[1] = {src};
  void* dsts[1] = {dst};
  reduceCopy<T>(CopyStep<T>{}, 1, srcs, 1, dsts, count, tid, nthreads);
}

// dst[i] = a[i] step b[i] for i < count: reduce.h's reduceInto / sumDivideInto for any alignment.
template <typename T, typename Step>
WEFT_HOST_DEVICE inline void reduce(const Step& step, void* dst, const void* a, const void* b, size_t count, size_t tid,
                                    size_t nthreads) {
  const void* srcs[2] = {a, b};
  void* dsts[1] = {dst};
  reduceCopy<T>(step, 2, srcs, 1, dsts, count, tid, nthreads);
}

}  // namespace kernel
}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_DEVICE_REDUCE_COPY_CUH_
