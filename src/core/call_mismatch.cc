// Call fingerprints in the communicator: the stamp of every call (collectives/call_stamp.h),
// and the sentence every rank returns when the ranks' calls disagree.
//
// The wire carries only a hash, so a rank that fails because of a mismatch (it saw a message of
// another call, or a peer told it so through its abort) exchanges what it called (CallRecord)
// with the others through the bootstrap, and every rank builds the same sentence from all the
// records: the lowest rank whose call differs from the majority's, against the lowest rank with
// the majority's call.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/log.h"
#include "collectives/call_stamp.h"
#include "collectives/datatypes.h"
#include "core/comm.h"

namespace weft {
namespace core {
namespace {

// How long the failing ranks wait for each other's records: they fail within milliseconds of
// each other, and a rank that does not come (gone, or stuck elsewhere) must not hold up the
// others' errors for long.
constexpr double kExchangeSeconds = 0.5;

constexpr int kSendRecvKind = static_cast<int>(coll::CollKind::kSendRecv);

bool recordValid(const CallRecord& r, int rank) {
  return r.magic == kCallRecordMagic && r.rank == rank && r.kind >= 0 && r.kind < coll::kNumCollKinds &&
         (r.kind == kSendRecvKind || (coll::isValidDataType(r.type) && r.algo >= 0 && r.algo < 8));
}

bool sameCall(const CallRecord& a, const CallRecord& b) {
  return a.kind == b.kind && a.seq == b.seq && a.count == b.count && a.type == b.type && a.op == b.op &&
         a.root == b.root && a.algo == b.algo;
}

// "allreduce #12 (count 1000, float, sum)"; the algorithm only when `withAlgo`.
std::string describeCall(const CallRecord& r, bool withAlgo) {
  char text[192];
  if (r.kind == kSendRecvKind) {
    std::snprintf(text, sizeof(text), "a send/recv group #%" PRIu64 " (%" PRIu64 " operations)", r.seq, r.count);
    return text;
  }
  const auto kind = static_cast<coll::CollKind>(r.kind);
  std::string extra;
  if (coll::collReduces(kind)) {
    extra += ", ";
    extra += coll::isValidRedOp(r.op) ? coll::redOpName(static_cast<weftRedOp_t>(r.op))
                                      : "premul-sum op " + std::to_string(r.op);
  }
  if (coll::collRooted(kind)) extra += ", root " + std::to_string(r.root);
  if (withAlgo) extra += std::string(", ") + coll::algoName(static_cast<coll::Algo>(r.algo));
  std::snprintf(text, sizeof(text), "%s #%" PRIu64 " (count %" PRIu64 ", %s%s)", coll::collName(kind), r.seq, r.count,
                coll::dataTypeName(static_cast<weftDataType_t>(r.type)), extra.c_str());
  return text;
}

// "rank 1 called allreduce #12 (...) while rank 0 called allreduce #12 (...)", from every
// rank's record (invalid ones: ranks that did not answer); empty when no two valid records
// differ.
std::string mismatchSentence(const std::vector<CallRecord>& all, const std::vector<bool>& valid) {
  // Each distinct call with its ranks, in order of the lowest rank that made it.
  std::vector<std::vector<int>> groups;
  for (size_t r = 0; r < all.size(); ++r) {
    if (!valid[r]) continue;
    bool placed = false;
    for (auto& g : groups) {
      if (sameCall(all[static_cast<size_t>(g[0])], all[r])) {
        g.push_back(static_cast<int>(r));
        placed = true;
        break;
      }
    }
    if (!placed) groups.push_back({static_cast<int>(r)});
  }
  if (groups.size() < 2) return "";
  // The majority: the most ranks; a tie goes to the call of the lowest rank.
  size_t major = 0;
  for (size_t g = 1; g < groups.size(); ++g) {
    if (groups[g].size() > groups[major].size()) major = g;
  }
  int odd = -1;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (g != major && (odd < 0 || groups[g][0] < odd)) odd = groups[g][0];
  }
  const CallRecord& a = all[static_cast<size_t>(odd)];
  const CallRecord& b = all[static_cast<size_t>(groups[major][0])];
  // The algorithm is named only when it is all that differs (the other fields pick it).
  CallRecord sameAlgo = a;
  sameAlgo.algo = b.algo;
  bool withAlgo = sameCall(sameAlgo, b);
  return "rank " + std::to_string(odd) + " called " + describeCall(a, withAlgo) + " while rank " +
         std::to_string(b.rank) + " called " + describeCall(b, withAlgo);
}

// The sentence from the records of the latest call any rank reports, when they alone disagree: a
// rank whose device work was aborted by its peers' failure, found when its next call starts,
// reports the earlier call it was in, which the others agreed on.
std::string latestMismatchSentence(const std::vector<CallRecord>& all, const std::vector<bool>& valid) {
  uint64_t latest = 0;
  for (size_t r = 0; r < all.size(); ++r) {
    if (valid[r] && all[r].kind != kSendRecvKind) latest = std::max(latest, all[r].seq);
  }
  std::vector<bool> latestOnly(valid);
  for (size_t r = 0; r < all.size(); ++r) {
    if (valid[r] && all[r].kind != kSendRecvKind && all[r].seq < latest) latestOnly[r] = false;
  }
  std::string sentence = latestOnly != valid ? mismatchSentence(all, latestOnly) : "";
  return sentence.empty() ? mismatchSentence(all, valid) : sentence;
}

}  // namespace

uint64_t Communicator::stampCollective(const CollCall& call, int algo) {
  const bool rooted = coll::collRooted(call.kind);
  current_.magic = kCallRecordMagic;
  current_.rank = rank_;
  current_.kind = static_cast<int32_t>(call.kind);
  current_.type = static_cast<int32_t>(call.type);
  current_.op = coll::collReduces(call.kind) ? static_cast<int32_t>(call.op) : 0;
  current_.root = rooted ? call.root : 0;
  current_.algo = algo;
  current_.seq = ++collSeq_;
  current_.count = call.count;
  if (liveness_) liveness_->publishCall(&current_, sizeof(current_));
  const uint64_t fields[6] = {static_cast<uint64_t>(current_.kind), call.count, static_cast<uint64_t>(current_.type),
                              static_cast<uint64_t>(current_.op), static_cast<uint64_t>(current_.root),
                              static_cast<uint64_t>(algo)};
  const bool repeated = std::memcmp(fields, fingerprintOf_, sizeof(fields)) == 0;
  // The collective before this one was the same call: the recorder's run of it goes on.
  if (recorder_ && !(repeated && recorder_->repeat(current_.kind, recordedStart()))) {
    RecordedCall rec;
    rec.kind = current_.kind, rec.type = current_.type, rec.op = current_.op;
    rec.root = rooted ? call.root : -1, rec.algo = algo, rec.count = call.count;
    rec.bytes = call.count * coll::dataTypeSize(call.type);
    recorder_->begin(rec, recordedStart());
  }
  if (!repeated) {
    fingerprint_ =
        coll::collectiveFingerprint(current_.kind, call.count, current_.type, current_.op, current_.root, algo);
    std::memcpy(fingerprintOf_, fields, sizeof(fields));
  }
  return coll::makeStamp(coll::collectiveSeq(collSeq_), fingerprint_);
}

void Communicator::recordP2pCall(size_t nCalls, uint64_t bytes) {
  current_ = CallRecord();
  current_.magic = kCallRecordMagic;
  current_.rank = rank_;
  current_.kind = static_cast<int32_t>(coll::CollKind::kSendRecv);
  current_.seq = seq_;
  current_.count = nCalls;
  if (liveness_) liveness_->publishCall(&current_, sizeof(current_));
  if (recorder_) {
    RecordedCall rec;
    rec.kind = current_.kind, rec.count = nCalls, rec.bytes = bytes;
    recorder_->begin(rec, recordedStart());
  }
}

uint64_t Communicator::stampP2p(int peer, bool send, size_t bytes) {
  std::vector<uint32_t>& seqs = send ? p2pSendSeq_ : p2pRecvSeq_;
  if (seqs.size() != static_cast<size_t>(nRanks_)) seqs.assign(static_cast<size_t>(nRanks_), 0);
  uint32_t seq = ++seqs[static_cast<size_t>(peer)];
  return coll::makeStamp(seq | coll::kP2pSeqBit, coll::p2pFingerprint(bytes));
}

Status Communicator::explainCallMismatch(Status local) {
  std::vector<CallRecord> all(static_cast<size_t>(nRanks_));
  Status exchanged =
      bootstrap_->allGather(&current_, all.data(), sizeof(CallRecord), Deadline::afterSeconds(kExchangeSeconds));
  std::vector<bool> valid(all.size(), false);
  if (exchanged.isOk()) {
    for (size_t r = 0; r < all.size(); ++r) valid[r] = recordValid(all[r], static_cast<int>(r));
  } else {
    WEFT_LOG(kWarn, kInit, "rank %d: could not exchange the ranks' calls to name the mismatch: %s", rank_,
             exchanged.message().c_str());
  }
  valid[static_cast<size_t>(rank_)] = true;
  all[static_cast<size_t>(rank_)] = current_;
  // A rank that did not answer in time (it looks for its device error later, or is busy) has
  // published its latest call when it is on this host: its call is known all the same, so this
  // rank's sentence is the one that rank builds when it comes.
  for (size_t r = 0; r < all.size(); ++r) {
    if (valid[r] || !liveness_ || !liveness_->publishedCall(static_cast<int>(r), &all[r], sizeof(CallRecord))) continue;
    valid[r] = recordValid(all[r], static_cast<int>(r));
  }
  std::string sentence = latestMismatchSentence(all, valid);
  if (sentence.empty()) {
    // Only this rank's own call is known: name it, and the peer's stamp when this rank saw it.
    int culprit = connections_.culprit();
    uint64_t theirs = connections_.mismatchTheirs();
    char peerText[128] = "";
    if (theirs != 0 && culprit >= 0) {
      std::snprintf(peerText, sizeof(peerText), " while rank %d sent a message of its call #%u with another fingerprint",
                    culprit, coll::stampSeq(theirs) & ~coll::kP2pSeqBit);
    } else if (culprit >= 0) {
      std::snprintf(peerText, sizeof(peerText), " while rank %d made another call", culprit);
    }
    sentence = "rank " + std::to_string(rank_) + " called " + describeCall(current_, false) + peerText;
  }
  WEFT_LOG(kInfo, kInit, "rank %d: call mismatch seen here as: %s", rank_, local.message().c_str());
  return Status::error(weftInvalidUsage, sentence +
                                             ". Every rank must make the same calls in the same order with the same "
                                             "count, type, op and root");
}

}  // namespace core
}  // namespace weft
