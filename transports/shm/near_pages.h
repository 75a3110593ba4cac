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

}  // namespace shm
}  // namespace weft

#endif  // WEFT_TRANSPORTS_SHM_NEAR_PAGES_H_
