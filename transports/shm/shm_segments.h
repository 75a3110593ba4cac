// The /dev/shm side of the shared-memory FIFOs (shm_fifo.h): what a FIFO's segment is called,
// making one (replacing what a crashed run left under its name), opening and mapping one that
// the peer made, reserving its space, unlinking it, the "-nospace" markers a receiver that ran
// out of room leaves for its sender, and the sweep of segments whose creators no longer run.
// ShmFifo::create and ShmFifo::attach use these; the FIFO itself (header, slots, control
// block) knows nothing of /dev/shm. To tell who made a segment the sweeps read the receiver's
// fields of its FifoHeader.
#ifndef WEFT_TRANSPORTS_SHM_SHM_SEGMENTS_H_
#define WEFT_TRANSPORTS_SHM_SHM_SEGMENTS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace weft {
namespace shm {

// "/weft-<commTag>-<sender>-<receiver>-<lane>", with characters that cannot appear in a
// shared-memory name replaced (and an over-long tag replaced by its hash).
std::string fifoName(const std::string& commTag, int sender, int receiver, int lane);

// Removes the FIFO segments in /dev/shm whose creator was a process of this pid namespace that
// no longer runs (a receiver killed, or ended by _exit, before its sender attached: nobody else
// would ever unlink them); returns how many. Segments of live processes, of other namespaces,
// half-made ones and anything that is not a FIFO (weftMemAlloc's /weft-mem-*) are left alone.
// ShmFifo::create runs it once per process (sweepDeadOwners).
size_t removeFifosOfDeadProcesses();
// Once per process, before its first FIFO: removeFifosOfDeadProcesses, logged when it removed any.
void sweepDeadOwners(int selfRank);

// Free bytes in /dev/shm, or UINT64_MAX when that cannot be told.
uint64_t shmFreeBytes();
// Ok when `needBytes` fit in `freeBytes`; otherwise an error saying what to do about it.
Status checkShmSpace(uint64_t freeBytes, uint64_t needBytes, int selfRank, int peerRank);

// A receiver that could not create its FIFO for lack of /dev/shm leaves an empty segment (no
// data: it fits in a full tmpfs) named "<fifo>-nospace"; the sender waiting in
// Segment::open finds it, removes it and fails at once with the same remedy, instead of timing
// out. Markers no sender took are removed when this process exits.
void markNoSpace(const std::string& fifoName);

// One FIFO's segment: its name (fifoName()) and the ranks of its edge as seen from this side
// (for messages).
struct SegmentId {
  std::string name;
  int selfRank = -1;
  int peerRank = -1;
};

// A segment this process opened and mapped read-write. Its descriptor is closed and its mapping
// unmapped on every path out unless release()d; a segment this process created is also
// unlinked until then (creation failed half-way).
class Segment {
 public:
  Segment() = default;
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Receiver: creates `id.name` with `bytes` bytes (replacing a stale segment left by a crashed
  // run; one whose creator still runs is an error) and maps it.
  [[nodiscard]] static Status create(const SegmentId& id, size_t bytes, Segment* out);
  // Sender: opens and maps `id.name` once the receiver made it at least `minBytes` long; *out
  // stays unmapped while it is not there (yet). Fails at once when the receiver left a
  // "-nospace" marker instead.
  [[nodiscard]] static Status open(const SegmentId& id, size_t minBytes, Segment* out);

  bool mapped() const { return base_ != nullptr; }
  int fd() const { return fd_; }
  char* base() const { return static_cast<char*>(base_); }
  size_t bytes() const { return bytes_; }
  // Reserves the segment's real space: a sparse segment over-commits /dev/shm, and the first
  // write past what is left would kill this rank or its peer with SIGBUS instead of failing here.
  // On ENOSPC it leaves the "-nospace" marker for the sender.
  [[nodiscard]] Status reserve(const SegmentId& id) const;
  // Hands the mapping over (unmapSegment() releases it) and keeps the name.
  void* release();

 private:
  int fd_ = -1;
  void* base_ = nullptr;
  size_t bytes_ = 0;
  std::string unlinkName_;  // created here and not yet handed over: unlinked on the way out
};

// Unmaps what Segment::release() handed over.
void unmapSegment(void* base, size_t bytes);
// Removes the name `name` from /dev/shm (already gone is fine; another failure is logged).
void unlinkSegment(const std::string& name, int selfRank);

}  // namespace shm
}  // namespace weft

#endif  // WEFT_TRANSPORTS_SHM_SHM_SEGMENTS_H_
