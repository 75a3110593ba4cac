// Communicator::estimateUs / estimateP2pUs: how long the cost model says a call takes here, for
// weftGroupSimulateEnd. Nothing is connected or run.
//
// A collective is priced on the schedule it would run: the tuner's choice for its size
// (paramsFor: algorithm and channels from the communicator's tuner, as a real call), then buildSchedule for
// every rank; the busiest rank decides. Each step that moves a message costs the cost model's
// per-step latency (LL alpha through the host, CostParams::alphaLLHostUs, or the network's
// latency plus the proxy's turn when the ranks span hosts) plus its bytes at one channel's rate
// (CostParams::channelGBs); a copy costs its bytes at that rate. Lanes run side by side, so a
// rank's time is its slowest lane's, plus the model's fixed cost of a call (host launch +
// kernel base). Sends and receives are priced the same way per (peer, direction) track, tracks
// side by side.
//
// Priced this way, the tuner's size rule is not always the cheapest choice: on 5 ranks a 4-byte
// all-reduce (recursive doubling, 6 message steps) comes out dearer than a 16 KiB one (tree), so
// the estimate grows with the size only within one algorithm. The model is not fed the
// machine's topology yet (the communicator has no system model), so host ranks and GPUs on one
// host are priced alike.
#include <algorithm>
#include <map>

#include "collectives/datatypes.h"
#include "collectives/schedule.h"
#include "core/comm.h"
#include "topology/cost_model.h"

namespace weft {
namespace core {
namespace {

struct StepPrice {
  double alphaUs = 0;
  double bytesPerUs = 0;
  double fixedUs = 0;
};

StepPrice stepPrice(int nNodes) {
  const topo::CostParams p;
  StepPrice price;
  price.alphaUs = nNodes > 1 ? p.netLatencyUs + p.proxyUs : p.alphaLLHostUs;
  price.bytesPerUs = p.channelGBs * 1e3;  // GB/s = 1e3 bytes per microsecond
  price.fixedUs = p.hostLaunchUs() + p.kernelBaseUs;
  return price;
}

}  // namespace

coll::RankSchedule Communicator::scheduleFor(const CollCall& call) {
  coll::ScheduleParams params = paramsFor(call, coll::dataTypeSize(call.type));
  params.ringOrders = ringOrders_;
  return coll::buildSchedule(params, rank_);
}

double Communicator::estimateUs(const CollCall& call) {
  if (!coll::collTraits(call.kind).scheduled) return estimateP2pUs(rootedMessages(call));  // gather, scatter
  const size_t elemSize = coll::dataTypeSize(call.type);
  const StepPrice price = stepPrice(nNodes_);
  if (nRanks_ == 1 || call.count == 0) return price.fixedUs;
  coll::ScheduleParams params = paramsFor(call, elemSize);
  params.ringOrders = ringOrders_;
  // The call ends when the busiest rank's slowest lane does (a tree's leaves finish early).
  double slowest = 0;
  for (int r = 0; r < nRanks_; ++r) {
    const coll::RankSchedule schedule = coll::buildSchedule(params, r);
    for (const coll::Lane& lane : schedule.lanes) {
      double us = 0;
      for (const coll::Step& step : lane.steps) {
        const double bytes = static_cast<double>(step.count) * static_cast<double>(elemSize);
        const bool moves = coll::stepSends(step.kind) || coll::stepReceives(step.kind);
        us += (moves ? price.alphaUs : 0.0) + bytes / price.bytesPerUs;
      }
      slowest = std::max(slowest, us);
    }
  }
  return price.fixedUs + slowest;
}

double Communicator::estimateP2pUs(const std::vector<P2pCall>& calls) const {
  const StepPrice price = stepPrice(nNodes_);
  std::map<std::pair<int, bool>, double> tracks;
  for (const P2pCall& c : calls) {
    const double bytes = static_cast<double>(c.bytes);
    // A message to this rank itself is a copy (counted on its send).
    if (c.peer == rank_) {
      if (c.send) tracks[{c.peer, true}] += bytes / price.bytesPerUs;
      continue;
    }
    tracks[{c.peer, c.send}] += price.alphaUs + bytes / price.bytesPerUs;
  }
  double slowest = 0;
  for (const auto& [key, us] : tracks) slowest = std::max(slowest, us);
  return calls.empty() ? 0.0 : price.fixedUs + slowest;
}

}  // namespace core
}  // namespace weft
