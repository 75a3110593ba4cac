// libnccl.so.2: memory windows and a communicator's memory statistics.
//
// A window is a registration of Weft's (weftCommRegister): collectives on its range take Weft's
// registered zero-copy path, which is what NCCL's windows are for. Weft needs no symmetric
// layout, ordering or transport restriction, so the NCCL_WIN_* flags are accepted and change
// nothing. Windows live in a process-wide table: a stale, foreign or twice-deregistered
// ncclWindow_t is refused by lookup, never dereferenced.
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
  w->info = {toWeft(comm), buff, size, winFlags, nullptr};
  // Weft checks comm, buff and size, and says what is wrong.
  ncclResult_t r = fromWeft(weftCommRegister(toWeft(comm), buff, size, &w->info.registration));
  if (r != ncclSuccess) return r;
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
  return fromWeft(weftCommDeregister(toWeft(comm), info.registration));
}

WEFT_NCCL_API(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win, void** outUserPtr) {
  if (outUserPtr == nullptr) return fail(ncclInvalidArgument, "ncclWinGetUserPtr: outUserPtr is NULL");
  WindowInfo info;
  if (!findWindow(comm, win, "ncclWinGetUserPtr", &info)) return ncclInvalidArgument;
  *outUserPtr = info.buff;
  return ncclSuccess;
}

// What Weft can know through its API: a host communicator (device -1) allocates no GPU memory,
// so every statistic is 0. Weft cannot suspend a communicator, so nothing is suspendable and it
// is never suspended; the GPU memory a device communicator holds is not reported by Weft's API,
// so those two statistics are refused for it.
WEFT_NCCL_API(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) {
  const char* fn = "ncclCommMemStats";
  if (value == nullptr) return fail(ncclInvalidArgument, "%s: value is NULL", fn);
  if (stat < ncclStatGpuMemSuspend || stat > ncclStatGpuMemTotal) {
    return fail(ncclInvalidArgument, "%s: stat is %d; use one of ncclStatGpuMemSuspend (0) .. ncclStatGpuMemTotal (3)",
                fn, static_cast<int>(stat));
  }
  int device = -1;
  ncclResult_t r = fromWeft(weftCommDevice(toWeft(comm), &device));
  if (r != ncclSuccess) return r;
  if (device >= 0 && (stat == ncclStatGpuMemPersist || stat == ncclStatGpuMemTotal)) {
    return fail(ncclInvalidUsage,
                "%s: Weft's API does not report the GPU memory a device communicator holds (device %d); only "
                "ncclStatGpuMemSuspend and ncclStatGpuMemSuspended are known (both 0: Weft does not suspend)",
                fn, device);
  }
  *value = 0;
  return ncclSuccess;
}
