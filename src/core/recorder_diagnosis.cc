// The diagnosis over copied flight recorders (recorder_diagnosis.h). Nothing here reads a file
// or a process: the copies, checked by recorder_read.cc, and a time are the whole input.
#include "core/recorder_diagnosis.h"

#include <time.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>

#include "base/coll_traits.h"
#include "base/os.h"
#include "base/status.h"
#include "core/init_wait.h"
#include "collectives/datatypes.h"

namespace weft {
namespace core {
namespace {

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

const CopiedCall* latestCall(const RecorderCopy& c) { return c.entries.empty() ? nullptr : &c.entries.back(); }

bool inCall(const CopiedCall& call) {
  return call.state == RecordedState::kRunning || call.state == RecordedState::kWaiting;
}

bool ownerDead(const RecorderCopy& c) {
  return c.liveness == OwnerLiveness::kDead || c.liveness == OwnerLiveness::kPidReused;
}

// The time ages are measured against: the look's for a live segment; a dump's own latest write
// (what it says held when it was written).
int64_t referenceNs(const RecorderCopy& c, int64_t nowNs) {
  if (c.liveness != OwnerLiveness::kAsDumped) return nowNs;
  int64_t ref = c.updatedNs;
  for (const CopiedCall& e : c.entries) ref = std::max({ref, e.queuedNs, e.startedNs, e.endedNs});
  return ref;
}

std::string ageSince(int64_t thenNs, int64_t refNs) { return formatAge(thenNs > 0 ? refNs - thenNs : 0); }

const char* dumpReasonName(RecorderDumpReason reason) {
  switch (reason) {
    case RecorderDumpReason::kTimeout:
      return "dumped on a time-out";
    case RecorderDumpReason::kLiveness:
      return "dumped when a peer died, went silent or disagreed";
    case RecorderDumpReason::kSignal:
      return "dumped on the dump signal";
    case RecorderDumpReason::kRequest:
      return "dumped on request";
    default:
      return "dumped";
  }
}

// "waiting for rank 3 in step 5 since 12.4 s", "running since 2.0 s", "done 1.0 s ago", ...
std::string statePhrase(const CopiedCall& call, int64_t refNs) {
  int64_t started = call.startedNs > 0 ? call.startedNs : call.queuedNs;
  switch (call.state) {
    case RecordedState::kQueued:
      return "enqueued " + ageSince(call.queuedNs, refNs) + " ago";
    case RecordedState::kRunning:
      return "running since " + ageSince(started, refNs);
    case RecordedState::kWaiting: {
      std::string peer = call.waitPeer >= 0 ? formatText("for rank %d", call.waitPeer) : "(for whom is not known)";
      std::string step = call.waitStep >= 0 ? formatText(" in step %d", call.waitStep) : "";
      return "waiting " + peer + step + " since " + ageSince(started, refNs);
    }
    case RecordedState::kDone:
      return "done " + ageSince(call.endedNs, refNs) + " ago";
    case RecordedState::kFailed:
      return "failed: " + (call.error.empty() ? std::string("(no error text)") : call.error);
    default:
      return "in no known state";
  }
}

std::string rankLine(const RecorderCopy& c, int64_t nowNs) {
  std::string owner = formatText("rank %d (pid %d on %s, %s", c.rank, c.pid, c.host.c_str(), livenessName(c.liveness));
  if (c.liveness == OwnerLiveness::kAsDumped) owner += std::string(", ") + dumpReasonName(c.dumped);
  owner += "): ";
  int64_t ref = referenceNs(c, nowNs);
  const CopiedCall* last = latestCall(c);
  if (!last) return owner + "no call yet (communicator created " + ageSince(c.createdNs, ref) + " ago)";
  std::string line = owner + describeCall(*last) + ", " + statePhrase(*last, ref);
  if (last->bytesDone > 0) line += "; " + formatBytes(last->bytesDone) + " moved";
  if (c.beingWritten > 0) line += formatText("; %d entries were being written", c.beingWritten);
  return line;
}

// The signature two ranks' calls of the same number must share (the call checks' facts).
bool sameCall(const CopiedCall& a, const CopiedCall& b) {
  if (a.kind != b.kind) return false;
  if (a.kind == kRecordedBarrier || a.kind == static_cast<int32_t>(coll::CollKind::kSendRecv)) return true;
  auto kind = static_cast<coll::CollKind>(a.kind);
  if (a.count != b.count || a.type != b.type) return false;
  if (coll::collReduces(kind) && a.op != b.op) return false;
  return !coll::collRooted(kind) || a.root == b.root;
}

// "allreduce (1024 x float, sum)": the facts sameCall compares.
std::string describeSignature(const CopiedCall& call) {
  if (call.kind == kRecordedBarrier) return "barrier";
  if (call.kind == static_cast<int32_t>(coll::CollKind::kSendRecv)) {
    return formatText("sendrecv (%" PRIu64 " operations)", call.count);
  }
  auto kind = static_cast<coll::CollKind>(call.kind);
  std::string out = formatText("%s (%" PRIu64 " x %s", coll::collName(kind), call.count,
                           coll::dataTypeName(static_cast<weftDataType_t>(call.type)));
  if (coll::collReduces(kind)) out += std::string(", ") + coll::redOpName(static_cast<weftRedOp_t>(call.op));
  if (coll::collRooted(kind)) out += formatText(", root %d", call.root);
  return out + ")";
}

class CommDiagnoser {
 public:
  CommDiagnoser(CommReport* report, int64_t nowNs) : r_(*report), nowNs_(nowNs) {
    for (size_t i = 0; i < r_.ranks.size(); ++i) byRank_[r_.ranks[i].rank] = &r_.ranks[i];
  }
  void run() {
    for (const RecorderCopy& c : r_.ranks) r_.rankLines.push_back(rankLine(c, nowNs_));
    findMissing();
    findDead();
    findFailed();
    findMismatch();
    findStragglers();
    if (r_.findings.empty()) r_.findings.push_back(quietSummary());
  }

 private:
  const RecorderCopy* copyOf(int rank) const {
    auto it = byRank_.find(rank);
    return it == byRank_.end() ? nullptr : it->second;
  }
  uint64_t latestNo(int rank) const {
    const RecorderCopy* c = copyOf(rank);
    const CopiedCall* last = c ? latestCall(*c) : nullptr;
    return last ? last->callNo : 0;
  }
  void findMissing();
  void findDead();
  void findFailed();
  void findMismatch();
  void findStragglers();
  int waitTerminus(int rank, uint64_t callNo) const;
  std::string describeTarget(int rank, uint64_t callNo) const;
  std::string whereIs(int rank, uint64_t callNo) const;
  std::string quietSummary() const;

  CommReport& r_;
  int64_t nowNs_;
  std::map<int, const RecorderCopy*> byRank_;
};

constexpr int kWaitCycle = -2;

void CommDiagnoser::findMissing() {
  for (int rank = 0; rank < r_.nRanks; ++rank) {
    if (!copyOf(rank)) r_.missing.push_back(rank);
  }
  if (r_.missing.empty()) return;
  bool one = r_.missing.size() == 1;
  r_.findings.push_back(formatText("%s of %d %s missing: no recorder of %s was found (not started yet, WEFT_RECORDER_CALLS=0, "
                               "or on another host: give weft-inspect that host's dump files too)",
                               ranksPhrase(r_.missing).c_str(), r_.nRanks, one ? "is" : "are", one ? "it" : "them"));
}

void CommDiagnoser::findDead() {
  for (const RecorderCopy& c : r_.ranks) {
    if (!ownerDead(c)) continue;
    std::string line = formatText("rank %d (pid %d on %s) is dead", c.rank, c.pid, c.host.c_str());
    if (c.liveness == OwnerLiveness::kPidReused) line += " (its pid now belongs to another process)";
    const CopiedCall* last = latestCall(c);
    if (last) line += "; its last call was " + describeCall(*last) + ", " + stateName(last->state);
    r_.findings.push_back(line);
  }
}

void CommDiagnoser::findFailed() {
  for (const RecorderCopy& c : r_.ranks) {
    const CopiedCall* last = latestCall(c);
    if (!last || last->state != RecordedState::kFailed) continue;
    r_.findings.push_back(formatText("rank %d failed in %s: %s", c.rank, describeCall(*last).c_str(),
                                 last->error.empty() ? "(no error text)" : last->error.c_str()));
  }
}

// The run of `c` that holds call `no`; null when none does.
const CopiedCall* runHolding(const RecorderCopy& c, uint64_t no) {
  for (const CopiedCall& e : c.entries) {
    if (e.firstCallNo <= no && no <= e.callNo) return &e;
  }
  return nullptr;
}

// Each rank's calls are constant over its runs, so two ranks differ somewhere only if they differ
// at the first call of some rank's run: those numbers are the ones compared.
void CommDiagnoser::findMismatch() {
  std::set<uint64_t> numbers;
  for (const RecorderCopy& c : r_.ranks) {
    for (const CopiedCall& e : c.entries) numbers.insert(e.firstCallNo);
  }
  std::string first;
  int more = 0;
  for (uint64_t no : numbers) {
    // Ranks grouped by the call they made under this number, in rank order.
    std::vector<std::pair<const CopiedCall*, std::vector<int>>> groups;
    for (const RecorderCopy& c : r_.ranks) {
      const CopiedCall* call = runHolding(c, no);
      if (!call) continue;
      auto same = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return sameCall(*g.first, *call); });
      if (same == groups.end()) groups.push_back({call, {c.rank}});
      else same->second.push_back(c.rank);
    }
    if (groups.size() < 2) continue;
    if (!first.empty()) {
      ++more;
      continue;
    }
    std::vector<std::string> parts;
    for (const auto& g : groups) parts.push_back(ranksPhrase(g.second) + " called " + describeSignature(*g.first));
    first = formatText("call #%" PRIu64 " disagrees between ranks: ", no) + join(parts, "; ");
  }
  if (first.empty()) return;
  if (more > 0) first += formatText(" (and %d later call%s disagree too)", more, more == 1 ? "" : "s");
  r_.findings.push_back(first);
}

// Where rank's wait in call callNo leads: follows "waiting for peer" through ranks that wait in
// the same call, to the first rank that does not (or is missing or dead); kWaitCycle for a cycle.
int CommDiagnoser::waitTerminus(int rank, uint64_t callNo) const {
  std::set<int> seen{rank};
  int cur = rank;
  for (;;) {
    const RecorderCopy* c = copyOf(cur);
    if (!c || (cur != rank && ownerDead(*c))) return cur;
    const CopiedCall* last = latestCall(*c);
    if (!last || last->callNo != callNo || last->state != RecordedState::kWaiting || last->waitPeer < 0) return cur;
    if (!seen.insert(last->waitPeer).second) return kWaitCycle;
    cur = last->waitPeer;
  }
}

std::string CommDiagnoser::describeTarget(int rank, uint64_t callNo) const {
  const RecorderCopy* c = copyOf(rank);
  std::string where = whereIs(rank, callNo);
  if (c && c->liveness == OwnerLiveness::kStopped) {
    where += formatText("; its process is stopped (SIGSTOP, Ctrl-Z or a debugger): kill -CONT %d resumes it", c->pid);
  }
  return where;
}

std::string CommDiagnoser::whereIs(int rank, uint64_t callNo) const {
  const RecorderCopy* c = copyOf(rank);
  if (!c) return formatText("rank %d has no recorder here (missing)", rank);
  if (ownerDead(*c)) return formatText("rank %d (pid %d on %s) is dead", rank, c->pid, c->host.c_str());
  int64_t ref = referenceNs(*c, nowNs_);
  const CopiedCall* last = latestCall(*c);
  if (!last) return formatText("rank %d has made no call on this communicator", rank);
  std::string call = describeCall(*last);
  if (last->state == RecordedState::kDone) {
    std::string line = formatText("rank %d finished %s %s ago", rank, call.c_str(), ageSince(last->endedNs, ref).c_str());
    return last->callNo < callNo ? line + " and has not called since" : line;
  }
  if (last->state == RecordedState::kFailed) return formatText("rank %d failed in %s", rank, call.c_str());
  if (last->callNo == callNo) return formatText("rank %d is in %s too, %s", rank, call.c_str(), statePhrase(*last, ref).c_str());
  if (last->callNo > callNo) return formatText("rank %d is already in %s, %s", rank, call.c_str(), statePhrase(*last, ref).c_str());
  int64_t since = last->startedNs > 0 ? last->startedNs : last->queuedNs;
  std::string line = formatText("rank %d is in %s since %s", rank, call.c_str(), ageSince(since, ref).c_str());
  if (last->state == RecordedState::kWaiting && last->waitPeer >= 0) line += formatText(", waiting for rank %d", last->waitPeer);
  if (last->state == RecordedState::kQueued) line += " (enqueued on its stream)";
  return line;
}

void CommDiagnoser::findStragglers() {
  // (call number, the ranks waited for) -> the ranks waiting; the key's order is the output's.
  std::map<std::pair<uint64_t, std::vector<int>>, std::vector<int>> groups;
  std::map<uint64_t, const CopiedCall*> callOf;
  for (const RecorderCopy& c : r_.ranks) {
    const CopiedCall* last = latestCall(c);
    if (ownerDead(c) || !last || !inCall(*last)) continue;
    std::vector<int> targets;
    int end = waitTerminus(c.rank, last->callNo);
    if (end == kWaitCycle) {
      targets.push_back(kWaitCycle);
    } else if (end != c.rank) {
      targets.push_back(end);
    } else {
      for (int rank = 0; rank < r_.nRanks; ++rank) {  // no known peer: whoever has not reached this call
        if (latestNo(rank) < last->callNo) targets.push_back(rank);
      }
    }
    if (targets.empty()) continue;
    groups[{last->callNo, targets}].push_back(c.rank);
    callOf[last->callNo] = last;
  }
  std::set<int> stragglers;
  for (const auto& g : groups) {
    uint64_t no = g.first.first;
    const std::vector<int>& targets = g.first.second;
    bool one = g.second.size() == 1;
    std::string who = ranksPhrase(g.second) + (one ? " waits" : " wait");
    std::string call = formatText("%s #%" PRIu64, recordedKindName(callOf[no]->kind), no);
    if (targets[0] == kWaitCycle) {
      r_.findings.push_back(who + " in " + call + " in a cycle of waits: each waits for another of them");
      continue;
    }
    std::vector<std::string> parts{formatText("%s in %s for %s", who.c_str(), call.c_str(), ranksPhrase(targets).c_str())};
    for (int t : targets) parts.push_back(describeTarget(t, no));
    stragglers.insert(targets.begin(), targets.end());
    r_.findings.push_back(join(parts, "; "));
  }
  r_.stragglers.assign(stragglers.begin(), stragglers.end());
}

std::string CommDiagnoser::quietSummary() const {
  uint64_t lowest = UINT64_MAX, highest = 0;
  bool anyInCall = false;
  for (const RecorderCopy& c : r_.ranks) {
    const CopiedCall* last = latestCall(c);
    lowest = std::min(lowest, last ? last->callNo : 0);
    highest = std::max(highest, last ? last->callNo : 0);
    anyInCall = anyInCall || (last && inCall(*last));
  }
  if (highest == 0) return "no rank has made a call on this communicator yet";
  if (anyInCall) return formatText("no rank waits for another (latest calls #%" PRIu64 "..#%" PRIu64 ")", lowest, highest);
  if (lowest == highest) {
    return formatText("no rank is in a call: every rank found finished call #%" PRIu64, highest);
  }
  return formatText("no rank is in a call (latest calls #%" PRIu64 "..#%" PRIu64 ")", lowest, highest);
}

// The copies grouped by communicator, one per rank (the newest where a rank has two), with a
// finding for each duplicate and disagreement about the communicator's size.
std::vector<CommReport> groupByComm(const RecorderScan& scan) {
  std::map<uint64_t, CommReport> comms;
  for (const RecorderCopy& c : scan.copies) {
    CommReport& r = comms[c.commHash];
    r.commHash = c.commHash;
    if (r.frontEnd.empty()) r.frontEnd = c.frontEnd;
    if (r.nRanks != 0 && r.nRanks != c.nRanks) {
      r.findings.push_back(formatText("the recorders disagree on the communicator's size: %s says %d ranks, others %d",
                                  c.source.c_str(), c.nRanks, r.nRanks));
    }
    r.nRanks = std::max(r.nRanks, c.nRanks);
    auto same = std::find_if(r.ranks.begin(), r.ranks.end(), [&](const RecorderCopy& o) { return o.rank == c.rank; });
    if (same == r.ranks.end()) {
      r.ranks.push_back(c);
      continue;
    }
    bool newer = c.updatedNs > same->updatedNs;
    r.findings.push_back(formatText("rank %d has two recorders, %s and %s: using the newer, %s", c.rank,
                                same->source.c_str(), c.source.c_str(), newer ? c.source.c_str() : same->source.c_str()));
    if (newer) *same = c;
  }
  std::vector<CommReport> out;
  for (auto& entry : comms) {
    std::sort(entry.second.ranks.begin(), entry.second.ranks.end(),
              [](const RecorderCopy& a, const RecorderCopy& b) { return a.rank < b.rank; });
    out.push_back(std::move(entry.second));
  }
  return out;
}

// Bytes moved between two looks: the calls after the old look's latest, and what that one moved
// since.
uint64_t bytesSince(const RecorderCopy& before, const RecorderCopy& now) {
  const CopiedCall* old = latestCall(before);
  const uint64_t oldNo = old ? old->callNo : 0;
  uint64_t bytes = 0;
  for (const CopiedCall& e : now.entries) {
    if (e.callNo <= oldNo) continue;
    const uint64_t from = std::max(e.firstCallNo, oldNo + 1);
    bytes += (e.callNo - from) * e.callBytes + e.bytesDone;  // the earlier calls of the run completed
  }
  const CopiedCall* same = old ? runHolding(now, oldNo) : nullptr;
  if (same) {
    const uint64_t nowDone = same->callNo > oldNo ? same->callBytes : same->bytesDone;
    if (nowDone > old->bytesDone) bytes += nowDone - old->bytesDone;
  }
  return bytes;
}

}  // namespace

Diagnosis diagnose(const RecorderScan& scan, int64_t nowNs) {
  Diagnosis d;
  d.problems = scan.problems;
  d.comms = groupByComm(scan);
  for (CommReport& r : d.comms) CommDiagnoser(&r, nowNs).run();
  return d;
}

std::vector<std::string> progressSince(const Diagnosis& before, const Diagnosis& now, int64_t elapsedNs) {
  std::vector<std::string> lines;
  for (const CommReport& r : now.comms) {
    auto old = std::find_if(before.comms.begin(), before.comms.end(),
                            [&](const CommReport& o) { return o.commHash == r.commHash; });
    if (old == before.comms.end()) continue;
    for (const RecorderCopy& c : r.ranks) {
      auto prev = std::find_if(old->ranks.begin(), old->ranks.end(), [&](const RecorderCopy& o) { return o.rank == c.rank; });
      if (prev == old->ranks.end()) continue;
      uint64_t calls = c.calls >= prev->calls ? c.calls - prev->calls : 0;
      uint64_t bytes = bytesSince(*prev, c);
      std::string what = calls == 0 && bytes == 0
                             ? std::string("no progress")
                             : formatText("%" PRIu64 " call%s, %s", calls, calls == 1 ? "" : "s", formatBytes(bytes).c_str());
      lines.push_back(formatText("communicator %016" PRIx64 " rank %d: %s in %s", r.commHash, c.rank, what.c_str(),
                             formatAge(elapsedNs).c_str()));
    }
  }
  return lines;
}

std::string describeCall(const CopiedCall& call) {
  std::string signature = describeSignature(call);
  size_t paren = signature.find(" (");
  std::string head = formatText("%s #%" PRIu64, signature.substr(0, paren).c_str(), call.callNo);
  if (paren == std::string::npos) return head;
  std::string facts = signature.substr(paren + 2, signature.size() - paren - 3);
  if (call.algo >= 0 && call.algo < coll::kNumAlgos) facts += std::string(", ") + coll::algoName(static_cast<coll::Algo>(call.algo));
  return head + " (" + facts + ")";
}

std::string ranksPhrase(const std::vector<int>& ranks) {
  std::vector<int> sorted(ranks);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  return (sorted.size() == 1 ? "rank " : "ranks ") + rankList(sorted);
}

std::string formatAge(int64_t ns) {
  if (ns < 0) ns = 0;
  if (ns < 1000000000) return formatText("%" PRId64 " ms", ns / 1000000);
  return formatText("%.1f s", static_cast<double>(ns) / 1e9);
}

int64_t realtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace core
}  // namespace weft
