// Datatype conversions and the expected-value logic: the inputs of every type/op keep every
// partial result exact in any reduction order (rounding to the type after each step, as the
// library does), and countWrong finds exactly the elements a collective got wrong.
#include "perf/expected.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "perf/datatypes.h"

namespace weft::perf {
namespace {

const weftRedOp_t kOps[] = {weftSum, weftProd, weftMax, weftMin, weftAvg};

std::vector<weftDataType_t> allTypes() {
  std::vector<weftDataType_t> t;
  for (int i = 0; i < weftNumTypes; ++i) t.push_back(static_cast<weftDataType_t>(i));
  return t;
}

// ---- conversions ----------------------------------------------------------------------

TEST(PerfDatatypes, KnownBitPatterns) {
  EXPECT_EQ(miniFloatEncode(kHalfFormat, 1.0), 0x3C00u);
  EXPECT_EQ(miniFloatEncode(kHalfFormat, -2.0), 0xC000u);
  EXPECT_EQ(miniFloatEncode(kHalfFormat, 65504.0), 0x7BFFu);
  EXPECT_EQ(miniFloatEncode(kHalfFormat, std::ldexp(1.0, -24)), 0x0001u);  // smallest subnormal
  EXPECT_EQ(miniFloatEncode(kHalfFormat, 70000.0), 0x7C00u);               // overflow: inf
  EXPECT_EQ(miniFloatEncode(kBf16Format, 1.0), 0x3F80u);
  EXPECT_EQ(miniFloatEncode(kBf16Format, 256.0), 0x4380u);
  EXPECT_EQ(miniFloatEncode(kE4m3Format, 1.0), 0x38u);
  EXPECT_EQ(miniFloatEncode(kE4m3Format, 448.0), 0x7Eu);
  EXPECT_EQ(miniFloatEncode(kE4m3Format, -448.0), 0xFEu);
  EXPECT_EQ(miniFloatEncode(kE4m3Format, 500.0), 0x7Fu);  // no inf in e4m3: NaN
  EXPECT_EQ(miniFloatEncode(kE4m3Format, std::ldexp(1.0, -9)), 0x01u);
  EXPECT_EQ(miniFloatEncode(kE5m2Format, 1.0), 0x3Cu);
  EXPECT_EQ(miniFloatEncode(kE5m2Format, 57344.0), 0x7Bu);
  EXPECT_EQ(miniFloatEncode(kE5m2Format, 1e6), 0x7Cu);  // inf
  EXPECT_TRUE(std::isnan(miniFloatDecode(kE4m3Format, 0x7F)));
  EXPECT_TRUE(std::isnan(miniFloatDecode(kE5m2Format, 0x7F)));
  EXPECT_TRUE(std::isinf(miniFloatDecode(kE5m2Format, 0x7C)));
  EXPECT_EQ(miniFloatDecode(kE4m3Format, 0x7E), 448.0);
  EXPECT_EQ(miniFloatDecode(kE4m3Format, 0x78), 256.0);  // exponent field all ones is a normal number in e4m3
}

TEST(PerfDatatypes, RoundsToNearestEven) {
  EXPECT_EQ(roundToType(weftFloat16, 2049), 2048);  // tie: even mantissa
  EXPECT_EQ(roundToType(weftFloat16, 2051), 2052);
  EXPECT_EQ(roundToType(weftFloat16, 2050), 2050);
  EXPECT_EQ(roundToType(weftBfloat16, 257), 256);
  EXPECT_EQ(roundToType(weftBfloat16, 259), 260);
  EXPECT_EQ(roundToType(weftFloat8e5m2, 9), 8);
  EXPECT_EQ(roundToType(weftFloat8e5m2, 11), 12);
  EXPECT_EQ(roundToType(weftFloat8e4m3, 17), 16);
  EXPECT_EQ(roundToType(weftFloat8e4m3, 19), 20);
  EXPECT_EQ(roundToType(weftFloat8e4m3, 7.0 / 3.0), 2.25);
  EXPECT_EQ(roundToType(weftFloat32, 16777217.0), 16777216.0);
  EXPECT_EQ(roundToType(weftInt32, -7.5), -7);
}

// Every finite bit pattern decodes and re-encodes to itself, in all four small formats.
TEST(PerfDatatypes, MiniFloatRoundTrip) {
  const MiniFloatFormat formats[] = {kHalfFormat, kBf16Format, kE4m3Format, kE5m2Format};
  for (const MiniFloatFormat& f : formats) {
    const uint32_t count = 1u << (1 + f.expBits + f.mantBits);
    for (uint32_t bits = 0; bits < count; ++bits) {
      const double v = miniFloatDecode(f, bits);
      if (std::isnan(v)) continue;
      ASSERT_EQ(miniFloatEncode(f, v), bits) << "format e" << f.expBits << "m" << f.mantBits << " bits " << bits;
    }
  }
}

#if defined(__FLT16_MAX__)
// Our half rounding agrees with the compiler's on many values, ties and subnormals included.
TEST(PerfDatatypes, HalfMatchesTheCompiler) {
  for (int i = -200000; i <= 200000; ++i) {
    const float x = static_cast<float>(i) * 0.37f + static_cast<float>(i % 7) * 1e-6f;
    const _Float16 h = static_cast<_Float16>(x);
    uint16_t bits;
    std::memcpy(&bits, &h, 2);
    ASSERT_EQ(miniFloatEncode(kHalfFormat, x), bits) << x;
  }
}
#endif

TEST(PerfDatatypes, LoadStoreEveryType) {
  for (weftDataType_t t : allTypes()) {
    std::vector<unsigned char> buf(4 * typeSize(t));
    const double values[] = {0, 1, 7, typeIsSigned(t) ? -5.0 : 5.0};
    for (size_t i = 0; i < 4; ++i) storeElement(t, buf.data(), i, values[i]);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(loadElement(t, buf.data(), i), values[i]) << typeName(t);
  }
}

// ---- inputs and expected results --------------------------------------------------------

// Rounds an intermediate result the way the library may (floating types after each step) and
// fails if an integer type would leave its range.
struct Stepper {
  weftDataType_t t;
  bool ok = true;
  double step(double v) {
    if (typeIsFloat(t)) return roundToType(t, v);
    const double lo = !typeIsSigned(t) ? 0 : -std::ldexp(1.0, static_cast<int>(8 * typeSize(t)) - 1);
    const double hi = std::ldexp(1.0, static_cast<int>(8 * typeSize(t)) - (typeIsSigned(t) ? 1 : 0)) - 1;
    if (v < lo || v > hi) ok = false;
    return v;
  }
};

double apply(weftRedOp_t op, double a, double b) {
  switch (op) {
    case weftProd:
      return a * b;
    case weftMax:
      return std::max(a, b);
    case weftMin:
      return std::min(a, b);
    default:
      return a + b;
  }
}

// Reduces vals in the given order, left to right, rounding each step.
double reduceOrdered(Stepper& s, weftRedOp_t op, const std::vector<double>& vals, const std::vector<int>& order) {
  double acc = vals[static_cast<size_t>(order[0])];
  for (size_t k = 1; k < order.size(); ++k) acc = s.step(apply(op, acc, vals[static_cast<size_t>(order[k])]));
  return acc;
}

// Reduces as a balanced tree (pairs, then pairs of pairs), rounding each step.
double reduceTree(Stepper& s, weftRedOp_t op, std::vector<double> vals) {
  while (vals.size() > 1) {
    std::vector<double> next;
    for (size_t i = 0; i + 1 < vals.size(); i += 2) next.push_back(s.step(apply(op, vals[i], vals[i + 1])));
    if (vals.size() % 2) next.push_back(vals.back());
    vals = next;
  }
  return vals[0];
}

double finishAvg(weftDataType_t t, double sum, int n) {
  if (!typeIsFloat(t)) return std::trunc(sum / n);
  return roundToType(t, sum / n);
}

// The heart of the correctness design: for every type, op and n = 1..8 (and larger n for the
// sparse patterns), every input is exactly representable, and sequential, reverse, rotated
// and tree reductions with rounding after every step all give expectedReduction's value.
TEST(PerfExpected, ExactInEveryOrderForEveryTypeAndOp) {
  for (weftDataType_t t : allTypes()) {
    for (weftRedOp_t op : kOps) {
      for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 33}) {
        const Pattern p = patternFor(Collective::kAllReduce, op);
        for (int rep = 0; rep < 2; ++rep) {
          for (size_t i = 0; i < 400; ++i) {
            std::vector<double> vals;
            for (int r = 0; r < n; ++r) {
              const double v = static_cast<double>(inputValue(t, p, n, r, i, rep));
              ASSERT_EQ(roundToType(t, v), v) << typeName(t) << " input not representable";
              if (!typeIsSigned(t)) {
                ASSERT_GE(v, 0);
              }
              if (op == weftProd) {
                ASSERT_NE(v, 0) << "a zero would hide the product";
              }
              vals.push_back(v);
            }
            const weftRedOp_t base = op == weftAvg ? weftSum : op;
            const double want = expectedReduction(t, op, n, i, rep);
            Stepper s{t};
            std::vector<int> fwd(static_cast<size_t>(n)), rev, rot;
            for (int r = 0; r < n; ++r) fwd[static_cast<size_t>(r)] = r;
            rev.assign(fwd.rbegin(), fwd.rend());
            rot = fwd;
            std::rotate(rot.begin(), rot.begin() + n / 2, rot.end());
            const double results[] = {reduceOrdered(s, base, vals, fwd), reduceOrdered(s, base, vals, rev),
                                      reduceOrdered(s, base, vals, rot), reduceTree(s, base, vals)};
            ASSERT_TRUE(s.ok) << typeName(t) << " " << opName(op) << " n=" << n << ": integer overflow";
            for (double got : results) {
              const double final = op == weftAvg ? finishAvg(t, got, n) : got;
              ASSERT_EQ(final, want) << typeName(t) << " " << opName(op) << " n=" << n << " i=" << i;
            }
          }
        }
      }
    }
  }
}

// The patterns are not degenerate: ranks differ, elements differ, check iterations differ.
TEST(PerfExpected, PatternsVaryByRankElementAndRep) {
  for (weftDataType_t t : allTypes()) {
    for (Pattern p : {Pattern::kSum, Pattern::kProd, Pattern::kSpread}) {
      const int n = 8;
      int rankDiff = 0, elemDiff = 0, repDiff = 0;
      for (size_t i = 0; i < 1000; ++i) {
        rankDiff += inputValue(t, p, n, 0, i, 0) != inputValue(t, p, n, 1, i, 0);
        elemDiff += inputValue(t, p, n, 0, i, 0) != inputValue(t, p, n, 0, i + 1, 0);
        repDiff += inputValue(t, p, n, 0, i, 0) != inputValue(t, p, n, 0, i, 1);
      }
      EXPECT_GT(rankDiff, 200) << typeName(t) << " pattern " << static_cast<int>(p);
      EXPECT_GT(elemDiff, 200) << typeName(t);
      EXPECT_GT(repDiff, 200) << typeName(t);
    }
  }
}

TEST(PerfExpected, AvgRoundsOnceAndIntegersTruncate) {
  // Find elements whose sum is not a multiple of n, and check the rounding rule on them.
  const int n = 3;
  int seen = 0;
  for (size_t i = 0; i < 1000 && seen < 50; ++i) {
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) sum += inputValue(weftInt32, Pattern::kSum, n, r, i, 0);
    if (sum % n == 0) continue;
    ++seen;
    EXPECT_EQ(expectedReduction(weftInt32, weftAvg, n, i, 0), static_cast<double>(sum / n));
    int64_t hsum = 0;
    for (int r = 0; r < n; ++r) hsum += inputValue(weftFloat16, Pattern::kSum, n, r, i, 0);
    EXPECT_EQ(expectedReduction(weftFloat16, weftAvg, n, i, 0), roundToType(weftFloat16, hsum / 3.0));
  }
  EXPECT_EQ(seen, 50);
}

TEST(PerfExpected, SentinelIsNeverExpected) {
  for (weftDataType_t t : allTypes()) {
    std::vector<unsigned char> buf(typeSize(t));
    fillSentinel(t, buf.data(), 1);
    const double s = loadElement(t, buf.data(), 0);
    for (weftRedOp_t op : kOps)
      for (size_t i = 0; i < 2000; ++i) ASSERT_FALSE(expectedReduction(t, op, 1, i, 0) == s) << typeName(t);
  }
}

// ---- countWrong against simulated collectives -------------------------------------------

// Builds every rank's send buffer, runs the collective by hand (reducing in double from the
// buffers' contents, independent of expectedReduction), and returns each rank's recv buffer.
std::vector<std::vector<unsigned char>> simulate(const DataSpec& proto) {
  const int n = proto.nranks;
  const size_t ts = typeSize(proto.type);
  const CollCounts& c = proto.counts;
  std::vector<std::vector<unsigned char>> send(static_cast<size_t>(n)), recv(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    DataSpec d = proto;
    d.rank = r;
    send[static_cast<size_t>(r)].resize(c.sendCount * ts + 1);
    recv[static_cast<size_t>(r)].resize(c.recvCount * ts + 1);
    fillInput(d, send[static_cast<size_t>(r)].data(), 0, c.sendCount);
    fillSentinel(proto.type, recv[static_cast<size_t>(r)].data(), c.recvCount);
  }
  auto in = [&](int r, size_t j) { return loadElement(proto.type, send[static_cast<size_t>(r)].data(), j); };
  auto reduceAt = [&](size_t j) {
    const weftRedOp_t base = proto.op == weftAvg ? weftSum : proto.op;
    double acc = in(0, j);
    for (int r = 1; r < n; ++r) acc = apply(base, acc, in(r, j));
    return proto.op == weftAvg ? finishAvg(proto.type, acc, n) : acc;
  };
  const size_t base = c.paramCount;
  for (int r = 0; r < n; ++r) {
    void* out = recv[static_cast<size_t>(r)].data();
    for (size_t j = 0; j < c.recvCount; ++j) {
      double v = 0;
      switch (proto.coll) {
        case Collective::kAllReduce:
          v = reduceAt(j);
          break;
        case Collective::kReduce:
          if (r != proto.root) continue;
          v = reduceAt(j);
          break;
        case Collective::kReduceScatter:
          v = reduceAt(static_cast<size_t>(r) * base + j);
          break;
        case Collective::kAllGather:
          v = in(static_cast<int>(j / base), j % base);
          break;
        case Collective::kAllToAll:
          v = in(static_cast<int>(j / base), static_cast<size_t>(r) * base + j % base);
          break;
        case Collective::kBroadcast:
          v = in(proto.root, j);
          break;
        case Collective::kSendRecv:
          v = in((r - 1 + n) % n, j);
          break;
      }
      storeElement(proto.type, out, j, v);
    }
  }
  return recv;
}

TEST(PerfExpected, CountWrongFindsExactlyTheBadElements) {
  const Collective colls[] = {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                              Collective::kBroadcast, Collective::kReduce,    Collective::kAllToAll,
                              Collective::kSendRecv};
  for (Collective coll : colls) {
    for (weftDataType_t t : allTypes()) {
      for (weftRedOp_t op : kOps) {
        if (!collectiveReduces(coll) && op != weftSum) continue;
        for (int n : {1, 2, 3, 5, 8}) {
          DataSpec d;
          d.coll = coll;
          d.type = t;
          d.op = op;
          d.nranks = n;
          d.root = n / 2;
          d.rep = 1;
          d.counts = collCounts(coll, 64 * typeSize(t) * static_cast<size_t>(n) + 3, typeSize(t), n);
          auto recv = simulate(d);
          for (int r = 0; r < n; ++r) {
            DataSpec mine = d;
            mine.rank = r;
            unsigned char* buf = recv[static_cast<size_t>(r)].data();
            ASSERT_EQ(countWrong(mine, buf), 0)
                << collectiveName(coll) << " " << typeName(t) << " " << opName(op) << " n=" << n << " rank " << r;
            if (coll == Collective::kReduce && r != d.root) continue;  // nothing is checked there
            // Corrupt one element: exactly one wrong. Then an untouched buffer: all wrong.
            const size_t j = d.counts.recvCount / 2;
            const double good = loadElement(t, buf, j);
            storeElement(t, buf, j, good == 1 ? 2 : 1);
            EXPECT_EQ(countWrong(mine, buf), 1) << collectiveName(coll) << " " << typeName(t) << " n=" << n;
            fillSentinel(t, buf, d.counts.recvCount);
            EXPECT_EQ(countWrong(mine, buf), static_cast<int64_t>(d.counts.recvCount)) << typeName(t);
          }
          // Another check iteration expects other data: a stale result does not pass.
          auto fresh = simulate(d);
          DataSpec other = d;
          other.rep = 2;
          other.rank = d.root;
          EXPECT_GT(countWrong(other, fresh[static_cast<size_t>(d.root)].data()), 0)
              << collectiveName(coll) << " " << typeName(t) << " " << opName(op) << " n=" << n;
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft::perf
