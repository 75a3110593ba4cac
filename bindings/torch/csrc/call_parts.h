// What the collectives of ProcessGroupWeft share (process_group.cc, process_group_exchange.cc,
// process_group_ops.cc): the argument refusals, the contiguous stand-in for a tensor, the
// per-call reduce op, one Weft group for a list of calls, and the weftConfig_t a group's options
// make.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/StringUtil.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "process_group.h"
#include "tensor_types.h"
#include "weft/weft.h"

namespace weft_torch {

[[noreturn]] inline void refuse(const char* collective, const std::string& what) {
  throw std::invalid_argument(std::string("weft: ") + collective + ": " + what);
}

inline void checkTensor(const at::Tensor& t, const char* collective) {
  if (!t.defined()) refuse(collective, "got an undefined tensor");
  if (t.layout() != at::kStrided) refuse(collective, "sparse tensors are not supported; call .to_dense() first");
  if (!t.device().is_cpu() && !t.device().is_cuda()) {
    refuse(collective, "tensors on " + t.device().str() + " are not supported; use CPU (or CUDA) tensors");
  }
}

inline const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* collective) {
  if (tensors.size() != 1) {
    refuse(collective, "takes exactly one tensor per process (got " + std::to_string(tensors.size()) + ")");
  }
  checkTensor(tensors[0], collective);
  return tensors[0];
}

inline void checkSame(const at::Tensor& t, const at::Tensor& like, const char* collective, const char* what) {
  checkTensor(t, collective);
  if (t.scalar_type() != like.scalar_type() || t.device() != like.device()) {
    refuse(collective, std::string(what) + " must have the input's dtype and device (" +
                           c10::toString(like.scalar_type()) + " on " + like.device().str() + "), got " +
                           c10::toString(t.scalar_type()) + " on " + t.device().str());
  }
}

inline size_t weftCount(const at::Tensor& t, const WeftElements& el) {
  return static_cast<size_t>(t.numel()) * el.perElement;
}

// A contiguous stand-in for a tensor: the tensor itself, or a copy that writeBack() copies into
// the tensor. Made on the thread that runs the Weft call, so a copy sees earlier calls' results.
class Dense {
 public:
  explicit Dense(at::Tensor t) : user_(std::move(t)), buf_(user_.is_contiguous() ? user_ : user_.contiguous()) {}
  void* data() const { return buf_.data_ptr(); }
  const at::Tensor& tensor() const { return buf_; }
  void writeBack() {
    if (!buf_.is_same(user_)) user_.copy_(buf_);
  }

 private:
  at::Tensor user_;
  at::Tensor buf_;
};

// The Weft op for one call: a built-in op, or a pre-multiplied sum made on the communicator for
// this call and destroyed after it.
class ScopedRedOp {
 public:
  ScopedRedOp(weftComm_t comm, const WeftReduction& red, weftDataType_t type, c10::ScalarType dtype)
      : comm_(comm), op_(red.op) {
    if (!red.preMulSum) return;
    // The factor has the reduced elements' type (the real type for complex tensors).
    const c10::ScalarType scalarType = c10::isComplexType(dtype) ? c10::toRealValueType(dtype) : dtype;
    at::Tensor factor = red.hasFactorTensor
                            ? red.factorTensor.to(at::kCPU).to(scalarType).reshape({-1}).narrow(0, 0, 1).contiguous()
                            : at::scalar_tensor(red.factor, at::TensorOptions().dtype(scalarType));
    result_ = weftRedOpCreatePreMulSum(&op_, factor.data_ptr(), type, weftScalarHostImmediate, comm);
    made_ = result_ == weftSuccess;
  }
  ~ScopedRedOp() {
    if (made_) (void)weftRedOpDestroy(op_, comm_);
  }
  ScopedRedOp(const ScopedRedOp&) = delete;
  ScopedRedOp& operator=(const ScopedRedOp&) = delete;

  weftResult_t result() const { return result_; }
  weftRedOp_t op() const { return op_; }

 private:
  weftComm_t comm_;
  weftRedOp_t op_;
  weftResult_t result_ = weftSuccess;
  bool made_ = false;
};

// Runs issue(i) for i < n inside one Weft group; the first failure, else the group's result.
template <typename IssueOne>
weftResult_t inOneGroup(size_t n, IssueOne issue) {
  weftResult_t r = weftGroupStart();
  if (r != weftSuccess) return r;
  weftResult_t first = weftSuccess;
  for (size_t i = 0; i < n; ++i) {
    weftResult_t one = issue(i);
    if (first == weftSuccess) first = one;
  }
  weftResult_t end = weftGroupEnd();
  return first != weftSuccess ? first : end;
}

// Whole seconds, rounded up, for weftConfig_t.timeoutS / weftCommSetTimeout (0: none given).
inline int secondsOf(std::chrono::milliseconds t) {
  const double s = std::chrono::duration<double>(t).count();
  return s > 0 ? static_cast<int>(std::min(std::ceil(s), 2147483647.0)) : 0;
}

// The communicator's config for a group's options (commName points into `o`).
inline weftConfig_t configFor(const WeftOptions& o) {
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutS = secondsOf(o.timeout);
  config.minChannels = o.minChannels;
  config.maxChannels = o.maxChannels;
  config.commName = o.commName.empty() ? "torch.distributed" : o.commName.c_str();
  return config;
}

}  // namespace weft_torch
