// The GPU module loader (gpu_loader.h): every way a module can be missing or refused, with fake
// modules built here at run time, and the one INFO line that says why there is no GPU.
#include "device/gpu_loader.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "device/gpu_module.h"
#include "unit/device/device_test_util.h"

namespace weft {
namespace device {
namespace {

using testing::buildFakeModule;
using testing::TempDir;

GpuLoadOptions onlyIn(const std::string& dir, std::vector<std::string> modules = {}) {
  GpuLoadOptions o;
  o.dirs = {dir};
  o.modules = std::move(modules);
  o.searchDefaultPath = false;
  return o;
}

TEST(GpuLoader, ModuleNamesPerBackend) {
  std::vector<std::string> names;
  ASSERT_TRUE(gpuModuleNames("auto", &names));
  EXPECT_EQ(names, (std::vector<std::string>{"libweft-cuda.so", "libweft-hip.so"}));
  ASSERT_TRUE(gpuModuleNames("cuda", &names));
  EXPECT_EQ(names, (std::vector<std::string>{"libweft-cuda.so"}));
  ASSERT_TRUE(gpuModuleNames("hip", &names));
  EXPECT_EQ(names, (std::vector<std::string>{"libweft-hip.so"}));
  ASSERT_TRUE(gpuModuleNames("none", &names));
  EXPECT_TRUE(names.empty());
  EXPECT_FALSE(gpuModuleNames("rocm", &names));
}

TEST(GpuLoader, BackendNoneAndUnknown) {
  GpuLoadOptions o;
  o.backend = "none";
  GpuLoadResult r = loadGpuRuntime(o);
  EXPECT_EQ(r.runtime, nullptr);
  EXPECT_EQ(r.report, "no GPU backend: WEFT_GPU_BACKEND=none");
  o.backend = "cdua";
  r = loadGpuRuntime(o);
  EXPECT_EQ(r.runtime, nullptr);
  EXPECT_EQ(r.report, "no GPU backend: WEFT_GPU_BACKEND=cdua is not one of auto, cuda, hip, none, emulated");
}

TEST(GpuLoader, MissingModulesAreNamedWithWhereTheyWereLookedFor) {
  TempDir dir;
  GpuLoadResult r = loadGpuRuntime(onlyIn(dir.path()));
  EXPECT_EQ(r.runtime, nullptr);
  EXPECT_EQ(r.report, "no GPU backend: libweft-cuda.so: not found in " + dir.path() +
                          "; libweft-hip.so: not found in " + dir.path());
  ASSERT_EQ(r.refused.size(), 2u);
  EXPECT_EQ(r.refused[0].first, "libweft-cuda.so");

  // With the search path too (a name nothing on this machine provides).
  GpuLoadOptions o = onlyIn(dir.path(), {"libweft-nonexistent.so"});
  o.searchDefaultPath = true;
  r = loadGpuRuntime(o);
  EXPECT_EQ(r.report,
            "no GPU backend: libweft-nonexistent.so: not found in " + dir.path() + " or on the library search path");
}

TEST(GpuLoader, BackendPicksTheModule) {
  TempDir dir;
  GpuLoadOptions o = onlyIn(dir.path());
  o.backend = "hip";
  GpuLoadResult r = loadGpuRuntime(o);
  EXPECT_EQ(r.report, "no GPU backend: libweft-hip.so: not found in " + dir.path());
}

TEST(GpuLoader, NotALibrary) {
  TempDir dir;
  std::ofstream(dir.path() + "/libweft-cuda.so") << "not an ELF file\n";
  GpuLoadResult r = loadGpuRuntime(onlyIn(dir.path(), {"libweft-cuda.so"}));
  EXPECT_EQ(r.runtime, nullptr);
  ASSERT_EQ(r.refused.size(), 1u);
  // glibc says "invalid ELF header" or "file too short"; either names the problem.
  EXPECT_TRUE(r.refused[0].second.find("ELF") != std::string::npos ||
              r.refused[0].second.find("too short") != std::string::npos)
      << r.refused[0].second;
  EXPECT_EQ(r.report.rfind("no GPU backend: libweft-cuda.so: ", 0), 0u) << r.report;
}

TEST(GpuLoader, NoEntryPoint) {
  TempDir dir;
  ASSERT_EQ(buildFakeModule(dir.path() + "/libweft-cuda.so", {"FAKE_NO_ENTRY"}), "");
  GpuLoadResult r = loadGpuRuntime(onlyIn(dir.path(), {"libweft-cuda.so"}));
  EXPECT_EQ(r.runtime, nullptr);
  EXPECT_EQ(r.report,
            "no GPU backend: libweft-cuda.so: not a Weft GPU module (undefined symbol: weftCreateGpuRuntime)");
}

TEST(GpuLoader, WrongAbiIsRefusedWithBothVersions) {
  TempDir dir;
  ASSERT_EQ(buildFakeModule(dir.path() + "/libweft-hip.so", {"WEFT_GPU_MODULE_ABI=999"}), "");
  GpuLoadResult r = loadGpuRuntime(onlyIn(dir.path(), {"libweft-hip.so"}));
  EXPECT_EQ(r.runtime, nullptr);
  EXPECT_EQ(r.report, "no GPU backend: libweft-hip.so: built for Weft device ABI 999 but libweft.so uses ABI " +
                          std::to_string(kGpuModuleAbi) + "; install the GPU modules that came with this libweft.so");
}

TEST(GpuLoader, ModuleRefusalReasonIsPassedOn) {
  TempDir dir;
  ASSERT_EQ(buildFakeModule(dir.path() + "/libweft-cuda.so", {"FAKE_REFUSE=\"no NVIDIA device: fake driver\""}), "");
  GpuLoadResult r = loadGpuRuntime(onlyIn(dir.path(), {"libweft-cuda.so"}));
  EXPECT_EQ(r.runtime, nullptr);
  EXPECT_EQ(r.report, "no GPU backend: libweft-cuda.so: no NVIDIA device: fake driver");
}

TEST(GpuLoader, RuntimeWithoutDevicesIsRefused) {
  TempDir dir;
  ASSERT_EQ(buildFakeModule(dir.path() + "/libweft-cuda.so", {"FAKE_DEVICES=0"}), "");
  GpuLoadResult r = loadGpuRuntime(onlyIn(dir.path(), {"libweft-cuda.so"}));
  EXPECT_EQ(r.runtime, nullptr);
  EXPECT_EQ(r.report, "no GPU backend: libweft-cuda.so: no device (fake runtime, 0 devices)");
}

TEST(GpuLoader, MissingDependencyIsNamed) {
  TempDir dir;
  const std::string dep = dir.path() + "/libweftfakedep.so";
  ASSERT_EQ(testing::run("printf 'extern \"C\" int weftFakeDep() { return 42; }' | '" + std::string(WEFT_TEST_CXX) +
                         "' -x c++ -shared -fPIC -o '" + dep + "' -"),
            "");
  ASSERT_EQ(buildFakeModule(dir.path() + "/libweft-hip.so", {"FAKE_NEEDS_DEP"}, "-L'" + dir.path() + "' -lweftfakedep"),
            "");
  ASSERT_EQ(unlink(dep.c_str()), 0);
  GpuLoadResult r = loadGpuRuntime(onlyIn(dir.path(), {"libweft-hip.so"}));
  EXPECT_EQ(r.runtime, nullptr);
  EXPECT_EQ(r.report,
            "no GPU backend: libweft-hip.so: libweftfakedep.so: cannot open shared object file: No such file "
            "or directory");
}

TEST(GpuLoader, FirstModuleWithADeviceWinsAndRefusalsAreKept) {
  TempDir first, second;
  ASSERT_EQ(buildFakeModule(first.path() + "/libweft-cuda.so", {"FAKE_REFUSE=\"no NVIDIA device: none here\""}), "");
  ASSERT_EQ(buildFakeModule(second.path() + "/libweft-hip.so", {"FAKE_DEVICES=2"}), "");
  // A decoy the search must not reach: the first directory that has the file wins.
  ASSERT_EQ(buildFakeModule(second.path() + "/libweft-cuda.so", {"FAKE_DEVICES=1"}), "");
  GpuLoadOptions o;
  o.dirs = {first.path(), second.path()};
  o.searchDefaultPath = false;
  GpuLoadResult r = loadGpuRuntime(o);
  ASSERT_NE(r.runtime, nullptr) << r.report;
  EXPECT_STREQ(r.runtime->name(), "fake");
  EXPECT_EQ(r.runtime->deviceCount(), 2);
  EXPECT_EQ(r.path, second.path() + "/libweft-hip.so");
  EXPECT_EQ(r.report, "GPU backend: fake from " + second.path() +
                          "/libweft-hip.so: fake runtime, 2 devices (not used: libweft-cuda.so: no NVIDIA device: none "
                          "here)");
  r.runtime.reset();  // destroyed by the module's own code
}

TEST(GpuLoader, ByNameThroughTheDynamicLinker) {
  TempDir dir;
  const std::string file = dir.path() + "/libweft-fake-by-name.so";
  ASSERT_EQ(buildFakeModule(file, {"FAKE_DEVICES=1"}, "-Wl,-soname,libweft-fake-by-name.so"), "");
  // The dynamic linker reads LD_LIBRARY_PATH only at start, so the module is made known to it
  // by loading it once; dlopen by bare name then finds it by its SONAME, as it would on the
  // search path, and the loader reports the file it came from.
  void* pin = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(pin, nullptr) << dlerror();
  GpuLoadOptions o;
  o.dirs = {dir.path() + "/empty"};
  o.modules = {"libweft-fake-by-name.so"};
  GpuLoadResult r = loadGpuRuntime(o);
  ASSERT_NE(r.runtime, nullptr) << r.report;
  EXPECT_EQ(r.path, file);
  EXPECT_EQ(r.report, "GPU backend: fake from " + file + ": fake runtime, 1 devices");
}

TEST(GpuLoader, ThisBinaryDir) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  exe[n] = '\0';
  std::string path = exe;
  EXPECT_EQ(thisBinaryDir(), path.substr(0, path.rfind('/')));
}

// gpuRuntime() decides once per process and logs one INFO line (each test runs in its own
// process under ctest).
TEST(GpuLoader, GpuRuntimeLogsOnceAtInfo) {
  TempDir dir;
  const std::string log = dir.path() + "/log.txt";
  setenv("WEFT_DEBUG", "INFO", 1);
  setenv("WEFT_DEBUG_SUBSYS", "INIT", 1);
  setenv("WEFT_DEBUG_FILE", log.c_str(), 1);
  reloadLogSettings();
  Runtime* rt = gpuRuntime();
  EXPECT_EQ(gpuRuntime(), rt) << "cached";
  setenv("WEFT_DEBUG", "WARN", 1);
  unsetenv("WEFT_DEBUG_FILE");
  unsetenv("WEFT_DEBUG_SUBSYS");
  reloadLogSettings();

  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  const std::string lines = text.str();
  size_t first = lines.find("GPU backend: ");
  ASSERT_NE(first, std::string::npos) << lines;
  EXPECT_EQ(lines.find("GPU backend: ", first + 1), std::string::npos) << "logged once:\n" << lines;
  if (rt == nullptr) {
    // This test binary is not beside libweft.so, so the modules come from the search path, if
    // at all; on a machine without a GPU each says why.
    EXPECT_NE(lines.find("no GPU backend: libweft-cuda.so: "), std::string::npos) << lines;
    EXPECT_NE(lines.find("; libweft-hip.so: "), std::string::npos) << lines;
  } else {
    EXPECT_GT(rt->deviceCount(), 0);
  }
}

}  // namespace
}  // namespace device
}  // namespace weft
