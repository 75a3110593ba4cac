// The shared machinery of libnccl.so.2 (shim.h): NCCL results from Weft's, the thread's last
// error, logging, ncclConfig_t read the way NCCL reads it, and the NULL-stream rule.
#include "shim.h"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

namespace weft::nccl {
namespace {

// The thread's last failure found by this library itself; ownIsLatest says whether it is newer
// than the last failure Weft reported (whose message weftGetLastError keeps).
thread_local std::string tOwnError;
thread_local bool tOwnIsLatest = false;

std::string vformat(const char* fmt, va_list ap) {
  char text[1024];
  std::vsnprintf(text, sizeof(text), fmt, ap);
  return text;
}

bool infoEnabled() {
  static const bool enabled = [] {
    for (const char* var : {"WEFT_DEBUG", "NCCL_DEBUG"}) {
      const char* v = std::getenv(var);
      if (v && (strcasecmp(v, "INFO") == 0 || strcasecmp(v, "TRACE") == 0)) return true;
    }
    return false;
  }();
  return enabled;
}

void emit(const std::string& text) {
  char host[64] = "?";
  gethostname(host, sizeof(host) - 1);
  std::fprintf(stderr, "%s:%d WEFT-NCCL INFO %s\n", host, static_cast<int>(getpid()), text.c_str());
}

}  // namespace

// ---- Results and errors ------------------------------------------------------------------

// weftTimeout -> ncclRemoteError, although NCCL 2.30 added ncclTimeout with Weft's value (8):
// a program built against an older nccl.h (PyTorch wheels are built against several) knows no
// code 8 and may treat it as a bug in the library. Weft times out when a peer is not heard from
// before the deadline (it died, hangs, or the network dropped it), and the communicator is then
// in its error state. That is what ncclRemoteError means to NCCL's callers ("remote process
// exited or there was a network error"): PyTorch aborts the communicator on it. ncclSystemError
// would point at a local OS call that did not fail.
ncclResult_t toNccl(weftResult_t r) {
  if (r >= weftSuccess && r <= weftInProgress) return static_cast<ncclResult_t>(r);
  if (r == weftTimeout) return ncclRemoteError;
  return ncclInternalError;
}

ncclResult_t fromWeft(weftResult_t r) {
  if (r != weftSuccess && r != weftInProgress) tOwnIsLatest = false;
  return toNccl(r);
}

ncclResult_t fail(ncclResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tOwnError = vformat(fmt, ap);
  va_end(ap);
  tOwnIsLatest = true;
  logInfo("%s", tOwnError.c_str());
  return code;
}

ncclResult_t notProvided(const char* fn, const char* instead) {
  return fail(ncclInvalidUsage, "%s: Weft does not provide this NCCL function yet; %s", fn, instead);
}

void noteAsyncError(const char* message) {
  tOwnError = message ? message : "";
  tOwnIsLatest = true;
}

// Like NCCL, the calling thread's latest failure, whatever comm is given; the communicator's
// own record is the fallback (a non-blocking init fails on Weft's thread, not the caller's).
const char* lastError(ncclComm_t comm) {
  if (tOwnIsLatest) return tOwnError.c_str();
  static thread_local std::string returned;
  returned = weftGetLastError(nullptr);  // copied: the next call reuses Weft's buffer
  if (returned.empty() && comm != nullptr) returned = weftGetLastError(toWeft(comm));
  return returned.c_str();
}

// ---- Logging -----------------------------------------------------------------------------

namespace {
void vlogInfo(const char* fmt, va_list ap) {
  if (infoEnabled()) emit(vformat(fmt, ap));
}
}  // namespace

void logInfo(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlogInfo(fmt, ap);
  va_end(ap);
}

void logInfoOnce(const char* key, const char* fmt, ...) {
  static std::mutex mutex;
  static std::set<std::string> seen;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!seen.insert(key).second) return;
  }
  va_list ap;
  va_start(ap, fmt);
  vlogInfo(fmt, ap);
  va_end(ap);
}

// ---- ncclConfig_t --------------------------------------------------------------------------

namespace {

// Each field after the header: where it is, and the NCCL version that added it. A caller built
// against an older header passes an older `version`; fields it predates are unset, as in NCCL.
struct ConfigField {
  const char* name;
  size_t offset;
  bool isPointer;
  int since;
  bool translated;  // false: Weft has no equivalent; ignored (logged once when set)
};

const ConfigField kConfigFields[] = {
    {"blocking", offsetof(ncclConfig_t, blocking), false, 21400, true},
    {"cgaClusterSize", offsetof(ncclConfig_t, cgaClusterSize), false, 21700, false},
    {"minCTAs", offsetof(ncclConfig_t, minCTAs), false, 21700, true},
    {"maxCTAs", offsetof(ncclConfig_t, maxCTAs), false, 21700, true},
    {"netName", offsetof(ncclConfig_t, netName), true, 21700, false},
    {"splitShare", offsetof(ncclConfig_t, splitShare), false, 21800, false},
    {"trafficClass", offsetof(ncclConfig_t, trafficClass), false, 22400, false},
    {"commName", offsetof(ncclConfig_t, commName), true, 22700, true},
    {"collnetEnable", offsetof(ncclConfig_t, collnetEnable), false, 22700, false},
    {"CTAPolicy", offsetof(ncclConfig_t, CTAPolicy), false, 22700, false},
    {"shrinkShare", offsetof(ncclConfig_t, shrinkShare), false, 22700, false},
    {"nvlsCTAs", offsetof(ncclConfig_t, nvlsCTAs), false, 22700, false},
    {"nChannelsPerNetPeer", offsetof(ncclConfig_t, nChannelsPerNetPeer), false, 22800, false},
    {"nvlinkCentricSched", offsetof(ncclConfig_t, nvlinkCentricSched), false, 22800, false},
    {"graphUsageMode", offsetof(ncclConfig_t, graphUsageMode), false, 23100, false},
    {"numRmaCtx", offsetof(ncclConfig_t, numRmaCtx), false, 23100, false},
    {"maxP2pPeers", offsetof(ncclConfig_t, maxP2pPeers), false, 23100, false},
    {"graphStreamOrdering", offsetof(ncclConfig_t, graphStreamOrdering), false, 23100, false},
    {"launchOrderImplicit", offsetof(ncclConfig_t, launchOrderImplicit), false, 23100, false},
    {"numRmaSig", offsetof(ncclConfig_t, numRmaSig), false, 23100, false},
    {"rmaEagerInit", offsetof(ncclConfig_t, rmaEagerInit), false, 23100, false},
    {"hostCftMode", offsetof(ncclConfig_t, hostCftMode), false, 23100, false},
    {"nvlsHostMode", offsetof(ncclConfig_t, nvlsHostMode), false, 23100, false},
};

int* intAt(ncclConfig_t* c, size_t offset) { return reinterpret_cast<int*>(reinterpret_cast<char*>(c) + offset); }
const char** ptrAt(ncclConfig_t* c, size_t offset) {
  return reinterpret_cast<const char**>(reinterpret_cast<char*>(c) + offset);
}

// NCCL_COMM_BLOCKING is how NCCL users pick the default of an unset `blocking`.
int defaultBlocking() {
  const char* v = std::getenv("NCCL_COMM_BLOCKING");
  return (v && std::atoi(v) == 0 && v[0] == '0') ? 0 : 1;
}

// The header: the magic NCCL_CONFIG_INITIALIZER writes, and a size that covers it.
ncclResult_t checkConfigHeader(const ncclConfig_t* config, const char* fn) {
  if (config->magic != WEFT_NCCL_CONFIG_MAGIC) {
    return fail(ncclInvalidArgument,
                "%s: config->magic is 0x%x, not 0xcafebeef: the ncclConfig_t was not initialised; start "
                "from NCCL_CONFIG_INITIALIZER",
                fn, config->magic);
  }
  if (config->size < offsetof(ncclConfig_t, blocking)) {
    return fail(ncclInvalidArgument,
                "%s: config->size is %zu, smaller than the ncclConfig_t header; start from "
                "NCCL_CONFIG_INITIALIZER",
                fn, config->size);
  }
  return ncclSuccess;
}

// What the caller wrote (a newer caller's struct may be larger: its tail is not ours), with the
// fields its size or version does not reach unset (INT_MIN, nullptr); set fields Weft ignores
// are logged once.
ncclConfig_t readConfigFields(const ncclConfig_t* config) {
  ncclConfig_t c;
  std::memset(&c, 0, sizeof(c));
  std::memcpy(&c, config, std::min(config->size, sizeof(c)));
  const size_t written = std::min(config->size, sizeof(c));
  for (const ConfigField& f : kConfigFields) {
    size_t end = f.offset + (f.isPointer ? sizeof(void*) : sizeof(int));
    bool unset = end > written || c.version < static_cast<unsigned>(f.since);
    if (f.isPointer) {
      if (unset) *ptrAt(&c, f.offset) = nullptr;
      if (!f.translated && *ptrAt(&c, f.offset) != nullptr) {
        logInfoOnce(f.name, "ncclConfig_t.%s = \"%s\" has no Weft equivalent; ignored", f.name, *ptrAt(&c, f.offset));
      }
    } else {
      if (unset) *intAt(&c, f.offset) = INT_MIN;
      if (!f.translated && *intAt(&c, f.offset) != INT_MIN) {
        logInfoOnce(f.name, "ncclConfig_t.%s = %d has no Weft equivalent; ignored", f.name, *intAt(&c, f.offset));
      }
    }
  }
  return c;
}

// The values NCCL would refuse, refused with its words.
ncclResult_t checkConfigValues(const ncclConfig_t& c, const char* fn) {
  if (c.blocking != INT_MIN && c.blocking != 0 && c.blocking != 1) {
    return fail(ncclInvalidArgument, "%s: config->blocking is %d; it must be 0 or 1", fn, c.blocking);
  }
  for (int v : {c.minCTAs, c.maxCTAs}) {
    if (v != INT_MIN && v <= 0) {
      return fail(ncclInvalidArgument, "%s: config->minCTAs / maxCTAs is %d; it must be positive", fn, v);
    }
  }
  if (c.minCTAs != INT_MIN && c.maxCTAs != INT_MIN && c.minCTAs > c.maxCTAs) {
    return fail(ncclInvalidArgument, "%s: config->minCTAs (%d) is larger than config->maxCTAs (%d)", fn, c.minCTAs,
                c.maxCTAs);
  }
  // Ignored, but a value NCCL would refuse is refused here too (a typo should not pass silently).
  if (c.hostCftMode != INT_MIN && (c.hostCftMode < ncclHostCftEnable || c.hostCftMode > ncclHostCftFallback)) {
    return fail(ncclInvalidArgument,
                "%s: config->hostCftMode is %d; use ncclHostCftEnable (1), ncclHostCftDisable (2), "
                "ncclHostCftFallback (3) or leave it unset",
                fn, c.hostCftMode);
  }
  const int nvlsBits = ncclNvlsHostModeDisableTransport | ncclNvlsHostModeDisableSymmetricMultimem;
  if (c.nvlsHostMode != INT_MIN && c.nvlsHostMode != INT_MAX && (c.nvlsHostMode & ~nvlsBits) != 0) {
    return fail(ncclInvalidArgument,
                "%s: config->nvlsHostMode is 0x%x; it must be a combination of the ncclNvlsHostMode* bits "
                "(0x%x), ncclNvlsHostModeDisable, or unset",
                fn, static_cast<unsigned>(c.nvlsHostMode), static_cast<unsigned>(nvlsBits));
  }
  return ncclSuccess;
}

}  // namespace

TranslatedConfig translateConfig(const ncclConfig_t* config, const char* fn) {
  TranslatedConfig t;
  t.weft.blocking = defaultBlocking();
  if (config == nullptr) return t;
  t.present = true;
  auto invalid = [&](ncclResult_t code) {
    t.ok = false;
    t.error = code;
    return t;
  };
  if (ncclResult_t rc = checkConfigHeader(config, fn); rc != ncclSuccess) return invalid(rc);
  const ncclConfig_t c = readConfigFields(config);
  if (ncclResult_t rc = checkConfigValues(c, fn); rc != ncclSuccess) return invalid(rc);
  t.weft.blocking = c.blocking == INT_MIN ? defaultBlocking() : c.blocking;
  t.weft.minChannels = c.minCTAs == INT_MIN ? 0 : c.minCTAs;
  t.weft.maxChannels = c.maxCTAs == INT_MIN ? 0 : c.maxCTAs;
  t.weft.commName = c.commName;
  return t;
}

// ---- Streams -------------------------------------------------------------------------------

namespace {

// True when p is memory a GPU runtime knows (device, managed or pinned host memory): NCCL's NULL
// stream then means the current device's default stream. Pageable host memory takes Weft's host
// path (the extension that lets NCCL-API programs run on CPU-only machines). weftMemQuery answers
// weftMemHost for any pointer no runtime knows, so a failed query can only be a NULL argument.
bool needsDevice(const void* p) {
  if (p == nullptr) return false;
  weftMemKind_t kind = weftMemHost;
  int device = -1;
  if (weftMemQuery(p, &kind, &device) != weftSuccess) return false;
  return kind != weftMemHost;
}

}  // namespace

weftStream_t resolveStream(cudaStream_t stream, const void* a, const void* b) {
  if (stream != nullptr) return reinterpret_cast<weftStream_t>(stream);
  return (needsDevice(a) || needsDevice(b)) ? WEFT_STREAM_DEFAULT : nullptr;
}

}  // namespace weft::nccl
