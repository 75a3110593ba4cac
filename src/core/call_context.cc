// The call context (call_context.h): the one error builder, the checks the C API calls share,
// and the error state behind weftGetLastError and weftCommGetAsyncError.
#include "core/call_context.h"

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "base/log.h"
#include "collectives/datatypes.h"
#include "core/group.h"
#include "device/device.h"

namespace weft {
namespace core {
namespace capi {

// ---- Error state ---------------------------------------------------------------------

thread_local std::string tlsLastError;

weftResult_t report(weftComm* comm, const Status& status) {
  const std::string& text = status.message();
  if (!status.trace().empty()) WEFT_LOG(kTrace, kInit, "error trace: %s", status.trace().c_str());
  WEFT_LOG(kWarn, kInit, "%s", text.c_str());
  if (comm) {
    std::lock_guard<std::mutex> lock(comm->mutex);
    comm->lastError = text;
  }
  tlsLastError = text;
  return status.code();
}

weftResult_t reportFailure(weftComm* comm, const Status& status) {
  {
    std::lock_guard<std::mutex> lock(comm->mutex);
    if (comm->errorMessage.empty()) comm->errorMessage = status.message();
  }
  int expected = weftSuccess;
  comm->state.compare_exchange_strong(expected, status.code());
  return report(comm, status);
}

// A graph capture that cannot set up a new collective shape refuses the call before it did
// anything: that leaves the communicator as it was.
weftResult_t reportOpFailure(weftComm* comm, const Status& status) {
  if (comm->impl && comm->impl->takeDeviceRefusal()) return report(comm, status);
  return reportFailure(comm, status);
}

weftComm* wrapCommunicator(std::unique_ptr<Communicator> impl) {
  auto* out = new weftComm();
  out->rank = impl->rank();
  out->nRanks = impl->nRanks();
  out->impl = std::move(impl);
  return out;
}

void freeComm(weftComm* comm) {
  if (comm->initThread.joinable()) comm->initThread.join();
  delete comm;
}

// ---- Building errors -----------------------------------------------------------------

std::string Call::prefix() const {
  std::string p = rank_ >= 0 ? "rank " + std::to_string(rank_) + ": " : std::string();
  return p + fn_ + ": ";
}

Status Call::error(weftResult_t code, const char* fmt, ...) const {
  va_list args;
  va_start(args, fmt);
  const std::string text = formatTextV(fmt, args);
  va_end(args);
  return Status::error(code, prefix() + text);
}

Status Call::wrap(Status s, const std::string& what) const { return std::move(s).withPrefix(prefix() + what + ": "); }

// ---- Checks --------------------------------------------------------------------------

Status Call::checkInitDone() const {
  if (comm_ == nullptr) return error(weftInvalidArgument, "comm is NULL; create one with weftCommInitRank first");
  if (comm_->state.load() == weftInProgress) {
    return error(weftInvalidUsage,
                 "the communicator is still initialising (non-blocking init); poll weftCommGetAsyncError until it "
                 "returns weftSuccess");
  }
  return Status::ok();
}

weftResult_t Call::refuse(const Status& s, bool collective) const {
  // Inside a group the group's other calls still run and take this call's number: no refusal
  // is published there. A communicator that is not usable has nothing to tell.
  // Nor one that is suspended: its calls are refused until resume, not for their arguments.
  if (!s.isOk() && groupDepth() == 0 && comm_ && comm_->impl && comm_->state.load() == weftSuccess &&
      !comm_->impl->aborted() && !comm_->impl->suspended()) {
    comm_->impl->publishRefusal(s, collective);
  }
  return finish(s);
}

Status Call::explainComm() const {
  WEFT_TRY(checkInitDone());
  if (comm_->impl != nullptr && comm_->impl->revoked()) {
    return error(weftInvalidUsage,
                 "refused: the communicator was revoked (weftCommRevoke); destroy it, or make a new one from it with "
                 "weftCommShrink or weftCommSplit");
  }
  if (comm_->impl != nullptr && comm_->impl->suspended()) {
    return error(weftInvalidUsage,
                 "refused: the communicator is suspended (weftCommSuspend); call weftCommResume on every rank first");
  }
  if (comm_->state.load() == weftSuccess && comm_->impl != nullptr && !comm_->impl->aborted()) return Status::ok();
  std::string why;
  {
    std::lock_guard<std::mutex> lock(comm_->mutex);
    why = comm_->errorMessage.empty() ? std::string("aborted") : comm_->errorMessage;
  }
  return error(weftInvalidUsage, "refused: the communicator is in an error state (%s); destroy it and create a new one",
               why.c_str());
}

Status Call::explainCall(weftStream_t stream, weftDataType_t type, const weftRedOp_t* op) const {
  WEFT_TRY(checkComm());
  WEFT_TRY(checkStream(stream));
  return checkTypeOp(type, op);
}

Status Call::checkOutput(const void* out, const char* what) const {
  return out == nullptr ? error(weftInvalidArgument, "%s is NULL", what) : Status::ok();
}

Status Call::explainStream(weftStream_t stream) const {
  if (stream == nullptr && comm_->impl->mixed() && comm_->impl->device() >= 0) {
    return error(weftInvalidUsage,
                 "stream is NULL (host buffers), but this rank is on GPU %d of a mixed communicator (ranks %s on GPUs, "
                 "ranks %s on host memory): its calls run on its GPU and need device buffers and a stream; host "
                 "buffers with stream NULL are for the host ranks (docs/gpus.md, Mixed communicators)",
                 comm_->impl->device(), comm_->impl->ranksOnGpus(true).c_str(),
                 comm_->impl->ranksOnGpus(false).c_str());
  }
  if (stream == nullptr) return Status::ok();
  if (device::gpuRuntime() == nullptr) {
    return error(weftInvalidArgument,
                 "a device stream was given but no GPU backend is loaded (WEFT_DEBUG=INFO says why); pass stream = "
                 "NULL for host memory");
  }
  if (comm_->impl->device() < 0) {
    return error(weftInvalidUsage,
                 "a device stream was given but no GPU was current when this communicator was created; call "
                 "cudaSetDevice / hipSetDevice before weftCommInitRank");
  }
  return Status::ok();
}

Status Call::explainTypeOp(weftDataType_t type, const weftRedOp_t* op) const {
  if (!coll::isValidDataType(static_cast<int>(type))) {
    return error(weftInvalidArgument, "datatype %d is not a weftDataType_t (0..11)", static_cast<int>(type));
  }
  if (op && static_cast<int>(*op) >= weftNumOps) return comm_->impl->checkRedOp(*op, type, fn_);
  if (op && !coll::isValidRedOp(static_cast<int>(*op))) {
    return error(weftInvalidArgument, "op %d is not a weftRedOp_t (0..4, or one made by weftRedOpCreatePreMulSum)",
                 static_cast<int>(*op));
  }
  return Status::ok();
}

Status Call::checkPeer(int peer, const char* what) const {
  if (peer >= 0 && peer < comm_->nRanks) return Status::ok();
  return error(weftInvalidArgument, "%s %d is not a rank of this communicator (0..%d)", what, peer, comm_->nRanks - 1);
}

// Reached when the ranges are neither apart nor exactly in place (checkOverlap).
Status Call::explainOverlap(const void* send, size_t sendBytes, const void* recv, size_t recvBytes) const {
  if (send == nullptr || recv == nullptr || sendBytes == 0 || recvBytes == 0) return Status::ok();
  return error(weftInvalidArgument,
               "sendbuff [%p, +%zu bytes) and recvbuff [%p, +%zu bytes) partially overlap; use separate buffers, "
               "or exactly the in-place layout weft.h documents for this call",
               send, sendBytes, recv, recvBytes);
}

Status Call::checkDeviceBuffer(const void* buf, size_t bytes, const char* what) const {
  if (buf == nullptr || bytes == 0) return Status::ok();
  device::PointerInfo info;
  Status s = device::gpuRuntime()->pointerInfo(buf, &info);
  if (!s.isOk()) return wrap(std::move(s), what);
  const int dev = comm_->impl->device();
  const bool ok = info.kind == device::MemoryKind::kManaged || info.kind == device::MemoryKind::kPinnedHost ||
                  (info.kind == device::MemoryKind::kDevice && info.device == dev);
  if (ok) return Status::ok();
  const std::string where = info.kind == device::MemoryKind::kDevice ? "memory of device " + std::to_string(info.device)
                                                                     : std::string("pageable host memory");
  return error(weftInvalidArgument,
               "%s (%zu bytes) is %s, but with a stream buffers must be on this rank's device %d (or managed / "
               "pinned host memory); pass stream = NULL for host buffers",
               what, bytes, where.c_str(), dev);
}

Status Call::checkDeviceAsync() const {
  Status async = comm_->impl->deviceAsyncError();
  if (async.isOk()) return Status::ok();
  reportFailure(comm_, async);
  return checkComm();
}

Status Call::checkConfig(const weftConfig_t* config) const {
  if (config && (config->magic != WEFT_CONFIG_MAGIC || config->size < offsetof(weftConfig_t, commName))) {
    return error(weftInvalidArgument, "config was not set up with WEFT_CONFIG_INITIALIZER");
  }
  return Status::ok();
}

}  // namespace capi
}  // namespace core
}  // namespace weft
