// Schedule vocabulary (names, what each step kind does), buffer sizes, parameter checks, the
// dispatch from (collective, algorithm) to a builder, and the text dump. The algorithms
// themselves live in algo_*.cc; the interpreter that proves them in interpreter.cc.
#include "collectives/schedule.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <limits>

#include "collectives/algorithms.h"

namespace weft {
namespace coll {

const char* collName(CollKind kind) {
  switch (kind) {
    case CollKind::kAllReduce:
      return "allreduce";
    case CollKind::kAllGather:
      return "allgather";
    case CollKind::kReduceScatter:
      return "reducescatter";
    case CollKind::kBroadcast:
      return "broadcast";
    case CollKind::kReduce:
      return "reduce";
    case CollKind::kAllToAll:
      return "alltoall";
    case CollKind::kSendRecv:
      return "sendrecv";
  }
  return "unknown";
}

const char* algoName(Algo algo) {
  switch (algo) {
    case Algo::kRing:
      return "ring";
    case Algo::kTree:
      return "tree";
    case Algo::kPairwise:
      return "pairwise";
    case Algo::kRecursiveDoubling:
      return "doubling";
  }
  return "unknown";
}

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

int64_t sendBufferCount(const ScheduleParams& p) {
  switch (p.kind) {
    case CollKind::kReduceScatter:
    case CollKind::kAllToAll:
      return p.count * p.nRanks;
    default:
      return p.count;
  }
}

int64_t recvBufferCount(const ScheduleParams& p) {
  switch (p.kind) {
    case CollKind::kAllGather:
    case CollKind::kAllToAll:
      return p.count * p.nRanks;
    default:
      return p.count;
  }
}

int64_t scratchBufferCount(const ScheduleParams& p) {
  if (p.kind == CollKind::kReduce && p.algo == Algo::kTree) return algo::treeReduceScratch(p);
  return 0;
}

int lanesPerChannel(const ScheduleParams& p) {
  return (p.kind == CollKind::kAllReduce && p.algo == Algo::kTree) ? 4 : 1;
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

bool algoSupported(CollKind kind, Algo algo) {
  switch (kind) {
    case CollKind::kAllReduce:
      return algo == Algo::kRing || algo == Algo::kTree || algo == Algo::kRecursiveDoubling;
    case CollKind::kBroadcast:
    case CollKind::kReduce:
      return algo == Algo::kRing || algo == Algo::kTree;
    case CollKind::kAllGather:
    case CollKind::kReduceScatter:
      return algo == Algo::kRing;
    case CollKind::kAllToAll:
      return algo == Algo::kPairwise;
    case CollKind::kSendRecv:
      return false;
  }
  return false;
}

}  // namespace

std::string validateParams(const ScheduleParams& p) {
  if (p.kind == CollKind::kSendRecv) {
    return "send/recv schedules are built from the user's calls, not by buildSchedule";
  }
  if (!algoSupported(p.kind, p.algo)) {
    return format(
        "%s has no %s algorithm (all-reduce: ring, tree; all-gather, reduce-scatter: ring; "
        "broadcast, reduce: ring, tree; all-to-all: pairwise)",
        collName(p.kind), algoName(p.algo));
  }
  if (p.nRanks < 1 || p.nRanks > kMaxScheduleRanks) {
    return format("nRanks is %d; schedules support 1 to %d ranks", p.nRanks, kMaxScheduleRanks);
  }
  if ((p.kind == CollKind::kBroadcast || p.kind == CollKind::kReduce) && (p.root < 0 || p.root >= p.nRanks)) {
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
  switch (p.kind) {
    case CollKind::kAllReduce:
      if (p.algo == Algo::kTree) {
        algo::buildTreeAllReduce(p, rank, &s);
      } else if (p.algo == Algo::kRecursiveDoubling) {
        algo::buildDoublingAllReduce(p, rank, &s);
      } else {
        algo::buildRingAllReduce(p, rank, &s);
      }
      break;
    case CollKind::kAllGather:
      algo::buildRingAllGather(p, rank, &s);
      break;
    case CollKind::kReduceScatter:
      algo::buildRingReduceScatter(p, rank, &s);
      break;
    case CollKind::kBroadcast:
      (p.algo == Algo::kTree ? algo::buildTreeBroadcast : algo::buildChainBroadcast)(p, rank, &s);
      break;
    case CollKind::kReduce:
      (p.algo == Algo::kTree ? algo::buildTreeReduce : algo::buildChainReduce)(p, rank, &s);
      break;
    case CollKind::kAllToAll:
      algo::buildPairwiseAllToAll(p, rank, &s);
      break;
    case CollKind::kSendRecv:
      break;
  }
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
