// The real GPU modules this build made (libweft-cuda.so, libweft-hip.so): they load, export
// only their entry point, refuse another ABI, and on a machine without the GPU say why in words
// a person can act on. Runs everywhere; tests/unit/device/gpu has the tests that need a device.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <regex>

#include "device/gpu_loader.h"
#include "device/gpu_module.h"
#include "unit/device/device_test_util.h"

namespace weft {
namespace device {
namespace {

struct ModuleCase {
  const char* file;
  bool built;
  const char* runtimeName;
  // What the module says when it finds no device.
  const char* noDevicePattern;
};

const ModuleCase kModules[] = {
    {"libweft-cuda.so", WEFT_TEST_HAVE_CUDA != 0, "cuda",
     R"(^no NVIDIA device: cudaGetDeviceCount: ([^()]+ \()?cudaError[A-Za-z]+\)?( \(libcuda\.so\.1 is missing: the NVIDIA driver is not installed\))?$)"},
    {"libweft-hip.so", WEFT_TEST_HAVE_HIP != 0, "hip",
     R"(^no AMD device: hipGetDeviceCount: ([^()]+ \()?hipError[A-Za-z]+\)?( \(/dev/kfd is missing: the amdgpu kernel driver is not loaded\))?$)"},
};

class GpuModule : public ::testing::TestWithParam<ModuleCase> {
 protected:
  void SetUp() override {
    if (!GetParam().built) GTEST_SKIP() << GetParam().file << " is not built in this configuration";
  }
  std::string path() const { return testing::moduleDir() + "/" + GetParam().file; }
};

TEST_P(GpuModule, LoadsAndFindsADeviceOrSaysWhyNot) {
  GpuLoadOptions o;
  o.dirs = {testing::moduleDir()};
  o.modules = {GetParam().file};
  o.searchDefaultPath = false;
  GpuLoadResult r = loadGpuRuntime(o);
  if (r.runtime != nullptr) {
    EXPECT_STREQ(r.runtime->name(), GetParam().runtimeName);
    EXPECT_GT(r.runtime->deviceCount(), 0);
    EXPECT_EQ(r.path, path());
    EXPECT_EQ(r.report.rfind(std::string("GPU backend: ") + GetParam().runtimeName + " from " + path(), 0), 0u)
        << r.report;
    return;
  }
  ASSERT_EQ(r.refused.size(), 1u);
  const std::string& why = r.refused[0].second;
  EXPECT_TRUE(std::regex_search(why, std::regex(GetParam().noDevicePattern))) << why;
  EXPECT_EQ(r.report, "no GPU backend: " + std::string(GetParam().file) + ": " + why);
}

TEST_P(GpuModule, ExportsOnlyItsEntryPointAndRefusesAnotherAbi) {
  void* handle = dlopen(path().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto entry = reinterpret_cast<GpuModuleEntry>(dlsym(handle, kGpuModuleEntry));
  ASSERT_NE(entry, nullptr);
  // Weft's own code inside the module stays private (gpu_module.map).
  EXPECT_EQ(dlsym(handle, "_ZN4weft9makeErrorE13weftResult_tPKcz"), nullptr);
  EXPECT_EQ(dlsym(handle, "_ZN4weft6device19checkReduceCopyArgsERKNS0_14ReduceCopyArgsE"), nullptr);
  EXPECT_EQ(dlsym(handle, "weftKernelReduceCopy"), nullptr);

  char why[512] = "unchanged";
  EXPECT_EQ(entry(kGpuModuleAbi + 1, why, sizeof(why)), nullptr);
  EXPECT_EQ(std::string(why), "built for Weft device ABI " + std::to_string(kGpuModuleAbi) +
                                  " but libweft.so uses ABI " + std::to_string(kGpuModuleAbi + 1) +
                                  "; install the GPU modules that came with this libweft.so");
  // Modules stay loaded (gpu_loader.h), so this handle is not closed either.
}

INSTANTIATE_TEST_SUITE_P(Modules, GpuModule, ::testing::ValuesIn(kModules),
                         [](const ::testing::TestParamInfo<ModuleCase>& p) {
                           return std::string(p.param.runtimeName);
                         });

}  // namespace
}  // namespace device
}  // namespace weft
