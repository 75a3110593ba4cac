// The flight recorder's bytes (issue 29): what each communicator writes about its latest calls
// into a shared-memory segment that another process (weft-inspect) reads without the owner's
// help, and what a rank dumps into WEFT_RECORDER_DIR (a file holds the same bytes as the
// segment). Plain data only, fixed-width fields, no pointers: the writer (core/recorder.*) and
// the reader (core/recorder_read.*) share nothing else.
//
// Segment: /dev/shm/weft-rec-<pid>-<commHash, 16 hex digits>-<rank>; a dump file in
// WEFT_RECORDER_DIR: weft-rec-<host>-<pid>-<commHash>-<rank>.bin. Layout: one RecorderHeader,
// then `capacity` RecorderEntry records, a ring of runs: an entry holds calls firstCallNo to
// lastCallNo (numbers from 1), the same call made again and again (a training loop's), which
// cost the writer two header stores each instead of an entry. Every call of a run but its last
// completed; the last is in the entry's state (kRunning meaning "completed" once the header's
// doneCalls reaches it). The newest run is open (lastCallNo 0: it ends at the header's calls).
// A call that stalls or fails, or differs from the one before, starts a run of its own.
//
// Consistency: each entry is written under its own sequence lock (`version` odd while the owner
// writes it; a reader copies the entry and takes the copy only when `version` was even and
// unchanged across the copy). A reader never trusts a field without checking it: the header's
// magic, layout version, sizes and capacity first (a segment of another Weft version or a corrupt
// one is refused with a message), then every entry's enums and ranges.
#ifndef WEFT_CORE_RECORDER_FORMAT_H_
#define WEFT_CORE_RECORDER_FORMAT_H_

#include <atomic>
#include <cstdint>

namespace weft {
namespace core {

constexpr uint64_t kRecorderMagic = 0x3143455254464557ull;  // "WEFTREC1" read as little-endian bytes
// Bump with any change of RecorderHeader or RecorderEntry: readers refuse other layouts.
constexpr uint32_t kRecorderLayout = 2;
constexpr const char* kRecorderPrefix = "weft-rec-";  // of the /dev/shm names and the dump files
constexpr uint32_t kRecorderMaxCapacity = 1u << 20;  // WEFT_RECORDER_CALLS' upper bound

enum class RecordedState : int32_t {
  kFree = 0,     // never written
  kQueued = 1,   // accepted by the API, not started (a device call enqueued on its stream; a group's call before weftGroupEnd)
  kRunning = 2,  // moving data
  kWaiting = 3,  // stalled (for waitPeer, in step waitStep) longer than a health-check interval
  kDone = 4,
  kFailed = 5,   // `error` holds the sentence
};

// Kinds beyond coll::CollKind's values (recorded as they are, 0..kNumCollKinds-1; a send/recv
// group is coll::CollKind::kSendRecv, its count the group's operations).
constexpr int32_t kRecordedBarrier = 100;

struct RecorderEntry {
  std::atomic<uint64_t> version;  // sequence lock: odd while the owner writes
  uint64_t firstCallNo;           // the run's first call's number on this communicator (from 1), the same on every rank for the same call
  uint64_t lastCallNo;            // its last call's; 0 while the run is open (the newest: it ends at RecorderHeader::calls)
  uint64_t callBytes;             // what each call of the run moves on this rank when it completes
  int32_t kind;                   // coll::CollKind value, or kRecordedBarrier
  int32_t type;                   // weftDataType_t
  int32_t op;                     // weftRedOp_t (0 where the call does not reduce)
  int32_t root;                   // -1 where the call has no root
  int32_t algo;                   // coll::Algo value, -1 not chosen
  int32_t state;                  // RecordedState
  int32_t waitPeer;               // kWaiting: the rank it waits for (-1 unknown)
  int32_t waitStep;               // kWaiting: the step index it waits in (-1 unknown)
  uint64_t count;                 // elements (a send/recv group: operations)
  uint64_t bytesDone;             // bytes the run's last call moved so far (when it stalls; callBytes once it completes)
  int64_t queuedNs;               // the run's first call's, CLOCK_REALTIME ns since the epoch (coarse: ~100 ms); 0 not yet
  int64_t startedNs;              // the same (the last call's: RecorderHeader::latestNs while the run is open)
  int64_t endedNs;                // the run's last call's, once a later run began (open run: RecorderHeader::doneNs)
  char error[152];                // kFailed: the error's first sentence, NUL-terminated
};
static_assert(sizeof(RecorderEntry) == 256, "a RecorderEntry is 256 bytes");

struct RecorderHeader {
  uint64_t magic;        // kRecorderMagic
  uint32_t layout;       // kRecorderLayout
  uint32_t headerBytes;  // sizeof(RecorderHeader)
  uint32_t entryBytes;   // sizeof(RecorderEntry)
  uint32_t capacity;     // entries after the header (1..kRecorderMaxCapacity)
  int32_t pid;           // the owner
  int32_t rank;
  int32_t nRanks;
  int32_t version;       // weftGetVersion of the owner's library
  uint64_t commHash;     // the communicator's id: the same on every rank of it
  uint64_t ownerStartTicks;  // the owner's start time (/proc/<pid>/stat field 22): a reused pid is told from the owner
  int64_t createdNs;     // CLOCK_REALTIME at creation
  std::atomic<int64_t> updatedNs;  // CLOCK_REALTIME of the owner's latest write (coarse)
  std::atomic<uint64_t> calls;     // calls ever recorded: the latest is number `calls`
  std::atomic<uint64_t> doneCalls;  // calls 1..doneCalls have ended (completed or failed)
  std::atomic<int64_t> latestNs;    // when call `calls` began (coarse)
  std::atomic<int64_t> doneNs;      // when call `doneCalls` ended (coarse)
  int32_t dumped;        // in a dump file: why it was written (RecorderDumpReason); 0 in a segment
  int32_t reserved;
  char host[64];         // the owner's host name, NUL-terminated
  char frontEnd[32];     // who made the communicator: "weft", "nccl" (libnccl.so.2), "torch", "weft-perf" (WEFT_RECORDER_FRONT_END), NUL-terminated
};
static_assert(sizeof(RecorderHeader) == 208, "the RecorderHeader layout is fixed");

enum class RecorderDumpReason : int32_t {
  kNone = 0,
  kTimeout = 1,   // a call timed out
  kLiveness = 2,  // a call failed because of a peer: dead, silent, or its call disagreed
  kSignal = 3,    // the process got the dump signal (SIGUSR2 unless WEFT_RECORDER_SIGNAL says otherwise)
  kRequest = 4,   // weftCommDumpRecorder / the API asked
};

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_RECORDER_FORMAT_H_
