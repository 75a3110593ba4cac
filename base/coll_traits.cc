// The lookups of coll_traits.h that are not constexpr.
#include "base/coll_traits.h"

#include <cctype>
#include <string>
#include <vector>

namespace weft {
namespace coll {

namespace {

// Lower case, '_' dropped: "All_Reduce" -> "allreduce".
std::string nameKey(const char* name) {
  std::string key;
  for (const char* c = name; *c != '\0'; ++c) {
    if (*c != '_') key += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
  }
  return key;
}

// "a, b or c".
std::string joinOr(const std::vector<const char*>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += i == 0 ? "" : i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace

bool collFromName(const char* name, CollKind* out) {
  const std::string key = nameKey(name);
  for (const CollTraits& t : kCollTraits) {
    if (t.scheduled && key == t.name) return *out = t.kind, true;
  }
  return false;
}

const char* scheduledCollNames() {
  static const std::string names = [] {
    std::vector<const char*> scheduled;
    for (const CollTraits& t : kCollTraits) {
      if (t.scheduled) scheduled.push_back(t.name);
    }
    return joinOr(scheduled);
  }();
  return names.c_str();
}

bool algoFromName(const char* name, Algo* out) {
  const std::string key = nameKey(name);
  for (const AlgoTraits& a : kAlgoTraits) {
    if (key == a.name) return *out = a.algo, true;
  }
  return false;
}

const char* algorithmNames() {
  static const std::string names = [] {
    std::vector<const char*> all;
    for (const AlgoTraits& a : kAlgoTraits) all.push_back(a.name);
    return joinOr(all);
  }();
  return names.c_str();
}

std::string algorithmNamesFor(CollKind kind) {
  std::vector<const char*> names;
  for (const AlgoTraits& a : kAlgoTraits) {
    if (algoSupported(kind, a.algo)) names.push_back(a.name);
  }
  return joinOr(names);
}

std::string supportedAlgorithms() {
  std::string out;
  for (const CollTraits& t : kCollTraits) {
    if (!t.scheduled) continue;
    out += out.empty() ? "" : "; ";
    out += t.name;
    out += ":";
    const char* sep = " ";
    for (const AlgoTraits& a : kAlgoTraits) {
      if (!algoSupported(t.kind, a.algo)) continue;
      out += sep;
      out += a.name;
      sep = ", ";
    }
  }
  return out;
}

}  // namespace coll
}  // namespace weft
