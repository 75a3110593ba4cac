// libnccl.so.2: memory windows, one-sided puts and signals, and a communicator's memory
// statistics.
//
// A window is two things of Weft's on the same range: a window (weftCommWindowRegister), which
// ncclPutSignal writes from a peer, and a registration (weftCommRegister), so that collectives
// on it take Weft's registered zero-copy path as NCCL's windows are for (a Weft window alone
// does not imply it). Where Weft refuses the window's one-sided part (ranks on several hosts,
// inside a group) the window still serves collectives, and ncclPutSignal on it says why it
// cannot. NCCL_WIN_COLL_SYMMETRIC passes to Weft; the other NCCL_WIN_* flags are accepted and
// change nothing. Windows live in a process-wide table: a stale, foreign or twice-deregistered
// ncclWindow_t is refused by lookup, never dereferenced.
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "shim.h"

using namespace weft::nccl;

namespace weft::nccl {
namespace {

// The struct an ncclWindow_t points to here (NCCL's type is opaque to its callers).
struct Window {
  WindowInfo info;
};

struct WindowTable {
  std::mutex mutex;
  std::map<const void*, std::unique_ptr<Window>> live;
};

WindowTable& windows() {
  static WindowTable* t = new WindowTable();  // never destroyed: windows may be freed at exit
  return *t;
}

const int kKnownWindowFlags =
    WEFT_NCCL_WIN_COLL_SYMMETRIC | WEFT_NCCL_WIN_STRICT_ORDERING | WEFT_NCCL_WIN_GIN_ONLY | WEFT_NCCL_WIN_CFT_COUNTED;

}  // namespace

namespace {

// Looks win up (t.mutex held); erase: takes it out of the table too, so that of two racing
// deregistrations one wins and the other is told the window is gone.
bool lookUp(WindowTable& t, ncclComm_t comm, ncclWindow_t win, const char* fn, WindowInfo* out, bool erase) {
  auto it = t.live.find(win);
  if (it == t.live.end()) {
    fail(ncclInvalidArgument,
         "%s: window %p was not returned by ncclCommWindowRegister, or was deregistered already (or its "
         "communicator destroyed)",
         fn, static_cast<void*>(win));
    return false;
  }
  if (it->second->info.comm != toWeft(comm)) {
    fail(ncclInvalidArgument, "%s: window %p belongs to communicator %p, not %p; pass the communicator that made it",
         fn, static_cast<void*>(win), static_cast<void*>(it->second->info.comm), static_cast<void*>(comm));
    return false;
  }
  *out = it->second->info;
  if (erase) t.live.erase(it);
  return true;
}

}  // namespace

bool findWindow(ncclComm_t comm, ncclWindow_t win, const char* fn, WindowInfo* out) {
  WindowTable& t = windows();
  std::lock_guard<std::mutex> lock(t.mutex);
  return lookUp(t, comm, win, fn, out, false);
}

void forgetWindows(ncclComm_t comm) {
  WindowTable& t = windows();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (auto it = t.live.begin(); it != t.live.end();) {
    it = it->second->info.comm == toWeft(comm) ? t.live.erase(it) : std::next(it);
  }
}

}  // namespace weft::nccl

namespace {

// Makes w's Weft window (collective over comm, like NCCL's registration). Weft refuses one
// (weftInvalidUsage) alike on every rank, without talking: then the window serves collectives
// only. Any other failure is the registration's.
ncclResult_t makeOneSided(WindowInfo* w) {
  weftResult_t r =
      weftCommWindowRegister(w->comm, w->buff, w->size, &w->window, w->flags & WEFT_NCCL_WIN_COLL_SYMMETRIC);
  if (r == weftSuccess) return ncclSuccess;
  w->window = nullptr;
  if (r != weftInvalidUsage) return fromWeft(r);
  w->oneSidedRefusal = weftGetLastError(w->comm);
  logInfo("ncclCommWindowRegister: window at %p serves collectives only (no one-sided puts): %s", w->buff,
          w->oneSidedRefusal.c_str());
  return ncclSuccess;
}

// The window ncclPutSignal writes: win's Weft window, on host memory. A window on device memory
// is refused here (Weft's windows are host memory only; a put would write a device address).
ncclResult_t oneSidedWindow(ncclComm_t comm, ncclWindow_t win, const char* fn, WindowInfo* out) {
  if (!findWindow(comm, win, fn, out)) return ncclInvalidArgument;
  if (out->window == nullptr) {
    return fail(ncclInvalidUsage, "%s: window %p serves collectives only: Weft refused its one-sided part (%s)", fn,
                static_cast<void*>(win), out->oneSidedRefusal.c_str());
  }
  weftMemKind_t kind = weftMemHost;
  int device = -1;
  if (weftMemQuery(out->buff, &kind, &device) == weftSuccess && kind != weftMemHost) {
    return fail(ncclInvalidUsage,
                "%s: window %p is on %s memory; Weft's one-sided puts and signals reach pageable host memory only: "
                "register a host buffer, or use ncclSend / ncclRecv",
                fn, static_cast<void*>(win),
                kind == weftMemDevice    ? "device"
                : kind == weftMemManaged ? "managed"
                                         : "pinned");
  }
  return ncclSuccess;
}

}  // namespace

WEFT_NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
              int winFlags) {
  const char* fn = "ncclCommWindowRegister";
  if (win == nullptr) return fail(ncclInvalidArgument, "%s: win (the output window) is NULL", fn);
  *win = nullptr;
  if ((winFlags & ~kKnownWindowFlags) != 0) {
    return fail(ncclInvalidArgument, "%s: winFlags 0x%x has bits no NCCL_WIN_* flag defines (known: 0x%x)", fn,
                static_cast<unsigned>(winFlags), static_cast<unsigned>(kKnownWindowFlags));
  }
  auto w = std::make_unique<Window>();
  w->info.comm = toWeft(comm);
  w->info.buff = buff;
  w->info.size = size;
  w->info.flags = winFlags;
  // Weft checks comm, buff and size, and says what is wrong.
  ncclResult_t r = fromWeft(weftCommRegister(toWeft(comm), buff, size, &w->info.registration));
  if (r != ncclSuccess) return r;
  r = makeOneSided(&w->info);
  if (r != ncclSuccess) {
    (void)weftCommDeregister(toWeft(comm), w->info.registration);  // the failure's message stays
    return r;
  }
  *win = reinterpret_cast<ncclWindow_t>(w.get());
  WindowTable& t = windows();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.live[w.get()] = std::move(w);
  return ncclSuccess;
}

WEFT_NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  WindowInfo info;
  {
    WindowTable& t = windows();
    std::lock_guard<std::mutex> lock(t.mutex);
    if (!lookUp(t, comm, win, "ncclCommWindowDeregister", &info, true)) return ncclInvalidArgument;
  }
  // Collective (as in NCCL): every rank arrives before the Weft window goes.
  ncclResult_t r = info.window ? fromWeft(weftCommWindowDeregister(toWeft(comm), info.window)) : ncclSuccess;
  ncclResult_t d = fromWeft(weftCommDeregister(toWeft(comm), info.registration));
  return r != ncclSuccess ? r : d;
}

WEFT_NCCL_API(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win, void** outUserPtr) {
  if (outUserPtr == nullptr) return fail(ncclInvalidArgument, "ncclWinGetUserPtr: outUserPtr is NULL");
  WindowInfo info;
  if (!findWindow(comm, win, "ncclWinGetUserPtr", &info)) return ncclInvalidArgument;
  *outUserPtr = info.buff;
  return ncclSuccess;
}

// ---- One-sided puts and signals ------------------------------------------------------------

// ncclWaitSignalDesc_t passes to Weft as it is.
static_assert(sizeof(ncclWaitSignalDesc_t) == sizeof(weftWaitSignalDesc_t) &&
                  offsetof(ncclWaitSignalDesc_t, opCnt) == offsetof(weftWaitSignalDesc_t, opCnt) &&
                  offsetof(ncclWaitSignalDesc_t, peer) == offsetof(weftWaitSignalDesc_t, peer) &&
                  offsetof(ncclWaitSignalDesc_t, sigIdx) == offsetof(weftWaitSignalDesc_t, sigIdx) &&
                  offsetof(ncclWaitSignalDesc_t, ctx) == offsetof(weftWaitSignalDesc_t, ctx),
              "NCCL's and Weft's wait descriptors have one layout");

// Weft checks the peer, the signal and context numbers, the flags (0) and that the bytes lie
// inside the peer's window, and says which is wrong.
WEFT_NCCL_API(ncclResult_t, ncclPutSignal, const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
              ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
              cudaStream_t stream) {
  WindowInfo win;
  ncclResult_t r = oneSidedWindow(comm, peerWin, "ncclPutSignal", &win);
  if (r != ncclSuccess) return r;
  return fromWeft(weftPutSignal(localbuff, count, toWeft(datatype), peer, win.window, peerWinOffset, sigIdx, ctx, flags,
                                toWeft(comm), resolveStream(stream, localbuff)));
}

WEFT_NCCL_API(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
              cudaStream_t stream) {
  return fromWeft(weftSignal(peer, sigIdx, ctx, flags, toWeft(comm), resolveStream(stream, nullptr)));
}

WEFT_NCCL_API(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
              cudaStream_t stream) {
  return fromWeft(weftWaitSignal(nDesc, reinterpret_cast<const weftWaitSignalDesc_t*>(signalDescs), toWeft(comm),
                                 resolveStream(stream, nullptr)));
}

// ---- Memory statistics ------------------------------------------------------------------------

// ncclStatGpuMemSuspend and ncclStatGpuMemSuspended are Weft's weftStatMemHeld (the bytes
// weftCommSuspend releases: shared-memory FIFOs and scratch buffers, host memory, 0 while
// suspended) and weftStatMemSuspended. A host communicator (device -1) holds no GPU memory a
// suspend keeps (Persist 0, so Total is what a suspend releases); the GPU memory a device
// communicator holds is not reported by Weft's API, so Persist and Total are refused for it.
WEFT_NCCL_API(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) {
  const char* fn = "ncclCommMemStats";
  if (value == nullptr) return fail(ncclInvalidArgument, "%s: value is NULL", fn);
  if (stat < ncclStatGpuMemSuspend || stat > ncclStatGpuMemTotal) {
    return fail(ncclInvalidArgument, "%s: stat is %d; use one of ncclStatGpuMemSuspend (0) .. ncclStatGpuMemTotal (3)",
                fn, static_cast<int>(stat));
  }
  if (stat == ncclStatGpuMemSuspended) return fromWeft(weftCommMemStats(toWeft(comm), weftStatMemSuspended, value));
  int device = -1;
  ncclResult_t r = fromWeft(weftCommDevice(toWeft(comm), &device));
  if (r != ncclSuccess) return r;
  if (stat == ncclStatGpuMemPersist || stat == ncclStatGpuMemTotal) {
    if (device >= 0) {
      return fail(ncclInvalidUsage,
                  "%s: Weft's API does not report the GPU memory a device communicator holds (device %d); only "
                  "ncclStatGpuMemSuspend and ncclStatGpuMemSuspended are known",
                  fn, device);
    }
    if (stat == ncclStatGpuMemPersist) {
      *value = 0;
      return ncclSuccess;
    }
  }
  return fromWeft(weftCommMemStats(toWeft(comm), weftStatMemHeld, value));
}
