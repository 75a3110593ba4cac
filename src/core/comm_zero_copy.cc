// Zero-copy collectives on registered host buffers (issue 16 item 3): when every rank's buffers
// of a call lie in ranges registered with weftCommRegister, and every rank can address every
// other's (threads of one process; or weftMemAlloc's shared memory, which the processes of a
// host map: host_memory.h), each rank does its share of the call straight from the inputs into
// the outputs (collectives/direct_host.h) instead of passing slices through the FIFOs.
//
// The ranks meet twice over the FIFOs, in two small all-gathers stamped from the call (so the
// call checks still catch ranks that disagree): the first carries each rank's offer (is it
// registered, and where its buffers are), which every rank reads alike, so all of them take the
// same path; it also tells each rank that all the others have entered the call (their inputs are
// ready and their outputs free). The second tells each that all have finished with its buffers.
// Which calls hold the handshake at all is a function of the call and of settings agreed at
// init (WEFT_ZERO_COPY, WEFT_ZERO_COPY_MIN_BYTES) and of the handshakes before (which all ranks
// saw alike), never of this rank's registrations, so no rank waits for a handshake its peers
// skip. A call whose offers do not all qualify copies through the FIFOs, and the next 1, 2, 4 ..
// 64 candidates copy without asking (a communicator that never registers pays for a handshake
// on one large call in 64).
#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/log.h"
#include "base/params.h"
#include "collectives/direct_host.h"
#include "core/comm.h"
#include "core/host_memory.h"

namespace weft {
namespace core {

// Where one buffer of a rank lies: its address (for ranks of the same process) and its shared
// segment (owner 0: not shared memory).
struct BufferOffer {
  uint64_t address = 0;
  SharedSpan span;
};

struct ZeroCopyOffer {
  uint64_t registered = 0;  // 1: both buffers of the call lie in registered ranges (or staged)
  uint64_t staged = 0;      // 1: the peers' blocks are in this rank's staging area (send and recv)
  BufferOffer send;
  BufferOffer recv;
};

namespace {

// The handshake's messages differ from the call's data messages (a rank that took the FIFOs
// while its peers hold the handshake fails as a call mismatch, not on misread bytes).
constexpr uint64_t kHandshakeStampBits = 0x5a17c0deull;

std::atomic<uint64_t> zeroCopyCalls{0};

BufferOffer offerOf(const void* p, size_t bytes) {
  BufferOffer o;
  o.address = reinterpret_cast<uint64_t>(p);
  if (!findSharedHost(p, bytes, &o.span)) o.span = SharedSpan();
  return o;
}

// Whether rank `r` of the call reads its send buffer (a broadcast's only at the root).
bool readsSend(const CollCall& call, int r) { return call.kind != coll::CollKind::kBroadcast || r == call.root; }

}  // namespace

uint64_t Communicator::zeroCopyCallsRun() { return zeroCopyCalls.load(); }

void Communicator::noteRegistration(const void* buff, size_t bytes, bool add) {
  std::lock_guard<std::mutex> lock(registeredMutex_);
  const auto range = std::make_pair(static_cast<const char*>(buff), bytes);
  if (add) {
    registered_.push_back(range);
    return;
  }
  for (auto it = registered_.begin(); it != registered_.end(); ++it) {
    if (*it == range) {
      registered_.erase(it);
      return;
    }
  }
}

bool Communicator::isRegistered(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  std::lock_guard<std::mutex> lock(registeredMutex_);
  for (const auto& [start, size] : registered_) {
    if (c >= start && c - start <= static_cast<ptrdiff_t>(size) && bytes <= size - static_cast<size_t>(c - start)) {
      return true;
    }
  }
  return false;
}

bool Communicator::zeroCopyCandidate(const CollCall& call, const coll::ScheduleParams& params, size_t elemSize,
                                     bool preMul) {
  if (settings_.zeroCopyMinBytes <= 0 || nRanks_ < 2 || preMul || !coll::directSupported(call.kind)) return false;
  if (zeroCopyReach_ < 0) {
    const PeerInfo& self = peers()[rank_];
    zeroCopyReach_ = 1;
    for (const auto& peer : peers()) {
      if (peer.hostHash != self.hostHash) zeroCopyReach_ = 0;
      if (zeroCopyReach_ == 1 && peer.processHash != self.processHash) zeroCopyReach_ = 2;
      if (zeroCopyReach_ == 0) break;
    }
  }
  const int64_t elems = std::max(coll::sendBufferCount(params), coll::recvBufferCount(params));
  if (zeroCopyReach_ == 0 || elems * static_cast<int64_t>(elemSize) < settings_.zeroCopyMinBytes) return false;
  // A communicator whose buffers are not registered pays for a handshake once in a while only.
  if (zeroCopySkip_ > 0) {
    --zeroCopySkip_;
    return false;
  }
  return true;
}

Status Communicator::gatherOffers(const CollCall& call, const void* mine, void* all, size_t bytes, uint64_t stamp) {
  coll::ScheduleParams p;
  p.kind = coll::CollKind::kAllGather;
  p.algo = coll::Algo::kRing;
  p.nRanks = nRanks_;
  p.count = static_cast<int64_t>(bytes);
  p.nChannels = 1;
  CachedOp* cached = cachedOp(p, 1);
  coll::ExecPlan& plan = cached->plan;
  bindBuffers(&plan, mine, all, scratch_.data(), nullptr, nullptr, 0);
  coll::stampPlan(&plan, stamp ^ kHandshakeStampBits);
  plan.checks.stamps = checkCalls_;
  plan.checks.findStraysWhenStalled = false;  // peers done with it send the call's data meanwhile
  plan.checks.waitForConsumers = false;
  plan.sendBufferStable = false;
  plan.peersReadReferences = false;
  cached->lastCall = call;
  cached->lastSeq = seq_;
  cached->algoName = "zero-copy handshake";
  if (!plan.what) plan.what = [this, cached] { return describe(cached->lastCall, cached->algoName, cached->lastSeq); };
  // Its first call runs the call-check tokens first, as a collective's does (host_calls.cc, runCollective).
  return runCachedPlan(cached, checkCalls_ && nRanks_ > 1 && hostRanksOnOneHost_);
}

Status Communicator::runZeroCopy(const CollCall& call, const coll::ScheduleParams& params, size_t elemSize,
                                 const ZeroCopyOps& ops, uint64_t stamp, bool* done) {
  *done = false;
  const size_t sendBytes = static_cast<size_t>(coll::sendBufferCount(params)) * elemSize;
  const size_t recvBytes = static_cast<size_t>(coll::recvBufferCount(params)) * elemSize;
  ZeroCopyOffer mine;
  mine.registered = (!readsSend(call, rank_) || isRegistered(call.sendbuff, sendBytes)) &&
                    isRegistered(call.recvbuff, recvBytes);
  mine.send = offerOf(call.sendbuff, sendBytes);
  mine.recv = offerOf(call.recvbuff, recvBytes);
  if (!qualifies(call, mine, rank_) && call.kind == coll::CollKind::kAllReduce && params::ZeroCopyStage()) {
    stageInput(call, elemSize, recvBytes, &mine);
  }
  std::vector<ZeroCopyOffer> offers(static_cast<size_t>(nRanks_));
  WEFT_TRY(gatherOffers(call, &mine, offers.data(), sizeof(ZeroCopyOffer), stamp));
  // Every rank decides from the same offers.
  for (int r = 0; r < nRanks_; ++r) {
    if (qualifies(call, offers[static_cast<size_t>(r)], r)) continue;
    WEFT_LOG(kTrace, kColl, "rank %d: %s #%llu copies through the FIFOs: rank %d's buffers are neither registered "
             "(shared memory from weftMemAlloc, across processes) nor staged", rank_, coll::collName(call.kind),
             static_cast<unsigned long long>(collSeq_), r);
    zeroCopyGap_ = std::min(kZeroCopyMaxSkip, std::max(1, 2 * zeroCopyGap_));
    zeroCopySkip_ = zeroCopyGap_;
    return Status::ok();
  }
  zeroCopyGap_ = 0;
  coll::DirectCall direct;
  direct.kind = call.kind;
  direct.rank = rank_;
  direct.nRanks = nRanks_;
  direct.root = call.root;
  direct.count = static_cast<int64_t>(call.count);
  direct.elemSize = elemSize;
  direct.reduce = ops.reduce;
  direct.reduceCopy = ops.reduceCopy;
  direct.avgDivisor = ops.divisor;
  direct.streamBytes = params::StreamStoreBytes();
  WEFT_TRY(addressBuffers(call, offers, sendBytes, recvBytes, &direct));
  coll::runDirect(direct);
  // Nobody returns (and lets its caller touch its buffers) before every rank is done with them.
  WEFT_TRY(gatherOffers(call, &mine, offers.data(), sizeof(ZeroCopyOffer), stamp));
  if (mine.staged != 0) {
    coll::copyOtherBlocks(zeroCopyStage_->data(), static_cast<char*>(call.recvbuff), direct.count, elemSize, nRanks_,
                          rank_);
  }
  zeroCopyCalls.fetch_add(1, std::memory_order_relaxed);
  // What tests and users read (WEFT_DEBUG=TRACE WEFT_DEBUG_SUBSYS=COLL) to see the path taken.
  WEFT_LOG(kTrace, kColl, "rank %d: %s #%llu ran zero-copy (%zu bytes)", rank_, coll::collName(call.kind),
           static_cast<unsigned long long>(collSeq_), std::max(sendBytes, recvBytes));
  *done = true;
  return Status::ok();
}

bool Communicator::qualifies(const CollCall& call, const ZeroCopyOffer& o, int r) const {
  const bool shared = o.recv.span.owner != 0 && (!readsSend(call, r) || o.send.span.owner != 0);
  return o.registered != 0 && (zeroCopyReach_ == 1 || shared);
}

void Communicator::stageInput(const CollCall& call, size_t elemSize, size_t bytes, ZeroCopyOffer* mine) {
  if (!zeroCopyStage_) zeroCopyStage_ = std::make_unique<SharedHostBuffer>();
  // Grown in powers of two: peers keep every segment they mapped until their process ends.
  size_t want = 1;
  while (want < bytes) want <<= 1;
  Status s = zeroCopyStage_->reserve(want);
  if (!s.isOk()) {
    WEFT_LOG(kInfo, kColl, "rank %d: no shared memory to stage a zero-copy all-reduce (%s); it copies", rank_,
             s.message().c_str());
    return;
  }
  char* stage = zeroCopyStage_->data();
  coll::copyOtherBlocks(static_cast<const char*>(call.sendbuff), stage, static_cast<int64_t>(call.count), elemSize,
                        nRanks_, rank_);
  mine->registered = 1;
  mine->staged = 1;
  mine->send = offerOf(stage, bytes);
  mine->recv = mine->send;
}

// This rank's own buffers as they are (it reads and writes them itself); the peers' as offered.
Status Communicator::addressBuffers(const CollCall& call, const std::vector<ZeroCopyOffer>& offers, size_t sendBytes,
                                    size_t recvBytes, coll::DirectCall* direct) {
  direct->send.resize(static_cast<size_t>(nRanks_));
  direct->recv.resize(static_cast<size_t>(nRanks_));
  for (int r = 0; r < nRanks_; ++r) {
    const ZeroCopyOffer& o = offers[static_cast<size_t>(r)];
    const bool here = peers()[r].processHash == peers()[rank_].processHash;
    char* send = reinterpret_cast<char*>(o.send.address);
    char* recv = reinterpret_cast<char*>(o.recv.address);
    if (r == rank_) {
      send = const_cast<char*>(static_cast<const char*>(call.sendbuff));
      recv = static_cast<char*>(call.recvbuff);
    } else if (!here) {
      if (readsSend(call, r)) WEFT_TRY(mapPeerBuffer(r, o.send.span, sendBytes, &send));
      WEFT_TRY(mapPeerBuffer(r, o.recv.span, recvBytes, &recv));
    }
    direct->send[static_cast<size_t>(r)] = send;
    direct->recv[static_cast<size_t>(r)] = recv;
  }
  return Status::ok();
}

Status Communicator::mapPeerBuffer(int peer, const SharedSpan& span, size_t bytes, char** out) {
  if (span.bytes < bytes) {
    return WEFT_ERROR(weftInternalError, "rank %d: rank %d offered %llu bytes of shared memory for a %zu-byte buffer",
                      rank_, peer, static_cast<unsigned long long>(span.bytes), bytes);
  }
  Status s = mapSharedHost(span, out);
  if (s.isOk()) return s;
  return WEFT_ERROR(s.code(), "rank %d: mapping rank %d's registered buffer for a zero-copy collective failed: %s; "
                    "WEFT_ZERO_COPY=0 copies through the FIFOs instead", rank_, peer, s.message().c_str());
}

}  // namespace core
}  // namespace weft
