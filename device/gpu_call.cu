// Failed CUDA / HIP calls as sentences (gpu_call.h), for the GPU modules.
#include <cstdarg>
#include <cstdio>

#include "device/gpu_call.h"

namespace weft {
namespace device {

std::string bytesText(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) v /= 1024.0, ++u;
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof(buf), v == static_cast<uint64_t>(v) ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string gpuErrorText(GpuError err) {
  std::string text = WEFT_GPU(GetErrorString)(err);
  std::string name = WEFT_GPU(GetErrorName)(err);
  return text == name ? name : text + " (" + name + ")";
}

Status gpuFailure(GpuError err, const char* call, const char* file, int line, const char* fmt, ...) {
  (void)WEFT_GPU(GetLastError)();
  int device = -1;
  if (WEFT_GPU(GetDevice)(&device) != kGpuSuccess) device = -1;
  char detail[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(detail, sizeof(detail), fmt, ap);
  va_end(ap);
  // Capture refusals are the caller's mistake, not the device's: say what to do instead.
  const char* hint = "";
  weftResult_t code = weftUnhandledDeviceError;
  if (err == WEFT_GPU(ErrorStreamCaptureUnsupported) || err == WEFT_GPU(ErrorStreamCaptureImplicit) ||
      err == WEFT_GPU(ErrorCapturedEvent)) {
    hint =
        "; a stream is being captured into a graph (in global mode: by any thread), and this call cannot happen "
        "then: make it before the capture begins or after it ends";
    code = weftInvalidUsage;
  } else if (err == WEFT_GPU(ErrorStreamCaptureInvalidated)) {
    hint = "; an earlier call failed during this graph capture, which ended it: end the capture and start again";
    code = weftInvalidUsage;
  }
  return makeError(code, "%s(%s) on device %d: %s%s", call, detail, device, gpuErrorText(err).c_str(), hint)
      .withSite(file, line);
}

}  // namespace device
}  // namespace weft
