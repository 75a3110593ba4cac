// What every runtime shares: names for logs and the argument checks of a reduce-copy launch.
// Also linked into the GPU modules, so the host and the GPUs reject the same arguments with
// the same words.
#include "device/device.h"

namespace weft {
namespace device {

const char* memoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kHost:
      return "host";
    case MemoryKind::kPinnedHost:
      return "pinned host";
    case MemoryKind::kDevice:
      return "device";
    case MemoryKind::kManaged:
      return "managed";
  }
  return "unknown";
}

Status checkReduceCopyArgs(const ReduceCopyArgs& a) {
  if (a.nSrcs < 1 || a.nSrcs > kMaxReduceSrcs) {
    return WEFT_ERROR(weftInvalidArgument, "reduce-copy: nSrcs is %d; it must be 1 to %d", a.nSrcs, kMaxReduceSrcs);
  }
  if (a.nDsts < 1 || a.nDsts > kMaxReduceDsts) {
    return WEFT_ERROR(weftInvalidArgument, "reduce-copy: nDsts is %d; it must be 1 to %d", a.nDsts, kMaxReduceDsts);
  }
  if (static_cast<int>(a.type) < 0 || static_cast<int>(a.type) >= weftNumTypes) {
    return WEFT_ERROR(weftInvalidArgument, "reduce-copy: datatype %d is not a weftDataType_t",
                      static_cast<int>(a.type));
  }
  if (static_cast<int>(a.op) < 0 || static_cast<int>(a.op) >= weftNumOps) {
    return WEFT_ERROR(weftInvalidArgument, "reduce-copy: op %d is not a weftRedOp_t", static_cast<int>(a.op));
  }
  if (a.op == weftAvg && a.divisor == 0) {
    return WEFT_ERROR(weftInvalidArgument, "reduce-copy: weftAvg with divisor 0; pass the rank count");
  }
  if (a.divisor > UINT32_MAX) {
    // The kernels divide by a 32-bit rank count.
    return WEFT_ERROR(weftInvalidArgument, "reduce-copy: divisor %llu is larger than any rank count (2^32 - 1)",
                      static_cast<unsigned long long>(a.divisor));
  }
  if (a.count == 0) return Status::ok();
  for (int i = 0; i < a.nSrcs; ++i) {
    if (a.srcs[i] == nullptr) {
      return WEFT_ERROR(weftInvalidArgument, "reduce-copy: srcs[%d] is null with %llu elements to read", i,
                        static_cast<unsigned long long>(a.count));
    }
  }
  for (int j = 0; j < a.nDsts; ++j) {
    if (a.dsts[j] == nullptr) {
      return WEFT_ERROR(weftInvalidArgument, "reduce-copy: dsts[%d] is null with %llu elements to write", j,
                        static_cast<unsigned long long>(a.count));
    }
  }
  return Status::ok();
}

}  // namespace device
}  // namespace weft
