// A stand-in for libnvidia-ml.so.1 with the calls topology/detect_nvml.cc makes, answering for
// one of two machines chosen by FAKE_NVML_MACHINE, so that the NVML source's parsing is tested
// without a GPU:
//  - "hgx-h100" (default): 8 GPUs of compute capability 9.0, each with 18 active NVLinks to
//    NVSwitches that NVML cannot name: the remote PCI info is a placeholder that is no bus id
//    ("fffffff:ffff:ff.f"), the remote device type says switch;
//  - "a100-pair": 2 GPUs of compute capability 8.0 joined by 12 direct NVLinks (each end lists
//    them); links 12..17 inactive.
// FAKE_NVML_NO_TYPE=1 hides nvmlDeviceGetNvLinkRemoteDeviceType's answer (older drivers).
// Layouts and values as NVML's public nvml.h (see detect_nvml.cc).
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <string>

namespace {

struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr unsigned kMaxLinks = 18;

const unsigned kH100Buses[8] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
const unsigned kA100Buses[2] = {0x07, 0x0f};

bool pair() {
  const char* m = std::getenv("FAKE_NVML_MACHINE");
  return m != nullptr && std::strcmp(m, "a100-pair") == 0;
}
unsigned count() { return pair() ? 2 : 8; }
unsigned busOf(unsigned i) { return pair() ? kA100Buses[i] : kH100Buses[i]; }

// Handles are 1 + the GPU's index.
bool indexOf(void* handle, unsigned* i) {
  const auto v = reinterpret_cast<uintptr_t>(handle);
  if (v < 1 || v > count()) return false;
  *i = static_cast<unsigned>(v - 1);
  return true;
}

void fill(PciInfo* p, const char* text, unsigned bus) {
  std::memset(p, 0, sizeof(*p));
  std::snprintf(p->busId, sizeof(p->busId), "%s", text);
  std::snprintf(p->busIdLegacy, sizeof(p->busIdLegacy), "%s", text);
  p->bus = bus;
  p->pciDeviceId = 0x233010de;
}

}  // namespace

extern "C" {

int nvmlInit_v2() { return kSuccess; }
int nvmlShutdown() { return kSuccess; }
const char* nvmlErrorString(int) { return "fake NVML error"; }
int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = count();
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** handle) {
  if (i >= count()) return kInvalidArgument;
  *handle = reinterpret_cast<void*>(static_cast<uintptr_t>(i + 1));
  return kSuccess;
}
int nvmlDeviceGetPciInfo_v3(void* handle, PciInfo* p) {
  unsigned i = 0;
  if (!indexOf(handle, &i)) return kInvalidArgument;
  char text[32];
  std::snprintf(text, sizeof(text), "00000000:%02X:00.0", busOf(i));
  fill(p, text, busOf(i));
  return kSuccess;
}
int nvmlDeviceGetName(void* handle, char* name, unsigned length) {
  unsigned i = 0;
  if (!indexOf(handle, &i)) return kInvalidArgument;
  std::snprintf(name, length, "%s", pair() ? "NVIDIA A100-SXM4-40GB" : "NVIDIA H100 80GB HBM3");
  return kSuccess;
}
int nvmlDeviceGetCudaComputeCapability(void* handle, int* major, int* minor) {
  unsigned i = 0;
  if (!indexOf(handle, &i)) return kInvalidArgument;
  *major = pair() ? 8 : 9;
  *minor = 0;
  return kSuccess;
}
int nvmlDeviceGetNvLinkState(void* handle, unsigned link, int* active) {
  unsigned i = 0;
  if (!indexOf(handle, &i) || link >= kMaxLinks) return kInvalidArgument;
  *active = pair() && link >= 12 ? 0 : 1;
  return kSuccess;
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(void* handle, unsigned link, PciInfo* p) {
  unsigned i = 0;
  if (!indexOf(handle, &i) || link >= kMaxLinks) return kInvalidArgument;
  if (!pair()) {
    fill(p, "fffffff:ffff:ff.f", 0xff);
    return kSuccess;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "00000000:%02X:00.0", busOf(1 - i));
  fill(p, text, busOf(1 - i));
  return kSuccess;
}
int nvmlDeviceGetNvLinkRemoteDeviceType(void* handle, unsigned link, unsigned* type) {
  unsigned i = 0;
  if (!indexOf(handle, &i) || link >= kMaxLinks) return kInvalidArgument;
  const char* hide = std::getenv("FAKE_NVML_NO_TYPE");
  if (hide != nullptr && hide[0] == '1') return kNotSupported;
  *type = pair() ? 0 : 2;  // GPU, switch
  return kSuccess;
}

}  // extern "C"
