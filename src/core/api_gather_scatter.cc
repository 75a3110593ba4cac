// weftGather and weftScatter: rooted collectives built, as NCCL builds them, from one group of
// sends and receives (the root exchanges one block with every rank; a block of its own is a
// copy, skipped when in place). They go through the group machinery (group.h), so they work
// inside and outside weftGroupStart/End, on host buffers and on a device stream alike.
#include <string>
#include <vector>

#include "collectives/datatypes.h"
#include "core/api_entry.h"
#include "core/call_context.h"
#include "core/group.h"

namespace weft {
namespace core {
namespace capi {
namespace {

Status validateRooted(const Call& call, const Rooted& c, weftStream_t stream) {
  weftComm* comm = call.comm();
  WEFT_TRY(call.checkCall(stream, c.type, nullptr));
  WEFT_TRY(call.checkPeer(c.root, "root"));
  const size_t n = static_cast<size_t>(comm->nRanks);
  const size_t elem = coll::dataTypeSize(c.type);
  WEFT_TRY(call.checkCount(c.count, elem, n));
  const bool isRoot = c.root == comm->rank;
  // Gather reads every rank's sendbuff and writes the root's recvbuff; scatter the other way.
  const void* block = c.gather ? c.sendbuff : c.recvbuff;
  const char* blockName = c.gather ? "sendbuff" : "recvbuff";
  const void* spread = c.gather ? static_cast<const void*>(c.recvbuff) : c.sendbuff;
  const char* spreadName = c.gather ? "recvbuff" : "sendbuff";
  WEFT_TRY(call.checkBuffer(block, c.count, blockName));
  if (isRoot) WEFT_TRY(call.checkBuffer(spread, c.count * n, spreadName));
  // On the root, in place means the block is block `root` of the spread buffer.
  if (isRoot) {
    const size_t bytes = c.count * elem;
    const auto off = static_cast<std::ptrdiff_t>(bytes) * c.root;
    WEFT_TRY(c.gather ? call.checkOverlap(block, bytes, spread, bytes * n, -off)
                      : call.checkOverlap(spread, bytes * n, block, bytes, off));
  }
  if (stream == nullptr) return Status::ok();
  WEFT_TRY(call.checkDeviceBuffer(block, c.count * elem, blockName));
  if (isRoot) WEFT_TRY(call.checkDeviceBuffer(spread, c.count * elem * n, spreadName));
  return call.checkDeviceAsync();
}

// The root exchanges block r of its spread buffer with rank r; every other rank exchanges its
// one block with the root.
std::vector<PendingOp> rootedOps(weftComm* comm, const Rooted& c, weftStream_t stream) {
  std::vector<PendingOp> ops;
  const size_t bytes = c.count * coll::dataTypeSize(c.type);
  if (bytes == 0) return ops;
  // Gather: ranks send, the root receives. Scatter: the root sends, ranks receive.
  const bool rootSends = !c.gather;
  if (comm->rank != c.root) {
    ops.push_back(p2pOp(comm, stream, !rootSends, c.gather ? c.sendbuff : c.recvbuff, bytes, c.root));
    return ops;
  }
  const char* spread = static_cast<const char*>(c.gather ? static_cast<const void*>(c.recvbuff) : c.sendbuff);
  for (int r = 0; r < comm->nRanks; ++r) {
    const char* slot = spread + static_cast<size_t>(r) * bytes;
    if (r != c.root) {
      ops.push_back(p2pOp(comm, stream, rootSends, slot, bytes, r));
      continue;
    }
    // The root's own block: a copy through a send to itself paired with a receive from itself,
    // unless the block is already in place.
    const void* own = c.gather ? c.sendbuff : c.recvbuff;
    if (own == slot) continue;
    const void* from = c.gather ? own : slot;
    const void* to = c.gather ? slot : own;
    ops.push_back(p2pOp(comm, stream, true, from, bytes, r));
    ops.push_back(p2pOp(comm, stream, false, to, bytes, r));
  }
  return ops;
}

}  // namespace

weftResult_t rooted(const Call& call, const Rooted& c, weftStream_t stream) {
  Status s = validateRooted(call, c, stream);
  if (!s.isOk()) return call.refuse(s, false);
  std::vector<PendingOp> ops = rootedOps(call.comm(), c, stream);
  if (ops.empty()) return weftSuccess;
  return submitAll(call.comm(), ops);
}

}  // namespace capi
}  // namespace core
}  // namespace weft
