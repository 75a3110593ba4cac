// The flight recorder's writer (issue 29): each communicator keeps its latest calls in a
// /dev/shm segment (layout: recorder_format.h) that weft-inspect reads from outside the process,
// even while the owner is stopped, spinning or deadlocked; and it writes the same bytes into
// WEFT_RECORDER_DIR on a time-out, a dead or silent peer, the dump signal, or on request.
//
// Cost: a call that repeats the one before (a training loop's) stores two header fields; another
// writes one 256-byte entry with plain stores under the entry's sequence lock (recorder_format.h:
// runs). Times come from a process-wide clock the heartbeat thread renews every ~100 ms (a
// stalled call every 2 ms): no system call, no clock read on the path of a call. The recorder is written by the thread that runs the communicator's calls
// (the API's rule: one thread per communicator at a time); dumps and the exit sweep take its
// registry's lock and only read the segment.
//
// States: a host call is kRunning from its start, kWaiting while the executor reports a stall
// (collectives/host_executor.h: StallObserver), then kDone or kFailed. A call on device buffers
// is recorded kQueued when it is enqueued on its stream and stays so: the host does not learn
// when a launch ends without a synchronisation the recorder would add (a reader shows it as
// "enqueued"); a failure the device path reports later is not written back into it.
#ifndef WEFT_CORE_RECORDER_H_
#define WEFT_CORE_RECORDER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "collectives/host_executor.h"
#include "core/recorder_format.h"

namespace weft {
namespace core {

// The time calls record (CLOCK_REALTIME_COARSE, ns), renewed by the heartbeat thread every beat
// and by a stalled call at each health check: reading a clock twice a call would cost 5 % of an
// 8-byte all-reduce.
extern std::atomic<int64_t> recorderClockNs;

// What a call is, for its entry.
struct RecordedCall {
  int32_t kind = 0;  // coll::CollKind value, or kRecordedBarrier
  int32_t type = 0;
  int32_t op = 0;
  int32_t root = -1;
  int32_t algo = -1;
  uint64_t count = 0;
  uint64_t bytes = 0;  // what the call moves on this rank when it completes (bytesDone at kDone)
};

class FlightRecorder final : public coll::StallObserver {
 public:
  ~FlightRecorder() override;
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // The recorder of rank `rank` of `nRanks` on the communicator `commHash`, with
  // WEFT_RECORDER_CALLS entries; null when that is 0 or the segment cannot be made (then one
  // warning says why: the communicator works without it).
  static std::unique_ptr<FlightRecorder> create(uint64_t commHash, int rank, int nRanks);

  // A call starts: it becomes call number calls + 1, in state `state` (kRunning on the host,
  // kQueued for a device call). Inline: the call a loop repeats joins the open run with two
  // stores into the header (recorder_format.h); others take the entry of a new run.
  void begin(const RecordedCall& call, RecordedState state) {
    if (!joinsRun(call, state) || !repeat(call.kind, state)) beginRun(call, state);
  }
  // The call begins as the open run's call again when the caller knows it is the same (kind,
  // count, datatype, op, root and algorithm as the collective before it) and the run is of that
  // kind; false (nothing recorded) otherwise: then begin().
  bool repeat(int32_t kind, RecordedState state) {
    if (!runOpen_ || state != RecordedState::kRunning || kind != run_.kind) return false;
    const uint64_t n = ++calls_;
    active_ = true;
    const int64_t now = recorderClockNs.load(std::memory_order_relaxed);
    if (now != latestNs_) header_->latestNs.store(latestNs_ = now, std::memory_order_relaxed);
    header_->calls.store(n, std::memory_order_release);
    return true;
  }
  // The call begun last completed (a reader sees it done), unless it failed or was a queued
  // device call.
  void finish() {
    if (!active_) return;
    active_ = false;
    header_->doneCalls.store(calls_, std::memory_order_release);
    const int64_t now = recorderClockNs.load(std::memory_order_relaxed);
    if (now != doneNs_ || waited_) finishSlow(now);
    runOpen_ = true;
  }
  // The call begun last failed with `message` (its first sentence is kept); nothing when no
  // call is active.
  void failed(const std::string& message);
  bool active() const { return active_; }

  // coll::StallObserver: the active call waits for `peer` in step `step`.
  void stalled(int peer, int step, uint64_t bytesDone) override;
  void moving() override;

  // Writes the segment's bytes, `dumped` = reason, to WEFT_RECORDER_DIR (a temporary name, then
  // renamed); *path the file. False with a warning logged when it cannot; false silently when
  // WEFT_RECORDER_DIR is empty (unless `dir` names a directory: tests).
  bool dump(RecorderDumpReason reason, std::string* path = nullptr, const std::string& dir = "") const;

  const std::string& segmentName() const { return name_; }  // "/weft-rec-..."
  uint32_t capacity() const { return capacity_; }
  int ownerPid() const;

 private:
  FlightRecorder() = default;
  Status map();  // creates and maps the segment name_ of bytes_
  void fillHeader(uint64_t commHash, int rank, int nRanks);
  // Opens entry e for writing (version odd) / closes it (version even, released).
  void openEntry(RecorderEntry* e);
  void closeEntry(RecorderEntry* e);
  // Whether `call` is the open run's call again (recorder_format.h: runs).
  bool joinsRun(const RecordedCall& call, RecordedState state) const {
    return runOpen_ && state == RecordedState::kRunning && call.kind == run_.kind && call.count == run_.count &&
           call.type == run_.type && call.op == run_.op && call.root == run_.root && call.algo == run_.algo &&
           call.bytes == run_.bytes;
  }
  void beginRun(const RecordedCall& call, RecordedState state);
  void finishSlow(int64_t now);  // finish's part when the clock moved or the call waited
  void startRun(const RecordedCall& call, RecordedState state, uint64_t n, int64_t now);
  void ownEntry();

  std::string name_;
  void* base_ = nullptr;
  size_t bytes_ = 0;
  RecorderHeader* header_ = nullptr;
  RecorderEntry* entries_ = nullptr;
  uint32_t capacity_ = 0;
  uint64_t calls_ = 0;     // header_->calls, as this thread last wrote it
  uint32_t nextSlot_ = 0;  // the entry the next run takes
  RecorderEntry* current_ = nullptr;  // the entry of the newest run
  bool active_ = false;   // between begin (host) and finish / failed
  uint64_t writes_ = 0;     // entry writes so far, times 2: the versions (openEntry)
  bool waited_ = false;     // the active call's entry holds a wait (stalled)
  int64_t updatedNs_ = 0;   // header_->updatedNs as last written
  int64_t latestNs_ = 0;    // header_->latestNs as last written
  int64_t doneNs_ = 0;      // header_->doneNs as last written
  RecordedCall run_;        // the call of the run in current_
  bool runOpen_ = false;    // the next call may join that run: its latest call completed as it should
};

// Removes the /dev/shm/weft-rec-* segments whose owner no longer runs (its pid is gone, or is now
// another process: its start time differs); returns how many went. Creation runs it once per
// process; tests call it directly.
size_t sweepRecorderSegments();

// Called by the liveness heartbeat thread every beat (~100 ms): renews the time calls record, and
// services a pending dump signal (its handler only raises a flag, the one async-signal-safe
// thing it can do) by dumping every recorder of the process with reason kSignal.
void recorderHeartbeat();

// Every recorder of this process dumps (reason), as after a time-out or a liveness failure that
// the process's other communicators share; returns how many files were written.
int dumpAllRecorders(RecorderDumpReason reason);


}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_RECORDER_H_
