// The C API (include/weft/weft.h): argument checks, error state and messages, groups, and the
// hand-off to core::Communicator. No exception leaves this file.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/params.h"
#include "collectives/datatypes.h"
#include "core/bootstrap.h"
#include "core/api_internal.h"
#include "core/comm.h"
#include "device/device.h"
#include "weft/weft.h"

using weft::Status;
using weft::core::CollCall;
using weft::core::Communicator;
using weft::core::P2pCall;

namespace weft {
namespace core {
namespace capi {

thread_local std::string tlsLastError;

// Records a failure for weftGetLastError and logs it.
weftResult_t report(weftComm* comm, const Status& status) {
  std::string text = status.message();
  if (!status.trace().empty()) {
    WEFT_LOG(kTrace, kInit, "error trace: %s", status.trace().c_str());
  }
  WEFT_LOG(kWarn, kInit, "%s", text.c_str());
  if (comm) {
    std::lock_guard<std::mutex> lock(comm->mutex);
    comm->lastError = text;
  }
  tlsLastError = text;
  return status.code();
}

// A collective failure puts the communicator in its error state: later calls refuse to run.
weftResult_t reportFailure(weftComm* comm, const Status& status) {
  {
    std::lock_guard<std::mutex> lock(comm->mutex);
    if (comm->errorMessage.empty()) comm->errorMessage = status.message();
  }
  int expected = weftSuccess;
  comm->state.compare_exchange_strong(expected, status.code());
  return report(comm, status);
}

// A failed operation: the communicator enters its error state, unless the call was refused before
// it did anything (a graph capture that cannot set up a new collective shape).
weftResult_t reportOpFailure(weftComm* comm, const Status& status) {
  if (comm->impl && comm->impl->takeDeviceRefusal()) return report(comm, status);
  return reportFailure(comm, status);
}

Status invalid(const char* fmt, const char* a, long long b, long long c) {
  char text[512];
  std::snprintf(text, sizeof(text), fmt, a, b, c);
  return Status::error(weftInvalidArgument, text);
}

// Common checks for any call on a communicator.
Status checkComm(weftComm* comm, const char* fn) {
  if (comm == nullptr) return invalid("%s: comm is NULL; create one with weftCommInitRank first", fn);
  int state = comm->state.load();
  if (state == weftInProgress) {
    return Status::error(weftInvalidUsage, std::string(fn) +
                                               ": the communicator is still initialising (non-blocking init); poll "
                                               "weftCommGetAsyncError until it returns weftSuccess");
  }
  if (state != weftSuccess || comm->impl == nullptr || comm->impl->aborted()) {
    std::lock_guard<std::mutex> lock(comm->mutex);
    return Status::error(weftInvalidUsage,
                         "rank " + std::to_string(comm->rank) + ": " + fn +
                             " refused: the communicator is in an error state (" +
                             (comm->errorMessage.empty() ? std::string("aborted") : comm->errorMessage) +
                             "); destroy it and create a new one");
  }
  return Status::ok();
}

Status checkStream(weftComm* comm, weftStream_t stream, const char* fn) {
  if (stream == nullptr) return Status::ok();
  if (weft::device::gpuRuntime() == nullptr) {
    return Status::error(weftInvalidArgument, "rank " + std::to_string(comm->rank) + ": " + fn +
                                                  ": a device stream was given but no GPU backend is loaded (WEFT_DEBUG=INFO "
                                                  "says why); pass stream = NULL for host memory");
  }
  if (comm->impl->device() < 0) {
    return Status::error(weftInvalidUsage, "rank " + std::to_string(comm->rank) + ": " + fn +
                                               ": a device stream was given but no GPU was current when this "
                                               "communicator was created; call cudaSetDevice / hipSetDevice before "
                                               "weftCommInitRank");
  }
  return Status::ok();
}

// With a stream, buffers must be memory this rank's GPU reaches: its device memory, managed
// memory, or pinned host memory.
Status checkDeviceBuffer(weftComm* comm, const void* buf, size_t bytes, const char* what, const char* fn) {
  if (buf == nullptr || bytes == 0) return Status::ok();
  weft::device::Runtime* runtime = weft::device::gpuRuntime();
  weft::device::PointerInfo info;
  Status s = runtime->pointerInfo(buf, &info);
  if (!s.isOk()) return std::move(s).withPrefix("rank " + std::to_string(comm->rank) + ": " + fn + ": " + what + ": ");
  const int dev = comm->impl->device();
  bool ok = info.kind == weft::device::MemoryKind::kManaged || info.kind == weft::device::MemoryKind::kPinnedHost ||
            (info.kind == weft::device::MemoryKind::kDevice && info.device == dev);
  if (ok) return Status::ok();
  std::string where = info.kind == weft::device::MemoryKind::kDevice
                          ? "memory of device " + std::to_string(info.device)
                          : std::string("pageable host memory");
  return Status::error(weftInvalidArgument, "rank " + std::to_string(comm->rank) + ": " + fn + ": " + what + " (" +
                                                std::to_string(bytes) + " bytes) is " + where +
                                                ", but with a stream buffers must be on this rank's device " +
                                                std::to_string(dev) +
                                                " (or managed / pinned host memory); pass stream = NULL for host "
                                                "buffers");
}

Status checkTypeOp(weftComm* comm, weftDataType_t type, const weftRedOp_t* op, const char* fn) {
  if (!weft::coll::isValidDataType(static_cast<int>(type))) {
    return WEFT_ERROR(weftInvalidArgument, "rank %d: %s: datatype %d is not a weftDataType_t (0..11)", comm->rank, fn,
                      static_cast<int>(type));
  }
  if (op && static_cast<int>(*op) >= weftNumOps) return comm->impl->checkRedOp(*op, type, fn);
  if (op && !weft::coll::isValidRedOp(static_cast<int>(*op))) {
    return WEFT_ERROR(weftInvalidArgument,
                      "rank %d: %s: op %d is not a weftRedOp_t (0..4, or one made by weftRedOpCreatePreMulSum)",
                      comm->rank, fn, static_cast<int>(*op));
  }
  return Status::ok();
}

Status checkBuffer(weftComm* comm, const void* buf, size_t count, const char* what, const char* fn) {
  if (buf == nullptr && count > 0) {
    return Status::error(weftInvalidArgument, "rank " + std::to_string(comm->rank) + ": " + fn + ": " + what +
                                                  " is NULL but count is " + std::to_string(count));
  }
  return Status::ok();
}

Status checkCount(weftComm* comm, size_t count, size_t elemSize, size_t multiple, const char* fn) {
  // Byte counts of the larger buffer must fit in int64 (schedules index elements with int64).
  const size_t limit = static_cast<size_t>(INT64_MAX) / 2;
  if (count > limit / elemSize / std::max<size_t>(multiple, 1)) {
    return Status::error(weftInvalidArgument, "rank " + std::to_string(comm->rank) + ": " + fn + ": count " +
                                                  std::to_string(count) + " is too large");
  }
  return Status::ok();
}

// ---- Groups ----------------------------------------------------------------------------

thread_local GroupState tlsGroup;

Extents extentsOf(const CollCall& c, size_t nRanks) {
  using weft::coll::CollKind;
  size_t bytes = c.count * weft::coll::dataTypeSize(c.type);
  Extents e;
  e.send = (c.kind == CollKind::kReduceScatter || c.kind == CollKind::kAllToAll) ? bytes * nRanks : bytes;
  e.recv = (c.kind == CollKind::kAllGather || c.kind == CollKind::kAllToAll) ? bytes * nRanks : bytes;
  return e;
}

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

// Device collectives of a group: consecutive calls on one stream with one type and op whose
// buffers are apart are fused into one launch (they run side by side); the others go alone.
Status runDeviceOps(Communicator* impl, const PendingOp* ops, size_t nOps) {
  size_t i = 0;
  while (i < nOps) {
    std::vector<CollCall> batch{ops[i].coll};
    size_t j = i + 1;
    while (j < nOps && batch.size() < static_cast<size_t>(weft::device::kMaxFusedOps) &&
           ops[j].stream == ops[i].stream && ops[j].coll.type == ops[i].coll.type &&
           ops[j].coll.op == ops[i].coll.op) {
      bool apart = true;
      const size_t nRanks = static_cast<size_t>(ops[j].comm->nRanks);
      for (const CollCall& c : batch) apart = apart && !overlaps(c, ops[j].coll, nRanks);
      if (!apart) break;
      batch.push_back(ops[j].coll);
      ++j;
    }
    WEFT_TRY(impl->runDevice(batch, ops[i].stream));
    i = j;
  }
  return Status::ok();
}

// Runs one communicator's share of a group: collectives in call order (device ones enqueued,
// fused where they can be), then every send and receive concurrently.
Status runOps(weftComm* comm, const PendingOp* ops, size_t nOps) {
  Communicator* impl = comm->impl.get();
  std::vector<P2pCall> p2p;
  std::vector<P2pCall> deviceP2p;
  weftStream_t p2pStream = nullptr;
  std::vector<PendingOp> device;
  for (size_t i = 0; i < nOps; ++i) {
    const PendingOp& op = ops[i];
    if (op.stream != nullptr && op.isP2p) {
      if (p2pStream != nullptr && op.stream != p2pStream) {
        return Status::error(weftInvalidUsage, "rank " + std::to_string(comm->rank) +
                                                   ": the sends and receives of a group on device buffers must use "
                                                   "one stream");
      }
      p2pStream = op.stream;
      deviceP2p.push_back(op.p2p);
      continue;
    }
    if (op.stream != nullptr) {
      device.push_back(op);
      continue;
    }
    if (!device.empty()) {
      WEFT_TRY(runDeviceOps(impl, device.data(), device.size()));
      device.clear();
    }
    if (op.isP2p) {
      p2p.push_back(op.p2p);
    } else {
      WEFT_TRY(impl->runCollective(op.coll));
    }
  }
  if (!device.empty()) WEFT_TRY(runDeviceOps(impl, device.data(), device.size()));
  if (!deviceP2p.empty()) WEFT_TRY(impl->runDeviceP2p(deviceP2p, p2pStream));
  if (!p2p.empty()) WEFT_TRY(impl->runP2p(p2p));
  return Status::ok();
}

// Runs ops now (outside a group) or records them (inside one).
weftResult_t submitAll(weftComm* comm, const std::vector<PendingOp>& ops) {
  if (tlsGroup.depth > 0) {
    tlsGroup.ops.insert(tlsGroup.ops.end(), ops.begin(), ops.end());
    return weftSuccess;
  }
  // The failure is recorded before inFlight drops: weftCommAbort frees the communicator as
  // soon as nothing is in flight.
  comm->inFlight.fetch_add(1);
  Status s = runOps(comm, ops.data(), ops.size());
  weftResult_t result = s.isOk() ? weftSuccess : reportOpFailure(comm, s);
  comm->inFlight.fetch_sub(1);
  return result;
}

weftResult_t submit(const PendingOp& op) { return submitAll(op.comm, {op}); }

weftComm* wrapCommunicator(std::unique_ptr<Communicator> impl) {
  auto* out = new weftComm();
  out->rank = impl->rank();
  out->nRanks = impl->nRanks();
  out->impl = std::move(impl);
  return out;
}

weftResult_t submitCollective(weftComm* comm, const CollCall& call, weftStream_t stream = nullptr) {
  PendingOp op;
  op.comm = comm;
  op.stream = stream;
  op.coll = call;
  return submit(op);
}

Status validateCollective(weftComm* comm, const CollCall& c, weftStream_t stream, const char* fn) {
  WEFT_TRY(checkComm(comm, fn));
  WEFT_TRY(checkStream(comm, stream, fn));
  bool reduces = c.kind == weft::coll::CollKind::kAllReduce || c.kind == weft::coll::CollKind::kReduceScatter ||
                 c.kind == weft::coll::CollKind::kReduce;
  WEFT_TRY(checkTypeOp(comm, c.type, reduces ? &c.op : nullptr, fn));
  size_t n = static_cast<size_t>(comm->nRanks);
  bool rooted = c.kind == weft::coll::CollKind::kBroadcast || c.kind == weft::coll::CollKind::kReduce;
  if (rooted && (c.root < 0 || c.root >= comm->nRanks)) {
    return Status::error(weftInvalidArgument, "rank " + std::to_string(comm->rank) + ": " + fn + ": root " +
                                                  std::to_string(c.root) + " is not a rank of this communicator (0.." +
                                                  std::to_string(comm->nRanks - 1) + ")");
  }
  size_t multiple = (c.kind == weft::coll::CollKind::kAllGather || c.kind == weft::coll::CollKind::kReduceScatter ||
                     c.kind == weft::coll::CollKind::kAllToAll)
                        ? n
                        : 1;
  WEFT_TRY(checkCount(comm, c.count, weft::coll::dataTypeSize(c.type), multiple, fn));
  bool isRoot = c.root == comm->rank;
  bool needsSend = !(c.kind == weft::coll::CollKind::kBroadcast && !isRoot);
  bool needsRecv = !(c.kind == weft::coll::CollKind::kReduce && !isRoot);
  if (needsSend) WEFT_TRY(checkBuffer(comm, c.sendbuff, c.count, "sendbuff", fn));
  if (needsRecv) WEFT_TRY(checkBuffer(comm, c.recvbuff, c.count, "recvbuff", fn));
  if (stream != nullptr) {
    Extents e = extentsOf(c, n);
    if (needsSend) WEFT_TRY(checkDeviceBuffer(comm, c.sendbuff, e.send, "sendbuff", fn));
    if (needsRecv) WEFT_TRY(checkDeviceBuffer(comm, c.recvbuff, e.recv, "recvbuff", fn));
    // A failure of device work enqueued earlier puts the communicator in its error state.
    Status async = comm->impl->deviceAsyncError();
    if (!async.isOk()) {
      reportFailure(comm, async);
      return checkComm(comm, fn);
    }
  }
  return Status::ok();
}

weftResult_t collective(weftComm* comm, const CollCall& call, weftStream_t stream, const char* fn) {
  Status s = validateCollective(comm, call, stream, fn);
  if (!s.isOk()) return report(comm, s);
  return submitCollective(comm, call, stream);
}

Status initComm(weftComm* handle, const weftUniqueId& id, int nranks, int rank, const weftConfig_t* config) {
  // weftCommAbort sets initAbort: the bootstrap in progress then gives up within ~0.1 s.
  return Communicator::create(id, nranks, rank, config, &handle->impl, &handle->initAbort);
}

Status checkInitArgs(weftComm_t* comm, int nranks, int rank, const weftConfig_t* config) {
  if (comm == nullptr) return invalid("weftCommInitRank: comm (the output pointer) is NULL");
  if (nranks < 1) return invalid("weftCommInitRank: nranks is %s%lld; it must be at least 1", "", nranks);
  if (rank < 0 || rank >= nranks) {
    return invalid("weftCommInitRank: rank %s%lld is outside 0..%lld", "", rank, nranks - 1);
  }
  if (config) {
    if (config->magic != WEFT_CONFIG_MAGIC || config->size < offsetof(weftConfig_t, commName)) {
      return invalid("weftCommInitRankConfig: config was not set up with WEFT_CONFIG_INITIALIZER");
    }
  }
  return Status::ok();
}

weftResult_t initRank(weftComm_t* out, int nranks, const weftUniqueId& id, int rank, weftConfig_t* config) {
  Status s = checkInitArgs(out, nranks, rank, config);
  if (!s.isOk()) return report(nullptr, s);
  auto* comm = new weftComm();
  comm->rank = rank;
  comm->nRanks = nranks;
  if (config && !config->blocking) {
    comm->state.store(weftInProgress);
    // The init thread uses the caller's current GPU (a new thread starts on device 0).
    weft::device::Runtime* runtime = weft::device::gpuRuntime();
    int device = -1;
    if (runtime == nullptr || runtime->deviceCount() == 0 || !runtime->getDevice(&device).isOk()) device = -1;
    comm->initThread = std::thread([comm, id, nranks, rank, cfg = *config, runtime, device] {
      Status st = Status::ok();
      if (device >= 0) {
        st = runtime->setDevice(device);
        if (!st.isOk()) {
          st = std::move(st).withPrefix("rank " + std::to_string(rank) +
                                        ": non-blocking init could not make the caller's device " +
                                        std::to_string(device) + " current in its thread: ");
        }
      }
      if (st.isOk()) st = initComm(comm, id, nranks, rank, &cfg);
      if (st.isOk()) {
        comm->state.store(weftSuccess);
      } else {
        {
          std::lock_guard<std::mutex> lock(comm->mutex);
          comm->errorMessage = st.message();
          comm->lastError = st.message();
        }
        WEFT_LOG(kWarn, kInit, "%s", st.message().c_str());
        comm->state.store(st.code());
      }
    });
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

void freeComm(weftComm* comm) {
  if (comm->initThread.joinable()) comm->initThread.join();
  delete comm;
}

}  // namespace capi
}  // namespace core
}  // namespace weft

using namespace weft::core::capi;  // NOLINT: this file is the C API over those helpers

extern "C" {

weftResult_t weftGetVersion(int* version) {
  if (version == nullptr) return report(nullptr, invalid("weftGetVersion: version is NULL"));
  *version = WEFT_VERSION_CODE;
  return weftSuccess;
}

const char* weftGetErrorString(weftResult_t result) {
  switch (result) {
    case weftSuccess: return "no error";
    case weftUnhandledDeviceError: return "unhandled device (CUDA/HIP) error";
    case weftSystemError: return "system error (sockets, shared memory, processes)";
    case weftInternalError: return "internal error (a bug in Weft; please report it)";
    case weftInvalidArgument: return "invalid argument";
    case weftInvalidUsage: return "invalid usage";
    case weftRemoteError: return "remote error (another rank failed or went away)";
    case weftInProgress: return "operation in progress";
    case weftTimeout: return "timeout";
    default: return "unknown result code";
  }
}

const char* weftGetLastError(weftComm_t comm) {
  if (comm == nullptr) return tlsLastError.c_str();
  // The string lives in the communicator; copy it to thread-local storage so that a concurrent
  // error on another thread cannot change it under the caller.
  {
    std::lock_guard<std::mutex> lock(comm->mutex);
    tlsLastError = comm->lastError;
  }
  return tlsLastError.c_str();
}

weftResult_t weftGetUniqueId(weftUniqueId* uniqueId) {
  if (uniqueId == nullptr) return report(nullptr, invalid("weftGetUniqueId: uniqueId is NULL"));
  Status s = weft::core::createUniqueId(uniqueId);
  return s.isOk() ? weftSuccess : report(nullptr, s);
}

weftResult_t weftCommInitRank(weftComm_t* comm, int nranks, weftUniqueId commId, int rank) {
  return initRank(comm, nranks, commId, rank, nullptr);
}

weftResult_t weftCommInitRankConfig(weftComm_t* comm, int nranks, weftUniqueId commId, int rank,
                                    weftConfig_t* config) {
  return initRank(comm, nranks, commId, rank, config);
}

weftResult_t weftCommInitAll(weftComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr) return report(nullptr, invalid("weftCommInitAll: comms is NULL"));
  if (ndev < 1) return report(nullptr, invalid("weftCommInitAll: ndev is %s%lld; it must be at least 1", "", ndev));
  // A rank whose device cannot be set would leave the others waiting for it: check them first.
  weft::device::Runtime* gpu = weft::device::gpuRuntime();
  const int deviceCount = gpu != nullptr ? gpu->deviceCount() : 0;
  for (int i = 0; devlist != nullptr && gpu != nullptr && i < ndev; ++i) {
    if (devlist[i] < 0 || devlist[i] >= deviceCount) {
      return report(nullptr, WEFT_ERROR(weftInvalidArgument,
                                        "weftCommInitAll: devlist[%d] is %d, but this machine has GPUs 0..%d (%s "
                                        "backend)",
                                        i, devlist[i], deviceCount - 1, gpu->name()));
    }
  }
  weftUniqueId id;
  weftResult_t r = weftGetUniqueId(&id);
  if (r != weftSuccess) return r;
  std::vector<weftResult_t> results(static_cast<size_t>(ndev), weftSuccess);
  std::vector<std::string> errors(static_cast<size_t>(ndev));
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i) {
    threads.emplace_back([&, i] {
      // Each rank uses its device from devlist (several ranks may name the same one); without
      // a devlist, devices 0..ndev-1 as NCCL means it (modulo the device count: ranks share
      // GPUs when there are fewer). Without a GPU backend the ranks are host ranks.
      weft::device::Runtime* runtime = weft::device::gpuRuntime();
      const int nDevices = runtime != nullptr ? runtime->deviceCount() : 0;
      if (runtime != nullptr && (devlist != nullptr || nDevices > 0)) {
        const int dev = devlist != nullptr ? devlist[i] : i % nDevices;
        Status s = runtime->setDevice(dev);
        if (!s.isOk()) {
          results[i] = s.code();
          errors[i] = "weftCommInitAll: " +
                      (devlist != nullptr ? "devlist[" + std::to_string(i) + "]" : "device " + std::to_string(dev)) +
                      " for rank " + std::to_string(i) + ": " + s.message();
          return;
        }
      }
      results[i] = weftCommInitRank(&comms[i], ndev, id, i);
      if (results[i] != weftSuccess) errors[i] = tlsLastError;
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < ndev; ++i) {
    if (results[i] != weftSuccess) {
      for (int j = 0; j < ndev; ++j) {
        if (comms[j]) weftCommDestroy(comms[j]);
        comms[j] = nullptr;
      }
      tlsLastError = errors[i];
      return results[i];
    }
  }
  return weftSuccess;
}

weftResult_t weftCommInitFromEnv(weftComm_t* comm, weftConfig_t* config) {
  weftUniqueId id;
  int rank = -1, nranks = -1;
  Status s = weft::core::uniqueIdFromEnv(&id, &rank, &nranks);
  if (!s.isOk()) return report(nullptr, s);
  return initRank(comm, nranks, id, rank, config);
}

weftResult_t weftCommSplit(weftComm_t comm, int color, int key, weftComm_t* newcomm, weftConfig_t* config) {
  Status s = checkComm(comm, "weftCommSplit");
  if (s.isOk() && newcomm == nullptr) s = invalid("weftCommSplit: newcomm is NULL");
  if (s.isOk() && color < 0 && color != WEFT_SPLIT_NOCOLOR) {
    s = invalid("weftCommSplit: color %s%lld is negative; use WEFT_SPLIT_NOCOLOR to opt out", "", color);
  }
  if (!s.isOk()) return report(comm, s);
  *newcomm = nullptr;
  comm->inFlight.fetch_add(1);
  std::unique_ptr<Communicator> impl;
  s = comm->impl->split(color, key, config, &impl);
  if (!s.isOk()) {
    weftResult_t result = reportFailure(comm, s);
    comm->inFlight.fetch_sub(1);
    return result;
  }
  comm->inFlight.fetch_sub(1);
  if (impl) *newcomm = wrapCommunicator(std::move(impl));
  return weftSuccess;
}

weftResult_t weftCommFinalize(weftComm_t comm) {
  if (comm == nullptr) return report(nullptr, invalid("weftCommFinalize: comm is NULL"));
  // Host-memory calls complete before they return; device work may still be queued.
  if (comm->initThread.joinable()) comm->initThread.join();
  if (comm->impl) {
    Status s = comm->impl->synchronizeDevice();
    if (s.isOk()) s = comm->impl->deviceAsyncError();
    if (!s.isOk()) return reportFailure(comm, s);
  }
  return weftSuccess;
}

weftResult_t weftCommDestroy(weftComm_t comm) {
  if (comm == nullptr) return report(nullptr, invalid("weftCommDestroy: comm is NULL"));
  freeComm(comm);
  return weftSuccess;
}

weftResult_t weftCommAbort(weftComm_t comm) {
  if (comm == nullptr) return report(nullptr, invalid("weftCommAbort: comm is NULL"));
  if (comm->initThread.joinable()) {
    // A non-blocking init may still be running: its bootstrap sees initAbort within ~0.1 s.
    comm->initAbort.store(true);
    comm->initThread.join();
  }
  if (comm->impl) comm->impl->abort();
  // Calls in flight on other threads see the abort within milliseconds; wait for them to leave.
  while (comm->inFlight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  freeComm(comm);
  return weftSuccess;
}

weftResult_t weftCommGetAsyncError(weftComm_t comm, weftResult_t* asyncError) {
  if (comm == nullptr || asyncError == nullptr) {
    return report(comm, invalid("weftCommGetAsyncError: comm or asyncError is NULL"));
  }
  if (comm->state.load() == weftSuccess && comm->impl) {
    Status s = comm->impl->deviceAsyncError();
    if (!s.isOk()) reportFailure(comm, s);
  }
  *asyncError = static_cast<weftResult_t>(comm->state.load());
  return weftSuccess;
}

weftResult_t weftCommCount(const weftComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr) return report(comm, invalid("weftCommCount: comm or count is NULL"));
  *count = comm->nRanks;
  return weftSuccess;
}

weftResult_t weftCommUserRank(const weftComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return report(comm, invalid("weftCommUserRank: comm or rank is NULL"));
  *rank = comm->rank;
  return weftSuccess;
}

weftResult_t weftCommDevice(const weftComm_t comm, int* device) {
  if (comm == nullptr || device == nullptr) return report(comm, invalid("weftCommDevice: comm or device is NULL"));
  *device = comm->impl ? comm->impl->device() : -1;
  return weftSuccess;
}

weftResult_t weftRedOpCreatePreMulSum(weftRedOp_t* op, void* scalar, weftDataType_t datatype,
                                      weftScalarResidence_t residence, weftComm_t comm) {
  const char* fn = "weftRedOpCreatePreMulSum";
  Status s = checkComm(comm, fn);
  if (s.isOk()) s = checkTypeOp(comm, datatype, nullptr, fn);
  if (s.isOk() && (op == nullptr || scalar == nullptr)) {
    s = WEFT_ERROR(weftInvalidArgument, "rank %d: %s: %s is NULL", comm->rank, fn, op == nullptr ? "op" : "scalar");
  }
  if (s.isOk() && residence != weftScalarDevice && residence != weftScalarHostImmediate) {
    s = WEFT_ERROR(weftInvalidArgument,
                   "rank %d: %s: residence %d is neither weftScalarDevice (0) nor weftScalarHostImmediate (1)",
                   comm->rank, fn, static_cast<int>(residence));
  }
  if (s.isOk()) s = comm->impl->createPreMulSum(scalar, datatype, residence, op);
  return s.isOk() ? weftSuccess : report(comm, s);
}

weftResult_t weftRedOpDestroy(weftRedOp_t op, weftComm_t comm) {
  const char* fn = "weftRedOpDestroy";
  Status s = checkComm(comm, fn);
  if (s.isOk() && static_cast<int>(op) < weftNumOps) {
    s = WEFT_ERROR(weftInvalidArgument,
                   "rank %d: %s: op %d is a built-in op (0..%d); only ops made by weftRedOpCreatePreMulSum are "
                   "destroyed",
                   comm->rank, fn, static_cast<int>(op), weftNumOps - 1);
  }
  if (s.isOk()) s = comm->impl->destroyRedOp(op);
  return s.isOk() ? weftSuccess : report(comm, s);
}

weftResult_t weftAllReduce(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                           weftRedOp_t op, weftComm_t comm, weftStream_t stream) {
  CollCall c{weft::coll::CollKind::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0};
  return collective(comm, c, stream, "weftAllReduce");
}

weftResult_t weftAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, weftDataType_t datatype,
                           weftComm_t comm, weftStream_t stream) {
  CollCall c{weft::coll::CollKind::kAllGather, sendbuff, recvbuff, sendcount, datatype, weftSum, 0};
  return collective(comm, c, stream, "weftAllGather");
}

weftResult_t weftReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, weftDataType_t datatype,
                               weftRedOp_t op, weftComm_t comm, weftStream_t stream) {
  CollCall c{weft::coll::CollKind::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0};
  return collective(comm, c, stream, "weftReduceScatter");
}

weftResult_t weftBroadcast(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype, int root,
                           weftComm_t comm, weftStream_t stream) {
  CollCall c{weft::coll::CollKind::kBroadcast, sendbuff, recvbuff, count, datatype, weftSum, root};
  return collective(comm, c, stream, "weftBroadcast");
}

weftResult_t weftReduce(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                        weftRedOp_t op, int root, weftComm_t comm, weftStream_t stream) {
  CollCall c{weft::coll::CollKind::kReduce, sendbuff, recvbuff, count, datatype, op, root};
  return collective(comm, c, stream, "weftReduce");
}

weftResult_t weftAllToAll(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                          weftComm_t comm, weftStream_t stream) {
  CollCall c{weft::coll::CollKind::kAllToAll, sendbuff, recvbuff, count, datatype, weftSum, 0};
  return collective(comm, c, stream, "weftAllToAll");
}

static weftResult_t pointToPoint(bool send, const void* sendbuff, void* recvbuff, size_t count,
                                 weftDataType_t datatype, int peer, weftComm_t comm, weftStream_t stream,
                                 const char* fn) {
  Status s = checkComm(comm, fn);
  if (s.isOk()) s = checkStream(comm, stream, fn);
  if (s.isOk()) s = checkTypeOp(comm, datatype, nullptr, fn);
  if (s.isOk() && (peer < 0 || peer >= comm->nRanks)) {
    s = Status::error(weftInvalidArgument, "rank " + std::to_string(comm->rank) + ": " + fn + ": peer " +
                                               std::to_string(peer) + " is not a rank of this communicator (0.." +
                                               std::to_string(comm->nRanks - 1) + ")");
  }
  if (s.isOk()) s = checkCount(comm, count, weft::coll::dataTypeSize(datatype), 1, fn);
  if (s.isOk()) s = checkBuffer(comm, send ? sendbuff : recvbuff, count, send ? "sendbuff" : "recvbuff", fn);
  if (s.isOk() && stream != nullptr) {
    s = checkDeviceBuffer(comm, send ? sendbuff : recvbuff, count * weft::coll::dataTypeSize(datatype),
                          send ? "sendbuff" : "recvbuff", fn);
  }
  if (!s.isOk()) return report(comm, s);
  PendingOp op;
  op.comm = comm;
  op.isP2p = true;
  op.p2p.send = send;
  op.p2p.sendbuff = sendbuff;
  op.p2p.recvbuff = recvbuff;
  op.p2p.bytes = count * weft::coll::dataTypeSize(datatype);
  op.p2p.peer = peer;
  op.stream = stream;
  return submit(op);
}

weftResult_t weftSend(const void* sendbuff, size_t count, weftDataType_t datatype, int peer, weftComm_t comm,
                      weftStream_t stream) {
  return pointToPoint(true, sendbuff, nullptr, count, datatype, peer, comm, stream, "weftSend");
}

weftResult_t weftRecv(void* recvbuff, size_t count, weftDataType_t datatype, int peer, weftComm_t comm,
                      weftStream_t stream) {
  return pointToPoint(false, nullptr, recvbuff, count, datatype, peer, comm, stream, "weftRecv");
}

weftResult_t weftBarrier(weftComm_t comm, weftStream_t stream) {
  Status s = checkComm(comm, "weftBarrier");
  if (s.isOk()) s = checkStream(comm, stream, "weftBarrier");
  if (s.isOk() && stream != nullptr && tlsGroup.depth > 0) {
    s = Status::error(weftInvalidUsage, "rank " + std::to_string(comm->rank) +
                                            ": weftBarrier with a stream inside a group; call it outside the group");
  }
  if (!s.isOk()) return report(comm, s);
  if (stream != nullptr) {
    comm->inFlight.fetch_add(1);
    s = comm->impl->deviceBarrier(stream);
    weftResult_t result = s.isOk() ? weftSuccess : reportOpFailure(comm, s);
    comm->inFlight.fetch_sub(1);
    return result;
  }
  static const uint8_t kZero = 0;
  static thread_local uint8_t sink = 0;
  CollCall c{weft::coll::CollKind::kAllReduce, &kZero, &sink, 1, weftUint8, weftSum, 0};
  return submitCollective(comm, c);
}

weftResult_t weftGroupStart(void) {
  ++tlsGroup.depth;
  return weftSuccess;
}

weftResult_t weftGroupEnd(void) {
  if (tlsGroup.depth <= 0) {
    return report(nullptr, Status::error(weftInvalidUsage, "weftGroupEnd without a matching weftGroupStart"));
  }
  if (--tlsGroup.depth > 0) return weftSuccess;
  std::vector<PendingOp> ops;
  ops.swap(tlsGroup.ops);
  // Split by communicator, keeping call order within each.
  std::vector<weftComm*> comms;
  for (const auto& op : ops) {
    if (std::find(comms.begin(), comms.end(), op.comm) == comms.end()) comms.push_back(op.comm);
  }
  std::vector<weftResult_t> results(comms.size(), weftSuccess);
  auto runOne = [&](size_t i) {
    std::vector<PendingOp> mine;
    for (const auto& op : ops) {
      if (op.comm == comms[i]) mine.push_back(op);
    }
    comms[i]->inFlight.fetch_add(1);
    Status s = runOps(comms[i], mine.data(), mine.size());
    if (!s.isOk()) results[i] = reportOpFailure(comms[i], s);  // before inFlight drops (see submit)
    comms[i]->inFlight.fetch_sub(1);
  };
  if (comms.size() == 1) {
    runOne(0);
  } else {
    // Several communicators (e.g. from weftCommInitAll) driven by one thread: their ranks must
    // run concurrently, so each gets a thread.
    std::vector<std::thread> threads;
    for (size_t i = 0; i < comms.size(); ++i) threads.emplace_back(runOne, i);
    for (auto& t : threads) t.join();
  }
  for (weftResult_t r : results) {
    if (r != weftSuccess) return r;
  }
  return weftSuccess;
}

}  // extern "C"
