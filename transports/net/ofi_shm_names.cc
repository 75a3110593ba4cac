#include "transports/net/ofi_shm_names.h"

#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <mutex>

#include "base/log.h"
#include "base/os.h"

namespace weft {
namespace net {
namespace {

constexpr char kNamePrefix[] = "weft-ofi-";

}  // namespace

bool ofiShmProvider(const std::string& provName) { return provName.substr(0, provName.find(';')) == "shm"; }

std::string ofiShmSourceAddress() {
  static std::atomic<unsigned> next{0};
  char address[128];
  std::snprintf(address, sizeof(address), "fi_shm://%s%" PRIu64 "-%d-%u", kNamePrefix, processPidNamespace(),
                static_cast<int>(getpid()), next.fetch_add(1));
  return address;
}

size_t removeOfiShmOfDeadProcesses() {
  const std::string prefix = kNamePrefix;
  return unlinkShmSegments(prefix, [&prefix](const std::string& name) {
    uint64_t pidNs = 0;
    int pid = 0;
    unsigned n = 0;
    // The provider may append ":<uid>:<index>" to the name it was given.
    return std::sscanf(name.c_str() + 1 + prefix.size(), "%" SCNu64 "-%d-%u", &pidNs, &pid, &n) == 3 &&
           creatorGone(pid, pidNs) && !mappedByLiveProcess("/dev/shm" + name);
  });
}

void sweepOfiShmOnce(int rank) {
  static std::once_flag once;
  std::call_once(once, [rank] {
    const size_t removed = removeOfiShmOfDeadProcesses();
    if (removed > 0) {
      WEFT_LOG(kInfo, kNet,
               "rank %d: removed %zu libfabric shm-provider segments left in /dev/shm by processes that no longer run",
               rank, removed);
    }
  });
}

}  // namespace net
}  // namespace weft
