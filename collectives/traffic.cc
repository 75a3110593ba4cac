// The byte accounting of traffic.h.
#include "collectives/traffic.h"

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

}  // namespace coll
}  // namespace weft
