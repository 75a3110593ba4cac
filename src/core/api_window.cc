// One-sided windows and signals on host memory: weftCommWindowRegister / Deregister,
// weftPutSignal, weftSignal and weftWaitSignal. Their checks, the C handle of a window, and the
// hand-off to the communicator (comm_window.cc).
#include <cstdint>
#include <memory>
#include <mutex>

#include "collectives/datatypes.h"
#include "core/api_entry.h"
#include "core/call_context.h"
#include "core/comm_window.h"
#include "core/group.h"

namespace weft {
namespace core {
namespace capi {
namespace {

// What every one-sided call checks: a usable communicator, host memory, outside a group.
Status checkOneSided(const Call& call, weftStream_t stream) {
  WEFT_TRY(call.checkComm());
  if (stream != nullptr) {
    return call.error(weftInvalidArgument,
                      "stream is not NULL: windows and signals work on host memory only in this version; pass stream "
                      "NULL");
  }
  if (groupDepth() > 0) {
    return call.error(weftInvalidUsage, "called inside a group: one-sided calls run on their own; call it outside");
  }
  return Status::ok();
}

// win is a live handle of comm (a stale or foreign one is never dereferenced).
bool isWindowOf(weftComm* comm, weftWindow_t win) {
  std::lock_guard<std::mutex> lock(comm->mutex);
  return comm->windows.count(win) > 0;
}

Status checkSignal(const Call& call, int peer, int sigIdx, int ctx, unsigned int flags) {
  WEFT_TRY(call.checkPeer(peer, "peer"));
  if (sigIdx < 0 || sigIdx >= kWindowSignals || ctx < 0 || ctx >= kWindowContexts) {
    return call.error(weftInvalidArgument,
                      "sigIdx %d, ctx %d: signals are numbered 0..%d (WEFT_WIN_MAX_SIGNALS - 1), contexts 0..%d "
                      "(WEFT_WIN_MAX_CONTEXTS - 1)",
                      sigIdx, ctx, kWindowSignals - 1, kWindowContexts - 1);
  }
  if (flags != 0) return call.error(weftInvalidArgument, "flags is %u; pass 0", flags);
  return Status::ok();
}

}  // namespace

weftResult_t commWindowRegister(const Call& call, void* buff, size_t size, weftWindow_t* win, int flags) {
  Status s = checkOneSided(call, nullptr);
  if (s.isOk()) s = call.checkOutput(win, "win");
  if (s.isOk()) s = call.checkBuffer(buff, size, "buff");
  if (s.isOk() && flags != WEFT_WIN_DEFAULT && flags != WEFT_WIN_COLL_SYMMETRIC) {
    s = call.error(weftInvalidArgument, "winFlags is %d; pass WEFT_WIN_DEFAULT (0) or WEFT_WIN_COLL_SYMMETRIC (1)",
                   flags);
  }
  if (!s.isOk()) return call.finish(s);
  *win = nullptr;
  uint32_t id = 0;
  InFlight inFlight(call.comm());
  s = call.comm()->impl->registerWindow(buff, size, &id);
  if (!s.isOk()) return report(call.comm(), s);
  auto handle = std::make_unique<weftWindow>(weftWindow{call.comm(), id});
  *win = handle.get();
  std::lock_guard<std::mutex> lock(call.comm()->mutex);
  call.comm()->windows[*win] = std::move(handle);
  return weftSuccess;
}

weftResult_t commWindowDeregister(const Call& call, weftWindow_t win) {
  Status s = checkOneSided(call, nullptr);
  if (s.isOk() && !isWindowOf(call.comm(), win)) {
    s = call.error(weftInvalidArgument, "win is %s",
                   win ? "not a window of this communicator (of another one, or deregistered already)" : "NULL");
  }
  if (!s.isOk()) return call.finish(s);
  InFlight inFlight(call.comm());
  s = call.comm()->impl->deregisterWindow(win->id);
  if (!s.isOk()) return report(call.comm(), s);
  std::lock_guard<std::mutex> lock(call.comm()->mutex);
  call.comm()->windows.erase(win);
  return weftSuccess;
}

weftResult_t putSignal(const Call& call, const PutArgs& a) {
  Status s = checkOneSided(call, a.stream);
  if (s.isOk()) s = call.checkTypeOp(a.type, nullptr);
  if (s.isOk()) s = checkSignal(call, a.peer, a.sigIdx, a.ctx, a.flags);
  if (s.isOk()) s = call.checkCount(a.count, coll::dataTypeSize(a.type), 1);
  if (s.isOk()) s = call.checkBuffer(a.localbuff, a.count, "localbuff");
  if (s.isOk() && !isWindowOf(call.comm(), a.peerWin)) {
    s = call.error(weftInvalidArgument, "peerWin is %s; pass a window weftCommWindowRegister made on this communicator",
                   a.peerWin ? "not a window of this communicator (of another one, or deregistered)" : "NULL");
  }
  if (!s.isOk()) return call.finish(s);
  InFlight inFlight(call.comm());
  const size_t bytes = a.count * coll::dataTypeSize(a.type);
  s = call.comm()->impl->putSignal(a.localbuff, bytes, a.peer, a.peerWin->id, a.offset, true, a.sigIdx, a.ctx);
  // Bad offsets are the caller's to fix; the communicator stays usable.
  if (!s.isOk() && s.code() == weftInvalidArgument) return report(call.comm(), s);
  return call.finishOp(s);
}

weftResult_t signal(const Call& call, int peer, int sigIdx, int ctx, unsigned int flags, weftStream_t stream) {
  Status s = checkOneSided(call, stream);
  if (s.isOk()) s = checkSignal(call, peer, sigIdx, ctx, flags);
  if (!s.isOk()) return call.finish(s);
  InFlight inFlight(call.comm());
  s = call.comm()->impl->putSignal(nullptr, 0, peer, UINT32_MAX, 0, true, sigIdx, ctx);
  if (!s.isOk() && s.code() == weftInvalidUsage) return report(call.comm(), s);  // no window yet
  return call.finishOp(s);
}

weftResult_t waitSignal(const Call& call, int nDesc, const weftWaitSignalDesc_t* descs, weftStream_t stream) {
  Status s = checkOneSided(call, stream);
  if (s.isOk() && (nDesc < 0 || (nDesc > 0 && descs == nullptr))) {
    s = call.error(weftInvalidArgument, "nDesc is %d with signalDescs %s", nDesc, descs ? "given" : "NULL");
  }
  for (int i = 0; s.isOk() && i < nDesc; ++i) {
    s = checkSignal(call, descs[i].peer, descs[i].sigIdx, descs[i].ctx, 0);
    if (s.isOk() && descs[i].opCnt < 0) s = call.error(weftInvalidArgument, "signalDescs[%d].opCnt is negative", i);
  }
  if (!s.isOk()) return call.finish(s);
  InFlight inFlight(call.comm());
  s = call.comm()->impl->waitSignals(descs, nDesc);
  if (!s.isOk() && s.code() == weftInvalidUsage) return report(call.comm(), s);  // no window yet
  return call.finishOp(s);
}

}  // namespace capi
}  // namespace core
}  // namespace weft
