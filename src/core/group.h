// Groups (weftGroupStart / weftGroupEnd): the calls a thread records between them, and how they
// run: per communicator, collectives in call order (device ones fused into one launch where they
// can be), then every send and receive together; several communicators each on a thread.
#ifndef WEFT_CORE_GROUP_H_
#define WEFT_CORE_GROUP_H_

#include <vector>

#include "core/api_internal.h"
#include "core/comm.h"
#include "weft/weft.h"

namespace weft {
namespace core {
namespace capi {

// One call recorded for a group (or run at once outside one).
struct PendingOp {
  weftComm* comm = nullptr;
  weftStream_t stream = nullptr;  // non-null: device buffers, enqueued on this stream
  bool isP2p = false;
  CollCall coll;
  P2pCall p2p;
};

PendingOp collOp(weftComm* comm, const CollCall& call, weftStream_t stream);
PendingOp p2pOp(weftComm* comm, weftStream_t stream, bool send, const void* buf, size_t bytes, int peer);

// The calling thread's group nesting depth (0: outside any group).
int groupDepth();

// Runs the op of one API call now, or records it in the group being built.
weftResult_t submit(weftComm* comm, const PendingOp& op);

weftResult_t groupStart();
// Ends a group; the outermost runs what was recorded.
weftResult_t groupEnd();
// The calls on comm recorded by the group open on this thread (0 outside a group).
size_t recordedCallsOn(const weftComm* comm);
// Removes them (weftCommAbort inside an open group: weftGroupEnd then runs the others).
void forgetCallsOn(const weftComm* comm);
// Ends the outermost group without running it: its recorded calls are handed back.
std::vector<PendingOp> dropGroup();

}  // namespace capi
}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_GROUP_H_
