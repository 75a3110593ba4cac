// NCCL as a peer library (see peer_libs.h), for weft-perf --compare nccl. libnccl.so.2 and the
// CUDA runtime (libcudart.so*) are loaded with dlopen when the library is made, so weft-perf has
// no link dependency on either and builds where neither is installed; the few functions used
// are declared here with NCCL's and CUDA's numeric values (weft.h's types and ops share NCCL's).
//
// One GPU per rank: the ranks on a host take devices in rank order (a host with more ranks
// than GPUs skips NCCL, which refuses to share one). The caller's buffers are host memory, so
// each call copies the input to device buffers, runs the collective on a stream of its own,
// waits for it, and copies the result back: the time is what an application holding host data
// would see, copies included.
//
// Where there is no CUDA runtime, no driver, no GPU or no NCCL, every rank agrees to skip:
// make fails with "skipped: <why>" (e.g. "skipped: cudaGetDeviceCount failed: no
// CUDA-capable device is detected"), which weft-perf prints as a note, not an error.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "perf/datatypes.h"
#include "perf/peer_libs.h"

namespace weft::perf {
namespace {

// The CUDA runtime and NCCL functions weft-perf calls, with their C types reduced to what the
// ABI needs: enums are int, handles are pointers.
using CudaError = int;
using NcclResult = int;
struct NcclUniqueId {
  char internal[128];
};
constexpr int kCudaMemcpyHostToDevice = 1;
constexpr int kCudaMemcpyDeviceToHost = 2;

struct CudaApi {
  CudaError (*getDeviceCount)(int*) = nullptr;
  CudaError (*setDevice)(int) = nullptr;
  CudaError (*malloc)(void**, size_t) = nullptr;
  CudaError (*free)(void*) = nullptr;
  CudaError (*memcpy)(void*, const void*, size_t, int) = nullptr;
  CudaError (*streamCreate)(void**) = nullptr;
  CudaError (*streamDestroy)(void*) = nullptr;
  CudaError (*streamSynchronize)(void*) = nullptr;
  const char* (*getErrorString)(CudaError) = nullptr;
  CudaError (*runtimeGetVersion)(int*) = nullptr;
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

// Loads the CUDA runtime and NCCL and counts the GPUs; "" when all is there, else why not.
std::string loadLibraries(CudaApi* cuda, NcclApi* nccl, int* devices) {
  static const char* const kCudart[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                                        nullptr};
  std::string why;
  void* rt = openFirst(kCudart, &why);  // kept loaded for the life of the process
  if (!rt) return "cannot load the CUDA runtime (libcudart.so*): " + why;
  std::string missing;
  bind(rt, "cudaGetDeviceCount", &cuda->getDeviceCount, &missing);
  bind(rt, "cudaSetDevice", &cuda->setDevice, &missing);
  bind(rt, "cudaMalloc", &cuda->malloc, &missing);
  bind(rt, "cudaFree", &cuda->free, &missing);
  bind(rt, "cudaMemcpy", &cuda->memcpy, &missing);
  bind(rt, "cudaStreamCreate", &cuda->streamCreate, &missing);
  bind(rt, "cudaStreamDestroy", &cuda->streamDestroy, &missing);
  bind(rt, "cudaStreamSynchronize", &cuda->streamSynchronize, &missing);
  bind(rt, "cudaGetErrorString", &cuda->getErrorString, &missing);
  bind(rt, "cudaRuntimeGetVersion", &cuda->runtimeGetVersion, &missing);
  if (!missing.empty()) return "the CUDA runtime lacks " + missing;

  const CudaError e = cuda->getDeviceCount(devices);
  if (e != 0) return std::string("cudaGetDeviceCount failed: ") + cuda->getErrorString(e);
  if (*devices <= 0) return "cudaGetDeviceCount found no GPU";

  static const char* const kNccl[] = {"libnccl.so.2", "libnccl.so", nullptr};
  why.clear();
  void* lib = openFirst(kNccl, &why);
  if (!lib) return "cannot load NCCL (libnccl.so.2): " + why;
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
  if (!missing.empty()) return "NCCL lacks " + missing;
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
  NcclPeer(const CudaApi& cuda, const NcclApi& nccl, void* comm, void* stream, int rank, int nranks, int device)
      : cuda_(cuda), nccl_(nccl), comm_(comm), stream_(stream), rank_(rank), nranks_(nranks), device_(device) {}
  ~NcclPeer() override {
    if (failed_)
      nccl_.commAbort(comm_);
    else
      nccl_.commDestroy(comm_);
    if (buffer_) cuda_.free(buffer_);
    cuda_.streamDestroy(stream_);
  }

  const char* name() const override { return "nccl"; }

  std::string description() const override {
    int v = 0, rt = 0;
    nccl_.getVersion(&v);
    cuda_.runtimeGetVersion(&rt);
    return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) +
           ", CUDA runtime " + std::to_string(rt / 1000) + "." + std::to_string(rt % 1000 / 10) +
           ", one GPU per rank (this one: " + std::to_string(device_) +
           "); host buffers are copied to and from the GPU in every call, timed";
  }

  std::string unsupported(Collective, weftDataType_t type, weftRedOp_t) const override {
    int v = 0;
    nccl_.getVersion(&v);
    if ((type == weftFloat8e4m3 || type == weftFloat8e5m2) && v < 22400)
      return "NCCL before 2.24 has no " + std::string(typeName(type)) + " type";
    return "";
  }

  PeerStatus run(const PeerCall& c) override {
    const size_t ts = typeSize(c.type), n = static_cast<size_t>(nranks_);
    size_t sendElems = c.count, recvElems = c.count;
    if (c.coll == Collective::kAllGather) recvElems *= n;
    if (c.coll == Collective::kReduceScatter) sendElems *= n;
    if (c.coll == Collective::kAllToAll) sendElems = recvElems = c.count * n;
    const char* send = static_cast<const char*>(c.send);
    char* recv = static_cast<char*>(c.recv);
    const size_t sendBytes = sendElems * ts, recvBytes = recvElems * ts;
    // In place (the nccl-tests layouts overlap the two ranges): one device range mirrors the
    // host one, so the offsets between send and recv stay as the caller made them. All-to-all
    // and sendrecv are built from sends and receives that must not share memory: they stay out
    // of place on the device, which the copies make in place on the host.
    const char* lo = send < recv ? send : recv;
    const char* hi = send + sendBytes > recv + recvBytes ? send + sendBytes : recv + recvBytes;
    const bool pointToPoint = c.coll == Collective::kAllToAll || c.coll == Collective::kSendRecv;
    const bool overlap = !pointToPoint && send < recv + recvBytes && recv < send + sendBytes;
    const size_t need = overlap ? static_cast<size_t>(hi - lo) : sendBytes + recvBytes;
    if (need > capacity_) {
      if (buffer_) cuda_.free(buffer_);
      buffer_ = nullptr;
      capacity_ = 0;
      if (PeerStatus s = cudaOk(cuda_.malloc(&buffer_, need), "cudaMalloc"); !s.ok) return s;
      capacity_ = need;
    }
    char* base = static_cast<char*>(buffer_);
    char* dSend = overlap ? base + (send - lo) : base;
    char* dRecv = overlap ? base + (recv - lo) : base + sendBytes;
    if (sendBytes) {
      if (PeerStatus s = cudaOk(cuda_.memcpy(dSend, send, sendBytes, kCudaMemcpyHostToDevice), "cudaMemcpy"); !s.ok)
        return s;
    }
    if (PeerStatus s = call(c, dSend, dRecv); !s.ok) return s;
    if (PeerStatus s = cudaOk(cuda_.streamSynchronize(stream_), "cudaStreamSynchronize"); !s.ok) return s;
    const bool hasResult = c.coll != Collective::kReduce || rank_ == c.root;
    if (hasResult && recvBytes) {
      if (PeerStatus s = cudaOk(cuda_.memcpy(recv, dRecv, recvBytes, kCudaMemcpyDeviceToHost), "cudaMemcpy"); !s.ok)
        return s;
    }
    return PeerStatus::success();
  }

 private:
  PeerStatus cudaOk(CudaError e, const char* what) {
    if (e == 0) return PeerStatus::success();
    failed_ = true;
    return PeerStatus::failure(std::string(what) + " failed on GPU " + std::to_string(device_) + ": " +
                               cuda_.getErrorString(e));
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

  CudaApi cuda_;
  NcclApi nccl_;
  void* comm_;
  void* stream_;
  int rank_;
  int nranks_;
  int device_;
  void* buffer_ = nullptr;  // device memory mirroring the caller's send and receive ranges
  size_t capacity_ = 0;
  bool failed_ = false;
};

// This rank's index among the ranks on its host, from every rank's host name.
PeerStatus localRank(PeerBootstrap& boot, int* local) {
  char self[256] = {0};
  if (gethostname(self, sizeof self - 1) != 0) std::strcpy(self, "unknown");
  *local = 0;
  for (int r = 0; r < boot.size(); ++r) {
    char other[256] = {0};
    if (r == boot.rank()) std::memcpy(other, self, sizeof other);
    if (PeerStatus s = boot.broadcast(other, sizeof other, r); !s.ok) return s;
    if (r < boot.rank() && std::strcmp(other, self) == 0) ++*local;
  }
  return PeerStatus::success();
}

PeerStatus makeNccl(const PeerSettings&, PeerBootstrap& boot, std::unique_ptr<PeerLib>* out) {
  CudaApi cuda;
  NcclApi nccl;
  int devices = 0;
  std::string why = loadLibraries(&cuda, &nccl, &devices), first;
  if (PeerStatus s = agree(boot, why, &first); !s.ok) return s;
  if (!first.empty()) return PeerStatus::failure("skipped: " + first);

  int local = 0;
  if (PeerStatus s = localRank(boot, &local); !s.ok) return s;
  // NCCL refuses two ranks on one GPU.
  why = local < devices
            ? ""
            : "more ranks on this host than its " + std::to_string(devices) + " GPU(s); NCCL needs a GPU per rank";
  if (PeerStatus s = agree(boot, why, &first); !s.ok) return s;
  if (!first.empty()) return PeerStatus::failure("skipped: " + first);
  const int device = local;
  void* stream = nullptr;
  CudaError e = cuda.setDevice(device);
  if (e == 0) e = cuda.streamCreate(&stream);
  if (e != 0) why = "GPU " + std::to_string(device) + ": " + cuda.getErrorString(e);

  NcclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (boot.rank() == 0 && why.empty()) {
    const NcclResult r = nccl.getUniqueId(&id);
    if (r != 0) why = std::string("ncclGetUniqueId: ") + nccl.getErrorString(r);
  }
  if (PeerStatus s = agree(boot, why, &first); !s.ok) return s;
  if (!first.empty()) {
    if (stream) cuda.streamDestroy(stream);
    return PeerStatus::failure(first);
  }
  if (PeerStatus s = boot.broadcast(&id, sizeof id, 0); !s.ok) return s;

  void* comm = nullptr;
  const NcclResult r = nccl.commInitRank(&comm, boot.size(), id, boot.rank());
  if (r != 0) {
    cuda.streamDestroy(stream);
    return PeerStatus::failure(std::string("ncclCommInitRank: ") + nccl.getErrorString(r));
  }
  *out = std::make_unique<NcclPeer>(cuda, nccl, comm, stream, boot.rank(), boot.size(), device);
  return PeerStatus::success();
}

}  // namespace

WEFT_PERF_REGISTER_PEER(nccl, "nccl", makeNccl);

}  // namespace weft::perf
