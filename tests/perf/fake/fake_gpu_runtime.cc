// A stand-in GPU runtime for gpu_api_test.cc: the functions perf/gpu_api.cc binds, with the
// prefix "fake" instead of "cuda" or "hip", on host memory. The test sets its device count
// (fakeTestSetDevices) and the largest allocation it grants (fakeTestSetMemoryLimit). Errors
// take the runtimes' shape (a code, a sentence, a name), so the test sees the messages weft-perf
// would print on a real GPU. Streams and events are tokens; copies and memsets happen at once.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kSuccess = 0;
constexpr int kOutOfMemory = 2;
constexpr int kInvalidValue = 1;
constexpr int kInvalidDevice = 101;
constexpr int kNoDevice = 100;

int gDevices = 0;
size_t gMemoryLimit = size_t{1} << 40;  // the largest allocation that succeeds
thread_local int tCurrent = 0;
int gLastError = kSuccess;

int fail(int code) {
  gLastError = code;
  return code;
}

struct FakeEvent {
  double ms = -1;  // when recorded
};

double nowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void fakeTestSetDevices(int n) { gDevices = n; }
__attribute__((visibility("default"))) void fakeTestSetMemoryLimit(size_t bytes) { gMemoryLimit = bytes; }

__attribute__((visibility("default"))) int fakeGetDeviceCount(int* n) {
  *n = gDevices;
  return gDevices > 0 ? kSuccess : fail(kNoDevice);
}
__attribute__((visibility("default"))) int fakeSetDevice(int d) {
  if (d < 0 || d >= gDevices) return fail(kInvalidDevice);
  tCurrent = d;
  return kSuccess;
}
__attribute__((visibility("default"))) int fakeGetDevice(int* d) {
  *d = tCurrent;
  return kSuccess;
}
__attribute__((visibility("default"))) int fakeMalloc(void** p, size_t bytes) {
  *p = bytes > gMemoryLimit ? nullptr : std::malloc(bytes);
  return *p ? kSuccess : fail(kOutOfMemory);
}
__attribute__((visibility("default"))) int fakeFree(void* p) {
  std::free(p);
  return kSuccess;
}
__attribute__((visibility("default"))) int fakeMemcpy(void* dst, const void* src, size_t bytes, int kind) {
  if (kind < 0 || kind > 4) return fail(kInvalidValue);
  std::memmove(dst, src, bytes);
  return kSuccess;
}
__attribute__((visibility("default"))) int fakeMemcpyAsync(void* dst, const void* src, size_t bytes, int kind, void*) {
  return fakeMemcpy(dst, src, bytes, kind);
}
__attribute__((visibility("default"))) int fakeMemset(void* dst, int value, size_t bytes) {
  std::memset(dst, value, bytes);
  return kSuccess;
}
__attribute__((visibility("default"))) int fakeMemsetAsync(void* dst, int value, size_t bytes, void*) {
  return fakeMemset(dst, value, bytes);
}
__attribute__((visibility("default"))) int fakeStreamCreateWithFlags(void** s, unsigned flags) {
  if (flags > 1) return fail(kInvalidValue);
  *s = new int(static_cast<int>(flags));
  return kSuccess;
}
__attribute__((visibility("default"))) int fakeStreamDestroy(void* s) {
  delete static_cast<int*>(s);
  return kSuccess;
}
__attribute__((visibility("default"))) int fakeStreamSynchronize(void*) { return kSuccess; }
__attribute__((visibility("default"))) int fakeEventCreate(void** e) {
  *e = new FakeEvent;
  return kSuccess;
}
__attribute__((visibility("default"))) int fakeEventDestroy(void* e) {
  delete static_cast<FakeEvent*>(e);
  return kSuccess;
}
__attribute__((visibility("default"))) int fakeEventRecord(void* e, void*) {
  static_cast<FakeEvent*>(e)->ms = nowMs();
  return kSuccess;
}
__attribute__((visibility("default"))) int fakeEventSynchronize(void*) { return kSuccess; }
__attribute__((visibility("default"))) int fakeEventElapsedTime(float* ms, void* a, void* b) {
  const FakeEvent* s = static_cast<FakeEvent*>(a);
  const FakeEvent* e = static_cast<FakeEvent*>(b);
  if (s->ms < 0 || e->ms < 0) return fail(kInvalidValue);  // not recorded
  *ms = static_cast<float>(e->ms - s->ms);
  return kSuccess;
}
__attribute__((visibility("default"))) const char* fakeGetErrorString(int code) {
  switch (code) {
    case kSuccess:
      return "no error";
    case kOutOfMemory:
      return "out of memory";
    case kInvalidDevice:
      return "invalid device ordinal";
    case kNoDevice:
      return "no fake device is detected";
    default:
      return "invalid argument";
  }
}
__attribute__((visibility("default"))) const char* fakeGetErrorName(int code) {
  switch (code) {
    case kSuccess:
      return "fakeSuccess";
    case kOutOfMemory:
      return "fakeErrorMemoryAllocation";
    case kInvalidDevice:
      return "fakeErrorInvalidDevice";
    case kNoDevice:
      return "fakeErrorNoDevice";
    default:
      return "fakeErrorInvalidValue";
  }
}
__attribute__((visibility("default"))) int fakeGetLastError() {
  const int e = gLastError;
  gLastError = kSuccess;
  return e;
}
__attribute__((visibility("default"))) int fakeRuntimeGetVersion(int* v) {
  *v = 12040;
  return kSuccess;
}
__attribute__((visibility("default"))) int fakeDriverGetVersion(int* v) {
  *v = 12080;
  return kSuccess;
}
// The device name leads the properties structure, as in CUDA's and HIP's.
__attribute__((visibility("default"))) int fakeGetDeviceProperties(void* props, int d) {
  if (d < 0 || d >= gDevices) return fail(kInvalidDevice);
  char* name = static_cast<char*>(props);
  std::memset(name, 0, 1024);
  std::memcpy(name, "Fake GPU ", 9);
  name[9] = static_cast<char>('0' + d % 10);
  return kSuccess;
}
__attribute__((visibility("default"))) int fakeDeviceGetPCIBusId(char* id, int len, int d) {
  if (d < 0 || d >= gDevices || len < 13) return fail(kInvalidValue);
  std::memcpy(id, "0000:17:00.0", 13);
  id[9] = static_cast<char>('0' + d % 10);
  return kSuccess;
}

}  // extern "C"
