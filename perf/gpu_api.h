// weft-perf's own access to a GPU: the few CUDA or HIP runtime calls a benchmark needs (device
// count, device choice, memory, copies, streams, events), loaded with dlopen from libcudart.so*
// or libamdhip64.so*, so that weft-perf builds and runs where neither is installed. weft-perf
// stands on the public API alone (DESIGN.md), so it cannot borrow libweft's device runtime: an
// application hands Weft memory it allocated with its vendor's runtime, and so does weft-perf.
// bench.cc allocates the --mem device buffers through it; peer_nccl.cc runs NCCL (RCCL on HIP).
//
// CUDA and HIP share these functions' C signatures (handles are pointers, enums are int, and
// the copy kinds and stream flags have the same values), so one table serves both; only the
// prefix of the names differs.
#ifndef WEFT_PERF_GPU_API_H_
#define WEFT_PERF_GPU_API_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace weft::perf {

// Success, or the failed call as a person reads it: "cudaMalloc(256 MiB) on GPU 0: out of
// memory (cudaErrorMemoryAllocation)".
struct [[nodiscard]] GpuStatus {
  std::string error;  // empty: success
  bool ok() const { return error.empty(); }
};

// cudaMemcpyKind / hipMemcpyKind, same values in both.
enum class GpuCopy : int { kHostToDevice = 1, kDeviceToHost = 2, kDeviceToDevice = 3 };

// cudaStream_t / hipStream_t and cudaEvent_t / hipEvent_t.
using GpuStream = void*;
using GpuEvent = void*;

// cudaStreamNonBlocking / hipStreamNonBlocking: the stream does not wait for the legacy default
// stream (nccl-tests makes its streams so).
constexpr unsigned kGpuStreamNonBlocking = 1;

// One runtime to try: the prefix of its functions and its library's file names, in order.
struct GpuLibrary {
  std::string api;  // "cuda" or "hip"
  std::vector<std::string> files;
};

// CUDA (libcudart.so, .so.13, .so.12, .so.11.0), then HIP (libamdhip64.so, .so.6, .so.5).
const std::vector<GpuLibrary>& defaultGpuLibraries();

class GpuApi {
 public:
  struct Table;  // the runtime's functions (gpu_api.cc)
  GpuApi(std::string api, std::string file, std::unique_ptr<Table> table, int devices);
  ~GpuApi();
  GpuApi(const GpuApi&) = delete;
  GpuApi& operator=(const GpuApi&) = delete;

  const char* name() const;                           // "CUDA" or "HIP"
  const std::string& prefix() const { return api_; }  // "cuda" or "hip"
  const std::string& file() const { return file_; }   // the library that was loaded
  int deviceCount() const { return devices_; }
  std::string version() const;  // "CUDA runtime 13.0, driver 13.0"
  // The device's name ("NVIDIA H100 80GB HBM3") and PCI bus id ("0000:17:00.0"); "" when the
  // runtime does not say.
  std::string deviceName(int device) const;
  std::string pciBusId(int device) const;

  GpuStatus setDevice(int device);
  GpuStatus getDevice(int* device) const;
  // Memory on the current device; 0 bytes gives nullptr. Freeing nullptr does nothing.
  GpuStatus malloc(void** ptr, size_t bytes);
  GpuStatus free(void* ptr);
  // Blocking copy and memset on the default stream.
  GpuStatus memcpy(void* dst, const void* src, size_t bytes, GpuCopy kind);
  GpuStatus memset(void* dst, int value, size_t bytes);
  // Queued on `stream`.
  GpuStatus memcpyAsync(void* dst, const void* src, size_t bytes, GpuCopy kind, GpuStream stream);
  GpuStatus memsetAsync(void* dst, int value, size_t bytes, GpuStream stream);
  GpuStatus streamCreate(GpuStream* stream, unsigned flags = 0);
  GpuStatus streamDestroy(GpuStream stream);
  GpuStatus streamSynchronize(GpuStream stream);
  GpuStatus eventCreate(GpuEvent* event);
  GpuStatus eventDestroy(GpuEvent event);
  GpuStatus eventRecord(GpuEvent event, GpuStream stream);
  GpuStatus eventSynchronize(GpuEvent event);
  // Milliseconds between two recorded, completed events.
  GpuStatus eventElapsedMs(GpuEvent start, GpuEvent end, float* ms);

  // "out of memory (cudaErrorMemoryAllocation)".
  std::string errorText(int code) const;

 private:
  GpuStatus check(int code, const char* call, const std::string& detail) const;

  std::string api_;
  std::string file_;
  std::unique_ptr<Table> table_;
  int devices_;
};

struct GpuLoadResult {
  std::unique_ptr<GpuApi> api;  // null when no library loaded with a device
  // Why not, naming every library tried: "no GPU (libcudart.so: cudaGetDeviceCount: CUDA driver
  // version is insufficient for CUDA runtime version (cudaErrorInsufficientDriver), and the
  // NVIDIA driver (libcuda.so.1) is not installed; libamdhip64.so: ...)".
  std::string whyNot;
};

// Tries each runtime in turn; the first whose library loads, has every function and counts a
// device wins. Libraries that loaded stay loaded: GPU runtimes register exit handlers that do
// not survive being unloaded.
GpuLoadResult loadGpuApi(const std::vector<GpuLibrary>& libraries);

// This process's GPU, from defaultGpuLibraries(): decided on first use and kept. Null when there
// is none, with the sentence in *whyNot. Initialises the runtime: a process that forks ranks
// must not call it before the fork (a child cannot use a runtime its parent initialised).
GpuApi* gpuApi(std::string* whyNot = nullptr);

}  // namespace weft::perf

#endif  // WEFT_PERF_GPU_API_H_
