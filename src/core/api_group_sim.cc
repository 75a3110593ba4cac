// weftGroupSimulateEnd: ends the outermost group like weftGroupEnd but runs nothing: the calls it
// recorded are dropped and the cost model's estimate of them (Communicator::estimateUs, summed
// over the collectives; each communicator's sends and receives priced together, as they would
// run) goes to simInfo->estimatedTime, in microseconds.
#include <algorithm>
#include <vector>

#include "core/api_entry.h"
#include "core/call_context.h"
#include "core/group.h"

namespace weft {
namespace core {
namespace capi {
namespace {

Status checkSimInfo(const Call& call, const weftSimInfo_t* simInfo) {
  WEFT_TRY(call.checkOutput(simInfo, "simInfo"));
  if (simInfo->size < sizeof(weftSimInfo_t) || simInfo->magic != WEFT_SIM_INFO_MAGIC) {
    return call.error(weftInvalidArgument,
                      "simInfo was not set up with WEFT_SIM_INFO_INITIALIZER (size %zu, magic 0x%08x); start from it",
                      simInfo->size, simInfo->magic);
  }
  if (groupDepth() <= 0) return call.error(weftInvalidUsage, "called without a matching weftGroupStart");
  if (groupDepth() > 1) {
    return call.error(weftInvalidUsage,
                      "called inside a nested group (depth %d): it ends the outermost group only; end the inner "
                      "groups with weftGroupEnd first",
                      groupDepth());
  }
  return Status::ok();
}

double estimateGroup(const std::vector<PendingOp>& ops) {
  double us = 0;
  std::vector<weftComm*> comms;
  for (const PendingOp& op : ops) {
    if (std::find(comms.begin(), comms.end(), op.comm) == comms.end()) comms.push_back(op.comm);
  }
  for (weftComm* comm : comms) {
    std::vector<P2pCall> p2p;
    for (const PendingOp& op : ops) {
      if (op.comm != comm) continue;
      if (op.isP2p) {
        p2p.push_back(op.p2p);
      } else {
        us += comm->impl->estimateUs(op.coll);
      }
    }
    us += comm->impl->estimateP2pUs(p2p);
  }
  return us;
}

}  // namespace

weftResult_t groupSimulateEnd(weftSimInfo_t* simInfo) {
  Call call(nullptr, "weftGroupSimulateEnd");
  Status s = checkSimInfo(call, simInfo);
  if (!s.isOk()) return call.finish(s);
  simInfo->estimatedTime = static_cast<float>(estimateGroup(dropGroup()));
  return weftSuccess;
}

}  // namespace capi
}  // namespace core
}  // namespace weft
