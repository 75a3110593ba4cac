// The libraries the comparison benchmarks run side by side with Weft (weft-bench-net and
// weft-perf --compare): one small interface, "run this collective on these buffers",
// implemented over Weft's C API (peer_weft.cc), Open MPI (peer_mpi.cc), Gloo (peer_gloo.cc) and
// NCCL (peer_nccl.cc). Each implementation registers a factory under its name when it is built,
// so a binary without Gloo says "gloo: not built" instead of failing to link. Buffers are host
// memory, or with weft-perf --mem device the rank's GPU memory, which only libraries registered
// as taking device buffers are given (the others are skipped with a note).
//
// The calls take Weft's argument conventions (perf/collectives.h): `count` is the call's count
// argument (per rank for all-gather, reduce-scatter and all-to-all), in place means the
// nccl-tests layout (all-gather sends from its block of recv, reduce-scatter receives into its
// block of send, the others pass one buffer as both), and broadcast is out of place (the root's
// recv gets the data too). Each implementation maps that onto its library, and says which
// collectives, types and ops it cannot do rather than emulating them slowly.
#ifndef WEFT_PERF_PEER_LIBS_H_
#define WEFT_PERF_PEER_LIBS_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "perf/collectives.h"
#include "weft/weft.h"

namespace weft::perf {

// Success, or what went wrong in a sentence a person can act on.
struct [[nodiscard]] PeerStatus {
  bool ok = true;
  std::string error;

  static PeerStatus success() { return {}; }
  static PeerStatus failure(std::string why) { return {false, std::move(why)}; }
};

// How the ranks of a peer library find each other: the launcher's channel (MPI under mpirun).
// Every rank calls each method in the same order.
class PeerBootstrap {
 public:
  virtual ~PeerBootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Copies rank `root`'s bytes into every rank's `data`.
  virtual PeerStatus broadcast(void* data, size_t bytes, int root) = 0;
  virtual PeerStatus barrier() = 0;
};

// What the libraries are told beyond the collective itself.
struct PeerSettings {
  std::string iface = "lo";            // network interface the TCP transports use ("" = by host name)
  std::string host;                    // or a host name / address to bind to (wins over iface)
  std::string glooAllreduce = "ring";  // Gloo's all-reduce: ring, bcube, legacy-ring, legacy-ring-chunked
  std::string storeDir;                // Gloo's rendezvous directory, seen by every rank ("" = a fresh one in /tmp)
  int timeoutS = 0;                    // seconds a call may take (0: each library's default)
  // Device memory (weft-perf --mem device): the buffers are on this GPU, current on the calling
  // thread, and calls go on `stream` (cudaStream_t / hipStream_t). -1: host buffers.
  int device = -1;
  void* stream = nullptr;
  // How weft-perf runs its ranks, for a library that must know (NCCL on a shared GPU):
  // several ranks per process (-t), and Weft on its network path (--weft-net).
  bool ranksAreThreads = false;
  bool weftNet = false;
};

struct PeerCall {
  Collective coll = Collective::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  weftDataType_t type = weftFloat32;
  weftRedOp_t op = weftSum;
  int root = 0;
};

class PeerLib {
 public:
  virtual ~PeerLib() = default;
  virtual const char* name() const = 0;
  // One line for the report header: version, transport, algorithm.
  virtual std::string description() const = 0;
  // The path its data takes when weft-perf chose it ("socket transport over lo (NCCL_HOSTID per
  // rank)"), for the header; "" when the library chose.
  virtual std::string path() const { return ""; }
  // What the header should say about how it was set up ("NCCL_SOCKET_IFNAME=eth0 kept from the
  // environment", advice for a fair ratio); printed as "# Note: <name>: ..." lines.
  virtual std::vector<std::string> notes() const { return {}; }
  // "" when run() can do this, else why not ("Open MPI has no half-precision type").
  virtual std::string unsupported(Collective coll, weftDataType_t type, weftRedOp_t op) const = 0;
  // The collective: completed when it returns on host buffers; on device buffers it may only be
  // queued on the settings' stream, and finish() waits for it.
  virtual PeerStatus run(const PeerCall& call) = 0;
  // Waits for every call run() queued.
  virtual PeerStatus finish() { return PeerStatus::success(); }
};

using PeerFactory = PeerStatus (*)(const PeerSettings& settings, PeerBootstrap& boot, std::unique_ptr<PeerLib>* out);

// Which buffers a library's run() takes.
enum class PeerMemory { kHostOnly, kHostAndDevice };

// Called by each implementation's static registrar (WEFT_PERF_REGISTER_PEER, or
// WEFT_PERF_REGISTER_DEVICE_PEER for one that also takes device buffers).
bool registerPeer(const char* name, PeerFactory factory, PeerMemory memory = PeerMemory::kHostOnly);
// The names registered in this binary, sorted.
std::vector<std::string> builtPeers();
// Makes the named library, collectively over boot's ranks. A name not built in this binary
// fails with "not built"; a host-only library asked for device buffers (settings.device >= 0)
// with "skipped: ..." (every rank alike, so nobody waits).
PeerStatus makePeer(const std::string& name, const PeerSettings& settings, PeerBootstrap& boot,
                    std::unique_ptr<PeerLib>* out);

#define WEFT_PERF_REGISTER_PEER(ident, name, factory) \
  static const bool weftPerfPeerRegistered_##ident = ::weft::perf::registerPeer(name, factory)
#define WEFT_PERF_REGISTER_DEVICE_PEER(ident, name, factory) \
  static const bool weftPerfPeerRegistered_##ident =         \
      ::weft::perf::registerPeer(name, factory, ::weft::perf::PeerMemory::kHostAndDevice)

}  // namespace weft::perf

#endif  // WEFT_PERF_PEER_LIBS_H_
