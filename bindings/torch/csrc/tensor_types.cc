#include "tensor_types.h"

#include <torch/version.h>

#include <stdexcept>

namespace weft_torch {
namespace {

[[noreturn]] void refuse(const char* collective, const std::string& what) {
  throw std::invalid_argument(std::string("weft: ") + collective + ": " + what);
}

}  // namespace

WeftElements weftElements(c10::ScalarType dtype, const char* collective) {
  switch (dtype) {
    case c10::ScalarType::Float:
      return {weftFloat32, 1};
    case c10::ScalarType::Double:
      return {weftFloat64, 1};
    case c10::ScalarType::Half:
      return {weftFloat16, 1};
    case c10::ScalarType::BFloat16:
      return {weftBfloat16, 1};
    case c10::ScalarType::Char:
      return {weftInt8, 1};
    case c10::ScalarType::Byte:
      return {weftUint8, 1};
    case c10::ScalarType::Int:
      return {weftInt32, 1};
    case c10::ScalarType::Long:
      return {weftInt64, 1};
    // One byte, 0 or 1: reductions are remapped in weftReduction (sum -> max, product -> min).
    case c10::ScalarType::Bool:
      return {weftUint8, 1};
    case c10::ScalarType::ComplexFloat:
      return {weftFloat32, 2};
    case c10::ScalarType::ComplexDouble:
      return {weftFloat64, 2};
    default:
      break;
  }
  refuse(collective, std::string("tensors of dtype ") + c10::toString(dtype) +
                         " are not supported; Weft moves float32/64, float16, bfloat16, int8, uint8, int32, int64, "
                         "bool and complex64/128 (convert the tensor, e.g. t.to(torch.int32))");
}

WeftReduction weftReduction(const c10d::ReduceOp& op, c10::ScalarType dtype, const char* collective) {
  const bool isBool = dtype == c10::ScalarType::Bool;
  const bool isComplex = c10::isComplexType(dtype);
  WeftReduction r;
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      r.op = isBool ? weftMax : weftSum;
      break;  // bool sum = logical or
    case c10d::ReduceOp::PRODUCT:
      r.op = isBool ? weftMin : weftProd;
      break;  // bool product = and
    case c10d::ReduceOp::MIN:
      r.op = weftMin;
      break;
    case c10d::ReduceOp::MAX:
      r.op = weftMax;
      break;
    case c10d::ReduceOp::AVG:
      if (isBool) refuse(collective, "ReduceOp.AVG of bool tensors has no meaning; convert to a number type first");
      r.op = weftAvg;
      break;
    case c10d::ReduceOp::PREMUL_SUM: {
      if (isBool) refuse(collective, "PREMUL_SUM of bool tensors has no meaning; convert to a number type first");
      r.preMulSum = true;
      // c10d attaches this supplement to every PREMUL_SUM op (_make_nccl_premul_sum).
      auto* supplement = static_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      if (supplement == nullptr)
        refuse(collective, "PREMUL_SUM without a factor; make the op with _make_nccl_premul_sum");
#if TORCH_VERSION_MAJOR >= 2
      if (supplement->tensor_factor.defined()) {
        r.hasFactorTensor = true;
        r.factorTensor = supplement->tensor_factor;
      }
#else
      if (!supplement->tensor_factors.empty()) {
        r.hasFactorTensor = true;
        r.factorTensor = supplement->tensor_factors.front();
      }
#endif
      r.factor = supplement->double_factor;
      break;
    }
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      refuse(collective,
             "the bitwise reductions (ReduceOp.BAND, BOR, BXOR) are not supported: Weft reduces with SUM, "
             "AVG, PRODUCT, MIN, MAX and PREMUL_SUM (for bool tensors SUM is a logical or, PRODUCT and "
             "MIN a logical and)");
    default:
      refuse(collective, "unknown ReduceOp " + std::to_string(static_cast<int>(op.op_)));
  }
  if (isComplex && (r.op == weftMin || r.op == weftMax || r.op == weftProd) && !r.preMulSum) {
    refuse(collective,
           "complex tensors can be reduced with SUM, AVG and PREMUL_SUM only (no order, and a product "
           "of complex numbers is not element-wise on their parts)");
  }
  return r;
}

}  // namespace weft_torch
