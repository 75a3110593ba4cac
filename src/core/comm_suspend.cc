// Communicator::suspend / resume (weftCommSuspend, weftCommResume): a communicator that keeps its
// ranks, bootstrap and liveness but gives back the memory its calls made: its shared-memory
// FIFOs (segments between ranks of one host), the plans cached over them, and the scratch and
// staging buffers. Calls made after resume reconnect as a communicator's first calls do.
// Connections whose ends meet through offers sent over the bootstrap (sockets, libfabric,
// network plugins) stay: an end made again would find its peer's first, stale offer (a
// receiving end offers itself whether or not its sender ever came). So do the device
// executor's FIFOs: the device path keeps views of them.
//
// Suspend is collective: a bootstrap barrier first, so that every rank finished its calls (a
// rank's receives are done when it enters, so every message sent to it was taken); a second one
// after the release, so that no rank reconnects (a sender attaching to its receiver's FIFO by
// name) before every rank removed its old FIFOs.
#include <utility>
#include <vector>

#include "base/log.h"
#include "core/comm.h"
#include "core/host_memory.h"

namespace weft {
namespace core {

Status Communicator::suspend() {
  if (devicePath_) WEFT_TRY(synchronizeDevice());  // device work may still read the host's buffers
  const Deadline deadline = Deadline::afterSeconds(settings_.timeoutS);
  Status s = bootstrap_->barrier(deadline);
  if (!s.isOk()) return fail(std::move(s).withPrefix("rank " + std::to_string(rank_) + ": weftCommSuspend: "));
  const uint64_t held = suspendableBytes();
  suspended_.store(true);
  releaseForSuspend();
  ++suspends_;
  s = bootstrap_->barrier(deadline);
  if (!s.isOk()) return fail(std::move(s).withPrefix("rank " + std::to_string(rank_) + ": weftCommSuspend: "));
  WEFT_LOG(kInfo, kInit, "rank %d: suspended (released %llu bytes of connections and buffers)", rank_,
           static_cast<unsigned long long>(held));
  return Status::ok();
}

Status Communicator::resume() {
  suspended_.store(false);
  WEFT_LOG(kInfo, kInit, "rank %d: resumed after suspend #%u; calls reconnect as they need", rank_, suspends_);
  return Status::ok();
}

void Communicator::releaseForSuspend() {
  connections_.releaseForSuspend();
  // Plans hold the connections they were bound to.
  ops_.clear();
  lastOp_ = nullptr;
  tokenLane_ = coll::Lane();
  tokenPlan_ = coll::ExecPlan();
  rootedRun_.clear();
  recvAnyConnected_ = false;
  std::vector<char>().swap(scratch_);
  std::vector<char>().swap(staging_);
  zeroCopyStage_.reset();
}

uint64_t Communicator::suspendableBytes() {
  uint64_t bytes = connections_.releasableBytes();
  bytes += scratch_.capacity() + staging_.capacity();
  if (zeroCopyStage_) bytes += zeroCopyStage_->bytes();
  return bytes;
}

}  // namespace core
}  // namespace weft
