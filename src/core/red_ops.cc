// Reduction ops made at run time (weftRedOpCreatePreMulSum / weftRedOpDestroy): each
// communicator keeps a table of its premul-sum ops, the executors read an op's scalar from it
// when a collective runs (host_calls.cc, comm_device.cc), and the C API (call_context.cc) checks an
// op against it.
//
// An op's value is weftNumOps + (tag << 20) + index: the tag comes from the communicator's id,
// so that an op of another communicator is refused (unless the 10-bit tags collide), and the
// index counts this communicator's creations, so that every rank that creates its ops in the
// same order gets the same values. Indices are not reused until 2^20 ops were made, so a
// destroyed op is recognised as such until then.
#include <cstring>

#include "collectives/datatypes.h"
#include "core/comm.h"
#include "device/device.h"

namespace weft {
namespace core {
namespace {

constexpr uint32_t kRedOpTagBits = 10;

// The parts of an op's value (meaningful for values >= weftNumOps).
uint32_t indexOf(weftRedOp_t op, int indexBits) {
  return static_cast<uint32_t>((static_cast<int64_t>(op) - weftNumOps) & ((int64_t{1} << indexBits) - 1));
}

bool deviceReachable(device::MemoryKind kind) {
  return kind == device::MemoryKind::kDevice || kind == device::MemoryKind::kManaged ||
         kind == device::MemoryKind::kPinnedHost;
}

}  // namespace

uint32_t Communicator::redOpTag() const {
  uint32_t h = 2166136261u;  // FNV-1a of the communicator's tag, the same on every rank
  for (char c : commTag_) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return (h ^ (h >> kRedOpTagBits) ^ (h >> 2 * kRedOpTagBits)) & ((1u << kRedOpTagBits) - 1);
}

Status Communicator::createPreMulSum(const void* scalar, weftDataType_t type, weftScalarResidence_t residence,
                                     weftRedOp_t* out) {
  PreMulSumOp op;
  op.type = type;
  const size_t elemSize = coll::dataTypeSize(type);
  if (residence == weftScalarDevice) {
    device::Runtime* runtime = device::gpuRuntime();
    if (runtime == nullptr) {
      return WEFT_ERROR(weftInvalidArgument,
                        "rank %d: weftRedOpCreatePreMulSum: the scalar is weftScalarDevice but no GPU backend is "
                        "loaded (WEFT_DEBUG=INFO says why); pass a pointer to host memory with "
                        "weftScalarHostImmediate",
                        rank_);
    }
    device::PointerInfo info;
    Status s = runtime->pointerInfo(scalar, &info);
    if (!s.isOk() || !deviceReachable(info.kind)) {
      return WEFT_ERROR(weftInvalidArgument,
                        "rank %d: weftRedOpCreatePreMulSum: the scalar %p is weftScalarDevice but %s; pass device "
                        "memory (or pinned / managed host memory), or use weftScalarHostImmediate for host memory",
                        rank_, scalar, s.isOk() ? "is pageable host memory" : s.message().c_str());
    }
    op.deviceScalar = true;
    op.device = scalar;
  } else {
    std::memcpy(&op.value, scalar, elemSize);
  }
  std::lock_guard<std::mutex> lock(redOpsMutex_);
  constexpr uint32_t kIndices = 1u << kRedOpIndexBits;
  if (redOps_.size() >= kIndices) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: weftRedOpCreatePreMulSum: this communicator already has %u live premul-sum ops, the "
                      "most it can hold; destroy the ones no longer used with weftRedOpDestroy",
                      rank_, kIndices);
  }
  while (redOps_.count(nextRedOpIndex_) != 0) nextRedOpIndex_ = (nextRedOpIndex_ + 1) % kIndices;
  const uint32_t index = nextRedOpIndex_;
  nextRedOpIndex_ = (nextRedOpIndex_ + 1) % kIndices;
  if (nextRedOpIndex_ == 0) redOpIndicesWrapped_ = true;
  redOps_[index] = op;
  *out = static_cast<weftRedOp_t>(weftNumOps + static_cast<int>((redOpTag() << kRedOpIndexBits) | index));
  return Status::ok();
}

Status Communicator::findPreMulSum(weftRedOp_t op, weftDataType_t type, const char* fn, PreMulSumOp* out) const {
  const int64_t v = static_cast<int64_t>(op) - weftNumOps;
  const uint32_t index = indexOf(op, kRedOpIndexBits);
  if (v < 0 || static_cast<uint32_t>(v >> kRedOpIndexBits) != redOpTag()) {
    return WEFT_ERROR(weftInvalidArgument,
                      "rank %d: %s: op %d is not a weftRedOp_t of this communicator: the built-in ops are 0..%d, and "
                      "an op made by weftRedOpCreatePreMulSum is valid only on the communicator that made it",
                      rank_, fn, static_cast<int>(op), weftNumOps - 1);
  }
  std::lock_guard<std::mutex> lock(redOpsMutex_);
  auto it = redOps_.find(index);
  if (it == redOps_.end()) {
    bool destroyed = redOpIndicesWrapped_ || index < nextRedOpIndex_;
    return WEFT_ERROR(weftInvalidArgument, "rank %d: %s: op %d %s; create one with weftRedOpCreatePreMulSum", rank_, fn,
                      static_cast<int>(op),
                      destroyed ? "was destroyed by weftRedOpDestroy" : "was never made by this communicator");
  }
  if (it->second.type != type) {
    return WEFT_ERROR(weftInvalidArgument,
                      "rank %d: %s: op %d is a premul-sum made for datatype %s but the call's datatype is %s; make "
                      "an op for each datatype with weftRedOpCreatePreMulSum",
                      rank_, fn, static_cast<int>(op), coll::dataTypeName(it->second.type), coll::dataTypeName(type));
  }
  if (out != nullptr) *out = it->second;
  return Status::ok();
}

Status Communicator::checkRedOp(weftRedOp_t op, weftDataType_t type, const char* fn) const {
  return findPreMulSum(op, type, fn, nullptr);
}

Status Communicator::destroyRedOp(weftRedOp_t op) {
  // An op is destroyed whatever its datatype: look it up with its own.
  const uint32_t index = indexOf(op, kRedOpIndexBits);
  weftDataType_t type = weftFloat32;
  {
    std::lock_guard<std::mutex> lock(redOpsMutex_);
    auto it = redOps_.find(index);
    if (it != redOps_.end()) type = it->second.type;
  }
  WEFT_TRY(findPreMulSum(op, type, "weftRedOpDestroy", nullptr));
  std::lock_guard<std::mutex> lock(redOpsMutex_);
  redOps_.erase(index);
  return Status::ok();
}

Status Communicator::readScalar(const PreMulSumOp& op, uint64_t* bytes) const {
  *bytes = op.value;
  if (!op.deviceScalar) return Status::ok();
  device::Runtime* runtime = device::gpuRuntime();
  if (runtime == nullptr) {
    return WEFT_ERROR(weftInternalError, "rank %d: a premul-sum's device scalar, but no GPU backend is loaded", rank_);
  }
  Status s = runtime->copy(bytes, op.device, coll::dataTypeSize(op.type), device::CopyKind::kDeviceToHost);
  if (!s.isOk()) {
    return std::move(s).withPrefix("rank " + std::to_string(rank_) +
                                   ": reading the device scalar of a premul-sum op for a collective on host buffers: ");
  }
  return Status::ok();
}

}  // namespace core
}  // namespace weft
