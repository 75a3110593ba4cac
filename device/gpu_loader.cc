// Loads a GPU module at run time. libweft.so links no GPU runtime: it dlopens
// libweft-cuda.so, then libweft-hip.so, first from its own directory (where `make install`
// puts all three) and then from the library search path, and keeps the first that finds a
// device. Every refusal is kept with its reason, so a CPU-only run says in one INFO line why
// it has no GPU, and a broken install says what is broken.
#include "device/gpu_loader.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <exception>

#include "base/log.h"
#include "base/params.h"
#include "device/gpu_module.h"

namespace weft {
namespace device {
namespace {

bool fileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string dlerrorText() {
  const char* e = dlerror();
  return e ? e : "unknown dynamic-linker error";
}

// dlopen's messages start with the file they are about; drop it when it is the module itself.
std::string withoutPrefix(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size() + 2, prefix + ": ") == 0 ? text.substr(prefix.size() + 2) : text;
}

std::string joinDirs(const std::vector<std::string>& dirs) {
  std::string out;
  for (size_t i = 0; i < dirs.size(); ++i) out += (i == 0 ? "" : i + 1 == dirs.size() ? " or " : ", ") + dirs[i];
  return out;
}

// Opens `name` from the first directory that has it, else through the dynamic linker's search
// path. Null with the reason in *why when it cannot.
void* openModule(const std::string& name, const GpuLoadOptions& options, std::string* path, std::string* why) {
  for (const std::string& dir : options.dirs) {
    std::string candidate = dir + "/" + name;
    if (!fileExists(candidate)) continue;
    *path = candidate;
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) *why = withoutPrefix(dlerrorText(), candidate);
    return handle;
  }
  std::string where = options.dirs.empty() ? "" : "in " + joinDirs(options.dirs);
  if (!options.searchDefaultPath) {
    *why = "not found " + where;
    return nullptr;
  }
  *path = name;
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) {
    // Say which file the search path gave us.
    Dl_info info;
    void* entry = dlsym(handle, kGpuModuleEntry);
    if (entry != nullptr && dladdr(entry, &info) != 0 && info.dli_fname != nullptr) *path = info.dli_fname;
    return handle;
  }
  std::string text = dlerrorText();
  if (text.rfind(name + ": cannot open shared object file", 0) == 0) {
    *why = "not found " + (where.empty() ? std::string() : where + " ") + "or on the library search path";
  } else {
    *why = withoutPrefix(text, name);
  }
  return nullptr;
}

// Loads one module and asks it for a runtime; null with the reason in *why when it cannot.
std::unique_ptr<Runtime> tryModule(const std::string& name, const GpuLoadOptions& options, std::string* path,
                                   std::string* why) {
  dlerror();
  void* handle = openModule(name, options, path, why);
  if (handle == nullptr) return nullptr;
  auto entry = reinterpret_cast<GpuModuleEntry>(dlsym(handle, kGpuModuleEntry));
  if (entry == nullptr) {
    *why = std::string("not a Weft GPU module (") + withoutPrefix(dlerrorText(), *path) + ")";
    return nullptr;
  }
  char reason[1024] = "";
  std::unique_ptr<Runtime> runtime(entry(kGpuModuleAbi, reason, sizeof(reason)));
  if (runtime == nullptr) {
    *why = reason[0] != '\0' ? reason : "the module refused without saying why";
    return nullptr;
  }
  if (runtime->deviceCount() <= 0) {
    *why = std::string("no device (") + runtime->description() + ")";
    return nullptr;
  }
  return runtime;
}

}  // namespace

bool gpuModuleNames(const std::string& backend, std::vector<std::string>* names) {
  if (backend == "auto" || backend.empty()) {
    *names = {"libweft-cuda.so", "libweft-hip.so"};
  } else if (backend == "cuda") {
    *names = {"libweft-cuda.so"};
  } else if (backend == "hip") {
    *names = {"libweft-hip.so"};
  } else if (backend == "none") {
    names->clear();
  } else {
    return false;
  }
  return true;
}

std::string thisBinaryDir() {
  Dl_info info;
  std::string file;
  if (dladdr(reinterpret_cast<void*>(&thisBinaryDir), &info) != 0 && info.dli_fname != nullptr &&
      info.dli_fname[0] != '\0') {
    file = info.dli_fname;
  }
  char resolved[PATH_MAX];
  // The main program's entry may be a bare name; /proc/self/exe is always absolute.
  if (file.empty() || file.find('/') == std::string::npos) file = "/proc/self/exe";
  if (realpath(file.c_str(), resolved) != nullptr) file = resolved;
  size_t slash = file.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : file.substr(0, slash);
}

GpuLoadResult loadGpuRuntime(const GpuLoadOptions& options) {
  GpuLoadResult result;
  // Only ever by name: a test machine asks for it, and "auto" must not pass it off as a GPU.
  if (options.backend == "emulated") {
    result.runtime = makeEmulatedRuntime();
    result.report = "GPU backend: emulated (host memory posing as one GPU; for tests)";
    return result;
  }
  std::vector<std::string> names = options.modules;
  if (names.empty() && !gpuModuleNames(options.backend, &names)) {
    result.report =
        "no GPU backend: WEFT_GPU_BACKEND=" + options.backend + " is not one of auto, cuda, hip, none, emulated";
    return result;
  }
  if (names.empty()) {
    result.report = "no GPU backend: WEFT_GPU_BACKEND=none";
    return result;
  }
  for (const std::string& name : names) {
    std::string path, why;
    std::unique_ptr<Runtime> runtime;
    try {
      runtime = tryModule(name, options, &path, &why);
    } catch (const std::exception& e) {
      why = std::string("failed while loading: ") + e.what();
    }
    if (runtime != nullptr) {
      result.runtime = std::move(runtime);
      result.path = path;
      break;
    }
    result.refused.emplace_back(name, why);
  }
  std::string refusals;
  for (const auto& r : result.refused) refusals += (refusals.empty() ? "" : "; ") + r.first + ": " + r.second;
  if (result.runtime != nullptr) {
    result.report = std::string("GPU backend: ") + result.runtime->name() + " from " + result.path + ": " +
                    result.runtime->description() + (refusals.empty() ? "" : " (not used: " + refusals + ")");
  } else {
    result.report = "no GPU backend: " + refusals;
  }
  return result;
}

Runtime* gpuRuntime() {
  // Decided once. The runtime is never destroyed: at exit the GPU runtime may already have
  // shut down, and freeing through it then would crash.
  static Runtime* const runtime = [] {
    GpuLoadOptions options;
    options.dirs = {thisBinaryDir()};
    options.backend = params::GpuBackend();
    GpuLoadResult result = loadGpuRuntime(options);
    WEFT_LOG(kInfo, kInit, "%s", result.report.c_str());
    return result.runtime.release();
  }();
  return runtime;
}

}  // namespace device
}  // namespace weft
