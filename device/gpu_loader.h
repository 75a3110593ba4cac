// Finding and loading the GPU modules (libweft-cuda.so, libweft-hip.so) at run time, for
// gpuRuntime() (device.h), or the emulated device built into libweft.so. Split out so tests can
// point it at other directories and modules.
#ifndef WEFT_DEVICE_GPU_LOADER_H_
#define WEFT_DEVICE_GPU_LOADER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device/device.h"

namespace weft {
namespace device {

struct GpuLoadOptions {
  // "auto" (CUDA, then HIP), "cuda", "hip", "none", or "emulated" (for testing: host memory
  // posing as one GPU; no module is loaded, and `modules` and `dirs` do not matter).
  std::string backend = "auto";
  // Module file names to try in order; empty: those the backend names.
  std::vector<std::string> modules;
  // Directories searched first, in order (gpuRuntime(): the one holding libweft.so).
  std::vector<std::string> dirs;
  // Then the dynamic linker's search path (LD_LIBRARY_PATH, ld.so.cache).
  bool searchDefaultPath = true;
};

struct GpuLoadResult {
  std::unique_ptr<Runtime> runtime;  // null when no module loaded with a device
  std::string path;                  // the module the runtime came from
  // Each module that was tried and not used, with the reason, in order.
  std::vector<std::pair<std::string, std::string>> refused;
  // One line for the log: "GPU backend: ..." or "no GPU backend: libweft-cuda.so: <reason>; ...".
  std::string report;
};

// Tries each module in turn; the first that loads, accepts this ABI and finds a device wins.
// Modules that loaded stay loaded even when refused: GPU runtimes start threads and register
// exit handlers that do not survive being unloaded.
GpuLoadResult loadGpuRuntime(const GpuLoadOptions& options);

// The module file names for a backend ("auto", "cuda", "hip", "none"); false for another word,
// "emulated" included (it is no module).
bool gpuModuleNames(const std::string& backend, std::vector<std::string>* names);

// The emulated device (emulated_runtime.cc): host memory posing as one GPU, so that tests run
// the device path on machines without one. WEFT_GPU_BACKEND=emulated makes gpuRuntime() use
// it; "auto" never does. Its state (which addresses are device memory) belongs to the process,
// so every instance is a view of the same device: emulatedRuntime() and gpuRuntime() agree on
// every pointer.
Runtime& emulatedRuntime();
std::unique_ptr<Runtime> makeEmulatedRuntime();

// The directory of the binary this code is linked into (libweft.so, or a test executable).
std::string thisBinaryDir();

}  // namespace device
}  // namespace weft

#endif  // WEFT_DEVICE_GPU_LOADER_H_
