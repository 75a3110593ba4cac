#include "transports/shm/near_pages.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace weft {
namespace shm {
namespace {

constexpr size_t kProbePage = 4096;
constexpr int kTrials = 8;  // on the VM measured, 8 split near from far as cleanly as 24

// Private pages that keep what they were given until destroyed.
class Decoys {
 public:
  Decoys() = default;
  ~Decoys() {
    for (auto [p, n] : maps_) munmap(p, n);
  }
  Decoys(const Decoys&) = delete;
  Decoys& operator=(const Decoys&) = delete;
  void take(size_t pages) {
    const size_t n = pages * kProbePage;
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p != MAP_FAILED) maps_.emplace_back(p, n);  // without it the round only draws worse
  }

 private:
  std::vector<std::pair<void*, size_t>> maps_;
};

// The cost above which a page of `costs` counts as far (see settleNear).
uint64_t farAbove(std::vector<uint64_t> costs) {
  const size_t k = costs.size() / 10;
  std::nth_element(costs.begin(), costs.begin() + static_cast<std::ptrdiff_t>(k), costs.end());
  return costs[k] + costs[k] / 4;
}

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

Status settleNear(int fd, char* base, size_t offset, size_t bytes, const PageProbe& probe, int maxRounds,
                  SettleReport* report) {
  *report = SettleReport{};
  const size_t pages = bytes / kProbePage;
  report->pages = pages;
  if (pages == 0) return Status::ok();
  std::vector<uint64_t> costs(pages);
  for (size_t i = 0; i < pages; ++i) costs[i] = probe(i, base + offset + i * kProbePage);
  const uint64_t limit = farAbove(costs);
  std::vector<size_t> far;
  for (size_t i = 0; i < pages; ++i) {
    if (costs[i] > limit) far.push_back(i);
  }
  report->farBefore = far.size();
  Decoys decoys;
  while (!far.empty() && report->rounds < maxRounds) {
    ++report->rounds;
    // A file system that cannot punch holes keeps its pages as they are (nothing was punched
    // when the first page fails; a later failure leaves the pages before it to be filled below).
    size_t punched = 0;
    while (punched < far.size() &&
           fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                     static_cast<off_t>(offset + far[punched] * kProbePage), kProbePage) == 0) {
      ++punched;
    }
    const size_t unpunched = far.size() - punched;
    far.resize(punched);
    decoys.take(far.size());
    std::vector<size_t> still;
    for (size_t i : far) {
      const off_t at = static_cast<off_t>(offset + i * kProbePage);
      int rc = posix_fallocate(fd, at, kProbePage);
      while (rc == EINTR) rc = posix_fallocate(fd, at, kProbePage);
      if (rc != 0) {
        return WEFT_ERROR(weftSystemError, "filling a re-drawn shared-memory page failed: %s (is /dev/shm full?)",
                          errnoText(rc).c_str());
      }
      if (probe(i, base + offset + i * kProbePage) > limit) still.push_back(i);
    }
    far.swap(still);
    if (unpunched > 0) {
      report->farAfter = far.size() + unpunched;
      return Status::ok();
    }
  }
  report->farAfter = far.size();
  return Status::ok();
}

}  // namespace shm
}  // namespace weft
