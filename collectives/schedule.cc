// Schedule vocabulary (names, what each step kind does), buffer sizes, parameter checks, the
// dispatch from (collective, algorithm) to a builder, and the text dump. The algorithms
// themselves live in algo_*.cc; the interpreter that proves them in interpreter.cc.
#include "collectives/schedule.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <limits>

#include "collectives/algorithms.h"

namespace weft {
namespace coll {

const char* bufName(Buf buf) {
  switch (buf) {
    case Buf::kSend:
      return "send";
    case Buf::kRecv:
      return "recv";
    case Buf::kScratch:
      return "scratch";
  }
  return "unknown";
}

// ---- The algorithm table -------------------------------------------------------------------

namespace {

struct AlgoInfo {
  Algo algo;
  const char* name;
  // The tuner's name for it, when the tuner picks it for all-reduce (topology cannot see Algo).
  bool tunedAllReduce;
  topo::AllReduceAlgo tuner;
};

// Every algorithm, in enum order.
constexpr AlgoInfo kAlgos[] = {
    {Algo::kRing, "ring", true, topo::AllReduceAlgo::kRing},
    {Algo::kTree, "tree", true, topo::AllReduceAlgo::kTree},
    {Algo::kPairwise, "pairwise", false, topo::AllReduceAlgo::kRing},
    {Algo::kRecursiveDoubling, "doubling", true, topo::AllReduceAlgo::kDoubling},
};
constexpr int kNumAlgos = static_cast<int>(sizeof(kAlgos) / sizeof(kAlgos[0]));
constexpr bool algoTableInEnumOrder() {
  for (int i = 0; i < kNumAlgos; ++i) {
    if (static_cast<int>(kAlgos[i].algo) != i) return false;
  }
  return true;
}
static_assert(algoTableInEnumOrder(), "kAlgos must list every Algo once, in enum order");

using BuildFn = void (*)(const ScheduleParams& p, int rank, RankSchedule* s);
using ScratchFn = int64_t (*)(const ScheduleParams& p);

// One row per (collective, algorithm) that exists; a pair without a row is not supported.
struct AlgoImpl {
  CollKind kind;
  Algo algo;
  BuildFn build;
  int lanesPerChannel;
  ScratchFn scratch;  // elements of Buf::kScratch; null: none
};

constexpr AlgoImpl kAlgoImpls[] = {
    {CollKind::kAllReduce, Algo::kRing, algo::buildRingAllReduce, 1, nullptr},
    {CollKind::kAllReduce, Algo::kTree, algo::buildTreeAllReduce, 4, nullptr},
    {CollKind::kAllReduce, Algo::kRecursiveDoubling, algo::buildDoublingAllReduce, 1, nullptr},
    {CollKind::kAllGather, Algo::kRing, algo::buildRingAllGather, 1, nullptr},
    {CollKind::kReduceScatter, Algo::kRing, algo::buildRingReduceScatter, 1, nullptr},
    {CollKind::kBroadcast, Algo::kRing, algo::buildChainBroadcast, 1, nullptr},
    {CollKind::kBroadcast, Algo::kTree, algo::buildTreeBroadcast, 1, nullptr},
    {CollKind::kReduce, Algo::kRing, algo::buildChainReduce, 1, nullptr},
    {CollKind::kReduce, Algo::kTree, algo::buildTreeReduce, 1, algo::treeReduceScratch},
    {CollKind::kAllToAll, Algo::kPairwise, algo::buildPairwiseAllToAll, 1, nullptr},
};

constexpr bool everyScheduledKindHasItsDefault() {
  for (const CollTraits& t : kCollTraits) {
    bool found = false;
    for (const AlgoImpl& a : kAlgoImpls) found = found || (a.kind == t.kind && a.algo == t.defaultAlgo);
    if (t.scheduled != found) return false;
  }
  return true;
}
static_assert(everyScheduledKindHasItsDefault(),
              "every scheduled collective needs a row for its default algorithm, and only those");

const AlgoImpl* findImpl(CollKind kind, Algo algo) {
  for (const AlgoImpl& a : kAlgoImpls) {
    if (a.kind == kind && a.algo == algo) return &a;
  }
  return nullptr;
}

}  // namespace

const char* algoName(Algo algo) {
  return static_cast<int>(algo) < kNumAlgos ? kAlgos[static_cast<int>(algo)].name : "unknown";
}

bool algoFromName(const std::string& name, Algo* out) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  for (const AlgoInfo& a : kAlgos) {
    if (lower == a.name) return *out = a.algo, true;
  }
  return false;
}

Algo algoOf(topo::AllReduceAlgo tuned) {
  for (const AlgoInfo& a : kAlgos) {
    if (a.tunedAllReduce && a.tuner == tuned) return a.algo;
  }
  return collTraits(CollKind::kAllReduce).defaultAlgo;
}

bool algoSupported(CollKind kind, Algo algo) { return findImpl(kind, algo) != nullptr; }

std::string supportedAlgorithms() {
  std::string out;
  for (const CollTraits& t : kCollTraits) {
    if (!t.scheduled) continue;
    out += out.empty() ? "" : "; ";
    out += t.name;
    out += ":";
    const char* sep = " ";
    for (const AlgoImpl& a : kAlgoImpls) {
      if (a.kind != t.kind) continue;
      out += sep;
      out += algoName(a.algo);
      sep = ", ";
    }
  }
  return out;
}

std::string algorithmNames() {
  std::string out;
  for (int i = 0; i < kNumAlgos; ++i) {
    out += i == 0 ? "" : i + 1 == kNumAlgos ? " or " : ", ";
    out += kAlgos[i].name;
  }
  return out;
}

int64_t sendBufferCount(const ScheduleParams& p) { return collExtents(p.kind, p.count, p.nRanks).send; }

int64_t recvBufferCount(const ScheduleParams& p) { return collExtents(p.kind, p.count, p.nRanks).recv; }

int64_t scratchBufferCount(const ScheduleParams& p) {
  const AlgoImpl* impl = findImpl(p.kind, p.algo);
  return impl != nullptr && impl->scratch != nullptr ? impl->scratch(p) : 0;
}

int lanesPerChannel(const ScheduleParams& p) {
  const AlgoImpl* impl = findImpl(p.kind, p.algo);
  return impl != nullptr ? impl->lanesPerChannel : 1;
}

namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  return text;
}

}  // namespace

std::string validateParams(const ScheduleParams& p) {
  if (!collTraits(p.kind).scheduled) {
    return "send/recv schedules are built from the user's calls, not by buildSchedule";
  }
  if (!algoSupported(p.kind, p.algo)) {
    return format("%s has no %s algorithm (%s)", collName(p.kind), algoName(p.algo), supportedAlgorithms().c_str());
  }
  if (p.nRanks < 1 || p.nRanks > kMaxScheduleRanks) {
    return format("nRanks is %d; schedules support 1 to %d ranks", p.nRanks, kMaxScheduleRanks);
  }
  if (collRooted(p.kind) && (p.root < 0 || p.root >= p.nRanks)) {
    return format("root %d is not a rank of a communicator of %d ranks", p.root, p.nRanks);
  }
  if (p.nChannels < 1 || p.nChannels > kMaxScheduleChannels) {
    return format("nChannels is %d; schedules support 1 to %d channels", p.nChannels, kMaxScheduleChannels);
  }
  if (p.count < 0) return format("count is %" PRId64 "; it cannot be negative", p.count);
  if (p.count > std::numeric_limits<int64_t>::max() / p.nRanks) {
    return format("count %" PRId64 " times %d ranks does not fit in 64 bits", p.count, p.nRanks);
  }
  if (!p.ringOrder.empty()) {
    if (static_cast<int>(p.ringOrder.size()) != p.nRanks) {
      return format("ringOrder has %zu entries for %d ranks; it must list every rank once", p.ringOrder.size(),
                    p.nRanks);
    }
    std::vector<bool> seen(p.nRanks, false);
    for (size_t i = 0; i < p.ringOrder.size(); ++i) {
      int r = p.ringOrder[i];
      if (r < 0 || r >= p.nRanks) return format("ringOrder[%zu] is %d, not a rank of %d", i, r, p.nRanks);
      if (seen[r]) return format("ringOrder lists rank %d twice; it must be a permutation of 0..%d", r, p.nRanks - 1);
      seen[r] = true;
    }
  }
  return "";
}

RankSchedule buildSchedule(const ScheduleParams& p, int rank) {
  RankSchedule s;
  s.rank = rank;
  s.lanes.resize(static_cast<size_t>(p.nChannels) * lanesPerChannel(p));
  // validateParams has made sure the table has the pair.
  if (const AlgoImpl* impl = findImpl(p.kind, p.algo)) impl->build(p, rank, &s);
  return s;
}

std::string formatStep(const Step& step) {
  std::string out = stepName(step.kind);
  if (stepReceives(step.kind)) out += format(" from %d", step.recvPeer);
  if (stepSends(step.kind)) {
    out += format(" to %d", step.sendPeer);
    if (step.sendLane >= 0) out += format(" (lane %d)", step.sendLane);
  }
  if (stepReads(step.kind)) {
    out += format(", src %s[%" PRId64 ", +%" PRId64 ")", bufName(step.srcBuf), step.srcOffset, step.count);
  }
  if (stepWrites(step.kind)) {
    out += format(", dst %s[%" PRId64 ", +%" PRId64 ")", bufName(step.dstBuf), step.dstOffset, step.count);
  }
  if (step.final) out += ", final";
  return out;
}

std::string formatSchedule(const RankSchedule& s) {
  std::string out = format("rank %d: %zu lanes, maxStepCount %" PRId64 "\n", s.rank, s.lanes.size(), s.maxStepCount);
  for (size_t l = 0; l < s.lanes.size(); ++l) {
    out += format("  lane %zu: %zu steps\n", l, s.lanes[l].steps.size());
    for (size_t i = 0; i < s.lanes[l].steps.size(); ++i) {
      out += format("    %3zu  %s\n", i, formatStep(s.lanes[l].steps[i]).c_str());
    }
  }
  return out;
}

}  // namespace coll
}  // namespace weft
