// weftGather and weftScatter: rooted collectives built, as NCCL builds them, from one group of
// sends and receives (the root exchanges one block with every rank; a block of its own is a
// copy, skipped when in place). They go through the group machinery of api.cc, so they work
// inside and outside weftGroupStart/End, on host buffers and on a device stream alike.
#include <string>
#include <vector>

#include "collectives/datatypes.h"
#include "core/api_internal.h"

using weft::Status;

namespace weft {
namespace core {
namespace capi {
namespace {

std::string where(weftComm* comm, const char* fn) { return "rank " + std::to_string(comm->rank) + ": " + fn; }

// The checks of a rooted exchange: `spread` is the buffer of nRanks blocks on the root
// (recvbuff for gather, sendbuff for scatter), `block` the one-block buffer of every rank.
struct Rooted {
  bool gather = true;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;
  weftDataType_t type = weftFloat32;
  int root = 0;
};

Status validateRooted(weftComm* comm, const Rooted& c, weftStream_t stream, const char* fn) {
  WEFT_TRY(checkComm(comm, fn));
  WEFT_TRY(checkStream(comm, stream, fn));
  WEFT_TRY(checkTypeOp(comm, c.type, nullptr, fn));
  if (c.root < 0 || c.root >= comm->nRanks) {
    return Status::error(weftInvalidArgument, where(comm, fn) + ": root " + std::to_string(c.root) +
                                                  " is not a rank of this communicator (0.." +
                                                  std::to_string(comm->nRanks - 1) + ")");
  }
  const size_t n = static_cast<size_t>(comm->nRanks);
  const size_t elem = coll::dataTypeSize(c.type);
  WEFT_TRY(checkCount(comm, c.count, elem, n, fn));
  const bool isRoot = c.root == comm->rank;
  // Gather reads every rank's sendbuff and writes the root's recvbuff; scatter the other way.
  const void* block = c.gather ? c.sendbuff : c.recvbuff;
  const char* blockName = c.gather ? "sendbuff" : "recvbuff";
  const void* spread = c.gather ? static_cast<const void*>(c.recvbuff) : c.sendbuff;
  const char* spreadName = c.gather ? "recvbuff" : "sendbuff";
  WEFT_TRY(checkBuffer(comm, block, c.count, blockName, fn));
  if (isRoot) WEFT_TRY(checkBuffer(comm, spread, c.count * n, spreadName, fn));
  if (stream != nullptr) {
    WEFT_TRY(checkDeviceBuffer(comm, block, c.count * elem, blockName, fn));
    if (isRoot) WEFT_TRY(checkDeviceBuffer(comm, spread, c.count * elem * n, spreadName, fn));
    // A failure of device work enqueued earlier puts the communicator in its error state.
    Status async = comm->impl->deviceAsyncError();
    if (!async.isOk()) {
      reportFailure(comm, async);
      return checkComm(comm, fn);
    }
  }
  return Status::ok();
}

PendingOp p2pOp(weftComm* comm, weftStream_t stream, bool send, const void* buf, size_t bytes, int peer) {
  PendingOp op;
  op.comm = comm;
  op.stream = stream;
  op.isP2p = true;
  op.p2p.send = send;
  if (send) {
    op.p2p.sendbuff = buf;
  } else {
    op.p2p.recvbuff = const_cast<void*>(buf);
  }
  op.p2p.bytes = bytes;
  op.p2p.peer = peer;
  return op;
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

weftResult_t rooted(weftComm* comm, const Rooted& c, weftStream_t stream, const char* fn) {
  Status s = validateRooted(comm, c, stream, fn);
  if (!s.isOk()) return report(comm, s);
  std::vector<PendingOp> ops = rootedOps(comm, c, stream);
  if (ops.empty()) return weftSuccess;
  return submitAll(comm, ops);
}

}  // namespace
}  // namespace capi
}  // namespace core
}  // namespace weft

extern "C" {

weftResult_t weftGather(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype, int root,
                        weftComm_t comm, weftStream_t stream) {
  weft::core::capi::Rooted c{true, sendbuff, recvbuff, count, datatype, root};
  return weft::core::capi::rooted(comm, c, stream, "weftGather");
}

weftResult_t weftScatter(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype, int root,
                         weftComm_t comm, weftStream_t stream) {
  weft::core::capi::Rooted c{false, sendbuff, recvbuff, count, datatype, root};
  return weft::core::capi::rooted(comm, c, stream, "weftScatter");
}

}  // extern "C"
