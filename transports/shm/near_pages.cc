#include "transports/shm/near_pages.h"

#include <algorithm>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace weft {
namespace shm {
namespace {

constexpr size_t kProbePage = 4096;
constexpr int kTrials = 24;  // the minimum settles within a dozen on the VMs measured

}  // namespace

uint64_t reloadCycles(const void* line) {
#if defined(__x86_64__)
  uint64_t best = UINT64_MAX;
  for (int t = 0; t < kTrials; ++t) {
    _mm_clflush(line);
    _mm_mfence();
    unsigned aux = 0;
    const uint64_t t0 = __rdtscp(&aux);
    (void)*static_cast<const volatile char*>(line);
    const uint64_t t1 = __rdtscp(&aux);
    best = std::min(best, t1 - t0);
  }
  return best;
#else
  (void)line;
  return 0;
#endif
}

size_t nearestBlock(const char* base, size_t blockBytes, size_t nBlocks, const PageProbe& probe,
                    std::vector<uint64_t>* costs) {
  size_t best = 0;
  uint64_t bestCost = UINT64_MAX;
  for (size_t b = 0; b < nBlocks; ++b) {
    uint64_t cost = 0;
    for (size_t off = 0; off < blockBytes; off += kProbePage) cost = std::max(cost, probe(b, base + b * blockBytes + off));
    if (costs != nullptr) costs->push_back(cost);
    if (cost < bestCost) best = b, bestCost = cost;
  }
  return best;
}

}  // namespace shm
}  // namespace weft
