// Collectives, sends and receives, the barrier and reduction ops: their checks and the hand-off
// to the group machinery (group.h) or the communicator.
#include <cstdint>
#include <vector>

#include "collectives/datatypes.h"
#include "core/api_entry.h"
#include "core/call_context.h"
#include "core/coll_facts.h"
#include "core/group.h"

namespace weft {
namespace core {
namespace capi {
namespace {

Status validateCollective(const Call& call, const CollCall& c, weftStream_t stream) {
  weftComm* comm = call.comm();
  WEFT_TRY(call.checkCall(stream, c.type, collReduces(c.kind) ? &c.op : nullptr));
  if (collRooted(c.kind)) WEFT_TRY(call.checkPeer(c.root, "root"));
  const size_t n = static_cast<size_t>(comm->nRanks);
  WEFT_TRY(call.checkCount(c.count, coll::dataTypeSize(c.type), collCountMultiple(c.kind, n)));
  const bool readsSend = collReadsSend(c, comm->rank);
  const bool writesRecv = collWritesRecv(c, comm->rank);
  if (readsSend) WEFT_TRY(call.checkBuffer(c.sendbuff, c.count, "sendbuff"));
  if (writesRecv) WEFT_TRY(call.checkBuffer(c.recvbuff, c.count, "recvbuff"));
  const Extents e = extentsOf(c, n);
  if (readsSend && writesRecv) {
    WEFT_TRY(call.checkOverlap(c.sendbuff, e.send, c.recvbuff, e.recv, inPlaceOffset(c, comm->rank)));
  }
  if (stream == nullptr) return Status::ok();
  if (readsSend) WEFT_TRY(call.checkDeviceBuffer(c.sendbuff, e.send, "sendbuff"));
  if (writesRecv) WEFT_TRY(call.checkDeviceBuffer(c.recvbuff, e.recv, "recvbuff"));
  return call.checkDeviceAsync();
}

Status validateP2p(const Call& call, const P2pArgs& a) {
  WEFT_TRY(call.checkCall(a.stream, a.type, nullptr));
  WEFT_TRY(call.checkPeer(a.peer, "peer"));
  const size_t elem = coll::dataTypeSize(a.type);
  WEFT_TRY(call.checkCount(a.count, elem, 1));
  const char* what = a.send ? "sendbuff" : "recvbuff";
  WEFT_TRY(call.checkBuffer(a.buf, a.count, what));
  if (a.stream != nullptr) WEFT_TRY(call.checkDeviceBuffer(a.buf, a.count * elem, what));
  return Status::ok();
}

// weftRecvAny's checks: weftRecv's, and what it adds (host memory, a peer to hear from, outside a
// group, a place for the source).
Status validateRecvAny(const Call& call, void* recvbuff, size_t count, weftDataType_t type, const int* source,
                       weftStream_t stream) {
  WEFT_TRY(call.checkComm());
  if (stream != nullptr) {
    return call.error(weftInvalidArgument,
                      "stream is not NULL: weftRecvAny receives into host memory only; pass stream NULL and a host "
                      "buffer, or use weftRecv with the peer's rank on device buffers");
  }
  if (groupDepth() > 0) {
    return call.error(weftInvalidUsage,
                      "called inside a group: weftRecvAny blocks until a message arrives, so it runs on its own; call "
                      "it after weftGroupEnd, or use weftRecv with the peer's rank inside the group");
  }
  WEFT_TRY(call.checkCall(stream, type, nullptr));
  WEFT_TRY(call.checkOutput(source, "source"));
  if (count == 0) {
    return call.error(weftInvalidArgument,
                      "count is 0: a send of 0 elements moves nothing, so no sender could be found; pass the count "
                      "the senders send");
  }
  if (call.comm()->nRanks == 1) {
    return call.error(weftInvalidUsage, "the communicator has one rank: no peer can send to it");
  }
  WEFT_TRY(call.checkCount(count, coll::dataTypeSize(type), 1));
  return call.checkBuffer(recvbuff, count, "recvbuff");
}

}  // namespace

weftResult_t collective(const Call& call, const CollCall& c, weftStream_t stream) {
  Status s = validateCollective(call, c, stream);
  if (!s.isOk()) return call.refuse(s, true);
  return submit(call.comm(), collOp(call.comm(), c, stream));
}

weftResult_t pointToPoint(const Call& call, const P2pArgs& a) {
  Status s = validateP2p(call, a);
  if (!s.isOk()) return call.refuse(s, false);
  const size_t bytes = a.count * coll::dataTypeSize(a.type);
  return submit(call.comm(), p2pOp(call.comm(), a.stream, a.send, a.buf, bytes, a.peer));
}

weftResult_t recvAny(const Call& call, void* recvbuff, size_t count, weftDataType_t type, int* source,
                     weftStream_t stream) {
  Status s = validateRecvAny(call, recvbuff, count, type, source, stream);
  if (!s.isOk()) return call.refuse(s, false);
  InFlight inFlight(call.comm());
  return call.finishOp(call.comm()->impl->recvAny(recvbuff, count * coll::dataTypeSize(type), source));
}

weftResult_t barrier(const Call& call, weftStream_t stream) {
  Status s = call.checkComm();
  if (s.isOk()) s = call.checkStream(stream);
  if (s.isOk() && stream != nullptr && groupDepth() > 0) {
    s = call.error(weftInvalidUsage, "called with a stream inside a group; call it outside the group");
  }
  if (!s.isOk()) return call.finish(s);
  if (stream != nullptr) {
    InFlight inFlight(call.comm());
    return call.finishOp(call.comm()->impl->deviceBarrier(stream));
  }
  // On host memory: an all-reduce of one byte.
  static const uint8_t kZero = 0;
  static thread_local uint8_t sink = 0;
  CollCall c{coll::CollKind::kAllReduce, &kZero, &sink, 1, weftUint8, weftSum, 0};
  return submit(call.comm(), collOp(call.comm(), c, nullptr));
}

weftResult_t redOpCreatePreMulSum(const Call& call, weftRedOp_t* op, void* scalar, weftDataType_t type,
                                  weftScalarResidence_t residence) {
  Status s = call.checkComm();
  if (s.isOk()) s = call.checkTypeOp(type, nullptr);
  if (s.isOk()) s = call.checkOutput(op, "op");
  if (s.isOk()) s = call.checkOutput(scalar, "scalar");
  if (s.isOk() && residence != weftScalarDevice && residence != weftScalarHostImmediate) {
    s = call.error(weftInvalidArgument, "residence %d is neither weftScalarDevice (0) nor weftScalarHostImmediate (1)",
                   static_cast<int>(residence));
  }
  if (s.isOk()) s = call.comm()->impl->createPreMulSum(scalar, type, residence, op);
  return call.finish(s);
}

weftResult_t redOpDestroy(const Call& call, weftRedOp_t op) {
  Status s = call.checkComm();
  if (s.isOk() && static_cast<int>(op) < weftNumOps) {
    s = call.error(weftInvalidArgument,
                   "op %d is a built-in op (0..%d); only ops made by weftRedOpCreatePreMulSum are destroyed",
                   static_cast<int>(op), weftNumOps - 1);
  }
  if (s.isOk()) s = call.comm()->impl->destroyRedOp(op);
  return call.finish(s);
}

}  // namespace capi
}  // namespace core
}  // namespace weft
