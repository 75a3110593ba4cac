// How torch's dtypes and c10d's reduce ops become Weft's datatypes and ops: one table each, read
// by every collective of the backend (process_group.cc). Refusals are thrown here, on the calling
// thread, so that `dist.all_reduce(t, op=ReduceOp.BAND)` raises at the call with a sentence that
// says what Weft supports.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstddef>
#include <string>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "weft/weft.h"

namespace weft_torch {

// A tensor's elements as Weft sees them: complex tensors are pairs of reals, bool is uint8.
struct WeftElements {
  weftDataType_t type;
  size_t perElement;  // Weft elements per torch element (2 for complex)
};

// The Weft datatype for a dtype; throws std::invalid_argument naming the dtype when Weft has none.
WeftElements weftElements(c10::ScalarType dtype, const char* collective);

// A reduce op mapped for a dtype. PREMUL_SUM carries its factor; the op itself is made on the
// communicator when the collective runs (weftRedOpCreatePreMulSum).
struct WeftReduction {
  weftRedOp_t op = weftSum;
  bool preMulSum = false;
  double factor = 1.0;  // PREMUL_SUM with a number
  bool hasFactorTensor = false;
  at::Tensor factorTensor;  // PREMUL_SUM with a (one-element) tensor
};

// Maps c10d's ReduceOp (SUM 0, AVG 1, PRODUCT 2, MIN 3, MAX 4, BAND 5, BOR 6, BXOR 7,
// PREMUL_SUM 8) to Weft's (sum 0, prod 1, max 2, min 3, avg 4); throws std::invalid_argument for
// the bitwise ops and for ops a dtype cannot take (e.g. MIN on complex).
WeftReduction weftReduction(const c10d::ReduceOp& op, c10::ScalarType dtype, const char* collective);

}  // namespace weft_torch
