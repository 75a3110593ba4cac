// ProcessGroupWeft, the rest of what torch asks of a backend: the coalesced collectives (one Weft
// group for a list of calls), the monitored barrier (through the store), and torch 2.x's life
// cycle (split, shrink, abort, shutdown, getError, setTimeout). The plain collectives are in
// process_group.cc, all-to-all and point to point in process_group_exchange.cc.
#include <ATen/ATen.h>
#include <c10/util/StringUtil.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "call_parts.h"
#include "process_group.h"

namespace weft_torch {

// ---- Coalesced collectives -----------------------------------------------------------------

// torch's layout: outputTensorLists[r][i] receives input i of rank r.
c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputTensorLists, std::vector<at::Tensor>& inputTensors,
    const c10d::AllgatherOptions& /* opts */) {
  const char* name = "all_gather_coalesced";
  if (inputTensors.empty()) refuse(name, "got no input tensors");
  if (outputTensorLists.size() != static_cast<size_t>(size_)) {
    refuse(name, "needs one output list per rank (" + std::to_string(size_) + "), got " +
                     std::to_string(outputTensorLists.size()));
  }
  std::vector<WeftElements> els;
  for (const at::Tensor& in : inputTensors) {
    checkSame(in, inputTensors[0], name, "every input tensor");
    els.push_back(weftElements(in.scalar_type(), name));
  }
  for (size_t r = 0; r < outputTensorLists.size(); ++r) {
    if (outputTensorLists[r].size() != inputTensors.size()) {
      refuse(name, "output list " + std::to_string(r) + " has " + std::to_string(outputTensorLists[r].size()) +
                       " tensors; it needs one per input tensor (" + std::to_string(inputTensors.size()) + ")");
    }
    for (size_t i = 0; i < inputTensors.size(); ++i) {
      const at::Tensor& o = outputTensorLists[r][i];
      checkSame(o, inputTensors[i], name, "every output tensor");
      if (o.numel() != inputTensors[i].numel()) {
        refuse(name, "output " + std::to_string(i) + " of list " + std::to_string(r) +
                         " must have as many elements as input " + std::to_string(i) + " (" +
                         std::to_string(inputTensors[i].numel()) + ")");
      }
    }
  }
  std::vector<at::Tensor> ins = inputTensors;
  std::vector<std::vector<at::Tensor>> outs = outputTensorLists;
  std::vector<at::Tensor> flatOutputs;
  for (const auto& list : outs) flatOutputs.insert(flatOutputs.end(), list.begin(), list.end());
  Call call;
  call.issue = [this, ins, outs, els, name](weftStream_t stream) {
    std::vector<Dense> src;
    std::vector<at::Tensor> gathered;
    for (const at::Tensor& in : ins) {
      src.emplace_back(in);
      gathered.push_back(at::empty({in.numel() * size_}, in.options().memory_format(at::MemoryFormat::Contiguous)));
    }
    check(inOneGroup(ins.size(),
                     [&](size_t i) {
                       return weftAllGather(src[i].data(), gathered[i].data_ptr(), weftCount(ins[i], els[i]),
                                            els[i].type, comm_, stream);
                     }),
          name);
    for (size_t i = 0; i < ins.size(); ++i) {
      const int64_t n = ins[i].numel();
      for (int r = 0; r < size_; ++r) {
        at::Tensor o = outs[static_cast<size_t>(r)][i];
        o.copy_(gathered[i].narrow(0, r * n, n).view(o.sizes()));
      }
    }
  };
  return post(c10d::OpType::ALLGATHER_COALESCED, flatOutputs, &ins[0], std::move(call));
}

#ifdef WEFT_TORCH_BACKEND_API
c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& /* opts */) {
  const char* name = "all_gather_into_tensor_coalesced";
  if (inputs.empty() || outputs.size() != inputs.size()) {
    refuse(name, "needs as many output tensors as input tensors, at least one (got " + std::to_string(outputs.size()) +
                     " and " + std::to_string(inputs.size()) + ")");
  }
  std::vector<WeftElements> els;
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkSame(outputs[i], inputs[i], name, "every output tensor");
    checkSame(inputs[i], inputs[0], name, "every input tensor");
    if (outputs[i].numel() != inputs[i].numel() * size_) {
      refuse(name, "output " + std::to_string(i) + " must have world size (" + std::to_string(size_) +
                       ") times as many elements as input " + std::to_string(i));
    }
    els.push_back(weftElements(inputs[i].scalar_type(), name));
  }
  std::vector<at::Tensor> ins = inputs, outs = outputs;
  Call call;
  call.issue = [this, ins, outs, els, name](weftStream_t stream) {
    std::vector<Dense> src, dst;
    for (size_t i = 0; i < ins.size(); ++i) {
      src.emplace_back(ins[i]);
      dst.emplace_back(outs[i]);
    }
    check(inOneGroup(ins.size(),
                     [&](size_t i) {
                       return weftAllGather(src[i].data(), dst[i].data(), weftCount(ins[i], els[i]), els[i].type, comm_,
                                            stream);
                     }),
          name);
    for (Dense& d : dst) d.writeBack();
  };
  return post(c10d::OpType::ALLGATHER_INTO_TENSOR_COALESCED, outs, &ins[0], std::move(call));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  const char* name = "reduce_scatter_tensor_coalesced";
  if (inputs.empty() || outputs.size() != inputs.size()) {
    refuse(name, "needs as many output tensors as input tensors, at least one (got " + std::to_string(outputs.size()) +
                     " and " + std::to_string(inputs.size()) + ")");
  }
  std::vector<WeftElements> els;
  std::vector<WeftReduction> reds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkSame(outputs[i], inputs[i], name, "every output tensor");
    checkSame(inputs[i], inputs[0], name, "every input tensor");
    if (inputs[i].numel() != outputs[i].numel() * size_) {
      refuse(name, "input " + std::to_string(i) + " must have world size (" + std::to_string(size_) +
                       ") times as many elements as output " + std::to_string(i));
    }
    els.push_back(weftElements(inputs[i].scalar_type(), name));
    reds.push_back(weftReduction(opts.reduceOp, inputs[i].scalar_type(), name));
  }
  std::vector<at::Tensor> ins = inputs, outs = outputs;
  Call call;
  call.issue = [this, ins, outs, els, reds, name](weftStream_t stream) {
    std::vector<Dense> src, dst;
    // Pre-multiplied sums are made for the group's calls and destroyed after them.
    std::vector<std::unique_ptr<ScopedRedOp>> ops;
    for (size_t i = 0; i < ins.size(); ++i) {
      src.emplace_back(ins[i]);
      dst.emplace_back(outs[i]);
      ops.push_back(std::make_unique<ScopedRedOp>(comm_, reds[i], els[i].type, ins[i].scalar_type()));
      check(ops.back()->result(), "weftRedOpCreatePreMulSum");
    }
    check(inOneGroup(ins.size(),
                     [&](size_t i) {
                       return weftReduceScatter(src[i].data(), dst[i].data(), weftCount(outs[i], els[i]), els[i].type,
                                                ops[i]->op(), comm_, stream);
                     }),
          name);
    for (Dense& d : dst) d.writeBack();
  };
  return post(c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED, outs, &ins[0], std::move(call));
}
#endif

// ---- Sparse all-reduce ----------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allreduceSparse(std::vector<at::Tensor>& tensors,
                                                                 const c10d::AllreduceOptions& opts) {
  const char* name = "all_reduce (sparse)";
  const at::Tensor& t = tensors[0];
  if (t.layout() != at::kSparse) refuse(name, "only sparse COO tensors are supported; call .to_sparse() first");
  if (!t.device().is_cpu()) refuse(name, "sparse tensors must be on the CPU");
  if (opts.reduceOp.op_ != c10d::ReduceOp::SUM) refuse(name, "sparse tensors are summed only (ReduceOp.SUM)");
  const WeftElements el = weftElements(t.scalar_type(), name);
  Call call;
  call.issue = [this, t, el, name](weftStream_t stream) {
    at::Tensor mine = t.coalesce();
    const int64_t sparseDim = mine.sparse_dim();
    at::Tensor indices = mine.indices().t().contiguous();  // nnz x sparseDim
    at::Tensor values = mine.values().contiguous();        // nnz x dense dims
    const int64_t nnz = indices.size(0);
    // Each rank's nnz, then every rank's entries padded to the largest.
    at::Tensor counts = at::empty({size_}, at::kLong);
    int64_t nnzCopy = nnz;
    check(weftAllGather(&nnzCopy, counts.data_ptr(), 1, weftInt64, comm_, stream), name);
    const int64_t most = counts.max().item<int64_t>();
    std::vector<int64_t> valueShape = values.sizes().vec();
    valueShape[0] = most;
    at::Tensor paddedIndices = at::zeros({most, sparseDim}, at::kLong);
    at::Tensor paddedValues = at::zeros(valueShape, values.options());
    paddedIndices.narrow(0, 0, nnz).copy_(indices);
    paddedValues.narrow(0, 0, nnz).copy_(values);
    std::vector<int64_t> allValueShape = valueShape;
    allValueShape[0] = most * size_;
    at::Tensor allIndices = at::empty({most * size_, sparseDim}, at::kLong);
    at::Tensor allValues = at::empty(allValueShape, values.options());
    const size_t valueCount = weftCount(paddedValues, el);
    check(inOneGroup(2,
                     [&](size_t i) {
                       return i == 0
                                  ? weftAllGather(paddedIndices.data_ptr(), allIndices.data_ptr(),
                                                  static_cast<size_t>(paddedIndices.numel()), weftInt64, comm_, stream)
                                  : weftAllGather(paddedValues.data_ptr(), allValues.data_ptr(), valueCount, el.type,
                                                  comm_, stream);
                     }),
          name);
    std::vector<at::Tensor> idx, val;
    for (int r = 0; r < size_; ++r) {
      const int64_t n = counts[r].item<int64_t>();
      idx.push_back(allIndices.narrow(0, r * most, n));
      val.push_back(allValues.narrow(0, r * most, n));
    }
    at::Tensor sum = at::sparse_coo_tensor(at::cat(idx).t(), at::cat(val), mine.sizes(), mine.options()).coalesce();
    at::Tensor out = t;
    out.copy_(sum);
  };
  return post(c10d::OpType::ALLREDUCE, tensors, nullptr, std::move(call));
}

// ---- Monitored barrier ------------------------------------------------------------------------

// Every rank but 0 says it arrived under a key of this barrier; rank 0 waits for each until the
// timeout, names the ones missing, and then answers all with the outcome. Through the store
// rather than Weft, so that a rank stuck inside a Weft call is named instead of waited for.
void ProcessGroupWeft::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  const auto timeout = opts.timeout != c10d::kUnsetTimeout ? opts.timeout : options_->timeout;
  const std::string base = "weft_monitored_barrier/" + std::to_string(barriers_++) + "/";
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string doneKey = base + "done";
  if (rank_ != 0) {
    store_->set(base + "arrived/" + std::to_string(rank_), std::vector<uint8_t>{1});
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    // Gloo's wording, which the suite's tests and users' scripts match, then Weft's reason.
    const auto failed = [&](const std::string& why) {
      return std::runtime_error(c10::str("Rank ", rank_,
                                         " successfully reached monitoredBarrier, but received errors while waiting"
                                         " for send/recv from rank 0. Please check rank 0 logs for faulty rank. (weft: ",
                                         why, ")"));
    };
    try {
      store_->wait({doneKey}, std::max(left, std::chrono::milliseconds(1)));
    } catch (const std::exception&) {
      throw failed(c10::str("rank ", rank_, " of ", size_, " was not released by rank 0 within ", timeout.count(),
                            " ms; rank 0 found a rank missing or is itself stuck"));
    }
    std::vector<uint8_t> outcome = store_->get(doneKey);
    if (outcome.empty() || outcome[0] != 1) {
      throw failed(c10::str("rank 0 reports that other ranks did not arrive within ", timeout.count(), " ms"));
    }
    return;
  }
  std::vector<int> missing;
  std::string passed;
  for (int r = 1; r < size_; ++r) {
    // Gloo's wording, which scripts match: rank 0 out of time before it could look at a rank is
    // "Rank 0 timed out in monitoredBarrier", a rank not seen in time "Rank 3 failed to pass ...".
    if (!waitAllRanks && std::chrono::steady_clock::now() >= deadline) {
      store_->set(doneKey, std::vector<uint8_t>{0});
      throw std::runtime_error(c10::str("Rank 0 timed out in monitoredBarrier after ", timeout.count(),
                                        " ms (weft: ranks that passed: [", passed, "]; rank ", r,
                                        " and later were not looked at)"));
    }
    const std::string key = base + "arrived/" + std::to_string(r);
    bool arrived = false;
    while (!(arrived = store_->check({key})) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (!arrived) {
      missing.push_back(r);
      if (!waitAllRanks) break;
    } else {
      passed += (passed.empty() ? "" : ", ") + std::to_string(r);
    }
  }
  store_->set(doneKey, std::vector<uint8_t>{static_cast<uint8_t>(missing.empty() ? 1 : 0)});
  if (missing.empty()) return;
  std::string who;
  for (size_t i = 0; i < missing.size(); ++i) who += (i ? ", " : "") + std::to_string(missing[i]);
  throw std::runtime_error(c10::str(missing.size() == 1 ? "Rank " : "Ranks ", who,
                                    " failed to pass monitoredBarrier in ", timeout.count(), " ms (weft: rank 0 of ",
                                    size_, " waited for them through the store)"));
}

// ---- torch 2.x's life cycle -----------------------------------------------------------------

#ifdef WEFT_TORCH_BACKEND_API
namespace {

// A new group's options (split, shrink): the caller's when they are weft's, else this group's
// with the caller's timeout, if any. A copy: torch may hand the same object to several groups.
c10::intrusive_ptr<WeftOptions> childOptions(const WeftOptions& parent,
                                             const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
  if (auto theirs = c10::dynamic_intrusive_pointer_cast<WeftOptions>(opts))
    return c10::make_intrusive<WeftOptions>(*theirs);
  auto own = c10::make_intrusive<WeftOptions>(parent);
  if (opts) own->timeout = opts->timeout;
  return own;
}

}  // namespace

c10::intrusive_ptr<c10d::Backend> ProcessGroupWeft::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                          const std::vector<int>& ranks,
                                                          const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
  auto it = std::find(ranks.begin(), ranks.end(), rank_);
  if (it == ranks.end()) return nullptr;  // not a member: no group here
  for (int r : ranks) checkRank(r, "member", "split_group");
  auto own = childOptions(*options_, opts);
  own->global_ranks_in_group.clear();
  const int newRank = static_cast<int>(it - ranks.begin());
  return c10::make_intrusive<ProcessGroupWeft>(store, newRank, static_cast<int>(ranks.size()), std::move(own));
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupWeft::shrink(const std::vector<int64_t>& ranksToExclude, int shrinkFlags,
                                                           const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
  if (comm_ == nullptr) refuse("shrink_group", "this group was shut down or aborted");
  std::vector<int> excluded;
  for (int64_t r : ranksToExclude) {
    checkRank(r, "excluded rank", "shrink_group");
    excluded.push_back(static_cast<int>(r));
  }
  auto own = childOptions(*options_, opts);
  // Calls queued on this group run (or fail) first, unless the caller asks to abort them.
  if ((shrinkFlags & WEFT_SHRINK_ABORT) == 0) queue_->drain();
  weftConfig_t config = configFor(*own);
  weftComm_t newComm = nullptr;
  check(weftCommShrink(comm_, excluded.data(), static_cast<int>(excluded.size()), &newComm, &config, shrinkFlags),
        "shrink_group");
  // Keys of the new group's monitored barriers must not meet this group's.
  auto store = c10::make_intrusive<c10d::PrefixStore>("shrink" + std::to_string(shrinks_++), store_);
  return c10::make_intrusive<ProcessGroupWeft>(newComm, store, std::move(own));
}

void ProcessGroupWeft::abort() { close(true); }

void ProcessGroupWeft::shutdown() { close(false); }

c10d::ErrorType ProcessGroupWeft::getError() {
  if (comm_ == nullptr) return c10d::ErrorType::SUCCESS;
  weftResult_t state = weftSuccess;
  if (weftCommGetAsyncError(comm_, &state) != weftSuccess) return c10d::ErrorType::COMM_ERROR;
  switch (state) {
    case weftSuccess:
    case weftInProgress:
      return c10d::ErrorType::SUCCESS;
    case weftTimeout:
      return c10d::ErrorType::TIMEOUT;
    case weftRemoteError:
      return c10d::ErrorType::REMOTE_ERROR;
    default:
      return c10d::ErrorType::COMM_ERROR;
  }
}

void ProcessGroupWeft::setTimeout(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) refuse("set_timeout", "the timeout must be positive");
  options_->timeout = timeout;
  if (comm_ != nullptr) check(weftCommSetTimeout(comm_, secondsOf(timeout)), "set_timeout");
}
#endif

}  // namespace weft_torch
