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
// changed the signature (and CPU batches no longer coalesce), so only the older form is taken.
#if TORCH_VERSION_MAJOR < 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR == 0)
#define WEFT_TORCH_COALESCING_REQS 1
#endif

namespace weft_torch {

#if TORCH_VERSION_MAJOR >= 2
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

class ProcessGroupWeft : public BackendBase {
 public:
  ProcessGroupWeft(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout);
  ~ProcessGroupWeft() override;

  // The creator torch's register_backend calls: (prefix store, rank, size, timeout).
  static c10::intrusive_ptr<BackendBase> create(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                std::chrono::duration<float> timeout);

  const std::string getBackendName() const override { return "weft"; }

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

#ifdef WEFT_TORCH_COALESCING_REQS
  void startCoalescing() override;
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& reqs) override;
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
  void allReduceNow(void* data, size_t count, weftDataType_t type, c10::ScalarType dtype, const WeftReduction& red,
                    weftStream_t stream, const char* collective) const;

  weftComm_t comm_ = nullptr;
  std::shared_ptr<WorkQueue> queue_;  // works hold weak references (WeftWork::wait)
  // Between startCoalescing and endCoalescing: the calls to issue as one Weft group.
  bool coalescing_ = false;
  std::vector<std::pair<c10::intrusive_ptr<WeftWork>, Call>> batch_;
};

}  // namespace weft_torch
