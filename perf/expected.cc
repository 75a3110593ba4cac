// Input patterns and expected results (the reasoning is in expected.h).
#include "perf/expected.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "perf/datatypes.h"

namespace weft::perf {
namespace {

uint64_t mix(int rank, size_t index, int rep) {
  uint64_t x = static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull +
               static_cast<uint64_t>(rank + 1) * 0xD1B54A32D192ED03ull +
               static_cast<uint64_t>(rep + 1) * 0x8CB92BA72F3D8DD7ull;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

// h mapped onto [0, range) without a division (Lemire's multiply-shift).
int64_t below(uint64_t h, int64_t range) {
  return static_cast<int64_t>(((h >> 32) * static_cast<uint64_t>(range)) >> 32);
}

// The pattern for one (type, pattern, nranks), with its constants worked out once.
class Generator {
 public:
  Generator(weftDataType_t t, Pattern p, int nranks) : pattern_(p), signed_(typeIsSigned(t)) {
    const int64_t m = exactIntLimit(t);
    const int64_t n = nranks;
    switch (p) {
      case Pattern::kSum:
        bound_ = std::min<int64_t>(1000, m / n);
        stride_ = bound_ >= 1 ? 1 : (n + m - 1) / m;
        break;
      case Pattern::kProd: {
        const int64_t pw = exactPow2Limit(t);
        stride_ = std::max<int64_t>(2, (n + pw - 1) / pw);
        break;
      }
      case Pattern::kSpread:
        bound_ = std::min<int64_t>(m, 100);
        break;
    }
  }

  int64_t value(int rank, size_t index, int rep) const {
    const uint64_t h = mix(rank, index, rep);
    const uint64_t slot = static_cast<uint64_t>(index) + static_cast<uint64_t>(rank) + static_cast<uint64_t>(rep);
    switch (pattern_) {
      case Pattern::kSum:
        if (bound_ < 1) {  // sparse: +-1 on at most M ranks per element
          if (slot % static_cast<uint64_t>(stride_) != 0) return 0;
          return signed_ && (h & 1) ? -1 : 1;
        }
        return ranged(h);
      case Pattern::kProd: {
        const int64_t mag = (slot % static_cast<uint64_t>(stride_) == 0 && (h & 2)) ? 2 : 1;
        return signed_ && (h & 1) ? -mag : mag;
      }
      case Pattern::kSpread:
        return ranged(h);
    }
    return 0;
  }

 private:
  int64_t ranged(uint64_t h) const { return signed_ ? below(h, 2 * bound_ + 1) - bound_ : below(h, bound_ + 1); }

  Pattern pattern_;
  bool signed_;
  int64_t bound_ = 0;
  int64_t stride_ = 1;
};

// Expected reductions for one (type, op, nranks).
class Reducer {
 public:
  Reducer(weftDataType_t t, weftRedOp_t op, int nranks)
      : type_(t),
        op_(op),
        n_(nranks),
        gen_(t,
             op == weftProd                     ? Pattern::kProd
             : (op == weftSum || op == weftAvg) ? Pattern::kSum
                                                : Pattern::kSpread,
             nranks) {}

  double at(size_t index, int rep) const {
    int64_t acc = gen_.value(0, index, rep);
    for (int r = 1; r < n_; ++r) {
      const int64_t v = gen_.value(r, index, rep);
      switch (op_) {
        case weftProd:
          acc *= v;
          break;
        case weftMax:
          acc = std::max(acc, v);
          break;
        case weftMin:
          acc = std::min(acc, v);
          break;
        default:
          acc += v;
          break;
      }
    }
    if (op_ != weftAvg) return static_cast<double>(acc);
    if (!typeIsFloat(type_)) return static_cast<double>(acc / n_);  // C division: toward zero
    return roundToType(type_, static_cast<double>(acc) / n_);
  }

 private:
  weftDataType_t type_;
  weftRedOp_t op_;
  int n_;
  Generator gen_;
};

}  // namespace

Pattern patternFor(Collective coll, weftRedOp_t op) {
  if (!collectiveReduces(coll)) return Pattern::kSpread;
  if (op == weftProd) return Pattern::kProd;
  if (op == weftSum || op == weftAvg) return Pattern::kSum;
  return Pattern::kSpread;
}

int64_t exactIntLimit(weftDataType_t t) {
  switch (t) {
    case weftInt8:
      return 127;
    case weftUint8:
      return 254;
    case weftInt32:
      return std::numeric_limits<int32_t>::max();
    case weftUint32:
      return std::numeric_limits<uint32_t>::max() - 1;
    case weftInt64:
    case weftUint64:
      return int64_t{1} << 62;
    case weftFloat16:
      return 2048;
    case weftFloat32:
      return int64_t{1} << 24;
    case weftFloat64:
      return int64_t{1} << 53;
    case weftBfloat16:
      return 256;
    case weftFloat8e4m3:
      return 16;
    default:
      return 8;  // f8e5m2
  }
}

int exactPow2Limit(weftDataType_t t) {
  switch (t) {
    case weftInt8:
      return 6;
    case weftUint8:
      return 7;
    case weftFloat16:
      return 15;
    case weftFloat8e4m3:
      return 8;
    case weftFloat8e5m2:
      return 15;
    default:
      return 30;
  }
}

int64_t inputValue(weftDataType_t t, Pattern p, int nranks, int rank, size_t index, int rep) {
  return Generator(t, p, nranks).value(rank, index, rep);
}

double expectedReduction(weftDataType_t t, weftRedOp_t op, int nranks, size_t index, int rep) {
  return Reducer(t, op, nranks).at(index, rep);
}

void fillInput(const DataSpec& s, void* buf, size_t first, size_t count) {
  const Generator gen(s.type, patternFor(s.coll, s.op), s.nranks);
  visitType(s.type, [&](auto e) {
    using E = decltype(e);
    auto* p = static_cast<typename E::Storage*>(buf);
    for (size_t i = 0; i < count; ++i) p[i] = E::store(static_cast<double>(gen.value(s.rank, first + i, s.rep)));
  });
}

void fillSentinel(weftDataType_t t, void* buf, size_t count) {
  const size_t bytes = count * typeSize(t);
  std::memset(buf, 0xff, bytes);
  if (typeIsFloat(t) || !typeIsSigned(t)) return;
  // Signed integers: the most negative value (sign bit alone), which no expected result reaches.
  const size_t ts = typeSize(t);
  auto* b = static_cast<unsigned char*>(buf);
  for (size_t i = 0; i < count; ++i) {
    std::memset(b + i * ts, 0, ts);
    b[i * ts + ts - 1] = 0x80;  // little-endian: the top byte holds the sign
  }
}

int64_t countWrong(const DataSpec& s, const void* recvbuff) {
  const CollCounts& c = s.counts;
  if (s.coll == Collective::kReduce && s.rank != s.root) return 0;
  const Generator gen(s.type, patternFor(s.coll, s.op), s.nranks);
  const Reducer red(s.type, s.op, s.nranks);
  const size_t base = c.paramCount;
  return visitType(s.type, [&](auto e) -> int64_t {
    using E = decltype(e);
    const auto* r = static_cast<const typename E::Storage*>(recvbuff);
    int64_t wrong = 0;
    auto check = [&](size_t j, double want) {
      if (!(E::load(r[j]) == want)) ++wrong;  // NaN (the sentinel) never compares equal
    };
    switch (s.coll) {
      case Collective::kAllReduce:
      case Collective::kReduce:
        for (size_t j = 0; j < c.recvCount; ++j) check(j, red.at(j, s.rep));
        break;
      case Collective::kReduceScatter:
        for (size_t j = 0; j < c.recvCount; ++j) check(j, red.at(static_cast<size_t>(s.rank) * base + j, s.rep));
        break;
      case Collective::kAllGather:
        for (size_t j = 0; j < c.recvCount; ++j)
          check(j, static_cast<double>(gen.value(static_cast<int>(j / base), j % base, s.rep)));
        break;
      case Collective::kAllToAll:
        for (size_t j = 0; j < c.recvCount; ++j)
          check(j, static_cast<double>(
                       gen.value(static_cast<int>(j / base), static_cast<size_t>(s.rank) * base + j % base, s.rep)));
        break;
      case Collective::kBroadcast:
        for (size_t j = 0; j < c.recvCount; ++j) check(j, static_cast<double>(gen.value(s.root, j, s.rep)));
        break;
      case Collective::kSendRecv: {
        const int from = (s.rank - 1 + s.nranks) % s.nranks;
        for (size_t j = 0; j < c.recvCount; ++j) check(j, static_cast<double>(gen.value(from, j, s.rep)));
        break;
      }
    }
    return wrong;
  });
}

}  // namespace weft::perf
