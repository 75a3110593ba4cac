// weft-topo: the topology inspector. Shows what Weft sees of a machine and what it would do
// with it: the connection matrix, rings and trees, predicted bandwidths, the schedules of the
// algorithms, and the parameter table.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/inspect.h"

namespace {

const char kUsage[] =
    "usage: weft-topo [options]\n"
    "  Shows what Weft sees of this machine and what it would do with it.\n"
    "\n"
    "  --params                    list every WEFT_* parameter: type, default, current value, help\n"
    "  --schedule COLL             print the schedule every rank runs for a collective and check it\n"
    "                              with the reference interpreter. COLL: allreduce allgather\n"
    "                              reducescatter broadcast reduce alltoall\n"
    "      -n, --nranks N          ranks (8)\n"
    "      --algo ALGO             ring, tree, doubling (all-reduce) or pairwise (all-to-all)\n"
    "      --count N               elements per rank (default: 2 x nranks, enough to show every block)\n"
    "      --channels N            parallel rings/trees (1)\n"
    "      --root R                root of broadcast/reduce (0)\n"
    "  -h, --help                  this text\n"
    "\n"
    "examples:\n"
    "  weft-topo --schedule allreduce -n 4 --algo ring\n"
    "  weft-topo --params\n"
    "exit status: 0 ok, 1 the request failed, 2 bad command line\n";

int usageError(const char* fmt, const char* arg) {
  std::fprintf(stderr, "weft-topo: ");
  std::fprintf(stderr, fmt, arg);
  std::fprintf(stderr, "\n\n%s", kUsage);
  return 2;
}

bool parseInt(const char* text, long long lo, long long hi, long long* out) {
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool params = false;
  bool schedule = false;
  weft::core::ScheduleRequest req;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) return nullptr;
      (void)name;
      return argv[++i];
    };
    long long v = 0;
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--params") {
      params = true;
    } else if (a == "--schedule") {
      const char* c = value("--schedule");
      if (!c) return usageError("%s needs a collective", "--schedule");
      schedule = true;
      req.collective = c;
    } else if (a == "-n" || a == "--nranks") {
      const char* t = value("-n");
      if (!t || !parseInt(t, 1, 4096, &v)) return usageError("%s needs a rank count from 1 to 4096", a.c_str());
      req.nRanks = static_cast<int>(v);
    } else if (a == "--algo") {
      const char* t = value("--algo");
      if (!t) return usageError("%s needs an algorithm", "--algo");
      req.algorithm = t;
    } else if (a == "--count") {
      const char* t = value("--count");
      if (!t || !parseInt(t, 0, 1LL << 40, &v)) return usageError("%s needs an element count", "--count");
      req.count = v;
    } else if (a == "--channels") {
      const char* t = value("--channels");
      if (!t || !parseInt(t, 1, 32, &v)) return usageError("%s needs a channel count from 1 to 32", "--channels");
      req.channels = static_cast<int>(v);
    } else if (a == "--root") {
      const char* t = value("--root");
      if (!t || !parseInt(t, 0, 4095, &v)) return usageError("%s needs a rank", "--root");
      req.root = static_cast<int>(v);
    } else {
      return usageError("unknown option '%s'", a.c_str());
    }
  }
  if (!params && !schedule) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (params) std::fputs(weft::core::formatParameterTable().c_str(), stdout);
  if (schedule) {
    if (req.root >= req.nRanks) return usageError("--root must be below --nranks (%s)", std::to_string(req.nRanks).c_str());
    std::string text;
    weft::Status s = weft::core::formatSchedules(req, &text);
    if (!s.isOk()) {
      std::fprintf(stderr, "weft-topo: %s\n", s.message().c_str());
      return 1;
    }
    std::fputs(text.c_str(), stdout);
    if (text.find("FAILED") != std::string::npos) return 1;
  }
  return 0;
}
