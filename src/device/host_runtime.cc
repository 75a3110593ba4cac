#include "base/log.h"
#include "device/device.h"

namespace weft {
namespace device {
namespace {

class HostRuntime final : public Runtime {
 public:
  const char* name() const override { return "host"; }
  int deviceCount() const override { return 0; }
  MemoryKind pointerKind(const void*) const override { return MemoryKind::kHost; }
};

}  // namespace

const Runtime& hostRuntime() {
  static const HostRuntime runtime;
  return runtime;
}

const Runtime* gpuRuntime() {
  // The CUDA and HIP modules are not built yet (GPU backends issue); say so once.
  static const bool logged = [] {
    WEFT_LOG(kInfo, kInit, "no GPU backend: this build has host memory only");
    return true;
  }();
  (void)logged;
  return nullptr;
}

}  // namespace device
}  // namespace weft
