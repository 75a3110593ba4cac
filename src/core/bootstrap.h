// The bootstrap: how the ranks of a new communicator find each other, and the slow
// out-of-band channel they use while setting up (PeerInfo all-gather, transport handshakes,
// split ids).
//
// One process makes a unique id (createUniqueId): it starts a root listener in a thread of its
// own that serves exactly one communicator's init. Every rank connects to the root, presents
// the id's secret with its PeerInfo and its own listen address; once all nRanks have arrived the
// root hands every rank the whole table and exits. From then on the ranks talk directly: each
// keeps a connection to rank 0 (the hub of allGather and barrier) and opens point-to-point
// connections lazily for send/recv. Every connection between ranks presents the secret.
//
// Joining is in bootstrap_join.cc, the messages after it in bootstrap.cc.
//
// Callers: src/core/comm.cc (init, split), src/core/init.cc (weftGetUniqueId,
// weftCommInitFromEnv), transports through PeerExchange.
#ifndef WEFT_CORE_BOOTSTRAP_H_
#define WEFT_CORE_BOOTSTRAP_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/os.h"
#include "base/socket.h"
#include "base/status.h"
#include "transports/transport.h"
#include "weft/weft.h"

namespace weft {
namespace core {

class InitWaitReporter;  // init_wait.h

constexpr size_t kSecretBytes = 16;

// What a weftUniqueId carries.
struct UniqueIdInfo {
  SocketAddress root;                  // where the root listens
  uint8_t secret[kSecretBytes] = {0};  // every rank presents it
  uint64_t nonce = 0;                  // tells communicators apart (commTagFromId)
};

Status encodeUniqueId(const UniqueIdInfo& info, weftUniqueId* out);
// weftInvalidArgument when the bytes are not a Weft unique id.
Status decodeUniqueId(const weftUniqueId& id, UniqueIdInfo* out);

// A new id whose root listens on the interface WEFT_SOCKET_IFNAME selects (port chosen by the
// kernel); the root thread starts in this process.
Status createUniqueId(weftUniqueId* out);
// The same, with the root listening on `bind` (e.g. SocketAddress::loopbackV4() for ranks
// that all live on this host).
Status createUniqueIdAt(const SocketAddress& bind, weftUniqueId* out);

// Starts the root of `id` in this process, listening on the id's port (on the id's address when
// it is a loopback address, else on every address of its family). For launchers that fix the
// root's address in advance.
Status startRoot(const weftUniqueId& id);

// The id of a launcher-described communicator: root at `rootAddr` ("host:port"), secret of 32
// hex digits. Every rank computes the same id; nothing is started.
Status uniqueIdFromAddress(const std::string& rootAddr, const std::string& secretHex, weftUniqueId* out);

// For weftCommInitFromEnv: reads WEFT_RANK / WEFT_NRANKS (else OMPI_COMM_WORLD_RANK/SIZE, else
// PMI_RANK/PMI_SIZE), WEFT_ROOT_ADDR and WEFT_ROOT_SECRET, and makes the id; on rank 0 also
// starts the root listener in this process. Clear weftInvalidArgument errors when a variable is
// missing or malformed.
Status uniqueIdFromEnv(weftUniqueId* id, int* rank, int* nRanks);

// A short hex string, unique per communicator (from the id's nonce): names shared segments.
std::string commTagFromId(const weftUniqueId& id);

// Stops the root of `id` if it runs in this process (started by createUniqueId here), closing
// its listener; *stopped says whether one was still running. Roots of other processes are out
// of reach. For weftCommInitRankScalable, whose extra ids are not joined through.
Status stopRoot(const weftUniqueId& id, bool* stopped);

// Root threads of this process that have not finished yet (tests).
size_t runningRootCount();

// Every rank's PeerInfo and bootstrap listen address, as the root handed them out (host names
// that two hosts share get "@address" appended). Immutable once made: the ranks of one
// communicator that live in one process share one copy, so that weftCommInitAll's memory grows
// with the rank count, not with its square.
struct PeerTable {
  std::vector<PeerInfo> peers;
  std::vector<SocketAddress> addrs;
};

// One rank's end of the bootstrap of one communicator.
class Bootstrap : public PeerExchange {
 public:
  // Joins communicator `id` as `rank` of `nRanks`: meets the others through the root and
  // connects to rank 0. weftTimeout (naming the ranks that never joined) when not all ranks
  // arrive before the deadline; weftInvalidUsage when this id already formed a communicator in
  // which this process was `rank`, or two groups of ranks use it at once (a unique id makes one
  // communicator). When *abortInit becomes true (another thread: weftCommAbort
  // during a non-blocking init) the join, and every later call, fails within ~0.1 s.
  static Status create(const weftUniqueId& id, int rank, int nRanks, const PeerInfo& self, Deadline deadline,
                       std::unique_ptr<Bootstrap>* out, const std::atomic<bool>* abortInit = nullptr);
  ~Bootstrap() override;

  int rank() const { return rank_; }
  int nRanks() const { return nRanks_; }
  // Every rank's PeerInfo, indexed by rank.
  const std::vector<PeerInfo>& peers() const { return table_->peers; }
  // The table itself, shared with this process's other ranks of the communicator.
  std::shared_ptr<const PeerTable> peerTable() const { return table_; }
  // "rank 2 (host:1234)".
  std::string describe(int peer) const;
  // The address rank `peer` listens on for bootstrap messages.
  const SocketAddress& address(int peer) const { return table_->addrs[static_cast<size_t>(peer)]; }

  // all[r * bytesPerRank ...] receives rank r's `mine`. Collective.
  Status allGather(const void* mine, void* all, size_t bytesPerRank, Deadline deadline);
  Status allGather(const void* mine, void* all, size_t bytesPerRank);
  // Returns when every rank has entered it. Collective.
  Status barrier(Deadline deadline);
  Status barrier();

  // Point to point: a message of `bytes` bytes with a tag (any int). Messages between a pair
  // arrive in order per tag; messages with other tags wait in a queue. The receiver must ask
  // for exactly the size that was sent. Without a deadline: WEFT_TIMEOUT_S.
  Status send(int peer, int tag, const void* data, size_t bytes) override;
  Status recv(int peer, int tag, void* data, size_t bytes) override;
  Status send(int peer, int tag, const void* data, size_t bytes, Deadline deadline);
  Status recv(int peer, int tag, void* data, size_t bytes, Deadline deadline);
  // ... and fails (weftRemoteError, "aborted") within ~0.1 s once `stop` becomes true.
  Status recv(int peer, int tag, void* data, size_t bytes, Deadline deadline, const std::atomic<bool>* stop) override;

  // True when `peer` has left: it destroyed its communicator or exited (its bootstrap port
  // refuses connections, or closed the one this rank opened). Connects to it first if this rank
  // never sent it anything, waiting at most until `deadline`.
  bool peerLeft(int peer, Deadline deadline);

  // From any thread: every call in progress or to come returns weftRemoteError ("aborted")
  // within about 0.1 s.
  void abort();
  bool aborted() const { return abort_.load() || (abortInit_ != nullptr && abortInit_->load()); }

  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

 private:
  struct Message;
  struct PeerConn;
  struct Pending;
  Bootstrap(const UniqueIdInfo& id, int rank, int nRanks);
  // create() once the id is known not to have formed a communicator in this process already.
  static Status join(const UniqueIdInfo& info, int rank, int nRanks, const PeerInfo& self, Deadline deadline,
                     std::unique_ptr<Bootstrap>* out, const std::atomic<bool>* abortInit);
  // join's talk with the root (bootstrap_join.cc) once connected to it and listening: the hello,
  // the root's answer, the rank table (into table_). start: when the join began, for messages;
  // rep reports the wait for the answer.
  Status meetThroughRoot(Socket& root, const PeerInfo& self, Deadline deadline, uint64_t start,
                         InitWaitReporter& rep);

  Status sendFrame(int peer, uint32_t kind, int tag, const void* data, size_t bytes, Deadline deadline,
                   const char* what);
  // With c.sendMutex held: connects c.out to `peer` and greets it (what: the call, for messages).
  Status openOut(PeerConn& c, int peer, Deadline deadline, const char* what);
  // Closes c.out after `s` ended a send of `what`, and says so.
  Status sendFailed(PeerConn& c, int peer, Status s, const char* doing, const char* what);
  Status recvFrame(int peer, uint32_t kind, int tag, void* data, size_t bytes, Deadline deadline, const char* what,
                   const std::atomic<bool>* stop = nullptr);
  Status gather(const void* mine, void* all, size_t bytesPerRank, Deadline deadline, bool isBarrier);
  // Takes in whatever arrives (new connections, frames) for up to kAbortPollMs.
  void pumpOnce(Deadline deadline);
  void acceptPending();
  // Reads a pending connection's introduction; adopts it as a peer's `in` or drops it.
  void servePending(Pending& pc);
  void readFrom(int peer);
  Status timeoutError(int peer, Deadline deadline, uint64_t startNs, const char* what) const;
  // The connections with `peer`, made on first use: nothing per pair exists before a pair talks.
  PeerConn& conn(int peer);

  UniqueIdInfo id_;
  int rank_;
  int nRanks_;
  std::shared_ptr<const PeerTable> table_;
  Socket listener_;
  std::atomic<bool> abort_{false};
  const std::atomic<bool>* abortInit_ = nullptr;  // the caller's abort flag (may be null)

  // Per peer that this rank has talked with: the connection we opened (sending) and the one it
  // opened (receiving). connsMutex_ guards the map, not the connections; it is taken last.
  std::mutex connsMutex_;
  std::unordered_map<int, std::unique_ptr<PeerConn>> conns_;
  std::vector<std::unique_ptr<Pending>> pending_;  // accepted, not yet authenticated

  // queueMutex_ guards every peer's message queue and receive error, and pumping_: one thread
  // at a time reads the sockets (the listener, pending_, every PeerConn::in); the others wait.
  std::mutex queueMutex_;
  bool pumping_ = false;
  std::condition_variable queueCv_;
};

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_BOOTSTRAP_H_
