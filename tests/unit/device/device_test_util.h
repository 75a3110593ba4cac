// Helpers for the device tests: where this build put the GPU modules, a scratch directory, and
// fake modules compiled at run time (fake/fake_gpu_module.cc) for the loader's failure paths.
#ifndef WEFT_TESTS_UNIT_DEVICE_DEVICE_TEST_UTIL_H_
#define WEFT_TESTS_UNIT_DEVICE_DEVICE_TEST_UTIL_H_

#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

namespace weft {
namespace device {
namespace testing {

// The directory of libweft.so in this build, where libweft-cuda.so / libweft-hip.so are.
inline std::string moduleDir() { return WEFT_TEST_MODULE_DIR; }

// tests/unit/device, an absolute path (WEFT_TESTS_DIR: tests/CMakeLists.txt).
inline std::string testSourceDir() { return std::string(WEFT_TESTS_DIR) + "/unit/device"; }

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/weft-device-test-XXXXXX";
    const char* made = mkdtemp(tmpl);
    path_ = made ? made : "";
  }
  ~TempDir() {
    if (!path_.empty()) (void)std::system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs a shell command; returns "" on success, else its output.
inline std::string run(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return "popen failed: " + command;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  int rc = pclose(p);
  if (rc == 0) return "";
  return out.empty() ? "exit status " + std::to_string(rc) + ": " + command : out;
}

// Compiles fake/fake_gpu_module.cc into `path` with the -D flags and extra arguments given;
// "" on success, else the compiler's output.
inline std::string buildFakeModule(const std::string& path, const std::vector<std::string>& defines,
                                   const std::string& extra = "") {
  std::string cmd = std::string("'") + WEFT_TEST_CXX + "' -std=c++17 -shared -fPIC -O0 -I'" + WEFT_TEST_DEVICE_INCLUDE +
                    "' -I'" + WEFT_TEST_BASE_INCLUDE + "' -I'" + WEFT_TEST_API_INCLUDE + "'";
  for (const std::string& d : defines) cmd += " '-D" + d + "'";
  cmd += " '" + testSourceDir() + "/fake/fake_gpu_module.cc' -o '" + path + "' " + extra;
  return run(cmd);
}

}  // namespace testing
}  // namespace device
}  // namespace weft

#endif  // WEFT_TESTS_UNIT_DEVICE_DEVICE_TEST_UTIL_H_
