// Which of several blocks of shared memory answers this CPU fastest.
//
// A virtual machine may hide its host's NUMA nodes: the guest sees one node, yet some of its
// pages live in memory attached to the host's other socket. A cache line on such a page costs
// every transfer between two cores of the near socket a round trip to the far one (measured on
// the 2-vCPU Intel VM: 0.15 us per two-core exchange on a near page, 0.30 us on a far one, about
// half of the pages each, fixed per page). The FIFO's control lines (the slot descriptors a
// receiver polls and the tail its sender reads) decide a small message's latency, so the
// receiver places them on the nearest of a few candidate blocks (shm_fifo.cc).
//
// A far page shows in the time a load from memory takes (the same VM: a flushed line reloads in
// ~350 cycles from a near page, ~470 from a far one), so one side can tell without its peer.
#ifndef WEFT_TRANSPORTS_SHM_NEAR_PAGES_H_
#define WEFT_TRANSPORTS_SHM_NEAR_PAGES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"

namespace weft {
namespace shm {

// The cost of reading `line` (block `block` of the candidates) from memory; smaller is nearer.
using PageProbe = std::function<uint64_t(size_t block, const void* line)>;

// x86-64: the fewest cycles over a few trials of flushing `line` from every cache and loading it
// again. Elsewhere (no portable flush) 0: every page looks alike and the first block is kept.
uint64_t reloadCycles(const void* line);

// The index of the block, among `nBlocks` blocks of `blockBytes` from `base`, whose slowest page
// (by `probe`, one line each) is fastest; the lowest index among equals. `costs`, when given,
// receives each block's cost (for the log).
size_t nearestBlock(const char* base, size_t blockBytes, size_t nBlocks, const PageProbe& probe,
                    std::vector<uint64_t>* costs = nullptr);

// What settleNear did: pages looked at, far ones before and after, rounds of re-drawing.
struct SettleReport {
  size_t pages = 0;
  size_t farBefore = 0;
  size_t farAfter = 0;
  int rounds = 0;
};

// Re-draws the far pages of [offset, offset + bytes) of the shared-memory file `fd`, mapped at
// `base` with its pages allocated, until every page is near or `maxRounds` rounds pass: a far
// page's hole is punched and filled anew, while a private decoy page holds the page just freed
// (the kernel's page lists would hand it straight back). A page is far when its cost is more than
// 1.25x the 10th percentile of the range (the near level), so memory that is all alike is left
// as it is. The decoys are released at the end. No page is left a hole: a failure to fill one
// again (no space in /dev/shm) is an error, and the caller fails as for any reservation. On the
// VM measured, two cores stream 256 KiB slots at 16 GB/s through near pages, 8 through far ones
// and 11 through pages as they come.
[[nodiscard]] Status settleNear(int fd, char* base, size_t offset, size_t bytes, const PageProbe& probe, int maxRounds,
                                SettleReport* report);

}  // namespace shm
}  // namespace weft

#endif  // WEFT_TRANSPORTS_SHM_NEAR_PAGES_H_
