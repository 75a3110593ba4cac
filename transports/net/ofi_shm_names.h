// Names for the endpoints of libfabric's shm provider, and the removal of those that killed
// processes left. The provider backs each endpoint with a POSIX shared-memory segment
// (/dev/shm, 16 MiB here) named after the endpoint, and unlinks it when the endpoint closes or
// the library is unloaded at exit(); a rank killed, or ended by _exit() (weft-perf's forked
// ranks, whose network table keeps its endpoint for the life of the process), leaves it behind.
// Left to itself the provider names the segment "<pid>:<uid>:<index>", which says nothing of the
// pid namespace the pid belongs to, so nobody could tell it is dead. OfiDomain therefore names
// shm endpoints "weft-ofi-<pid namespace>-<pid>-<n>", and the first domain a process opens
// removes the segments of that form whose creator no longer runs in this namespace.
#ifndef WEFT_TRANSPORTS_NET_OFI_SHM_NAMES_H_
#define WEFT_TRANSPORTS_NET_OFI_SHM_NAMES_H_

#include <cstddef>
#include <string>

namespace weft {
namespace net {

// Whether provider `provName` ("shm", "shm;ofi_rxm") keeps its endpoints in /dev/shm segments
// named after the endpoint's source address.
bool ofiShmProvider(const std::string& provName);
// A new source address for a shm-provider endpoint of this process ("fi_shm://weft-ofi-...").
std::string ofiShmSourceAddress();
// Removes the /dev/shm segments named by ofiShmSourceAddress whose creator ran in this pid
// namespace, no longer runs, and which no running process maps (a peer that mapped it); returns
// how many. Every other segment is left alone.
size_t removeOfiShmOfDeadProcesses();
// The same, once per process.
void sweepOfiShmOnce(int rank);

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_OFI_SHM_NAMES_H_
