// ProcessGroupWeft: torch.distributed's backend "weft", on Weft's public API (weft.h) only.
//
// torch 1.13 loads third-party backends as c10d::ProcessGroup subclasses, torch 2.x as
// c10d::Backend subclasses with the same method signatures; one source serves both through
// BackendBase. The creator (create(), called by weft_torch's Python registration) bootstraps
// the communicator through torch's store: rank 0 makes the unique id and sets it, the others
// get it. Every collective checks its arguments on the calling thread (wrong dtype or op raises
// at the call), then hands a Call to the group's worker (work_queue.h) and returns its Work.
#pragma once

#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <utility>
#include <vector>

#include "tensor_types.h"
#include "weft/weft.h"
#include "work_queue.h"

// torch 1.13 and 2.0 coalesce batch_isend_irecv through startCoalescing/endCoalescing(reqs); 2.1
// changed it to startCoalescing()/endCoalescing() -> one Work for the whole batch.
#if TORCH_VERSION_MAJOR < 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR == 0)
#define WEFT_TORCH_COALESCING_REQS 1
#else
#define WEFT_TORCH_COALESCING_WORK 1
#endif
// torch 2.x's Backend: options, split, shrink, abort/shutdown, getError, setTimeout (2.3 and up
// have them all; the backend is built and tested against 2.15).
#if TORCH_VERSION_MAJOR >= 2
#define WEFT_TORCH_BACKEND_API 1
#endif

namespace weft_torch {

#if TORCH_VERSION_MAJOR >= 2
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

// What a user may set for a "weft" group: init_process_group("weft", pg_options=weft_torch.Options(...))
// (torch 2.x), new_group(..., pg_options=...). Fields a user leaves at 0 / empty take Weft's
// parameters (WEFT_MIN_CHANNELS, ...); the timeout is the group's (init_process_group's timeout=).
#ifdef WEFT_TORCH_BACKEND_API
struct WeftOptions : c10d::Backend::Options {
  explicit WeftOptions(std::chrono::milliseconds t = ::kBackendDefaultTimeout) : c10d::Backend::Options("weft", t) {}
  c10::intrusive_ptr<c10d::Backend::Options> clone() const override { return c10::make_intrusive<WeftOptions>(*this); }
#else
struct WeftOptions : c10::intrusive_ptr_target {
  explicit WeftOptions(std::chrono::milliseconds t = std::chrono::milliseconds(1800 * 1000)) : timeout(t) {}
  std::chrono::milliseconds timeout;
#endif
  int minChannels = 0;
  int maxChannels = 0;
  std::string commName;  // shown in Weft's log lines and errors; empty: "torch.distributed"
};

class ProcessGroupWeft : public BackendBase {
 public:
  // Joins a new communicator through `store` (rank 0 makes the unique id).
  ProcessGroupWeft(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   c10::intrusive_ptr<WeftOptions> options);
  // Wraps a communicator made from another (shrink): this group owns it.
  ProcessGroupWeft(weftComm_t comm, const c10::intrusive_ptr<c10d::Store>& store,
                   c10::intrusive_ptr<WeftOptions> options);
  ~ProcessGroupWeft() override;

  // The creators torch's register_backend calls: (prefix store, rank, size, timeout), or with
  // extended_api (torch's DistributedBackendOptions: store, group_rank, group_size, timeout, ...)
  // and the user's pg_options.
  static c10::intrusive_ptr<BackendBase> create(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                std::chrono::duration<float> timeout);
  static c10::intrusive_ptr<BackendBase> createWithOptions(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                           int size, std::chrono::milliseconds timeout,
                                                           const c10::intrusive_ptr<WeftOptions>& options);

  const std::string getBackendName() const override { return "weft"; }
  weftComm_t comm() const { return comm_; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts = c10d::AllreduceCoalescedOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                           std::vector<at::Tensor>& inputTensors,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor& outputBuffer, at::Tensor& inputBuffer,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                        std::vector<at::Tensor>& inputTensors,
                                        const c10d::GatherOptions& opts = c10d::GatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputTensors,
                                         std::vector<std::vector<at::Tensor>>& inputTensors,
                                         const c10d::ScatterOptions& opts = c10d::ScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputTensors, std::vector<std::vector<at::Tensor>>& inputTensors,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& outputBuffer, at::Tensor& inputBuffer,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputTensors, std::vector<at::Tensor>& inputTensors,
                                          const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;
  // weftRecvAny: the first message any peer sends to this rank (host tensors; tags ignored as by
  // recv). The Work's sourceRank() names the sender.
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

  // ---- process_group_ops.cc: the coalesced forms, monitored barrier, sequence numbers ----
  // all_reduce of a sparse COO tensor (SUM, as Gloo): every rank's indices and values gathered,
  // then summed by coalescing; the tensor takes the result.
  c10::intrusive_ptr<c10d::Work> allreduceSparse(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts);
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputTensorLists, std::vector<at::Tensor>& inputTensors,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  // Waits (through the store, so a rank stuck in Weft is still named) until every rank arrives or
  // the timeout passes; rank 0 names the ranks that did not arrive.
  void monitoredBarrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions(), bool waitAllRanks = false) override;
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return sequence_; }
#ifdef WEFT_TORCH_BACKEND_API
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;

  // ---- process_group_ops.cc: torch 2.x's life cycle ----
  bool supportsSplitting() const override { return true; }
  bool supportsCoalescing() const override { return true; }
  bool supportsShrinking() const override { return true; }
  // A group of `ranks` (ranks of this group, sorted) made through `store`; this rank must be one.
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<c10d::Backend::Options>& opts) override;
  // weftCommShrink: the ranks left, renumbered in order (collective over them).
  c10::intrusive_ptr<c10d::Backend> shrink(const std::vector<int64_t>& ranksToExclude, int shrinkFlags = 0,
                                           const c10::intrusive_ptr<c10d::Backend::Options>& opts = nullptr) override;
  void abort() override;
  void shutdown() override;
  c10d::ErrorType getError() override;
  void setTimeout(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10d::Backend::Options> getBackendOptions() override { return options_; }
  void eagerConnectSingleDevice(at::Device /* device */) override {}  // the communicator is made at creation
#endif

#ifdef WEFT_TORCH_COALESCING_REQS
  void startCoalescing() override;
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& reqs) override;
#endif
#ifdef WEFT_TORCH_COALESCING_WORK
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
#endif

 private:
  // Runs `call` in call order: on the worker for host tensors (or into the open batch), at once
  // on the tensor's current CUDA stream for device tensors.
  c10::intrusive_ptr<c10d::Work> post(c10d::OpType type, std::vector<at::Tensor> outputs, const at::Tensor* sample,
                                      Call call);
  // The queue's GroupRunner: the calls' issue() steps inside one Weft group, then their finish().
  void runGroup(const std::vector<Call*>& calls) const;
  // Throws a std::runtime_error carrying weftGetLastError's message when r is not weftSuccess.
  void check(weftResult_t r, const char* collective) const;
  // Rooted collectives and point-to-point calls: the rank must be one of this group's.
  void checkRank(int64_t rank, const char* what, const char* collective) const;
  // Sends send[p] to and receives recv[p] from every peer p != rank_, concurrently (one Weft group).
  void exchange(const std::vector<std::pair<const void*, size_t>>& send,
                const std::vector<std::pair<void*, size_t>>& recv, weftDataType_t type, weftStream_t stream,
                const char* collective) const;
  // all_to_all_single's two forms (process_group_exchange.cc): even blocks, and split sizes.
  Call evenAllToAll(const at::Tensor& in, const at::Tensor& out, const WeftElements& el);
  Call unevenAllToAll(const at::Tensor& in, const at::Tensor& out, const WeftElements& el,
                      const std::vector<int64_t>& inputSplitSizes, const std::vector<int64_t>& outputSplitSizes);
  void allReduceNow(void* data, size_t count, weftDataType_t type, c10::ScalarType dtype, const WeftReduction& red,
                    weftStream_t stream, const char* collective) const;

  // After the communicator exists: the worker, the allocator's registration, c10d's init().
  void start();
  // The calls of a coalesced batch (or of one *_coalesced call) as one queued task.
  c10::intrusive_ptr<c10d::Work> postBatch(c10d::OpType type,
                                           std::vector<std::pair<c10::intrusive_ptr<WeftWork>, Call>> batch);
  // Ends the worker and the communicator (destroy when healthy, else abort); idempotent.
  void close(bool abortFirst);

  weftComm_t comm_ = nullptr;
  c10::intrusive_ptr<c10d::Store> store_;  // the group's prefix store (monitoredBarrier, split)
  c10::intrusive_ptr<WeftOptions> options_;
  uint64_t sequence_ = 0;             // collectives posted (getSequenceNumberForGroup)
  uint64_t barriers_ = 0;             // monitoredBarrier calls (their store keys)
  uint64_t shrinks_ = 0;              // groups shrunk from this one (their store prefixes)
  std::shared_ptr<WorkQueue> queue_;  // works hold weak references (WeftWork::wait)
  // Between startCoalescing and endCoalescing: the calls to issue as one Weft group.
  bool coalescing_ = false;
  std::vector<std::pair<c10::intrusive_ptr<WeftWork>, Call>> batch_;
};

}  // namespace weft_torch
