// weft-init-memory: how much memory weftCommInitAll takes as the rank count grows.
//
//   weft-init-memory 64 256 1024      one fresh process per count: peak RSS (VmHWM) after init
//   weft-init-memory --check 64 256   exit 1 when the second count's growth over the process's
//                                     own baseline is more than twice the linear ratio
//
// Each count runs in a process of its own (this binary re-executed with --one N), so that one
// count's peak does not hide the next one's. Public API only. The check is the ctest
// init_memory_subquadratic: quadratic growth (what init used to do) makes the ratio about
// (n2/n1)^2, linear growth about n2/n1; the bound is 2 * n2/n1, far from both.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

// A field of /proc/self/status in kB ("VmHWM", "VmRSS"); -1 when it is missing.
long statusKb(const char* field) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kb = -1;
  const size_t n = std::strlen(field);
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, field, n) == 0 && line[n] == ':') kb = std::strtol(line + n + 1, nullptr, 10);
  }
  std::fclose(f);
  return kb;
}

// Runs in the child: init n ranks, print "n baselineKb peakKb".
int runOne(int n) {
  const long baseline = statusKb("VmRSS");
  std::vector<weftComm_t> comms(static_cast<size_t>(n), nullptr);
  weftResult_t r = weftCommInitAll(comms.data(), n, nullptr);
  if (r != weftSuccess) {
    std::fprintf(stderr, "weft-init-memory: weftCommInitAll(%d) failed: %s\n", n, weftGetLastError(nullptr));
    return 1;
  }
  const long peak = statusKb("VmHWM");
  for (weftComm_t c : comms) weftCommDestroy(c);
  std::printf("%d %ld %ld\n", n, baseline, peak);
  return 0;
}

// Re-executes this binary with --one n; fills the child's baseline and peak (kB).
bool measure(int n, long* baseline, long* peak) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::string count = std::to_string(n);
    execl("/proc/self/exe", "weft-init-memory", "--one", count.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  char buf[128] = {0};
  ssize_t got = read(fds[0], buf, sizeof(buf) - 1);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  int shown = 0;
  return got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
         std::sscanf(buf, "%d %ld %ld", &shown, baseline, peak) == 3 && shown == n;
}

int usage() {
  std::fprintf(stderr, "usage: weft-init-memory N...  |  weft-init-memory --check N1 N2 (N1 < N2)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--one") == 0) return runOne(std::atoi(argv[2]));
  const bool check = argc > 1 && std::strcmp(argv[1], "--check") == 0;
  std::vector<int> counts;
  for (int i = check ? 2 : 1; i < argc; ++i) {
    int n = std::atoi(argv[i]);
    if (n < 1) return usage();
    counts.push_back(n);
  }
  if (counts.empty() || (check && (counts.size() != 2 || counts[0] >= counts[1]))) return usage();
  std::printf("# ranks  baseline_MB  peak_MB  growth_MB  growth_per_rank_KB\n");
  std::vector<double> growth;
  for (int n : counts) {
    long baseline = 0, peak = 0;
    if (!measure(n, &baseline, &peak)) {
      std::fprintf(stderr, "weft-init-memory: the run with %d ranks failed (see its message above)\n", n);
      return 1;
    }
    growth.push_back(static_cast<double>(peak - baseline));
    std::printf("%7d  %11.1f  %7.1f  %9.1f  %18.1f\n", n, baseline / 1024.0, peak / 1024.0, growth.back() / 1024.0,
                growth.back() / n);
  }
  if (!check) return 0;
  const double ratio = growth[1] / growth[0];
  const double linear = static_cast<double>(counts[1]) / counts[0];
  std::printf("# growth ratio %.2f for %.0fx the ranks (linear: %.0f, quadratic: %.0f; bound %.0f)\n", ratio, linear,
              linear, linear * linear, 2 * linear);
  return ratio <= 2 * linear ? 0 : 1;
}
