// ProcessGroupWeft's exchanges between every pair of ranks and between two: all-to-all (even
// blocks through weftAllToAll, uneven ones as one Weft group of sends and receives), send,
// receive, and receive from any source. Creation and the plain collectives are in
// process_group.cc; the coalesced ones and the life cycle in process_group_ops.cc.
#include <ATen/ATen.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "call_parts.h"
#include "process_group.h"

namespace weft_torch {
namespace {

// Element offsets of split sizes along dim 0 (torch's all_to_all_single); empty = even.
std::vector<int64_t> splitRows(const std::vector<int64_t>& splits, int64_t rows, int size, const char* which) {
  if (splits.empty()) {
    if (rows % size != 0) {
      refuse("all_to_all_single", std::string(which) + " has " + std::to_string(rows) +
                                      " rows, which do not split evenly over " + std::to_string(size) +
                                      " ranks; pass split sizes");
    }
    return std::vector<int64_t>(static_cast<size_t>(size), rows / size);
  }
  if (splits.size() != static_cast<size_t>(size)) {
    refuse("all_to_all_single", std::string(which) + " split sizes have " + std::to_string(splits.size()) +
                                    " entries for " + std::to_string(size) + " ranks");
  }
  int64_t sum = 0;
  for (int64_t s : splits) {
    if (s < 0) refuse("all_to_all_single", std::string(which) + " split sizes must not be negative");
    sum += s;
  }
  if (sum != rows) {
    refuse("all_to_all_single", std::string(which) + " split sizes add up to " + std::to_string(sum) +
                                    " rows but the " + which + " tensor has " + std::to_string(rows));
  }
  return splits;
}

}  // namespace

void ProcessGroupWeft::exchange(const std::vector<std::pair<const void*, size_t>>& send,
                                const std::vector<std::pair<void*, size_t>>& recv, weftDataType_t type,
                                weftStream_t stream, const char* collective) const {
  check(weftGroupStart(), collective);
  weftResult_t first = weftSuccess;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;  // the caller copies its own block
    const auto& s = send[static_cast<size_t>(p)];
    const auto& r = recv[static_cast<size_t>(p)];
    weftResult_t a = s.second > 0 ? weftSend(s.first, s.second, type, p, comm_, stream) : weftSuccess;
    weftResult_t b = r.second > 0 ? weftRecv(r.first, r.second, type, p, comm_, stream) : weftSuccess;
    if (first == weftSuccess) first = a != weftSuccess ? a : b;
  }
  weftResult_t end = weftGroupEnd();
  check(first != weftSuccess ? first : end, collective);
}

// ---- All-to-all ------------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::alltoall_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                                               std::vector<int64_t>& outputSplitSizes,
                                                               std::vector<int64_t>& inputSplitSizes,
                                                               const c10d::AllToAllOptions& /* opts */) {
  checkTensor(inputBuffer, "all_to_all_single");
  checkSame(outputBuffer, inputBuffer, "all_to_all_single", "the output tensor");
  const WeftElements el = weftElements(inputBuffer.scalar_type(), "all_to_all_single");
  Call call = outputSplitSizes.empty() && inputSplitSizes.empty()
                  ? evenAllToAll(inputBuffer, outputBuffer, el)
                  : unevenAllToAll(inputBuffer, outputBuffer, el, inputSplitSizes, outputSplitSizes);
  return post(c10d::OpType::ALLTOALL_BASE, {outputBuffer}, &inputBuffer, std::move(call));
}

// Even blocks: Weft's all-to-all.
Call ProcessGroupWeft::evenAllToAll(const at::Tensor& in, const at::Tensor& out, const WeftElements& el) {
  if (in.numel() != out.numel() || in.numel() % size_ != 0) {
    refuse("all_to_all_single",
           "without split sizes the input and output must have the same number of elements, "
           "divisible by the world size (" +
               std::to_string(size_) + ")");
  }
  Call call;
  call.issue = [this, in, out, el](weftStream_t stream) {
    Dense src(in), dst(out);
    check(weftAllToAll(src.data(), dst.data(), weftCount(in, el) / static_cast<size_t>(size_), el.type, comm_, stream),
          "all_to_all_single");
    dst.writeBack();
  };
  return call;
}

// Uneven blocks along dim 0: one Weft group of sends and receives; the block to itself is copied.
Call ProcessGroupWeft::unevenAllToAll(const at::Tensor& in, const at::Tensor& out, const WeftElements& el,
                                      const std::vector<int64_t>& inputSplitSizes,
                                      const std::vector<int64_t>& outputSplitSizes) {
  if (in.dim() == 0 || out.dim() == 0) refuse("all_to_all_single", "split sizes need tensors with a first dimension");
  const std::vector<int64_t> inRows = splitRows(inputSplitSizes, in.size(0), size_, "input");
  const std::vector<int64_t> outRows = splitRows(outputSplitSizes, out.size(0), size_, "output");
  const int64_t inRow = in.size(0) > 0 ? in.numel() / in.size(0) : 0;
  const int64_t outRow = out.size(0) > 0 ? out.numel() / out.size(0) : 0;
  const int64_t mine = inRows[static_cast<size_t>(rank_)] * inRow;
  if (mine != outRows[static_cast<size_t>(rank_)] * outRow) {
    refuse("all_to_all_single", "this rank's block to itself has " + std::to_string(mine) +
                                    " elements in the input but " +
                                    std::to_string(outRows[static_cast<size_t>(rank_)] * outRow) + " in the output");
  }
  Call call;
  call.issue = [this, in, out, el, inRows, outRows, inRow, outRow, mine](weftStream_t stream) {
    Dense src(in), dst(out);
    std::vector<std::pair<const void*, size_t>> send;
    std::vector<std::pair<void*, size_t>> recv;
    const size_t item = static_cast<size_t>(in.element_size());
    int64_t inAt = 0, outAt = 0, selfIn = 0, selfOut = 0;
    for (int p = 0; p < size_; ++p) {
      const int64_t ni = inRows[static_cast<size_t>(p)] * inRow, no = outRows[static_cast<size_t>(p)] * outRow;
      send.emplace_back(static_cast<const char*>(src.data()) + inAt * item, static_cast<size_t>(ni) * el.perElement);
      recv.emplace_back(static_cast<char*>(dst.data()) + outAt * item, static_cast<size_t>(no) * el.perElement);
      if (p == rank_) {
        selfIn = inAt;
        selfOut = outAt;
      }
      inAt += ni;
      outAt += no;
    }
    exchange(send, recv, el.type, stream, "all_to_all_single");
    dst.tensor().view({-1}).narrow(0, selfOut, mine).copy_(src.tensor().view({-1}).narrow(0, selfIn, mine));
    dst.writeBack();
  };
  return call;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::alltoall(std::vector<at::Tensor>& outputTensors,
                                                          std::vector<at::Tensor>& inputTensors,
                                                          const c10d::AllToAllOptions& /* opts */) {
  if (outputTensors.size() != static_cast<size_t>(size_) || inputTensors.size() != static_cast<size_t>(size_)) {
    refuse("all_to_all", "needs input and output lists of " + std::to_string(size_) + " tensors");
  }
  checkTensor(inputTensors[0], "all_to_all");
  for (const at::Tensor& t : inputTensors) checkSame(t, inputTensors[0], "all_to_all", "every input tensor");
  for (const at::Tensor& t : outputTensors) checkSame(t, inputTensors[0], "all_to_all", "every output tensor");
  if (inputTensors[static_cast<size_t>(rank_)].numel() != outputTensors[static_cast<size_t>(rank_)].numel()) {
    refuse("all_to_all", "the input and output tensors at this rank's own index must have the same size");
  }
  const WeftElements el = weftElements(inputTensors[0].scalar_type(), "all_to_all");
  std::vector<at::Tensor> ins = inputTensors, outs = outputTensors;
  Call call;
  call.issue = [this, ins, outs, el](weftStream_t stream) {
    std::vector<Dense> src(ins.begin(), ins.end()), dst(outs.begin(), outs.end());
    std::vector<std::pair<const void*, size_t>> send;
    std::vector<std::pair<void*, size_t>> recv;
    for (int p = 0; p < size_; ++p) {
      send.emplace_back(src[static_cast<size_t>(p)].data(), weftCount(ins[static_cast<size_t>(p)], el));
      recv.emplace_back(dst[static_cast<size_t>(p)].data(), weftCount(outs[static_cast<size_t>(p)], el));
    }
    exchange(send, recv, el.type, stream, "all_to_all");
    outs[static_cast<size_t>(rank_)].copy_(ins[static_cast<size_t>(rank_)].reshape(outs[rank_].sizes()));
    for (int p = 0; p < size_; ++p) {
      if (p != rank_) dst[static_cast<size_t>(p)].writeBack();
    }
  };
  return post(c10d::OpType::ALLTOALL, outs, &ins[0], std::move(call));
}

// ---- Point to point ---------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::send(std::vector<at::Tensor>& tensors, int dstRank, int /* tag */) {
  const at::Tensor& t = single(tensors, "send");
  checkRank(dstRank, "destination", "send");
  const WeftElements el = weftElements(t.scalar_type(), "send");
  // The contiguous copy lives until the call is done: inside a batch Weft sends at the group's end.
  auto src = std::make_shared<std::unique_ptr<Dense>>();
  Call call;
  call.issue = [this, t, el, dstRank, src](weftStream_t stream) {
    *src = std::make_unique<Dense>(t);
    check(weftSend((*src)->data(), weftCount(t, el), el.type, dstRank, comm_, stream), "send");
  };
  call.finish = [src] { src->reset(); };
  return post(c10d::OpType::SEND, tensors, &t, std::move(call));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::recv(std::vector<at::Tensor>& tensors, int srcRank, int /* tag */) {
  const at::Tensor& t = single(tensors, "recv");
  checkRank(srcRank, "source", "recv");
  const WeftElements el = weftElements(t.scalar_type(), "recv");
  auto dst = std::make_shared<std::unique_ptr<Dense>>();
  Call call;
  call.issue = [this, t, el, srcRank, dst](weftStream_t stream) {
    *dst = std::make_unique<Dense>(t);
    check(weftRecv((*dst)->data(), weftCount(t, el), el.type, srcRank, comm_, stream), "recv");
  };
  call.finish = [dst] {
    (*dst)->writeBack();
    dst->reset();
  };
  return post(c10d::OpType::RECV, tensors, &t, std::move(call));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::recvAnysource(std::vector<at::Tensor>& tensors, int /* tag */) {
  const at::Tensor& t = single(tensors, "recv (any source)");
  if (!t.device().is_cpu()) refuse("recv (any source)", "receives from any source take CPU tensors");
  const WeftElements el = weftElements(t.scalar_type(), "recv (any source)");
  auto source = std::make_shared<std::atomic<int>>(-1);
  Call call;
  call.issue = [this, t, el, source](weftStream_t stream) {
    Dense d(t);
    int from = -1;
    check(weftRecvAny(d.data(), weftCount(t, el), el.type, &from, comm_, stream), "recv (any source)");
    d.writeBack();
    source->store(from);
  };
  // Not a plain RECV: weftRecvAny runs alone, never inside the Weft group of queued sends and receives.
  auto work = post(c10d::OpType::RECVANYSOURCE, tensors, &t, std::move(call));
  static_cast<WeftWork*>(work.get())->setSource(source);
  return work;
}

}  // namespace weft_torch
