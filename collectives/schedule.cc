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

#include "base/status.h"
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

// ---- The algorithm implementation table ----------------------------------------------------

namespace {

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

// The implementations match the algorithm identities of base/coll_traits.h (kAlgoTraits):
// a row for every (kind, algorithm) it lists, and for nothing else.
constexpr int implRows(CollKind kind, Algo algo) {
  int rows = 0;
  for (const AlgoImpl& a : kAlgoImpls) rows += (a.kind == kind && a.algo == algo) ? 1 : 0;
  return rows;
}
constexpr bool implsMatchAlgoTraits() {
  for (const CollTraits& t : kCollTraits) {
    for (const AlgoTraits& a : kAlgoTraits) {
      if (implRows(t.kind, a.algo) != (algoSupported(t.kind, a.algo) ? 1 : 0)) return false;
    }
  }
  return true;
}
static_assert(implsMatchAlgoTraits(),
              "kAlgoImpls must have one row per (collective, algorithm) that kAlgoTraits lists, and no other");

constexpr bool lanesBelowCallTokenLane() {
  for (const AlgoImpl& a : kAlgoImpls) {
    if (a.lanesPerChannel * kMaxScheduleChannels > kCallTokenLane) return false;
  }
  return true;
}
static_assert(lanesBelowCallTokenLane(), "every schedule lane must lie below kCallTokenLane");

const AlgoImpl* findImpl(CollKind kind, Algo algo) {
  for (const AlgoImpl& a : kAlgoImpls) {
    if (a.kind == kind && a.algo == algo) return &a;
  }
  return nullptr;
}

}  // namespace

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

std::string validateParams(const ScheduleParams& p) {
  if (!collTraits(p.kind).scheduled) {
    return formatText("%s schedules are built from the user's calls, not by buildSchedule", collName(p.kind));
  }
  if (!algoSupported(p.kind, p.algo)) {
    return formatText("%s has no %s algorithm (%s)", collName(p.kind), algoName(p.algo), supportedAlgorithms().c_str());
  }
  if (p.nRanks < 1 || p.nRanks > kMaxScheduleRanks) {
    return formatText("nRanks is %d; schedules support 1 to %d ranks", p.nRanks, kMaxScheduleRanks);
  }
  if (collRooted(p.kind) && (p.root < 0 || p.root >= p.nRanks)) {
    return formatText("root %d is not a rank of a communicator of %d ranks", p.root, p.nRanks);
  }
  if (p.nChannels < 1 || p.nChannels > kMaxScheduleChannels) {
    return formatText("nChannels is %d; schedules support 1 to %d channels", p.nChannels, kMaxScheduleChannels);
  }
  if (p.align < 1 || p.align > kMaxPartitionAlign) {
    return formatText("align is %" PRId64 "; parts start at multiples of 1 to %" PRId64 " elements", p.align,
                  kMaxPartitionAlign);
  }
  if (p.count < 0) return formatText("count is %" PRId64 "; it cannot be negative", p.count);
  if (p.count > std::numeric_limits<int64_t>::max() / p.nRanks) {
    return formatText("count %" PRId64 " times %d ranks does not fit in 64 bits", p.count, p.nRanks);
  }
  if (p.ringOrders.size() > static_cast<size_t>(kMaxScheduleChannels)) {
    return formatText("%zu ring orders; at most %d (one per channel)", p.ringOrders.size(), kMaxScheduleChannels);
  }
  for (size_t k = 0; k < p.ringOrders.size(); ++k) {
    const std::vector<int>& order = p.ringOrders[k];
    if (static_cast<int>(order.size()) != p.nRanks) {
      return formatText("ringOrders[%zu] has %zu entries for %d ranks; it must list every rank once", k, order.size(),
                    p.nRanks);
    }
    std::vector<bool> seen(p.nRanks, false);
    for (size_t i = 0; i < order.size(); ++i) {
      int r = order[i];
      if (r < 0 || r >= p.nRanks) return formatText("ringOrders[%zu][%zu] is %d, not a rank of %d", k, i, r, p.nRanks);
      if (seen[r]) {
        return formatText("ringOrders[%zu] lists rank %d twice; it must be a permutation of 0..%d", k, r, p.nRanks - 1);
      }
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
  if (stepReceives(step.kind)) out += formatText(" from %d", step.recvPeer);
  if (stepSends(step.kind)) {
    out += formatText(" to %d", step.sendPeer);
    if (step.sendLane >= 0) out += formatText(" (lane %d)", step.sendLane);
  }
  if (stepReads(step.kind)) {
    out += formatText(", src %s[%" PRId64 ", +%" PRId64 ")", bufName(step.srcBuf), step.srcOffset, step.count);
  }
  if (stepWrites(step.kind)) {
    out += formatText(", dst %s[%" PRId64 ", +%" PRId64 ")", bufName(step.dstBuf), step.dstOffset, step.count);
  }
  if (step.final) out += ", final";
  return out;
}

std::string formatSchedule(const RankSchedule& s) {
  std::string out = formatText("rank %d: %zu lanes, maxStepCount %" PRId64 "\n", s.rank, s.lanes.size(), s.maxStepCount);
  for (size_t l = 0; l < s.lanes.size(); ++l) {
    out += formatText("  lane %zu: %zu steps\n", l, s.lanes[l].steps.size());
    for (size_t i = 0; i < s.lanes[l].steps.size(); ++i) {
      out += formatText("    %3zu  %s\n", i, formatStep(s.lanes[l].steps[i]).c_str());
    }
  }
  return out;
}

}  // namespace coll
}  // namespace weft
