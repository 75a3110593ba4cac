// Inside the liveness module (liveness.h) only: the record each process shares with the peers on
// its host, what the ranks exchange about it at init, and the process-wide side (the record, the
// heartbeat thread, the UDP socket) that liveness_process.cc keeps for the watches.
#ifndef WEFT_CORE_LIVENESS_RECORD_H_
#define WEFT_CORE_LIVENESS_RECORD_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/socket.h"
#include "core/bootstrap_wire.h"
#include "core/liveness.h"

namespace weft {
namespace core {

class LivenessWatch;

constexpr uint64_t kRecordMagic = 0x3154424854464557ull;  // "WEFTHBT1"
constexpr int kFailureSlots = 32;
constexpr size_t kFailureTextBytes = 448;

enum FailureKind : uint32_t { kNone = 0, kRefused = 1, kFailed = 2 };

// One communicator's latest failure on this process, written by its owner under a sequence lock
// (odd `version` while writing) and read by the peers.
struct FailureSlot {
  std::atomic<uint64_t> version;
  uint64_t commHash;
  int32_t rank;
  int32_t culprit;  // the rank the failure is blamed on (-1: the publishing rank itself)
  uint64_t seq;
  uint32_t kind;  // FailureKind
  uint32_t reserved;
  char text[kFailureTextBytes];
  // The communicator's latest call as its owner recorded it (a CallRecord, comm.h, as bytes),
  // under a sequence lock of its own: written with every call, read by peers whose calls
  // disagreed with it and that this rank did not answer in time (a late asynchronous check).
  std::atomic<uint64_t> callVersion;
  unsigned char call[kCallRecordBytes];
};

// This process's record, shared read-only with the peers on its host.
struct LivenessRecord {
  uint64_t magic;
  uint64_t nonce;  // tells this process's record from a later one with a reused pid and fd
  int32_t pid;
  int32_t reserved;
  std::atomic<uint64_t> beats;
  FailureSlot slots[kFailureSlots];
};

// What the ranks exchange at init: where each process's record is.
struct RecordAddress {
  int32_t fd = -1;  // -1: that process has no record
  int32_t pid = 0;
  uint64_t nonce = 0;
  wire::Addr udp;  // where that process takes heartbeats from other hosts (family 0: nowhere)
};

// A consistent copy of a peer's slot; false when the owner kept writing it.
bool readSlot(const FailureSlot& s, FailureSlot* out);

// A failure a rank on another host announced in its beats (BeatMessage).
struct RemoteFailure {
  uint64_t commHash = 0;
  uint64_t seq = 0;
  int32_t rank = -1;
  int32_t culprit = -1;
};
// What this process heard from one process on another host.
struct RemoteState {
  uint64_t beats = 0;
  std::vector<RemoteFailure> failures;  // the latest per communicator and rank (a few at most)
};

// The failure rank `rank` of the communicator `commHash` announced from the process of `nonce`;
// false when none was heard. Takes the registry lock: not for the heartbeat thread (tick).
bool heardFailure(uint64_t nonce, uint64_t commHash, int rank, RemoteFailure* out);
// Has the heartbeat thread beat now instead of at its next turn (a failure was just published).
void beatSoon();

// This process's record (null: none could be made), made on first use, and where peers find it:
// its fd and nonce, and the UDP address for beats from other hosts (`reachableAt`, this rank's
// bootstrap address, with the port of this process's socket).
RecordAddress advertiseRecord(const SocketAddress& reachableAt);
LivenessRecord* ownRecord();

// Adds a watch (expecting UDP beats from the processes of `remoteNonces`) and starts the
// heartbeat thread with the first one; returns the watch's failure slot (-1: none free).
int registerWatch(LivenessWatch* w, const std::vector<uint64_t>& remoteNonces);
// Removes it (the thread no longer touches it afterwards) and stops the thread with the last.
void unregisterWatch(LivenessWatch* w, int slot, const std::vector<uint64_t>& remoteNonces);

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_LIVENESS_RECORD_H_
