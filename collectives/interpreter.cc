// The reference interpreter (interpreter.h). Values are symbolic: the set of contributing ranks
// is exact (a bit mask) up to 64 ranks, and a sum of random 64-bit keys with a count above
// that, where a wrong sum is still caught (at the end) but cannot always be named rank by rank.
#include "collectives/interpreter.h"

#include <cinttypes>
#include <deque>
#include <unordered_map>
#include <utility>

#include "collectives/interpreter_model.h"

namespace weft {
namespace coll {
namespace interp {
namespace {

uint64_t splitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class Interpreter {
 public:
  Interpreter(const ScheduleParams& p, const std::vector<RankSchedule>& schedules, const VerifyOptions& o)
      : p_(p), s_(schedules), o_(o), n_(p.nRanks), exact_(p.nRanks <= 64) {}

  std::string run() {
    std::string err = checkSchedulesStatic(p_, s_, o_);
    if (err.empty()) nLanes_ = static_cast<int>(s_[0].lanes.size());
    if (err.empty()) err = setUpMemory();
    if (err.empty() && o_.checkRaces) err = setUpRaceCheck();
    if (err.empty()) err = execute();
    if (err.empty()) err = checkFifosEmpty();
    if (err.empty()) err = checkResults();
    return err;
  }

 private:
  // ---- values ----
  uint64_t key(int rank) const { return exact_ ? (uint64_t{1} << rank) : splitMix(static_cast<uint64_t>(rank)); }
  uint64_t fullSet() const {
    uint64_t sum = 0;
    for (int r = 0; r < n_; ++r) sum += key(r);
    return sum;
  }
  bool complete(const Value& v) const { return v.count == static_cast<uint32_t>(n_) && v.set == full_; }

  // "element 5 of rank 3", "element 5 summed over ranks {0,1}", "... over every rank".
  std::string describe(const Value& v) const {
    if (!(v.flags & kHas)) return "nothing (never written)";
    std::string who;
    if (complete(v)) {
      who = "summed over every rank";
    } else if (exact_ && v.count == static_cast<uint32_t>(__builtin_popcountll(v.set))) {
      std::vector<int> ranks;
      for (int r = 0; r < n_; ++r) {
        if (v.set >> r & 1) ranks.push_back(r);
      }
      if (ranks.size() == 1) {
        who = formatText("of rank %d", ranks[0]);
      } else {
        who = "summed over ranks {";
        for (size_t i = 0; i < ranks.size() && i < 12; ++i) who += formatText("%s%d", i ? "," : "", ranks[i]);
        who += ranks.size() > 12 ? ",...}" : "}";
      }
    } else if (!exact_ && v.count == 1 && rankOfKey(v.set) >= 0) {
      who = formatText("of rank %d", rankOfKey(v.set));
    } else if (exact_) {
      who = formatText("summed over %u contributions, some of them twice", v.count);
    } else {
      who = formatText("summed over %u contributions", v.count);
    }
    std::string scaled;
    if (o_.preMul) {
      scaled = v.scaledCount == 0                                ? ", none pre-multiplied"
               : (v.scaled == v.set && v.scaledCount == v.count) ? ", pre-multiplied"
                                                                 : formatText(", %u pre-multiplied", v.scaledCount);
    }
    return formatText("element %" PRId64 " %s%s%s", v.index, who.c_str(), (v.flags & kPost) ? ", post-processed" : "",
                  scaled.c_str());
  }
  int rankOfKey(uint64_t k) const {
    for (int r = 0; r < n_; ++r) {
      if (key(r) == k) return r;
    }
    return -1;
  }
  std::string expectText(uint64_t set, uint32_t count, int64_t index, bool post) const {
    Value v;
    v.set = set, v.count = count, v.index = index, v.flags = static_cast<uint8_t>(kHas | (post ? kPost : 0));
    if (preMulHere()) v.scaled = set, v.scaledCount = count;
    return describe(v);
  }

  // ---- locations ----
  std::string where(int r, int l, int64_t it, size_t step) const {
    return formatText("rank %d lane %d step %zu (%s), iteration %" PRId64, r, l, step,
                  formatStep(s_[r].lanes[l].steps[step]).c_str(), it);
  }
  int fifoLane(const Step& st, int lane) const { return fifoLaneOf(st, lane); }
  int64_t fifoKey(int src, int dst, int lane) const { return fifoKeyOf(src, dst, lane, n_, nLanes_); }

  // ---- memory ----
  std::string setUpMemory() {
    full_ = fullSet();
    ranks_.resize(n_);
    for (int r = 0; r < n_; ++r) {
      RankState& rs = ranks_[r];
      bufferViews(p_, o_.inPlace, r, rs.views);
      for (const View& v : rs.views) {
        std::vector<Value>& a = rs.allocs[v.alloc];
        if (static_cast<int64_t>(a.size()) < v.base + v.size) a.resize(v.base + v.size);
      }
      const View& send = rs.views[static_cast<int>(Buf::kSend)];
      if (!send.invalid) {
        for (int64_t e = 0; e < send.size; ++e) {
          Value& x = rs.allocs[send.alloc][send.base + e];
          x.set = key(r), x.index = e, x.count = 1, x.flags = kHas;
        }
      }
      rs.lanes.resize(nLanes_);
    }
    return "";
  }

  // ---- race check set-up: which lanes share memory ----
  template <typename F>
  void forEachAccess(int r, F&& f) const {
    const RankState& rs = ranks_[r];
    for (size_t l = 0; l < s_[r].lanes.size(); ++l) {
      for (const Step& st : s_[r].lanes[l].steps) {
        if (st.count == 0) continue;
        const View& src = rs.views[static_cast<int>(st.srcBuf)];
        const View& dst = rs.views[static_cast<int>(st.dstBuf)];
        const bool sameMemory = src.alloc == dst.alloc && src.base + st.srcOffset == dst.base + st.dstOffset;
        if (isNoOpCopy(st.kind, sameMemory, preMulHere() && st.srcBuf == Buf::kSend)) {
          continue;  // skipped by executors (unless it multiplies a premul-sum's input in place)
        }
        if (stepReads(st.kind)) f(static_cast<int>(l), src.alloc, src.base + st.srcOffset, st.count, false);
        if (stepWrites(st.kind)) f(static_cast<int>(l), dst.alloc, dst.base + st.dstOffset, st.count, true);
      }
    }
  }

  std::string setUpRaceCheck() {
    int tracks = 0;
    std::vector<std::pair<int, int>> trackOwner;  // (rank, lane) per track
    for (int r = 0; r < n_; ++r) {
      RankState& rs = ranks_[r];
      // Per element: the first lane to touch it, whether a second lane did, whether any wrote.
      struct Mark {
        int32_t first = -1;
        bool shared = false;
        bool written = false;
      };
      std::vector<Mark> marks[3];
      for (int a = 0; a < 3; ++a) marks[a].resize(rs.allocs[a].size());
      forEachAccess(r, [&](int l, int a, int64_t from, int64_t count, bool write) {
        for (int64_t x = from; x < from + count; ++x) {
          Mark& m = marks[a][x];
          if (m.first < 0) m.first = l;
          if (m.first != l) m.shared = true;
          m.written = m.written || write;
        }
      });
      std::vector<bool> tracked(nLanes_, false);
      forEachAccess(r, [&](int l, int a, int64_t from, int64_t count, bool) {
        for (int64_t x = from; x < from + count && !tracked[l]; ++x) {
          if (marks[a][x].shared && marks[a][x].written) tracked[l] = true;
        }
      });
      for (int l = 0; l < nLanes_; ++l) {
        if (!tracked[l]) continue;
        rs.lanes[l].track = tracks++;
        rs.lanes[l].localTrack = static_cast<int>(rs.trackedLanes.size());
        rs.trackedLanes.push_back(l);
        trackOwner.emplace_back(r, l);
      }
      for (int a = 0; a < 3 && !rs.trackedLanes.empty(); ++a) {
        rs.shadow[a].lastRead.assign(rs.trackedLanes.size(), std::vector<uint32_t>(rs.allocs[a].size(), 0));
        rs.shadow[a].lastWrite.assign(rs.trackedLanes.size(), std::vector<uint32_t>(rs.allocs[a].size(), 0));
      }
    }
    nTracks_ = tracks;
    if (nTracks_ > 0) {
      for (RankState& rs : ranks_) {
        for (LaneState& ls : rs.lanes) ls.clock.assign(nTracks_, 0);
      }
    }
    return "";
  }

  // Records an access by (r, lane) to element x of allocation a and checks that every other
  // lane's conflicting access to it is ordered before this one.
  std::string access(int r, int l, int a, int64_t x, bool write) {
    RankState& rs = ranks_[r];
    LaneState& me = rs.lanes[l];
    if (me.localTrack < 0) return "";
    Shadow& sh = rs.shadow[a];
    for (size_t k = 0; k < rs.trackedLanes.size(); ++k) {
      if (static_cast<int>(k) == me.localTrack) continue;
      int other = rs.trackedLanes[k];
      uint32_t known = me.clock[rs.lanes[other].track];
      uint32_t w = sh.lastWrite[k][x], rd = write ? sh.lastRead[k][x] : 0;
      uint32_t epoch = w > known ? w : (rd > known ? rd : 0);
      if (epoch == 0) continue;
      auto [it, st] = rs.lanes[other].history[epoch - 1];
      std::string buf = bufferName(r, a, x);
      return formatText("rank %d: lane %d step %zu (%s), iteration %" PRId64
                    " %s %s, which lane %d step %zu (%s), "
                    "iteration %" PRId64 " %s, and no message orders the two: an executor may run them either way",
                    r, l, me.step, formatStep(s_[r].lanes[l].steps[me.step]).c_str(), me.iteration,
                    write ? "writes" : "reads", buf.c_str(), other, st,
                    formatStep(s_[r].lanes[other].steps[st]).c_str(), it, w > known ? "writes" : "reads");
    }
    (write ? sh.lastWrite : sh.lastRead)[me.localTrack][x] = me.clock[me.track];
    return "";
  }

  // "recv[12]" (and the other name, when two buffers share the memory).
  std::string bufferName(int r, int a, int64_t x) const {
    std::string out;
    for (int b = 0; b < 3; ++b) {
      const View& v = ranks_[r].views[b];
      if (v.alloc != a || x < v.base || x >= v.base + v.size) continue;
      out += formatText("%s%s[%" PRId64 "]", out.empty() ? "" : " = ", bufName(static_cast<Buf>(b)), x - v.base);
    }
    return out;
  }

  // ---- execution ----
  std::string execute() {
    iterations_ = iterationsFor(s_[0].maxStepCount, o_.sliceElems);
    for (;;) {
      bool progress = false, allDone = true;
      for (int r = 0; r < n_; ++r) {
        for (int l = 0; l < nLanes_; ++l) {
          LaneState& ls = ranks_[r].lanes[l];
          if (ls.done) continue;
          bool moved = false;
          std::string err = stepOnce(r, l, &moved);
          if (!err.empty()) return err;
          progress = progress || moved;
          allDone = allDone && ls.done;
        }
      }
      if (allDone) return "";
      if (!progress) return deadlock();
    }
  }

  void advance(LaneState& ls, size_t nSteps) {
    if (++ls.step >= nSteps) ls.step = 0, ++ls.iteration;
    if (ls.iteration >= iterations_) ls.done = true;
  }

  // Skips empty slices, then runs the lane's next step if its message and slot are there.
  std::string stepOnce(int r, int l, bool* moved) {
    LaneState& ls = ranks_[r].lanes[l];
    const std::vector<Step>& steps = s_[r].lanes[l].steps;
    if (steps.empty() || iterations_ == 0) {
      ls.done = *moved = true;
      return "";
    }
    while (!ls.done && sliceOf(steps[ls.step], ls.iteration, o_.sliceElems).count == 0) {
      advance(ls, steps.size());
      *moved = true;
    }
    if (ls.done) return "";
    const Step& st = steps[ls.step];
    std::deque<Message>* in = nullptr;
    std::deque<Message>* out = nullptr;
    if (stepReceives(st.kind)) {
      in = &fifos_[fifoKey(st.recvPeer, r, l)];
      if (in->empty()) return "";
    }
    if (stepSends(st.kind)) {
      out = &fifos_[fifoKey(r, st.sendPeer, fifoLane(st, l))];
      if (static_cast<int>(out->size()) >= o_.fifoCapacity) return "";
    }
    std::string err = runStep(r, l, st, in, out);
    if (!err.empty()) return err;
    advance(ls, steps.size());
    *moved = true;
    return "";
  }

  // Takes the step's incoming message (the slice's size, or the ranks disagree) and merges its
  // vector clock into the lane's.
  std::string takeMessage(int r, int l, const Step& st, const Slice& sl, std::deque<Message>* in, Message* out) {
    LaneState& ls = ranks_[r].lanes[l];
    Message& msg = *out;
    msg = std::move(in->front());
    in->pop_front();
    if (static_cast<int64_t>(msg.values.size()) != sl.count) {
      return where(r, l, ls.iteration, ls.step) +
             formatText(": expects a slice of %" PRId64
                    " elements but rank %d sent %zu (lane %d step %zu (%s), "
                    "iteration %" PRId64 ")",
                    sl.count, st.recvPeer, msg.values.size(), msg.lane, msg.step,
                    formatStep(s_[st.recvPeer].lanes[msg.lane].steps[msg.step]).c_str(), msg.iteration);
    }
    for (int t = 0; t < nTracks_; ++t) {
      if (msg.clock[t] > ls.clock[t]) ls.clock[t] = msg.clock[t];
    }
    return "";
  }

  // One slice of step st of lane l of rank r: takes its message, checks and moves every element
  // of the slice, and queues the message it sends.
  std::string runStep(int r, int l, const Step& st, std::deque<Message>* in, std::deque<Message>* out) {
    RankState& rs = ranks_[r];
    LaneState& ls = rs.lanes[l];
    Slice sl = sliceOf(st, ls.iteration, o_.sliceElems);
    Message msg;
    if (in) {
      if (std::string e = takeMessage(r, l, st, sl, in, &msg); !e.empty()) return e;
    }
    if (ls.track >= 0) {
      ++ls.clock[ls.track];
      ls.history.emplace_back(ls.iteration, ls.step);
    }
    const View& src = rs.views[static_cast<int>(st.srcBuf)];
    const View& dst = rs.views[static_cast<int>(st.dstBuf)];
    int64_t srcAt = src.base + st.srcOffset + sl.first, dstAt = dst.base + st.dstOffset + sl.first;
    bool reads = stepReads(st.kind), writes = stepWrites(st.kind);
    if (reads && writes && src.alloc == dst.alloc && overlapPartly(srcAt, dstAt, sl.count)) {
      return where(r, l, ls.iteration, ls.step) + ": its src and dst overlap without being the same elements";
    }
    // Executors multiply a premul-sum's input wherever a step reads the send buffer.
    const bool scalesOwn = preMulHere() && reads && st.srcBuf == Buf::kSend;
    if (isNoOpCopy(st.kind, src.alloc == dst.alloc && srcAt == dstAt, scalesOwn)) {
      return skipCopy(r, l, st, sl, dst.alloc, dstAt);
    }
    bool reduces = stepReduces(st.kind);
    Message sent;
    if (out) sent.values.resize(sl.count);
    for (int64_t j = 0; j < sl.count; ++j) {
      auto fail = [&](const std::string& what) { return failAt(r, l, sl.first + j, what); };
      Value v;
      if (reads) {
        if (std::string e = access(r, l, src.alloc, srcAt + j, false); !e.empty()) return e;
        if (std::string e = load(r, src.alloc, srcAt + j, scalesOwn, &v); !e.empty()) return fail(e);
      }
      if (in) {
        const Value& m = msg.values[j];
        if (reduces) {
          if (std::string e = reduce(v, m); !e.empty()) return fail(e);
        } else {
          v = m;
        }
      }
      if (st.final) {
        if (std::string e = finish(v); !e.empty()) return fail(e);
      }
      if (writes) {
        if (std::string e = access(r, l, dst.alloc, dstAt + j, true); !e.empty()) return e;
        Value& d = rs.allocs[dst.alloc][dstAt + j];
        d = v;
        d.flags |= kWritten;
      }
      if (out) sent.values[j] = v;
    }
    if (out) {
      sent.clock = ls.clock;
      sent.lane = l, sent.step = ls.step, sent.iteration = ls.iteration;
      out->push_back(std::move(sent));
    }
    return "";
  }

  // A copy onto the same memory (isNoOpCopy): executors skip it, so post-processing there would
  // be lost, except with one rank, where it is the identity.
  std::string skipCopy(int r, int l, const Step& st, const Slice& sl, int alloc, int64_t at) {
    if (!st.final) return "";
    for (int64_t j = 0; j < sl.count; ++j) {
      Value& v = ranks_[r].allocs[alloc][at + j];
      if (n_ != 1) {
        return failAt(r, l, sl.first + j,
                      "a final copy onto the same memory is skipped by executors, losing post-processing");
      }
      if (std::string e = finish(v); !e.empty()) return failAt(r, l, sl.first + j, e);
    }
    return "";
  }

  // The failure of element `element` of the current step of lane l of rank r.
  std::string failAt(int r, int l, int64_t element, const std::string& what) const {
    const LaneState& ls = ranks_[r].lanes[l];
    return where(r, l, ls.iteration, ls.step) +
           formatText(", element %" PRId64 " of the step's region: %s", element, what.c_str());
  }

  // Two regions of `count` elements of one allocation, at a and b, that overlap without being the
  // same elements.
  static bool overlapPartly(int64_t a, int64_t b, int64_t count) { return a != b && a < b + count && b < a + count; }

  // Element `at` of allocation `alloc` of rank r as a step reads it. A premul-sum's own input
  // is multiplied here (scalesOwn), as executors multiply it when they read the send buffer.
  std::string load(int r, int alloc, int64_t at, bool scalesOwn, Value* out) const {
    Value v = ranks_[r].allocs[alloc][at];
    v.flags &= ~kWritten;
    if (!(v.flags & kHas)) return formatText("reads %s, which holds nothing yet", bufferName(r, alloc, at).c_str());
    if (scalesOwn) {
      if (v.scaledCount != 0) {
        return formatText("reads %s from the send buffer, where executors multiply by the premul-sum scalar, "
                      "but it holds %s: a contribution would be multiplied twice",
                      bufferName(r, alloc, at).c_str(), describe(v).c_str());
      }
      v.scaled = v.set, v.scaledCount = v.count;
    }
    *out = v;
    return "";
  }

  // acc = acc op incoming.
  std::string reduce(Value& acc, const Value& m) const {
    if (!(m.flags & kHas)) return "the incoming element holds nothing (the sender never wrote it)";
    if (acc.index != m.index) {
      return formatText("adds %s to %s: different elements", describe(m).c_str(), describe(acc).c_str());
    }
    if ((acc.flags | m.flags) & kPost) {
      return formatText("adds %s to %s: a post-processed value cannot be reduced again", describe(m).c_str(),
                    describe(acc).c_str());
    }
    if (exact_ && (acc.set & m.set)) {
      Value both;
      both.set = acc.set & m.set, both.count = static_cast<uint32_t>(__builtin_popcountll(both.set));
      both.index = acc.index, both.flags = kHas;
      return formatText("adds %s to %s: counts %s twice", describe(m).c_str(), describe(acc).c_str(),
                    describe(both).c_str());
    }
    acc.set += m.set;
    acc.count += m.count;
    acc.scaled += m.scaled;
    acc.scaledCount += m.scaledCount;
    return "";
  }

  std::string finish(Value& v) const {
    if (!(v.flags & kHas)) return "final step on an element that holds nothing";
    if (v.flags & kPost) return formatText("post-processes %s a second time", describe(v).c_str());
    if (!complete(v)) return formatText("final step on %s, which is not every rank's contribution", describe(v).c_str());
    v.flags |= kPost;
    return "";
  }

  std::string deadlock() const {
    std::string out = "deadlock: no lane can move;";
    int listed = 0, blocked = 0;
    for (int r = 0; r < n_; ++r) {
      for (int l = 0; l < nLanes_; ++l) {
        const LaneState& ls = ranks_[r].lanes[l];
        if (ls.done) continue;
        ++blocked;
        if (listed == 8) continue;
        ++listed;
        const Step& st = s_[r].lanes[l].steps[ls.step];
        auto fifo = [&](int64_t k) {
          auto it = fifos_.find(k);
          return it == fifos_.end() ? size_t{0} : it->second.size();
        };
        std::string why;
        if (stepReceives(st.kind) && fifo(fifoKey(st.recvPeer, r, l)) == 0) {
          why = formatText("waits for data from rank %d", st.recvPeer);
        } else {
          why = formatText("waits for a free slot to rank %d on lane %d (%d of %d used)", st.sendPeer, fifoLane(st, l),
                       static_cast<int>(fifo(fifoKey(r, st.sendPeer, fifoLane(st, l)))), o_.fifoCapacity);
        }
        out += " " + where(r, l, ls.iteration, ls.step) + " " + why + ";";
      }
    }
    if (blocked > listed) out += formatText(" and %d more lanes", blocked - listed);
    if (o_.fifoCapacity < 2) out += " (rings need FIFOs of at least 2 slots)";
    return out;
  }

  std::string checkFifosEmpty() const {
    for (const auto& [k, q] : fifos_) {
      if (q.empty()) continue;
      int lane = static_cast<int>(k % nLanes_);
      int dst = static_cast<int>(k / nLanes_ % n_), src = static_cast<int>(k / nLanes_ / n_);
      const Message& m = q.front();
      return formatText(
          "rank %d sent %zu slices to rank %d on lane %d that no step received (the first from lane %d "
          "step %zu (%s), iteration %" PRId64 ")",
          src, q.size(), dst, lane, m.lane, m.step, formatStep(s_[src].lanes[m.lane].steps[m.step]).c_str(),
          m.iteration);
    }
    return "";
  }

  // ---- results ----
  std::string expect(int r, int64_t e, uint64_t set, uint32_t count, int64_t index, bool post) const {
    const View& v = ranks_[r].views[static_cast<int>(Buf::kRecv)];
    const Value& got = ranks_[r].allocs[v.alloc][v.base + e];
    bool ok = (got.flags & kHas) && got.set == set && got.count == count && got.index == index &&
              ((got.flags & kPost) != 0) == post;
    // A premul-sum's result: every contribution multiplied, once.
    if (ok && preMulHere()) ok = got.scaled == set && got.scaledCount == count;
    if (ok) return "";
    return formatText("rank %d recv[%" PRId64 "] holds %s; expected %s", r, e, describe(got).c_str(),
                  expectText(set, count, index, post).c_str());
  }

  // Every element of every receive buffer against what the collective's traits say it holds
  // (collSourceOf): the post-processed sum over every rank, or one rank's element as it was
  // sent. A rank the collective gives no receive buffer (a reduce's non-roots) writes nothing.
  std::string checkResults() const {
    const int64_t recvCount = collExtents(p_.kind, p_.count, n_).recv;
    for (int r = 0; r < n_; ++r) {
      if (!collUsesRecv(p_.kind, r, p_.root)) {
        std::string e = checkUntouched(r);
        if (!e.empty()) return e;
        continue;
      }
      for (int64_t i = 0; i < recvCount; ++i) {
        const CollSource src = collSourceOf(p_.kind, r, p_.root, i, p_.count);
        if (!src.valid) break;
        const bool summed = src.fromRank < 0;
        std::string e = summed ? expect(r, i, full_, static_cast<uint32_t>(n_), src.sendIndex, true)
                               : expect(r, i, key(src.fromRank), 1, src.sendIndex, false);
        if (!e.empty()) return e;
      }
    }
    return "";
  }

  // Premul-sum applies to the reducing collectives only.
  bool preMulHere() const {
    return o_.preMul && collReduces(p_.kind);
  }

  // A non-root of a reduce writes none of the caller's memory.
  std::string checkUntouched(int r) const {
    for (int a = 0; a < 2; ++a) {
      const std::vector<Value>& mem = ranks_[r].allocs[a];
      for (size_t x = 0; x < mem.size(); ++x) {
        if (mem[x].flags & kWritten) {
          return formatText("rank %d is not the root of the reduce but wrote %s", r,
                        bufferName(r, a, static_cast<int64_t>(x)).c_str());
        }
      }
    }
    return "";
  }

  const ScheduleParams& p_;
  const std::vector<RankSchedule>& s_;
  const VerifyOptions o_;
  const int n_;
  const bool exact_;
  int nLanes_ = 0;
  int nTracks_ = 0;
  int64_t iterations_ = 0;
  uint64_t full_ = 0;
  std::vector<RankState> ranks_;
  std::unordered_map<int64_t, std::deque<Message>> fifos_;
};

}  // namespace
}  // namespace interp

std::vector<RankSchedule> buildAllSchedules(const ScheduleParams& p) {
  std::vector<RankSchedule> out;
  out.reserve(p.nRanks);
  for (int r = 0; r < p.nRanks; ++r) out.push_back(buildSchedule(p, r));
  return out;
}

std::string verifySchedules(const ScheduleParams& p, const std::vector<RankSchedule>& schedules,
                            const VerifyOptions& options) {
  return interp::Interpreter(p, schedules, options).run();
}

std::string verifySchedule(const ScheduleParams& p, const VerifyOptions& options) {
  if (std::string e = validateParams(p); !e.empty()) return "invalid parameters: " + e;
  return verifySchedules(p, buildAllSchedules(p), options);
}

std::string verifySchedule(const ScheduleParams& p, int64_t sliceElems, bool inPlace, int fifoCapacity) {
  VerifyOptions o;
  o.sliceElems = sliceElems;
  o.inPlace = inPlace;
  o.fifoCapacity = fifoCapacity;
  return verifySchedule(p, o);
}

}  // namespace coll
}  // namespace weft
