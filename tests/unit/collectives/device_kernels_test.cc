// Tests for collectives/device/: the element-wise templates that kernels.cu runs on the GPUs,
// run here by g++ with (tid, nthreads) = (t, T) for every t < T.
//  - reduceCopy for every datatype x op x k sources x m destinations x size x pointer
//    misalignment x thread count, bit for bit against a chain of reduce.cc's host functions
//    (pairwise, left to right, avg's divisor on the last step), with guard bytes around every
//    destination and the sources checked unchanged; in place; copy() and reduce().
//  - the access plan (which path a set of pointers takes) and that every element has exactly
//    one owning thread on each path;
//  - the LL line format: round trips at every alignment, line contents, readiness by flag;
//  - the launch shape (whole warps, bounded blocks).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "collectives/datatypes.h"
#include "collectives/device/launch_shape.h"
#include "collectives/device/ll.cuh"
#include "collectives/device/reduce_copy.cuh"
#include "collectives/reduce.h"

namespace weft {
namespace coll {
namespace kernel {
namespace {

template <typename T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) for the storage type of `type`.
template <typename F>
void forType(weftDataType_t type, F&& f) {
  switch (type) {
    case weftInt8:
      return f(Tag<int8_t>{});
    case weftUint8:
      return f(Tag<uint8_t>{});
    case weftInt32:
      return f(Tag<int32_t>{});
    case weftUint32:
      return f(Tag<uint32_t>{});
    case weftInt64:
      return f(Tag<int64_t>{});
    case weftUint64:
      return f(Tag<uint64_t>{});
    case weftFloat16:
      return f(Tag<Half>{});
    case weftFloat32:
      return f(Tag<float>{});
    case weftFloat64:
      return f(Tag<double>{});
    case weftBfloat16:
      return f(Tag<BFloat16>{});
    case weftFloat8e4m3:
      return f(Tag<Fp8E4M3>{});
    case weftFloat8e5m2:
      return f(Tag<Fp8E5M2>{});
    default:
      FAIL() << "no storage type for datatype " << static_cast<int>(type);
  }
}

// Calls f(step) with the step kernels.cu uses for (T, op).
template <typename T, typename F>
void forStep(weftRedOp_t op, uint32_t divisor, F&& f) {
  switch (op) {
    case weftSum:
      return f(PairwiseStep<T, OpSum<T>>{});
    case weftProd:
      return f(PairwiseStep<T, OpProd<T>>{});
    case weftMax:
      return f(PairwiseStep<T, OpMax<T>>{});
    case weftMin:
      return f(PairwiseStep<T, OpMin<T>>{});
    case weftAvg:
      return f(AvgStep<T>{divisor});
    default:
      FAIL() << "no step for op " << static_cast<int>(op);
  }
}

template <typename T>
constexpr bool kIsFloat = IsReducedFloat<T>::value || std::is_floating_point<T>::value;

template <typename T>
bool isNan(T v) {
  if constexpr (IsReducedFloat<T>::value) {
    return std::isnan(static_cast<float>(v));
  } else if constexpr (std::is_floating_point<T>::value) {
    return std::isnan(v);
  } else {
    return false;
  }
}

template <typename T>
uint64_t bitsOf(T v) {
  uint64_t r = 0;
  std::memcpy(&r, &v, sizeof(T));
  return r;
}

// The same encoding, or both NaN (the host functions and the inlined template may order the
// operands of a commutative add differently, which picks a different NaN payload on x86).
template <typename T>
bool sameResult(T want, T got) {
  return (isNan(want) && isNan(got)) || bitsOf(want) == bitsOf(got);
}

// Mostly ordinary values (exact answers are easy to get wrong by one rounding), some arbitrary
// encodings, and the special values: zeros, infinities, NaN, extremes, denormals.
template <typename T>
T randomValue(std::mt19937_64& rng) {
  const uint64_t r = rng();
  T v;
  if constexpr (std::is_integral<T>::value) {
    v = static_cast<T>(r);
  } else {
    const int pick = static_cast<int>(r % 100);
    const double x = static_cast<double>(static_cast<int64_t>(r >> 20) % 16001 - 8000) / 1000.0;  // [-8, 8]
    if (pick < 70) {
      v = T(static_cast<float>(x));
      if constexpr (std::is_same<T, double>::value) v = x;
    } else if (pick < 94) {
      const uint64_t bits = rng();
      std::memcpy(&v, &bits, sizeof(T));
    } else {
      const float specials[] = {0.0f,
                                -0.0f,
                                std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN(),
                                std::numeric_limits<float>::max(),
                                std::numeric_limits<float>::denorm_min()};
      v = T(specials[rng() % (sizeof specials / sizeof specials[0])]);
    }
  }
  return v;
}

// A buffer whose data starts `offset` bytes past a 64-byte boundary, with guard bytes around.
class Buffer {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr unsigned char kFill = 0xA5;

  Buffer(size_t bytes, size_t offset) : bytes_(bytes), storage_(bytes + offset + 3 * kGuard, kFill) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(storage_.data());
    const uintptr_t aligned = (base + kGuard + 63) / 64 * 64;
    at_ = storage_.data() + (aligned - base) + offset;
  }
  unsigned char* data() { return at_; }
  // True if every byte outside [data, data + bytes) still holds kFill.
  bool guardsIntact() const {
    for (const unsigned char* p = storage_.data(); p < at_; ++p) {
      if (*p != kFill) return false;
    }
    for (const unsigned char* p = at_ + bytes_; p < storage_.data() + storage_.size(); ++p) {
      if (*p != kFill) return false;
    }
    return true;
  }

 private:
  size_t bytes_;
  std::vector<unsigned char> storage_;
  unsigned char* at_;
};

// Misalignment, in bytes, of each pointer (sources first, then destinations): the same for all
// (one plan for all: packs after a head, or bytes), or different (elements or bytes).
struct Misalignment {
  const char* name;
  size_t offsets[4];  // pointer j gets offsets[j % 4]
  size_t of(int j) const { return offsets[j % 4]; }
};
constexpr Misalignment kMisalignments[] = {
    {"all0", {0, 0, 0, 0}}, {"all1", {1, 1, 1, 1}},      {"all2", {2, 2, 2, 2}},
    {"all8", {8, 8, 8, 8}}, {"mixed0128", {0, 1, 2, 8}}, {"mixed08", {0, 8, 8, 0}},
};

constexpr int kSrcCounts[] = {1, 2, 3, 8};
constexpr int kDstCounts[] = {1, 2};
constexpr size_t kElementCounts[] = {0, 1, 15, 16, 17, 1000, 4099};
constexpr size_t kThreadCounts[] = {1, 7, 64};

// The answer from the host functions of reduce.cc: src[0] op src[1], then op src[2], ...,
// the last step with the divisor (avg), the others with 1 (sum only). One source: a copy.
template <typename T>
std::vector<T> hostReference(weftDataType_t type, weftRedOp_t op, const std::vector<std::vector<T>>& srcs,
                             uint32_t divisor) {
  std::vector<T> acc = srcs[0];
  const ReduceFn fn = reduceFunction(type, op);
  for (size_t s = 1; s < srcs.size(); ++s) {
    fn(acc.data(), acc.data(), srcs[s].data(), acc.size(), s + 1 == srcs.size() ? divisor : 1);
  }
  return acc;
}

// Runs reduceCopy as `nthreads` threads would, one after another (each element has one owner,
// so the order does not matter).
template <typename T, typename Step>
void runThreads(const Step& step, int nSrcs, const void* const* srcs, int nDsts, void* const* dsts, size_t count,
                size_t nthreads) {
  for (size_t t = 0; t < nthreads; ++t) reduceCopy<T>(step, nSrcs, srcs, nDsts, dsts, count, t, nthreads);
}

// Compares `count` elements at `got` (any alignment) with `want`; reports the first mismatch.
template <typename T>
::testing::AssertionResult matches(const std::vector<T>& want, const unsigned char* got) {
  for (size_t i = 0; i < want.size(); ++i) {
    T g;
    std::memcpy(&g, got + i * sizeof(T), sizeof(T));
    if (!sameResult(want[i], g)) {
      return ::testing::AssertionFailure()
             << "element " << i << ": want bits 0x" << std::hex << bitsOf(want[i]) << ", got 0x" << bitsOf(g);
    }
  }
  return ::testing::AssertionSuccess();
}

struct TypeOp {
  weftDataType_t type;
  weftRedOp_t op;
};

std::vector<TypeOp> allTypeOps() {
  std::vector<TypeOp> all;
  for (int t = 0; t < weftNumTypes; ++t) {
    for (int o = 0; o < weftNumOps; ++o) all.push_back({static_cast<weftDataType_t>(t), static_cast<weftRedOp_t>(o)});
  }
  return all;
}

class ReduceCopyTemplate : public ::testing::TestWithParam<TypeOp> {};

// Every k x m x count x misalignment x thread count, against the host functions.
TEST_P(ReduceCopyTemplate, MatchesHostFunctionsBitForBit) {
  const weftDataType_t type = GetParam().type;
  const weftRedOp_t op = GetParam().op;
  forType(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::mt19937_64 rng(1000u * static_cast<unsigned>(type) + static_cast<unsigned>(op));
    size_t runs = 0;
    for (int k : kSrcCounts) {
      const uint32_t divisor = static_cast<uint32_t>(k);  // avg over k ranks
      for (size_t count : kElementCounts) {
        std::vector<std::vector<T>> values(k, std::vector<T>(count));
        for (auto& v : values) {
          for (auto& x : v) x = randomValue<T>(rng);
        }
        const std::vector<T> want = hostReference(type, op, values, divisor);
        const size_t bytes = count * sizeof(T);
        for (int m : kDstCounts) {
          for (const Misalignment& mis : kMisalignments) {
            for (size_t nthreads : kThreadCounts) {
              std::vector<Buffer> srcBufs, dstBufs;
              const void* srcs[kMaxSrcs];
              void* dsts[kMaxDsts];
              for (int s = 0; s < k; ++s) {
                srcBufs.emplace_back(bytes, mis.of(s));
                if (bytes > 0) std::memcpy(srcBufs[s].data(), values[s].data(), bytes);
                srcs[s] = srcBufs[s].data();
              }
              for (int d = 0; d < m; ++d) {
                dstBufs.emplace_back(bytes, mis.of(k + d));
                dsts[d] = dstBufs[d].data();
              }
              forStep<T>(op, divisor, [&](auto step) { runThreads<T>(step, k, srcs, m, dsts, count, nthreads); });
              const std::string where = std::string(dataTypeName(type)) + " " + redOpName(op) +
                                        " k=" + std::to_string(k) + " m=" + std::to_string(m) +
                                        " count=" + std::to_string(count) + " " + mis.name +
                                        " threads=" + std::to_string(nthreads);
              for (int d = 0; d < m; ++d) {
                ASSERT_TRUE(matches(want, dstBufs[d].data())) << where << " dst " << d;
                ASSERT_TRUE(dstBufs[d].guardsIntact()) << where << ": wrote outside dst " << d;
              }
              for (int s = 0; s < k; ++s) {
                ASSERT_TRUE(bytes == 0 || std::memcmp(srcBufs[s].data(), values[s].data(), bytes) == 0)
                    << where << ": src " << s << " changed";
                ASSERT_TRUE(srcBufs[s].guardsIntact()) << where << ": wrote around src " << s;
              }
              ++runs;
            }
          }
        }
      }
    }
    EXPECT_EQ(runs, 4u * 7u * 2u * 6u * 3u);
  });
}

// A destination that is a source (the first or the last), as an in-place step uses it.
TEST_P(ReduceCopyTemplate, InPlace) {
  const weftDataType_t type = GetParam().type;
  const weftRedOp_t op = GetParam().op;
  forType(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::mt19937_64 rng(7u + static_cast<unsigned>(type) * 31u + static_cast<unsigned>(op));
    for (int k : {2, 3, 8}) {
      for (size_t count : kElementCounts) {
        for (int aliased : {0, k - 1}) {
          for (size_t offset : {size_t{0}, size_t{1}, size_t{8}}) {
            std::vector<std::vector<T>> values(k, std::vector<T>(count));
            for (auto& v : values) {
              for (auto& x : v) x = randomValue<T>(rng);
            }
            const std::vector<T> want = hostReference(type, op, values, static_cast<uint32_t>(k));
            std::vector<Buffer> bufs;
            const void* srcs[kMaxSrcs];
            for (int s = 0; s < k; ++s) {
              bufs.emplace_back(count * sizeof(T), offset);
              if (count > 0) std::memcpy(bufs[s].data(), values[s].data(), count * sizeof(T));
              srcs[s] = bufs[s].data();
            }
            Buffer other(count * sizeof(T), offset);
            void* dsts[2] = {bufs[aliased].data(), other.data()};
            forStep<T>(op, static_cast<uint32_t>(k),
                       [&](auto step) { runThreads<T>(step, k, srcs, 2, dsts, count, 7); });
            const std::string where = std::string(dataTypeName(type)) + " " + redOpName(op) +
                                      " k=" + std::to_string(k) + " count=" + std::to_string(count) + " dst=src" +
                                      std::to_string(aliased) + " offset=" + std::to_string(offset);
            ASSERT_TRUE(matches(want, bufs[aliased].data())) << where;
            ASSERT_TRUE(matches(want, other.data())) << where << " (second destination)";
            ASSERT_TRUE(bufs[aliased].guardsIntact()) << where;
          }
        }
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndOps, ReduceCopyTemplate, ::testing::ValuesIn(allTypeOps()),
                         [](const ::testing::TestParamInfo<TypeOp>& param) {
                           return std::string(dataTypeName(param.param.type)) + "_" + redOpName(param.param.op);
                         });

// Avg's divisor: 0 and 1 only sum (reduce.cc's intermediate step), others divide once, at the end.
TEST(ReduceCopyTemplateAvg, DivisorOnTheLastStepOnly) {
  const float a[3] = {1.0f, 2.0f, 4.0f}, b[3] = {2.0f, 3.0f, 5.0f}, c[3] = {3.0f, 5.0f, 6.0f};
  const void* srcs[3] = {a, b, c};
  float out[3];
  void* dsts[1] = {out};
  reduceCopy<float>(AvgStep<float>{3}, 3, srcs, 1, dsts, 3, 0, 1);
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out[1], 10.0f / 3.0f);
  EXPECT_EQ(out[2], 5.0f);
  for (uint32_t divisor : {0u, 1u}) {
    reduceCopy<float>(AvgStep<float>{divisor}, 3, srcs, 1, dsts, 3, 0, 1);
    EXPECT_EQ(out[1], 10.0f) << "divisor " << divisor;
  }
  // Integers: integer division toward zero of the wrapped sum.
  const int32_t x[2] = {-7, 2147483647}, y[2] = {0, 1};
  const void* isrcs[2] = {x, y};
  int32_t iout[2];
  void* idsts[1] = {iout};
  reduceCopy<int32_t>(AvgStep<int32_t>{2}, 2, isrcs, 1, idsts, 2, 0, 1);
  EXPECT_EQ(iout[0], -3);
  EXPECT_EQ(iout[1], std::numeric_limits<int32_t>::min() / 2);
  // One source is a copy, whatever the divisor.
  reduceCopy<float>(AvgStep<float>{4}, 1, srcs, 1, dsts, 3, 0, 1);
  EXPECT_EQ(out[2], 4.0f);
}

// Reduced precision rounds once per pairwise step, as the host does: for fp16, 2048 + 1 + 1
// is 2048 (each +1 is a tie that rounds to even), not 2050 (one rounding of the exact sum).
TEST(ReduceCopyTemplateRounding, HalfRoundsEveryStep) {
  const Half a[1] = {Half(2048.0f)}, b[1] = {Half(1.0f)}, c[1] = {Half(1.0f)};
  const void* srcs[3] = {a, b, c};
  Half out[1];
  void* dsts[1] = {out};
  reduceCopy<Half>(PairwiseStep<Half, OpSum<Half>>{}, 3, srcs, 1, dsts, 1, 0, 1);
  EXPECT_EQ(static_cast<float>(out[0]), 2048.0f);
}

TEST(ReduceCopyTemplateWrappers, CopyAndReduce) {
  std::vector<unsigned char> storage(4096 + 64);
  std::vector<uint16_t> src(1000), b(1000);
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = static_cast<uint16_t>(i * 7919u);
    b[i] = static_cast<uint16_t>(i);
  }
  for (size_t offset : {size_t{0}, size_t{1}, size_t{2}, size_t{6}}) {
    unsigned char* dst = storage.data() + offset;
    for (size_t t = 0; t < 5; ++t) copy<uint16_t>(dst, src.data(), src.size(), t, 5);
    ASSERT_EQ(std::memcmp(dst, src.data(), src.size() * 2), 0) << "offset " << offset;
    for (size_t t = 0; t < 5; ++t) {
      reduce<uint16_t>(PairwiseStep<uint16_t, OpSum<uint16_t>>{}, dst, dst, b.data(), src.size(), t, 5);
    }
    for (size_t i = 0; i < src.size(); ++i) {
      uint16_t got;
      std::memcpy(&got, dst + 2 * i, 2);
      ASSERT_EQ(got, static_cast<uint16_t>(src[i] + b[i])) << "offset " << offset << " element " << i;
    }
  }
}

// Which path a set of pointers takes, and the head and pack count of the packed path.
TEST(AccessPlanTest, PicksThePathFromTheAlignments) {
  alignas(64) static unsigned char mem[1024];
  auto plan = [](std::vector<unsigned char*> ptrs, size_t count, int nSrcs) {
    std::vector<const void*> srcs(ptrs.begin(), ptrs.begin() + nSrcs);
    std::vector<void*> dsts(ptrs.begin() + nSrcs, ptrs.end());
    return planAccess<float>(nSrcs, srcs.data(), static_cast<int>(dsts.size()), dsts.data(), count);
  };
  AccessPlan p = plan({mem, mem + 64, mem + 128}, 100, 2);
  EXPECT_EQ(p.path, AccessPath::kPacks);
  EXPECT_EQ(p.head, 0u);
  EXPECT_EQ(p.nPacks, 25u);
  p = plan({mem + 4, mem + 68, mem + 132}, 100, 2);  // 4 bytes past: 3 floats to the boundary
  EXPECT_EQ(p.path, AccessPath::kPacks);
  EXPECT_EQ(p.head, 3u);
  EXPECT_EQ(p.nPacks, 24u);             // 97 floats after the head: 24 packs and a tail of 1
  p = plan({mem + 4, mem + 20}, 2, 1);  // fewer elements than the head of 3
  EXPECT_EQ(p.path, AccessPath::kPacks);
  EXPECT_EQ(p.head, 2u);
  EXPECT_EQ(p.nPacks, 0u);
  p = plan({mem, mem + 8, mem + 64}, 100, 2);  // aligned to float, not to each other mod 16
  EXPECT_EQ(p.path, AccessPath::kElements);
  p = plan({mem, mem + 64, mem + 130}, 100, 2);  // a destination not aligned to float
  EXPECT_EQ(p.path, AccessPath::kBytes);
  p = plan({mem + 2, mem + 66, mem + 130}, 100, 2);  // the same misalignment, but not to float
  EXPECT_EQ(p.path, AccessPath::kBytes);
}

// On every path each element is written by exactly one of the threads.
TEST(AccessPlanTest, EveryElementHasOneOwner) {
  constexpr size_t kCount = 1001;
  alignas(64) static unsigned char src[kCount * 4 + 64], dst[kCount * 4 + 64];
  for (size_t i = 0; i < sizeof src; ++i) src[i] = static_cast<unsigned char>(i % 251 + 1);  // never 0
  const struct {
    size_t srcOffset, dstOffset;
    AccessPath path;
  } cases[] = {{4, 4, AccessPath::kPacks}, {0, 8, AccessPath::kElements}, {1, 3, AccessPath::kBytes}};
  for (const auto& c : cases) {
    const void* srcs[1] = {src + c.srcOffset};
    void* dsts[1] = {dst + c.dstOffset};
    ASSERT_EQ(planAccess<uint32_t>(1, srcs, 1, dsts, kCount).path, c.path);
    for (size_t nthreads : {size_t{1}, size_t{3}, size_t{64}, size_t{300}}) {
      std::vector<int> owners(kCount, 0);
      for (size_t t = 0; t < nthreads; ++t) {
        std::memset(dst, 0, sizeof dst);
        copy<uint32_t>(dsts[0], srcs[0], kCount, t, nthreads);
        for (size_t i = 0; i < kCount; ++i) {
          uint32_t v;
          std::memcpy(&v, static_cast<unsigned char*>(dsts[0]) + 4 * i, 4);
          if (v != 0) ++owners[i];
        }
      }
      for (size_t i = 0; i < kCount; ++i) {
        ASSERT_EQ(owners[i], 1) << "element " << i << ", path " << static_cast<int>(c.path) << ", " << nthreads
                                << " threads";
      }
    }
  }
}

// ---- LL lines ----

TEST(LLTest, LineLayout) {
  EXPECT_EQ(llLineCount(0), 0u);
  EXPECT_EQ(llLineCount(1), 1u);
  EXPECT_EQ(llLineCount(4), 1u);
  EXPECT_EQ(llLineCount(5), 2u);
  const unsigned char data[6] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66};
  uint64_t lines[2] = {};
  llPack(lines, data, sizeof data, 0xCAFEF00Du, 0, 1);
  EXPECT_EQ(lines[0], 0xCAFEF00D44332211ull);  // data in memory order in the low word, flag above
  EXPECT_EQ(lines[1], 0xCAFEF00D00006655ull);  // the tail padded with zeros
  EXPECT_EQ(llLineData(lines[1]), 0x6655u);
  EXPECT_EQ(llLineFlag(lines[1]), 0xCAFEF00Du);
  EXPECT_EQ(llMakeLine(0xFFFFFFFFu, 1u), 0x00000001FFFFFFFFull);
}

// Every size, both alignments of source and destination, several thread counts.
TEST(LLTest, RoundTrip) {
  std::mt19937_64 rng(42);
  for (size_t nbytes : {0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 100, 1027}) {
    std::vector<unsigned char> data(nbytes);
    for (auto& b : data) b = static_cast<unsigned char>(rng());
    for (size_t srcOffset = 0; srcOffset < 4; ++srcOffset) {
      for (size_t dstOffset = 0; dstOffset < 4; ++dstOffset) {
        for (size_t nthreads : {1, 3, 64}) {
          Buffer src(nbytes, srcOffset), dst(nbytes, dstOffset);
          if (nbytes > 0) std::memcpy(src.data(), data.data(), nbytes);
          std::vector<uint64_t> lines(llLineCount(nbytes) + 1, 0);
          const uint32_t flag = static_cast<uint32_t>(rng()) | 1u;
          for (size_t t = 0; t < nthreads; ++t) llPack(lines.data(), src.data(), nbytes, flag, t, nthreads);
          EXPECT_EQ(lines.back(), 0u) << "wrote past the last line";
          size_t pending = 0;
          for (size_t t = 0; t < nthreads; ++t)
            pending += llTryUnpack(dst.data(), lines.data(), nbytes, flag, t, nthreads);
          const std::string where = std::to_string(nbytes) + " bytes, src+" + std::to_string(srcOffset) + " dst+" +
                                    std::to_string(dstOffset) + ", " + std::to_string(nthreads) + " threads";
          EXPECT_EQ(pending, 0u) << where;
          EXPECT_TRUE(nbytes == 0 || std::memcmp(dst.data(), data.data(), nbytes) == 0) << where;
          EXPECT_TRUE(dst.guardsIntact()) << where;
        }
      }
    }
  }
}

// A line is ready only with the flag of this step: not zeroed memory, not the previous step's
// lines, whatever the data bits are.
TEST(LLTest, ReadyOnlyWithTheExpectedFlag) {
  const uint32_t words[4] = {0xFFFFFFFFu, 0x00000000u, 0x00000007u, 0x80000000u};
  std::vector<uint64_t> lines(4, 0);
  for (uint32_t flag : {1u, 7u, 0xFFFFFFFFu}) {
    EXPECT_FALSE(llReady(&lines[0], flag)) << "zeroed line taken as flag " << flag;
  }
  llPack(lines.data(), words, sizeof words, 7u, 0, 1);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(llReady(&lines[i], 7u));
    EXPECT_FALSE(llReady(&lines[i], 6u));
    EXPECT_FALSE(llReady(&lines[i], 8u));
    uint32_t data = 0;
    EXPECT_FALSE(llTryLoadLine(&lines[i], 8u, &data));
    EXPECT_EQ(data, 0u) << "data handed out for a line that is not ready";
    ASSERT_TRUE(llTryLoadLine(&lines[i], 7u, &data));
    EXPECT_EQ(data, words[i]);
  }
  // The next step over the same lines: until it writes them, nothing is ready for flag 8 and
  // the receiver's buffer is left alone.
  uint32_t out[4] = {1, 2, 3, 4};
  EXPECT_EQ(llTryUnpack(out, lines.data(), sizeof out, 8u, 0, 1), 4u);
  EXPECT_EQ(out[0], 1u);
  EXPECT_EQ(out[3], 4u);
  // The sender's threads 0 and 2 of 4 have written; the receiver sees exactly their lines.
  const uint32_t next[4] = {10, 11, 12, 13};
  llPack(lines.data(), next, sizeof next, 8u, 0, 4);
  llPack(lines.data(), next, sizeof next, 8u, 2, 4);
  EXPECT_EQ(llTryUnpack(out, lines.data(), sizeof out, 8u, 0, 1), 2u);
  EXPECT_EQ(out[0], 10u);
  EXPECT_EQ(out[1], 2u);
  EXPECT_EQ(out[2], 12u);
  EXPECT_EQ(out[3], 4u);
  llPack(lines.data(), next, sizeof next, 8u, 1, 4);
  llPack(lines.data(), next, sizeof next, 8u, 3, 4);
  EXPECT_EQ(llTryUnpack(out, lines.data(), sizeof out, 8u, 0, 1), 0u);
  EXPECT_EQ(std::memcmp(out, next, sizeof out), 0);
}

// Two agents at once (host threads standing for two GPUs): the sender reuses the same lines for
// 200 messages, each flagged with its own step, while the receiver polls them. Every line is
// seen whole (data and flag from one store, platform.h's system-scope accesses) and only for
// its own step, never the previous message's data under a new flag.
TEST(LLTest, ReusedLinesBetweenTwoAgentsAreSeenWhole) {
  constexpr size_t kWords = 61;  // 244 bytes: the last line of a 243-byte message is padded
  constexpr size_t kBytes = kWords * 4 - 1;
  constexpr uint32_t kMessages = 200;
  std::vector<uint64_t> lines(llLineCount(kBytes), 0);
  std::atomic<uint32_t> taken{0};
  auto word = [](uint32_t m, size_t i) { return static_cast<uint32_t>(m * 2654435761u + i * 40503u); };
  std::thread sender([&] {
    std::vector<uint32_t> src(kWords);
    for (uint32_t m = 1; m <= kMessages; ++m) {
      while (taken.load(std::memory_order_acquire) < m - 1) std::this_thread::yield();  // the slot is free
      for (size_t i = 0; i < kWords; ++i) src[i] = word(m, i);
      for (size_t t = 0; t < 3; ++t) llPack(lines.data(), src.data(), kBytes, m, t, 3);
    }
  });
  std::vector<uint32_t> got(kWords);
  bool exact = true;
  for (uint32_t m = 1; m <= kMessages && exact; ++m) {
    std::fill(got.begin(), got.end(), 0u);
    while (llTryUnpack(got.data(), lines.data(), kBytes, m, 0, 1) != 0) std::this_thread::yield();
    for (size_t i = 0; i < kWords; ++i) {
      const uint32_t want = i + 1 < kWords ? word(m, i) : word(m, i) & 0x00FFFFFFu;  // 3 bytes of the last word
      if (got[i] != want) {
        ADD_FAILURE() << "message " << m << ", word " << i << ": " << got[i] << " instead of " << want;
        exact = false;
      }
    }
    taken.store(m, std::memory_order_release);
  }
  if (!exact) taken.store(kMessages, std::memory_order_release);
  sender.join();
}

// ---- launch shape ----

TEST(LaunchShapeTest, WholeWarpsAndBoundedBlocks) {
  for (int warp : {32, 64, 48, 1, 512}) {
    const LaunchLimits limits{warp, 20};
    ASSERT_TRUE(validLaunchLimits(limits));
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{16} << 10, size_t{1} << 20, size_t{1} << 34}) {
      const LaunchShape s = launchShapeFor(bytes, limits, kUnroll);
      EXPECT_EQ(s.threadsPerBlock % static_cast<unsigned>(warp), 0u) << "warp " << warp;
      EXPECT_LE(s.threadsPerBlock, static_cast<unsigned>(kTargetThreadsPerBlock));
      EXPECT_GT(s.threadsPerBlock, static_cast<unsigned>(kTargetThreadsPerBlock / 2));
      EXPECT_GE(s.blocks, 1u);
      EXPECT_LE(s.blocks, 20u);
    }
  }
  const LaunchLimits nvidia{32, 132};
  // 512 threads x 4 packs x 16 bytes = 32 KiB per block.
  EXPECT_EQ(launchShapeFor(32 << 10, nvidia, kUnroll).blocks, 1u);
  EXPECT_EQ(launchShapeFor((32 << 10) + 1, nvidia, kUnroll).blocks, 2u);
  EXPECT_EQ(launchShapeFor(size_t{1} << 30, nvidia, kUnroll).blocks, 132u);
  EXPECT_EQ(launchShapeFor(100, LaunchLimits{64, 1}, kUnroll).threadsPerBlock, 512u);
  EXPECT_FALSE(validLaunchLimits(LaunchLimits{0, 1}));
  EXPECT_FALSE(validLaunchLimits(LaunchLimits{1024, 1}));
  EXPECT_FALSE(validLaunchLimits(LaunchLimits{32, 0}));
}

}  // namespace
}  // namespace kernel
}  // namespace coll
}  // namespace weft
