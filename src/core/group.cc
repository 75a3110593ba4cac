// Groups (group.h): the thread's recorded calls, fusion of device collectives, and running each
// communicator's share of a group.
#include "core/group.h"

#include <algorithm>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "core/call_context.h"
#include "core/coll_facts.h"
#include "device/device.h"

namespace weft {
namespace core {
namespace capi {
namespace {

struct GroupState {
  int depth = 0;
  std::vector<PendingOp> ops;
};

thread_local GroupState tlsGroup;

bool overlaps(const CollCall& a, const CollCall& b, size_t nRanks) {
  auto range = [](const void* p, size_t bytes) {
    auto v = reinterpret_cast<uintptr_t>(p);
    return std::make_pair(v, v + bytes);
  };
  Extents ea = extentsOf(a, nRanks), eb = extentsOf(b, nRanks);
  std::pair<uintptr_t, uintptr_t> ra[2] = {range(a.sendbuff, ea.send), range(a.recvbuff, ea.recv)};
  std::pair<uintptr_t, uintptr_t> rb[2] = {range(b.sendbuff, eb.send), range(b.recvbuff, eb.recv)};
  for (auto& x : ra) {
    for (auto& y : rb) {
      if (x.first != 0 && y.first != 0 && x.first < y.second && y.first < x.second) return true;
    }
  }
  return false;
}

// ops[j] can join the launch of batch (which started at ops[i]): same stream, type and op, room
// left, and buffers apart from every call already in it.
bool fuses(const std::vector<CollCall>& batch, const PendingOp& first, const PendingOp& next) {
  if (batch.size() >= static_cast<size_t>(device::kMaxFusedOps)) return false;
  if (!coll::collTraits(next.coll.kind).scheduled) return false;  // gather and scatter go alone
  if (next.stream != first.stream || next.coll.type != first.coll.type || next.coll.op != first.coll.op) return false;
  const size_t nRanks = static_cast<size_t>(next.comm->nRanks);
  for (const CollCall& c : batch) {
    if (overlaps(c, next.coll, nRanks)) return false;
  }
  return true;
}

// Device collectives of a group: consecutive calls on one stream with one type and op whose
// buffers are apart are fused into one launch (they run side by side); the others go alone.
Status runDeviceOps(Communicator* impl, const std::vector<PendingOp>& ops) {
  size_t i = 0;
  while (i < ops.size()) {
    // Gather and scatter are sends and receives of their own, one launch each.
    if (!coll::collTraits(ops[i].coll.kind).scheduled) {
      WEFT_TRY(impl->runDeviceRooted(ops[i].coll, ops[i].stream));
      ++i;
      continue;
    }
    std::vector<CollCall> batch{ops[i].coll};
    size_t j = i + 1;
    while (j < ops.size() && fuses(batch, ops[i], ops[j])) batch.push_back(ops[j++].coll);
    WEFT_TRY(impl->runDevice(batch, ops[i].stream));
    i = j;
  }
  return Status::ok();
}

// A host rank of a mixed communicator runs its calls as lane launches on CPU threads, which
// end before the launch returns: its failures are in the lanes' record at once.
Status runHostLanes(Communicator* impl, const std::vector<PendingOp>& device, const std::vector<P2pCall>& p2p) {
  if (!device.empty()) WEFT_TRY(runDeviceOps(impl, device));
  if (!p2p.empty()) WEFT_TRY(impl->runDeviceP2p(p2p, nullptr));
  return impl->deviceAsyncError();
}

// Runs one communicator's share of a group: collectives in call order (device ones enqueued,
// fused where they can be), then every send and receive concurrently.
Status runOps(weftComm* comm, const PendingOp* begin, const PendingOp* end) {
  Communicator* impl = comm->impl.get();
  std::vector<P2pCall> p2p, deviceP2p;
  weftStream_t p2pStream = nullptr;
  std::vector<PendingOp> device;
  if (impl->hostRunsLanes()) {
    for (const PendingOp* op = begin; op != end; ++op) {
      if (op->isP2p) deviceP2p.push_back(op->p2p);
      if (!op->isP2p) device.push_back(*op);
    }
    return runHostLanes(impl, device, deviceP2p);
  }
  for (const PendingOp* it = begin; it != end; ++it) {
    const PendingOp& op = *it;
    if (op.stream != nullptr && op.isP2p) {
      if (p2pStream != nullptr && op.stream != p2pStream) {
        return Call(comm, "weftGroupEnd")
            .error(weftInvalidUsage, "the sends and receives of a group on device buffers must use one stream");
      }
      p2pStream = op.stream;
      deviceP2p.push_back(op.p2p);
    } else if (op.stream != nullptr) {
      device.push_back(op);
    } else {
      if (!device.empty()) WEFT_TRY(runDeviceOps(impl, device));
      device.clear();
      if (op.isP2p) {
        p2p.push_back(op.p2p);
      } else {
        WEFT_TRY(impl->runCollective(op.coll));
      }
    }
  }
  if (!device.empty()) WEFT_TRY(runDeviceOps(impl, device));
  if (!deviceP2p.empty()) WEFT_TRY(impl->runDeviceP2p(deviceP2p, p2pStream));
  if (!p2p.empty()) WEFT_TRY(impl->runP2p(p2p));
  return Status::ok();
}

// Runs ops now; a failure is recorded while the call is still in flight (see InFlight).
weftResult_t runNow(weftComm* comm, const PendingOp* begin, const PendingOp* end) {
  InFlight inFlight(comm);
  Status s = runOps(comm, begin, end);
  return s.isOk() ? weftSuccess : reportOpFailure(comm, s);
}

// The streams of a communicator's device calls in a group, each once.
std::vector<void*> deviceStreams(const weftComm* comm, const std::vector<PendingOp>& ops) {
  std::vector<void*> streams;
  for (const auto& op : ops) {
    void* s = reinterpret_cast<void*>(op.stream);
    if (op.comm == comm && s != nullptr && std::find(streams.begin(), streams.end(), s) == streams.end()) {
      streams.push_back(s);
    }
  }
  return streams;
}

// Several communicators with device calls: each one's stream waits for the caller's streams
// before any of them launches, and the caller's streams wait for all of them at the end
// (DevicePath::beginGroup says why). *joined: the communicators to join.
void forkDeviceGroup(const std::vector<weftComm*>& comms, const std::vector<PendingOp>& ops,
                     std::vector<weftResult_t>* results, std::vector<bool>* joined) {
  for (size_t i = 0; i < comms.size(); ++i) {
    const std::vector<void*> streams = deviceStreams(comms[i], ops);
    if (streams.empty()) continue;
    InFlight inFlight(comms[i]);
    Status s = comms[i]->impl->beginDeviceGroup(streams);
    if (!s.isOk()) (*results)[i] = reportOpFailure(comms[i], s);
    (*joined)[i] = true;
  }
}

void joinDeviceGroup(const std::vector<weftComm*>& comms, std::vector<weftResult_t>* results,
                     const std::vector<bool>& joined) {
  for (size_t i = 0; i < comms.size(); ++i) {
    if (!joined[i]) continue;
    InFlight inFlight(comms[i]);
    Status s = comms[i]->impl->endDeviceGroup();
    if (!s.isOk() && (*results)[i] == weftSuccess) (*results)[i] = reportOpFailure(comms[i], s);
  }
}

// Runs a group's calls: each communicator's share in call order. Several communicators (e.g.
// from weftCommInitAll) driven by one thread must run concurrently: each gets a thread.
weftResult_t runGroup(const std::vector<PendingOp>& ops) {
  std::vector<weftComm*> comms;
  for (const auto& op : ops) {
    if (std::find(comms.begin(), comms.end(), op.comm) == comms.end()) comms.push_back(op.comm);
  }
  std::vector<weftResult_t> results(comms.size(), weftSuccess);
  auto runShare = [&](size_t i) {
    std::vector<PendingOp> mine;
    for (const auto& op : ops) {
      if (op.comm == comms[i]) mine.push_back(op);
    }
    results[i] = runNow(comms[i], mine.data(), mine.data() + mine.size());
  };
  if (comms.size() == 1) {
    runShare(0);
  } else {
    std::vector<bool> joined(comms.size(), false);
    forkDeviceGroup(comms, ops, &results, &joined);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < comms.size(); ++i) {
      if (results[i] == weftSuccess) threads.emplace_back(runShare, i);
    }
    for (auto& t : threads) t.join();
    joinDeviceGroup(comms, &results, joined);
  }
  for (weftResult_t r : results) {
    if (r != weftSuccess) return r;
  }
  return weftSuccess;
}

}  // namespace

PendingOp collOp(weftComm* comm, const CollCall& call, weftStream_t stream) {
  PendingOp op;
  op.comm = comm;
  op.stream = stream;
  op.coll = call;
  return op;
}

PendingOp p2pOp(weftComm* comm, weftStream_t stream, bool send, const void* buf, size_t bytes, int peer) {
  PendingOp op;
  op.comm = comm;
  op.stream = stream;
  op.isP2p = true;
  op.p2p.send = send;
  if (send) {
    op.p2p.sendbuff = buf;
  } else {
    op.p2p.recvbuff = const_cast<void*>(buf);
  }
  op.p2p.bytes = bytes;
  op.p2p.peer = peer;
  return op;
}

int groupDepth() { return tlsGroup.depth; }

weftResult_t submit(weftComm* comm, const PendingOp& op) {
  if (tlsGroup.depth > 0) {
    tlsGroup.ops.push_back(op);
    return weftSuccess;
  }
  return runNow(comm, &op, &op + 1);  // no container: nothing allocated on the path of a small call
}

weftResult_t groupStart() {
  ++tlsGroup.depth;
  return weftSuccess;
}

weftResult_t groupEnd() {
  Call call(nullptr, "weftGroupEnd");
  if (tlsGroup.depth <= 0) {
    return call.finish(call.error(weftInvalidUsage, "called without a matching weftGroupStart"));
  }
  if (--tlsGroup.depth > 0) return weftSuccess;
  std::vector<PendingOp> ops;
  ops.swap(tlsGroup.ops);
  return runGroup(ops);
}

size_t recordedCallsOn(const weftComm* comm) {
  return static_cast<size_t>(std::count_if(tlsGroup.ops.begin(), tlsGroup.ops.end(),
                                           [comm](const PendingOp& op) { return op.comm == comm; }));
}

void forgetCallsOn(const weftComm* comm) {
  auto& ops = tlsGroup.ops;
  ops.erase(std::remove_if(ops.begin(), ops.end(), [comm](const PendingOp& op) { return op.comm == comm; }),
            ops.end());
}

std::vector<PendingOp> dropGroup() {
  std::vector<PendingOp> ops;
  ops.swap(tlsGroup.ops);
  tlsGroup.depth = 0;
  return ops;
}

}  // namespace capi
}  // namespace core
}  // namespace weft
