// What the entry points of libnccl.so.2 share: the export macro, result mapping, the calling
// thread's own error message, config translation and NCCL's stream rule. Built on weft.h only.
#ifndef WEFT_BINDINGS_NCCL_SHIM_H_
#define WEFT_BINDINGS_NCCL_SHIM_H_

#include <string>

#include "nccl.h"
#include "weft/weft.h"

// Defines ncclX as a weak symbol and pncclX as a global alias at the same address, the way
// NCCL's own library exports them (a profiler defines ncclX and forwards to pncclX).
#define WEFT_NCCL_API(ret, name, ...)                                                       \
  extern "C" __attribute__((visibility("default"), alias(#name))) ret p##name(__VA_ARGS__); \
  extern "C" __attribute__((visibility("default"), weak)) ret name(__VA_ARGS__)

namespace weft::nccl {

// Weft's result in NCCL's terms. weftTimeout becomes ncclRemoteError (shim.cc says why). A Weft failure makes Weft's
// own message the one ncclGetLastError returns.
ncclResult_t fromWeft(weftResult_t r);
// The same mapping with no side effect (for results reported, not returned).
ncclResult_t toNccl(weftResult_t r);

// Fails with a message of this library's own (a check Weft does not make, e.g. a bad ncclConfig_t);
// ncclGetLastError returns it until the next failure.
ncclResult_t fail(ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Records an error found by polling (ncclCommGetAsyncError) so that ncclGetLastError(NULL)
// returns it, as PyTorch expects.
void noteAsyncError(const char* message);
// Refuses an NCCL function Weft does not provide: ncclInvalidUsage, and a message that names fn
// and says what to use instead.
ncclResult_t notProvided(const char* fn, const char* instead);
const char* lastError(ncclComm_t comm);

// Logging of this library, to stderr, when NCCL_DEBUG or WEFT_DEBUG asks for INFO or more.
void logInfo(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Logs a message once per process for each distinct key.
void logInfoOnce(const char* key, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// An ncclConfig_t read the way NCCL reads it, translated. ok == false: message already recorded.
struct TranslatedConfig {
  weftConfig_t weft = WEFT_CONFIG_INITIALIZER;
  bool present = false;  // false: the caller passed NULL (weft still holds the defaults)
  bool ok = true;
  ncclResult_t error = ncclSuccess;
};
TranslatedConfig translateConfig(const ncclConfig_t* config, const char* fn);
// The weftConfig_t* to pass on: NULL when the caller passed none.
inline weftConfig_t* weftConfigOf(TranslatedConfig& t) { return t.present ? &t.weft : nullptr; }

// A window of ncclCommWindowRegister (api_window.cc): a window of Weft's on comm (what
// ncclPutSignal writes) and a registration of the same range (what collectives on it use).
struct WindowInfo {
  weftComm_t comm = nullptr;
  void* buff = nullptr;
  size_t size = 0;
  int flags = 0;
  void* registration = nullptr;   // weftCommRegister's handle
  weftWindow_t window = nullptr;  // weftCommWindowRegister's; NULL: collectives only (oneSidedRefusal says why)
  std::string oneSidedRefusal;
};
// Looks win up in the table of live windows (a stale or foreign handle is refused, never read).
// false: ncclInvalidArgument, with the message recorded.
bool findWindow(ncclComm_t comm, ncclWindow_t win, const char* fn, WindowInfo* out);
// Drops comm's windows (Weft frees their registrations with the communicator).
void forgetWindows(ncclComm_t comm);

// NCCL's NULL stream is the current device's default stream; Weft's NULL stream means host
// memory. For a NULL stream: host buffers run Weft's host path (an extension: NCCL programs run
// on machines without GPUs), anything else goes to WEFT_STREAM_DEFAULT. Other streams pass.
weftStream_t resolveStream(cudaStream_t stream, const void* a, const void* b = nullptr);

inline weftComm_t toWeft(ncclComm_t comm) { return reinterpret_cast<weftComm_t>(comm); }
inline ncclComm_t toNccl(weftComm_t comm) { return reinterpret_cast<ncclComm_t>(comm); }
inline weftDataType_t toWeft(ncclDataType_t t) { return static_cast<weftDataType_t>(t); }
inline weftRedOp_t toWeft(ncclRedOp_t op) { return static_cast<weftRedOp_t>(op); }
static_assert(sizeof(ncclUniqueId) == sizeof(weftUniqueId), "both ids are 128 opaque bytes");
inline weftUniqueId* toWeft(ncclUniqueId* id) { return reinterpret_cast<weftUniqueId*>(id); }
inline const weftUniqueId* toWeft(const ncclUniqueId* id) { return reinterpret_cast<const weftUniqueId*>(id); }

// Groups. Communicators created inside ncclGroupStart/End (one thread may drive several ranks)
// are started at the call and completed by the outermost ncclGroupEnd (group.cc).
int groupDepth();
void groupEnter();
// Leaves one level; true when this was the outermost.
bool groupLeave();
// An init started non-blocking; callerBlocking: ncclGroupEnd waits for it.
void deferInit(weftComm_t comm, bool callerBlocking);
// A split run on its own thread (Weft's split blocks until every member joins).
void deferSplit(weftComm_t comm, int color, int key, weftComm_t* newcomm, const TranslatedConfig& config);
// Completes what the group started: the first failure, ncclInProgress while a non-blocking
// init is still running, else ncclSuccess.
ncclResult_t completeDeferred();

}  // namespace weft::nccl

#endif  // WEFT_BINDINGS_NCCL_SHIM_H_
