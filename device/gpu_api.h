// The CUDA / HIP compatibility layer for the host side of the GPU modules: gpu_runtime.cu,
// gpu_call.cu and gpu_module_entry.cu are written once against these names, and nvcc builds
// them into libweft-cuda.so, hipcc into libweft-hip.so. Names that differ only by prefix go
// through WEFT_GPU(Name) (cudaName / hipName); the few that differ otherwise are spelled out
// below. Device code uses platform.h.
#ifndef WEFT_DEVICE_GPU_API_H_
#define WEFT_DEVICE_GPU_API_H_

#include <string>

#include "device/device.h"

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#include <unistd.h>

#define WEFT_GPU(name) hip##name
#define WEFT_GPU_PREFIX "hip"
#define WEFT_GPU_BACKEND_NAME "hip"
#define WEFT_GPU_VENDOR "AMD"
#define WEFT_GPU_RUNTIME "HIP"
#define WEFT_GPU_UNITS "CUs"

namespace weft {
namespace device {
using GpuError = hipError_t;
using GpuStream = hipStream_t;
using GpuEvent = hipEvent_t;
using GpuDeviceProp = hipDeviceProp_t;
using GpuPointerAttributes = hipPointerAttribute_t;
using GpuIpcMemHandle = hipIpcMemHandle_t;
constexpr GpuError kGpuSuccess = hipSuccess;
constexpr auto kGpuPageableMemoryAccess = hipDeviceAttributePageableMemoryAccess;

inline GpuError gpuHostAlloc(void** ptr, size_t bytes) { return hipHostMalloc(ptr, bytes, hipHostMallocDefault); }
inline GpuError gpuHostFree(void* ptr) { return hipHostFree(ptr); }
constexpr const char* kGpuHostAllocName = "hipHostMalloc";
// Memory other agents poll while kernels run (device.h, Sharing::kAgents), as RCCL allocates
// it: device memory fine-grained (uncached where the runtime has the flag: ROCm 5.3 and later),
// so that a peer GPU's or the host's writes reach a polling kernel; host memory coherent and
// mapped, whatever HIP_HOST_COHERENT says (its default, 0, makes hipHostMalloc non-coherent).
#if defined(hipDeviceMallocUncached)
constexpr unsigned kGpuSharedDeviceFlags = hipDeviceMallocUncached;
constexpr const char* kGpuSharedDeviceAllocName = "hipExtMallocWithFlags(hipDeviceMallocUncached)";
#else
constexpr unsigned kGpuSharedDeviceFlags = hipDeviceMallocFinegrained;
constexpr const char* kGpuSharedDeviceAllocName = "hipExtMallocWithFlags(hipDeviceMallocFinegrained)";
#endif
inline GpuError gpuDeviceAllocShared(void** ptr, size_t bytes) {
  return hipExtMallocWithFlags(ptr, bytes, kGpuSharedDeviceFlags);
}
inline GpuError gpuHostAllocShared(void** ptr, size_t bytes) {
  return hipHostMalloc(ptr, bytes, hipHostMallocPortable | hipHostMallocMapped | hipHostMallocCoherent);
}
constexpr const char* kGpuSharedHostAllocName = "hipHostMalloc(coherent, mapped)";
constexpr const char* kGpuHostFreeName = "hipHostFree";

// HIP 5 reports unregistered host memory as an error rather than as a kind.
inline bool gpuIsUnregisteredHostError(GpuError e) { return e == hipErrorInvalidValue; }
inline MemoryKind gpuMemoryKind(const GpuPointerAttributes& a) {
  if (a.isManaged) return MemoryKind::kManaged;
#if HIP_VERSION_MAJOR >= 6
  // ROCm 6 renamed the field and, like CUDA, reports unregistered memory as a kind.
  switch (a.type) {
    case hipMemoryTypeManaged:
      return MemoryKind::kManaged;
    case hipMemoryTypeDevice:
      return MemoryKind::kDevice;
    case hipMemoryTypeHost:
      return MemoryKind::kPinnedHost;
    default:
      return MemoryKind::kHost;
  }
#else
  return a.memoryType == hipMemoryTypeHost ? MemoryKind::kPinnedHost : MemoryKind::kDevice;
#endif
}

// HIP versions are major * 10^7 + minor * 10^5 + patch.
inline std::string gpuVersionText(int v) {
  return std::to_string(v / 10000000) + "." + std::to_string(v / 100000 % 100);
}

inline std::string gpuArchName(const GpuDeviceProp& p) {
  // "gfx90a:sramecc+:xnack-" -> "gfx90a"
  std::string arch = p.gcnArchName;
  return arch.substr(0, arch.find(':'));
}

// Why there may be no device even though the runtime loaded.
inline const char* gpuDriverHint() {
  return access("/dev/kfd", F_OK) == 0 ? "" : " (/dev/kfd is missing: the amdgpu kernel driver is not loaded)";
}

// The GPU's UUID (formatUuid), "" where the runtime has none (hipDeviceGetUuid: ROCm 5.2 on).
inline std::string gpuUuid(const GpuDeviceProp&, int device) {
#if HIP_VERSION >= 50200000
  hipUUID id;
  if (hipDeviceGetUuid(&id, device) != hipSuccess) {
    (void)hipGetLastError();
    return "";
  }
  unsigned char bytes[16];
  for (int i = 0; i < 16; ++i) bytes[i] = static_cast<unsigned char>(id.bytes[i]);
  return formatUuid(bytes);
#else
  (void)device;
  return "";
#endif
}
}  // namespace device
}  // namespace weft

#elif defined(__CUDACC__)
#include <cuda_runtime.h>
#include <dlfcn.h>

#define WEFT_GPU(name) cuda##name
#define WEFT_GPU_PREFIX "cuda"
#define WEFT_GPU_BACKEND_NAME "cuda"
#define WEFT_GPU_VENDOR "NVIDIA"
#define WEFT_GPU_RUNTIME "CUDA"
#define WEFT_GPU_UNITS "SMs"

namespace weft {
namespace device {
using GpuError = cudaError_t;
using GpuStream = cudaStream_t;
using GpuEvent = cudaEvent_t;
using GpuDeviceProp = cudaDeviceProp;
using GpuPointerAttributes = cudaPointerAttributes;
using GpuIpcMemHandle = cudaIpcMemHandle_t;
constexpr GpuError kGpuSuccess = cudaSuccess;
constexpr auto kGpuPageableMemoryAccess = cudaDevAttrPageableMemoryAccess;

inline GpuError gpuHostAlloc(void** ptr, size_t bytes) { return cudaMallocHost(ptr, bytes); }
inline GpuError gpuHostFree(void* ptr) { return cudaFreeHost(ptr); }
constexpr const char* kGpuHostAllocName = "cudaMallocHost";
// CUDA's ordinary allocations are already what other agents may poll (device.h, Sharing).
inline GpuError gpuDeviceAllocShared(void** ptr, size_t bytes) { return cudaMalloc(ptr, bytes); }
inline GpuError gpuHostAllocShared(void** ptr, size_t bytes) { return cudaMallocHost(ptr, bytes); }
constexpr const char* kGpuSharedDeviceAllocName = "cudaMalloc";
constexpr const char* kGpuSharedHostAllocName = "cudaMallocHost";
constexpr const char* kGpuHostFreeName = "cudaFreeHost";

inline bool gpuIsUnregisteredHostError(GpuError) { return false; }
inline MemoryKind gpuMemoryKind(const GpuPointerAttributes& a) {
  switch (a.type) {
    case cudaMemoryTypeManaged:
      return MemoryKind::kManaged;
    case cudaMemoryTypeDevice:
      return MemoryKind::kDevice;
    case cudaMemoryTypeHost:
      return MemoryKind::kPinnedHost;
    default:
      return MemoryKind::kHost;
  }
}

// The GPU's UUID (formatUuid) from its properties.
inline std::string gpuUuid(const GpuDeviceProp& p, int) {
  unsigned char bytes[16];
  for (int i = 0; i < 16; ++i) bytes[i] = static_cast<unsigned char>(p.uuid.bytes[i]);
  return formatUuid(bytes);
}

// CUDA versions are major * 1000 + minor * 10.
inline std::string gpuVersionText(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

inline std::string gpuArchName(const GpuDeviceProp& p) {
  return "sm_" + std::to_string(p.major) + std::to_string(p.minor);
}

inline const char* gpuDriverHint() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver != nullptr) return "";
  return " (libcuda.so.1 is missing: the NVIDIA driver is not installed)";
}
}  // namespace device
}  // namespace weft

#else
#error "gpu_api.h is compiled by nvcc (CUDA) or hipcc (HIP) only"
#endif

#endif  // WEFT_DEVICE_GPU_API_H_
