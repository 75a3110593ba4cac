// The context of one C API call: the communicator and the function's name. It builds every
// error the API returns (one builder, one "rank r: fn: " prefix), runs the argument checks the
// calls share, and turns a Status into the call's weftResult_t.
#ifndef WEFT_CORE_CALL_CONTEXT_H_
#define WEFT_CORE_CALL_CONTEXT_H_

#include <cstddef>
#include <string>

#include "base/status.h"
#include "core/api_internal.h"
#include "weft/weft.h"

namespace weft {
namespace core {
namespace capi {

class Call {
 public:
  // comm may be null (init, memory calls, checks before the handle is known).
  Call(weftComm* comm, const char* fn) : comm_(comm), fn_(fn), rank_(comm ? comm->rank : -1) {}
  // A call with no handle yet that already knows its rank (weftCommInitRankScalable).
  Call(const char* fn, int rank) : comm_(nullptr), fn_(fn), rank_(rank) {}

  weftComm* comm() const { return comm_; }
  const char* fn() const { return fn_; }

  // "rank r: fn: ", or "fn: " when the rank is not known: every message starts with it.
  std::string prefix() const;
  // The one way to build an error: prefix() + the printf text.
  Status error(weftResult_t code, const char* fmt, ...) const __attribute__((format(printf, 3, 4)));
  // A failure from below in this call's context: prefix() + what + ": " + its message.
  Status wrap(Status s, const std::string& what) const;

  // ---- Checks (each names fn and the rank) ----
  // The communicator exists, finished its init and is not in its error state.
  Status checkComm() const;
  // The communicator exists and finished its init, failed or not (register, shrink).
  Status checkInitDone() const;
  // The checks of every call that moves data: checkComm, checkStream and checkTypeOp.
  Status checkCall(weftStream_t stream, weftDataType_t type, const weftRedOp_t* op) const;
  Status checkOutput(const void* out, const char* what) const;  // "<what> is NULL"
  Status checkStream(weftStream_t stream) const;
  // op: null when the call does not reduce.
  Status checkTypeOp(weftDataType_t type, const weftRedOp_t* op) const;
  Status checkPeer(int peer, const char* what) const;  // a rank of the communicator
  Status checkCount(size_t count, size_t elemSize, size_t multiple) const;
  Status checkBuffer(const void* buf, size_t count, const char* what) const;
  // sendbuff [send, send + sendBytes) and recvbuff [recv, recv + recvBytes) do not overlap, or
  // overlap exactly in place: recv == send + inPlaceOffset (bytes; the offset is signed: an
  // all-gather's sendbuff lies inside recvbuff). Any other overlap is weftInvalidArgument.
  Status checkOverlap(const void* send, size_t sendBytes, const void* recv, size_t recvBytes,
                      std::ptrdiff_t inPlaceOffset) const;
  // With a stream: memory this rank's GPU reaches (its device, managed, or pinned host).
  Status checkDeviceBuffer(const void* buf, size_t bytes, const char* what) const;
  // Device work enqueued earlier that failed puts the communicator in its error state.
  Status checkDeviceAsync() const;
  Status checkConfig(const weftConfig_t* config) const;

  // ---- Results ----
  // weftSuccess, or the failure recorded for weftGetLastError.
  weftResult_t finish(const Status& s) const { return s.isOk() ? weftSuccess : report(comm_, s); }
  // A call that moves data refused its arguments (the communicator stays usable): finish(s),
  // and outside a group the peers learn that this rank takes no part in that call, so that they
  // fail it at once instead of at WEFT_TIMEOUT_S (liveness.h has the rule). `collective`: the
  // call is a collective (not a send, receive, gather or scatter, which run as send/recv groups).
  weftResult_t refuse(const Status& s, bool collective) const;
  // The same, and a failure puts the communicator in its error state.
  weftResult_t finishOp(const Status& s) const { return s.isOk() ? weftSuccess : reportOpFailure(comm_, s); }

 private:
  weftComm* comm_;
  const char* fn_;
  int rank_;
};

}  // namespace capi
}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_CALL_CONTEXT_H_
