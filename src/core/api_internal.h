// What the files of the C API share (api.cc and the api_*.cc beside it): the C handle, the
// argument checks, error reporting and the group being recorded. Nothing outside src/core/api*
// includes it.
#ifndef WEFT_CORE_API_INTERNAL_H_
#define WEFT_CORE_API_INTERNAL_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "core/comm.h"
#include "weft/weft.h"

// The C handle: the communicator plus what the API layer tracks about it.
struct weftComm {
  std::unique_ptr<weft::core::Communicator> impl;
  int rank = -1;
  int nRanks = 0;
  // Non-blocking init: the thread doing it, and its result (weftInProgress until done).
  std::thread initThread;
  std::atomic<int> state{weftSuccess};
  // Set by weftCommAbort while an init may still run: the bootstrap gives up within ~0.1 s.
  std::atomic<bool> initAbort{false};
  std::mutex mutex;  // guards lastError, errorMessage and registrations
  std::string lastError;
  std::string errorMessage;  // the failure that put the communicator in its error state
  std::atomic<int> inFlight{0};
  // weftCommRegister's handles (the key is the handle), freed with the communicator.
  struct Registration {
    void* buff = nullptr;
    size_t size = 0;
  };
  std::map<void*, std::unique_ptr<Registration>> registrations;
};

namespace weft {
namespace core {
namespace capi {

extern thread_local std::string tlsLastError;

// Records a failure for weftGetLastError (on comm, when not null, and for this thread), logs it
// and returns its code.
weftResult_t report(weftComm* comm, const Status& status);
// The same, and the communicator enters its error state: later calls refuse to run.
weftResult_t reportFailure(weftComm* comm, const Status& status);
// A failed operation: reportFailure, unless the device path refused it before it did anything.
weftResult_t reportOpFailure(weftComm* comm, const Status& status);
// weftInvalidArgument with a printf text of one string and two integers.
Status invalid(const char* fmt, const char* a = "", long long b = 0, long long c = 0);

// The checks every call makes; each names `fn` and the rank in its message.
Status checkComm(weftComm* comm, const char* fn);
Status checkStream(weftComm* comm, weftStream_t stream, const char* fn);
Status checkDeviceBuffer(weftComm* comm, const void* buf, size_t bytes, const char* what, const char* fn);
Status checkTypeOp(weftComm* comm, weftDataType_t type, const weftRedOp_t* op, const char* fn);
Status checkBuffer(weftComm* comm, const void* buf, size_t count, const char* what, const char* fn);
Status checkCount(weftComm* comm, size_t count, size_t elemSize, size_t multiple, const char* fn);

// One call recorded for a group (or run at once outside one).
struct PendingOp {
  weftComm* comm = nullptr;
  weftStream_t stream = nullptr;  // non-null: device buffers, enqueued on this stream
  bool isP2p = false;
  CollCall coll;
  P2pCall p2p;
};

struct GroupState {
  int depth = 0;
  std::vector<PendingOp> ops;
  Status firstError;
};

extern thread_local GroupState tlsGroup;

// The bytes a collective reads from sendbuff and writes to recvbuff on a communicator of n ranks.
struct Extents {
  size_t send = 0;
  size_t recv = 0;
};
Extents extentsOf(const CollCall& c, size_t nRanks);

// Runs ops (all on one communicator) now as one group, or records them in the group being
// built: the calls of one API function that the group machinery runs together.
weftResult_t submitAll(weftComm* comm, const std::vector<PendingOp>& ops);

// weftCommInitRankConfig's work after nothing but its own checks: blocking, or (config->blocking
// == 0) on a thread that binds the caller's current GPU.
weftResult_t initRank(weftComm_t* out, int nranks, const weftUniqueId& id, int rank, weftConfig_t* config);

// A new C handle around a communicator that is ready.
weftComm* wrapCommunicator(std::unique_ptr<Communicator> impl);

}  // namespace capi
}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_API_INTERNAL_H_
