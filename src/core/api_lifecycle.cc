// A communicator's life after its init: split and shrink (the hand-off to Communicator::split
// and Communicator::shrink, comm_shrink.cc), finalize, destroy, abort, its error state and
// queries; and the calls that need no communicator (version, error strings).
#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/api_entry.h"
#include "core/call_context.h"
#include "core/group.h"

namespace weft {
namespace core {
namespace capi {
namespace {

// The excluded list: ranks of the communicator, not this one, no repeats. `excluded` gets it
// sorted.
Status checkExcluded(const Call& call, const int* excludeRanks, int nExclude, std::vector<int>* excluded) {
  weftComm* comm = call.comm();
  if (nExclude < 0 || (nExclude > 0 && excludeRanks == nullptr)) {
    return call.error(weftInvalidArgument, "nExclude is %d with excludeRanks %s", nExclude,
                      excludeRanks ? "given" : "NULL");
  }
  if (nExclude >= comm->nRanks) {
    return call.error(weftInvalidArgument,
                      "excluding %d of %d ranks leaves no communicator; at least one rank must remain", nExclude,
                      comm->nRanks);
  }
  excluded->assign(excludeRanks, excludeRanks + nExclude);
  for (int i = 0; i < nExclude; ++i) {
    const int r = excludeRanks[i];
    if (r < 0 || r >= comm->nRanks) {
      return call.error(weftInvalidArgument, "excludeRanks[%d] = %d is not a rank of this communicator (0..%d)", i, r,
                        comm->nRanks - 1);
    }
    if (r == comm->rank) {
      return call.error(weftInvalidArgument,
                        "excludeRanks[%d] is this rank itself; an excluded rank does not call weftCommShrink (it "
                        "destroys or aborts its communicator instead)",
                        i);
    }
  }
  std::sort(excluded->begin(), excluded->end());
  auto dup = std::adjacent_find(excluded->begin(), excluded->end());
  if (dup != excluded->end()) {
    return call.error(weftInvalidArgument, "rank %d is listed twice in excludeRanks", *dup);
  }
  return Status::ok();
}

// Unlike other calls, shrink runs on a communicator in its error state: shrinking away a rank
// that failed is what it is for.
Status checkShrinkArgs(const Call& call, const int* excludeRanks, int nExclude, weftComm_t* newcomm,
                       const weftConfig_t* config, int flags, std::vector<int>* excluded) {
  WEFT_TRY(call.checkInitDone());
  if (call.comm()->impl == nullptr) {
    return call.error(weftInvalidUsage, "the communicator's init failed; create a new one");
  }
  WEFT_TRY(call.checkOutput(newcomm, "newcomm"));
  if (flags != WEFT_SHRINK_DEFAULT && flags != WEFT_SHRINK_ABORT) {
    return call.error(weftInvalidArgument, "shrinkFlags is %d; use WEFT_SHRINK_DEFAULT (0) or WEFT_SHRINK_ABORT (1)",
                      flags);
  }
  WEFT_TRY(checkExcluded(call, excludeRanks, nExclude, excluded));
  return call.checkConfig(config);
}

}  // namespace

weftResult_t commSplit(const Call& call, int color, int key, weftComm_t* newcomm, weftConfig_t* config) {
  // A revoked communicator still splits: its bootstrap works (weftCommRevoke).
  const bool revoked = call.comm() && call.comm()->impl && call.comm()->impl->revoked();
  Status s = revoked ? call.checkInitDone() : call.checkComm();
  if (s.isOk()) s = call.checkOutput(newcomm, "newcomm");
  if (s.isOk() && color < 0 && color != WEFT_SPLIT_NOCOLOR) {
    s = call.error(weftInvalidArgument, "color %d is negative; use WEFT_SPLIT_NOCOLOR to opt out", color);
  }
  if (!s.isOk()) return call.finish(s);
  weftComm* comm = call.comm();
  *newcomm = nullptr;
  std::unique_ptr<Communicator> impl;
  {
    InFlight inFlight(comm);
    s = comm->impl->split(color, key, config, &impl);
    if (!s.isOk()) return reportFailure(comm, s);
  }
  if (impl) *newcomm = wrapCommunicator(std::move(impl));
  return weftSuccess;
}

weftResult_t commShrink(const Call& call, const int* excludeRanks, int nExclude, weftComm_t* newcomm,
                        weftConfig_t* config, int flags) {
  std::vector<int> excluded;
  Status s = checkShrinkArgs(call, excludeRanks, nExclude, newcomm, config, flags, &excluded);
  if (!s.isOk()) return call.finish(s);
  weftComm* comm = call.comm();
  *newcomm = nullptr;
  std::unique_ptr<Communicator> impl;
  {
    InFlight inFlight(comm);
    s = comm->impl->shrink(excluded, config, flags == WEFT_SHRINK_ABORT, &impl);
    // A failed shrink leaves the parent as it was (in its error state only if it was).
    if (!s.isOk()) return report(comm, s);
  }
  *newcomm = wrapCommunicator(std::move(impl));
  return weftSuccess;
}

weftResult_t commFinalize(const Call& call) {
  weftComm* comm = call.comm();
  Status s = call.checkOutput(comm, "comm");
  if (s.isOk() && comm->impl && comm->impl->revoked()) {
    s = call.error(weftInvalidUsage,
                   "refused: the communicator was revoked (weftCommRevoke), which stopped its work; there is nothing "
                   "to finalize: call weftCommDestroy");
  }
  if (!s.isOk()) return call.finish(s);
  // Host-memory calls complete before they return; device work may still be queued.
  if (comm->initThread.joinable()) comm->initThread.join();
  if (comm->impl) {
    s = comm->impl->synchronizeDevice();
    if (s.isOk()) s = comm->impl->deviceAsyncError();
    if (!s.isOk()) return reportFailure(comm, s);
  }
  return weftSuccess;
}

weftResult_t commDestroy(const Call& call) {
  Status s = call.checkOutput(call.comm(), "comm");
  if (!s.isOk()) return call.finish(s);
  // weftGroupEnd would run the recorded calls on a freed communicator.
  if (const size_t n = recordedCallsOn(call.comm())) {
    return call.finish(call.error(weftInvalidUsage,
                                  "refused: the group open on this thread holds %zu call(s) on this communicator; "
                                  "call weftGroupEnd first, or weftCommAbort to drop them",
                                  n));
  }
  // Calls that a revoke released on other threads leave within milliseconds.
  weftComm* comm = call.comm();
  if (comm->impl && comm->impl->revoked()) {
    while (comm->inFlight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  freeComm(comm);
  return weftSuccess;
}

weftResult_t commAbort(const Call& call) {
  weftComm* comm = call.comm();
  Status s = call.checkOutput(comm, "comm");
  if (!s.isOk()) return call.finish(s);
  if (comm->initThread.joinable()) {
    // A non-blocking init may still be running: its bootstrap sees initAbort within ~0.1 s.
    comm->initAbort.store(true);
    comm->initThread.join();
  }
  if (comm->impl) comm->impl->abort();
  // Calls recorded in this thread's open group must not run on the freed communicator.
  forgetCallsOn(comm);
  // Calls in flight on other threads see the abort within milliseconds; wait for them to leave.
  while (comm->inFlight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  freeComm(comm);
  return weftSuccess;
}

weftResult_t commGetAsyncError(const Call& call, weftResult_t* asyncError) {
  weftComm* comm = call.comm();
  if (comm == nullptr || asyncError == nullptr) {
    return call.finish(call.error(weftInvalidArgument, "comm or asyncError is NULL"));
  }
  // Revoked: in progress until the calls it stopped have left, then done (NCCL's ncclCommRevoke).
  if (comm->impl && comm->impl->revoked()) {
    *asyncError = comm->inFlight.load() > 0 ? weftInProgress : weftSuccess;
    return weftSuccess;
  }
  if (comm->state.load() == weftSuccess && comm->impl) {
    Status s = comm->impl->deviceAsyncError();
    if (!s.isOk()) reportFailure(comm, s);
  }
  *asyncError = static_cast<weftResult_t>(comm->state.load());
  return weftSuccess;
}

weftResult_t commSetTimeout(const Call& call, int seconds) {
  weftComm* comm = call.comm();
  if (comm == nullptr) return call.finish(call.error(weftInvalidArgument, "comm is NULL"));
  if (seconds <= 0) {
    return call.finish(call.error(weftInvalidArgument,
                                  "the timeout must be a positive number of seconds (got %d); to wait "
                                  "longer, pass a larger value",
                                  seconds));
  }
  if (!comm->impl) {
    return call.finish(call.error(weftInvalidUsage,
                                  "the communicator has not finished its init; set the timeout "
                                  "in weftConfig_t.timeoutS, or after init completes"));
  }
  comm->impl->requestTimeout(seconds);
  return weftSuccess;
}

weftResult_t commQuery(const Call& call, int* out, const char* what, int (*get)(const weftComm*)) {
  if (call.comm() == nullptr || out == nullptr) {
    return call.finish(call.error(weftInvalidArgument, "comm or %s is NULL", what));
  }
  *out = get(call.comm());
  return weftSuccess;
}

weftResult_t commDumpRecorder(const Call& call) {
  weftComm* comm = call.comm();
  if (comm == nullptr) return call.finish(call.error(weftInvalidArgument, "comm is NULL"));
  if (!comm->impl) {
    return call.finish(call.error(weftInvalidUsage, "the communicator has not finished its init; dump its "
                                                    "flight recorder once init completes"));
  }
  std::string path;
  Status s = comm->impl->dumpRecorder(&path);
  if (!s.isOk()) return call.finish(s);
  return weftSuccess;
}

weftResult_t getVersion(int* version) {
  Call call(nullptr, "weftGetVersion");
  Status s = call.checkOutput(version, "version");
  if (!s.isOk()) return call.finish(s);
  *version = WEFT_VERSION_CODE;
  return weftSuccess;
}

const char* errorString(weftResult_t result) {
  switch (result) {
    case weftSuccess:
      return "no error";
    case weftUnhandledDeviceError:
      return "unhandled device (CUDA/HIP) error";
    case weftSystemError:
      return "system error (sockets, shared memory, processes)";
    case weftInternalError:
      return "internal error (a bug in Weft; please report it)";
    case weftInvalidArgument:
      return "invalid argument";
    case weftInvalidUsage:
      return "invalid usage";
    case weftRemoteError:
      return "remote error (another rank failed or went away)";
    case weftInProgress:
      return "operation in progress";
    case weftTimeout:
      return "timeout";
    default:
      return "unknown result code";
  }
}

const char* lastError(weftComm* comm) {
  if (comm == nullptr) return tlsLastError.c_str();
  // The string lives in the communicator; copy it to thread-local storage so that a concurrent
  // error on another thread cannot change it under the caller.
  {
    std::lock_guard<std::mutex> lock(comm->mutex);
    tlsLastError = comm->lastError;
  }
  return tlsLastError.c_str();
}

}  // namespace capi
}  // namespace core
}  // namespace weft
