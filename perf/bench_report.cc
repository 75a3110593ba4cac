// What weft-perf prints and writes beside the table (bench_impl.h): the "Using devices" block,
// the side-by-side table of --compare, the run's summary and the --json/--csv/--plot files.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "perf/bench_impl.h"
#include "perf/datatypes.h"
#include "perf/gpu_api.h"

namespace weft::perf {
namespace {

// What one rank tells the others for the "Using devices" block.
struct RankInfo {
  int32_t pid;
  int32_t group;
  int32_t device;
  int32_t reserved;
  char host[64];
  char busId[32];  // device memory: the GPU's PCI bus id and name
  char name[144];
};
static_assert(sizeof(RankInfo) == 256, "RankInfo travels as 256 bytes");

}  // namespace

// Gathers every rank's process, host and device, and prints the "Using devices" block.
bool Bench::printDevices() {
  RankInfo self{};
  self.pid = static_cast<int32_t>(getpid());
  self.group = group_;
  int dev = -1;
  if (weftCommDevice(comm_, &dev) != weftSuccess) dev = -1;
  self.device = dev;
  if (gethostname(self.host, sizeof self.host - 1) != 0) std::strcpy(self.host, "unknown");
  if (dev_.gpu) {
    std::snprintf(self.busId, sizeof self.busId, "%s", dev_.gpu->pciBusId(dev_.device).c_str());
    std::snprintf(self.name, sizeof self.name, "%s", dev_.gpu->deviceName(dev_.device).c_str());
  }
  std::vector<RankInfo> all(static_cast<size_t>(nranks_));
  if (!ok(weftAllGather(&self, all.data(), sizeof self, weftUint8, comm_, nullptr), "weftAllGather (rank list)"))
    return false;
  std::string s;
  for (int r = 0; r < nranks_; ++r) {
    const RankInfo& i = all[static_cast<size_t>(r)];
    hosts_.emplace_back(i.host, strnlen(i.host, sizeof i.host));
    const std::string busId(i.busId, strnlen(i.busId, sizeof i.busId)), name(i.name, strnlen(i.name, sizeof i.name));
    if (o_.mem != MemKind::kDevice) {
      s += formatDeviceLine(r, i.group, i.pid, hosts_.back().c_str(), i.device, "host", "host memory");
    } else {
      s += formatDeviceLine(r, i.group, i.pid, hosts_.back().c_str(), i.device, busId.empty() ? "gpu" : busId.c_str(),
                            (name.empty() ? std::string("device memory") : name + ", device memory").c_str());
    }
  }
  print(s);
  return true;
}

// The side-by-side table and the verdict on the peers, for rank 0 to print after the footer.
std::string Bench::comparison() const {
  std::vector<std::string> names;
  for (const Lib& lib : libs_) names.push_back(lib.name);
  const int blocks = std::min(kCompareBlocks, o_.iters);
  std::string s = "#\n# Side by side: " + std::string(collectiveName(o_.coll)) + ", " + std::to_string(nranks_) +
                  (nranks_ == 1 ? " rank, " : " ranks, ") + memName(o_.mem) + " memory, the same buffers; per size " +
                  std::to_string(blocks) +
                  " timed blocks with the library order rotating; times combined over ranks as -a " +
                  std::to_string(o_.average) + "\n";
  s += "# " + names[0] + "/X speed = X's time / " + names[0] + "'s time (> 1: " + names[0] + " is faster)\n";
  for (const Lib& lib : libs_) s += "# " + lib.name + ": " + lib.description + "\n";
  for (const Section& sec : sections_) {
    s += "#\n# " + sec.title + "\n" + sec.notes + formatSideBySideHeader(names);
    for (const std::vector<LibRow>& row : sec.rows) s += formatSideBySideRows(row, names);
  }
  std::string wrong;
  int64_t any = 0;
  for (const Lib& lib : libs_) {
    wrong += (wrong.empty() ? "" : ", ") + lib.name + " " + std::to_string(lib.wrong);
    any += lib.wrong;
  }
  s += "#\n# Compare: wrong elements: " + wrong + (any ? ": FAILED" : ": OK") + "\n";
  for (const Lib& lib : libs_)
    if (lib.failed) s += "# Compare: " + lib.name + " FAILED " + lib.failure + "\n";
  return s;
}

RunSummary Bench::summary() const {
  RunSummary run;
  run.program = program_;
  run.collective = collectiveName(o_.coll);
  run.host = hosts_.empty() ? "unknown" : hosts_[0];
  run.date = utcNow();
  run.memory = memName(o_.mem);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const bool amd = dev_.gpu && dev_.gpu->prefix() == "hip";
  run.topology = topologySummary(nranks_, static_cast<int>(std::set<std::string>(hosts_.begin(), hosts_.end()).size()),
                                 runsInVm(), cpus > 0 ? static_cast<int>(cpus) : 1,
                                 dev_.gpu ? dev_.gpu->deviceCount() : nvidiaGpus(), amd ? "AMD" : "NVIDIA");
  int v = 0;
  (void)weftGetVersion(&v);
  run.weftVersion = versionText(v);
  run.nranks = nranks_;
  for (const Lib& lib : libs_) run.libraries.push_back(lib.name);
  run.notes = o_.notes;
  run.notes.insert(run.notes.end(), notes_.begin(), notes_.end());
  return run;
}

// --json (-J), --csv and --plot, written by rank 0.
bool Bench::writeFiles() const {
  if (rank_ != 0 || (o_.jsonFile.empty() && o_.csvFile.empty() && o_.plotFile.empty())) return true;
  const RunSummary run = summary();
  bool good = true;
  const std::pair<const std::string*, std::string (*)(const RunSummary&, const std::vector<Measurement>&)> files[] = {
      {&o_.jsonFile, formatResultsJson}, {&o_.csvFile, formatResultsCsv}, {&o_.plotFile, plotResultsSvg}};
  for (const auto& [path, render] : files) {
    std::string error;
    if (path->empty() || writeTextFile(*path, render(run, measurements_), &error)) continue;
    std::fprintf(stderr, "weft-perf: %s\n", error.c_str());
    good = false;
  }
  return good;
}

}  // namespace weft::perf
