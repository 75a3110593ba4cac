// The transport interface: how two ranks move bytes. A Connection is one direction of one edge
// (sender rank -> receiver rank, on one lane): a FIFO of nSlots slots of slotBytes bytes with
// head/tail counters the two sides poll. The receiver reads the slot in place; the sender
// writes it in place (../shared/DESIGN.md, "Transports").
//
// Everything here is non-blocking: executors poll connections of several lanes in turn, so a
// rank never blocks in one connection while another could progress. Waiting, deadlines and
// back-off belong to the caller.
//
// Implementations (shm/, p2p/, bridge/, net/ with its socket, libfabric and plugin transports)
// register a factory with registerTransport(); src/core picks, for each pair of ranks, the first
// registered transport that canConnect(). tests/unit/transports/conformance_test.cc holds every
// one of them to this contract.
#ifndef WEFT_TRANSPORTS_TRANSPORT_H_
#define WEFT_TRANSPORTS_TRANSPORT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/os.h"
#include "base/status.h"
#include "device/kernel_api.h"

namespace weft {
namespace device {
class Runtime;
}
}  // namespace weft

namespace weft {

// What each rank tells the others at init (exchanged by the bootstrap's all-gather). Plain old
// data: it travels as bytes.
struct PeerInfo {
  int32_t rank = -1;
  int32_t pid = 0;
  uint64_t hostHash = 0;     // equal: same host
  uint64_t processHash = 0;  // equal: same process
  int32_t device = -1;       // GPU index, -1 for host memory ranks
  int32_t deviceUnits = 0;   // SMs / CUs of that GPU (0: none or not known yet)
  // Address of this process's memory probe (memoryProbeAddress()): a peer that can read it
  // can read this rank's buffers directly (single-copy).
  uint64_t probeAddress = 0;
  char hostName[64] = {0};
};

// A message that names memory in the sender's process instead of carrying the bytes
// (single-copy): the receiver reads `bytes` at `address` of the sender's process. It travels
// in a slot posted with a byte count of 0, which no data message has.
struct ReferenceMessage {
  uint64_t magic = 0;  // kReferenceMagic
  uint64_t address = 0;
  uint64_t bytes = 0;
};
constexpr uint64_t kReferenceMagic = 0x5745465452454621ull;  // "WEFTREF!"

// Added to the culprit passed through Connection::signalAbort() when the failure is a call
// mismatch (two ranks made different calls), so that a peer that never saw the bad message
// knows it too and joins the exchange that names both calls. Ranks are below 2^20, and every
// transport carries culprits up to 2^30 unchanged.
constexpr int kCulpritCallMismatch = 1 << 28;

// For transports that send a reference's bytes themselves (sendsReferencedBytes()): the bytes a
// posted slot stands for. A slot of `*bytes` == 0 holding a ReferenceMessage becomes the memory it
// names (the executor keeps it unchanged until the slot is consumed); any other slot is itself.
inline void resolveReferencedBytes(const char** data, size_t* bytes) {
  if (*bytes != 0) return;
  ReferenceMessage ref;
  std::memcpy(&ref, *data, sizeof(ref));
  if (ref.magic != kReferenceMagic) return;
  *data = reinterpret_cast<const char*>(ref.address);
  *bytes = static_cast<size_t>(ref.bytes);
}

// Sends and receives small blobs between two ranks out of band (through the bootstrap), for
// transports that must exchange addresses or handles while connecting.
class PeerExchange {
 public:
  virtual ~PeerExchange() = default;
  virtual Status send(int peer, int tag, const void* data, size_t bytes) = 0;
  virtual Status recv(int peer, int tag, void* data, size_t bytes) = 0;
  // The same, giving up at `deadline` (connecting waits no longer than the request allows) or
  // once `stop` (may be null: ConnectRequest::abort) becomes true, with weftRemoteError.
  virtual Status recv(int peer, int tag, void* data, size_t bytes, Deadline deadline, const std::atomic<bool>* stop) {
    (void)deadline;
    (void)stop;
    return recv(peer, tag, data, bytes);
  }
};

struct ConnectRequest {
  std::string commTag;  // unique per communicator on this host (names of shared segments, ...)
  PeerInfo self;
  PeerInfo peer;
  int lane = 0;  // which FIFO between this pair (lanes are independent)
  // The FIFO's geometry; src/core sets both from the communicator's settings (these are the
  // parameter table's defaults).
  size_t nSlots = 4;
  size_t slotBytes = 1 << 18;
  // NUMA node of this rank's CPU (-1 unknown): a FIFO this rank reads is placed there.
  int numaNode = -1;
  // The NIC this rank's traffic to another host goes through, as its route names it
  // (topology/route.h RouteEnd::nic: the one nearest its GPU, else on its NUMA node), "" none
  // known. Network transports that can choose their local interface use it (socket_nic.h).
  std::string nic;
  Deadline deadline;
  PeerExchange* exchange = nullptr;  // may be null for transports that need no exchange
  // Waits in connectSend() give up (weftRemoteError) once this becomes true (weftCommAbort).
  const std::atomic<bool>* abort = nullptr;
  // Device executor connections (their FIFO is read by the lane program, deviceFifo()): the
  // runtime that owns the ranks' buffers; null for host-executor connections.
  device::Runtime* runtime = nullptr;
};

// One direction of one edge. A connection made by connectSend() uses the sender methods, one
// made by connectRecv() the receiver methods; the other pair returns nullptr / does nothing.
class Connection {
 public:
  virtual ~Connection() = default;
  virtual size_t slotBytes() const = 0;

  // Sender: the next free slot to fill, or nullptr when the FIFO is full.
  virtual void* trySendSlot() = 0;
  // Sender: publishes the slot returned by trySendSlot() holding `bytes` bytes. `stamp` travels
  // beside the byte count, outside the payload: the executors put the call's stamp there
  // (collectives/call_stamp.h) so that a receiver can tell that both sides made the same call.
  virtual void postSend(size_t bytes, uint64_t stamp) = 0;

  // Receiver: the oldest filled slot, its byte count and the stamp its sender posted with it,
  // or nullptr when none is ready.
  virtual const void* tryRecv(size_t* bytes, uint64_t* stamp) = 0;
  // Receiver: gives the slot returned by tryRecv() back to the sender.
  virtual void releaseRecv() = 0;

  // Sender: true when the receiver has released every slot posted so far.
  virtual bool allSendsConsumed() const = 0;
  // Receiver: this rank runs the collective stamped `stamp` (collectives/call_stamp.h: call
  // number and fingerprint) and reads this connection in it. Sender: whether the receiver's
  // latest announcement is `stamp`, i.e. it runs this very call (a later one announces another
  // stamp). A sender that must not return before its receiver accepted its call may return on
  // either this or allSendsConsumed() (host_executor.cc waitForConsumers); transports whose
  // peers share no memory keep the defaults (never announced: the sender waits for its
  // messages to be taken).
  virtual void announceCall(uint64_t stamp) {}
  virtual bool peerAnnounced(uint64_t stamp) const { return false; }

  // Ok while the peer is alive and has not failed; otherwise an error naming the peer
  // (weftRemoteError). Cheap enough to call every few milliseconds while waiting.
  virtual Status checkPeer() const = 0;
  // Tells the peer that this side failed, so that its waits end at once instead of at the
  // deadline. `culprit`: the rank whose failure caused it, as far as this side knows (-1: not
  // known), passed on so that every rank can name the root cause; with kCulpritCallMismatch
  // added when the failure is a disagreement between the ranks' calls. Safe from any thread.
  virtual void signalAbort(int culprit) = 0;
  // True once the peer called signalAbort(): a definite failure, unlike a peer that exited after
  // finishing its part. Cheap; executors poll it on every connection of an operation.
  virtual bool peerAborted() const = 0;
  // The culprit the peer passed to signalAbort(), or -1.
  virtual int peerAbortCulprit() const = 0;
  // Sender: the transport itself turns a posted ReferenceMessage into data, reading the bytes
  // from this process's memory when it sends them (network transports): the receiver sees an
  // ordinary message, and the sender saves the copy into the slot. The referenced memory must
  // stay unchanged until allSendsConsumed().
  virtual bool sendsReferencedBytes() const { return false; }
  // Device executor: the FIFO as the lane program reads and writes it (slots and counters in
  // memory the devices of both ranks reach), or false when this connection only works through
  // the methods above (the host executor's). A connection that gives one is not used through
  // the methods above.
  virtual bool deviceFifo(device::FifoView* out) { return false; }
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  virtual bool canConnect(const PeerInfo& self, const PeerInfo& peer) const = 0;
  // True for transports whose connections are read by the device executor (deviceFifo()): they
  // serve only its FIFOs, and the host executor's never.
  virtual bool forDevices() const { return false; }
  // True when both ends of a connection find each other without anything sent through
  // ConnectRequest::exchange (shm: by the FIFO's name), so that a connection can be closed and
  // made again later (weftCommSuspend); an end that sent an offer through the exchange would
  // leave it queued at a peer that never took it.
  virtual bool reconnectsWithoutExchange() const { return false; }
  // Called for every sending end of a connect before any receiving end is made; never waits.
  // A transport whose receiver needs something of the sender's to make its end (p2p: where the
  // sender's credits are) offers it here; its connectSend prepares itself when this was not called.
  virtual Status prepareSend(const ConnectRequest& req) {
    (void)req;
    return Status::ok();
  }
  // The receiving side of an edge creates its FIFO; waits at most for what its sender offers in
  // prepareSend (nothing, for most transports).
  virtual Status connectRecv(const ConnectRequest& req, std::unique_ptr<Connection>* out) = 0;
  // The sending side attaches to the FIFO its peer creates, waiting until req.deadline for it.
  virtual Status connectSend(const ConnectRequest& req, std::unique_ptr<Connection>* out) = 0;
};

// Registration: implementations call this from a static initialiser in their module (src/core
// links them whole). Order of preference is registration priority, highest first.
using TransportFactory = std::function<std::unique_ptr<Transport>()>;
void registerTransport(const char* name, int priority, TransportFactory factory);
// Fresh instances of every registered transport, highest priority first.
std::vector<std::unique_ptr<Transport>> makeTransports();

}  // namespace weft

#endif  // WEFT_TRANSPORTS_TRANSPORT_H_
