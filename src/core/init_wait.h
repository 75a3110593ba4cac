// What a rank waiting in init (the bootstrap, before a communicator exists) knows and says:
// the schedule of its reports (first after WEFT_INIT_REPORT_S, then at twice the time waited,
// the gap capped at 60 s), the sentence it logs, and a process-wide list of the waits in
// progress, for a reader that shows them from inside the process (the flight recorder).
//
// Who joined is known only to the root; it tells each waiting rank (wire::Progress) just before
// that rank's report is due, so every waiting rank names the missing ranks, not only the root's.
//
// Callers: bootstrap_join.cc (the waits), bootstrap_root.cc (the schedule, rankList).
#ifndef WEFT_CORE_INIT_WAIT_H_
#define WEFT_CORE_INIT_WAIT_H_

#include <cstdint>

#include "base/os.h"
#include <string>
#include <vector>

namespace weft {
namespace core {

// Longest gap between two reports of one wait.
constexpr double kInitReportMaxGapS = 60.0;

// When the report after the one at `lastS` seconds (0: none yet) is due, in seconds since the
// wait began: firstS, then lastS + min(lastS, 60). 0 when firstS <= 0 (reports are off).
double nextInitReportS(double lastS, double firstS);

// "1, 3, 5-9" (at most 32 runs, then ", ...").
std::string rankList(const std::vector<int>& ranks);

// One rank's wait in init.
struct InitWait {
  enum class Phase { kReachingRoot, kWaitingForRanks };
  uint64_t comm = 0;  // the unique id's nonce: the same on every rank
  int rank = -1;
  int nRanks = 0;
  Phase phase = Phase::kReachingRoot;
  std::string root;      // the root's address
  uint64_t sinceNs = 0;  // when the wait began (nowNs)
  // From the root's last progress report (heardNs 0: none yet): how many ranks joined, and the
  // lowest of the missing ones (missingShown of missingTotal).
  uint64_t heardNs = 0;
  int joined = 0;
  std::vector<int> missing;
  int missingTotal = 0;
};

// The sentence a report logs, `nowNs` being the time of the report and `timeoutS` the
// WEFT_TIMEOUT_S it runs under. Without a word from the root it says what the rank waits for.
std::string initWaitMessage(const InitWait& w, uint64_t nowNs, int64_t timeoutS);

// The waits in init of this process right now (copies), oldest first.
std::vector<InitWait> currentInitWaits();

// Registers a wait for as long as it lives; update() replaces what it shows.
class InitWaitScope {
 public:
  explicit InitWaitScope(const InitWait& w);
  ~InitWaitScope();
  void update(const InitWait& w);
  InitWaitScope(const InitWaitScope&) = delete;
  InitWaitScope& operator=(const InitWaitScope&) = delete;

 private:
  uint64_t key_;
};

// One rank's wait in init as others see it (currentInitWaits) and as its log reports it (at
// warning level, on the schedule above, WEFT_INIT_REPORT_S first).
class InitWaitReporter {
 public:
  // `deadline`: when the wait fails (named in the reports).
  InitWaitReporter(const InitWait& w, Deadline deadline);
  InitWait& state() { return w_; }
  // Shows state() to currentInitWaits().
  void changed() { scope_.update(w_); }
  // Logs a report when one is due (one line, however late the call).
  void tick();
  // When the next report is due, for a wait that must wake up to log it (never when off).
  Deadline nextReport() const;

 private:
  InitWait w_;
  InitWaitScope scope_;
  double firstS_;
  double lastS_ = 0;
  int64_t timeoutS_ = 0;
};

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_INIT_WAIT_H_
