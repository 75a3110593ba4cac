// Communicators created inside ncclGroupStart/ncclGroupEnd. NCCL lets one thread create several
// ranks in a group (the inits and splits complete at ncclGroupEnd); Weft's inits and splits
// wait for every member, so here they start at the call (an init non-blocking, a split on a
// thread of its own) and the outermost ncclGroupEnd completes them.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "shim.h"

namespace weft::nccl {
namespace {

struct DeferredInit {
  weftComm_t comm;
  bool callerBlocking;
};

struct DeferredSplit {
  std::thread thread;
  weftResult_t result = weftSuccess;
  std::string error;  // the split's message, recorded on its thread
};

struct GroupState {
  int depth = 0;
  std::vector<DeferredInit> inits;
  std::vector<std::unique_ptr<DeferredSplit>> splits;
};
thread_local GroupState tGroup;

// Waits for one init when its caller asked to block; its state then.
weftResult_t settle(const DeferredInit& d) {
  weftResult_t state = weftInProgress;
  // Weft's init has its own deadline (WEFT_TIMEOUT_S), so this loop ends.
  while (true) {
    weftResult_t r = weftCommGetAsyncError(d.comm, &state);
    if (r != weftSuccess) state = r;
    if (state != weftInProgress || !d.callerBlocking) return state;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

int groupDepth() { return tGroup.depth; }
void groupEnter() { ++tGroup.depth; }
bool groupLeave() { return tGroup.depth > 0 && --tGroup.depth == 0; }

void deferInit(weftComm_t comm, bool callerBlocking) { tGroup.inits.push_back({comm, callerBlocking}); }

void deferSplit(weftComm_t comm, int color, int key, weftComm_t* newcomm, const TranslatedConfig& config) {
  auto split = std::make_unique<DeferredSplit>();
  DeferredSplit* s = split.get();
  s->thread = std::thread([s, comm, color, key, newcomm, cfg = config]() mutable {
    s->result = weftCommSplit(comm, color, key, newcomm, weftConfigOf(cfg));
    if (s->result != weftSuccess) s->error = weftGetLastError(comm);
  });
  tGroup.splits.push_back(std::move(split));
}

ncclResult_t completeDeferred() {
  std::vector<DeferredInit> inits;
  inits.swap(tGroup.inits);
  std::vector<std::unique_ptr<DeferredSplit>> splits;
  splits.swap(tGroup.splits);
  ncclResult_t result = ncclSuccess;
  auto failed = [&](weftResult_t code, const std::string& message) {
    if (result != ncclSuccess && result != ncclInProgress) return;  // the first failure wins
    result = toNccl(code);
    noteAsyncError(message.c_str());
  };
  for (auto& s : splits) {
    s->thread.join();
    if (s->result != weftSuccess) failed(s->result, s->error);
  }
  for (const DeferredInit& d : inits) {
    weftResult_t state = settle(d);
    if (state == weftInProgress) {
      if (result == ncclSuccess) result = ncclInProgress;
    } else if (state != weftSuccess) {
      failed(state, weftGetLastError(d.comm));
    }
  }
  return result;
}

}  // namespace weft::nccl
