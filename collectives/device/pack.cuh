// Memory access for the element-wise kernels: 16-byte packs for the aligned middle of a buffer,
// typed scalar access for the rest, byte access for pointers that are not even aligned to their
// element, and the plan that picks among them for a set of pointers.
//
// Written once for nvcc, hipcc and g++ (platform.h); reduce_copy.cuh is the caller.
#ifndef WEFT_COLLECTIVES_DEVICE_PACK_CUH_
#define WEFT_COLLECTIVES_DEVICE_PACK_CUH_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "collectives/datatypes.h"
#include "device/platform.h"

// Set in the device pass of nvcc / hipcc, where a pack is loaded with one 128-bit instruction.
// The host pass (and g++) moves packs with memcpy, which is the same instruction on x86 and
// keeps the host build free of type-punning.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define WEFT_KERNEL_DEVICE_PASS 1
#else
#define WEFT_KERNEL_DEVICE_PASS 0
#endif

// Fully unrolls the loop that follows on the GPU, where an array indexed by a loop that stays
// rolled (the per-element conversions of Half and FP8 are long enough for that) lives in local
// memory instead of registers. The host compilers (g++, nvcc's host pass) decide for themselves.
#if WEFT_KERNEL_DEVICE_PASS
#define WEFT_UNROLL _Pragma("unroll")
#else
#define WEFT_UNROLL
#endif

namespace weft {
namespace coll {
namespace kernel {

constexpr size_t kPackBytes = 16;

// The host pass stops where a GPU would fault: an access misaligned for its width. x86 would
// carry it out, so without this the host tests could not see a wrong head or a wrong plan.
WEFT_HOST_DEVICE inline void trapIfMisaligned(const void* p, size_t alignment) {
#if WEFT_KERNEL_DEVICE_PASS
  (void)p;
  (void)alignment;
#else
  if (reinterpret_cast<uintptr_t>(p) % alignment != 0) __builtin_trap();
#endif
}

// The raw 16 bytes as the hardware moves them (ld.global.v2.u64 / global_load_dwordx4).
struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};

// 16 bytes viewed as elements of T.
template <typename T>
struct alignas(16) Pack {
  static constexpr int kElems = static_cast<int>(kPackBytes / sizeof(T));
  T e[kElems];
};

// p must be 16-byte aligned.
template <typename T>
WEFT_HOST_DEVICE inline Pack<T> loadPack(const void* p) {
  static_assert(sizeof(Pack<T>) == kPackBytes, "a pack is 16 bytes");
#if WEFT_KERNEL_DEVICE_PASS
  // Into a register first: bitCast's memcpy straight from memory would lose the alignment and
  // become 16 byte loads.
  const Bytes16 raw = *static_cast<const Bytes16*>(p);
  return bitCast<Pack<T>>(raw);
#else
  trapIfMisaligned(p, kPackBytes);
  Pack<T> v;
  memcpy(&v, p, kPackBytes);
  return v;
#endif
}

template <typename T>
WEFT_HOST_DEVICE inline void storePack(void* p, const Pack<T>& v) {
#if WEFT_KERNEL_DEVICE_PASS
  const Bytes16 raw = bitCast<Bytes16>(v);
  *static_cast<Bytes16*>(p) = raw;
#else
  trapIfMisaligned(p, kPackBytes);
  memcpy(p, &v, kPackBytes);
#endif
}

// Element i of a buffer whose pointer is aligned to T.
struct TypedAccess {
  template <typename T>
  WEFT_HOST_DEVICE static T load(const void* base, size_t i) {
    trapIfMisaligned(base, alignof(T));
    return static_cast<const T*>(base)[i];
  }
  template <typename T>
  WEFT_HOST_DEVICE static void store(void* base, size_t i, T v) {
    trapIfMisaligned(base, alignof(T));
    static_cast<T*>(base)[i] = v;
  }
};

// Element i of a buffer at any byte address: byte loads and stores (a GPU faults on a
// misaligned wider access). The bytes are addressed through unsigned char pointers made from
// void*, so no compiler can assume the alignment of T.
struct ByteAccess {
  template <typename T>
  WEFT_HOST_DEVICE static T load(const void* base, size_t i) {
    const unsigned char* p = static_cast<const unsigned char*>(base) + i * sizeof(T);
    unsigned char b[sizeof(T)];
    for (size_t k = 0; k < sizeof(T); ++k) b[k] = p[k];
    T v;
    memcpy(&v, b, sizeof(T));
    return v;
  }
  template <typename T>
  WEFT_HOST_DEVICE static void store(void* base, size_t i, T v) {
    unsigned char* p = static_cast<unsigned char*>(base) + i * sizeof(T);
    unsigned char b[sizeof(T)];
    memcpy(b, &v, sizeof(T));
    for (size_t k = 0; k < sizeof(T); ++k) p[k] = b[k];
  }
};

// How a set of buffers of `count` elements of T is walked.
enum class AccessPath : uint8_t {
  kPacks,     // all pointers at the same address mod 16: scalar head, 16-byte packs, scalar tail
  kElements,  // all aligned to T but at different addresses mod 16: typed scalar access
  kBytes,     // some pointer not aligned to T: byte access
};

struct AccessPlan {
  AccessPath path;
  size_t head;    // elements before the first pack (kPacks), else 0
  size_t nPacks;  // packs after the head (kPacks), else 0
};

// The plan for nSrcs sources and nDsts destinations. Every thread computes the same plan.
template <typename T>
WEFT_HOST_DEVICE inline AccessPlan planAccess(int nSrcs, const void* const* srcs, int nDsts, void* const* dsts,
                                              size_t count) {
  const uintptr_t first = reinterpret_cast<uintptr_t>(srcs[0]);
  uintptr_t any = 0;     // OR of all addresses: its low bits say whether all are aligned to T
  uintptr_t differ = 0;  // OR of (address ^ first): its low 4 bits say whether all agree mod 16
  for (int s = 0; s < nSrcs; ++s) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(srcs[s]);
    any |= a;
    differ |= a ^ first;
  }
  for (int d = 0; d < nDsts; ++d) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(dsts[d]);
    any |= a;
    differ |= a ^ first;
  }
  if (any % sizeof(T) != 0) return AccessPlan{AccessPath::kBytes, 0, 0};
  if (differ % kPackBytes != 0) return AccessPlan{AccessPath::kElements, 0, 0};
  // Elements until the first pointer (hence all) reaches a 16-byte boundary.
  size_t head = ((kPackBytes - first % kPackBytes) % kPackBytes) / sizeof(T);
  if (head > count) head = count;
  return AccessPlan{AccessPath::kPacks, head, (count - head) / Pack<T>::kElems};
}

}  // namespace kernel
}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_DEVICE_PACK_CUH_
