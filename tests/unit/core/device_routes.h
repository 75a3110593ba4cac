// The environment that sends a test's device FIFOs over one route, for the test fixtures that
// run each case over every route.
#pragma once

#include <cstdlib>
#include <string>

namespace weft {
namespace testing_routes {

// "p2p": GPU peer memory; any other route ("shm", "staged"): staged through pinned host memory
// over shared memory; "socket": staged over TCP sockets on the loopback interface.
inline void useRoute(const std::string& route) {
  if (route != "p2p") setenv("WEFT_P2P_DISABLE", "1", 1);
  if (route == "socket") {
    setenv("WEFT_SHM_DISABLE", "1", 1);
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  }
}

// Undoes useRoute.
inline void clearRoute() {
  unsetenv("WEFT_P2P_DISABLE");
  unsetenv("WEFT_SHM_DISABLE");
  unsetenv("WEFT_SOCKET_IFNAME");
}

}  // namespace testing_routes
}  // namespace weft
