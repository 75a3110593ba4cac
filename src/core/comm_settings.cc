// The settings every rank takes from rank 0 at init (CommSettings: slots, channels, size rules,
// zero-copy and device channel bounds), and the tuner's view of them.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/log.h"
#include "base/params.h"
#include "core/bootstrap_tags.h"
#include "core/comm.h"
#include "core/comm_topology.h"
#include "topology/tuner.h"

namespace weft {
namespace core {
namespace {

using bootstrap_tags::kSettings;

}  // namespace

Status Communicator::agreeSettings(const weftConfig_t* config) {
  CommSettings mine;
  // params keeps each value inside its WEFT_PARAM_RANGE (and warns about one outside it).
  mine.nSlots = static_cast<int32_t>(params::NSlots());
  int64_t buffsize = params::Buffsize();
  // Slots hold whole cache lines so that reductions into them stay aligned.
  mine.slotBytes = std::max<int64_t>(64, (buffsize / mine.nSlots) / 64 * 64);
  mine.minChannels = static_cast<int32_t>(params::MinNChannels());
  mine.maxChannels = static_cast<int32_t>(params::MaxNChannels());
  if (config && config->minChannels > 0) mine.minChannels = std::min(config->minChannels, 32);
  if (config && config->maxChannels > 0) mine.maxChannels = std::min(config->maxChannels, 32);
  mine.maxChannels = std::max(mine.maxChannels, mine.minChannels);
  mine.timeoutS = static_cast<int32_t>(config && config->timeoutS > 0 ? config->timeoutS : params::TimeoutS());
  mine.treeMaxBytes = params::TreeMaxBytes();
  mine.doublingMaxBytes = params::DoublingMaxBytes();
  std::snprintf(mine.algo, sizeof(mine.algo), "%s", params::Algo().c_str());
  mine.sizeRuleSet = sizeRuleParamsSet() ? 1 : 0;
  mine.zeroCopyMinBytes = params::ZeroCopy() && !params::ShmDisable() ? params::ZeroCopyMinBytes() : 0;
  mine.deviceMaxChannels = static_cast<int32_t>(params::DeviceMaxNChannels());
  mine.deviceLLMaxBytes = params::DeviceLLMaxBytes();

  // Rank 0's settings are everyone's: it sends them to each rank (an all-gather would put every
  // rank's in every rank, memory that grows with the square of the rank count).
  CommSettings first = mine;
  const Deadline deadline = Deadline::afterSeconds(static_cast<double>(mine.timeoutS));
  if (rank_ == 0) {
    for (int p = 1; p < nRanks_; ++p) WEFT_TRY(bootstrap_->send(p, kSettings, &mine, sizeof(mine), deadline));
  } else {
    WEFT_TRY(bootstrap_->recv(0, kSettings, &first, sizeof(first), deadline));
  }
  settings_ = first;
  settings_.timeoutS = mine.timeoutS;  // each rank keeps its own patience
  if (std::memcmp(&first.nSlots, &mine.nSlots, sizeof(int32_t) * 3) != 0 || first.slotBytes != mine.slotBytes ||
      first.treeMaxBytes != mine.treeMaxBytes || first.doublingMaxBytes != mine.doublingMaxBytes ||
      first.sizeRuleSet != mine.sizeRuleSet || first.zeroCopyMinBytes != mine.zeroCopyMinBytes ||
      first.deviceMaxChannels != mine.deviceMaxChannels || first.deviceLLMaxBytes != mine.deviceLLMaxBytes ||
      std::strncmp(first.algo, mine.algo, sizeof(mine.algo)) != 0) {
    WEFT_LOG(kWarn, kEnv,
             "rank %d: WEFT_BUFFSIZE/NSLOTS/MIN_NCHANNELS/MAX_NCHANNELS/DEVICE_MAX_NCHANNELS/DEVICE_LL_MAX_BYTES/"
             "TREE_MAX_BYTES/ALGO/ZERO_COPY* differ from rank 0's; "
             "using rank 0's values (set them the same on every rank)",
             rank_);
  }
  // A WEFT_ALGO that names no algorithm fails init here, before the topology.
  coll::Algo algo;
  if (settings_.algo[0] != 0) WEFT_TRY(topo::parseForcedAlgo(settings_.algo, &algo));
  return Status::ok();
}

topo::TunerSettings Communicator::tunerSettings() const {
  topo::TunerSettings s;
  s.forcedAlgo = settings_.algo;
  s.treeMaxBytes = settings_.treeMaxBytes;
  s.doublingMaxBytes = settings_.doublingMaxBytes;
  s.sizeRuleSet = settings_.sizeRuleSet != 0;
  s.minChannels = settings_.minChannels;
  s.maxChannels = settings_.maxChannels;
  return s;
}

}  // namespace core
}  // namespace weft
