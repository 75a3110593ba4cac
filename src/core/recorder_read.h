// The flight recorder's reader (issue 29): finds the recorder segments of this host's Weft
// processes (/dev/shm/weft-rec-*) or the dump files in a directory (WEFT_RECORDER_DIR of
// several hosts), and copies each one out without trusting a byte of it: the header is checked
// against this build's layout (recorder_format.h) before any field is used, every entry is
// copied under its sequence lock and checked (enums in range, strings terminated). A segment
// of another layout or a corrupt one is refused with a sentence naming the file and what is
// wrong. weft-inspect and its tests call it; the diagnosis over the copies is
// recorder_diagnosis.h.
#ifndef WEFT_CORE_RECORDER_READ_H_
#define WEFT_CORE_RECORDER_READ_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/recorder_format.h"

namespace weft {
namespace core {

// One run of calls as copied and checked (recorder_format.h), as the call that is its last: the
// fields of RecorderEntry, error as a string, the state and times the last call's. Every call
// from firstCallNo to callNo - 1 was the same call and completed.
struct CopiedCall {
  uint64_t callNo = 0;       // the run's last call
  uint64_t firstCallNo = 0;  // its first (callNo when the run holds one call)
  uint64_t callBytes = 0;    // what each of its calls moves when it completes
  int32_t kind = 0;
  int32_t type = 0;
  int32_t op = 0;
  int32_t root = -1;
  int32_t algo = -1;
  RecordedState state = RecordedState::kFree;
  int32_t waitPeer = -1;
  int32_t waitStep = -1;
  uint64_t count = 0;
  uint64_t bytesDone = 0;
  int64_t queuedNs = 0;
  int64_t startedNs = 0;
  int64_t endedNs = 0;
  std::string error;
};

enum class OwnerLiveness {
  kAlive,      // a segment whose owner runs (pid alive, same start time)
  kStopped,    // ... but is stopped (SIGSTOP, Ctrl-Z, a debugger): it makes no progress until resumed
  kDead,       // a segment whose owner has ended
  kPidReused,  // a segment whose pid now belongs to another process (start time differs)
  kAsDumped,   // a dump file: the owner was alive when it wrote it; nothing is known since
};
const char* livenessName(OwnerLiveness liveness);  // "alive", "stopped", "dead", "dead (pid reused)", "as dumped"

// One recorder (a segment or a dump file) as copied.
struct RecorderCopy {
  std::string source;  // the file it came from
  int pid = 0;
  int rank = 0;
  int nRanks = 0;
  int version = 0;
  uint64_t commHash = 0;
  uint64_t ownerStartTicks = 0;
  int64_t createdNs = 0;
  int64_t updatedNs = 0;
  uint64_t calls = 0;  // calls ever recorded: the latest is number `calls`
  RecorderDumpReason dumped = RecorderDumpReason::kNone;
  std::string host;
  std::string frontEnd;
  OwnerLiveness liveness = OwnerLiveness::kAlive;
  std::vector<CopiedCall> entries;  // the valid runs, oldest first
  int beingWritten = 0;             // entries left out: the owner kept writing them while we copied
};

// What a look found: the copies, and a sentence per file refused or entry left out.
struct RecorderScan {
  std::vector<RecorderCopy> copies;
  std::vector<std::string> problems;
};

// Copies the recorder held in `bytes` (a mapped segment or a file's contents, `size` bytes;
// `source` names it in messages). False with *problem set when it is refused; entries that fail
// their checks are left out with a sentence each in *entryProblems. Liveness is not set here.
bool copyRecorder(const void* bytes, size_t size, const std::string& source, RecorderCopy* out, std::string* problem,
                  std::vector<std::string>* entryProblems);

// Whether the owner of a segment (pid, its /proc start ticks) still runs.
OwnerLiveness segmentOwnerLiveness(int pid, uint64_t startTicks);

// Every recorder segment in `shmDir` (/dev/shm unless a test says otherwise), with its owner's
// liveness.
RecorderScan scanSegments(const std::string& shmDir = "/dev/shm");
// Every dump file (weft-rec-*.bin) in `path`, a directory; or `path` itself when it is a file.
// Liveness is kAsDumped.
void scanDumps(const std::string& path, RecorderScan* scan);

// The name RecordedState is known by to a person: "free", "queued", "running", ...
const char* stateName(RecordedState state);
// The call kind's name: collName's, or "barrier".
const char* recordedKindName(int32_t kind);

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_RECORDER_READ_H_
