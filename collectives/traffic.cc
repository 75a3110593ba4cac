// The byte accounting of traffic.h.
#include "collectives/traffic.h"

#include <algorithm>
#include <vector>

#include "collectives/direct_host.h"

namespace weft {
namespace coll {

const char* copyPathName(CopyPath path) {
  switch (path) {
    case CopyPath::kFifo:
      return "fifo";
    case CopyPath::kSingleCopy:
      return "single-copy";
    case CopyPath::kZeroCopy:
      return "zero-copy";
  }
  return "invalid";
}

Traffic stepTraffic(const Step& step, double bytes, CopyPath path, bool inPlace) {
  const StepKind kind = step.kind;
  Traffic t;
  // The same memory: skipped (no premul-sum is counted here).
  const bool sameMemory =
      inPlace && step.srcBuf == Buf::kSend && step.dstBuf == Buf::kRecv && step.srcOffset == step.dstOffset;
  if (isNoOpCopy(kind, sameMemory, false)) return t;
  // A plain send with a lent (or mapped) source: the receiver's read is counted on its side.
  if (kind == StepKind::kSend && path != CopyPath::kFifo) return t;
  int operands = 0;
  operands += stepReads(kind) ? 1 : 0;
  operands += stepReceives(kind) ? 1 : 0;
  operands += stepWrites(kind) ? 1 : 0;
  if (stepSends(kind)) {
    // Without slots a peer reads what the step stored; only a result not stored is written.
    operands += (path != CopyPath::kZeroCopy || !stepWrites(kind)) ? 1 : 0;
  }
  (stepReduces(kind) ? t.reduceBytes : t.copyBytes) = operands * bytes;
  return t;
}

Traffic rankTraffic(const RankSchedule& s, size_t elemSize, CopyPath path, bool inPlace) {
  Traffic sum;
  for (const Lane& lane : s.lanes) {
    for (const Step& step : lane.steps) {
      const Traffic t =
          stepTraffic(step, static_cast<double>(step.count) * static_cast<double>(elemSize), path, inPlace);
      sum.copyBytes += t.copyBytes;
      sum.reduceBytes += t.reduceBytes;
    }
  }
  return sum;
}

Traffic busiestRankTraffic(const ScheduleParams& p, size_t elemSize, CopyPath path, bool inPlace) {
  Traffic most;
  for (int r = 0; r < p.nRanks; ++r) {
    const Traffic t = rankTraffic(buildSchedule(p, r), elemSize, path, inPlace);
    if (t.total() > most.total()) most = t;
  }
  return most;
}

double boundSeconds(const Traffic& t, double copyBytesPerS, double reduceBytesPerS) {
  if (copyBytesPerS <= 0 || reduceBytesPerS <= 0) return 0;
  return t.copyBytes / copyBytesPerS + t.reduceBytes / reduceBytesPerS;
}

Traffic directAllReduceTraffic(int nRanks, size_t elemSize, int64_t count) {
  Traffic t;
  if (nRanks < 2) return t;
  int64_t first = 0, end = 0;
  directBlock(count, elemSize, nRanks, 0, &first, &end);  // rank 0's block is never smaller
  const double b = static_cast<double>(end - first) * static_cast<double>(elemSize);
  t.reduceBytes = nRanks == 2 ? 4 * b : (3.0 * (nRanks - 2) + 4) * b;
  t.copyBytes = 2.0 * (nRanks - 2) * b;
  return t;
}

namespace {

// One rank's sent, copied and reduced bytes (scheduleWork's rules; hops are longestChain's).
topo::HostWork rankWork(const RankSchedule& s, size_t elemSize) {
  topo::HostWork w;
  for (const Lane& lane : s.lanes) {
    for (const Step& step : lane.steps) {
      if (step.count == 0 || step.kind == StepKind::kCopy) continue;
      const double bytes = static_cast<double>(step.count) * static_cast<double>(elemSize);
      if (stepSends(step.kind)) w.sent += bytes;
      if (stepReceives(step.kind)) (stepReduces(step.kind) ? w.reduces : w.copies) += bytes;
    }
  }
  w.copies += w.sent;
  return w;
}

// The longest chain of messages over every rank's schedule: lanes run their steps in order, a
// receiving step waits for the next message of its FIFO (sender, receiver, lane) and finishes
// one unit after it was sent; the answer is the latest finish.
double longestChain(const std::vector<RankSchedule>& ranks) {
  using Fifo = std::tuple<int, int, int>;
  std::map<Fifo, std::vector<double>> sentAt;  // when each message of the FIFO was sent
  std::map<Fifo, size_t> taken;                // messages of the FIFO received so far
  std::vector<std::vector<size_t>> next(ranks.size());
  std::vector<std::vector<double>> laneTime(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    next[r].assign(ranks[r].lanes.size(), 0);
    laneTime[r].assign(ranks[r].lanes.size(), 0);
  }
  double longest = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t r = 0; r < ranks.size(); ++r) {
      for (size_t l = 0; l < ranks[r].lanes.size(); ++l) {
        const std::vector<Step>& steps = ranks[r].lanes[l].steps;
        for (; next[r][l] < steps.size(); ++next[r][l], progress = true) {
          const Step& step = steps[next[r][l]];
          double t = laneTime[r][l];
          if (step.count > 0 && stepReceives(step.kind)) {
            const Fifo in{step.recvPeer, static_cast<int>(r), static_cast<int>(l)};
            const std::vector<double>& q = sentAt[in];
            if (taken[in] >= q.size()) break;  // its message is not sent yet
            t = std::max(t, q[taken[in]++] + 1);
          }
          if (step.count > 0 && stepSends(step.kind)) {
            sentAt[Fifo{static_cast<int>(r), step.sendPeer, step.sendLane >= 0 ? step.sendLane : static_cast<int>(l)}]
                .push_back(t);
          }
          laneTime[r][l] = t;
          longest = std::max(longest, t);
        }
      }
    }
  }
  return longest;
}

// The schedule parameters of a call of `count` float elements, one channel.
ScheduleParams floatParams(CollKind kind, Algo algo, int nRanks, int64_t count) {
  ScheduleParams p;
  p.kind = kind;
  p.algo = algo;
  p.nRanks = nRanks;
  p.count = count;
  p.align = partitionAlign(sizeof(float));
  return p;
}

// The larger buffer's elements per `count` (all-gather's send block: n blocks received).
int64_t largerBufferCount(CollKind kind, int64_t count, int nRanks) {
  const CollExtents e = collExtents(kind, count, nRanks);
  return std::max(e.send, e.recv);
}

}  // namespace

topo::HostWork scheduleWork(const ScheduleParams& p, size_t elemSize) {
  std::vector<RankSchedule> ranks;
  topo::HostWork most;
  for (int r = 0; r < p.nRanks; ++r) {
    ranks.push_back(buildSchedule(p, r));
    const topo::HostWork w = rankWork(ranks.back(), elemSize);
    most.copies = std::max(most.copies, w.copies);
    most.reduces = std::max(most.reduces, w.reduces);
    most.sent = std::max(most.sent, w.sent);
  }
  most.hops = longestChain(ranks);
  most.lanes = lanesPerChannel(p);
  return most;
}

bool ScheduleWorkSource::work(CollKind kind, Algo algo, int nRanks, int64_t bytes, topo::HostWork* out) {
  constexpr int64_t kElem = sizeof(float);
  const int64_t count = std::max<int64_t>(1, (bytes + kElem - 1) / kElem);
  if (!validateParams(floatParams(kind, algo, nRanks, count)).empty()) return false;
  if (largerBufferCount(kind, count, nRanks) < kExactElemsPerRank * nRanks) {
    *out = scheduleWork(floatParams(kind, algo, nRanks, count), kElem);
    return true;
  }
  // Large: one build at largeCount elements (a large block per rank), scaled to `bytes`.
  const int64_t largeCount = (int64_t{1} << 16) * nRanks / (largerBufferCount(kind, 1, nRanks) == 1 ? 1 : nRanks);
  auto [at, fresh] = large_.try_emplace(std::make_tuple(kind, algo, nRanks));
  if (fresh) at->second = scheduleWork(floatParams(kind, algo, nRanks, largeCount), kElem);
  const double scale = static_cast<double>(bytes) / static_cast<double>(largeCount * kElem);
  const topo::HostWork& w = at->second;
  *out = topo::HostWork{w.hops, w.copies * scale, w.reduces * scale, w.sent * scale, w.lanes};
  return true;
}

}  // namespace coll
}  // namespace weft
