#include "perf/bench_support.h"

#include <dirent.h>

#include <cstring>
#include <ctime>
#include <fstream>

namespace weft::perf {

std::string versionText(int v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::string utcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool runsInVm() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string l; std::getline(in, l);)
    if (l.rfind("flags", 0) == 0) return l.find(" hypervisor") != std::string::npos;
  return false;
}

int nvidiaGpus() {
  DIR* d = opendir("/proc/driver/nvidia/gpus");
  if (!d) return 0;
  int n = 0;
  while (const dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

std::string glooInterface(int nhosts) {
  const char* v = std::getenv("WEFT_SOCKET_IFNAME");
  if (v && *v && !std::strpbrk(v, ",^=")) return v;
  return nhosts == 1 ? "lo" : "";
}

}  // namespace weft::perf
