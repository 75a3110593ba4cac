// weftGroupSimulateEnd: ends the outermost group like weftGroupEnd but runs nothing: the calls it
// recorded are dropped and the cost model's estimate of them (Communicator::estimateUs, summed
// over the collectives; each communicator's sends and receives priced together, as they would
// run) goes to simInfo->estimatedTime, in microseconds.
#include <algorithm>
#include <vector>

#include "core/api_internal.h"

using weft::Status;

namespace weft {
namespace core {
namespace capi {
namespace {

Status checkSimInfo(const weftSimInfo_t* simInfo) {
  if (simInfo == nullptr) return WEFT_ERROR(weftInvalidArgument, "weftGroupSimulateEnd: simInfo is NULL");
  if (simInfo->size < sizeof(weftSimInfo_t) || simInfo->magic != WEFT_SIM_INFO_MAGIC) {
    return WEFT_ERROR(weftInvalidArgument,
                      "weftGroupSimulateEnd: simInfo was not set up with WEFT_SIM_INFO_INITIALIZER (size %zu, magic "
                      "0x%08x); start from it",
                      simInfo->size, simInfo->magic);
  }
  if (tlsGroup.depth <= 0) {
    return WEFT_ERROR(weftInvalidUsage, "weftGroupSimulateEnd without a matching weftGroupStart");
  }
  if (tlsGroup.depth > 1) {
    return WEFT_ERROR(weftInvalidUsage,
                      "weftGroupSimulateEnd inside a nested group (depth %d): it ends the outermost group only; end "
                      "the inner groups with weftGroupEnd first",
                      tlsGroup.depth);
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
}  // namespace capi
}  // namespace core
}  // namespace weft

extern "C" {

weftResult_t weftGroupSimulateEnd(weftSimInfo_t* simInfo) {
  using namespace weft::core::capi;
  Status s = checkSimInfo(simInfo);
  if (!s.isOk()) return report(nullptr, s);
  std::vector<PendingOp> ops;
  ops.swap(tlsGroup.ops);
  tlsGroup.depth = 0;
  simInfo->estimatedTime = static_cast<float>(estimateGroup(ops));
  return weftSuccess;
}

}  // extern "C"
