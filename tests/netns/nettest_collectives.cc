// weft-nettest `collectives`: every collective of the API on every integer type and every op,
// with counts on both sides of the algorithm thresholds (recursive doubling up to 8 KiB, tree up
// to 64 KiB, ring beyond, several channels for the ~3 MB cases), in place and out of place.
// Every rank computes every other rank's inputs, so each result is checked bit-exactly against
// a reference computed here (integer sums and products wrap, avg divides the wrapped sum).
// `collectives quick` runs a few cases of each collective, for slow links (netem).
//
// Output: one stderr line per wrong result ("rank R: FAIL <collective> <type> <op> count C ...:
// K of N elements wrong, first at index I: got G, expected E"); an API error prints the library's
// message and ends the run. Exit status 0 only when every case matched.
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "nettest.h"

namespace nettest {
namespace {

enum class Kind { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAllToAll, kRing, kPairs, kAllPairs };
constexpr int kNumKinds = 9;

const char* kindName(Kind k) {
  static const char* names[kNumKinds] = {"allreduce",        "allgather", "reducescatter", "broadcast",
                                         "reduce",           "alltoall",  "sendrecv-ring", "sendrecv-pairwise",
                                         "sendrecv-allpairs"};
  return names[static_cast<int>(k)];
}

bool reduces(Kind k) { return k == Kind::kAllReduce || k == Kind::kReduceScatter || k == Kind::kReduce; }
bool rooted(Kind k) { return k == Kind::kBroadcast || k == Kind::kReduce; }
bool pointToPoint(Kind k) { return k == Kind::kRing || k == Kind::kPairs || k == Kind::kAllPairs; }

const weftDataType_t kTypes[] = {weftInt8, weftUint8, weftInt32, weftUint32, weftInt64, weftUint64};
const weftRedOp_t kOps[] = {weftSum, weftProd, weftMin, weftMax, weftAvg};

const char* typeName(weftDataType_t t) {
  switch (t) {
    case weftInt8:
      return "int8";
    case weftUint8:
      return "uint8";
    case weftInt32:
      return "int32";
    case weftUint32:
      return "uint32";
    case weftInt64:
      return "int64";
    case weftUint64:
      return "uint64";
    default:
      return "?";
  }
}

size_t typeBytes(weftDataType_t t) {
  switch (t) {
    case weftInt8:
    case weftUint8:
      return 1;
    case weftInt32:
    case weftUint32:
      return 4;
    default:
      return 8;
  }
}

const char* opName(weftRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return names[static_cast<int>(op)];
}

struct Case {
  Kind kind = Kind::kAllReduce;
  weftDataType_t type = weftInt32;
  weftRedOp_t op = weftSum;
  size_t count = 0;  // the call's count argument (per rank for all-gather, reduce-scatter, all-to-all)
  bool inPlace = false;
  int root = 0;
  uint64_t seed = 0;
};

std::string describe(const Case& c) {
  std::string s = std::string(kindName(c.kind)) + " " + typeName(c.type);
  if (reduces(c.kind)) s += std::string(" ") + opName(c.op);
  s += " count " + std::to_string(c.count);
  if (rooted(c.kind)) s += " root " + std::to_string(c.root);
  if (!pointToPoint(c.kind)) s += c.inPlace ? " in-place" : " out-of-place";
  return s;
}

// Element i of rank r's send buffer. Products get odd factors: they wrap but never collapse to 0.
template <typename T>
T inputValue(const Case& c, int rank, size_t i) {
  uint64_t v = mix(c.seed * 0x100000001B3ull + static_cast<uint64_t>(rank), i);
  if (reduces(c.kind) && c.op == weftProd) v |= 1;
  return static_cast<T>(v);
}

// The reference arithmetic, written independently of the library's: wrapping sum and product in
// an unsigned type at least as wide as unsigned int, avg as the wrapped sum divided toward zero.
template <typename T>
T refApply(weftRedOp_t op, T a, T b) {
  using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
  switch (op) {
    case weftProd:
      return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    case weftMax:
      return a > b ? a : b;
    case weftMin:
      return a < b ? a : b;
    default:
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  }
}

template <typename T>
T refReduce(const Case& c, int nranks, size_t j) {
  T acc = inputValue<T>(c, 0, j);
  for (int r = 1; r < nranks; ++r) acc = refApply(c.op, acc, inputValue<T>(c, r, j));
  if (c.op == weftAvg) {
    if constexpr (std::is_signed<T>::value) {
      acc = static_cast<T>(static_cast<int64_t>(acc) / nranks);
    } else {
      acc = static_cast<T>(static_cast<uint64_t>(acc) / static_cast<uint64_t>(nranks));
    }
  }
  return acc;
}

template <typename T>
std::string show(T v) {
  char text[64];
  if (std::is_signed<T>::value) {
    std::snprintf(text, sizeof(text), "%" PRId64, static_cast<int64_t>(v));
  } else {
    std::snprintf(text, sizeof(text), "%" PRIu64, static_cast<uint64_t>(v));
  }
  return text;
}

struct Ctx {
  weftComm_t comm = nullptr;
  int rank = 0;
  int n = 1;
  int failures = 0;
  int printed = 0;
};

constexpr int kMaxPrinted = 40;

// Compares got[0..count) with expected(i) bit for bit; one line per failing buffer.
template <typename T, typename Expected>
void check(Ctx& ctx, const Case& c, const char* what, const T* got, size_t count, Expected expected) {
  size_t wrong = 0, first = 0;
  T firstGot{}, firstWant{};
  for (size_t i = 0; i < count; ++i) {
    T want = expected(i);
    if (std::memcmp(&got[i], &want, sizeof(T)) != 0) {
      if (wrong++ == 0) first = i, firstGot = got[i], firstWant = want;
    }
  }
  if (wrong == 0) return;
  ++ctx.failures;
  if (ctx.printed++ >= kMaxPrinted) return;
  std::fprintf(stderr, "rank %d: FAIL %s: %s: %zu of %zu elements wrong, first at index %zu: got %s, expected %s\n",
               ctx.rank, describe(c).c_str(), what, wrong, count, first, show(firstGot).c_str(),
               show(firstWant).c_str());
}

bool apiOk(Ctx& ctx, const Case& c, const char* fn, weftResult_t r) {
  if (r == weftSuccess) return true;
  std::string what = std::string(fn) + " (" + describe(c) + ")";
  printApiError(ctx.rank, what.c_str(), r, ctx.comm);
  return false;
}

template <typename T>
void poison(std::vector<T>& v) {
  std::memset(v.data(), 0xA5, v.size() * sizeof(T));
}

// Runs one case on this rank and checks what it received; false on an API error.
template <typename T>
bool runCase(Ctx& ctx, const Case& c) {
  const int n = ctx.n, me = ctx.rank;
  const size_t count = c.count, all = count * static_cast<size_t>(n);
  auto in = [&](int r, size_t i) { return inputValue<T>(c, r, i); };
  auto mine = [&](size_t i) { return in(me, i); };
  auto fill = [&](T* p, size_t len, size_t offset) {
    for (size_t i = 0; i < len; ++i) p[i] = in(me, offset + i);
  };
  weftResult_t r = weftSuccess;
  switch (c.kind) {
    case Kind::kAllReduce: {
      std::vector<T> send(count), recv(count);
      fill(send.data(), count, 0);
      poison(recv);
      if (c.inPlace) recv = send;
      const T* sb = c.inPlace ? recv.data() : send.data();
      r = weftAllReduce(sb, recv.data(), count, c.type, c.op, ctx.comm, nullptr);
      if (!apiOk(ctx, c, "weftAllReduce", r)) return false;
      check(ctx, c, "recvbuff", recv.data(), count, [&](size_t i) { return refReduce<T>(c, n, i); });
      if (!c.inPlace) check(ctx, c, "sendbuff changed", send.data(), count, mine);
      break;
    }
    case Kind::kAllGather: {
      std::vector<T> send(count), recv(all);
      poison(recv);
      T* sb = c.inPlace ? recv.data() + static_cast<size_t>(me) * count : send.data();
      fill(sb, count, 0);
      r = weftAllGather(sb, recv.data(), count, c.type, ctx.comm, nullptr);
      if (!apiOk(ctx, c, "weftAllGather", r)) return false;
      check(ctx, c, "recvbuff", recv.data(), all, [&](size_t j) { return in(static_cast<int>(j / count), j % count); });
      if (!c.inPlace) check(ctx, c, "sendbuff changed", send.data(), count, mine);
      break;
    }
    case Kind::kReduceScatter: {
      std::vector<T> send(all), recv(count);
      fill(send.data(), all, 0);
      poison(recv);
      T* rb = c.inPlace ? send.data() + static_cast<size_t>(me) * count : recv.data();
      r = weftReduceScatter(send.data(), rb, count, c.type, c.op, ctx.comm, nullptr);
      if (!apiOk(ctx, c, "weftReduceScatter", r)) return false;
      const size_t base = static_cast<size_t>(me) * count;
      check(ctx, c, "recvbuff", rb, count, [&](size_t i) { return refReduce<T>(c, n, base + i); });
      if (!c.inPlace) check(ctx, c, "sendbuff changed", send.data(), all, mine);
      break;
    }
    case Kind::kBroadcast: {
      std::vector<T> send(count), recv(count);
      poison(recv);
      if (me == c.root) fill(c.inPlace ? recv.data() : send.data(), count, 0);
      const T* sb = c.inPlace ? recv.data() : send.data();
      r = weftBroadcast(sb, recv.data(), count, c.type, c.root, ctx.comm, nullptr);
      if (!apiOk(ctx, c, "weftBroadcast", r)) return false;
      check(ctx, c, "recvbuff", recv.data(), count, [&](size_t i) { return in(c.root, i); });
      if (!c.inPlace && me == c.root) check(ctx, c, "sendbuff changed", send.data(), count, mine);
      break;
    }
    case Kind::kReduce: {
      std::vector<T> send(count), recv(count);
      fill(send.data(), count, 0);
      poison(recv);
      if (c.inPlace) recv = send;
      const T* sb = c.inPlace ? recv.data() : send.data();
      r = weftReduce(sb, recv.data(), count, c.type, c.op, c.root, ctx.comm, nullptr);
      if (!apiOk(ctx, c, "weftReduce", r)) return false;
      if (me == c.root) check(ctx, c, "recvbuff", recv.data(), count, [&](size_t i) { return refReduce<T>(c, n, i); });
      if (!c.inPlace) check(ctx, c, "sendbuff changed", send.data(), count, mine);
      break;
    }
    case Kind::kAllToAll: {
      std::vector<T> send(all), recv(all);
      fill(send.data(), all, 0);
      poison(recv);
      if (c.inPlace) recv = send;
      const T* sb = c.inPlace ? recv.data() : send.data();
      r = weftAllToAll(sb, recv.data(), count, c.type, ctx.comm, nullptr);
      if (!apiOk(ctx, c, "weftAllToAll", r)) return false;
      // Block p came from rank p, which sent us its block `me`.
      check(ctx, c, "recvbuff", recv.data(), all,
            [&](size_t j) { return in(static_cast<int>(j / count), static_cast<size_t>(me) * count + j % count); });
      if (!c.inPlace) check(ctx, c, "sendbuff changed", send.data(), all, mine);
      break;
    }
    case Kind::kRing: {
      // Two messages of different sizes to the next rank, matched in call order.
      const int next = (me + 1) % n, prev = (me + n - 1) % n;
      const size_t second = count / 2 + 1;
      std::vector<T> send(count + second), recv1(count), recv2(second);
      fill(send.data(), count + second, 0);
      poison(recv1);
      poison(recv2);
      weftGroupStart();
      weftResult_t a = weftSend(send.data(), count, c.type, next, ctx.comm, nullptr);
      weftResult_t b = weftSend(send.data() + count, second, c.type, next, ctx.comm, nullptr);
      weftResult_t d = weftRecv(recv1.data(), count, c.type, prev, ctx.comm, nullptr);
      weftResult_t e = weftRecv(recv2.data(), second, c.type, prev, ctx.comm, nullptr);
      r = weftGroupEnd();
      for (weftResult_t x : {a, b, d, e}) {
        if (!apiOk(ctx, c, "weftSend/weftRecv", x)) return false;
      }
      if (!apiOk(ctx, c, "weftGroupEnd", r)) return false;
      check(ctx, c, "first message from the previous rank", recv1.data(), count, [&](size_t i) { return in(prev, i); });
      check(ctx, c, "second message from the previous rank", recv2.data(), second,
            [&](size_t i) { return in(prev, count + i); });
      break;
    }
    case Kind::kPairs: {
      // 0<->1, 2<->3, ...; an odd last rank sits out.
      const int partner = me ^ 1;
      if (partner >= n) break;
      std::vector<T> send(count), recv(count);
      fill(send.data(), count, 0);
      poison(recv);
      weftGroupStart();
      weftResult_t a = weftRecv(recv.data(), count, c.type, partner, ctx.comm, nullptr);
      weftResult_t b = weftSend(send.data(), count, c.type, partner, ctx.comm, nullptr);
      r = weftGroupEnd();
      for (weftResult_t x : {a, b, r}) {
        if (!apiOk(ctx, c, "weftSend/weftRecv/weftGroupEnd", x)) return false;
      }
      check(ctx, c, "message from the partner", recv.data(), count, [&](size_t i) { return in(partner, i); });
      break;
    }
    case Kind::kAllPairs: {
      // Every rank sends block p to every other rank p in one group: n-1 concurrent exchanges.
      std::vector<T> send(all), recv(all);
      fill(send.data(), all, 0);
      poison(recv);
      weftGroupStart();
      for (int p = 0; p < n && r == weftSuccess; ++p) {
        if (p == me) continue;
        const size_t off = static_cast<size_t>(p) * count;
        r = weftSend(send.data() + off, count, c.type, p, ctx.comm, nullptr);
        if (r == weftSuccess) r = weftRecv(recv.data() + off, count, c.type, p, ctx.comm, nullptr);
      }
      weftResult_t g = weftGroupEnd();
      if (!apiOk(ctx, c, "weftSend/weftRecv", r) || !apiOk(ctx, c, "weftGroupEnd", g)) return false;
      for (int p = 0; p < n; ++p) {
        if (p == me) continue;
        const T* got = recv.data() + static_cast<size_t>(p) * count;
        std::string what = "block from rank " + std::to_string(p);
        check(ctx, c, what.c_str(), got, count, [&](size_t i) { return in(p, static_cast<size_t>(me) * count + i); });
      }
      break;
    }
  }
  return true;
}

bool runOne(Ctx& ctx, const Case& c) {
  switch (c.type) {
    case weftInt8:
      return runCase<int8_t>(ctx, c);
    case weftUint8:
      return runCase<uint8_t>(ctx, c);
    case weftInt32:
      return runCase<int32_t>(ctx, c);
    case weftUint32:
      return runCase<uint32_t>(ctx, c);
    case weftInt64:
      return runCase<int64_t>(ctx, c);
    default:
      return runCase<uint64_t>(ctx, c);
  }
}

// The same list on every rank (every rank calls the collectives in the same order).
std::vector<Case> buildCases(int n, bool quick) {
  std::vector<Case> cases;
  auto add = [&](Kind k, weftDataType_t t, weftRedOp_t op, size_t count, bool inPlace) {
    Case c;
    c.kind = k;
    c.type = t;
    c.op = op;
    c.count = count;
    c.inPlace = inPlace && !pointToPoint(k);
    // Roots rotate through every rank (the last one included) as the cases go by.
    c.root = static_cast<int>(cases.size() % static_cast<size_t>(n));
    c.seed = 0x5EED0000u + cases.size();
    cases.push_back(c);
  };
  const Kind kinds[kNumKinds] = {Kind::kAllReduce, Kind::kAllGather, Kind::kReduceScatter,
                                 Kind::kBroadcast, Kind::kReduce,    Kind::kAllToAll,
                                 Kind::kRing,      Kind::kPairs,     Kind::kAllPairs};
  if (quick) {
    // A few cases of each collective: 3 elements (doubling), 5000 (doubling or tree by type
    // size) and 70000 (ring).
    int i = 0;
    for (size_t count : {size_t{3}, size_t{5000}, size_t{70000}}) {
      for (Kind k : kinds) {
        add(k, kTypes[i % 6], kOps[i % 5], count, i % 2 == 1);
        ++i;
      }
    }
    return cases;
  }
  // Zero counts: nothing moves, every call still succeeds.
  for (Kind k : kinds) add(k, weftInt32, weftSum, 0, false);
  // 1 and 3 elements: recursive doubling; 1000 and 5000: doubling or tree by type size;
  // 70000: ring (and tree for 1-byte reduce / broadcast chains).
  // Every op on every type up to 1000 elements; above, one op per type (rotating), so that the
  // run stays short on a 2-core machine with 8 ranks.
  const size_t counts[] = {1, 3, 1000, 5000, 70000};
  for (Kind k : kinds) {
    for (size_t ci = 0; ci < 5; ++ci) {
      const size_t count = counts[ci];
      for (size_t ti = 0; ti < 6; ++ti) {
        const weftDataType_t t = kTypes[ti];
        if (reduces(k)) {
          for (size_t oi = 0; oi < 5; ++oi) {
            if (count > 1000 && oi != (ti + ci) % 5) continue;
            for (bool inPlace : {false, true}) add(k, t, kOps[oi], count, inPlace);
          }
        } else {
          for (bool inPlace : {false, true}) {
            if (!inPlace || !pointToPoint(k)) add(k, t, weftSum, count, inPlace);
          }
        }
      }
    }
  }
  // One ~3 MB buffer per collective (the whole buffer, for those whose count is per rank),
  // with a type and op that differ from one collective to the next; odd counts.
  int i = 0;
  for (Kind k : kinds) {
    weftDataType_t t = kTypes[(i * 5 + 2) % 6];
    size_t count = (3u << 20) / typeBytes(t) + 7;
    if (k == Kind::kAllGather || k == Kind::kReduceScatter || k == Kind::kAllToAll || k == Kind::kAllPairs) {
      count = count / static_cast<size_t>(n) + 1;
    }
    add(k, t, kOps[i % 5], count, i % 2 == 0);
    ++i;
  }
  return cases;
}

// Rank 0 arrives 0.3 s late: everyone else must wait for it.
bool checkBarrier(Ctx& ctx, bool strict) {
  weftResult_t r = weftBarrier(ctx.comm, nullptr);
  if (r != weftSuccess) {
    printApiError(ctx.rank, "weftBarrier", r, ctx.comm);
    return false;
  }
  if (ctx.rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  double t0 = nowS();
  r = weftBarrier(ctx.comm, nullptr);
  double waited = nowS() - t0;
  if (r != weftSuccess) {
    printApiError(ctx.rank, "weftBarrier", r, ctx.comm);
    return false;
  }
  if (strict && ctx.rank != 0 && waited < 0.15) {
    ++ctx.failures;
    std::fprintf(stderr, "rank %d: FAIL barrier: returned after %.3f s while rank 0 arrived 0.3 s late\n", ctx.rank,
                 waited);
  }
  return true;
}

}  // namespace

int runCollectives(bool quick) {
  Ctx ctx;
  if (!initFromEnv(&ctx.comm, &ctx.rank, &ctx.n)) return 1;
  const double start = nowS();
  std::vector<Case> cases = buildCases(ctx.n, quick);
  double kindSeconds[kNumKinds] = {0};
  int kindCases[kNumKinds] = {0};
  for (const Case& c : cases) {
    double t0 = nowS();
    if (!runOne(ctx, c)) {
      // Tell the peers at once rather than leaving them to time out.
      weftCommAbort(ctx.comm);
      return 1;
    }
    kindSeconds[static_cast<int>(c.kind)] += nowS() - t0;
    ++kindCases[static_cast<int>(c.kind)];
  }
  if (!checkBarrier(ctx, !quick)) {
    weftCommAbort(ctx.comm);
    return 1;
  }
  if (ctx.rank == 0) {
    for (int k = 0; k < kNumKinds; ++k) {
      std::printf("rank 0: %-18s %4d cases %7.2f s\n", kindName(static_cast<Kind>(k)), kindCases[k], kindSeconds[k]);
    }
  }
  std::printf("rank %d of %d: collectives%s: %zu cases, %d wrong, %.2f s\n", ctx.rank, ctx.n, quick ? " quick" : "",
              cases.size(), ctx.failures, nowS() - start);
  weftResult_t r = weftCommDestroy(ctx.comm);
  if (r != weftSuccess) printApiError(ctx.rank, "weftCommDestroy", r, nullptr);
  return ctx.failures == 0 && r == weftSuccess ? 0 : 1;
}

}  // namespace nettest
