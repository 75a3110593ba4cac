// COLLECTIVE FACTS: the single place where the C API's validation and group fusion ask what a
// collective kind is: does it reduce, is it rooted, which buffers does a rank touch, and how many
// bytes of each. Nothing else in src/core/api*, call_context.cc or group.cc tests a CollKind.
// (To be answered by collectives/coll_traits.h once it lands.)
#ifndef WEFT_CORE_COLL_FACTS_H_
#define WEFT_CORE_COLL_FACTS_H_

#include <cstddef>

#include "collectives/datatypes.h"
#include "core/comm.h"

namespace weft {
namespace core {
namespace capi {

using coll::CollKind;

// It combines the ranks' data with a reduction op (which must then be checked).
inline bool collReduces(CollKind k) {
  return k == CollKind::kAllReduce || k == CollKind::kReduceScatter || k == CollKind::kReduce;
}

// It has a root rank (which must then be a rank of the communicator).
inline bool collRooted(CollKind k) { return k == CollKind::kBroadcast || k == CollKind::kReduce; }

// The larger buffer holds `count` elements times this.
inline size_t collCountMultiple(CollKind k, size_t nRanks) {
  return (k == CollKind::kAllGather || k == CollKind::kReduceScatter || k == CollKind::kAllToAll) ? nRanks : 1;
}

// Whether this rank reads sendbuff / writes recvbuff (non-roots of a broadcast send nothing, of a
// reduce receive nothing).
inline bool collReadsSend(const CollCall& c, int rank) { return !(c.kind == CollKind::kBroadcast && c.root != rank); }
inline bool collWritesRecv(const CollCall& c, int rank) { return !(c.kind == CollKind::kReduce && c.root != rank); }

// The bytes a collective reads from sendbuff and writes to recvbuff on a communicator of n ranks.
struct Extents {
  size_t send = 0;
  size_t recv = 0;
};
inline Extents extentsOf(const CollCall& c, size_t nRanks) {
  const size_t bytes = c.count * coll::dataTypeSize(c.type);
  Extents e;
  e.send = (c.kind == CollKind::kReduceScatter || c.kind == CollKind::kAllToAll) ? bytes * nRanks : bytes;
  e.recv = (c.kind == CollKind::kAllGather || c.kind == CollKind::kAllToAll) ? bytes * nRanks : bytes;
  return e;
}

// Where recvbuff must start, relative to sendbuff (bytes), for the call to be in place on this
// rank (weft.h): the same address, except that an all-gather's sendbuff is block `rank` of
// recvbuff and a reduce-scatter's recvbuff is block `rank` of sendbuff.
inline std::ptrdiff_t inPlaceOffset(const CollCall& c, int rank) {
  const auto block = static_cast<std::ptrdiff_t>(c.count * coll::dataTypeSize(c.type)) * rank;
  if (c.kind == CollKind::kAllGather) return -block;
  if (c.kind == CollKind::kReduceScatter) return block;
  return 0;
}

}  // namespace capi
}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_COLL_FACTS_H_
