// What every part of a GPU module (gpu_runtime.cu, gpu_module_entry.cu) says about CUDA / HIP
// calls: a failed call as a Status a person reads (gpu_call.cu), WEFT_GPU_TRY around each
// call, and the runtime's types for the device interface's handles (device.h). Compiled by
// nvcc or hipcc only, as gpu_api.h is.
#ifndef WEFT_DEVICE_GPU_CALL_H_
#define WEFT_DEVICE_GPU_CALL_H_

#include <cstddef>
#include <string>

#include "device/device.h"
#include "device/gpu_api.h"

namespace weft {
namespace device {

// base/os.h's formatBytes, which lives in an object this module does not link.
std::string bytesText(size_t bytes);

// "out of memory (cudaErrorMemoryAllocation)"; just the name where the runtime has no
// sentence for it (HIP 5 answers some errors with their name).
std::string gpuErrorText(GpuError err);

// A failed runtime call as a person reads it: "cudaMalloc(1 GiB) on device 3: out of memory
// (cudaErrorMemoryAllocation)". Clears the runtime's last error, so that the next check does
// not report this failure again.
Status gpuFailure(GpuError err, const char* call, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

#define WEFT_GPU_NAME(name) WEFT_GPU_PREFIX #name

// Calls cudaName / hipName with `args`; on failure returns the Status that names it.
#define WEFT_GPU_TRY(name, args, ...)                                                         \
  do {                                                                                        \
    GpuError weft_gpu_err_ = WEFT_GPU(name) args;                                             \
    if (weft_gpu_err_ != kGpuSuccess) {                                                       \
      return gpuFailure(weft_gpu_err_, WEFT_GPU_NAME(name), __FILE__, __LINE__, __VA_ARGS__); \
    }                                                                                         \
  } while (0)

// WEFT_STREAM_DEFAULT (device.h) is the current device's default stream: CUDA's legacy
// default stream, which synchronizes with other blocking streams as NCCL's NULL does; HIP's
// NULL stream.
inline GpuStream gpuStream(Stream s) {
  if (isDefaultStreamHandle(s)) {
#if defined(__HIPCC__)
    return nullptr;
#else
    return cudaStreamLegacy;
#endif
  }
  return reinterpret_cast<GpuStream>(s);
}
inline GpuEvent gpuEvent(Event e) { return reinterpret_cast<GpuEvent>(e); }

// What a Graph points to: the captured graph and its executable instance.
struct GpuGraph {
  WEFT_GPU(Graph_t) graph = nullptr;
  WEFT_GPU(GraphExec_t) exec = nullptr;
};
inline GpuGraph* gpuGraph(Graph g) { return reinterpret_cast<GpuGraph*>(g); }

inline WEFT_GPU(MemcpyKind) gpuCopyKind(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHostToDevice:
      return WEFT_GPU(MemcpyHostToDevice);
    case CopyKind::kDeviceToHost:
      return WEFT_GPU(MemcpyDeviceToHost);
    case CopyKind::kDeviceToDevice:
      return WEFT_GPU(MemcpyDeviceToDevice);
    case CopyKind::kDefault:
      break;
  }
  return WEFT_GPU(MemcpyDefault);
}

}  // namespace device
}  // namespace weft

#endif  // WEFT_DEVICE_GPU_CALL_H_
