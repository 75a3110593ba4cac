#include "base/params.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <set>

#include "base/log.h"

extern char** environ;

namespace weft {
namespace params {
namespace {

const char* typeName(int64_t*) { return "int64_t"; }
const char* typeName(bool*) { return "bool"; }
const char* typeName(std::string*) { return "string"; }

std::string toText(int64_t v) { return std::to_string(v); }
std::string toText(bool v) { return v ? "1" : "0"; }
std::string toText(const std::string& v) { return v; }

bool parse(const char* text, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 0);
  if (errno != 0 || end == text) return false;
  // Accept K/M/G suffixes (powers of 1024), as sizes in this field are written.
  int64_t mult = 1;
  if (*end == 'K' || *end == 'k') mult = 1LL << 10, ++end;
  else if (*end == 'M' || *end == 'm') mult = 1LL << 20, ++end;
  else if (*end == 'G' || *end == 'g') mult = 1LL << 30, ++end;
  if (*end != '\0') return false;
  *out = static_cast<int64_t>(v) * mult;
  return true;
}

bool parse(const char* text, bool* out) {
  std::string t(text);
  std::transform(t.begin(), t.end(), t.begin(), ::tolower);
  if (t == "1" || t == "true" || t == "yes" || t == "on") return *out = true, true;
  if (t == "0" || t == "false" || t == "no" || t == "off" || t.empty()) return *out = false, true;
  return false;
}

bool parse(const char* text, std::string* out) {
  *out = text;
  return true;
}

// The names of the warnings given (variable=value). A plain pthread mutex with fork handlers:
// a rank forked while another thread (the root listener, a proxy) holds it must not find it
// locked forever in the child (issue 13).
pthread_mutex_t warnedMutex = PTHREAD_MUTEX_INITIALIZER;
std::set<std::string>* warned = new std::set<std::string>();  // never destroyed: used at exit

void lockWarned() { pthread_mutex_lock(&warnedMutex); }
void unlockWarned() { pthread_mutex_unlock(&warnedMutex); }
void resetWarnedInChild() { pthread_mutex_init(&warnedMutex, nullptr); }
const int kForkHandlers = pthread_atfork(lockWarned, unlockWarned, resetWarnedInChild);

// True the first time this key is seen in this process.
bool firstTime(const std::string& key) {
  (void)kForkHandlers;
  lockWarned();
  const bool first = warned->insert(key).second;
  unlockWarned();
  return first;
}

// Warn once per variable and value about a value that does not parse.
void warnBadValue(const char* env, const char* text, const char* type) {
  if (!firstTime(std::string(env) + "=" + text)) return;
  WEFT_LOG(kWarn, kEnv, "WEFT_%s=\"%s\" is not a valid %s; using the default", env, text, type);
}

// The allowed values of the integer parameters that have a WEFT_PARAM_RANGE.
#define WEFT_PARAM(type, name, env, def, help) constexpr const char* kEnv##name = env;
#include "base/params_table.h"
#undef WEFT_PARAM
struct Range {
  const char* env;
  int64_t lo, hi;
};
const Range kRanges[] = {
#define WEFT_PARAM(type, name, env, def, help)
#define WEFT_PARAM_RANGE(name, lo, hi) {kEnv##name, lo, hi},
#include "base/params_table.h"
#undef WEFT_PARAM_RANGE
#undef WEFT_PARAM
};

// A value outside its range is warned about once, with the value used instead.
int64_t clampToRange(const char* env, const char* text, int64_t v) {
  for (const Range& r : kRanges) {
    if (std::strcmp(r.env, env) != 0) continue;
    if (v >= r.lo && v <= r.hi) return v;
    const int64_t used = v < r.lo ? r.lo : r.hi;
    if (firstTime(std::string(env) + "=" + text)) {
      WEFT_LOG(kWarn, kEnv, "WEFT_%s=%s is %s the %s allowed value; using %lld (allowed: %lld..%lld)", env, text,
               v < r.lo ? "below" : "above", v < r.lo ? "smallest" : "largest", static_cast<long long>(used),
               static_cast<long long>(r.lo), static_cast<long long>(r.hi));
    }
    return used;
  }
  return v;
}

template <typename T>
T checkRange(const char*, const char*, T v) {
  return v;
}
template <>
int64_t checkRange(const char* env, const char* text, int64_t v) {
  return clampToRange(env, text, v);
}

template <typename T>
T read(const char* env, T def) {
  std::string name = std::string("WEFT_") + env;
  const char* text = std::getenv(name.c_str());
  if (text == nullptr) return def;
  T value;
  if (!parse(text, &value)) {
    warnBadValue(env, text, typeName(static_cast<T*>(nullptr)));
    return def;
  }
  return checkRange(env, text, value);
}

size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

#define WEFT_PARAM(type, name, env, def, help) \
  type name() { return read<type>(env, type(def)); }
#include "base/params_table.h"
#undef WEFT_PARAM

namespace {

int64_t firstInteger(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    long long x = std::strtoll(v, &end, 10);
    if (end != v && *end == '\0') return x;
  }
  return -1;
}

}  // namespace

int64_t launcherRank() { return firstInteger({"OMPI_COMM_WORLD_RANK", "PMI_RANK"}); }
int64_t launcherSize() { return firstInteger({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}); }

std::vector<ParamInfo> all() {
  std::vector<ParamInfo> out;
#define WEFT_PARAM(T, NAME, ENV, DEF, HELP)              \
  {                                                      \
    ParamInfo p;                                         \
    p.env = std::string("WEFT_") + ENV;                  \
    p.type = typeName(static_cast<T*>(nullptr));         \
    p.defaultValue = toText(T(DEF));                     \
    p.value = toText(NAME());                            \
    p.isSet = std::getenv(p.env.c_str()) != nullptr;     \
    p.help = HELP;                                       \
    out.push_back(p);                                    \
  }
#include "base/params_table.h"
#undef WEFT_PARAM
  return out;
}

std::vector<std::pair<std::string, std::string>> unknownVariables() {
  std::vector<std::string> known;
#define WEFT_PARAM(type, name, env, def, help) known.push_back(std::string("WEFT_") + env);
#include "base/params_table.h"
#undef WEFT_PARAM
  std::vector<std::pair<std::string, std::string>> unknown;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    std::string var(*e, eq ? static_cast<size_t>(eq - *e) : std::strlen(*e));
    if (var.rfind("WEFT_", 0) != 0) continue;
    if (std::find(known.begin(), known.end(), var) != known.end()) continue;
    std::string best;
    size_t bestDistance = 4;  // suggest only names within three edits
    for (const auto& k : known) {
      size_t d = editDistance(var, k);
      if (d < bestDistance) bestDistance = d, best = k;
    }
    unknown.emplace_back(var, best);
  }
  std::sort(unknown.begin(), unknown.end());
  return unknown;
}

void warnUnknownOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const auto& [var, suggestion] : unknownVariables()) {
      if (suggestion.empty()) {
        WEFT_LOG(kWarn, kEnv, "%s is not a Weft parameter and is ignored (weft-topo --params lists them)",
                 var.c_str());
      } else {
        WEFT_LOG(kWarn, kEnv, "%s is not a Weft parameter and is ignored; did you mean %s?", var.c_str(),
                 suggestion.c_str());
      }
    }
  });
}

}  // namespace params
}  // namespace weft
