#include "base/log.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <pthread.h>
#include <string>

#include "base/os.h"
#include "base/params.h"

namespace weft {
namespace {

struct Settings {
  std::atomic<int> level{-1};  // -1: not loaded yet
  std::atomic<uint32_t> subsys{kAllSubsys};
  std::mutex fileMutex;
  FILE* file = nullptr;  // nullptr: stderr
};

Settings& settings();

Settings* makeSettings() {
  auto* s = new Settings();  // never destroyed: logging works during exit
  // A process forked while another thread (the root listener, a proxy) writes a log line must
  // not inherit fileMutex locked: hold it across fork() and give the child a fresh one.
  pthread_atfork([] { settings().fileMutex.lock(); }, [] { settings().fileMutex.unlock(); },
                 [] { new (&settings().fileMutex) std::mutex(); });
  return s;
}

Settings& settings() {
  static Settings* s = makeSettings();
  return *s;
}

thread_local int tlsRank = -1;

uint32_t subsysBit(const std::string& name) {
  static const struct {
    const char* name;
    uint32_t bit;
  } kNames[] = {{"INIT", kInit}, {"COLL", kColl},     {"P2P", kP2p}, {"SHM", kShm},    {"NET", kNet},
                {"BOOT", kBoot}, {"TUNING", kTuning}, {"ENV", kEnv}, {"GRAPH", kGraph}, {"ALL", kAllSubsys}};
  for (const auto& n : kNames) {
    if (name == n.name) return n.bit;
  }
  return 0;
}

uint32_t parseSubsys(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), ::toupper);
  bool exclude = !text.empty() && text[0] == '^';
  if (exclude) text.erase(0, 1);
  uint32_t mask = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    mask |= subsysBit(text.substr(start, comma - start));
    start = comma + 1;
  }
  return exclude ? ~mask : mask;
}

bool isKnownLevel(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), ::toupper);
  return text.empty() || text == "NONE" || text == "WARN" || text == "INFO" || text == "TRACE" || text == "VERSION";
}

int parseLevel(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), ::toupper);
  if (text == "NONE") return kNone;
  if (text == "INFO") return kInfo;
  if (text == "TRACE") return kTrace;
  return kWarn;  // WARN, VERSION and anything unknown
}

std::string expandFileName(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[++i];
      if (c == 'h') out += hostName();
      else if (c == 'p') out += std::to_string(getpid());
      else out += c;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

void load() {
  Settings& s = settings();
  // Read the file setting before publishing the level, so concurrent loggers see a complete state.
  std::string fileName = params::DebugFile();
  {
    std::lock_guard<std::mutex> lock(s.fileMutex);
    if (s.file) std::fclose(s.file);
    s.file = fileName.empty() ? nullptr : std::fopen(expandFileName(fileName).c_str(), "a");
  }
  s.subsys.store(parseSubsys(params::DebugSubsys()));
  const std::string level = params::Debug();
  s.level.store(parseLevel(level));
  // The level is published: this warning does not re-enter load().
  if (!isKnownLevel(level)) {
    WEFT_LOG(kWarn, kEnv, "WEFT_DEBUG=\"%s\" is not a log level (NONE, WARN, INFO, TRACE); using WARN",
             level.c_str());
  }
}

}  // namespace

bool logEnabled(LogLevel level, uint32_t subsys) {
  Settings& s = settings();
  int current = s.level.load(std::memory_order_relaxed);
  if (current < 0) {
    static std::once_flag once;
    std::call_once(once, load);
    current = s.level.load();
  }
  if (level > current) return false;
  // Warnings always show; INFO/TRACE are filtered by subsystem.
  return level == kWarn || (s.subsys.load(std::memory_order_relaxed) & subsys) != 0;
}

void logMessage(LogLevel level, uint32_t subsys, const char* file, int line, const char* fmt, ...) {
  char body[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(body, sizeof(body), fmt, ap);
  va_end(ap);
  const char* levelName = level == kWarn ? "WARN" : level == kInfo ? "INFO" : "TRACE";
  char rankText[16];
  if (tlsRank >= 0) std::snprintf(rankText, sizeof(rankText), "%d", tlsRank);
  else std::snprintf(rankText, sizeof(rankText), "-");
  char lineText[2300];
  if (level == kTrace) {
    const char* base = std::strrchr(file, '/');
    std::snprintf(lineText, sizeof(lineText), "%s:%d:%s weft %s %s:%d %s\n", hostName().c_str(), getpid(), rankText,
                  levelName, base ? base + 1 : file, line, body);
  } else {
    std::snprintf(lineText, sizeof(lineText), "%s:%d:%s weft %s %s\n", hostName().c_str(), getpid(), rankText,
                  levelName, body);
  }
  Settings& s = settings();
  std::lock_guard<std::mutex> lock(s.fileMutex);
  FILE* out = s.file ? s.file : stderr;
  std::fputs(lineText, out);
  std::fflush(out);
}

void setLogRank(int rank) { tlsRank = rank; }
int logRank() { return tlsRank; }

void reloadLogSettings() { load(); }

}  // namespace weft
