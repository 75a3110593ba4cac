// NCCL as a peer library (see peer_libs.h), for weft-perf --compare nccl. NCCL (libnccl.so.2,
// or RCCL's librccl.so on an AMD GPU) is loaded with dlopen when the library is made, and the
// GPU runtime comes from gpu_api.h, so weft-perf has no link dependency on either and builds
// where neither is installed; the few NCCL functions used are declared here with NCCL's
// numeric values (weft.h's types and ops share NCCL's).
//
// Ranks and GPUs: with host buffers (--mem host) the ranks on a host take GPU (local rank %
// GPUs), and each call copies the input to device buffers, runs the collective on a stream of its
// own, waits for it, and copies the result back: the time is what an application holding host
// data would see, copies included. With device buffers (--mem device) NCCL gets weft-perf's own
// buffers, GPU and stream for the rank, exactly as Weft does, and finish() waits for the stream.
// NCCL refuses two ranks on one GPU; when ranks share one, path_env.h decides what to set before
// NCCL's first init (NCCL_MULTI_RANK_GPU_ENABLE, or a NCCL_HOSTID per process and its socket
// transport) or, for ranks that are threads, to skip.
//
// Where there is no GPU runtime, no driver, no GPU or no NCCL, every rank agrees to skip: make
// fails with "skipped: <why>" (e.g. "skipped: no GPU (libcudart.so: cudaGetDeviceCount: ...)"),
// which weft-perf prints as a note, not an error.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "perf/datatypes.h"
#include "perf/gpu_api.h"
#include "perf/path_env.h"
#include "perf/peer_libs.h"

namespace weft::perf {
namespace {

// The NCCL functions weft-perf calls, with their C types reduced to what the ABI needs: enums
// are int, handles are pointers.
using NcclResult = int;
struct NcclUniqueId {
  char internal[128];
};

struct NcclApi {
  NcclResult (*getVersion)(int*) = nullptr;
  NcclResult (*getUniqueId)(NcclUniqueId*) = nullptr;
  NcclResult (*commInitRank)(void**, int, NcclUniqueId, int) = nullptr;
  NcclResult (*commDestroy)(void*) = nullptr;
  NcclResult (*commAbort)(void*) = nullptr;
  const char* (*getErrorString)(NcclResult) = nullptr;
  const char* (*getLastError)(void*) = nullptr;
  NcclResult (*allReduce)(const void*, void*, size_t, int, int, void*, void*) = nullptr;
  NcclResult (*allGather)(const void*, void*, size_t, int, void*, void*) = nullptr;
  NcclResult (*reduceScatter)(const void*, void*, size_t, int, int, void*, void*) = nullptr;
  NcclResult (*broadcast)(const void*, void*, size_t, int, int, void*, void*) = nullptr;
  NcclResult (*reduce)(const void*, void*, size_t, int, int, int, void*, void*) = nullptr;
  NcclResult (*allToAll)(const void*, void*, size_t, int, void*, void*) = nullptr;  // NCCL 2.28+; else send/recv
  NcclResult (*send)(const void*, size_t, int, int, void*, void*) = nullptr;
  NcclResult (*recv)(void*, size_t, int, int, void*, void*) = nullptr;
  NcclResult (*groupStart)() = nullptr;
  NcclResult (*groupEnd)() = nullptr;
};

// dlopen's first success among names, or nullptr with every name's dlerror in *why.
void* openFirst(const char* const* names, std::string* why) {
  for (const char* const* n = names; *n; ++n) {
    if (void* h = dlopen(*n, RTLD_NOW | RTLD_LOCAL)) return h;
    const char* e = dlerror();
    *why += std::string(why->empty() ? "" : "; ") + (e ? e : *n);
  }
  return nullptr;
}

// Resolves symbol `name` into *fn; false (with the name appended to *missing) when absent.
template <typename Fn>
bool bind(void* lib, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (*fn) return true;
  *missing += std::string(missing->empty() ? "" : ", ") + name;
  return false;
}

// Finds the GPU and loads NCCL (RCCL on HIP); "" when all is there, else why not.
std::string loadLibraries(GpuApi** gpu, NcclApi* nccl) {
  std::string why;
  *gpu = gpuApi(&why);
  if (*gpu == nullptr) return why;

  static const char* const kNccl[] = {"libnccl.so.2", "libnccl.so", nullptr};
  static const char* const kRccl[] = {"librccl.so.1", "librccl.so", nullptr};
  const bool hip = (*gpu)->prefix() == "hip";
  why.clear();
  void* lib = openFirst(hip ? kRccl : kNccl, &why);  // kept loaded for the life of the process
  if (!lib) return std::string(hip ? "cannot load RCCL (librccl.so.1): " : "cannot load NCCL (libnccl.so.2): ") + why;
  std::string missing;
  bind(lib, "ncclGetVersion", &nccl->getVersion, &missing);
  bind(lib, "ncclGetUniqueId", &nccl->getUniqueId, &missing);
  bind(lib, "ncclCommInitRank", &nccl->commInitRank, &missing);
  bind(lib, "ncclCommDestroy", &nccl->commDestroy, &missing);
  bind(lib, "ncclCommAbort", &nccl->commAbort, &missing);
  bind(lib, "ncclGetErrorString", &nccl->getErrorString, &missing);
  bind(lib, "ncclGetLastError", &nccl->getLastError, &missing);
  bind(lib, "ncclAllReduce", &nccl->allReduce, &missing);
  bind(lib, "ncclAllGather", &nccl->allGather, &missing);
  bind(lib, "ncclReduceScatter", &nccl->reduceScatter, &missing);
  bind(lib, "ncclBroadcast", &nccl->broadcast, &missing);
  bind(lib, "ncclReduce", &nccl->reduce, &missing);
  bind(lib, "ncclSend", &nccl->send, &missing);
  bind(lib, "ncclRecv", &nccl->recv, &missing);
  bind(lib, "ncclGroupStart", &nccl->groupStart, &missing);
  bind(lib, "ncclGroupEnd", &nccl->groupEnd, &missing);
  if (!missing.empty()) return std::string(hip ? "RCCL" : "NCCL") + " lacks " + missing;
  std::string optional;
  bind(lib, "ncclAlltoAll", &nccl->allToAll, &optional);  // absent before NCCL 2.28: send/recv pairs instead
  return "";
}

// Whether every rank's `why` is empty; if not, *first gets the lowest failing rank's reason
// ("rank R: " in front unless every rank gave the same one). One broadcast per rank, so that
// every rank leaves with the same answer (a rank that went on to ncclCommInitRank alone would
// wait there for ever).
PeerStatus agree(PeerBootstrap& boot, const std::string& why, std::string* first) {
  first->clear();
  int firstRank = -1;
  bool allSame = true;
  for (int r = 0; r < boot.size(); ++r) {
    char text[512] = {0};
    if (r == boot.rank()) std::snprintf(text, sizeof text, "%s", why.c_str());
    if (PeerStatus s = boot.broadcast(text, sizeof text, r); !s.ok) return s;
    if (firstRank < 0 && text[0]) {
      firstRank = r;
      *first = text;
    }
    allSame = allSame && text[0] && *first == text;
  }
  if (firstRank >= 0 && !allSame) *first = "rank " + std::to_string(firstRank) + ": " + *first;
  return PeerStatus::success();
}

class NcclPeer : public PeerLib {
 public:
  // stream: the peer's own (host buffers; destroyed with it) or weft-perf's (device buffers).
  // plan: how NCCL was set up for ranks that share a GPU (empty when none do).
  NcclPeer(GpuApi& gpu, const NcclApi& nccl, void* comm, GpuStream stream, bool deviceBuffers, int rank, int nranks,
           int device, bool gpuShared, EnvPlan plan)
      : gpu_(gpu),
        nccl_(nccl),
        comm_(comm),
        stream_(stream),
        deviceBuffers_(deviceBuffers),
        rank_(rank),
        nranks_(nranks),
        device_(device),
        gpuShared_(gpuShared),
        plan_(std::move(plan)) {}
  ~NcclPeer() override {
    if (failed_)
      nccl_.commAbort(comm_);
    else
      nccl_.commDestroy(comm_);
    (void)gpu_.free(buffer_);
    if (!deviceBuffers_) (void)gpu_.streamDestroy(stream_);
  }

  const char* name() const override { return "nccl"; }

  std::string description() const override {
    int v = 0;
    nccl_.getVersion(&v);
    const bool hip = gpu_.prefix() == "hip";
    return std::string(hip ? "RCCL " : "NCCL ") + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) +
           "." + std::to_string(v % 100) + ", " + gpu_.version() +
           (gpuShared_ ? ", ranks share GPUs (this one: " : ", one GPU per rank (this one: ") +
           std::to_string(device_) + ")" + (plan_.path.empty() ? "" : ", " + plan_.path) + "; " +
           (deviceBuffers_ ? "the rank's device buffers and stream, as Weft's"
                           : "host buffers are copied to and from the GPU in every call, timed");
  }

  std::string path() const override { return plan_.path; }
  std::vector<std::string> notes() const override { return plan_.notes; }

  std::string unsupported(Collective, weftDataType_t type, weftRedOp_t) const override {
    int v = 0;
    nccl_.getVersion(&v);
    if ((type == weftFloat8e4m3 || type == weftFloat8e5m2) && v < 22400)
      return "NCCL before 2.24 has no " + std::string(typeName(type)) + " type";
    return "";
  }

  PeerStatus run(const PeerCall& c) override { return deviceBuffers_ ? runOnDevice(c) : runStaged(c); }

  PeerStatus finish() override { return gpuOk(gpu_.streamSynchronize(stream_)); }

 private:
  // Host buffers: copied in, run, waited for, copied out.
  PeerStatus runStaged(const PeerCall& c) {
    size_t sendBytes = 0, recvBytes = 0;
    byteCounts(c, &sendBytes, &recvBytes);
    const char* send = static_cast<const char*>(c.send);
    char* recv = static_cast<char*>(c.recv);
    // In place (the nccl-tests layouts overlap the two ranges): one device range mirrors the
    // host one, so the offsets between send and recv stay as the caller made them. All-to-all
    // and sendrecv are built from sends and receives that must not share memory: they stay out
    // of place on the device, which the copies make in place on the host.
    const char* lo = send < recv ? send : recv;
    const char* hi = send + sendBytes > recv + recvBytes ? send + sendBytes : recv + recvBytes;
    const bool overlap = !pointToPoint(c) && send < recv + recvBytes && recv < send + sendBytes;
    const size_t need = overlap ? static_cast<size_t>(hi - lo) : sendBytes + recvBytes;
    if (PeerStatus s = reserve(need); !s.ok) return s;
    char* base = static_cast<char*>(buffer_);
    char* dSend = overlap ? base + (send - lo) : base;
    char* dRecv = overlap ? base + (recv - lo) : base + sendBytes;
    if (PeerStatus s = gpuOk(gpu_.memcpy(dSend, send, sendBytes, GpuCopy::kHostToDevice)); !s.ok) return s;
    if (PeerStatus s = call(c, dSend, dRecv); !s.ok) return s;
    if (PeerStatus s = finish(); !s.ok) return s;
    const bool hasResult = c.coll != Collective::kReduce || rank_ == c.root;
    if (hasResult) {
      if (PeerStatus s = gpuOk(gpu_.memcpy(recv, dRecv, recvBytes, GpuCopy::kDeviceToHost)); !s.ok) return s;
    }
    return PeerStatus::success();
  }

  // Device buffers: queued on the stream. In place, all-to-all and sendrecv send from a copy
  // (their sends and receives must not share memory), made on the stream first.
  PeerStatus runOnDevice(const PeerCall& c) {
    size_t sendBytes = 0, recvBytes = 0;
    byteCounts(c, &sendBytes, &recvBytes);
    const char* send = static_cast<const char*>(c.send);
    char* recv = static_cast<char*>(c.recv);
    if (pointToPoint(c) && send < recv + recvBytes && recv < send + sendBytes) {
      if (PeerStatus s = reserve(sendBytes); !s.ok) return s;
      if (PeerStatus s = gpuOk(gpu_.memcpyAsync(buffer_, send, sendBytes, GpuCopy::kDeviceToDevice, stream_)); !s.ok)
        return s;
      send = static_cast<const char*>(buffer_);
    }
    return call(c, send, recv);
  }

  void byteCounts(const PeerCall& c, size_t* sendBytes, size_t* recvBytes) const {
    const size_t ts = typeSize(c.type), n = static_cast<size_t>(nranks_);
    size_t sendElems = c.count, recvElems = c.count;
    if (c.coll == Collective::kAllGather) recvElems *= n;
    if (c.coll == Collective::kReduceScatter) sendElems *= n;
    if (c.coll == Collective::kAllToAll) sendElems = recvElems = c.count * n;
    *sendBytes = sendElems * ts;
    *recvBytes = recvElems * ts;
  }

  static bool pointToPoint(const PeerCall& c) {
    return c.coll == Collective::kAllToAll || c.coll == Collective::kSendRecv;
  }

  // At least `bytes` of device memory in buffer_.
  PeerStatus reserve(size_t bytes) {
    if (bytes <= capacity_) return PeerStatus::success();
    (void)gpu_.free(buffer_);
    buffer_ = nullptr;
    capacity_ = 0;
    if (PeerStatus s = gpuOk(gpu_.malloc(&buffer_, bytes)); !s.ok) return s;
    capacity_ = bytes;
    return PeerStatus::success();
  }

  PeerStatus gpuOk(const GpuStatus& s) {
    if (s.ok()) return PeerStatus::success();
    failed_ = true;
    return PeerStatus::failure(s.error);
  }

  PeerStatus ncclOk(NcclResult r, Collective coll) {
    if (r == 0) return PeerStatus::success();
    failed_ = true;
    const char* last = nccl_.getLastError(comm_);
    return PeerStatus::failure(std::string(collectiveName(coll)) + ": " + nccl_.getErrorString(r) +
                               (last && *last ? std::string(": ") + last : std::string()));
  }

  PeerStatus call(const PeerCall& c, const char* send, char* recv) {
    const int t = static_cast<int>(c.type), op = static_cast<int>(c.op);  // NCCL's numbering
    const size_t n = c.count;
    switch (c.coll) {
      case Collective::kAllReduce:
        return ncclOk(nccl_.allReduce(send, recv, n, t, op, comm_, stream_), c.coll);
      case Collective::kAllGather:
        return ncclOk(nccl_.allGather(send, recv, n, t, comm_, stream_), c.coll);
      case Collective::kReduceScatter:
        return ncclOk(nccl_.reduceScatter(send, recv, n, t, op, comm_, stream_), c.coll);
      case Collective::kBroadcast:
        return ncclOk(nccl_.broadcast(send, recv, n, t, c.root, comm_, stream_), c.coll);
      case Collective::kReduce:
        return ncclOk(nccl_.reduce(send, recv, n, t, op, c.root, comm_, stream_), c.coll);
      case Collective::kAllToAll:
        if (nccl_.allToAll) return ncclOk(nccl_.allToAll(send, recv, n, t, comm_, stream_), c.coll);
        return pairs(c, send, recv, true);
      case Collective::kSendRecv:
        return pairs(c, send, recv, false);
    }
    return PeerStatus::failure("unknown collective");
  }

  // Grouped sends and receives: to every rank (all-to-all, as nccl-tests does it), or to the
  // next rank and from the previous one (sendrecv).
  PeerStatus pairs(const PeerCall& c, const char* send, char* recv, bool allToAll) {
    const int t = static_cast<int>(c.type);
    const size_t block = c.count * typeSize(c.type);
    if (PeerStatus s = ncclOk(nccl_.groupStart(), c.coll); !s.ok) return s;
    NcclResult r = 0;
    if (allToAll) {
      for (int p = 0; p < nranks_ && r == 0; ++p) {
        r = nccl_.send(send + static_cast<size_t>(p) * block, c.count, t, p, comm_, stream_);
        if (r == 0) r = nccl_.recv(recv + static_cast<size_t>(p) * block, c.count, t, p, comm_, stream_);
      }
    } else {
      r = nccl_.send(send, c.count, t, (rank_ + 1) % nranks_, comm_, stream_);
      if (r == 0) r = nccl_.recv(recv, c.count, t, (rank_ - 1 + nranks_) % nranks_, comm_, stream_);
    }
    const NcclResult end = nccl_.groupEnd();
    return ncclOk(r != 0 ? r : end, c.coll);
  }

  GpuApi& gpu_;
  NcclApi nccl_;
  void* comm_;
  GpuStream stream_;
  bool deviceBuffers_;
  int rank_;
  int nranks_;
  int device_;
  bool gpuShared_;
  EnvPlan plan_;
  // Host buffers: device memory mirroring the caller's send and receive ranges. Device
  // buffers: the copy an in-place all-to-all or sendrecv sends from.
  void* buffer_ = nullptr;
  size_t capacity_ = 0;
  bool failed_ = false;
};

// Where every rank runs: its host name and the GPU it uses there.
struct RankPlace {
  char host[256];
  char gpu[64];  // PCI bus id (CUDA_VISIBLE_DEVICES may number one GPU differently per process)
};

// Every rank's place, one broadcast per rank.
PeerStatus gatherPlaces(PeerBootstrap& boot, const RankPlace& self, std::vector<RankPlace>* all) {
  all->assign(static_cast<size_t>(boot.size()), RankPlace{});
  for (int r = 0; r < boot.size(); ++r) {
    RankPlace& p = (*all)[static_cast<size_t>(r)];
    if (r == boot.rank()) p = self;
    if (PeerStatus s = boot.broadcast(&p, sizeof p, r); !s.ok) return s;
  }
  return PeerStatus::success();
}

// Where this rank runs: the GPU it uses (*device) and, from every rank's place, how many hosts
// there are and whether ranks share a GPU (q->nHosts, q->gpuShared).
PeerStatus placeRank(const PeerSettings& settings, PeerBootstrap& boot, GpuApi* gpu, int* device, NcclShareQuery* q) {
  // This rank's index among the ranks on its host, from every rank's host name.
  RankPlace self{};
  if (gethostname(self.host, sizeof self.host - 1) != 0) std::strcpy(self.host, "unknown");
  std::vector<RankPlace> places;
  if (PeerStatus s = gatherPlaces(boot, self, &places); !s.ok) return s;
  int local = 0;
  for (int r = 0; r < boot.rank(); ++r) local += std::strcmp(places[static_cast<size_t>(r)].host, self.host) == 0;
  // Device buffers live on the GPU weft-perf chose for the rank (current on this thread); host
  // buffers take GPUs in rank order, as weft-perf does.
  *device = settings.device >= 0 ? settings.device : local % gpu->deviceCount();
  std::string busId = gpu->pciBusId(*device);
  if (busId.empty()) busId = "device " + std::to_string(*device);
  std::snprintf(self.gpu, sizeof self.gpu, "%s", busId.c_str());
  if (PeerStatus s = gatherPlaces(boot, self, &places); !s.ok) return s;
  std::set<std::string> hosts;
  std::set<std::pair<std::string, std::string>> gpus;
  for (const RankPlace& p : places) {
    hosts.insert(p.host);
    gpus.emplace(p.host, p.gpu);
  }
  q->nHosts = static_cast<int>(hosts.size());
  q->gpuShared = gpus.size() < places.size();
  return PeerStatus::success();
}

// The rank's stream (its own, on the rank's GPU, for host buffers) and rank 0's unique id,
// broadcast once every rank got this far; a failure anywhere fails every rank.
PeerStatus streamAndId(const PeerSettings& settings, PeerBootstrap& boot, GpuApi* gpu, NcclApi& nccl, int device,
                       GpuStream* stream, NcclUniqueId* id) {
  const bool deviceBuffers = settings.device >= 0;
  *stream = deviceBuffers ? settings.stream : nullptr;
  GpuStatus g;
  if (!deviceBuffers) {
    g = gpu->setDevice(device);
    if (g.ok()) g = gpu->streamCreate(stream);
  }
  std::string why = g.error, first;
  std::memset(id, 0, sizeof *id);
  if (boot.rank() == 0 && why.empty()) {
    const NcclResult r = nccl.getUniqueId(id);
    if (r != 0) why = std::string("ncclGetUniqueId: ") + nccl.getErrorString(r);
  }
  if (PeerStatus s = agree(boot, why, &first); !s.ok) return s;
  if (!first.empty()) {
    if (*stream && !deviceBuffers) (void)gpu->streamDestroy(*stream);
    return PeerStatus::failure(first);
  }
  return boot.broadcast(id, sizeof *id, 0);
}

// ncclCommInitRank's failure: NCCL's words, its last error and what weft-perf set in the environment.
std::string initFailure(NcclApi& nccl, NcclResult r, const EnvPlan& plan) {
  const char* last = nccl.getLastError(nullptr);  // "Duplicate GPU detected ..." and the like
  std::string set;
  for (const auto& [name, value] : plan.set) set += (set.empty() ? " (weft-perf set " : " ") + name + "=" + value;
  return std::string("ncclCommInitRank: ") + nccl.getErrorString(r) +
         (last && *last ? std::string(": ") + last : std::string()) + (set.empty() ? "" : set + ")");
}

PeerStatus makeNccl(const PeerSettings& settings, PeerBootstrap& boot, std::unique_ptr<PeerLib>* out) {
  GpuApi* gpu = nullptr;
  NcclApi nccl;
  std::string why = loadLibraries(&gpu, &nccl), first;
  if (PeerStatus s = agree(boot, why, &first); !s.ok) return s;
  if (!first.empty()) return PeerStatus::failure("skipped: " + first);

  const bool deviceBuffers = settings.device >= 0;
  int device = -1;
  NcclShareQuery q;
  if (PeerStatus s = placeRank(settings, boot, gpu, &device, &q); !s.ok) return s;

  // Ranks that share a GPU: NCCL's environment is set here, before its first init.
  int version = 0;
  nccl.getVersion(&version);
  q.ranksAreThreads = settings.ranksAreThreads;
  q.ncclVersion = version;
  q.rank = boot.rank();
  q.weftNet = settings.weftNet;
  q.user = currentEnv(ncclShareVariables());
  EnvPlan plan = planNcclSharing(q);
  if (PeerStatus s = agree(boot, plan.skip, &first); !s.ok) return s;
  if (!first.empty()) return PeerStatus::failure("skipped: " + first);
  applyEnv(plan);

  GpuStream stream = nullptr;
  NcclUniqueId id;
  if (PeerStatus s = streamAndId(settings, boot, gpu, nccl, device, &stream, &id); !s.ok) return s;

  void* comm = nullptr;
  const NcclResult r = nccl.commInitRank(&comm, boot.size(), id, boot.rank());
  if (r != 0) {
    if (!deviceBuffers) (void)gpu->streamDestroy(stream);
    return PeerStatus::failure(initFailure(nccl, r, plan));
  }
  *out = std::make_unique<NcclPeer>(*gpu, nccl, comm, stream, deviceBuffers, boot.rank(), boot.size(), device,
                                    q.gpuShared, std::move(plan));
  return PeerStatus::success();
}

}  // namespace

WEFT_PERF_REGISTER_DEVICE_PEER(nccl, "nccl", makeNccl);

}  // namespace weft::perf
