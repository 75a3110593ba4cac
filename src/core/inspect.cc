#include "core/inspect.h"

#include <algorithm>
#include <cstdio>

#include "base/params.h"
#include "collectives/interpreter.h"
#include "collectives/schedule.h"

namespace weft {
namespace core {
namespace {

bool parseAlgorithm(const std::string& name, coll::CollKind kind, coll::Algo* out) {
  if (name.empty()) return *out = coll::collTraits(kind).defaultAlgo, true;
  return coll::algoFromName(name.c_str(), out);
}

}  // namespace

std::string formatParameterTable() {
  std::string out;
  char line[512];
  for (const auto& p : params::all()) {
    std::snprintf(line, sizeof(line), "%-26s %-8s default %-10s%s\n    %s\n", p.env.c_str(), p.type.c_str(),
                  p.defaultValue.empty() ? "\"\"" : p.defaultValue.c_str(),
                  p.isSet ? (" (set: " + p.value + ")").c_str() : "", p.help.c_str());
    out += line;
  }
  return out;
}

Status formatSchedules(const ScheduleRequest& request, std::string* out) {
  coll::ScheduleParams p;
  if (!coll::collFromName(request.collective.c_str(), &p.kind)) {
    return WEFT_ERROR(weftInvalidArgument, "unknown collective \"%s\": use %s", request.collective.c_str(),
                      coll::scheduledCollNames());
  }
  if (!parseAlgorithm(request.algorithm, p.kind, &p.algo)) {
    return WEFT_ERROR(weftInvalidArgument, "unknown algorithm \"%s\": use %s", request.algorithm.c_str(),
                      coll::algorithmNames());
  }
  p.nRanks = request.nRanks;
  p.nChannels = request.channels;
  p.root = request.root;
  p.count = request.count > 0 ? request.count : 2 * static_cast<int64_t>(std::max(1, request.nRanks));
  std::string invalid = coll::validateParams(p);
  if (!invalid.empty()) return WEFT_ERROR(weftInvalidArgument, "%s", invalid.c_str());
  char head[256];
  std::snprintf(head, sizeof(head), "# %s, %s, %d ranks, %d channel(s), count %lld%s\n", coll::collName(p.kind),
                coll::algoName(p.algo), p.nRanks, p.nChannels, static_cast<long long>(p.count),
                coll::collRooted(p.kind)
                    ? (", root " + std::to_string(p.root)).c_str()
                    : "");
  *out = head;
  for (int r = 0; r < p.nRanks; ++r) *out += coll::formatSchedule(coll::buildSchedule(p, r));
  if (request.verify) {
    std::string verdict = coll::verifySchedule(p, std::max<int64_t>(1, p.count / 4), false);
    *out += verdict.empty() ? "# verified by the reference interpreter: every rank ends with exactly the right data\n"
                            : "# the reference interpreter FAILED: " + verdict + "\n";
  }
  return Status::ok();
}

}  // namespace core
}  // namespace weft
