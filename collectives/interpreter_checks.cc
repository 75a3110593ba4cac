// The reference interpreter's static checks (interpreter_model.h): what a set of schedules must
// satisfy before interpreter.cc runs them, and the buffer views every rank's steps address.
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <unordered_map>

#include "collectives/interpreter_model.h"

namespace weft {
namespace coll {
namespace interp {



namespace {

// All-to-all is staged by the communicator in place (coll_traits.h); its schedules are not.
bool inPlaceSupported(CollKind kind) { return collTraits(kind).scheduled && !collTraits(kind).stagesInPlace; }


// The static checks of one set of schedules, one per rank.
class StaticChecks {
 public:
  StaticChecks(const ScheduleParams& p, const std::vector<RankSchedule>& schedules, const VerifyOptions& o)
      : p_(p), s_(schedules), o_(o), n_(p.nRanks) {}

  std::string run() {
    if (std::string e = validateParams(p_); !e.empty()) return "invalid parameters: " + e;
    if (o_.sliceElems < 1) return formatText("sliceElems is %" PRId64 "; it must be at least 1", o_.sliceElems);
    if (o_.fifoCapacity < 1) return formatText("fifoCapacity is %d; it must be at least 1", o_.fifoCapacity);
    if (o_.inPlace && !inPlaceSupported(p_.kind)) return formatText("%s has no in-place form", collName(p_.kind));
    if (static_cast<int>(s_.size()) != n_) return formatText("%zu schedules for %d ranks", s_.size(), n_);
    nLanes_ = static_cast<int>(s_[0].lanes.size());
    int64_t largest = 0;
    for (int r = 0; r < n_; ++r) {
      const RankSchedule& rs = s_[r];
      if (rs.rank != r) return formatText("schedule %d says it is rank %d's", r, rs.rank);
      if (static_cast<int>(rs.lanes.size()) != nLanes_) {
        return formatText("rank %d has %zu lanes but rank 0 has %d; every rank needs the same lanes", r, rs.lanes.size(),
                      nLanes_);
      }
      if (rs.maxStepCount != s_[0].maxStepCount) {
        return formatText("rank %d says maxStepCount is %" PRId64 " but rank 0 says %" PRId64
                      "; ranks would run different numbers of iterations",
                      r, rs.maxStepCount, s_[0].maxStepCount);
      }
      for (size_t l = 0; l < rs.lanes.size(); ++l) {
        for (size_t i = 0; i < rs.lanes[l].steps.size(); ++i) {
          const Step& st = rs.lanes[l].steps[i];
          if (st.count > largest) largest = st.count;
          if (std::string e = checkStep(r, st); !e.empty()) {
            return whereStatic(r, l, i) + ": " + e;
          }
        }
      }
    }
    if (largest != s_[0].maxStepCount) {
      return formatText("maxStepCount is %" PRId64 " but the largest step covers %" PRId64 " elements", s_[0].maxStepCount,
                    largest);
    }
    // Every FIFO has one feeding lane, or its messages' order would depend on timing.
    for (int r = 0; r < n_; ++r) {
      std::unordered_map<int64_t, int> feeder;
      for (size_t l = 0; l < s_[r].lanes.size(); ++l) {
        for (const Step& st : s_[r].lanes[l].steps) {
          if (!stepSends(st.kind)) continue;
          int fl = fifoLane(st, static_cast<int>(l));
          auto [it, fresh] = feeder.emplace(fifoKey(r, st.sendPeer, fl), static_cast<int>(l));
          if (!fresh && it->second != static_cast<int>(l)) {
            return formatText("rank %d: lanes %d and %zu both send to rank %d on lane %d; a FIFO needs a single sender", r,
                          it->second, l, st.sendPeer, fl);
          }
        }
      }
    }
    return "";
  }

 private:
  std::string checkStep(int r, const Step& st) const {
    if (st.count < 0) return "negative count";
    if (stepReceives(st.kind) && (st.recvPeer < 0 || st.recvPeer >= n_ || st.recvPeer == r)) {
      return formatText("receives from %d, which is not another rank of %d", st.recvPeer, n_);
    }
    if (stepSends(st.kind)) {
      if (st.sendPeer < 0 || st.sendPeer >= n_ || st.sendPeer == r) {
        return formatText("sends to %d, which is not another rank of %d", st.sendPeer, n_);
      }
      if (st.sendLane < -1 || st.sendLane >= nLanes_) return formatText("sendLane %d is not a lane", st.sendLane);
    }
    View views[3];
    bufferViews(p_, o_.inPlace, r, views);
    auto region = [&](Buf buf, int64_t off, const char* what) -> std::string {
      const View& v = views[static_cast<int>(buf)];
      if (v.invalid) return formatText("%s is the %s buffer, which %s", what, bufName(buf), v.invalid);
      if (off < 0 || off > v.size - st.count) {
        return formatText("%s region %s[%" PRId64 ", +%" PRId64 ") is outside the %s buffer of %" PRId64 " elements", what,
                      bufName(buf), off, st.count, bufName(buf), v.size);
      }
      return "";
    };
    if (stepReads(st.kind)) {
      if (std::string e = region(st.srcBuf, st.srcOffset, "src"); !e.empty()) return e;
    }
    if (stepWrites(st.kind)) {
      if (st.dstBuf == Buf::kSend) return "writes the send buffer, the caller's input";
      if (std::string e = region(st.dstBuf, st.dstOffset, "dst"); !e.empty()) return e;
    }
    return "";
  }

  std::string whereStatic(int r, size_t l, size_t i) const {
    return formatText("rank %d lane %zu step %zu (%s)", r, l, i, formatStep(s_[r].lanes[l].steps[i]).c_str());
  }
  int fifoLane(const Step& st, int lane) const { return fifoLaneOf(st, lane); }
  int64_t fifoKey(int src, int dst, int lane) const { return fifoKeyOf(src, dst, lane, n_, nLanes_); }

  const ScheduleParams& p_;
  const std::vector<RankSchedule>& s_;
  const VerifyOptions& o_;
  const int n_;
  int nLanes_ = 0;
};

}  // namespace

// Buffer views of rank r, in place or not. Sizes come from the parameters.
void bufferViews(const ScheduleParams& p, bool inPlace, int r, View* v) {
  int64_t sendCount = sendBufferCount(p), recvCount = recvBufferCount(p);
  v[static_cast<int>(Buf::kScratch)] = View{2, 0, scratchBufferCount(p), nullptr};
  View& send = v[static_cast<int>(Buf::kSend)];
  View& recv = v[static_cast<int>(Buf::kRecv)];
  // In place the two views share one allocation, the smaller at its block of the larger
  // (collInPlaceRecvOffset).
  const CollTraits& t = collTraits(p.kind);
  const int64_t offset = collInPlaceRecvOffset(p.kind, r, p.count);
  if (!inPlace) {
    send = View{0, 0, sendCount, nullptr};
    recv = View{1, 0, recvCount, nullptr};
  } else if (t.recvTimesRanks && !t.sendTimesRanks) {
    recv = View{1, 0, recvCount, nullptr};
    send = View{1, -offset, sendCount, nullptr};
  } else if (t.sendTimesRanks && !t.recvTimesRanks) {
    send = View{0, 0, sendCount, nullptr};
    recv = View{0, offset, recvCount, nullptr};
  } else {
    recv = View{1, 0, recvCount, nullptr};
    send = recv;
  }
  if (!collUsesSend(p.kind, r, p.root)) send.invalid = "only the root provides in a broadcast";
  if (!collUsesRecv(p.kind, r, p.root)) {
    recv.invalid = "only the root provides in a reduce (it may be invalid on the others)";
  }
}

std::string checkSchedulesStatic(const ScheduleParams& p, const std::vector<RankSchedule>& s, const VerifyOptions& o) {
  return StaticChecks(p, s, o).run();
}

}  // namespace interp
}  // namespace coll
}  // namespace weft
