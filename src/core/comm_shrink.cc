// Communicator::shrink (weftCommShrink): a new communicator of the ranks that remain, agreed
// without the excluded ranks, which may be dead. The parent's hub (its rank 0) may be among
// them, so nothing goes through it: the lowest remaining rank makes the new id and talks to
// each remaining rank directly over the parent's bootstrap.
//
//   new rank 0 -> every other remaining rank: the new id and a hash of the excluded list
//   each remaining rank -> new rank 0:        whether its own list hashes the same
//   new rank 0 -> every other remaining rank: go, or which rank disagreed
// Then all join the new id. A rank whose list differs fails, and so does every other, at once
// rather than at a deadline.
#include <algorithm>
#include <cstring>
#include <string>

#include "base/log.h"
#include "base/os.h"
#include "core/bootstrap_tags.h"
#include "core/comm.h"

namespace weft {
namespace core {
namespace {


struct ShrinkOffer {
  weftUniqueId id;
  uint64_t listHash;
  int32_t nMembers;
  int32_t pad;
};

// Reply of a remaining rank, then rank 0's verdict: the rank that disagreed, or -1.
struct ShrinkVote {
  int32_t disagreeing;
  int32_t pad;
};

}  // namespace

Status Communicator::shrink(const std::vector<int>& excluded, const weftConfig_t* config, bool abortFirst,
                            std::unique_ptr<Communicator>* out) {
  out->reset();
  if (abortFirst) abortOperations();
  std::vector<int> members;
  for (int r = 0; r < nRanks_; ++r) {
    if (!std::binary_search(excluded.begin(), excluded.end(), r)) members.push_back(r);
  }
  const int newRank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  const uint64_t listHash = hashBytes(excluded.data(), excluded.size() * sizeof(int)) ^ excluded.size();
  const int tag = bootstrap_tags::sequenceTag(bootstrap_tags::kShrinkBase, shrinks_++);
  const Deadline deadline = Deadline::afterSeconds(settings_.timeoutS);
  const int nMembers = static_cast<int>(members.size());
  auto disagreement = [&](int who) {
    return WEFT_ERROR(
        weftInvalidArgument,
        "rank %d: weftCommShrink: rank %d excluded other ranks than rank %d did (%zu excluded here); every "
        "remaining rank must pass the same excludeRanks",
        rank_, who, who == members[0] ? rank_ : members[0], excluded.size());
  };

  weftUniqueId id;
  if (newRank == 0) {
    WEFT_TRY(createUniqueId(&id));
    ShrinkOffer offer{};
    offer.id = id;
    offer.listHash = listHash;
    offer.nMembers = nMembers;
    for (int i = 1; i < nMembers; ++i) WEFT_TRY(bootstrap_->send(members[i], tag, &offer, sizeof(offer), deadline));
    ShrinkVote verdict{-1, 0};
    for (int i = 1; i < nMembers; ++i) {
      ShrinkVote vote{};
      WEFT_TRY(bootstrap_->recv(members[i], tag, &vote, sizeof(vote), deadline));
      if (vote.disagreeing >= 0 && verdict.disagreeing < 0) verdict.disagreeing = vote.disagreeing;
    }
    for (int i = 1; i < nMembers; ++i) WEFT_TRY(bootstrap_->send(members[i], tag, &verdict, sizeof(verdict), deadline));
    if (verdict.disagreeing >= 0) {
      bool stopped = false;
      (void)stopRoot(id, &stopped);
      return disagreement(verdict.disagreeing);
    }
  } else {
    ShrinkOffer offer{};
    WEFT_TRY(bootstrap_->recv(members[0], tag, &offer, sizeof(offer), deadline));
    const bool same = offer.listHash == listHash && offer.nMembers == nMembers;
    ShrinkVote vote{same ? -1 : rank_, 0};
    WEFT_TRY(bootstrap_->send(members[0], tag, &vote, sizeof(vote), deadline));
    ShrinkVote verdict{};
    WEFT_TRY(bootstrap_->recv(members[0], tag, &verdict, sizeof(verdict), deadline));
    if (!same) return disagreement(members[0]);
    if (verdict.disagreeing >= 0) return disagreement(verdict.disagreeing);
    id = offer.id;
  }
  WEFT_LOG(kInfo, kInit, "rank %d: shrinking %d ranks to %d (this rank becomes rank %d)%s", rank_, nRanks_, nMembers,
           newRank, abortFirst ? " after aborting the parent's operations" : "");
  HostRankScope host(device() < 0);  // a host rank's part stays on host memory
  WEFT_TRY(Communicator::create(id, nMembers, newRank, config, out));
  setLogRank(rank_);
  return Status::ok();
}

}  // namespace core
}  // namespace weft
