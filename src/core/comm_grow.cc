// Communicator::makeGrowId and Communicator::grow (weftCommGetUniqueId, weftCommGrow): a new
// communicator of this one's ranks, keeping their numbers, and new ranks after them. Rank 0 makes
// the id (its root listener runs in rank 0's process) and hands it to the new ranks itself; over
// this communicator's bootstrap it tells the other existing ranks:
//
//   rank 0 -> every other rank: the id and nRanks
//   each other rank -> rank 0:  whether its nRanks is the same
//   rank 0 -> every other rank: go, or which rank disagreed
// Then all of them, and the new ranks, join the id. Ranks that disagree fail at once instead of
// at a deadline.
#include <cstring>

#include "base/log.h"
#include "core/bootstrap_tags.h"
#include "core/comm.h"

namespace weft {
namespace core {
namespace {

struct GrowOffer {
  weftUniqueId id;
  int32_t nRanks;
  int32_t pad;
};

// A rank's reply, then rank 0's verdict: the rank that disagreed, or -1.
struct GrowVote {
  int32_t disagreeing;
  int32_t pad;
};

}  // namespace

Status Communicator::makeGrowId(weftUniqueId* id) {
  if (growIdPending_) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: weftCommGetUniqueId: the id made earlier on this communicator was not consumed by "
                      "weftCommGrow yet; one id is pending at a time: grow with that one first",
                      rank_);
  }
  WEFT_TRY(createUniqueId(&growId_));
  growIdPending_ = true;
  *id = growId_;
  return Status::ok();
}

Status Communicator::grow(int nRanks, const weftUniqueId* id, const weftConfig_t* config,
                          std::unique_ptr<Communicator>* out) {
  out->reset();
  if (rank_ == 0 && (!growIdPending_ || std::memcmp(id, &growId_, sizeof(growId_)) != 0)) {
    return WEFT_ERROR(weftInvalidArgument,
                      "rank 0: weftCommGrow: uniqueId is not the id weftCommGetUniqueId made on this communicator, or "
                      "that id was consumed by an earlier grow; call weftCommGetUniqueId for a new one");
  }
  const int tag = bootstrap_tags::sequenceTag(bootstrap_tags::kGrowBase, grows_++);
  const Deadline deadline = Deadline::afterSeconds(settings_.timeoutS);
  auto disagreement = [&](int who, int theirs) {
    return WEFT_ERROR(weftInvalidArgument,
                      "rank %d: weftCommGrow: rank %d asked for %d ranks, rank %d for %d; every rank passes the same "
                      "nRanks",
                      rank_, who, theirs, rank_, nRanks);
  };
  weftUniqueId joined;
  if (rank_ == 0) {
    // The id is spent whatever happens next: a failed grow leaves no id pending.
    growIdPending_ = false;
    GrowOffer offer{};
    offer.id = *id;
    offer.nRanks = nRanks;
    Status s = Status::ok();
    for (int r = 1; r < nRanks_ && s.isOk(); ++r) s = bootstrap_->send(r, tag, &offer, sizeof(offer), deadline);
    GrowVote verdict{-1, 0};
    for (int r = 1; r < nRanks_ && s.isOk(); ++r) {
      GrowVote vote{};
      s = bootstrap_->recv(r, tag, &vote, sizeof(vote), deadline);
      if (s.isOk() && vote.disagreeing >= 0 && verdict.disagreeing < 0) verdict = vote;
    }
    for (int r = 1; r < nRanks_ && s.isOk(); ++r) s = bootstrap_->send(r, tag, &verdict, sizeof(verdict), deadline);
    if (s.isOk() && verdict.disagreeing >= 0) s = disagreement(verdict.disagreeing, verdict.pad);
    if (!s.isOk()) {
      bool stopped = false;
      (void)stopRoot(*id, &stopped);  // the new ranks waiting at the root fail now
      return s;
    }
    joined = *id;
  } else {
    GrowOffer offer{};
    WEFT_TRY(bootstrap_->recv(0, tag, &offer, sizeof(offer), deadline));
    const bool same = offer.nRanks == nRanks;
    GrowVote vote{same ? -1 : rank_, nRanks};
    WEFT_TRY(bootstrap_->send(0, tag, &vote, sizeof(vote), deadline));
    GrowVote verdict{};
    WEFT_TRY(bootstrap_->recv(0, tag, &verdict, sizeof(verdict), deadline));
    if (!same) return disagreement(0, offer.nRanks);
    if (verdict.disagreeing >= 0) return disagreement(verdict.disagreeing, verdict.pad);
    joined = offer.id;
  }
  WEFT_LOG(kInfo, kInit, "rank %d: growing %d ranks to %d", rank_, nRanks_, nRanks);
  HostRankScope host(device() < 0);  // a host rank's part stays on host memory
  WEFT_TRY(Communicator::create(joined, nRanks, rank_, config, out));
  setLogRank(rank_);
  return Status::ok();
}

}  // namespace core
}  // namespace weft
