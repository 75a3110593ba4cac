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

#endif  // WEFT_DEVICE_PLATFORM_H_
