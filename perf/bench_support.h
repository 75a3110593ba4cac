// Pieces of weft-perf's benchmark loop (bench.cc) that stand on their own: the peer libraries'
// rendezvous over the Weft communicator, and facts about the machine for the run's summary.
// (The rank's buffers are rank_buffers.h.)
#ifndef WEFT_PERF_BENCH_SUPPORT_H_
#define WEFT_PERF_BENCH_SUPPORT_H_

#include <cstddef>
#include <cstdlib>
#include <string>

#include "perf/peer_libs.h"
#include "weft/weft.h"

namespace weft::perf {

// The peers' rendezvous channel: the Weft communicator under test.
class CommBootstrap : public PeerBootstrap {
 public:
  CommBootstrap(weftComm_t comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  PeerStatus broadcast(void* data, size_t bytes, int root) override {
    return check(weftBroadcast(data, data, bytes, weftUint8, root, comm_, nullptr), "weftBroadcast");
  }
  PeerStatus barrier() override { return check(weftBarrier(comm_, nullptr), "weftBarrier"); }

 private:
  PeerStatus check(weftResult_t r, const char* what) {
    if (r == weftSuccess) return PeerStatus::success();
    return PeerStatus::failure(std::string(what) + " (peer bootstrap): " + weftGetErrorString(r) + ": " +
                               weftGetLastError(comm_));
  }
  weftComm_t comm_;
  int rank_;
  int size_;
};

// "0.1.0" from weftGetVersion's number.
std::string versionText(int v);
// Now, ISO 8601 in UTC.
std::string utcNow();
// Whether this host is a virtual machine (the CPU flags carry "hypervisor").
bool runsInVm();
// NVIDIA GPUs the driver lists on this host (no CUDA call: forked ranks come later).
int nvidiaGpus();
// The interface Gloo's TCP transport binds to: WEFT_SOCKET_IFNAME when it names one, loopback
// on one host, else the address of the host name.
std::string glooInterface(int nhosts);

}  // namespace weft::perf

#endif  // WEFT_PERF_BENCH_SUPPORT_H_
