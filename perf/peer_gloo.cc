// Gloo as a peer library (see peer_libs.h), over its TCP transport, as PyTorch's CPU process
// group drives it: the "new style" calls (gloo::allreduce, allgather, broadcast, reduce,
// alltoall) with options objects and unbound buffers made per call. All-reduce is chosen by
// PeerSettings::glooAllreduce:
//   ring                 gloo::allreduce, RING: reduce-scatter then all-gather, segments <= 1 MiB
//   bcube                gloo::allreduce, BCUBE
//   legacy-ring          the old class AllreduceRing (whole buffer around the ring, n-1 steps)
//   legacy-ring-chunked  the old class AllreduceRingChunked (reduce-scatter + all-gather in chunks)
// The old classes bind their buffers once (built per buffer and size here, and reused) and
// reduce in place, so out of place they first copy the input to the output, as a caller would.
// Gloo of this vintage (Debian's 0.5.0, git 2022-05-18) has no new-style reduce-scatter; the
// old class ReduceScatterHalvingDoubling stands in, on a copy of the input because it works in
// place on the whole buffer.
//
// Rendezvous: Gloo's MPI context is not compiled into Debian's package (GLOO_USE_MPI 0), so
// the ranks meet through Gloo's FileStore in a directory rank 0 makes and the bootstrap
// announces; it is removed once every rank is connected. Under mpirun on one host /tmp does;
// across hosts PeerSettings::storeDir must name a directory every host sees.
//
// Unsupported (reported, not emulated): bfloat16 and fp8 (Gloo has no such types), avg.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/alltoall.h>
#include <gloo/broadcast.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>
#include <stdlib.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "perf/datatypes.h"
#include "perf/peer_libs.h"

namespace weft::perf {
namespace {

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

// Calls fn(T{}) with the C++ type Gloo reduces for t; false when Gloo has none.
template <typename Fn>
bool visitGlooType(weftDataType_t t, Fn&& fn) {
  switch (t) {
    case weftInt8:
      fn(int8_t{});
      return true;
    case weftUint8:
      fn(uint8_t{});
      return true;
    case weftInt32:
      fn(int32_t{});
      return true;
    case weftUint32:
      fn(uint32_t{});
      return true;
    case weftInt64:
      fn(int64_t{});
      return true;
    case weftUint64:
      fn(uint64_t{});
      return true;
    case weftFloat16:
      fn(gloo::float16{});
      return true;
    case weftFloat32:
      fn(float{});
      return true;
    case weftFloat64:
      fn(double{});
      return true;
    default:
      return false;
  }
}

template <typename T>
ReduceFn reduceFn(weftRedOp_t op) {
  switch (op) {
    case weftSum:
      return &gloo::sum<T>;
    case weftProd:
      return &gloo::product<T>;
    case weftMax:
      return &gloo::max<T>;
    case weftMin:
      return &gloo::min<T>;
    default:
      return nullptr;
  }
}

template <typename T>
const gloo::ReductionFunction<T>* legacyFn(weftRedOp_t op) {
  switch (op) {
    case weftSum:
      return gloo::ReductionFunction<T>::sum;
    case weftProd:
      return gloo::ReductionFunction<T>::product;
    case weftMax:
      return gloo::ReductionFunction<T>::max;
    case weftMin:
      return gloo::ReductionFunction<T>::min;
    default:
      return nullptr;
  }
}

// Slots for sendrecv's unbound buffers: a prefix none of Gloo's collectives uses.
constexpr uint8_t kSendRecvSlotPrefix = 0x40;

const char* const kAllreduceAlgos[] = {"ring", "bcube", "legacy-ring", "legacy-ring-chunked"};

class GlooPeer : public PeerLib {
 public:
  GlooPeer(std::shared_ptr<gloo::Context> ctx, std::shared_ptr<gloo::transport::Device> dev, std::string allreduce,
           int timeoutS)
      : ctx_(std::move(ctx)),
        dev_(std::move(dev)),
        allreduce_(std::move(allreduce)),
        timeout_(std::chrono::seconds(timeoutS)) {}

  const char* name() const override { return "gloo"; }

  std::string description() const override {
    return "Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) + "." +
           std::to_string(GLOO_VERSION_PATCH) + ", allreduce " + allreduce_ + ", " + dev_->str();
  }

  std::string unsupported(Collective coll, weftDataType_t type, weftRedOp_t op) const override {
    if (!visitGlooType(type, [](auto) {})) return std::string("Gloo has no ") + typeName(type) + " type";
    if (collectiveReduces(coll) && op == weftAvg) return "Gloo has no avg operation";
    return "";
  }

  PeerStatus run(const PeerCall& c) override {
    const std::string why = unsupported(c.coll, c.type, c.op);
    if (!why.empty()) return PeerStatus::failure(why);
    if (c.count == 0) return PeerStatus::success();
    try {
      visitGlooType(c.type, [&](auto e) { call<decltype(e)>(c); });
    } catch (const std::exception& e) {
      return PeerStatus::failure(std::string(collectiveName(c.coll)) + ": " + e.what());
    }
    return PeerStatus::success();
  }

 private:
  template <typename Opts>
  void limitTime(Opts& opts) {
    if (timeout_.count() > 0) opts.setTimeout(timeout_);
  }

  // One call of c.coll in element type T, through the collective's own function below.
  template <typename T>
  void call(const PeerCall& c) {
    T* send = const_cast<T*>(static_cast<const T*>(c.send));  // Gloo only reads inputs, but takes void*
    T* recv = static_cast<T*>(c.recv);
    switch (c.coll) {
      case Collective::kAllReduce:
        allreduce<T>(c, send, recv);
        return;
      case Collective::kAllGather:
        allgather<T>(c, send, recv);
        return;
      case Collective::kReduceScatter:
        reduceScatter<T>(c, send, recv);
        return;
      case Collective::kBroadcast:
        broadcast<T>(c, send, recv);
        return;
      case Collective::kReduce:
        reduce<T>(c, send, recv);
        return;
      case Collective::kAllToAll:
        alltoall<T>(c, send, recv);
        return;
      case Collective::kSendRecv:
        sendRecv<T>(c, send, recv);
        return;
    }
  }

  // All-reduce: Gloo's ring or bcube, or one of the old-style algorithms (legacyAllreduce).
  template <typename T>
  void allreduce(const PeerCall& c, T* send, T* recv) {
    if (allreduce_ != "ring" && allreduce_ != "bcube") {
      legacyAllreduce<T>(c, send, recv);
      return;
    }
    gloo::AllreduceOptions opts(ctx_);
    opts.setAlgorithm(allreduce_ == "bcube" ? gloo::AllreduceOptions::Algorithm::BCUBE
                                            : gloo::AllreduceOptions::Algorithm::RING);
    if (send != recv) opts.setInput(send, c.count);  // without an input, the output is the input
    opts.setOutput(recv, c.count);
    opts.setReduceFunction(reduceFn<T>(c.op));
    limitTime(opts);
    gloo::allreduce(opts);
  }

  template <typename T>
  void allgather(const PeerCall& c, T* send, T* recv) {
    gloo::AllgatherOptions opts(ctx_);
    if (send != recv + ctx_->rank * c.count) opts.setInput(send, c.count);
    opts.setOutput(recv, c.count * ctx_->size);
    limitTime(opts);
    gloo::allgather(opts);
  }

  template <typename T>
  void broadcast(const PeerCall& c, T* send, T* recv) {
    gloo::BroadcastOptions opts(ctx_);
    opts.setRoot(c.root);
    if (ctx_->rank == c.root && send != recv) opts.setInput(send, c.count);
    opts.setOutput(recv, c.count);
    limitTime(opts);
    gloo::broadcast(opts);
  }

  template <typename T>
  void reduce(const PeerCall& c, T* send, T* recv) {
    gloo::ReduceOptions opts(ctx_);
    opts.setRoot(c.root);
    if (send != recv) opts.setInput(send, c.count);
    opts.setOutput(recv, c.count);
    opts.setReduceFunction(reduceFn<T>(c.op));
    limitTime(opts);
    gloo::reduce(opts);
  }

  template <typename T>
  void alltoall(const PeerCall& c, T* send, T* recv) {
    const size_t total = c.count * ctx_->size;
    if (send == recv) {
      // Gloo's all-to-all reads and writes different buffers.
      scratch_.assign(reinterpret_cast<char*>(send), reinterpret_cast<char*>(send + total));
      send = reinterpret_cast<T*>(scratch_.data());
    }
    gloo::AlltoallOptions opts(ctx_);
    opts.setInput(send, total);
    opts.setOutput(recv, total);
    limitTime(opts);
    gloo::alltoall(opts);
  }

  // Send to the next rank, receive from the previous one, through unbound buffers.
  template <typename T>
  void sendRecv(const PeerCall& c, T* send, T* recv) {
    const int rank = ctx_->rank, n = ctx_->size;
    const size_t bytes = c.count * sizeof(T);
    if (n == 1) {
      if (send != recv) std::memcpy(c.recv, c.send, bytes);
      return;
    }
    if (send == recv) {
      scratch_.assign(reinterpret_cast<char*>(send), reinterpret_cast<char*>(send) + bytes);
      send = reinterpret_cast<T*>(scratch_.data());
    }
    const uint64_t slot = gloo::Slot::build(kSendRecvSlotPrefix, 0);
    auto out = ctx_->createUnboundBuffer(send, bytes);
    auto in = ctx_->createUnboundBuffer(recv, bytes);
    in->recv((rank - 1 + n) % n, slot);
    out->send((rank + 1) % n, slot);
    const auto wait = timeout_.count() > 0 ? std::chrono::milliseconds(timeout_) : ctx_->getTimeout();
    in->waitRecv(wait);
    out->waitSend(wait);
  }

  // An old-style algorithm object: bound to one buffer, count, type and op when built, so it
  // is kept while the calls keep to them.
  struct LegacyAlgo {
    std::unique_ptr<gloo::Algorithm> algo;
    Collective coll = Collective::kAllReduce;
    void* buffer = nullptr;
    size_t count = 0;
    weftDataType_t type = weftFloat32;
    weftRedOp_t op = weftSum;
    bool matches(const PeerCall& c, const void* buf) const {
      return algo && coll == c.coll && buffer == buf && count == c.count && type == c.type && op == c.op;
    }
  };

  template <typename T>
  void legacyAllreduce(const PeerCall& c, const T* send, T* recv) {
    if (c.count > static_cast<size_t>(INT_MAX)) throw std::runtime_error("Gloo's old all-reduce counts are ints");
    if (!legacy_.matches(c, recv)) {
      legacy_.algo.reset();
      const std::vector<T*> ptrs{recv};
      const int count = static_cast<int>(c.count);
      std::unique_ptr<gloo::Algorithm> algo;
      if (allreduce_ == "legacy-ring")
        algo = std::make_unique<gloo::AllreduceRing<T>>(ctx_, ptrs, count, legacyFn<T>(c.op));
      else
        algo = std::make_unique<gloo::AllreduceRingChunked<T>>(ctx_, ptrs, count, legacyFn<T>(c.op));
      legacy_ = LegacyAlgo{std::move(algo), c.coll, recv, c.count, c.type, c.op};
    }
    if (send != recv) std::memcpy(static_cast<void*>(recv), send, c.count * sizeof(T));
    legacy_.algo->run();
  }

  // The old-style halving-doubling reduce-scatter, run on a copy of the input (it reduces the
  // whole buffer in place and leaves this rank's block at its start).
  template <typename T>
  void reduceScatter(const PeerCall& c, const T* send, T* recv) {
    const int n = ctx_->size;
    const size_t total = c.count * static_cast<size_t>(n);
    if (total > static_cast<size_t>(INT_MAX)) throw std::runtime_error("Gloo's reduce-scatter counts are ints");
    if (!legacy_.matches(c, rsBuffer_.data()) || rsBuffer_.size() != total * sizeof(T)) {
      legacy_.algo.reset();
      rsBuffer_.assign(total * sizeof(T), 0);
      const std::vector<T*> ptrs{reinterpret_cast<T*>(rsBuffer_.data())};
      auto algo = std::make_unique<gloo::ReduceScatterHalvingDoubling<T>>(
          ctx_, ptrs, static_cast<int>(total), std::vector<int>(static_cast<size_t>(n), static_cast<int>(c.count)),
          legacyFn<T>(c.op));
      legacy_ = LegacyAlgo{std::move(algo), c.coll, rsBuffer_.data(), c.count, c.type, c.op};
    }
    std::memcpy(rsBuffer_.data(), send, total * sizeof(T));
    legacy_.algo->run();
    std::memmove(static_cast<void*>(recv), rsBuffer_.data(), c.count * sizeof(T));
  }

  std::shared_ptr<gloo::Context> ctx_;
  std::shared_ptr<gloo::transport::Device> dev_;
  std::string allreduce_;
  std::chrono::milliseconds timeout_;
  std::vector<char> scratch_;   // all-to-all and sendrecv in place
  std::vector<char> rsBuffer_;  // reduce-scatter's working copy
  LegacyAlgo legacy_;
};

// Rank 0 makes the rendezvous directory and announces it; every rank connects through it.
PeerStatus makeGloo(const PeerSettings& settings, PeerBootstrap& boot, std::unique_ptr<PeerLib>* out) {
  bool known = false;
  std::string algos;
  for (const char* a : kAllreduceAlgos) {
    known = known || settings.glooAllreduce == a;
    algos += std::string(algos.empty() ? "" : ", ") + a;
  }
  if (!known)
    return PeerStatus::failure("Gloo's all-reduce is one of " + algos + ", not '" + settings.glooAllreduce + "'");
  char dir[512] = {0};
  if (boot.rank() == 0) {
    const std::string base = settings.storeDir.empty() ? "/tmp" : settings.storeDir;
    std::string templ = base + "/weft-gloo-XXXXXX";
    if (templ.size() < sizeof dir) {
      std::strcpy(dir, templ.c_str());
      if (!mkdtemp(dir)) dir[0] = '\0';
    }
  }
  if (PeerStatus s = boot.broadcast(dir, sizeof dir, 0); !s.ok) return s;
  if (dir[0] == '\0')
    return PeerStatus::failure("rank 0 cannot make a rendezvous directory under " +
                               (settings.storeDir.empty() ? std::string("/tmp") : settings.storeDir) +
                               "; name a writable one shared by every rank");

  std::string error;
  std::shared_ptr<gloo::rendezvous::Context> ctx;
  std::shared_ptr<gloo::transport::Device> dev;
  try {
    gloo::transport::tcp::attr attr;
    if (!settings.host.empty())
      attr.hostname = settings.host;
    else
      attr.iface = settings.iface;
    dev = gloo::transport::tcp::CreateDevice(attr);
    ctx = std::make_shared<gloo::rendezvous::Context>(boot.rank(), boot.size());
    if (settings.timeoutS > 0) ctx->setTimeout(std::chrono::seconds(settings.timeoutS));
    gloo::rendezvous::FileStore store(dir);
    ctx->connectFullMesh(store, dev);
  } catch (const std::exception& e) {
    error = std::string("connecting through ") + dir + ": " + e.what();
  }
  // Every rank is connected (or has given up) before the directory goes.
  const PeerStatus b = boot.barrier();
  if (boot.rank() == 0) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  if (!error.empty()) return PeerStatus::failure(error);
  if (!b.ok) return b;
  *out = std::make_unique<GlooPeer>(ctx, dev, settings.glooAllreduce, settings.timeoutS);
  return PeerStatus::success();
}

}  // namespace

WEFT_PERF_REGISTER_PEER(gloo, "gloo", makeGloo);

}  // namespace weft::perf
