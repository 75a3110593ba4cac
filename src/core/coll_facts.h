// What the C API's validation and group fusion ask about a call, answered from the collective
// traits table (base/coll_traits.h): does it reduce, is it rooted, which buffers does
// this rank touch, and how many bytes of each. Nothing in src/core/api*, call_context.cc or
// group.cc tests a CollKind itself.
#ifndef WEFT_CORE_COLL_FACTS_H_
#define WEFT_CORE_COLL_FACTS_H_

#include <cstddef>

#include "base/coll_traits.h"
#include "collectives/datatypes.h"
#include "core/comm.h"

namespace weft {
namespace core {
namespace capi {

using coll::CollKind;
using coll::collReduces;
using coll::collRooted;

// The larger buffer holds `count` elements times this.
inline size_t collCountMultiple(CollKind k, size_t nRanks) { return coll::collCountPerRank(k) ? nRanks : 1; }

// Whether this rank reads sendbuff / writes recvbuff (non-roots of a broadcast send nothing, of a
// reduce receive nothing).
inline bool collReadsSend(const CollCall& c, int rank) { return coll::collUsesSend(c.kind, rank, c.root); }
inline bool collWritesRecv(const CollCall& c, int rank) { return coll::collUsesRecv(c.kind, rank, c.root); }

// The bytes a collective reads from sendbuff and writes to recvbuff on a communicator of n ranks.
struct Extents {
  size_t send = 0;
  size_t recv = 0;
};
inline Extents extentsOf(const CollCall& c, size_t nRanks) {
  const coll::CollExtents e = coll::collExtentBytes(c.kind, static_cast<int64_t>(c.count), coll::dataTypeSize(c.type),
                                                    static_cast<int64_t>(nRanks));
  return Extents{static_cast<size_t>(e.send), static_cast<size_t>(e.recv)};
}

// Where recvbuff must start, relative to sendbuff (bytes), for the call to be in place on this
// rank (weft.h; coll::collInPlaceRecvOffset).
inline std::ptrdiff_t inPlaceOffset(const CollCall& c, int rank) {
  return static_cast<std::ptrdiff_t>(coll::collInPlaceRecvOffset(c.kind, rank, static_cast<int64_t>(c.count)) *
                                     static_cast<int64_t>(coll::dataTypeSize(c.type)));
}

}  // namespace capi
}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_COLL_FACTS_H_
