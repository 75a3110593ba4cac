// The connections of one communicator to its peers: the transports (chosen per connection by
// pickTransport), the FIFOs made on demand (connect), the single-copy permissions probed at init
// (probeReaders), and what the executors report through them about a failure (the rank it is
// blamed on, a disagreement between the ranks' calls). The communicator (comm.h) holds one and
// hands it to the host executor and the device path as their coll::ConnectionProvider
// (collectives/host_executor.h); it reads only the communicator state in ConnectionContext.
#ifndef WEFT_CORE_CONNECTIONS_H_
#define WEFT_CORE_CONNECTIONS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "collectives/host_executor.h"
#include "core/bootstrap.h"
#include "core/comm_topology.h"
#include "core/liveness.h"
#include "device/device.h"
#include "transports/net/proxy.h"
#include "transports/transport.h"

namespace weft {
namespace core {

// What the connections read of their communicator, fixed once init has agreed on it.
struct ConnectionContext {
  int rank = 0;
  int nRanks = 0;
  std::string commTag;
  // Every rank's PeerInfo (bootstrap.h).
  std::shared_ptr<const PeerTable> peerTable;
  // The global system and routes (comm_topology.h); may be null.
  std::shared_ptr<const CommTopology> topology;
  // Carries the transports' handshakes (ConnectRequest::exchange).
  Bootstrap* bootstrap = nullptr;
  // The peers' health (healthCheck's verdict, the culprit's own words); may be null.
  const LivenessWatch* liveness = nullptr;
  // The communicator's flags: aborted (weftCommAbort), revoked (weftCommRevoke), and the one the
  // transports' connect waits poll (raised by abort and by a liveness verdict).
  const std::atomic<bool>* aborted = nullptr;
  const std::atomic<bool>* revoked = nullptr;
  const std::atomic<bool>* stopWaits = nullptr;
  // The agreed FIFO shape (CommSettings: WEFT_NSLOTS, WEFT_BUFFSIZE over it).
  size_t nSlots = 4;
  size_t slotBytes = 1 << 18;
  bool checkCalls = true;  // WEFT_CHECK_CALLS
  // Single-copy: peer p can read this rank's memory (probeReaders).
  std::vector<bool> peerReadsMe;
};

class Connections final : public coll::ConnectionProvider {
 public:
  Connections() = default;
  ~Connections() override { close(); }
  Connections(const Connections&) = delete;
  Connections& operator=(const Connections&) = delete;

  // Set once at init, before anything connects.
  void start(ConnectionContext context, std::vector<std::unique_ptr<Transport>> transports);
  size_t transportCount() const { return transports_.size(); }
  // The runtime device FIFOs connect through: set by the communicator's first device call.
  void setDeviceRuntime(device::Runtime* runtime) { deviceRuntime_.store(runtime); }

  // Which peers this rank can read directly (same process, or cross-memory attach allowed by the
  // OS); then every rank learns who can read it, which is what a sender needs. Collective over
  // the bootstrap, at init.
  static Status probeReaders(int rank, const std::vector<PeerInfo>& peers, Bootstrap* bootstrap, double timeoutS,
                             std::vector<bool>* peerReadsMe);

  // Tells every connected peer that this rank's operation failed, blaming `told`
  // (Connection::signalAbort).
  void signalAbort(int told);
  // The rank whose failure ended this communicator's operation, when known (-1: not yet).
  int culprit() const { return culprit_.load(); }
  // The executor or the device path found that the ranks' calls disagree (noteCallMismatch), and
  // the peer's stamp when this rank saw it (0: not seen).
  bool callMismatch() const { return mismatch_.load(); }
  uint64_t mismatchTheirs() const { return mismatchTheirs_.load(); }
  // weftCommSuspend: closes the host connections whose transport reconnects without the
  // bootstrap (Transport::reconnectsWithoutExchange); releasableBytes: what that frees.
  void releaseForSuspend();
  uint64_t releasableBytes();
  // Every connection, then the bridge proxy (destroy; after the device path, whose launches use
  // the connections' memory).
  void close();

  // Call-check tokens and probes (coll::isCallCheckLane) are one byte: their FIFOs take 2 slots of
  // the smallest size WEFT_BUFFSIZE allows.
  static constexpr size_t kCallTokenSlots = 2;
  static constexpr size_t kCallTokenSlotBytes = 4096;

  // coll::ConnectionProvider
  Status connect(const std::vector<coll::ConnectionKey>& keys, const Deadline& deadline) override;
  Connection* get(const coll::ConnectionKey& key) override;
  Status healthCheck() override;
  Status explainPeerFailure(Status failure) override;
  void noteCulprit(int rank) override;
  int selfRank() const override { return context_.rank; }
  bool peerReadsMyMemory(int peer) override { return context_.peerReadsMe[static_cast<size_t>(peer)]; }
  void noteCallMismatch(int peer, uint64_t theirs, uint64_t ours) override;
  void collectiveReceivers(std::vector<std::pair<int, Connection*>>* out) override;
  Status readPeerMemory(int peer, uint64_t address, void* dst, size_t bytes) override;

 private:
  const std::vector<PeerInfo>& peers() const { return context_.peerTable->peers; }
  // The transport's request for one end of `key`'s FIFO to `peer` (as the transport is to see it).
  ConnectRequest requestFor(const coll::ConnectionKey& key, const PeerInfo& peer, bool bridged,
                            const Deadline& deadline) const;
  // Makes one end of `key`'s FIFO in connect's `phase` (0: the sending end prepares).
  Status connectOne(const coll::ConnectionKey& key, int phase, const Deadline& deadline);
  // Chooses the transport for one connection; *peer as the transport is to see it.
  [[nodiscard]] Status pickTransport(const coll::ConnectionKey& key, PeerInfo* peer, Transport** transport,
                                     bool* bridged);
  // This process's ordinal of `peer`'s GPU, found by the bus ids the ranks described at init (a
  // peer's own ordinal means nothing here: processes with different CUDA_VISIBLE_DEVICES number
  // GPUs differently); the peer's own where there are no bus ids or this process does not see it.
  int peerOrdinalHere(int peer) const;
  // Starts the bridge proxy (once).
  Status bridgeProxy();

  ConnectionContext context_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::atomic<device::Runtime*> deviceRuntime_{nullptr};
  std::mutex mutex_;  // guards conns_, releasable_ and bridgeProxy_ against abort() from another thread
  // Moves the slots of bridged device FIFOs (network, or GPUs without peer access); made by the
  // first bridge.
  std::unique_ptr<net::Proxy> bridgeProxy_;
  std::map<coll::ConnectionKey, std::unique_ptr<Connection>> conns_;
  // The host connections that weftCommSuspend closes (their transport reconnects without the
  // bootstrap: Transport::reconnectsWithoutExchange).
  std::set<coll::ConnectionKey> releasable_;
  std::atomic<int> culprit_{-1};
  std::atomic<bool> mismatch_{false};
  std::atomic<uint64_t> mismatchTheirs_{0};
};

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_CONNECTIONS_H_
