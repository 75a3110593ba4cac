// Logging: one macro, level x subsystem, printf-checked, each line prefixed "host:pid:rank".
//   WEFT_LOG(kInfo, kNet, "rank %d: ring %d uses %s to rank %d", ...);
// WEFT_DEBUG picks the level, WEFT_DEBUG_SUBSYS the subsystems, WEFT_DEBUG_FILE the file.
// The library never writes to stdout.
#ifndef WEFT_BASE_LOG_H_
#define WEFT_BASE_LOG_H_

#include <cstdint>

namespace weft {

enum LogLevel : int { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

enum LogSubsys : uint32_t {
  kInit = 1u << 0,
  kColl = 1u << 1,
  kP2p = 1u << 2,
  kShm = 1u << 3,
  kNet = 1u << 4,
  kBoot = 1u << 5,
  kTuning = 1u << 6,
  kEnv = 1u << 7,
  kGraph = 1u << 8,
  kAllSubsys = 0xffffffffu,
};

// Cheap check, so that arguments of disabled lines are not evaluated.
bool logEnabled(LogLevel level, uint32_t subsys);
void logMessage(LogLevel level, uint32_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// The rank shown in this thread's log lines (-1: not known yet). Set by src/core while a
// thread works for a communicator.
void setLogRank(int rank);
int logRank();

// Re-reads WEFT_DEBUG / WEFT_DEBUG_SUBSYS / WEFT_DEBUG_FILE (tests change them).
void reloadLogSettings();

}  // namespace weft

#define WEFT_LOG(level, subsys, ...)                                                  \
  do {                                                                                \
    if (::weft::logEnabled(::weft::level, ::weft::subsys)) {                          \
      ::weft::logMessage(::weft::level, ::weft::subsys, __FILE__, __LINE__, __VA_ARGS__); \
    }                                                                                 \
  } while (0)

#endif  // WEFT_BASE_LOG_H_
