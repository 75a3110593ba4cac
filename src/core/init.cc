// Every way to make a communicator: weftCommInitRank(Config) (blocking, or non-blocking on a
// thread of its own), weftCommInitAll (ranks as threads of this process), weftCommInitFromEnv
// and weftCommInitRankScalable; and weftGetUniqueId.
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/params.h"
#include "core/api_entry.h"
#include "core/bootstrap.h"
#include "core/call_context.h"
#include "device/device.h"

namespace weft {
namespace core {
namespace capi {
namespace {

// Ranks of one communicator: the bootstrap keeps a table of every rank's address.
constexpr int kMaxRanks = 1 << 20;
// Ranks weftCommInitAll runs as threads of one process: one thread (and its stack) per rank.
// Init memory grows linearly (its ranks share one peer table; perf/RESULTS.md: 1024 ranks peak at
// 30 MB, down from 2.9 GB), so the bound is about threads, not memory.
constexpr int kMaxInitAllRanks = 1024;

// WEFT_TIMEOUT_S <= 0 would make every deadline expire at once (a misleading network error).
Status checkTimeout(const Call& call, const weftConfig_t* config) {
  if (config && config->timeoutS > 0) return Status::ok();
  const int64_t t = params::TimeoutS();
  if (t > 0) return Status::ok();
  return call.error(weftInvalidArgument,
                    "WEFT_TIMEOUT_S=%lld is not a time-out: it must be at least 1 (seconds); unset it for the "
                    "default of 1800, or set e.g. WEFT_TIMEOUT_S=600",
                    static_cast<long long>(t));
}

Status checkInitArgs(weftComm_t* comm, int nranks, int rank, const weftConfig_t* config) {
  Call call(nullptr, "weftCommInitRank");
  WEFT_TRY(call.checkOutput(comm, "comm (the output pointer)"));
  if (nranks < 1) return call.error(weftInvalidArgument, "nranks is %d; it must be at least 1", nranks);
  if (nranks > kMaxRanks) {
    return call.error(weftInvalidArgument, "nranks is %d; Weft supports at most %d ranks per communicator", nranks,
                      kMaxRanks);
  }
  WEFT_TRY(checkTimeout(call, config));
  if (rank < 0 || rank >= nranks) {
    return call.error(weftInvalidArgument, "rank %d is outside 0..%d", rank, nranks - 1);
  }
  return Call(nullptr, "weftCommInitRankConfig").checkConfig(config);
}

Status initComm(weftComm* handle, const weftUniqueId& id, int nranks, int rank, const weftConfig_t* config) {
  // weftCommAbort sets initAbort: the bootstrap in progress then gives up within ~0.1 s.
  return Communicator::create(id, nranks, rank, config, &handle->impl, &handle->initAbort);
}

// The init thread of a non-blocking init: it uses the caller's current GPU (a new thread
// starts on device 0), and leaves its result in comm->state for weftCommGetAsyncError.
void startNonBlockingInit(weftComm* comm, const weftUniqueId& id, const weftConfig_t& config) {
  device::Runtime* runtime = device::gpuRuntime();
  int device = -1;
  if (runtime == nullptr || runtime->deviceCount() == 0 || !runtime->getDevice(&device).isOk()) device = -1;
  comm->state.store(weftInProgress);
  initProcessStatics();  // the caller may fork while the init thread runs (base/os.h)
  comm->initThread = std::thread([comm, id, cfg = config, runtime, device] {
    Status st = Status::ok();
    if (device >= 0) {
      st = runtime->setDevice(device);
      if (!st.isOk()) {
        st = Call("weftCommInitRankConfig", comm->rank)
                 .wrap(std::move(st), "non-blocking init could not make the caller's device " + std::to_string(device) +
                                          " current in its thread");
      }
    }
    if (st.isOk()) st = initComm(comm, id, comm->nRanks, comm->rank, &cfg);
    if (st.isOk()) {
      comm->state.store(weftSuccess);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(comm->mutex);
      comm->errorMessage = st.message();
      comm->lastError = st.message();
    }
    WEFT_LOG(kWarn, kInit, "%s", st.message().c_str());
    comm->state.store(st.code());
  });
}

Status checkDevlist(const Call& call, int ndev, const int* devlist) {
  // A rank whose device cannot be set would leave the others waiting for it: check them first.
  device::Runtime* gpu = device::gpuRuntime();
  const int deviceCount = gpu != nullptr ? gpu->deviceCount() : 0;
  for (int i = 0; devlist != nullptr && gpu != nullptr && i < ndev; ++i) {
    if (devlist[i] < -1 || devlist[i] >= deviceCount) {
      return call.error(weftInvalidArgument,
                        "devlist[%d] is %d, but this machine has GPUs 0..%d (%s backend), and -1 makes a host rank", i,
                        devlist[i], deviceCount - 1, gpu->name());
    }
  }
  return Status::ok();
}

// Rank i of weftCommInitAll uses its device from devlist (several ranks may name the same one);
// without a devlist, devices 0..ndev-1 as NCCL means it (modulo the device count: ranks share
// GPUs when there are fewer). Without a GPU backend the ranks are host ranks; so is a rank whose
// devlist entry is -1 (its thread makes it under a HostRankScope).
Status bindRankDevice(const Call& call, int i, const int* devlist) {
  device::Runtime* runtime = device::gpuRuntime();
  const int nDevices = runtime != nullptr ? runtime->deviceCount() : 0;
  if (runtime == nullptr || (devlist == nullptr && nDevices == 0)) return Status::ok();
  if (devlist != nullptr && devlist[i] < 0) return Status::ok();
  const int dev = devlist != nullptr ? devlist[i] : i % nDevices;
  Status s = runtime->setDevice(dev);
  if (s.isOk()) return s;
  const std::string which = devlist != nullptr ? "devlist[" + std::to_string(i) + "]" : "device " + std::to_string(dev);
  return call.wrap(std::move(s), which + " for rank " + std::to_string(i));
}

Status checkScalableArgs(weftComm_t* newcomm, int nranks, int myrank, int nId, const weftUniqueId* commIds,
                         const weftConfig_t* config) {
  Call call(nullptr, "weftCommInitRankScalable");
  WEFT_TRY(call.checkOutput(newcomm, "newcomm (the output pointer)"));
  if (nranks < 1) return call.error(weftInvalidArgument, "nranks is %d; it must be at least 1", nranks);
  if (myrank < 0 || myrank >= nranks) {
    return call.error(weftInvalidArgument, "myrank %d is outside 0..%d", myrank, nranks - 1);
  }
  Call ranked(call.fn(), myrank);
  if (nId < 1 || nId > nranks) {
    return ranked.error(weftInvalidArgument,
                        "nId is %d; it must be 1..nranks (%d): each id is made by a different rank", nId, nranks);
  }
  WEFT_TRY(ranked.checkOutput(commIds, "commIds"));
  for (int i = 0; i < nId; ++i) {
    UniqueIdInfo info;
    Status s = decodeUniqueId(commIds[i], &info);
    if (!s.isOk()) return ranked.wrap(std::move(s), "commIds[" + std::to_string(i) + "]");
    for (int j = 0; j < i; ++j) {
      if (std::memcmp(&commIds[i], &commIds[j], sizeof(weftUniqueId)) == 0) {
        return ranked.error(weftInvalidArgument,
                            "commIds[%d] and commIds[%d] are the same id; each must come from its own "
                            "weftGetUniqueId call",
                            j, i);
      }
    }
  }
  return ranked.checkConfig(config);
}

}  // namespace

weftResult_t getUniqueId(weftUniqueId* uniqueId) {
  Call call(nullptr, "weftGetUniqueId");
  Status s = call.checkOutput(uniqueId, "uniqueId");
  if (s.isOk()) s = checkTimeout(call, nullptr);
  if (s.isOk()) s = createUniqueId(uniqueId);
  return call.finish(s);
}

weftResult_t initRank(weftComm_t* out, int nranks, const weftUniqueId& id, int rank, weftConfig_t* config) {
  Status s = checkInitArgs(out, nranks, rank, config);
  if (!s.isOk()) return report(nullptr, s);
  auto* comm = new weftComm();
  comm->rank = rank;
  comm->nRanks = nranks;
  if (config && !config->blocking) {
    startNonBlockingInit(comm, id, *config);
    *out = comm;
    return weftInProgress;
  }
  s = initComm(comm, id, nranks, rank, config);
  if (!s.isOk()) {
    delete comm;
    *out = nullptr;
    return report(nullptr, s);
  }
  *out = comm;
  return weftSuccess;
}

weftResult_t initAll(weftComm_t* comms, int ndev, const int* devlist) {
  Call call(nullptr, "weftCommInitAll");
  Status s = call.checkOutput(comms, "comms");
  if (s.isOk() && ndev < 1) s = call.error(weftInvalidArgument, "ndev is %d; it must be at least 1", ndev);
  // One thread per rank in this process.
  if (s.isOk() && ndev > kMaxInitAllRanks) {
    s = call.error(weftInvalidArgument,
                   "ndev is %d; weftCommInitAll starts one thread per rank in this process and supports at most %d; "
                   "run more ranks as processes with weftCommInitRank",
                   ndev, kMaxInitAllRanks);
  }
  if (s.isOk()) s = checkDevlist(call, ndev, devlist);
  if (!s.isOk()) return call.finish(s);
  weftUniqueId id;
  weftResult_t r = getUniqueId(&id);
  if (r != weftSuccess) return r;
  std::vector<Status> results(static_cast<size_t>(ndev));
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i) {
    threads.emplace_back([&, i] {
      results[i] = bindRankDevice(call, i, devlist);
      if (!results[i].isOk()) return;
      HostRankScope host(devlist != nullptr && devlist[i] < 0);
      weftResult_t rr = initRank(&comms[i], ndev, id, i, nullptr);
      if (rr != weftSuccess) results[i] = Status::error(rr, tlsLastError);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < ndev; ++i) {
    if (results[i].isOk()) continue;
    for (int j = 0; j < ndev; ++j) {
      if (comms[j]) freeComm(comms[j]);
      comms[j] = nullptr;
    }
    // Already logged by the rank that failed (or its device's runtime).
    tlsLastError = results[i].message();
    return results[i].code();
  }
  return weftSuccess;
}

weftResult_t initFromEnv(weftComm_t* comm, weftConfig_t* config) {
  weftUniqueId id;
  int rank = -1, nranks = -1;
  Status s = uniqueIdFromEnv(&id, &rank, &nranks);
  if (!s.isOk()) return report(nullptr, s);
  return initRank(comm, nranks, id, rank, config);
}

// weftCommInitRankScalable: NCCL's init from several unique ids, each made by weftGetUniqueId in
// a different rank's process.
//
// What it does, exactly: every rank joins through the first id (commIds[0]), as
// weftCommInitRankConfig would, and the bootstrap of the ranks is that id's root alone. The
// other ids only have their roots stopped: each rank looks, before joining, for the roots of
// commIds[1..nId-1] that run in its own process (the process that called weftGetUniqueId for
// them) and stops them, closing their listeners, so none is left waiting for ranks that never
// come (they would otherwise warn and close at WEFT_TIMEOUT_S). A root made by a process that
// is not one of the ranks cannot be reached and ends at its own deadline. The root of
// commIds[0] serves the nranks joins (one 128-byte hello each) and exits; spreading the joins
// over the roots, as NCCL does for tens of thousands of ranks, is not done.
weftResult_t initScalable(weftComm_t* newcomm, int nranks, int myrank, int nId, weftUniqueId* commIds,
                          weftConfig_t* config) {
  Status s = checkScalableArgs(newcomm, nranks, myrank, nId, commIds, config);
  if (!s.isOk()) return report(nullptr, s);
  for (int i = 1; i < nId; ++i) {
    bool stopped = false;
    s = stopRoot(commIds[i], &stopped);
    if (!s.isOk()) return report(nullptr, s);
  }
  return initRank(newcomm, nranks, commIds[0], myrank, config);
}

}  // namespace capi
}  // namespace core
}  // namespace weft
