// The device runtime interface: where a buffer lives and how to reach it. The host
// implementation is always present; the CUDA and HIP implementations (libweft-cuda.so,
// libweft-hip.so, loaded at run time) arrive with the GPU backends.
#ifndef WEFT_DEVICE_DEVICE_H_
#define WEFT_DEVICE_DEVICE_H_

#include <memory>
#include <string>

#include "base/status.h"

namespace weft {
namespace device {

enum class MemoryKind { kHost, kDevice, kUnknown };

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual const char* name() const = 0;
  virtual int deviceCount() const = 0;
  // Which kind of memory a pointer refers to (host memory for the host runtime).
  virtual MemoryKind pointerKind(const void* ptr) const = 0;
};

// The host runtime: plain memory, no devices.
const Runtime& hostRuntime();

// The GPU runtimes that loaded on this machine (none on a CPU-only host), with a line each
// for those that did not and why, logged at INFO.
const Runtime* gpuRuntime();

}  // namespace device
}  // namespace weft

#endif  // WEFT_DEVICE_DEVICE_H_
