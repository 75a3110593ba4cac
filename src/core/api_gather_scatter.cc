// weftGather and weftScatter: their checks, and the hand-off to the group machinery (group.h) as
// a collective call, so they work inside and outside weftGroupStart/End, on host buffers and on a
// device stream alike. The communicator moves their blocks as direct sends and receives, as NCCL
// builds them, stamped and token-checked as a collective (comm_rooted.cc).
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

}  // namespace

weftResult_t rooted(const Call& call, const Rooted& c, weftStream_t stream) {
  Status s = validateRooted(call, c, stream);
  if (!s.isOk()) return call.refuse(s, true);
  CollCall exchange;
  exchange.kind = c.gather ? coll::CollKind::kGather : coll::CollKind::kScatter;
  exchange.sendbuff = c.sendbuff;
  exchange.recvbuff = c.recvbuff;
  exchange.count = c.count;
  exchange.type = c.type;
  exchange.root = c.root;
  return submit(call.comm(), collOp(call.comm(), exchange, stream));
}

}  // namespace capi
}  // namespace core
}  // namespace weft
