// libnccl.so.2: NCCL functions whose Weft counterparts are being added to Weft's C API:
// revocation, suspend / resume, growing a communicator, and one-sided signals (NCCL 2.28.7 -
// 2.29). Each entry point translates what needs more than a cast (a config, a window) now, and
// refuses with ncclInvalidUsage and a message saying what to use meanwhile; its "Wiring:"
// comment is the line that replaces the refusal once the Weft call exists. Flags pass unchanged:
// Weft's are to have NCCL's values (NCCL_REVOKE_DEFAULT 0, NCCL_SUSPEND_MEM 0x01).
#include "shim.h"

using namespace weft::nccl;

namespace {

const char* const kUseAbortOrShrink =
    "ncclCommAbort stops the communicator's operations in flight (and frees it), and ncclCommShrink with "
    "NCCL_SHRINK_ABORT continues without failed ranks";
const char* const kUseDestroy =
    "Weft cannot release a communicator's resources while keeping it; ncclCommDestroy frees them and a new "
    "ncclCommInitRank makes it again";
const char* const kUseNewComm =
    "make the larger communicator with ncclGetUniqueId and ncclCommInitRank on every rank, old and new, then "
    "destroy the old one";
const char* const kUseSendRecv =
    "one-sided puts and signals are not implemented; ncclSend / ncclRecv between the two ranks move the data "
    "and order them";

// A one-sided operation's arguments as Weft's will take them.
struct PutSignalArgs {
  const void* localbuff = nullptr;
  size_t count = 0;
  weftDataType_t datatype = weftFloat32;
  int peer = -1;
  void* peerRegistration = nullptr;  // weftCommRegister's handle of the peer window, here
  size_t peerOffset = 0;
  int sigIdx = 0;
  int ctx = 0;
  unsigned int flags = 0;
  weftComm_t comm = nullptr;
  weftStream_t stream = nullptr;
};

// The window must be this communicator's, and the bytes written must lie inside it.
ncclResult_t translatePutSignal(const char* fn, const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                                ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags,
                                ncclComm_t comm, cudaStream_t stream, PutSignalArgs* out) {
  WindowInfo win;
  if (!findWindow(comm, peerWin, fn, &win)) return ncclInvalidArgument;
  if (peerWinOffset > win.size) {
    return fail(ncclInvalidArgument, "%s: peerWinOffset %zu is past the end of the window (%zu bytes)", fn,
                peerWinOffset, win.size);
  }
  *out = {localbuff,
          count,
          toWeft(datatype),
          peer,
          win.registration,
          peerWinOffset,
          sigIdx,
          ctx,
          flags,
          toWeft(comm),
          resolveStream(stream, localbuff)};
  return ncclSuccess;
}

}  // namespace

WEFT_NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  // Wiring: return fromWeft(weftCommRevoke(toWeft(comm), revokeFlags));
  return notProvided("ncclCommRevoke", kUseAbortOrShrink);
}

WEFT_NCCL_API(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags) {
  // Wiring: return fromWeft(weftCommSuspend(toWeft(comm), flags));
  return notProvided("ncclCommSuspend", kUseDestroy);
}

WEFT_NCCL_API(ncclResult_t, ncclCommResume, ncclComm_t comm) {
  // Wiring: return fromWeft(weftCommResume(toWeft(comm)));
  return notProvided("ncclCommResume", kUseDestroy);
}

WEFT_NCCL_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId) {
  // Wiring: return fromWeft(weftCommGetUniqueId(toWeft(comm), toWeft(uniqueId)));
  return notProvided("ncclCommGetUniqueId", kUseNewComm);
}

// Old ranks pass comm and rank -1 (the root also the id); new ranks pass comm NULL, the id and
// their rank. The config is NCCL's, translated now (a bad one is refused, as it will be then).
WEFT_NCCL_API(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
              ncclComm_t* newcomm, ncclConfig_t* config) {
  TranslatedConfig t = translateConfig(config, "ncclCommGrow");
  if (!t.ok) return t.error;
  // Wiring: return fromWeft(weftCommGrow(toWeft(comm), nRanks, toWeft(uniqueId), rank,
  //                                      reinterpret_cast<weftComm_t*>(newcomm), weftConfigOf(t)));
  return notProvided("ncclCommGrow", kUseNewComm);
}

WEFT_NCCL_API(ncclResult_t, ncclPutSignal, const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
              ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
              cudaStream_t stream) {
  PutSignalArgs a;
  ncclResult_t r = translatePutSignal("ncclPutSignal", localbuff, count, datatype, peer, peerWin, peerWinOffset, sigIdx,
                                      ctx, flags, comm, stream, &a);
  if (r != ncclSuccess) return r;
  // Wiring: return fromWeft(weftPutSignal(a.localbuff, a.count, a.datatype, a.peer, a.peerRegistration,
  //                                       a.peerOffset, a.sigIdx, a.ctx, a.flags, a.comm, a.stream));
  return notProvided("ncclPutSignal", kUseSendRecv);
}

WEFT_NCCL_API(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
              cudaStream_t stream) {
  // Wiring: return fromWeft(weftSignal(peer, sigIdx, ctx, flags, toWeft(comm), resolveStream(stream, nullptr)));
  return notProvided("ncclSignal", kUseSendRecv);
}

// The descriptors are to pass as they are: weftWaitSignalDesc_t should have NCCL's layout (four
// ints: opCnt, peer, sigIdx, ctx), checked with a static_assert when it exists.
WEFT_NCCL_API(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
              cudaStream_t stream) {
  // Wiring: return fromWeft(weftWaitSignal(nDesc, reinterpret_cast<const weftWaitSignalDesc_t*>(signalDescs),
  //                                        toWeft(comm), resolveStream(stream, nullptr)));
  return notProvided("ncclWaitSignal", kUseSendRecv);
}
