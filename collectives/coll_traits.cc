// The lookups of coll_traits.h that are not constexpr.
#include "collectives/coll_traits.h"

#include <cctype>
#include <string>

namespace weft {
namespace coll {

bool collFromName(const char* name, CollKind* out) {
  std::string key;
  for (const char* c = name; *c != '\0'; ++c) {
    if (*c != '_') key += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
  }
  for (const CollTraits& t : kCollTraits) {
    if (t.scheduled && key == t.name) return *out = t.kind, true;
  }
  return false;
}

const char* scheduledCollNames() {
  static const std::string names = [] {
    int total = 0;
    for (const CollTraits& t : kCollTraits) total += t.scheduled ? 1 : 0;
    std::string out;
    int i = 0;
    for (const CollTraits& t : kCollTraits) {
      if (!t.scheduled) continue;
      out += i == 0 ? "" : i + 1 == total ? " or " : ", ";
      out += t.name;
      ++i;
    }
    return out;
  }();
  return names.c_str();
}

}  // namespace coll
}  // namespace weft
