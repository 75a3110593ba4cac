// Collective traits and the algorithms' identities: what each kind of collective is, and which
// algorithms exist for which kinds, written once (../shared/DESIGN.md, "One table per fact").
// Validation (src/core), the communicator's host and device paths, the schedule builders, the
// interpreter, the cost model and tuner (topology) and weft-topo read kCollTraits and kAlgoTraits
// through the functions below; a switch over CollKind elsewhere is a smell. Adding a collective
// means one row here, one or more rows in the algorithm implementation table
// (collectives/schedule.cc: builder, lanes, scratch) and their builders.
//
// It lives in base, not collectives, because topology (which may use only base) prices and
// tunes the same collectives and algorithms: base is the one layer both can read. It is plain
// data with no dependencies, host only; constexpr so that callers can check facts at compile time.
#ifndef WEFT_BASE_COLL_TRAITS_H_
#define WEFT_BASE_COLL_TRAITS_H_

#include <stddef.h>
#include <stdint.h>

#include <string>

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
  // The root exchanges one block with every rank (weftGather / weftScatter): direct sends and
  // receives built by the communicator (comm_rooted.cc), not by an algorithm, but collectives
  // for the call checks: numbered with the others, stamped, and with the token lane.
  kGather,
  kScatter,
};

// The algorithms (their names and kinds: kAlgoTraits below; builders: collectives/schedule.cc).
enum class Algo : uint8_t {
  kRing,      // all-reduce, all-gather, reduce-scatter; broadcast/reduce as a chain from/to root
  kTree,      // all-reduce: double binary tree; broadcast/reduce: binary tree
  kPairwise,  // all-to-all: n-1 rounds of (send to r+k, receive from r-k)
  kRecursiveDoubling,  // all-reduce of small messages: log2(n) rounds of exchange with rank ^ 2^k
};

// nccl-tests' bus bandwidth factor (formats.md section 1), which is also the share of the data a
// ring moves per rank: 2(n-1)/n, (n-1)/n or 1.
enum class BusBw : uint8_t { kWhole, kShare, kTwoShares };

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
  BusBw busBw;
  // Every rank's result depends on every rank's input, so it reaches each rank only through
  // messages every hop of which checked the sender's call stamp: a rank that completes knows
  // that all ranks made its call, and need not wait for the peers to take its own messages
  // (collectives/host_executor.cc, waitForConsumers). Rooted collectives, whose senders may
  // finish without receiving, must wait.
  bool everyResultNeedsEveryRank;
};

constexpr CollTraits kCollTraits[] = {
    // kind, name, reduces, rooted, sendTimesRanks, recvTimesRanks, sendOnRootOnly, recvOnRootOnly,
    // stagesInPlace, peersReadSendBuffer, scheduled, defaultAlgo, busBw, everyResultNeedsEveryRank
    {CollKind::kAllReduce, "allreduce", true, false, false, false, false, false, false, false, true, Algo::kRing,
     BusBw::kTwoShares, true},
    {CollKind::kAllGather, "allgather", false, false, false, true, false, false, false, false, true, Algo::kRing,
     BusBw::kShare, true},
    {CollKind::kReduceScatter, "reducescatter", true, false, true, false, false, false, false, false, true,
     Algo::kRing, BusBw::kShare, true},
    {CollKind::kBroadcast, "broadcast", false, true, false, false, true, false, false, true, true, Algo::kRing,
     BusBw::kWhole, false},
    {CollKind::kReduce, "reduce", true, true, false, false, false, true, false, false, true, Algo::kRing,
     BusBw::kWhole, false},
    {CollKind::kAllToAll, "alltoall", false, false, true, true, false, false, true, true, true, Algo::kPairwise,
     BusBw::kShare, true},
    {CollKind::kSendRecv, "sendrecv", false, false, false, false, false, false, false, false, false, Algo::kRing,
     BusBw::kWhole, false},
    {CollKind::kGather, "gather", false, true, false, true, false, true, false, false, false, Algo::kRing,
     BusBw::kShare, false},
    {CollKind::kScatter, "scatter", false, true, true, false, true, false, false, false, false, Algo::kRing,
     BusBw::kShare, false},
};

constexpr int kNumCollKinds = static_cast<int>(sizeof(kCollTraits) / sizeof(kCollTraits[0]));

// Whether row i of a table is about enumerator i (key reads a row's enumerator): lookups index
// the tables by the enum.
template <typename Row, size_t N, typename Key>
constexpr bool inEnumOrder(const Row (&rows)[N], Key key) {
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(key(rows[i])) != i) return false;
  }
  return true;
}
static_assert(inEnumOrder(kCollTraits, [](const CollTraits& t) { return t.kind; }),
              "kCollTraits must list every CollKind once, in enum order");

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

// In place (weft.h), where the receive buffer starts relative to the send buffer, in elements:
// the same address, except that when one buffer holds nRanks blocks and the other one, the
// smaller is block `rank` of the larger (all-gather's send buffer, reduce-scatter's receive).
constexpr int64_t collInPlaceRecvOffset(CollKind kind, int rank, int64_t count) {
  const CollTraits& t = collTraits(kind);
  if (t.recvTimesRanks && !t.sendTimesRanks) return -rank * count;
  if (t.sendTimesRanks && !t.recvTimesRanks) return rank * count;
  return 0;
}

// Bus bandwidth = algorithm bandwidth times this (nccl-tests' convention).
constexpr double collBusBwFactor(CollKind kind, int nRanks) {
  if (nRanks <= 0) return 0.0;
  switch (collTraits(kind).busBw) {
    case BusBw::kTwoShares:
      return 2.0 * (nRanks - 1) / nRanks;
    case BusBw::kShare:
      return static_cast<double>(nRanks - 1) / nRanks;
    case BusBw::kWhole:
      break;
  }
  return 1.0;
}

// What element `index` of rank `rank`'s receive buffer holds when the collective is done: the
// reduction over every rank of element `sendIndex` of the send buffers (fromRank -1), or element
// `sendIndex` of rank fromRank's send buffer. For a rank that passes a receive buffer
// (collUsesRecv) and index < collExtents(...).recv; sendrecv has no such rule (valid false).
struct CollSource {
  bool valid = false;
  int fromRank = -1;
  int64_t sendIndex = 0;
};
constexpr CollSource collSourceOf(CollKind kind, int rank, int root, int64_t index, int64_t count) {
  const CollTraits& t = collTraits(kind);
  if (!t.scheduled || count <= 0) return CollSource{};
  // A send buffer of count * nRanks holds one block per destination rank: this rank's block.
  const int64_t blockBase = t.sendTimesRanks ? rank * count : 0;
  if (t.reduces) return CollSource{true, -1, blockBase + index};
  // Without a reduction each element comes from one rank: block i / count of a receive buffer
  // of count * nRanks came from rank i / count, a rooted collective's data from its root.
  if (t.recvTimesRanks) return CollSource{true, static_cast<int>(index / count), blockBase + index % count};
  return CollSource{true, root, blockBase + index};
}

// ---- The algorithms ------------------------------------------------------------------------

// A set of collective kinds, one bit per CollKind.
constexpr uint32_t collBit(CollKind kind) { return uint32_t{1} << static_cast<int>(kind); }

// Where the size rule (topology/tuner.h chooseRuleAlgo, for communicators no cost model prices)
// uses an algorithm, for any collective that has it: up to WEFT_DOUBLING_MAX_BYTES; up to
// WEFT_TREE_MAX_BYTES per host on more than two ranks; or where no other band holds (the
// collective's default, collTraits().defaultAlgo).
enum class RuleBand : uint8_t { kUpToDoublingMax, kUpToTreeMax, kDefault };

struct AlgoTraits {
  Algo algo;
  const char* name;  // "ring", ...: WEFT_ALGO, weft-topo --algo, messages
  uint32_t kinds;    // the collectives it has a schedule for (collBit of each)
  RuleBand ruleBand;
  // Its steps are one chain of dependencies through every rank in turn (a ring pass), so with
  // more ranks than CPUs each hop waits for the ranks to be switched in (the host cost model's
  // HostCostParams::sharedChainHopUs); trees and exchanges between pairs wait per message only.
  bool chainsEveryRank;
};

constexpr AlgoTraits kAlgoTraits[] = {
    {Algo::kRing, "ring",
     collBit(CollKind::kAllReduce) | collBit(CollKind::kAllGather) | collBit(CollKind::kReduceScatter) |
         collBit(CollKind::kBroadcast) | collBit(CollKind::kReduce),
     RuleBand::kDefault, true},
    {Algo::kTree, "tree", collBit(CollKind::kAllReduce) | collBit(CollKind::kBroadcast) | collBit(CollKind::kReduce),
     RuleBand::kUpToTreeMax, false},
    {Algo::kPairwise, "pairwise", collBit(CollKind::kAllToAll), RuleBand::kDefault, false},
    {Algo::kRecursiveDoubling, "doubling", collBit(CollKind::kAllReduce), RuleBand::kUpToDoublingMax, false},
};

constexpr int kNumAlgos = static_cast<int>(sizeof(kAlgoTraits) / sizeof(kAlgoTraits[0]));

static_assert(inEnumOrder(kAlgoTraits, [](const AlgoTraits& a) { return a.algo; }),
              "kAlgoTraits must list every Algo once, in enum order");

constexpr const char* algoName(Algo algo) {
  return static_cast<int>(algo) < kNumAlgos ? kAlgoTraits[static_cast<int>(algo)].name : "unknown";
}
// Whether the algorithm table has a schedule of `algo` for `kind`.
constexpr bool algoSupported(CollKind kind, Algo algo) {
  return static_cast<int>(algo) < kNumAlgos && (kAlgoTraits[static_cast<int>(algo)].kinds & collBit(kind)) != 0;
}

constexpr bool everyScheduledKindHasItsDefault() {
  for (const CollTraits& t : kCollTraits) {
    if (t.scheduled != algoSupported(t.kind, t.defaultAlgo)) return false;
  }
  return true;
}
static_assert(everyScheduledKindHasItsDefault(),
              "every scheduled collective needs its default algorithm, and only those have one");

constexpr const AlgoTraits& algoTraits(Algo algo) { return kAlgoTraits[static_cast<int>(algo)]; }

// The algorithm named `name` (algoName's spelling, any case).
bool algoFromName(const char* name, Algo* out);
// "ring, tree, pairwise or doubling": every algorithm's name, for messages.
const char* algorithmNames();
// "ring, tree or doubling": the algorithms that `kind` has.
std::string algorithmNamesFor(CollKind kind);
// "allreduce: ring, tree, doubling; allgather: ring; ...": what exists, for messages.
std::string supportedAlgorithms();

// The kind named `name` (collName's spelling; case and '_' ignored), for a scheduled collective.
bool collFromName(const char* name, CollKind* out);
// "allreduce, allgather, ... or alltoall": the scheduled collectives, for messages.
const char* scheduledCollNames();

}  // namespace coll
}  // namespace weft

#endif  // WEFT_BASE_COLL_TRAITS_H_
