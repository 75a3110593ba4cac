// What both wire drivers need before the first input.
#include "wire_drivers.h"

#include <cstdlib>
#include <mutex>

#include "base/log.h"

namespace weft {
namespace fuzz {

void initWireDrivers() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Every log line is formatted (TRACE, so the formatting is fuzzed too) but goes nowhere,
    // unless the caller chose otherwise; listeners bind to loopback only.
    setenv("WEFT_DEBUG", "TRACE", 0);
    setenv("WEFT_DEBUG_FILE", "/dev/null", 0);
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    reloadLogSettings();
  });
}

}  // namespace fuzz
}  // namespace weft
