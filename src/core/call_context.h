// The context of one C API call: the communicator and the function's name. It builds every
// error the API returns (one builder, one "rank r: fn: " prefix), runs the argument checks the
// calls share, and turns a Status into the call's weftResult_t.
#ifndef WEFT_CORE_CALL_CONTEXT_H_
#define WEFT_CORE_CALL_CONTEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "collectives/datatypes.h"
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
  // Every call that moves data runs the first six: each passes on an inline test and builds its
  // sentence out of line (call_context.cc), where six calls returning a Status cost ~200
  // instructions of a small collective.
  // The communicator exists, finished its init and is not in its error state.
  Status checkComm() const { return commUsable() ? Status::ok() : explainComm(); }
  // The communicator exists and finished its init, failed or not (register, shrink).
  Status checkInitDone() const;
  // The checks of every call that moves data: checkComm, checkStream and checkTypeOp.
  Status checkCall(weftStream_t stream, weftDataType_t type, const weftRedOp_t* op) const {
    if (commUsable() && streamFits(stream) && typeOpValid(type, op)) return Status::ok();
    return explainCall(stream, type, op);
  }
  Status checkOutput(const void* out, const char* what) const;  // "<what> is NULL"
  Status checkStream(weftStream_t stream) const { return streamFits(stream) ? Status::ok() : explainStream(stream); }
  // op: null when the call does not reduce.
  Status checkTypeOp(weftDataType_t type, const weftRedOp_t* op) const {
    return typeOpValid(type, op) ? Status::ok() : explainTypeOp(type, op);
  }
  Status checkPeer(int peer, const char* what) const;  // a rank of the communicator
  // count elements of elemSize bytes, times `multiple` (the larger buffer's), fit in int64 / 2
  // bytes (schedules index elements with int64). elemSize * multiple is small: no overflow.
  Status checkCount(size_t count, size_t elemSize, size_t multiple) const {
    size_t bytes = 0;
    const bool fits = !__builtin_mul_overflow(count, elemSize * (multiple > 0 ? multiple : 1), &bytes) &&
                      bytes <= static_cast<size_t>(INT64_MAX) / 2;
    return fits ? Status::ok() : error(weftInvalidArgument, "count %zu is too large", count);
  }
  Status checkBuffer(const void* buf, size_t count, const char* what) const {
    if (buf != nullptr || count == 0) return Status::ok();
    return error(weftInvalidArgument, "%s is NULL but count is %zu", what, count);
  }
  // sendbuff [send, send + sendBytes) and recvbuff [recv, recv + recvBytes) do not overlap, or
  // overlap exactly in place: recv == send + inPlaceOffset (bytes; the offset is signed: an
  // all-gather's sendbuff lies inside recvbuff). Any other overlap is weftInvalidArgument.
  Status checkOverlap(const void* send, size_t sendBytes, const void* recv, size_t recvBytes,
                      std::ptrdiff_t inPlaceOffset) const {
    const uintptr_t s = reinterpret_cast<uintptr_t>(send), r = reinterpret_cast<uintptr_t>(recv);
    if (s + sendBytes <= r || r + recvBytes <= s || r == s + static_cast<uintptr_t>(inPlaceOffset)) return Status::ok();
    return explainOverlap(send, sendBytes, recv, recvBytes);
  }
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
  // The fast tests: true means the check passes (false: explain* decides, and says why).
  bool commUsable() const {
    return comm_ != nullptr && comm_->state.load() == weftSuccess && comm_->impl != nullptr &&
           !comm_->impl->aborted() && !comm_->impl->suspended();
  }
  // Host buffers on a communicator without GPU ranks.
  bool streamFits(weftStream_t stream) const { return stream == nullptr && !comm_->impl->mixed(); }
  static bool typeOpValid(weftDataType_t type, const weftRedOp_t* op) {
    return coll::isValidDataType(static_cast<int>(type)) &&
           (op == nullptr || coll::isValidRedOp(static_cast<int>(*op)));
  }
  // The complete checks, with their sentences (call_context.cc).
  Status explainComm() const;
  Status explainCall(weftStream_t stream, weftDataType_t type, const weftRedOp_t* op) const;
  Status explainStream(weftStream_t stream) const;
  Status explainTypeOp(weftDataType_t type, const weftRedOp_t* op) const;
  Status explainOverlap(const void* send, size_t sendBytes, const void* recv, size_t recvBytes) const;

  weftComm* comm_;
  const char* fn_;
  int rank_;
};

}  // namespace capi
}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_CALL_CONTEXT_H_
