// Collective traits: what each kind of collective is, written once (../shared/DESIGN.md, "One
// table per fact"). Validation (src/core), the communicator's host and device paths, the
// schedule builders, the interpreter and weft-topo read kCollTraits through the functions below;
// a switch over CollKind elsewhere is a smell. Adding a collective means one row here, one or
// more rows in the algorithm table (schedule.cc) and their builders.
//
// Plain C++ (host only); constexpr so that tests and callers can check facts at compile time.
#ifndef WEFT_COLLECTIVES_COLL_TRAITS_H_
#define WEFT_COLLECTIVES_COLL_TRAITS_H_

#include <stddef.h>
#include <stdint.h>

namespace weft {
namespace coll {

enum class CollKind : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv,  // user point-to-point operations (built from the calls, not by an algorithm)
};

// The algorithms (their facts, builders and names: the algorithm table in schedule.cc).
enum class Algo : uint8_t {
  kRing,      // all-reduce, all-gather, reduce-scatter; broadcast/reduce as a chain from/to root
  kTree,      // all-reduce: double binary tree; broadcast/reduce: binary tree
  kPairwise,  // all-to-all: n-1 rounds of (send to r+k, receive from r-k)
  kRecursiveDoubling,  // all-reduce of small messages: log2(n) rounds of exchange with rank ^ 2^k
};

struct CollTraits {
  CollKind kind;
  const char* name;  // "allreduce", ...: messages, weft-topo --schedule
  // Takes a reduction op (validated, premul-sum applies, avg divides); the others ignore it.
  bool reduces;
  // Has a root: broadcast's send buffer and reduce's receive buffer matter on the root only.
  bool rooted;
  // Extents: the send / receive buffer holds count (the API's per-call count) times nRanks
  // elements when set, else count.
  bool sendTimesRanks;
  bool recvTimesRanks;
  // Only the root provides a send buffer (broadcast) / receives a result (reduce).
  bool sendOnRootOnly;
  bool recvOnRootOnly;
  // In place (send == recv), the blocks a rank receives would overwrite blocks it has yet to
  // send: the communicator sends from a copy (all-to-all). Its schedules have no in-place form.
  bool stagesInPlace;
  // Receivers store what they receive as it is (no reduction), so out of place a peer that can
  // read this process's memory may take the bytes from the send buffer itself (single copy).
  bool peersReadSendBuffer;
  // buildSchedule makes its schedules (sendrecv's come from the user's calls).
  bool scheduled;
  // The algorithm used when neither the tuner nor the caller picks one.
  Algo defaultAlgo;
};

constexpr CollTraits kCollTraits[] = {
    // kind, name, reduces, rooted, sendTimesRanks, recvTimesRanks, sendOnRootOnly, recvOnRootOnly,
    // stagesInPlace, peersReadSendBuffer, scheduled, defaultAlgo
    {CollKind::kAllReduce, "allreduce", true, false, false, false, false, false, false, false, true, Algo::kRing},
    {CollKind::kAllGather, "allgather", false, false, false, true, false, false, false, false, true, Algo::kRing},
    {CollKind::kReduceScatter, "reducescatter", true, false, true, false, false, false, false, false, true,
     Algo::kRing},
    {CollKind::kBroadcast, "broadcast", false, true, false, false, true, false, false, true, true, Algo::kRing},
    {CollKind::kReduce, "reduce", true, true, false, false, false, true, false, false, true, Algo::kRing},
    {CollKind::kAllToAll, "alltoall", false, false, true, true, false, false, true, true, true, Algo::kPairwise},
    {CollKind::kSendRecv, "sendrecv", false, false, false, false, false, false, false, false, false, Algo::kRing},
};

constexpr int kNumCollKinds = static_cast<int>(sizeof(kCollTraits) / sizeof(kCollTraits[0]));

constexpr bool collTableInEnumOrder() {
  for (int i = 0; i < kNumCollKinds; ++i) {
    if (static_cast<int>(kCollTraits[i].kind) != i) return false;
  }
  return true;
}
static_assert(collTableInEnumOrder(), "kCollTraits must list every CollKind once, in enum order");

constexpr const CollTraits& collTraits(CollKind kind) { return kCollTraits[static_cast<int>(kind)]; }
constexpr const char* collName(CollKind kind) {
  return static_cast<int>(kind) < kNumCollKinds ? kCollTraits[static_cast<int>(kind)].name : "unknown";
}
constexpr bool collReduces(CollKind kind) { return collTraits(kind).reduces; }
constexpr bool collRooted(CollKind kind) { return collTraits(kind).rooted; }

// Element counts of one rank's send and receive buffers for a call of `count` (the API's
// per-call count: all-gather's sendcount, reduce-scatter's recvcount, all-to-all's count per
// peer). The receive buffer of reduce is used on the root only; the send buffer of broadcast on
// the root only (sendOnRootOnly, recvOnRootOnly).
struct CollExtents {
  int64_t send = 0;
  int64_t recv = 0;
};
constexpr CollExtents collExtents(CollKind kind, int64_t count, int64_t nRanks) {
  return CollExtents{collTraits(kind).sendTimesRanks ? count * nRanks : count,
                     collTraits(kind).recvTimesRanks ? count * nRanks : count};
}
// The same in bytes.
constexpr CollExtents collExtentBytes(CollKind kind, int64_t count, size_t elemSize, int64_t nRanks) {
  return collExtents(kind, count * static_cast<int64_t>(elemSize), nRanks);
}
// The count must split into nRanks blocks of whole elements: one buffer holds count * nRanks.
constexpr bool collCountPerRank(CollKind kind) {
  return collTraits(kind).sendTimesRanks || collTraits(kind).recvTimesRanks;
}
// Whether `rank` passes a send / receive buffer the collective uses.
constexpr bool collUsesSend(CollKind kind, int rank, int root) { return !collTraits(kind).sendOnRootOnly || rank == root; }
constexpr bool collUsesRecv(CollKind kind, int rank, int root) { return !collTraits(kind).recvOnRootOnly || rank == root; }

// The in-place staging rule: the communicator (host and device paths) sends from a copy of the
// send buffer, of collExtents(...).send elements, when this holds.
constexpr bool collStagesSend(CollKind kind, const void* sendbuff, const void* recvbuff, int64_t count) {
  return collTraits(kind).stagesInPlace && sendbuff == recvbuff && count > 0;
}

// The kind named `name` (collName's spelling; case and '_' ignored), for a scheduled collective.
bool collFromName(const char* name, CollKind* out);
// "allreduce, allgather, ... or alltoall": the scheduled collectives, for messages.
const char* scheduledCollNames();

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_COLL_TRAITS_H_
