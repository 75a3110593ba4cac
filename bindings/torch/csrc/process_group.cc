#include "process_group.h"

#include <ATen/ATen.h>
#include <c10/util/StringUtil.h>

#include "call_parts.h"
#include "shared_memory_allocator.h"

#ifdef WEFT_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace weft_torch {
namespace {

constexpr const char* kUniqueIdKey = "weft_unique_id";

}  // namespace

// ---- Creation -------------------------------------------------------------------------------

ProcessGroupWeft::ProcessGroupWeft(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   c10::intrusive_ptr<WeftOptions> options)
    : BackendBase(rank, size), store_(store), options_(std::move(options)) {
  weftUniqueId id;
  if (rank == 0) {
    if (weftGetUniqueId(&id) != weftSuccess) {
      throw std::runtime_error(std::string("weft: init_process_group: rank 0 could not make a unique id: ") +
                               weftGetLastError(nullptr));
    }
    const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
    store->set(kUniqueIdKey, std::vector<uint8_t>(bytes, bytes + sizeof(id)));
  } else {
    std::vector<uint8_t> bytes = store->get(kUniqueIdKey);  // waits for rank 0, up to the store's timeout
    if (bytes.size() != sizeof(id)) {
      throw std::runtime_error("weft: init_process_group: the store holds a unique id of " +
                               std::to_string(bytes.size()) + " bytes under '" + kUniqueIdKey + "', expected " +
                               std::to_string(sizeof(id)) + "; is another program using the same store?");
    }
    std::memcpy(&id, bytes.data(), sizeof(id));
  }
  weftConfig_t config = configFor(*options_);
  if (weftCommInitRankConfig(&comm_, size, id, rank, &config) != weftSuccess) {
    throw std::runtime_error("weft: init_process_group: rank " + std::to_string(rank) + " of " + std::to_string(size) +
                             " could not join the communicator: " + weftGetLastError(nullptr));
  }
  start();
}

ProcessGroupWeft::ProcessGroupWeft(weftComm_t comm, const c10::intrusive_ptr<c10d::Store>& store,
                                   c10::intrusive_ptr<WeftOptions> options)
    : BackendBase(
          [comm] {
            int r = -1;
            (void)weftCommUserRank(comm, &r);
            return r;
          }(),
          [comm] {
            int n = 0;
            (void)weftCommCount(comm, &n);
            return n;
          }()),
      comm_(comm),
      store_(store),
      options_(std::move(options)) {
  start();
}

void ProcessGroupWeft::start() {
  queue_ = std::make_shared<WorkQueue>([this](const std::vector<Call*>& calls) { runGroup(calls); });
  // Tensors from the shared-memory allocator (when installed) are registered with this
  // communicator, so that collectives on them can run zero-copy.
  SharedMemoryAllocator::instance().attach(comm_);
  init();
}

ProcessGroupWeft::~ProcessGroupWeft() { close(false); }

void ProcessGroupWeft::close(bool abortFirst) {
  if (comm_ == nullptr) return;
  if (abortFirst) {
    (void)weftCommAbort(comm_);  // frees calls blocked in Weft; the worker then drains with errors
    queue_->shutdown();
    SharedMemoryAllocator::instance().detach(comm_);
    comm_ = nullptr;
    return;
  }
  queue_->shutdown();  // runs what is queued (each call ends by its deadline at the latest)
  SharedMemoryAllocator::instance().detach(comm_);  // the arenas (and tensors in them) stay
  weftResult_t state = weftSuccess;
  if (weftCommGetAsyncError(comm_, &state) == weftSuccess && state == weftSuccess) {
    (void)weftCommDestroy(comm_);
  } else {
    (void)weftCommAbort(comm_);
  }
  comm_ = nullptr;
}

c10::intrusive_ptr<BackendBase> ProcessGroupWeft::create(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                         int size, std::chrono::duration<float> timeout) {
  return createWithOptions(store, rank, size, std::chrono::duration_cast<std::chrono::milliseconds>(timeout),
                           c10::intrusive_ptr<WeftOptions>());
}

c10::intrusive_ptr<BackendBase> ProcessGroupWeft::createWithOptions(const c10::intrusive_ptr<c10d::Store>& store,
                                                                    int rank, int size,
                                                                    std::chrono::milliseconds timeout,
                                                                    const c10::intrusive_ptr<WeftOptions>& options) {
  // The user's options are copied: torch hands the same object to every group made with it.
  auto own = options ? c10::make_intrusive<WeftOptions>(*options) : c10::make_intrusive<WeftOptions>(timeout);
  own->timeout = timeout;
  return c10::make_intrusive<ProcessGroupWeft>(store, rank, size, std::move(own));
}

// ---- Running calls ----------------------------------------------------------------------------

void ProcessGroupWeft::check(weftResult_t r, const char* collective) const {
  if (r == weftSuccess) return;
  std::string message = weftGetLastError(comm_);
  if (message.empty()) message = weftGetLastError(nullptr);
  if (message.empty()) message = "Weft gave no further message";
  // A time-out says "Timed out" in words: scripts (and torch's own tests) match it.
  if (r == weftTimeout) {
    throw std::runtime_error(c10::str("weft: ", collective, " failed on rank ", rank_, " of ", size_,
                                      ": Timed out waiting for its peers (", weftGetErrorString(r), "): ", message));
  }
  throw std::runtime_error(c10::str("weft: ", collective, " failed on rank ", rank_, " of ", size_, " (",
                                    weftGetErrorString(r), "): ", message));
}

void ProcessGroupWeft::checkRank(int64_t rank, const char* what, const char* collective) const {
  if (rank < 0 || rank >= size_) {
    refuse(collective, std::string(what) + " " + std::to_string(rank) + " is not a rank of this group (0.." +
                           std::to_string(size_ - 1) + ")");
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::post(c10d::OpType type, std::vector<at::Tensor> outputs,
                                                      const at::Tensor* sample, Call call) {
  if (comm_ == nullptr) {
    refuse(c10d::opTypeToString(type).c_str(), "this group was shut down or aborted; make a new one");
  }
  ++sequence_;
  auto work = c10::make_intrusive<WeftWork>(rank_, type, std::move(outputs), queue_);
  if (sample != nullptr && sample->is_cuda()) {
#ifdef WEFT_TORCH_CUDA
    // Device work is ordered by the stream: host calls queued earlier go first, then this call is
    // enqueued on the tensor's current stream, where whatever uses the outputs will run too.
    queue_->drain();
    c10::cuda::CUDAGuard guard(sample->device());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream(sample->device().index()).stream();
    call.issue(reinterpret_cast<weftStream_t>(stream));
    if (call.finish) call.finish();
    work->complete(nullptr);
    return work;
#else
    refuse(c10d::opTypeToString(type).c_str(),
           "this weft_torch was built without CUDA support (it needs torch 2.x built with CUDA); use CPU tensors");
#endif
  }
  const bool pointToPoint = type == c10d::OpType::SEND || type == c10d::OpType::RECV;
  if (coalescing_ && pointToPoint) {
    batch_.emplace_back(work, std::move(call));
    return work;
  }
  std::vector<Call> calls;
  calls.push_back(std::move(call));
  queue_->push({work}, std::move(calls), pointToPoint);
  return work;
}

void ProcessGroupWeft::runGroup(const std::vector<Call*>& calls) const {
  check(weftGroupStart(), "send/recv");
  try {
    for (Call* call : calls) call->issue(nullptr);
  } catch (...) {
    (void)weftGroupEnd();
    throw;
  }
  check(weftGroupEnd(), "send/recv");
  for (Call* call : calls) {
    if (call->finish) call->finish();
  }
}

// Between startCoalescing and endCoalescing sends and receives are held back and then issued as
// one Weft group: the exchanges of a batch_isend_irecv run concurrently, so exchanges in both
// directions cannot wait on each other. Collectives posted meanwhile run in call order as usual.
#if defined(WEFT_TORCH_COALESCING_REQS) || defined(WEFT_TORCH_COALESCING_WORK)
void ProcessGroupWeft::startCoalescing() {
  coalescing_ = true;
  batch_.clear();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::postBatch(
    c10d::OpType type, std::vector<std::pair<c10::intrusive_ptr<WeftWork>, Call>> batch) {
  // The batch's own Work completes with its calls, after everything queued before it.
  auto whole = c10::make_intrusive<WeftWork>(rank_, type, std::vector<at::Tensor>{}, queue_);
  std::vector<c10::intrusive_ptr<WeftWork>> works{whole};
  std::vector<Call> calls;
  bool pointToPoint = !batch.empty();
  for (auto& entry : batch) {
    const c10d::OpType t = entry.first->retrieveOpType();
    pointToPoint = pointToPoint && (t == c10d::OpType::SEND || t == c10d::OpType::RECV);
    works.push_back(entry.first);
    calls.push_back(std::move(entry.second));
  }
  if (calls.empty()) {
    Call none;
    none.issue = [](weftStream_t) {};
    calls.push_back(std::move(none));
  }
  queue_->push(std::move(works), std::move(calls), pointToPoint);
  return whole;
}
#endif

#ifdef WEFT_TORCH_COALESCING_REQS
void ProcessGroupWeft::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& /* reqs */) {
  coalescing_ = false;
  if (!batch_.empty()) (void)postBatch(c10d::OpType::UNKNOWN, std::move(batch_));
  batch_.clear();
}
#endif
#ifdef WEFT_TORCH_COALESCING_WORK
c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::endCoalescing() {
  coalescing_ = false;
  auto work = postBatch(c10d::OpType::COALESCED, std::move(batch_));
  batch_.clear();
  return work;
}
#endif

void ProcessGroupWeft::allReduceNow(void* data, size_t count, weftDataType_t type, c10::ScalarType dtype,
                                    const WeftReduction& red, weftStream_t stream, const char* collective) const {
  ScopedRedOp op(comm_, red, type, dtype);
  check(op.result(), "weftRedOpCreatePreMulSum");
  check(weftAllReduce(data, data, count, type, op.op(), comm_, stream), collective);
}

// ---- Collectives ------------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  if (tensors.size() == 1 && tensors[0].defined() && tensors[0].is_sparse()) return allreduceSparse(tensors, opts);
  const at::Tensor& t = single(tensors, "all_reduce");
  const WeftElements el = weftElements(t.scalar_type(), "all_reduce");
  const WeftReduction red = weftReduction(opts.reduceOp, t.scalar_type(), "all_reduce");
  Call call;
  call.issue = [this, t, el, red](weftStream_t stream) {
    Dense d(t);
    allReduceNow(d.data(), weftCount(t, el), el.type, t.scalar_type(), red, stream, "all_reduce");
    d.writeBack();
  };
  return post(c10d::OpType::ALLREDUCE, tensors, &t, std::move(call));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
  if (tensors.empty()) refuse("all_reduce_coalesced", "got no tensors");
  std::vector<WeftElements> els;
  std::vector<WeftReduction> reds;
  for (const at::Tensor& t : tensors) {
    checkSame(t, tensors[0], "all_reduce_coalesced", "every tensor");
    els.push_back(weftElements(t.scalar_type(), "all_reduce_coalesced"));
    reds.push_back(weftReduction(opts.reduceOp, t.scalar_type(), "all_reduce_coalesced"));
  }
  Call call;
  call.issue = [this, tensors, els, reds](weftStream_t stream) {
    std::vector<Dense> dense(tensors.begin(), tensors.end());
    std::vector<std::unique_ptr<ScopedRedOp>> ops;
    for (size_t i = 0; i < tensors.size(); ++i) {
      ops.push_back(std::make_unique<ScopedRedOp>(comm_, reds[i], els[i].type, tensors[i].scalar_type()));
      check(ops.back()->result(), "weftRedOpCreatePreMulSum");
    }
    // One group: Weft runs the all-reduces back to back.
    check(inOneGroup(tensors.size(),
                     [&](size_t i) {
                       return weftAllReduce(dense[i].data(), dense[i].data(), weftCount(tensors[i], els[i]),
                                            els[i].type, ops[i]->op(), comm_, stream);
                     }),
          "all_reduce_coalesced");
    for (Dense& d : dense) d.writeBack();
  };
  return post(c10d::OpType::ALLREDUCE_COALESCED, tensors, &tensors[0], std::move(call));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  const at::Tensor& t = single(tensors, "broadcast");
  checkRank(opts.rootRank, "source", "broadcast");
  const WeftElements el = weftElements(t.scalar_type(), "broadcast");
  const int root = static_cast<int>(opts.rootRank);
  Call call;
  call.issue = [this, t, el, root](weftStream_t stream) {
    Dense d(t);
    check(weftBroadcast(d.data(), d.data(), weftCount(t, el), el.type, root, comm_, stream), "broadcast");
    d.writeBack();
  };
  return post(c10d::OpType::BROADCAST, tensors, &t, std::move(call));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  const at::Tensor& t = single(tensors, "reduce");
  checkRank(opts.rootRank, "destination", "reduce");
  const WeftElements el = weftElements(t.scalar_type(), "reduce");
  const WeftReduction red = weftReduction(opts.reduceOp, t.scalar_type(), "reduce");
  const int root = static_cast<int>(opts.rootRank);
  Call call;
  call.issue = [this, t, el, red, root](weftStream_t stream) {
    Dense d(t);
    ScopedRedOp op(comm_, red, el.type, t.scalar_type());
    check(op.result(), "weftRedOpCreatePreMulSum");
    check(weftReduce(d.data(), d.data(), weftCount(t, el), el.type, op.op(), root, comm_, stream), "reduce");
    if (rank_ == root) d.writeBack();
  };
  return post(c10d::OpType::REDUCE, tensors, &t, std::move(call));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allgather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                                           std::vector<at::Tensor>& inputTensors,
                                                           const c10d::AllgatherOptions& /* opts */) {
  const at::Tensor& in = single(inputTensors, "all_gather");
  if (outputTensors.size() != 1 || outputTensors[0].size() != static_cast<size_t>(size_)) {
    refuse("all_gather", "needs one output list of " + std::to_string(size_) + " tensors");
  }
  std::vector<at::Tensor> outs = outputTensors[0];
  for (const at::Tensor& o : outs) {
    checkSame(o, in, "all_gather", "every output tensor");
    if (o.numel() != in.numel()) refuse("all_gather", "every output tensor must have as many elements as the input");
  }
  const WeftElements el = weftElements(in.scalar_type(), "all_gather");
  Call call;
  call.issue = [this, in, outs, el](weftStream_t stream) {
    Dense src(in);
    const int64_t n = in.numel();
    at::Tensor flat = at::empty({n * size_}, in.options().memory_format(at::MemoryFormat::Contiguous));
    check(weftAllGather(src.data(), flat.data_ptr(), weftCount(in, el), el.type, comm_, stream), "all_gather");
    for (int r = 0; r < size_; ++r) outs[static_cast<size_t>(r)].copy_(flat.narrow(0, r * n, n).view(outs[r].sizes()));
  };
  return post(c10d::OpType::ALLGATHER, outs, &in, std::move(call));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::_allgather_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                                                 const c10d::AllgatherOptions& /* opts */) {
  checkTensor(inputBuffer, "all_gather_into_tensor");
  checkSame(outputBuffer, inputBuffer, "all_gather_into_tensor", "the output tensor");
  if (outputBuffer.numel() != inputBuffer.numel() * size_) {
    refuse("all_gather_into_tensor", "the output tensor must have world size (" + std::to_string(size_) +
                                         ") times as many elements as the input");
  }
  const WeftElements el = weftElements(inputBuffer.scalar_type(), "all_gather_into_tensor");
  at::Tensor in = inputBuffer, out = outputBuffer;
  Call call;
  call.issue = [this, in, out, el](weftStream_t stream) {
    Dense src(in), dst(out);
    check(weftAllGather(src.data(), dst.data(), weftCount(in, el), el.type, comm_, stream), "all_gather_into_tensor");
    dst.writeBack();
  };
  return post(c10d::OpType::_ALLGATHER_BASE, {out}, &in, std::move(call));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::gather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                                        std::vector<at::Tensor>& inputTensors,
                                                        const c10d::GatherOptions& opts) {
  const at::Tensor& in = single(inputTensors, "gather");
  checkRank(opts.rootRank, "destination", "gather");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> outs;
  if (rank_ == root) {
    if (outputTensors.size() != 1 || outputTensors[0].size() != static_cast<size_t>(size_)) {
      refuse("gather", "the destination needs one gather list of " + std::to_string(size_) + " tensors");
    }
    outs = outputTensors[0];
    for (const at::Tensor& o : outs) {
      checkSame(o, in, "gather", "every tensor of the gather list");
      if (o.numel() != in.numel()) refuse("gather", "every tensor of the gather list must have the input's size");
    }
  }
  const WeftElements el = weftElements(in.scalar_type(), "gather");
  Call call;
  call.issue = [this, in, outs, el, root](weftStream_t stream) {
    Dense src(in);
    const size_t n = weftCount(in, el);
    std::vector<std::pair<const void*, size_t>> send(static_cast<size_t>(size_), {nullptr, 0});
    std::vector<std::pair<void*, size_t>> recv(static_cast<size_t>(size_), {nullptr, 0});
    std::vector<Dense> dst(outs.begin(), outs.end());
    if (rank_ == root) {
      for (int p = 0; p < size_; ++p) recv[static_cast<size_t>(p)] = {dst[static_cast<size_t>(p)].data(), n};
    } else {
      send[static_cast<size_t>(root)] = {src.data(), n};
    }
    exchange(send, recv, el.type, stream, "gather");
    if (rank_ == root) {
      outs[static_cast<size_t>(root)].copy_(in.reshape(outs[root].sizes()));
      for (int p = 0; p < size_; ++p) {
        if (p != root) dst[static_cast<size_t>(p)].writeBack();
      }
    }
  };
  return post(c10d::OpType::GATHER, outs, &in, std::move(call));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::scatter(std::vector<at::Tensor>& outputTensors,
                                                         std::vector<std::vector<at::Tensor>>& inputTensors,
                                                         const c10d::ScatterOptions& opts) {
  const at::Tensor& out = single(outputTensors, "scatter");
  checkRank(opts.rootRank, "source", "scatter");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> ins;
  if (rank_ == root) {
    if (inputTensors.size() != 1 || inputTensors[0].size() != static_cast<size_t>(size_)) {
      refuse("scatter", "the source needs one scatter list of " + std::to_string(size_) + " tensors");
    }
    ins = inputTensors[0];
    for (const at::Tensor& i : ins) {
      checkSame(i, out, "scatter", "every tensor of the scatter list");
      if (i.numel() != out.numel()) refuse("scatter", "every tensor of the scatter list must have the output's size");
    }
  }
  const WeftElements el = weftElements(out.scalar_type(), "scatter");
  Call call;
  call.issue = [this, ins, out, el, root](weftStream_t stream) {
    Dense dst(out);
    const size_t n = weftCount(out, el);
    std::vector<std::pair<const void*, size_t>> send(static_cast<size_t>(size_), {nullptr, 0});
    std::vector<std::pair<void*, size_t>> recv(static_cast<size_t>(size_), {nullptr, 0});
    std::vector<Dense> src(ins.begin(), ins.end());
    if (rank_ == root) {
      for (int p = 0; p < size_; ++p) send[static_cast<size_t>(p)] = {src[static_cast<size_t>(p)].data(), n};
    } else {
      recv[static_cast<size_t>(root)] = {dst.data(), n};
    }
    exchange(send, recv, el.type, stream, "scatter");
    if (rank_ == root) {
      out.copy_(ins[static_cast<size_t>(root)].reshape(out.sizes()));
    } else {
      dst.writeBack();
    }
  };
  return post(c10d::OpType::SCATTER, {out}, &out, std::move(call));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::reduce_scatter(std::vector<at::Tensor>& outputTensors,
                                                                std::vector<std::vector<at::Tensor>>& inputTensors,
                                                                const c10d::ReduceScatterOptions& opts) {
  const at::Tensor& out = single(outputTensors, "reduce_scatter");
  if (inputTensors.size() != 1 || inputTensors[0].size() != static_cast<size_t>(size_)) {
    refuse("reduce_scatter", "needs one input list of " + std::to_string(size_) + " tensors");
  }
  std::vector<at::Tensor> ins = inputTensors[0];
  for (const at::Tensor& i : ins) {
    checkSame(i, out, "reduce_scatter", "every input tensor");
    if (i.numel() != out.numel()) refuse("reduce_scatter", "every input tensor must have the output's size");
  }
  const WeftElements el = weftElements(out.scalar_type(), "reduce_scatter");
  const WeftReduction red = weftReduction(opts.reduceOp, out.scalar_type(), "reduce_scatter");
  Call call;
  call.issue = [this, ins, out, el, red](weftStream_t stream) {
    const int64_t n = out.numel();
    at::Tensor flat = at::empty({n * size_}, out.options().memory_format(at::MemoryFormat::Contiguous));
    for (int r = 0; r < size_; ++r) flat.narrow(0, r * n, n).copy_(ins[static_cast<size_t>(r)].reshape({-1}));
    Dense dst(out);
    ScopedRedOp op(comm_, red, el.type, out.scalar_type());
    check(op.result(), "weftRedOpCreatePreMulSum");
    check(weftReduceScatter(flat.data_ptr(), dst.data(), weftCount(out, el), el.type, op.op(), comm_, stream),
          "reduce_scatter");
    dst.writeBack();
  };
  return post(c10d::OpType::REDUCE_SCATTER, {out}, &out, std::move(call));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::_reduce_scatter_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                                                      const c10d::ReduceScatterOptions& opts) {
  checkTensor(outputBuffer, "reduce_scatter_tensor");
  checkSame(inputBuffer, outputBuffer, "reduce_scatter_tensor", "the input tensor");
  if (inputBuffer.numel() != outputBuffer.numel() * size_) {
    refuse("reduce_scatter_tensor", "the input tensor must have world size (" + std::to_string(size_) +
                                        ") times as many elements as the output");
  }
  const WeftElements el = weftElements(outputBuffer.scalar_type(), "reduce_scatter_tensor");
  const WeftReduction red = weftReduction(opts.reduceOp, outputBuffer.scalar_type(), "reduce_scatter_tensor");
  at::Tensor in = inputBuffer, out = outputBuffer;
  Call call;
  call.issue = [this, in, out, el, red](weftStream_t stream) {
    Dense src(in), dst(out);
    ScopedRedOp op(comm_, red, el.type, out.scalar_type());
    check(op.result(), "weftRedOpCreatePreMulSum");
    check(weftReduceScatter(src.data(), dst.data(), weftCount(out, el), el.type, op.op(), comm_, stream),
          "reduce_scatter_tensor");
    dst.writeBack();
  };
  return post(c10d::OpType::_REDUCE_SCATTER_BASE, {out}, &out, std::move(call));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::barrier(const c10d::BarrierOptions& /* opts */) {
  Call call;
  call.issue = [this](weftStream_t) { check(weftBarrier(comm_, nullptr), "barrier"); };
  return post(c10d::OpType::BARRIER, {}, nullptr, std::move(call));
}

}  // namespace weft_torch
