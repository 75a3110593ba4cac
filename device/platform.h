// The vocabulary device code is written in, once for CUDA, HIP and the host compiler
// (../shared/DESIGN.md, "Device code"). Kernels in collectives/device/*.cuh use only these
// names, so nvcc, hipcc and g++ compile the same source.
#ifndef WEFT_DEVICE_PLATFORM_H_
#define WEFT_DEVICE_PLATFORM_H_

#if defined(__CUDACC__) || defined(__HIPCC__)
#define WEFT_HOST_DEVICE __host__ __device__
#define WEFT_DEVICE __device__
#define WEFT_GLOBAL __global__
#define WEFT_COMPILING_FOR_DEVICE 1
#else
#define WEFT_HOST_DEVICE
#define WEFT_DEVICE
#define WEFT_GLOBAL
#define WEFT_COMPILING_FOR_DEVICE 0
#endif

#if defined(__HIP_DEVICE_COMPILE__)
// AMD wavefronts are 64 lanes on CDNA (gfx9xx) and 32 on RDNA (gfx10+).
#if defined(__GFX10__) || defined(__GFX11__) || defined(__GFX12__)
#define WEFT_WARP_SIZE 32
#else
#define WEFT_WARP_SIZE 64
#endif
#elif defined(__CUDA_ARCH__)
#define WEFT_WARP_SIZE 32
#else
#define WEFT_WARP_SIZE 1  // host: one "lane"
#endif

// ---- Flags between ranks --------------------------------------------------------------------
// The lane program's counters and abort flags live in memory another rank (another GPU, another
// process, the host) reads. A writer makes its data visible before the counter that announces
// it (release); a reader sees the data after it saw the counter (acquire). On the GPUs that is a
// system-wide fence around a volatile access; on the host, the compiler's atomics.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define WEFT_FLAGS_DEVICE 1
#else
#define WEFT_FLAGS_DEVICE 0
#include <chrono>
#include <thread>
#endif

#include <stdint.h>

namespace weft {

// Relaxed accesses to a word other agents poll or write, at system scope. On AMD GPUs a
// system-scope atomic, which on the fine-grained or uncached memory such words live in (device.h,
// Sharing::kAgents) goes past the caches that would hide the other agent's writes, as RCCL's
// polls do on MI250X / MI300X; on NVIDIA GPUs a volatile access (never cached in a register,
// never torn: aligned words; their memory is coherent); on the host the compiler's relaxed
// atomics.
template <typename T>
WEFT_HOST_DEVICE inline T weftLoadSystem(const T* p) {
#if defined(__HIP_DEVICE_COMPILE__)
  return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
#elif WEFT_FLAGS_DEVICE
  return *reinterpret_cast<const volatile T*>(p);
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

template <typename T>
WEFT_HOST_DEVICE inline void weftStoreSystem(T* p, T v) {
#if defined(__HIP_DEVICE_COMPILE__)
  __hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
#elif WEFT_FLAGS_DEVICE
  *reinterpret_cast<volatile T*>(p) = v;
#else
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

// Polling (NCCL's pattern): a waiter reads the counter with relaxed loads, which stay cheap
// while nothing has changed, and orders what follows with one acquire fence once the condition
// holds (weftAcquireFence); a poster writes its data and the slot's size and stamp with relaxed
// stores, then publishes them all with one release store of the counter. The fences are
// system-wide on the GPUs (the peer may be another GPU, over NVLink, xGMI or PCIe, or the
// host), so a wait costs one fence when it ends instead of one per poll, and a post one instead
// of one per word.
WEFT_HOST_DEVICE inline uint64_t weftLoadRelaxed(const uint64_t* p) { return weftLoadSystem(p); }

WEFT_HOST_DEVICE inline uint32_t weftLoadRelaxed32(const uint32_t* p) { return weftLoadSystem(p); }

WEFT_HOST_DEVICE inline void weftStoreRelaxed(uint64_t* p, uint64_t v) { weftStoreSystem(p, v); }

// After relaxed loads that saw a counter move: what the poster wrote before it is visible.
WEFT_HOST_DEVICE inline void weftAcquireFence() {
#if WEFT_FLAGS_DEVICE
  __threadfence_system();
#else
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}

// Before relaxed stores that announce data: everything this thread wrote before (and, after a
// block barrier, its block's threads) is visible to whoever sees those stores.
WEFT_HOST_DEVICE inline void weftReleaseFence() {
#if WEFT_FLAGS_DEVICE
  __threadfence_system();
#else
  __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

WEFT_HOST_DEVICE inline uint64_t weftLoadAcquire(const uint64_t* p) {
  const uint64_t v = weftLoadRelaxed(p);
  weftAcquireFence();
  return v;
}

WEFT_HOST_DEVICE inline void weftStoreRelease(uint64_t* p, uint64_t v) {
#if WEFT_FLAGS_DEVICE
  __threadfence_system();
  weftStoreSystem(p, v);
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

WEFT_HOST_DEVICE inline uint32_t weftLoadAcquire32(const uint32_t* p) {
  const uint32_t v = weftLoadRelaxed32(p);
  weftAcquireFence();
  return v;
}

WEFT_HOST_DEVICE inline void weftStoreRelease32(uint32_t* p, uint32_t v) {
#if WEFT_FLAGS_DEVICE
  __threadfence_system();
  weftStoreSystem(p, v);
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

// Stores `desired` when *p == expected; returns what *p held. Only lanes of one launch race on
// the words it is used for, so device scope is enough.
WEFT_HOST_DEVICE inline uint32_t weftCompareSwap32(uint32_t* p, uint32_t expected, uint32_t desired) {
#if WEFT_FLAGS_DEVICE
  return atomicCAS(reinterpret_cast<unsigned int*>(p), expected, desired);
#else
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return expected;
#endif
}

// Nanoseconds from an arbitrary start, for the lanes' time-outs.
WEFT_HOST_DEVICE inline uint64_t weftNowNs() {
#if defined(__CUDA_ARCH__)
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#elif defined(__HIP_DEVICE_COMPILE__)
  return wall_clock64() * 10;  // the constant 100 MHz clock of gfx9 and later
#else
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
#endif
}

// Lets others run while a lane polls a flag.
WEFT_HOST_DEVICE inline void weftSpinPause() {
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 700
  __nanosleep(64);
#endif
#elif defined(__HIP_DEVICE_COMPILE__)
  __builtin_amdgcn_s_sleep(1);
#else
  std::this_thread::yield();
#endif
}

}  // namespace weft

#endif  // WEFT_DEVICE_PLATFORM_H_
