// The tuner: which algorithm, protocol and channel count a collective uses for a size on a
// communicator -- the least time the cost model predicts (cost_model.h), per collective and
// size class (power-of-two buckets), computed once per communicator into a table.
//
// The model is chosen from the communicator's global system (global_system.h), data every rank
// builds identically from the same descriptions, and from the settings the ranks agreed at init:
//   device  every rank drives its own GPU and every GPU of each host has a rank: the cost model
//           of the searched rings and trees (predictBestOf) over Cluster::of(the hosts);
//   host    no rank has a GPU, one host: the host cost model (predictHostTime) over the work of
//           each algorithm's schedule (HostWorkSource), calibrated on shared memory only
//           (across hosts its socket constants are guesses: the size rule);
//   size    otherwise (no system, ranks sharing GPUs, a communicator over part of a machine's
//   rule    GPUs, GPU and host ranks mixed): the fixed size rule below, as before the model.
// Overrides: WEFT_ALGO forces the algorithm in every collective that has it (the model still
// picks its channels); WEFT_TREE_MAX_BYTES or WEFT_DOUBLING_MAX_BYTES set selects the size rule
// below (algorithms and channels, exactly as before the model); WEFT_MIN/MAX_NCHANNELS bound
// every channel count.
//
// The size rule (chooseRuleAlgo, from each algorithm's band in base/coll_traits.h): recursive
// doubling for the smallest all-reduces (log2 n exchanges, one message latency each), a tree
// for small all-reduces, broadcasts and reduces on more than two ranks (log n steps,
// pipelined; the limit per host), the collective's default (the ring) for large ones
// (bandwidth-optimal); one channel per MiB.
#ifndef WEFT_TOPOLOGY_TUNER_H_
#define WEFT_TOPOLOGY_TUNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/coll_traits.h"
#include "base/status.h"
#include "topology/cost_model.h"
#include "topology/global_system.h"

namespace weft {
namespace topo {

// ---- The size rule (the fallback) ----

struct TunerInput {
  coll::CollKind kind = coll::CollKind::kAllReduce;
  int nRanks = 1;
  int64_t bytes = 0;             // bytes per rank
  std::string forcedAlgo;        // WEFT_ALGO: "" or an algorithm's name (any case)
  int64_t treeMaxBytes = 0;      // WEFT_TREE_MAX_BYTES
  int64_t doublingMaxBytes = 0;  // WEFT_DOUBLING_MAX_BYTES
  int nNodes = 1;                // hosts the ranks span
};

// WEFT_ALGO's algorithm: weftInvalidArgument when `name` names none (base/coll_traits.h).
Status parseForcedAlgo(const std::string& name, coll::Algo* out);

// The size rule's algorithm for in.kind (a scheduled collective): the forced one where the
// collective has it, else the first of its algorithms whose band (coll::AlgoTraits::ruleBand)
// holds in.bytes, else its default. weftInvalidArgument when forcedAlgo names no algorithm.
Status chooseRuleAlgo(const TunerInput& in, coll::Algo* out);

// ---- The model-driven tuner ----

// Size classes: class 0 holds 0 and 1 byte, class k > 0 the sizes in (2^(k-1), 2^k]; sizes
// above 2^(kTunerSizeClasses-1) share the last class. A class is priced at its largest size.
constexpr int kTunerSizeClasses = 41;
int tunerSizeClass(int64_t bytes);
int64_t tunerClassBytes(int sizeClass);

// What the ranks agreed at init (rank 0's values; src/core agreeSettings).
struct TunerSettings {
  std::string forcedAlgo;           // WEFT_ALGO, "" unset
  int64_t treeMaxBytes = 65536;     // WEFT_TREE_MAX_BYTES
  int64_t doublingMaxBytes = 8192;  // WEFT_DOUBLING_MAX_BYTES
  bool sizeRuleSet = false;         // either of the two is set: the size rule decides
  int minChannels = 1;              // WEFT_MIN_NCHANNELS
  int maxChannels = 4;              // WEFT_MAX_NCHANNELS
  HostCostParams host;              // the host model's constants
  CostParams device;                // the device model's (maxChannels is replaced by the above)
};

enum class TunerModel { kSizeRule, kHost, kDevice };
const char* tunerModelName(TunerModel m);  // "size rule", "host", "device"

struct TunerChoice {
  coll::Algo algo = coll::Algo::kRing;
  Protocol protocol = Protocol::kSimple;
  int channels = 1;
  double predictedUs = -1;  // the model's time; -1 when the size rule chose
  bool operator==(const TunerChoice& o) const {
    return algo == o.algo && protocol == o.protocol && channels == o.channels && predictedUs == o.predictedUs;
  }
};

struct TunerDeviceModel;

class Tuner {
 public:
  // The table of a communicator of nRanks ranks on `system` (null or without ranks: the size
  // rule). The host model prices each algorithm with the work hostWork reports for its schedule
  // (collectives/traffic.h ScheduleWorkSource; used during the build only); null: it prices
  // none and the size rule's choices stand. Errors: a forced algorithm that names no
  // algorithm (weftInvalidArgument).
  [[nodiscard]] static Status build(const GlobalSystem* system, int nRanks, const TunerSettings& settings,
                                    HostWorkSource* hostWork, Tuner* out);

  // The choice for a call of `kind` whose count x element size is `bytes` (the all-reduce's
  // buffer, all-gather's send block): a table look-up, or the size rule at `bytes`.
  // hostMemory: a call on host buffers (the host executor), priced by the host model when the
  // communicator's own model is the device's (or none for ranks sharing GPUs).
  TunerChoice choose(coll::CollKind kind, int64_t bytes, bool hostMemory = false) const;
  TunerModel model() const { return model_; }
  // Ranks per CPU on the busiest host (the host model's CPU share; 1: a CPU each or unknown).
  double cpuShare() const { return ranksPerCpu_; }
  // Which model, and why (the reason there is none, for the size rule).
  const std::string& why() const { return why_; }
  // The table of one collective: a line per run of size classes with one choice, each class
  // named by its largest size: "allreduce 0 B - 8 KiB: doubling/Simple x1, predicted 0.7 - 5.4 us"
  // (no prediction under the size rule; the last run, "... - larger", predicted up to 1 GiB).
  std::vector<std::string> describe(coll::CollKind kind, bool hostMemory = false) const;
  // The host-memory calls' own table, when they have one (hostWhy() not empty).
  const std::string& hostWhy() const { return hostWhy_; }
  // Same choices and predictions everywhere (what every rank must compute alike).
  bool sameTable(const Tuner& o) const {
    return model_ == o.model_ && table_ == o.table_ && hostTable_ == o.hostTable_;
  }

 private:
  TunerChoice ruleChoice(coll::CollKind kind, int64_t bytes) const;  // the size rule, at `bytes`
  // WEFT_ALGO names an algorithm `kind` has.
  bool isForced(coll::CollKind kind) const { return isForced_ && coll::algoSupported(kind, forced_); }
  std::vector<TunerChoice> fillTable(TunerModel model, const TunerDeviceModel& device, HostWorkSource* hostWork) const;

  TunerModel model_ = TunerModel::kSizeRule;
  std::string why_;
  int nRanks_ = 1;
  int nHosts_ = 1;
  double ranksPerCpu_ = 1;  // the host model's CPU share (cost_model.h HostCostInput)
  TunerSettings settings_;  // channel bounds clamped to at least 1
  bool isForced_ = false;   // WEFT_ALGO names forced_
  coll::Algo forced_ = coll::Algo::kRing;
  std::vector<TunerChoice> table_;      // [kind * kTunerSizeClasses + class], scheduled kinds only
  std::vector<TunerChoice> hostTable_;  // the same for host-memory calls; empty: table_
  std::string hostWhy_;
};

// The collectives the tuner has a table for (those with a schedule: base/coll_traits.h).
std::vector<coll::CollKind> tunedCollectives();

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_TUNER_H_
