// What the files of the C API share: the C handle, the guard that marks a call in flight on it,
// and the error state (weftGetLastError's text, the communicator's error state). The C entry
// points are in api.cc; each job has its file: call_context.{h,cc} (argument checks, the one
// way to build an error), group.{h,cc} (groups and fusion), init.cc (every init), and
// api_collectives.cc, api_gather_scatter.cc, api_lifecycle.cc, api_memory.cc, api_group_sim.cc.
// Nothing outside src/core/ includes it.
#ifndef WEFT_CORE_API_INTERNAL_H_
#define WEFT_CORE_API_INTERNAL_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"
#include "core/comm.h"
#include "weft/weft.h"

struct weftComm;

// The C handle of a one-sided window (api_window.cc): which communicator made it, and its number
// there. The communicator owns it (freed with it, or by weftCommWindowDeregister).
struct weftWindow {
  weftComm* comm = nullptr;
  uint32_t id = 0;
};

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
  std::mutex mutex;  // guards lastError, errorMessage, registrations and windows
  std::string lastError;
  std::string errorMessage;  // the failure that put the communicator in its error state
  // Calls running on the communicator now (see InFlight): weftCommAbort waits for none.
  std::atomic<int> inFlight{0};
  // weftCommRegister's handles (the key is the handle), freed with the communicator.
  struct Registration {
    void* buff = nullptr;
    size_t size = 0;
  };
  std::map<void*, std::unique_ptr<Registration>> registrations;
  // weftCommWindowRegister's handles (the key is the handle), freed with the communicator.
  std::map<weftWindow*, std::unique_ptr<weftWindow>> windows;
};

namespace weft {
namespace core {
namespace capi {

// Marks a call running on comm for its scope. weftCommAbort frees the communicator as soon as
// nothing is in flight, so a failure must be recorded (report*) while the guard still lives:
// compute the result inside its scope, e.g. `return s.isOk() ? weftSuccess : reportOpFailure(..)`.
class InFlight {
 public:
  explicit InFlight(weftComm* comm) : comm_(comm) { comm_->inFlight.fetch_add(1); }
  ~InFlight() { comm_->inFlight.fetch_sub(1); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  weftComm* comm_;
};

// weftGetLastError(NULL)'s text on this thread.
extern thread_local std::string tlsLastError;

// Records a failure for weftGetLastError (on comm, when not null, and for this thread), logs it
// and returns its code.
weftResult_t report(weftComm* comm, const Status& status);
// The same, and the communicator enters its error state: later calls refuse to run.
weftResult_t reportFailure(weftComm* comm, const Status& status);
// A failed operation: reportFailure, unless the device path refused it before it did anything.
weftResult_t reportOpFailure(weftComm* comm, const Status& status);

// A new C handle around a communicator that is ready.
weftComm* wrapCommunicator(std::unique_ptr<Communicator> impl);
// Frees a handle (joining a non-blocking init first).
void freeComm(weftComm* comm);

}  // namespace capi
}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_API_INTERNAL_H_
