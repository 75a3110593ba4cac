// Host reduction functions, one per (datatype, op), for the host executor.
//
// The loops work in blocks: load a block of a and b into locals, combine, store. Because every
// load of a block precedes its stores, dst may alias a or b, and g++ -O2 (whose cost model does
// not version loops for aliasing or add epilogues) vectorises the fixed-length inner loops for
// the float and integer types. The tail runs element by element. These loops are also the
// reference (HostSimd::kScalar) for the reduced-precision types, which run the vectorised
// variants of reduce_lowp.cc by default.
#include "collectives/reduce.h"

#include <cstdint>
#include <cstring>

#include "collectives/dispatch.h"
#include "collectives/reduce_lowp.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace weft {
namespace coll {
namespace {

// One block of 64 bytes to dst (16-byte aligned) with non-temporal stores.
inline void streamBlock(void* dst, const void* block) {
#if defined(__x86_64__)
  const auto* s = static_cast<const __m128i*>(block);
  auto* d = static_cast<__m128i*>(dst);
  const __m128i v0 = _mm_loadu_si128(s), v1 = _mm_loadu_si128(s + 1);
  const __m128i v2 = _mm_loadu_si128(s + 2), v3 = _mm_loadu_si128(s + 3);
  _mm_stream_si128(d, v0);
  _mm_stream_si128(d + 1, v1);
  _mm_stream_si128(d + 2, v2);
  _mm_stream_si128(d + 3, v3);
#else
  std::memcpy(dst, block, 64);
#endif
}

// With kTwoOutputs the result is also stored to dst2 in the same pass (a reduction whose result
// is both kept and sent on reads its inputs once). With kStreamDst the whole blocks go to dst
// (64-byte aligned by streamLoop) with non-temporal stores, the tail and dst2 with normal ones;
// the caller fences.
template <bool kTwoOutputs, typename T, typename Combine, bool kStreamDst = false>
inline void hostLoop(T* dst, T* dst2, const T* a, const T* b, size_t n, Combine combine) {
  constexpr size_t kBlock = 64 / sizeof(T);  // one cache line
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    T va[kBlock], vb[kBlock];
    for (size_t k = 0; k < kBlock; ++k) va[k] = a[i + k];
    for (size_t k = 0; k < kBlock; ++k) vb[k] = b[i + k];
    for (size_t k = 0; k < kBlock; ++k) va[k] = combine(va[k], vb[k]);
    if constexpr (kStreamDst) {
      streamBlock(dst + i, va);
    } else {
      for (size_t k = 0; k < kBlock; ++k) dst[i + k] = va[k];
    }
    if (kTwoOutputs) {
      for (size_t k = 0; k < kBlock; ++k) dst2[i + k] = va[k];
    }
  }
  for (; i < n; ++i) {
    T v = combine(a[i], b[i]);
    dst[i] = v;
    if (kTwoOutputs) dst2[i] = v;
  }
}

// hostLoop streaming into dst, keeping dst2 (when not null) in the cache. The elements up to
// dst's next 64-byte boundary take normal stores, so that every streamed block fills one whole
// cache line; a dst that is not even 16-byte aligned takes normal stores throughout.
template <typename T, typename Combine>
void streamLoop(T* dst, T* dst2, const T* a, const T* b, size_t n, Combine combine) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(dst);
  size_t head = (at & 15) != 0 ? n : ((64 - (at & 63)) & 63) / sizeof(T);
  if (head > n) head = n;
  if (dst2 != nullptr) {
    hostLoop<true>(dst, dst2, a, b, head, combine);
    hostLoop<true, T, Combine, true>(dst + head, dst2 + head, a + head, b + head, n - head, combine);
  } else {
    hostLoop<false>(dst, dst2, a, b, head, combine);
    hostLoop<false, T, Combine, true>(dst + head, dst2, a + head, b + head, n - head, combine);
  }
  fenceStreams();
}

template <typename T, typename Op>
void reduceStreamHost(void* dst, void* dst2, const void* a, const void* b, size_t n, uint32_t /*divisor*/) {
  streamLoop(static_cast<T*>(dst), static_cast<T*>(dst2), static_cast<const T*>(a), static_cast<const T*>(b), n,
             [](T x, T y) { return Op::apply(x, y); });
}

template <typename T>
void avgStreamHost(void* dst, void* dst2, const void* a, const void* b, size_t n, uint32_t divisor) {
  if (divisor <= 1) return reduceStreamHost<T, OpSum<T>>(dst, dst2, a, b, n, divisor);
  streamLoop(static_cast<T*>(dst), static_cast<T*>(dst2), static_cast<const T*>(a), static_cast<const T*>(b), n,
             [divisor](T x, T y) { return sumDivide(x, y, divisor); });
}

#if defined(__x86_64__)
// Float sum with 256-bit loads and stores, kStream: streaming into dst (the case of a large out-of-
// place host all-reduce: one pass of the SSE2 block loop above moved ~5 % less here, perf/RESULTS.md
// session 13); otherwise normal stores (in place: the SSE2 loop ran ~15 % behind half's AVX-512
// one at 64 MiB, session 14). The same additions as OpSum<float>, so the same bits. Streaming,
// elements up to dst's 64-byte boundary, the tail, and a dst not aligned to its element take
// normal stores.
template <bool kStream>
__attribute__((target("avx2"))) void sumFloatAvx2(void* dst, void* dst2, const void* a, const void* b, size_t n,
                                                  uint32_t /*divisor*/) {
  float* d = static_cast<float*>(dst);
  float* d2 = static_cast<float*>(dst2);
  const float* x = static_cast<const float*>(a);
  const float* y = static_cast<const float*>(b);
  const auto plus = [](float p, float q) { return p + q; };
  size_t head = 0;
  if constexpr (kStream) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(d);
    head = (at & 3) != 0 ? n : ((64 - (at & 63)) & 63) / sizeof(float);
    if (head > n) head = n;
    d2 != nullptr ? hostLoop<true>(d, d2, x, y, head, plus) : hostLoop<false>(d, d2, x, y, head, plus);
  }
  size_t i = head;
  for (; i + 16 <= n; i += 16) {
    const __m256 v0 = _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i));
    const __m256 v1 = _mm256_add_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8));
    if constexpr (kStream) {
      _mm256_stream_ps(d + i, v0);
      _mm256_stream_ps(d + i + 8, v1);
    } else {
      _mm256_storeu_ps(d + i, v0);
      _mm256_storeu_ps(d + i + 8, v1);
    }
    if (d2 != nullptr) {
      _mm256_storeu_ps(d2 + i, v0);
      _mm256_storeu_ps(d2 + i + 8, v1);
    }
  }
  if (d2 != nullptr) {
    hostLoop<true>(d + i, d2 + i, x + i, y + i, n - i, plus);
  } else {
    hostLoop<false>(d + i, d2, x + i, y + i, n - i, plus);
  }
  if constexpr (kStream) _mm_sfence();
}

void sumFloatAvx2One(void* dst, const void* a, const void* b, size_t n, uint32_t divisor) {
  sumFloatAvx2<false>(dst, nullptr, a, b, n, divisor);
}

// Float sum on a CPU with AVX2 (the process's variant, or the one a test names).
bool floatSumAvx2(bool isFloat, weftRedOp_t op, HostSimd simd) {
  return isFloat && op == weftSum && simd >= HostSimd::kAvx2;
}
#endif

template <bool kTwoOutputs, typename T, typename Op>
void reduceHost(void* dst, void* dst2, const void* a, const void* b, size_t n, uint32_t /*divisor*/) {
  hostLoop<kTwoOutputs>(static_cast<T*>(dst), static_cast<T*>(dst2), static_cast<const T*>(a),
                        static_cast<const T*>(b), n, [](T x, T y) { return Op::apply(x, y); });
}

template <bool kTwoOutputs, typename T>
void avgHost(void* dst, void* dst2, const void* a, const void* b, size_t n, uint32_t divisor) {
  if (divisor <= 1) return reduceHost<kTwoOutputs, T, OpSum<T>>(dst, dst2, a, b, n, divisor);
  hostLoop<kTwoOutputs>(static_cast<T*>(dst), static_cast<T*>(dst2), static_cast<const T*>(a),
                        static_cast<const T*>(b), n, [divisor](T x, T y) { return sumDivide(x, y, divisor); });
}

template <typename T>
void preMulHost(void* dst, void* dst2, const void* own, const void* in, size_t n, const void* scalar) {
  if (n == 0) return;  // touches nothing, the scalar included
  T s;
  std::memcpy(&s, scalar, sizeof(T));
  T* d = static_cast<T*>(dst);
  T* d2 = static_cast<T*>(dst2);
  const T* x = static_cast<const T*>(own);
  if (in == nullptr) {
    // A copy: the same blocked loop with the second operand ignored.
    if (d2 != nullptr) return hostLoop<true>(d, d2, x, x, n, [s](T a, T) { return preMul(a, s); });
    return hostLoop<false>(d, d2, x, x, n, [s](T a, T) { return preMul(a, s); });
  }
  const T* b = static_cast<const T*>(in);
  auto combine = [s](T a, T y) { return OpSum<T>::apply(preMul(a, s), y); };
  if (d2 != nullptr) return hostLoop<true>(d, d2, x, b, n, combine);
  hostLoop<false>(d, d2, x, b, n, combine);
}

template <typename T, typename Op>
void reduceOne(void* dst, const void* a, const void* b, size_t n, uint32_t divisor) {
  reduceHost<false, T, Op>(dst, nullptr, a, b, n, divisor);
}

template <typename T>
void avgOne(void* dst, const void* a, const void* b, size_t n, uint32_t divisor) {
  avgHost<false, T>(dst, nullptr, a, b, n, divisor);
}

// The host function of an op for type T (dispatch.h's op tags; premul-sum has its own entry,
// preMulHost, so its tag finds none here).
template <typename T, typename Fn, typename Pairwise, typename Avg>
Fn hostFunctionFor(weftRedOp_t op, Pairwise pairwise, Avg avg) {
  return withRedOp<T>(op, Fn{nullptr}, [&](auto tag) -> Fn {
    using Tag = decltype(tag);
    if constexpr (IsPairwiseOp<Tag>::value) {
      return pairwise(tag);
    } else if constexpr (std::is_same<Tag, AvgOp>::value) {
      return avg();
    } else {
      return nullptr;
    }
  });
}

template <typename T>
ReduceFn functionFor(weftRedOp_t op) {
  return hostFunctionFor<T, ReduceFn>(
      op, [](auto tag) -> ReduceFn { return reduceOne<T, typename decltype(tag)::Functor>; },
      []() -> ReduceFn { return avgOne<T>; });
}

template <typename T>
ReduceCopyFn copyFunctionFor(weftRedOp_t op) {
  return hostFunctionFor<T, ReduceCopyFn>(
      op, [](auto tag) -> ReduceCopyFn { return reduceHost<true, T, typename decltype(tag)::Functor>; },
      []() -> ReduceCopyFn { return avgHost<true, T>; });
}

template <typename T>
ReduceCopyFn streamFunctionFor(weftRedOp_t op) {
  return hostFunctionFor<T, ReduceCopyFn>(
      op, [](auto tag) -> ReduceCopyFn { return reduceStreamHost<T, typename decltype(tag)::Functor>; },
      []() -> ReduceCopyFn { return avgStreamHost<T>; });
}

// Calls pick.template operator()<T>() for the storage type of `type` (dispatch.h).
template <typename Pick>
auto dispatchType(weftDataType_t type, Pick pick) -> decltype(pick.template operator()<float>()) {
  using Fn = decltype(pick.template operator()<float>());
  return withDataType(type, Fn{nullptr},
                      [&](auto t) -> Fn { return pick.template operator()<typename decltype(t)::type>(); });
}

struct PickReduce {
  weftRedOp_t op;
  HostSimd simd;
  template <typename T>
  ReduceFn operator()() const {
#if defined(__x86_64__)
    if (floatSumAvx2(std::is_same<T, float>::value, op, simd)) return sumFloatAvx2One;
#endif
    return functionFor<T>(op);
  }
};

struct PickReduceCopy {
  weftRedOp_t op;
  HostSimd simd;
  template <typename T>
  ReduceCopyFn operator()() const {
#if defined(__x86_64__)
    if (floatSumAvx2(std::is_same<T, float>::value, op, simd)) return sumFloatAvx2<false>;
#endif
    return copyFunctionFor<T>(op);
  }
};

struct PickReduceStream {
  weftRedOp_t op;
  HostSimd simd;
  template <typename T>
  ReduceCopyFn operator()() const {
#if defined(__x86_64__)
    if (floatSumAvx2(std::is_same<T, float>::value, op, simd)) return sumFloatAvx2<true>;
#endif
    return IsReducedFloat<T>::value ? nullptr : streamFunctionFor<T>(op);
  }
};

struct PickPreMul {
  template <typename T>
  PreMulFn operator()() const { return preMulHost<T>; }
};

}  // namespace

PreMulFn preMulFunctionFor(weftDataType_t type, HostSimd simd) {
  if (PreMulFn fn = lowpPreMulFunction(type, simd)) return fn;
  return dispatchType(type, PickPreMul{});
}

ReduceCopyFn reduceCopyFunctionFor(weftDataType_t type, weftRedOp_t op, HostSimd simd) {
  if (ReduceCopyFn fn = lowpReduceCopyFunction(type, op, simd)) return fn;
  return dispatchType(type, PickReduceCopy{op, simd});
}

ReduceFn reduceFunctionFor(weftDataType_t type, weftRedOp_t op, HostSimd simd) {
  if (ReduceFn fn = lowpReduceFunction(type, op, simd)) return fn;
  return dispatchType(type, PickReduce{op, simd});
}

PreMulFn preMulFunction(weftDataType_t type) { return preMulFunctionFor(type, defaultHostSimd()); }

ReduceCopyFn reduceStreamFunctionFor(weftDataType_t type, weftRedOp_t op, HostSimd simd) {
  if (ReduceCopyFn fn = lowpReduceStreamFunction(type, op, simd)) return fn;
  return dispatchType(type, PickReduceStream{op, simd});
}

namespace {

// Every (type, op)'s functions for the process's SIMD variant, picked once: a collective asks
// for them on every call, and the pick walks the variant ladder (about 90 instructions each).
struct HostReduceTable {
  ReduceFn reduce[weftNumTypes][weftNumOps];
  ReduceCopyFn reduceCopy[weftNumTypes][weftNumOps];
  ReduceCopyFn reduceStream[weftNumTypes][weftNumOps];
  HostReduceTable() {
    const HostSimd simd = defaultHostSimd();
    for (int t = 0; t < weftNumTypes; ++t) {
      for (int o = 0; o < weftNumOps; ++o) {
        const auto type = static_cast<weftDataType_t>(t);
        const auto op = static_cast<weftRedOp_t>(o);
        reduce[t][o] = reduceFunctionFor(type, op, simd);
        reduceCopy[t][o] = reduceCopyFunctionFor(type, op, simd);
        reduceStream[t][o] = reduceStreamFunctionFor(type, op, simd);
      }
    }
  }
};

const HostReduceTable& hostReduceTable() {
  static const HostReduceTable table;
  return table;
}

bool inTable(weftDataType_t type, weftRedOp_t op) {
  return static_cast<unsigned>(type) < weftNumTypes && static_cast<unsigned>(op) < weftNumOps;
}

}  // namespace

ReduceCopyFn reduceCopyFunction(weftDataType_t type, weftRedOp_t op) {
  if (inTable(type, op)) return hostReduceTable().reduceCopy[type][op];
  return reduceCopyFunctionFor(type, op, defaultHostSimd());
}

ReduceCopyFn reduceStreamFunction(weftDataType_t type, weftRedOp_t op) {
  if (inTable(type, op)) return hostReduceTable().reduceStream[type][op];
  return nullptr;
}

ReduceFn reduceFunction(weftDataType_t type, weftRedOp_t op) {
  if (inTable(type, op)) return hostReduceTable().reduce[type][op];
  return reduceFunctionFor(type, op, defaultHostSimd());
}

namespace {

// copyStreaming without its fence: the caller fences once after a run of them.
void streamUnfenced(char* d, const char* s, size_t bytes) {
#if defined(__x86_64__)
  // Up to the destination's next 64-byte boundary by memcpy: the streaming stores are aligned.
  const size_t head = (64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63;
  if (bytes < head + 64) {
    std::memcpy(d, s, bytes);
    return;
  }
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i v2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i v3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), v0);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), v1);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), v2);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), v3);
  }
  std::memcpy(d + i, s + i, bytes - i);
#else
  std::memcpy(d, s, bytes);
#endif
}

}  // namespace

void fenceStreams() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

void copyStreamingUnfenced(void* dst, const void* src, size_t bytes) {
  streamUnfenced(static_cast<char*>(dst), static_cast<const char*>(src), bytes);
}

void copyStreaming(void* dst, const void* src, size_t bytes) {
  streamUnfenced(static_cast<char*>(dst), static_cast<const char*>(src), bytes);
  fenceStreams();
}

void reduceStreaming(ReduceFn reduce, void* dst, void* dst2, const void* a, const void* b, size_t n, size_t elemSize,
                     uint32_t divisor) {
  // Pieces small enough that the cached result is still in the first-level cache when it is
  // streamed out; a whole number of cache lines, so that the pieces' streaming stays aligned.
  constexpr size_t kPieceBytes = 16 * 1024;
  alignas(64) static thread_local char staging[kPieceBytes];
  const size_t pieceElems = kPieceBytes / elemSize;
  char* d = static_cast<char*>(dst);
  char* d2 = static_cast<char*>(dst2);
  const char* pa = static_cast<const char*>(a);
  const char* pb = static_cast<const char*>(b);
  for (size_t first = 0; first < n; first += pieceElems) {
    const size_t m = n - first < pieceElems ? n - first : pieceElems;
    const size_t at = first * elemSize;
    char* cached = d2 != nullptr ? d2 + at : staging;
    reduce(cached, pa + at, pb + at, m, divisor);
    streamUnfenced(d + at, cached, m * elemSize);
  }
  fenceStreams();
}

}  // namespace coll
}  // namespace weft
