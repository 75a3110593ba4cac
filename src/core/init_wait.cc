#include "core/init_wait.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>

#include "base/log.h"
#include "base/params.h"

namespace weft {
namespace core {

double nextInitReportS(double lastS, double firstS) {
  if (firstS <= 0) return 0;
  if (lastS <= 0) return firstS;
  return lastS + std::min(lastS, kInitReportMaxGapS);
}

std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  int shown = 0;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (shown++ == 32) {
      out += ", ...";
      break;
    }
    if (!out.empty()) out += ", ";
    out += std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

namespace {

double secondsBetween(uint64_t fromNs, uint64_t toNs) {
  return toNs > fromNs ? static_cast<double>(toNs - fromNs) / 1e9 : 0.0;
}

// "rank 3" or "ranks 3, 5-7" (with "..." when the root named only the lowest).
std::string missingText(const InitWait& w) {
  std::string text = (w.missingTotal == 1 ? "rank " : "ranks ") + rankList(w.missing);
  if (static_cast<int>(w.missing.size()) < w.missingTotal) {
    text += " and " + std::to_string(w.missingTotal - static_cast<int>(w.missing.size())) + " more";
  }
  return text;
}

// "ranks 0-2 joined" when the missing list is whole, else "N of M ranks joined".
std::string joinedText(const InitWait& w) {
  if (static_cast<int>(w.missing.size()) != w.missingTotal || w.joined == 0) {
    return std::to_string(w.joined) + " of " + std::to_string(w.nRanks) + " ranks joined";
  }
  std::vector<int> joined;
  size_t m = 0;
  for (int r = 0; r < w.nRanks; ++r) {
    if (m < w.missing.size() && w.missing[m] == r) {
      ++m;
      continue;
    }
    joined.push_back(r);
  }
  return (joined.size() == 1 ? "rank " : "ranks ") + rankList(joined) + " joined";
}

}  // namespace

std::string initWaitMessage(const InitWait& w, uint64_t nowNs, int64_t timeoutS) {
  char head[128], tail[128];
  std::snprintf(head, sizeof(head), "rank %d of %d waits in communicator init", w.rank, w.nRanks);
  std::snprintf(tail, sizeof(tail), "waiting %.1f s of WEFT_TIMEOUT_S %lld", secondsBetween(w.sinceNs, nowNs),
                static_cast<long long>(timeoutS));
  const std::string root = "the root at " + w.root;
  if (w.phase == InitWait::Phase::kReachingRoot) {
    return std::string(head) + " to reach " + root + " (" + tail +
           "): the root runs in the process that made the unique id (rank 0 when launched from the environment): "
           "start it or check its log";
  }
  if (w.heardNs == 0) {
    return std::string(head) + " for " + root + " to answer (no progress report from it yet; " + tail +
           "): check the root's log";
  }
  char heard[64];
  std::snprintf(heard, sizeof(heard), "%.1f s ago", secondsBetween(w.heardNs, nowNs));
  if (w.missingTotal == 0) {
    return std::string(head) + " for " + root + " to send the rank table (all " + std::to_string(w.nRanks) +
           " ranks joined, as it reported " + heard + "; " + tail + ")";
  }
  const std::string missing = missingText(w);
  return std::string(head) + " for " + missing + " to join (" + joinedText(w) + ", as " + root + " reported " +
         heard + "; " + tail + "): start " + missing + " or check " + (w.missingTotal == 1 ? "its" : "their") +
         " log";
}

namespace {

struct Waits;
Waits& waits();

struct Waits {
  std::mutex mutex;
  uint64_t nextKey = 1;
  std::map<uint64_t, InitWait> byKey;  // keys grow: oldest first
};

Waits* makeWaits() {
  auto* w = new Waits();  // never destroyed: ranks may still wait at exit
  // As the bootstrap's other process-wide tables: a fork() must not leave the child a held lock.
  pthread_atfork([] { waits().mutex.lock(); }, [] { waits().mutex.unlock(); },
                 [] { new (&waits().mutex) std::mutex(); });
  return w;
}

Waits* const gWaits = makeWaits();  // at load: a fork() must not catch a thread making it
Waits& waits() { return *gWaits; }

}  // namespace

std::vector<InitWait> currentInitWaits() {
  std::lock_guard<std::mutex> lock(waits().mutex);
  std::vector<InitWait> out;
  out.reserve(waits().byKey.size());
  for (const auto& [key, w] : waits().byKey) out.push_back(w);
  return out;
}

InitWaitScope::InitWaitScope(const InitWait& w) {
  std::lock_guard<std::mutex> lock(waits().mutex);
  key_ = waits().nextKey++;
  waits().byKey[key_] = w;
}

InitWaitScope::~InitWaitScope() {
  std::lock_guard<std::mutex> lock(waits().mutex);
  waits().byKey.erase(key_);
}

void InitWaitScope::update(const InitWait& w) {
  std::lock_guard<std::mutex> lock(waits().mutex);
  waits().byKey[key_] = w;
}

InitWaitReporter::InitWaitReporter(const InitWait& w, Deadline deadline)
    : w_(w), scope_(w), firstS_(static_cast<double>(params::InitReportS())) {
  timeoutS_ = deadline.atNs() == UINT64_MAX ? params::TimeoutS()
                                            : static_cast<int64_t>(deadline.remainingSeconds() + 0.5);
}

void InitWaitReporter::tick() {
  if (firstS_ <= 0) return;
  const uint64_t now = nowNs();
  const double waited = secondsBetween(w_.sinceNs, now);
  double next = nextInitReportS(lastS_, firstS_);
  if (waited < next) return;
  while (next <= waited) {
    lastS_ = next;
    next = nextInitReportS(lastS_, firstS_);
  }
  WEFT_LOG(kWarn, kBoot, "%s", initWaitMessage(w_, now, timeoutS_).c_str());
}

Deadline InitWaitReporter::nextReport() const {
  if (firstS_ <= 0) return Deadline::never();
  const double waited = secondsBetween(w_.sinceNs, nowNs());
  return Deadline::afterSeconds(std::max(0.0, nextInitReportS(lastS_, firstS_) - waited));
}

}  // namespace core
}  // namespace weft
