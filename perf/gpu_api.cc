// The GPU access layer of weft-perf (see gpu_api.h): binds the runtime's functions by name with
// its prefix ("cuda" or "hip") and wraps each call so that a failure reads as a sentence.
#include "perf/gpu_api.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>

namespace weft::perf {

struct GpuApi::Table {
  int (*getDeviceCount)(int*) = nullptr;
  int (*setDevice)(int) = nullptr;
  int (*getDevice)(int*) = nullptr;
  int (*malloc)(void**, size_t) = nullptr;
  int (*free)(void*) = nullptr;
  int (*memcpy)(void*, const void*, size_t, int) = nullptr;
  int (*memcpyAsync)(void*, const void*, size_t, int, void*) = nullptr;
  int (*memset)(void*, int, size_t) = nullptr;
  int (*memsetAsync)(void*, int, size_t, void*) = nullptr;
  int (*streamCreateWithFlags)(void**, unsigned) = nullptr;
  int (*streamDestroy)(void*) = nullptr;
  int (*streamSynchronize)(void*) = nullptr;
  int (*eventCreate)(void**) = nullptr;
  int (*eventDestroy)(void*) = nullptr;
  int (*eventRecord)(void*, void*) = nullptr;
  int (*eventSynchronize)(void*) = nullptr;
  int (*eventElapsedTime)(float*, void*, void*) = nullptr;
  const char* (*getErrorString)(int) = nullptr;
  const char* (*getErrorName)(int) = nullptr;
  int (*getLastError)() = nullptr;
  int (*runtimeGetVersion)(int*) = nullptr;
  int (*driverGetVersion)(int*) = nullptr;
  // Optional: only the "Using devices" lines need them.
  int (*getDeviceProperties)(void*, int) = nullptr;
  int (*deviceGetPCIBusId)(char*, int, int) = nullptr;
};

namespace {

// "256 MiB", "1.5 KiB", "12 B".
std::string bytesText(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, v == static_cast<double>(static_cast<uint64_t>(v)) ? "%.0f %s" : "%.1f %s", v,
                units[u]);
  return buf;
}

template <typename Fn>
void bind(void* lib, const std::string& name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, name.c_str()));
  if (*fn == nullptr && missing) *missing += (missing->empty() ? "" : ", ") + name;
}

// Every function of the table from `lib`; the names the library lacks in *missing.
void bindTable(void* lib, const std::string& p, GpuApi::Table* t, std::string* missing) {
  bind(lib, p + "GetDeviceCount", &t->getDeviceCount, missing);
  bind(lib, p + "SetDevice", &t->setDevice, missing);
  bind(lib, p + "GetDevice", &t->getDevice, missing);
  bind(lib, p + "Malloc", &t->malloc, missing);
  bind(lib, p + "Free", &t->free, missing);
  bind(lib, p + "Memcpy", &t->memcpy, missing);
  bind(lib, p + "MemcpyAsync", &t->memcpyAsync, missing);
  bind(lib, p + "Memset", &t->memset, missing);
  bind(lib, p + "MemsetAsync", &t->memsetAsync, missing);
  bind(lib, p + "StreamCreateWithFlags", &t->streamCreateWithFlags, missing);
  bind(lib, p + "StreamDestroy", &t->streamDestroy, missing);
  bind(lib, p + "StreamSynchronize", &t->streamSynchronize, missing);
  bind(lib, p + "EventCreate", &t->eventCreate, missing);
  bind(lib, p + "EventDestroy", &t->eventDestroy, missing);
  bind(lib, p + "EventRecord", &t->eventRecord, missing);
  bind(lib, p + "EventSynchronize", &t->eventSynchronize, missing);
  bind(lib, p + "EventElapsedTime", &t->eventElapsedTime, missing);
  bind(lib, p + "GetErrorString", &t->getErrorString, missing);
  bind(lib, p + "GetErrorName", &t->getErrorName, missing);
  bind(lib, p + "GetLastError", &t->getLastError, missing);
  bind(lib, p + "RuntimeGetVersion", &t->runtimeGetVersion, missing);
  bind(lib, p + "DriverGetVersion", &t->driverGetVersion, missing);
  // CUDA 12 and ROCm 6 renamed the properties call when its structure grew; the device name
  // leads the structure in every version.
  for (const char* suffix : {"_v2", "R0600", ""}) {
    if (t->getDeviceProperties == nullptr)
      bind(lib, p + "GetDeviceProperties" + suffix, &t->getDeviceProperties, nullptr);
  }
  bind(lib, p + "DeviceGetPCIBusId", &t->deviceGetPCIBusId, nullptr);
}

std::string errorTextOf(const GpuApi::Table& t, int code) {
  const char* text = t.getErrorString(code);
  const char* name = t.getErrorName(code);
  const std::string s = text ? text : "unknown error", n = name ? name : "";
  return n.empty() || s == n ? s : s + " (" + n + ")";
}

// Why a runtime that loaded may see no device: its kernel driver is missing.
std::string driverHint(const std::string& api) {
  if (api == "cuda") {
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (driver == nullptr) driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    return driver ? "" : ", and the NVIDIA driver (libcuda.so.1) is not installed";
  }
  if (api == "hip") return access("/dev/kfd", F_OK) == 0 ? "" : ", and /dev/kfd is missing (no amdgpu kernel driver)";
  return "";
}

// One runtime's files in turn: the first that loads, binds and counts a device. Reasons for
// the others go to *reasons.
std::unique_ptr<GpuApi> tryLibrary(const GpuLibrary& lib, std::set<void*>* seen, std::vector<std::string>* reasons) {
  std::vector<std::string> absent;
  for (const std::string& file : lib.files) {
    dlerror();
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = dlerror();
      const std::string text = e ? e : "cannot be loaded";
      if (text.find("cannot open shared object file") != std::string::npos)
        absent.push_back(file);
      else
        reasons->push_back(file + ": " + text);
      continue;
    }
    if (!seen->insert(handle).second) continue;  // another name of a library already tried
    auto table = std::make_unique<GpuApi::Table>();
    std::string missing;
    bindTable(handle, lib.api, table.get(), &missing);
    if (!missing.empty()) {
      reasons->push_back(file + ": lacks " + missing);
      continue;
    }
    int count = 0;
    const int err = table->getDeviceCount(&count);
    if (err != 0 || count <= 0) {
      const std::string call = lib.api + "GetDeviceCount";
      reasons->push_back(file + ": " + (err != 0 ? call + ": " + errorTextOf(*table, err) : call + " found no device") +
                         driverHint(lib.api));
      (void)table->getLastError();
      continue;
    }
    return std::make_unique<GpuApi>(lib.api, file, std::move(table), count);
  }
  if (!absent.empty()) {
    std::string names;
    for (const std::string& f : absent) names += (names.empty() ? "" : ", ") + f;
    reasons->push_back(names + ": not found");
  }
  return nullptr;
}

}  // namespace

const std::vector<GpuLibrary>& defaultGpuLibraries() {
  static const std::vector<GpuLibrary> libs = {
      {"cuda", {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"}},
      {"hip", {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"}},
  };
  return libs;
}

GpuLoadResult loadGpuApi(const std::vector<GpuLibrary>& libraries) {
  GpuLoadResult result;
  std::set<void*> seen;
  std::vector<std::string> reasons;
  for (const GpuLibrary& lib : libraries) {
    result.api = tryLibrary(lib, &seen, &reasons);
    if (result.api) return result;
  }
  std::string all;
  for (const std::string& r : reasons) all += (all.empty() ? "" : "; ") + r;
  result.whyNot = "no GPU (" + (all.empty() ? std::string("no GPU runtime was named") : all) + ")";
  return result;
}

GpuApi* gpuApi(std::string* whyNot) {
  // Never destroyed: at exit the runtime may already have shut down.
  static GpuLoadResult* const loaded = new GpuLoadResult(loadGpuApi(defaultGpuLibraries()));
  if (whyNot) *whyNot = loaded->whyNot;
  return loaded->api.get();
}

GpuApi::GpuApi(std::string api, std::string file, std::unique_ptr<Table> table, int devices)
    : api_(std::move(api)), file_(std::move(file)), table_(std::move(table)), devices_(devices) {}

GpuApi::~GpuApi() = default;

const char* GpuApi::name() const { return api_ == "hip" ? "HIP" : "CUDA"; }

std::string GpuApi::version() const {
  int rt = 0, drv = 0;
  (void)table_->runtimeGetVersion(&rt);
  (void)table_->driverGetVersion(&drv);
  // CUDA: major * 1000 + minor * 10. HIP: major * 10^7 + minor * 10^5 + patch.
  auto text = [&](int v) {
    if (api_ == "hip") return std::to_string(v / 10000000) + "." + std::to_string(v / 100000 % 100);
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  };
  return std::string(name()) + " runtime " + text(rt) + ", driver " + text(drv);
}

std::string GpuApi::deviceName(int device) const {
  if (table_->getDeviceProperties == nullptr) return "";
  // The structure grows with every release; this is far larger than any of them.
  std::vector<char> props(64 << 10, 0);
  if (table_->getDeviceProperties(props.data(), device) != 0) {
    (void)table_->getLastError();
    return "";
  }
  return std::string(props.data(), strnlen(props.data(), 256));
}

std::string GpuApi::pciBusId(int device) const {
  char id[64] = {0};
  if (table_->deviceGetPCIBusId == nullptr) return "";
  if (table_->deviceGetPCIBusId(id, sizeof id - 1, device) != 0) {
    (void)table_->getLastError();
    return "";
  }
  return id;
}

std::string GpuApi::errorText(int code) const { return errorTextOf(*table_, code); }

GpuStatus GpuApi::check(int code, const char* call, const std::string& detail) const {
  if (code == 0) return {};
  (void)table_->getLastError();  // so that the next check does not report this failure again
  int device = -1;
  if (table_->getDevice(&device) != 0) device = -1;
  return {api_ + call + "(" + detail + ") on GPU " + std::to_string(device) + ": " + errorText(code)};
}

GpuStatus GpuApi::setDevice(int device) {
  const int e = table_->setDevice(device);
  if (e == 0) return {};
  (void)table_->getLastError();
  return {api_ + "SetDevice(" + std::to_string(device) + "): " + errorText(e) + " (this process sees " +
          std::to_string(devices_) + " GPU" + (devices_ == 1 ? "" : "s") + ")"};
}

GpuStatus GpuApi::getDevice(int* device) const { return check(table_->getDevice(device), "GetDevice", ""); }

GpuStatus GpuApi::malloc(void** ptr, size_t bytes) {
  *ptr = nullptr;
  if (bytes == 0) return {};
  return check(table_->malloc(ptr, bytes), "Malloc", bytesText(bytes));
}

GpuStatus GpuApi::free(void* ptr) {
  if (ptr == nullptr) return {};
  return check(table_->free(ptr), "Free", "");
}

GpuStatus GpuApi::memcpy(void* dst, const void* src, size_t bytes, GpuCopy kind) {
  if (bytes == 0) return {};
  return check(table_->memcpy(dst, src, bytes, static_cast<int>(kind)), "Memcpy", bytesText(bytes));
}

GpuStatus GpuApi::memset(void* dst, int value, size_t bytes) {
  if (bytes == 0) return {};
  return check(table_->memset(dst, value, bytes), "Memset", bytesText(bytes));
}

GpuStatus GpuApi::memcpyAsync(void* dst, const void* src, size_t bytes, GpuCopy kind, GpuStream stream) {
  if (bytes == 0) return {};
  return check(table_->memcpyAsync(dst, src, bytes, static_cast<int>(kind), stream), "MemcpyAsync", bytesText(bytes));
}

GpuStatus GpuApi::memsetAsync(void* dst, int value, size_t bytes, GpuStream stream) {
  if (bytes == 0) return {};
  return check(table_->memsetAsync(dst, value, bytes, stream), "MemsetAsync", bytesText(bytes));
}

GpuStatus GpuApi::streamCreate(GpuStream* stream, unsigned flags) {
  return check(table_->streamCreateWithFlags(stream, flags), "StreamCreateWithFlags", std::to_string(flags));
}

GpuStatus GpuApi::streamDestroy(GpuStream stream) { return check(table_->streamDestroy(stream), "StreamDestroy", ""); }

GpuStatus GpuApi::streamSynchronize(GpuStream stream) {
  return check(table_->streamSynchronize(stream), "StreamSynchronize", "");
}

GpuStatus GpuApi::eventCreate(GpuEvent* event) { return check(table_->eventCreate(event), "EventCreate", ""); }

GpuStatus GpuApi::eventDestroy(GpuEvent event) { return check(table_->eventDestroy(event), "EventDestroy", ""); }

GpuStatus GpuApi::eventRecord(GpuEvent event, GpuStream stream) {
  return check(table_->eventRecord(event, stream), "EventRecord", "");
}

GpuStatus GpuApi::eventSynchronize(GpuEvent event) {
  return check(table_->eventSynchronize(event), "EventSynchronize", "");
}

GpuStatus GpuApi::eventElapsedMs(GpuEvent start, GpuEvent end, float* ms) {
  return check(table_->eventElapsedTime(ms, start, end), "EventElapsedTime", "");
}

}  // namespace weft::perf
