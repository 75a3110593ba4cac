// weft-topo: the topology inspector. Shows what Weft sees of a machine and what it would do
// with it: the connection matrix, rings and trees, predicted bandwidths, the schedules of the
// algorithms, and the parameter table.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/params.h"
#include "core/comm_topology.h"
#include "core/inspect.h"
#include "topo_report.h"
#include "topo_svg.h"
#include "topology/detect.h"
#include "topology/paths.h"
#include "topology/search.h"
#include "topology/topo_file.h"

namespace {

const char kUsageHead[] =
    "usage: weft-topo [topology options] [--json | --xml nccl|rccl | --svg FILE]\n"
    "       weft-topo --schedule COLL [schedule options] | --params\n"
    "\n"
    "Shows what Weft sees of a machine and what it would do with it. With no options it inspects\n"
    "this machine: it prints what detection found (which sources answered: hwloc, sysfs, NVML,\n"
    "ROCm), then these views:\n"
    "  connection matrix   how each GPU reaches every other GPU and NIC, in the labels of\n"
    "                      `nvidia-smi topo -m` (NV18, XGMI1, PIX, PXB, PHB, NODE, SYS; the legend\n"
    "                      is printed with it), and each GPU's CPU and NUMA affinity\n"
    "  bandwidth matrix    the bottleneck bandwidth of each of those paths, GB/s per direction\n"
    "  rings and trees     the rings and double binary trees Weft would build over the GPUs, with\n"
    "                      each ring's bottleneck bandwidth (for one node, and for --nodes K)\n"
    "  predictions         the cost model's bus bandwidth for each collective from 8 B to 1 GiB,\n"
    "                      with the algorithm/protocol/channel count the tuner would pick\n"
    "  tuner               the table a communicator's tuner would use (the same code a\n"
    "                      communicator runs at init): per collective and size class, algorithm,\n"
    "                      protocol, channels and predicted time; WEFT_ALGO, WEFT_TREE_MAX_BYTES,\n"
    "                      WEFT_DOUBLING_MAX_BYTES and WEFT_MIN/MAX_NCHANNELS apply as they would;\n"
    "                      --tuner-sizes adds one line per collective and size class (8 B-1 GiB)\n"
    "\n"
    "topology options:\n"
    "  --file FILE                 read a topology file (NCCL or RCCL XML, the format of NCCL_TOPO_FILE)\n"
    "                              instead of inspecting this machine; - or /dev/stdin reads stdin\n"
    "  --nodes K                   also show rings, trees and predictions for K copies of the node (1)\n"
    "  --ranks N                   ranks per node of the communicator the tuner view is for (default:\n"
    "                              one per GPU; host-memory ranks on a machine without GPUs, 2)\n"
    "  --json                      print the topology as JSON, and nothing else\n"
    "  --xml nccl|rccl             print the topology as an NCCL (version 1) or RCCL (version 2) file\n"
    "  --svg FILE                  draw the topology and the first rings as an SVG picture in FILE\n"
    "\n"
    "other views:\n"
    "  --params                    list every WEFT_* parameter: type, default, current value, help\n";
// Between the two: the --schedule and --algo lines, made from the tables (scheduleHelp).
const char kUsageTail[] =
    "      --count N               elements per rank (default: 2 x nranks, enough to show every block)\n"
    "      --channels N            parallel rings/trees (1)\n"
    "      --root R                root of broadcast/reduce (0)\n"
    "  -h, --help                  this text\n"
    "\n"
    "examples:\n"
    "  weft-topo                                          this machine\n"
    "  weft-topo --file tests/fixtures/topo/dgx-h100.xml  a DGX H100 from its topology file\n"
    "  weft-topo --file tests/fixtures/topo/mi300x.xml --nodes 4\n"
    "                                                     4 MI300X nodes: 32-rank rings and predictions\n"
    "  weft-topo --file tests/fixtures/topo/dgx-h100.xml --svg dgx.svg\n"
    "  weft-topo --ranks 4                                the tuner of 4 host ranks on this machine\n"
    "  weft-topo --xml nccl > topo.xml                    save this machine as an NCCL topology file\n"
    "  weft-topo --schedule allreduce -n 4 --algo ring\n"
    "  weft-topo --params\n"
    "exit status: 0 ok, 1 the request failed (unreadable file, detection failed), 2 bad command line\n";

const std::string& usage() {
  static const std::string text = kUsageHead + weft::tools::scheduleHelp() + kUsageTail;
  return text;
}

int usageError(const char* fmt, const char* arg) {
  std::fprintf(stderr, "weft-topo: ");
  std::fprintf(stderr, fmt, arg);
  std::fprintf(stderr, "\n\n%s", usage().c_str());
  return 2;
}

bool parseInt(const char* text, long long lo, long long hi, long long* out) {
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

struct TopologyRequest {
  bool wanted = false;  // any topology option, or no option at all
  std::string file;     // "" inspects this machine
  int nodes = 1;
  int ranksPerNode = 0;  // 0: one per GPU, or 2 host ranks without GPUs
  bool tunerSizes = false;  // the tuner view lists every size class
  bool json = false;
  int xmlVersion = 0;  // 1 nccl, 2 rccl
  std::string svgFile;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "weft-topo: %s\n", message.c_str());
  return 1;
}

int summaryCount(const weft::topo::System& sys, weft::topo::NodeType t) {
  return static_cast<int>(sys.nodesOfType(t).size());
}

std::string systemSummary(const weft::topo::System& sys) {
  using weft::topo::NodeType;
  char text[256];
  std::snprintf(text, sizeof(text), "%s: %d GPUs, %d NICs, %d CPUs (NUMA domains), %d PCI bridges, %d NVSwitches",
                sys.source.c_str(), summaryCount(sys, NodeType::kGpu), summaryCount(sys, NodeType::kNic),
                summaryCount(sys, NodeType::kCpu), summaryCount(sys, NodeType::kPciBridge),
                summaryCount(sys, NodeType::kNvSwitch));
  return text;
}

// --tuner-sizes: one line per collective and size class up to 1 GiB ("allreduce 8192 doubling
// x1 12.3"), what perf/host_model_error.sh compares with measured times.
void printTunerSizes(const weft::topo::Tuner& tuner) {
  for (weft::coll::CollKind kind : weft::topo::tunedCollectives()) {
    for (int k = 0; k <= 30; ++k) {
      const weft::topo::TunerChoice c = tuner.choose(kind, weft::topo::tunerClassBytes(k));
      std::printf("%s %lld %s x%d %.3f\n", weft::coll::collName(kind),
                  static_cast<long long>(weft::topo::tunerClassBytes(k)), weft::coll::algoName(c.algo), c.channels,
                  c.predictedUs);
    }
  }
}

// The tuner's table for a communicator on req.nodes copies of `sys`, from the function the
// communicator calls (core::tunerForMachine), under this process's WEFT_* settings.
int showTuner(const weft::topo::System& sys, const TopologyRequest& req) {
  const int gpus = summaryCount(sys, weft::topo::NodeType::kGpu);
  const int perNode = req.ranksPerNode > 0 ? req.ranksPerNode : (gpus > 0 ? gpus : 2);
  weft::topo::Tuner tuner;
  weft::Status s = weft::core::tunerForMachine(sys, req.nodes, perNode, weft::core::tunerSettingsFromParams(), &tuner);
  if (!s.isOk()) return fail("the tuner: " + s.message());
  std::printf("\n== Tuner, %d rank%s on %d node%s ==\n", perNode * req.nodes, perNode * req.nodes == 1 ? "" : "s",
              req.nodes, req.nodes == 1 ? "" : "s");
  for (const std::string& line : weft::core::tunerTableLines(tuner)) std::printf("%s\n", line.c_str());
  if (req.tunerSizes) printTunerSizes(tuner);
  return 0;
}

// The topology req asks for: read from its file (or standard input), or detected on this
// machine (printing what detection found unless stdout holds a document). 0, or 1 on failure.
int loadTopology(const TopologyRequest& req, weft::topo::System* sys) {
  namespace topo = weft::topo;
  bool quiet = req.json || req.xmlVersion != 0;  // stdout holds the document only
  if (!req.file.empty()) {
    // readTopologyFile takes regular files only; standard input is read here.
    bool fromStdin = req.file == "-" || req.file == "/dev/stdin";
    weft::Status s = weft::Status::ok();
    if (fromStdin) {
      std::string text;
      char buf[65536];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof(buf), stdin)) > 0) text.append(buf, n);
      if (std::ferror(stdin))
        return fail(std::string("reading the topology from standard input failed: ") + std::strerror(errno));
      s = topo::parseTopologyXml(text, "stdin", sys);
    } else {
      s = topo::readTopologyFile(req.file, sys);
    }
    if (!s.isOk()) return fail(s.message());
  } else {
    topo::DetectReport report;
    weft::Status s = topo::detectSystem(sys, &report);
    if (!s.isOk()) return fail("detecting this machine's topology failed: " + s.message());
    if (!quiet) std::printf("== Detection ==\n%s\n", report.format().c_str());
  }
  return 0;
}

// --svg: the picture of sys and its first rings, written to req.svgFile.
int writeSvg(const TopologyRequest& req, const weft::topo::System& sys, const weft::topo::SearchResult& nodeSearch) {
  std::string svg = weft::tools::renderTopologySvg(sys, nodeSearch);
  std::FILE* f = std::fopen(req.svgFile.c_str(), "w");
  if (!f) return fail("cannot write the picture to '" + req.svgFile + "': " + std::strerror(errno));
  bool ok = std::fwrite(svg.data(), 1, svg.size(), f) == svg.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) return fail("writing the picture to '" + req.svgFile + "' failed: " + std::strerror(errno));
  std::printf("wrote %s (%s; %d of %zu rings drawn)\n", req.svgFile.c_str(), systemSummary(sys).c_str(),
              std::min(weft::tools::kMaxRingsDrawn, static_cast<int>(nodeSearch.rings.size())),
              nodeSearch.rings.size());
  return 0;
}

// The text views, in order: summary, connection, bandwidth and route matrices, rings and trees
// (one node, then req.nodes), predictions and the tuner's table.
int printViews(const TopologyRequest& req, const weft::topo::System& sys, const weft::topo::SearchResult& nodeSearch) {
  namespace topo = weft::topo;
  topo::PathMatrix paths = topo::computePaths(sys);
  std::printf("== Topology ==\n%s\n\n", systemSummary(sys).c_str());
  std::printf("== Connection matrix ==\n%s\n", weft::tools::formatConnectionMatrix(sys, paths).c_str());
  std::printf("== Bandwidth matrix ==\n%s\n", weft::tools::formatBandwidthMatrix(sys, paths).c_str());
  std::string levelWarning;
  const topo::P2pLevel level = topo::chooseP2pLevel(weft::params::P2pLevel(), sys, &levelWarning);
  if (!levelWarning.empty()) std::fprintf(stderr, "weft-topo: %s\n", levelWarning.c_str());
  std::printf("== Routes ==\n%s\n", weft::tools::formatRouteMatrix(sys, paths, level).c_str());
  std::printf("== Rings and trees, one node ==\n%s\n", weft::tools::formatRingsAndTrees(nodeSearch).c_str());
  topo::Cluster cluster = topo::Cluster::uniform(sys, req.nodes);
  topo::SearchResult clusterSearch = req.nodes == 1 ? nodeSearch : topo::search(cluster);
  if (req.nodes > 1) {
    std::printf("== Rings and trees, %d nodes ==\n%s\n", req.nodes,
                weft::tools::formatRingsAndTrees(clusterSearch).c_str());
  }
  std::printf("== Predictions, %d node%s ==\n%s", req.nodes, req.nodes == 1 ? "" : "s",
              weft::tools::formatPredictions(cluster, clusterSearch).c_str());
  return showTuner(sys, req);
}

int showTopology(const TopologyRequest& req) {
  namespace topo = weft::topo;
  topo::System sys;
  if (int rc = loadTopology(req, &sys)) return rc;
  if (req.json) {
    std::fputs(topo::writeTopologyJson(sys).c_str(), stdout);
    return 0;
  }
  if (req.xmlVersion != 0) {
    std::fputs(topo::writeTopologyXml(sys, req.xmlVersion).c_str(), stdout);
    return 0;
  }
  topo::SearchResult nodeSearch = topo::search(sys);
  if (!req.svgFile.empty()) return writeSvg(req, sys, nodeSearch);
  return printViews(req, sys, nodeSearch);
}

// What the command line asks for: --params, --schedule and its request, or the topology views.
struct CommandLine {
  bool params = false;
  bool schedule = false;
  weft::core::ScheduleRequest req;
  TopologyRequest topoReq;
};

// The command line being read: value() takes the argument after argv[i] (nullptr at the end).
struct Args {
  int argc;
  char** argv;
  int i;
  const char* value() { return i + 1 < argc ? argv[++i] : nullptr; }
};

constexpr int kNotThisOption = -2;  // the option belongs to another group
constexpr int kTaken = -1;          // the option (and its value) was read

// --schedule and its options (-n, --algo, --count, --channels, --root): kTaken, kNotThisOption,
// or the exit status of a bad value.
int scheduleOption(const std::string& a, Args& args, CommandLine* cl) {
  weft::core::ScheduleRequest& req = cl->req;
  long long v = 0;
  if (a == "--schedule") {
    const char* c = args.value();
    if (!c) return usageError("%s needs a collective", "--schedule");
    cl->schedule = true;
    req.collective = c;
  } else if (a == "-n" || a == "--nranks") {
    const char* t = args.value();
    if (!t || !parseInt(t, 1, 4096, &v)) return usageError("%s needs a rank count from 1 to 4096", a.c_str());
    req.nRanks = static_cast<int>(v);
  } else if (a == "--algo") {
    const char* t = args.value();
    if (!t) return usageError("%s needs an algorithm", "--algo");
    req.algorithm = t;
  } else if (a == "--count") {
    const char* t = args.value();
    if (!t || !parseInt(t, 0, 1LL << 40, &v)) return usageError("%s needs an element count", "--count");
    req.count = v;
  } else if (a == "--channels") {
    const char* t = args.value();
    if (!t || !parseInt(t, 1, 32, &v)) return usageError("%s needs a channel count from 1 to 32", "--channels");
    req.channels = static_cast<int>(v);
  } else if (a == "--root") {
    const char* t = args.value();
    if (!t || !parseInt(t, 0, 4095, &v)) return usageError("%s needs a rank", "--root");
    req.root = static_cast<int>(v);
  } else {
    return kNotThisOption;
  }
  return kTaken;
}

// The topology options (--file, --nodes, --ranks, --json, --xml, --svg): kTaken,
// kNotThisOption, or the exit status of a bad value.
int topologyOption(const std::string& a, Args& args, TopologyRequest* topoReq) {
  long long v = 0;
  if (a == "--file") {
    const char* t = args.value();
    if (!t || !*t) return usageError("%s needs a topology file (NCCL/RCCL XML)", "--file");
    topoReq->file = t;
  } else if (a == "--nodes") {
    const char* t = args.value();
    if (!t || !parseInt(t, 1, 1024, &v)) return usageError("%s needs a node count from 1 to 1024", "--nodes");
    topoReq->nodes = static_cast<int>(v);
  } else if (a == "--ranks") {
    const char* t = args.value();
    if (!t || !parseInt(t, 1, 4096, &v)) return usageError("%s needs a rank count from 1 to 4096", "--ranks");
    topoReq->ranksPerNode = static_cast<int>(v);
  } else if (a == "--tuner-sizes") {
    topoReq->tunerSizes = true;
  } else if (a == "--json") {
    topoReq->json = true;
  } else if (a == "--xml") {
    const char* t = args.value();
    std::string dialect = t ? t : "";
    if (dialect != "nccl" && dialect != "rccl") return usageError("%s needs nccl or rccl", "--xml");
    topoReq->xmlVersion = dialect == "nccl" ? 1 : 2;
  } else if (a == "--svg") {
    const char* t = args.value();
    if (!t || !*t) return usageError("%s needs an output file", "--svg");
    topoReq->svgFile = t;
  } else {
    return kNotThisOption;
  }
  topoReq->wanted = true;
  return kTaken;
}

// Reads the command line into *cl: kTaken, or the exit status (-h, an unknown option, a bad value).
int parseCommandLine(int argc, char** argv, CommandLine* cl) {
  cl->topoReq.wanted = argc == 1;
  Args args{argc, argv, 1};
  for (; args.i < argc; ++args.i) {
    std::string a = argv[args.i];
    if (a == "-h" || a == "--help") {
      std::fputs(usage().c_str(), stdout);
      return 0;
    }
    if (a == "--params") {
      cl->params = true;
      continue;
    }
    int rc = scheduleOption(a, args, cl);
    if (rc == kNotThisOption) rc = topologyOption(a, args, &cl->topoReq);
    if (rc == kNotThisOption) return usageError("unknown option '%s'", a.c_str());
    if (rc != kTaken) return rc;
  }
  return kTaken;
}

// --schedule: the schedules of req, printed; 1 when one of them FAILED its check.
int showSchedules(const weft::core::ScheduleRequest& req) {
  if (req.root >= req.nRanks)
    return usageError("--root must be below --nranks (%s)", std::to_string(req.nRanks).c_str());
  std::string text;
  weft::Status s = weft::core::formatSchedules(req, &text);
  if (!s.isOk()) {
    std::fprintf(stderr, "weft-topo: %s\n", s.message().c_str());
    return 1;
  }
  std::fputs(text.c_str(), stdout);
  if (text.find("FAILED") != std::string::npos) return 1;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CommandLine cl;
  int rc = parseCommandLine(argc, argv, &cl);
  if (rc != kTaken) return rc;
  const TopologyRequest& topoReq = cl.topoReq;
  if ((topoReq.json ? 1 : 0) + (topoReq.xmlVersion ? 1 : 0) + (topoReq.svgFile.empty() ? 0 : 1) > 1)
    return usageError("%s: choose one", "--json, --xml and --svg each print one document");
  if (topoReq.wanted && (cl.params || cl.schedule))
    return usageError("%s", "the topology views cannot be combined with --params or --schedule");
  if (topoReq.wanted) return showTopology(topoReq);
  if (!cl.params && !cl.schedule) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  if (cl.params) std::fputs(weft::core::formatParameterTable().c_str(), stdout);
  if (cl.schedule) return showSchedules(cl.req);
  return 0;
}
