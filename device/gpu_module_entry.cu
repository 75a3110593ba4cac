// The GPU module's one exported symbol (gpu_module.h): checks the ABI, finds the devices and
// what each can do, and makes the runtime (gpu_runtime.h) that libweft.so's loader
// (gpu_loader.cc) then uses.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "device/device.h"
#include "device/gpu_api.h"
#include "device/gpu_call.h"
#include "device/gpu_module.h"
#include "device/gpu_runtime.h"

namespace weft {
namespace device {
namespace {

// "CUDA runtime 13.0, driver 12.8; 8 devices: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, warp 32), ...".
std::string describe(int count) {
  int runtimeVersion = 0, driverVersion = 0;
  (void)WEFT_GPU(RuntimeGetVersion)(&runtimeVersion);
  (void)WEFT_GPU(DriverGetVersion)(&driverVersion);
  char text[512];
  std::snprintf(text, sizeof(text), "%s runtime %s, driver %s; %d device%s", WEFT_GPU_RUNTIME,
                gpuVersionText(runtimeVersion).c_str(), gpuVersionText(driverVersion).c_str(), count,
                count == 1 ? "" : "s");
  std::string out = text;
  GpuDeviceProp p;
  if (count > 0 && WEFT_GPU(GetDeviceProperties)(&p, 0) == kGpuSuccess) {
    std::snprintf(text, sizeof(text), ": %s (%s, %d %s, warp %d)%s", p.name, gpuArchName(p).c_str(),
                  p.multiProcessorCount, WEFT_GPU_UNITS, p.warpSize, count > 1 ? ", ..." : "");
    out += text;
  }
  (void)WEFT_GPU(GetLastError)();
  return out;
}

}  // namespace
}  // namespace device
}  // namespace weft

// The module's only exported symbol (gpu_module.h).
extern "C" __attribute__((visibility("default"))) weft::device::Runtime* weftCreateGpuRuntime(int abiVersion,
                                                                                              char* whyNot,
                                                                                              size_t whyNotBytes) {
  using namespace weft::device;
  if (whyNotBytes > 0) whyNot[0] = '\0';
  if (!gpuModuleAbiMatches(abiVersion, whyNot, whyNotBytes)) return nullptr;
  try {
    int count = 0;
    GpuError err = WEFT_GPU(GetDeviceCount)(&count);
    if (err != kGpuSuccess || count == 0) {
      (void)WEFT_GPU(GetLastError)();
      if (err != kGpuSuccess) {
        std::snprintf(whyNot, whyNotBytes, "no %s device: %s: %s%s", WEFT_GPU_VENDOR, WEFT_GPU_NAME(GetDeviceCount),
                      gpuErrorText(err).c_str(), gpuDriverHint());
      } else {
        std::snprintf(whyNot, whyNotBytes, "no %s device: %s found none%s", WEFT_GPU_VENDOR,
                      WEFT_GPU_NAME(GetDeviceCount), gpuDriverHint());
      }
      return nullptr;
    }
    std::vector<GpuDeviceLimits> devices(count);
    for (int d = 0; d < count; ++d) {
      GpuDeviceProp p;
      err = WEFT_GPU(GetDeviceProperties)(&p, d);
      if (err != kGpuSuccess) {
        std::snprintf(whyNot, whyNotBytes, "%s(device %d): %s", WEFT_GPU_NAME(GetDeviceProperties), d,
                      gpuErrorText(err).c_str());
        (void)WEFT_GPU(GetLastError)();
        return nullptr;
      }
      devices[d].warpSize = p.warpSize;
      devices[d].multiProcessors = p.multiProcessorCount;
      int pageable = 0;
      if (WEFT_GPU(DeviceGetAttribute)(&pageable, kGpuPageableMemoryAccess, d) == kGpuSuccess) {
        devices[d].pageableAccess = pageable != 0;
      }
    }
    (void)WEFT_GPU(GetLastError)();
    return newGpuRuntime(std::move(devices), describe(count));
  } catch (const std::exception& e) {
    std::snprintf(whyNot, whyNotBytes, "%s runtime failed to start: %s", WEFT_GPU_BACKEND_NAME, e.what());
    return nullptr;
  }
}
