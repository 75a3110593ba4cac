// Weft as a peer library (see peer_libs.h), through its public C API only, so that the
// comparison benchmarks time Weft exactly as an application sees it. Rank 0 makes the unique
// id and the bootstrap carries it to the others, as an MPI program would.
#include <cstdlib>
#include <cstring>
#include <string>

#include "perf/peer_libs.h"

namespace weft::perf {
namespace {

std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

class WeftPeer : public PeerLib {
 public:
  WeftPeer(weftComm_t comm, int rank, int nranks) : comm_(comm), rank_(rank), nranks_(nranks) {}
  ~WeftPeer() override {
    // After a failure a peer may be gone or stuck: abort rather than wait for it.
    if (failed_)
      (void)weftCommAbort(comm_);
    else
      (void)weftCommDestroy(comm_);
  }

  const char* name() const override { return "weft"; }

  std::string description() const override {
    int v = 0;
    (void)weftGetVersion(&v);
    return "Weft " + std::to_string(v) + ", WEFT_NET=" + envOr("WEFT_NET", "(unset)") +
           ", WEFT_SHM_DISABLE=" + envOr("WEFT_SHM_DISABLE", "(unset)") +
           ", WEFT_SOCKET_IFNAME=" + envOr("WEFT_SOCKET_IFNAME", "(unset)");
  }

  std::string unsupported(Collective, weftDataType_t, weftRedOp_t) const override { return ""; }

  PeerStatus run(const PeerCall& c) override {
    const weftResult_t r = call(c);
    if (r == weftSuccess) return PeerStatus::success();
    failed_ = true;
    return PeerStatus::failure(std::string(collectiveName(c.coll)) + ": " + weftGetErrorString(r) + ": " +
                               weftGetLastError(comm_));
  }

 private:
  weftResult_t call(const PeerCall& c) {
    switch (c.coll) {
      case Collective::kAllReduce:
        return weftAllReduce(c.send, c.recv, c.count, c.type, c.op, comm_, nullptr);
      case Collective::kAllGather:
        return weftAllGather(c.send, c.recv, c.count, c.type, comm_, nullptr);
      case Collective::kReduceScatter:
        return weftReduceScatter(c.send, c.recv, c.count, c.type, c.op, comm_, nullptr);
      case Collective::kBroadcast:
        return weftBroadcast(c.send, c.recv, c.count, c.type, c.root, comm_, nullptr);
      case Collective::kReduce:
        return weftReduce(c.send, c.recv, c.count, c.type, c.op, c.root, comm_, nullptr);
      case Collective::kAllToAll:
        return weftAllToAll(c.send, c.recv, c.count, c.type, comm_, nullptr);
      case Collective::kSendRecv: {
        // To the next rank, from the previous one, as nccl-tests' sendrecv.
        weftResult_t r = weftGroupStart();
        if (r != weftSuccess) return r;
        r = weftSend(c.send, c.count, c.type, (rank_ + 1) % nranks_, comm_, nullptr);
        const weftResult_t r2 =
            r == weftSuccess ? weftRecv(c.recv, c.count, c.type, (rank_ - 1 + nranks_) % nranks_, comm_, nullptr) : r;
        const weftResult_t r3 = weftGroupEnd();
        return r != weftSuccess ? r : r2 != weftSuccess ? r2 : r3;
      }
    }
    return weftInternalError;
  }

  weftComm_t comm_;
  int rank_;
  int nranks_;
  bool failed_ = false;
};

PeerStatus makeWeft(const PeerSettings& settings, PeerBootstrap& boot, std::unique_ptr<PeerLib>* out) {
  // The id travels with rank 0's verdict, so that a failed weftGetUniqueId stops every rank.
  struct {
    int32_t ok;
    weftUniqueId id;
  } root;
  std::memset(&root, 0, sizeof root);
  std::string rootError;
  if (boot.rank() == 0) {
    const weftResult_t r = weftGetUniqueId(&root.id);
    root.ok = r == weftSuccess;
    if (!root.ok)
      rootError = std::string("weftGetUniqueId: ") + weftGetErrorString(r) + ": " + weftGetLastError(nullptr);
  }
  if (PeerStatus s = boot.broadcast(&root, sizeof root, 0); !s.ok) return s;
  if (!root.ok) return PeerStatus::failure(boot.rank() == 0 ? rootError : "rank 0 could not make the unique id");

  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutS = settings.timeoutS;
  config.commName = "bench";
  weftComm_t comm = nullptr;
  const weftResult_t r = weftCommInitRankConfig(&comm, boot.size(), root.id, boot.rank(), &config);
  if (r != weftSuccess)
    return PeerStatus::failure(std::string("weftCommInitRank: ") + weftGetErrorString(r) + ": " +
                               weftGetLastError(nullptr));
  *out = std::make_unique<WeftPeer>(comm, boot.rank(), boot.size());
  return PeerStatus::success();
}

}  // namespace

WEFT_PERF_REGISTER_PEER(weft, "weft", makeWeft);

}  // namespace weft::perf
