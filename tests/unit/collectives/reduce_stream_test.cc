// Tests for the reductions that write their destination with non-temporal stores (reduce.h:
// reduceStreamFunction, the fused kernels of the plain host loop; reduceStreaming, the piecewise
// path for any ReduceFn). Each must store exactly what reduceCopyFunction / reduceFunction
// store, for every type and op, every length around the 64-byte block and the 16 KiB piece,
// every destination alignment, with and without the second (cached) output, in place, and
// write nothing outside its outputs.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/reduce.h"
#include "collectives/reduce_lowp.h"

namespace weft {
namespace coll {
namespace {

constexpr unsigned char kGuard = 0xEE;
constexpr unsigned char kGuard2 = 0xCC;

// Inputs of small magnitudes (every type stays finite), bytes varying so that every lane differs.
std::vector<unsigned char> input(size_t bytes, int seed) {
  std::vector<unsigned char> v(bytes);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<unsigned char>((i * (7 + 6 * seed) + 3 + 2 * seed) % 61);
  return v;
}

// Runs `streamed(dst, dst2, a, b, n, divisor)` against reduceCopyFunction(type, op) for one
// length and destination offset (bytes past a 64-byte boundary), in both output shapes.
template <typename Streamed>
void expectSameAsReduceCopy(weftDataType_t type, weftRedOp_t op, size_t n, size_t dstOff, uint32_t divisor,
                            Streamed streamed) {
  const size_t es = dataTypeSize(type);
  const size_t bytes = n * es;
  const std::vector<unsigned char> a = input(bytes, 0), b = input(bytes, 1);
  std::vector<unsigned char> want(bytes + 1), want2(bytes + 1);
  reduceCopyFunction(type, op)(want.data(), want2.data(), a.data(), b.data(), n, divisor);
  for (bool withKept : {true, false}) {
    // 64-byte aligned storage with guards on both sides of each output.
    std::vector<unsigned char> dstMem(bytes + 256, kGuard), keptMem(bytes + 256, kGuard2);
    auto align64 = [](unsigned char* p) { return p + ((64 - (reinterpret_cast<uintptr_t>(p) & 63)) & 63); };
    unsigned char* dst = align64(dstMem.data()) + 64 + dstOff;
    unsigned char* kept = align64(keptMem.data()) + 64 + 3 * es;
    streamed(dst, withKept ? kept : nullptr, a.data(), b.data(), n, divisor);
    const std::string what = std::string(dataTypeName(type)) + " op " + std::to_string(op) + " n " + std::to_string(n) +
                             " dst +" + std::to_string(dstOff) + " divisor " + std::to_string(divisor) +
                             (withKept ? " with" : " without") + " the kept output";
    ASSERT_EQ(std::memcmp(dst, want.data(), bytes), 0) << what;
    for (unsigned char* p = dstMem.data(); p < dstMem.data() + dstMem.size(); ++p) {
      if (p < dst || p >= dst + bytes) {
        ASSERT_EQ(*p, kGuard) << what << ": wrote outside dst";
      }
    }
    for (unsigned char* p = keptMem.data(); p < keptMem.data() + keptMem.size(); ++p) {
      const bool inside = withKept && p >= kept && p < kept + bytes;
      if (inside) {
        ASSERT_EQ(*p, want2[p - kept]) << what << ": kept output";
      } else {
        ASSERT_EQ(*p, kGuard2) << what << ": wrote outside the kept output";
      }
    }
  }
}

// The fused kernels exist for the types of the plain host loop, and for half and bfloat16 where
// a vectorised variant runs them (x86); not for FP8 (piecewise).
TEST(ReduceStream, FusedKernelForEveryPlainTypeAndTheTwoByteFloatsNoneForFp8) {
#if defined(__x86_64__)
  const bool twoByte = defaultHostSimd() != HostSimd::kScalar;
#else
  const bool twoByte = false;
#endif
  for (int t = 0; t < weftNumTypes; ++t) {
    const auto type = static_cast<weftDataType_t>(t);
    const bool reducedFloat = type == weftFloat8e4m3 || type == weftFloat8e5m2 ||
                              (!twoByte && (type == weftFloat16 || type == weftBfloat16));
    for (int o = 0; o < weftNumOps; ++o) {
      const auto op = static_cast<weftRedOp_t>(o);
      const bool builtIn = reduceFunction(type, op) != nullptr;
      EXPECT_EQ(reduceStreamFunction(type, op) != nullptr, builtIn && !reducedFloat)
          << dataTypeName(type) << " op " << o;
    }
  }
  EXPECT_EQ(reduceStreamFunction(static_cast<weftDataType_t>(99), weftSum), nullptr);
}

// Every SIMD variant this CPU runs (float sum has a 256-bit kernel of its own from avx2 up).
TEST(ReduceStream, FusedKernelStoresWhatReduceCopyStoresAtEverySizeAndAlignment) {
  for (int s = 0; s < static_cast<int>(HostSimd::kCount); ++s) {
    const auto simd = static_cast<HostSimd>(s);
    if (!hostSimdSupported(simd)) continue;
    for (int t = 0; t < weftNumTypes; ++t) {
      for (int o = 0; o < weftNumOps; ++o) {
        const auto type = static_cast<weftDataType_t>(t);
        const auto op = static_cast<weftRedOp_t>(o);
        ReduceCopyFn fn = reduceStreamFunctionFor(type, op, simd);
        if (fn == nullptr) continue;
        const size_t es = dataTypeSize(type);
        const size_t block = 64 / es;
        for (size_t n :
             {size_t{0}, size_t{1}, block - 1, block, block + 1, 2 * block + 3, size_t{1000}, size_t{4099}}) {
          // Every element offset inside a cache line: 16-byte aligned ones stream, the others
          // take normal stores.
          for (size_t dstOff = 0; dstOff < 64; dstOff += es) {
            for (uint32_t divisor : {0u, 3u}) {
              expectSameAsReduceCopy(type, op, n, dstOff, divisor, fn);
            }
          }
        }
      }
    }
  }
}

// The piecewise path (for the vectorised reduced-float kernels, but any ReduceFn works): lengths
// around the 16 KiB piece, for every type and op.
TEST(ReduceStream, PiecewiseStoresWhatReduceCopyStoresAcrossPieces) {
  for (int t = 0; t < weftNumTypes; ++t) {
    for (int o = 0; o < weftNumOps; ++o) {
      const auto type = static_cast<weftDataType_t>(t);
      const auto op = static_cast<weftRedOp_t>(o);
      ReduceFn reduce = reduceFunction(type, op);
      if (reduce == nullptr) continue;
      const size_t es = dataTypeSize(type);
      const size_t piece = 16 * 1024 / es;
      auto piecewise = [&](void* dst, void* kept, const void* a, const void* b, size_t n, uint32_t divisor) {
        reduceStreaming(reduce, dst, kept, a, b, n, es, divisor);
      };
      for (size_t n : {size_t{0}, size_t{1}, size_t{63}, piece - 1, piece, piece + 1, 3 * piece + 5}) {
        for (size_t dstOff : {size_t{0}, es, 8 * es % 64, 64 - es}) {
          expectSameAsReduceCopy(type, op, n, dstOff, 3, piecewise);
        }
      }
    }
  }
}

// In place (dst is an input exactly, as in an in-place all-reduce): both paths read each block
// before they overwrite it.
TEST(ReduceStream, InPlaceIntoEitherInput) {
  for (weftDataType_t type : {weftFloat32, weftFloat64, weftInt32, weftBfloat16, weftFloat8e4m3}) {
    const size_t es = dataTypeSize(type);
    const size_t n = 3 * (16 * 1024 / es) + 77;
    const std::vector<unsigned char> a = input(n * es, 0), b = input(n * es, 1);
    std::vector<unsigned char> want(n * es);
    reduceFunction(type, weftSum)(want.data(), a.data(), b.data(), n, 0);
    for (bool intoA : {true, false}) {
      for (bool fused : {true, false}) {
        ReduceCopyFn fn = reduceStreamFunction(type, weftSum);
        if (fused && fn == nullptr) continue;
        std::vector<unsigned char> x = a, y = b;
        void* dst = intoA ? x.data() : y.data();
        if (fused) {
          fn(dst, nullptr, x.data(), y.data(), n, 0);
        } else {
          reduceStreaming(reduceFunction(type, weftSum), dst, nullptr, x.data(), y.data(), n, es, 0);
        }
        EXPECT_EQ(std::memcmp(dst, want.data(), n * es), 0)
            << dataTypeName(type) << (intoA ? " into a" : " into b") << (fused ? " fused" : " piecewise");
      }
    }
  }
}

}  // namespace
}  // namespace coll
}  // namespace weft
