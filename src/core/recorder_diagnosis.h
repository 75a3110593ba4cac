// What the flight recorders say about a job (issue 29): a pure function over the copies
// recorder_read.h makes (no processes, no files), so every sentence is unit-tested from
// synthesized records. Per communicator (ranks grouped by commHash): each rank's latest call,
// and the findings a person on call needs: ranks missing, owners dead, calls that disagree
// between ranks, and the stragglers (who waits, in which call, for whom, and where that one
// is). weft-inspect prints it; its --json gives the same facts.
#ifndef WEFT_CORE_RECORDER_DIAGNOSIS_H_
#define WEFT_CORE_RECORDER_DIAGNOSIS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/recorder_read.h"

namespace weft {
namespace core {

struct CommReport {
  uint64_t commHash = 0;
  int nRanks = 0;
  std::string frontEnd;
  std::vector<RecorderCopy> ranks;  // the ranks found, by rank (one copy each: the newest)
  std::vector<int> missing;         // ranks of 0..nRanks-1 with no recorder
  std::vector<int> stragglers;      // the ranks others wait for (dead and missing ones included)
  std::vector<std::string> rankLines;  // one per rank found: its latest call, its state, since when
  std::vector<std::string> findings;   // the diagnosis, most important first
};

struct Diagnosis {
  std::vector<CommReport> comms;     // by commHash
  std::vector<std::string> problems;  // the scan's: files refused, entries left out
};

// The diagnosis of what `scan` copied, `nowNs` (CLOCK_REALTIME) being the time of the look.
// Times of dump files are taken relative to their own latest write ("when dumped").
Diagnosis diagnose(const RecorderScan& scan, int64_t nowNs);

// One line per rank present in both looks: calls and bytes since `before`, `elapsedNs` earlier
// (weft-inspect --watch).
std::vector<std::string> progressSince(const Diagnosis& before, const Diagnosis& now, int64_t elapsedNs);

// A call as a person reads it: "allreduce #1042 (1048576 x float, sum, ring)".
std::string describeCall(const CopiedCall& call);
// "rank 3", "ranks 0-2", "ranks 0, 2, 5-7" (init_wait.h rankList's ranges, sorted, with the word).
std::string ranksPhrase(const std::vector<int>& ranks);
// "12.4 s", "350 ms".
std::string formatAge(int64_t ns);
// CLOCK_REALTIME now, ns since the epoch.
int64_t realtimeNs();

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_RECORDER_DIAGNOSIS_H_
