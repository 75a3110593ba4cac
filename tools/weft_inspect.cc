// weft-inspect: what every rank of every Weft job on this host is doing, read from the flight
// recorders (core/recorder_read.h) without the owners' help: a stopped, spinning or deadlocked
// rank is read as well as a running one. The diagnosis (core/recorder_diagnosis.h) names the
// stragglers, disagreeing calls, dead owners and missing ranks.
//
//   weft-inspect                      every Weft process on this host (/dev/shm/weft-rec-*)
//   weft-inspect DIR|FILE...          the dump files (WEFT_RECORDER_DIR) of one or many hosts
//   weft-inspect --watch [S] ...      looks again every S seconds (default 2), with the progress
//   weft-inspect --json ...           the same facts as one JSON document per look
//   weft-inspect --timeline FILES... --svg OUT.svg   draws WEFT_TRACE_FILE timelines (timeline.h)
#include <signal.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/status.h"
#include "core/recorder_diagnosis.h"
#include "core/recorder_read.h"
#include "core/trace.h"
#include "timeline.h"

namespace weft {
namespace tools {
namespace {

using core::Diagnosis;

struct Options {
  bool json = false;
  bool watch = false;
  double intervalS = 2;
  long looks = 0;  // --looks N: stop after N looks (0: --watch looks until interrupted)
  std::string shmDir = "/dev/shm";
  std::vector<std::string> paths;  // dump directories or files; none: this host's segments
};

const char kUsage[] =
    "usage: weft-inspect [--json] [--watch [SECONDS]] [--looks N] [--shm DIR] [DIR|FILE ...]\n"
    "       weft-inspect --timeline FILES... --svg OUT.svg\n"
    "With no DIR or FILE: every Weft process of this host, from its flight recorder in /dev/shm\n"
    "(--shm DIR looks elsewhere). With them: the recorder dumps (WEFT_RECORDER_DIR) in them, of\n"
    "any number of hosts, merged into one diagnosis. --watch looks again every SECONDS (2) and\n"
    "says what progressed; --json prints each look as one JSON document.\n";

bool parseNumber(const char* text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text, &end);
  return end != text && *end == '\0' && *out > 0 && *out <= 3600;
}

// Returns -1 when the options are good, else the exit status (0 after --help).
int parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--json") {
      o->json = true;
    } else if (a == "--watch") {
      o->watch = true;
      double s = 0;
      if (i + 1 < argc && parseNumber(argv[i + 1], &s)) o->intervalS = s, ++i;
    } else if (a == "--looks" && i + 1 < argc) {
      char* end = nullptr;
      o->looks = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || o->looks <= 0) {
        std::fprintf(stderr, "weft-inspect: --looks wants a positive whole number, not \"%s\"\n", argv[i]);
        return 2;
      }
    } else if (a == "--shm" && i + 1 < argc) {
      o->shmDir = argv[++i];
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "weft-inspect: unknown option %s\n%s", a.c_str(), kUsage);
      return 2;
    } else {
      o->paths.push_back(a);
    }
  }
  if (o->looks == 0 && !o->watch) o->looks = 1;
  return -1;
}

core::RecorderScan look(const Options& o) {
  if (o.paths.empty()) return core::scanSegments(o.shmDir);
  core::RecorderScan scan;
  for (const std::string& path : o.paths) core::scanDumps(path, &scan);
  return scan;
}

void printText(const Diagnosis& d, const Options& o, const std::vector<std::string>& progress) {
  if (d.comms.empty()) {
    std::printf("no Weft flight recorder found in %s%s\n",
                o.paths.empty() ? o.shmDir.c_str() : "the files given",
                o.paths.empty() ? " (no Weft process runs on this host, or it runs with WEFT_RECORDER_CALLS=0)" : "");
  }
  for (const core::CommReport& r : d.comms) {
    std::printf("communicator %016" PRIx64 " (%d rank%s%s%s)\n", r.commHash, r.nRanks, r.nRanks == 1 ? "" : "s",
                r.frontEnd.empty() ? "" : ", made by ", r.frontEnd.c_str());
    for (const std::string& line : r.rankLines) std::printf("  %s\n", line.c_str());
    for (const std::string& line : r.findings) std::printf("  => %s\n", line.c_str());
  }
  for (const std::string& line : progress) std::printf("progress: %s\n", line.c_str());
  for (const std::string& line : d.problems) std::printf("not read: %s\n", line.c_str());
}

void appendStrings(std::string* out, const std::vector<std::string>& items) {
  *out += "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) *out += ",";
    core::appendJsonString(out, items[i].c_str());
  }
  *out += "]";
}

void appendInts(std::string* out, const std::vector<int>& items) {
  *out += "[";
  for (size_t i = 0; i < items.size(); ++i) *out += (i ? "," : "") + std::to_string(items[i]);
  *out += "]";
}

void appendRank(std::string* out, const core::RecorderCopy& c) {
  *out += formatText("{\"rank\":%d,\"pid\":%d,\"host\":", c.rank, c.pid);
  core::appendJsonString(out, c.host.c_str());
  *out += ",\"owner\":";
  core::appendJsonString(out, core::livenessName(c.liveness));
  *out += formatText(",\"calls\":%" PRIu64 ",\"source\":", c.calls);
  core::appendJsonString(out, c.source.c_str());
  if (!c.entries.empty()) {
    const core::CopiedCall& e = c.entries.back();
    *out += ",\"latest\":{\"call\":";
    core::appendJsonString(out, core::describeCall(e).c_str());
    *out += formatText(",\"number\":%" PRIu64 ",\"run_from\":%" PRIu64 ",\"kind\":", e.callNo, e.firstCallNo);
    core::appendJsonString(out, core::recordedKindName(e.kind));
    *out += ",\"state\":";
    core::appendJsonString(out, core::stateName(e.state));
    *out += formatText(",\"wait_peer\":%d,\"wait_step\":%d,\"count\":%" PRIu64 ",\"bytes_done\":%" PRIu64
                       ",\"queued_ns\":%" PRId64 ",\"started_ns\":%" PRId64 ",\"ended_ns\":%" PRId64 ",\"error\":",
                       e.waitPeer, e.waitStep, e.count, e.bytesDone, e.queuedNs, e.startedNs, e.endedNs);
    core::appendJsonString(out, e.error.c_str());
    *out += "}";
  }
  *out += "}";
}

void printJson(const Diagnosis& d, int64_t nowNs, const std::vector<std::string>& progress) {
  std::string out = formatText("{\"time_ns\":%" PRId64 ",\"communicators\":[", nowNs);
  for (size_t i = 0; i < d.comms.size(); ++i) {
    const core::CommReport& r = d.comms[i];
    out += formatText("%s{\"id\":\"%016" PRIx64 "\",\"ranks\":%d,\"front_end\":", i ? "," : "", r.commHash, r.nRanks);
    core::appendJsonString(&out, r.frontEnd.c_str());
    out += ",\"missing\":";
    appendInts(&out, r.missing);
    out += ",\"stragglers\":";
    appendInts(&out, r.stragglers);
    out += ",\"rank_states\":[";
    for (size_t k = 0; k < r.ranks.size(); ++k) {
      if (k) out += ",";
      appendRank(&out, r.ranks[k]);
    }
    out += "],\"lines\":";
    appendStrings(&out, r.rankLines);
    out += ",\"findings\":";
    appendStrings(&out, r.findings);
    out += "}";
  }
  out += "],\"progress\":";
  appendStrings(&out, progress);
  out += ",\"problems\":";
  appendStrings(&out, d.problems);
  out += "}\n";
  std::fputs(out.c_str(), stdout);
}

int inspect(const Options& o) {
  Diagnosis before;
  int64_t beforeNs = 0;
  for (long n = 0; o.looks == 0 || n < o.looks; ++n) {
    if (n > 0) usleep(static_cast<useconds_t>(o.intervalS * 1e6));
    const int64_t nowNs = core::realtimeNs();
    Diagnosis d = core::diagnose(look(o), nowNs);
    std::vector<std::string> progress;
    if (n > 0) progress = core::progressSince(before, d, nowNs - beforeNs);
    if (o.json) {
      printJson(d, nowNs, progress);
    } else {
      if (o.watch && isatty(STDOUT_FILENO)) std::fputs("\033[H\033[2J", stdout);
      if (o.watch) std::printf("weft-inspect, look %ld (every %.1f s; Ctrl-C ends)\n", n + 1, o.intervalS);
      printText(d, o, progress);
    }
    std::fflush(stdout);
    before = std::move(d);
    beforeNs = nowNs;
  }
  return 0;
}

}  // namespace
}  // namespace tools
}  // namespace weft

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--timeline") == 0) return weft::tools::runTimelineCommand(argc, argv);
  weft::tools::Options o;
  const int status = weft::tools::parseOptions(argc, argv, &o);
  if (status >= 0) return status;
  return weft::tools::inspect(o);
}
