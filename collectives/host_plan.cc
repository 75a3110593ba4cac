// Making a host plan: the steps of a schedule as tracks of lane runs, their connections, the
// call's stamp and buffers (host_executor.h declares them; the executor itself runs a plan in
// host_executor.cc).
#include <algorithm>
#include <set>

#include "collectives/call_stamp.h"
#include "collectives/host_executor.h"

namespace weft {
namespace coll {

std::vector<ConnectionKey> connectionsOf(const ExecPlan& plan) {
  std::set<ConnectionKey> keys;
  for (const auto& track : plan.tracks) {
    for (const auto& run : track.runs) {
      if (run.iterations == 0) continue;
      for (const auto& step : run.lane->steps) {
        if (step.count == 0) continue;
        if (stepReceives(step.kind)) keys.insert({step.recvPeer, false, run.fifoLane});
        if (stepSends(step.kind)) keys.insert({step.sendPeer, true, sendFifoLane(run, step)});
      }
    }
  }
  return std::vector<ConnectionKey>(keys.begin(), keys.end());
}

namespace {

// Both directions of the probe lane with every probe peer (CallChecks::probePeers); not in
// plan->keys: probes are never waited for.
Status connectProbes(ExecPlan* plan, ConnectionProvider* provider) {
  plan->checks.probeSends.clear();
  plan->checks.probeRecvs.clear();
  if (plan->checks.probePeers.empty()) return Status::ok();
  std::vector<ConnectionKey> keys;
  for (int peer : plan->checks.probePeers) {
    keys.push_back({peer, false, kCallProbeLane});
    keys.push_back({peer, true, kCallProbeLane});
  }
  Status connected = provider->connect(keys, Deadline::afterSeconds(plan->timeoutS));
  if (!connected.isOk()) return std::move(connected).withPrefix(plan->what() + ": ");
  for (int peer : plan->checks.probePeers) {
    plan->checks.probeSends.push_back(provider->get({peer, true, kCallProbeLane}));
    plan->checks.probeRecvs.push_back(provider->get({peer, false, kCallProbeLane}));
  }
  return Status::ok();
}

}  // namespace

Status connectPlan(ExecPlan* plan, ConnectionProvider* provider) {
  plan->keys = connectionsOf(*plan);
  plan->senders.clear();
  Status connected = provider->connect(plan->keys, Deadline::afterSeconds(plan->timeoutS));
  if (!connected.isOk()) return std::move(connected).withPrefix(plan->what() + ": ");
  for (auto& track : plan->tracks) {
    for (auto& run : track.runs) {
      size_t n = run.lane->steps.size();
      run.recvConns.assign(n, nullptr);
      run.sendConns.assign(n, nullptr);
      run.sendByReference.assign(n, 0);
      for (size_t i = 0; i < n; ++i) {
        const Step& step = run.lane->steps[i];
        if (step.count == 0 || run.iterations == 0) continue;
        if (stepReceives(step.kind)) run.recvConns[i] = provider->get({step.recvPeer, false, run.fifoLane});
        if (stepSends(step.kind)) run.sendConns[i] = provider->get({step.sendPeer, true, sendFifoLane(run, step)});
        if (step.kind == StepKind::kSend && step.srcBuf == Buf::kSend) {
          run.sendByReference[i] = run.sendConns[i]->sendsReferencedBytes()        ? LaneRun::kTransportReads
                                   : provider->peerReadsMyMemory(step.sendPeer) ? LaneRun::kPeerReads
                                                                                : 0;
        }
      }
    }
  }
  WEFT_TRY(connectProbes(plan, provider));
  std::set<Connection*> senders, receivers;
  for (const auto& key : plan->keys) (key.send ? senders : receivers).insert(provider->get(key));
  plan->senders.assign(senders.begin(), senders.end());
  plan->receivers.assign(receivers.begin(), receivers.end());
  plan->connected = true;
  return Status::ok();
}

ExecPlan planCollective(const RankSchedule& schedule, size_t elemSize, size_t slotBytes) {
  ExecPlan plan;
  int64_t sliceElems = std::max<int64_t>(1, static_cast<int64_t>(slotBytes / elemSize));
  int64_t iterations = iterationsFor(schedule.maxStepCount, sliceElems);
  for (size_t l = 0; l < schedule.lanes.size(); ++l) {
    LaneRun run;
    run.lane = &schedule.lanes[l];
    run.fifoLane = static_cast<int>(l);
    run.elemSize = elemSize;
    run.sliceElems = sliceElems;
    run.iterations = iterations;
    plan.tracks.push_back(Track{{run}});
  }
  return plan;
}

void addCallTokenTrack(ExecPlan* plan, const Lane* tokenLane, char* token) {
  LaneRun run;
  run.lane = tokenLane;
  run.fifoLane = kCallTokenLane;
  run.sendbuff = token;
  run.recvbuff = token + 1;
  run.elemSize = 1;
  run.ownBuffers = true;
  run.sliceElems = 1;
  run.iterations = tokenLane->steps.empty() ? 0 : 1;
  plan->tracks.push_back(Track{{run}});
}

void stampPlan(ExecPlan* plan, uint64_t stamp) {
  plan->checks.stamp = stamp;
  plan->checks.collectiveSeq = stampSeq(stamp);
  for (auto& track : plan->tracks) {
    for (auto& run : track.runs) run.sendStamp = run.recvStamp = stamp;
  }
}

void bindBuffers(ExecPlan* plan, const void* sendbuff, void* recvbuff, void* scratch, ReduceFn reduce,
                 ReduceCopyFn reduceCopy, uint32_t avgDivisor, PreMulFn preMul, const void* scalar,
                 ReduceCopyFn reduceStream) {
  for (auto& track : plan->tracks) {
    for (auto& run : track.runs) {
      if (run.ownBuffers) continue;
      run.sendbuff = static_cast<const char*>(sendbuff);
      run.recvbuff = static_cast<char*>(recvbuff);
      run.scratch = static_cast<char*>(scratch);
      run.reduce = reduce;
      run.reduceCopy = reduceCopy;
      run.reduceStream = reduceStream;
      run.avgDivisor = avgDivisor;
      run.preMul = preMul;
      run.scalar = scalar;
    }
  }
}

}  // namespace coll
}  // namespace weft
