// Zero-copy collectives on host memory (direct_host.h).
#include "collectives/direct_host.h"

#include <algorithm>
#include <cstring>

namespace weft {
namespace coll {
namespace {

// Work in pieces that stay in the core's cache between the reduction and the copies after it.
constexpr size_t kPieceBytes = 32768;

// out[self] = in[self] op in[self + 1] op ... op in[self - 1] (indices mod n) over this rank's
// block, then copied to every other out. Starting from this rank's own input and ending with
// `last`'s, whose output the final reduction also stores: in place, every input is read before
// the same elements of that rank's output are written. Each element is computed once, by one
// rank, so every rank holds the same bits.
void allReduceCached(const DirectCall& c, int64_t first, int64_t end, int64_t piece) {
  const int n = c.nRanks;
  const int last = (c.rank + n - 1) % n;
  char* mine = c.recv[c.rank];
  for (int64_t at = first; at < end; at += piece) {
    const size_t elems = static_cast<size_t>(std::min(piece, end - at));
    const size_t off = static_cast<size_t>(at) * c.elemSize;
    char* dst = mine + off;
    if (n == 1) {
      if (dst != c.send[0] + off) std::memcpy(dst, c.send[0] + off, elems * c.elemSize);
      continue;
    }
    const char* acc = c.send[c.rank] + off;
    for (int k = 1; k < n - 1; ++k) {
      c.reduce(dst, acc, c.send[(c.rank + k) % n] + off, elems, 0);
      acc = dst;
    }
    c.reduceCopy(dst, c.recv[last] + off, acc, c.send[last] + off, elems, c.avgDivisor);
    for (int k = 1; k < n - 1; ++k) std::memcpy(c.recv[(c.rank + k) % n] + off, dst, elems * c.elemSize);
  }
}

// The same sums in the same order, each piece reduced in a buffer of this thread's (which stays
// in the first-level cache) and streamed from there into every output with stores that bypass
// the caches: no output line is read for ownership first, and none evicts an input the next
// pieces read (2 ranks: each rank reads 2 x B/2 and writes 2 x B/2, and nothing more).
void allReduceStreamed(const DirectCall& c, int64_t first, int64_t end, int64_t piece) {
  alignas(64) static thread_local char result[kPieceBytes];
  const int n = c.nRanks;
  for (int64_t at = first; at < end; at += piece) {
    const size_t elems = static_cast<size_t>(std::min(piece, end - at));
    const size_t off = static_cast<size_t>(at) * c.elemSize;
    const char* acc = c.send[c.rank] + off;
    for (int k = 1; k < n; ++k) {
      c.reduce(result, acc, c.send[(c.rank + k) % n] + off, elems, k == n - 1 ? c.avgDivisor : 0);
      acc = result;
    }
    if (n == 1) std::memcpy(result, acc, elems * c.elemSize);
    for (int r = 0; r < n; ++r) copyStreamingUnfenced(c.recv[r] + off, result, elems * c.elemSize);
  }
  fenceStreams();
}

void allReduce(const DirectCall& c) {
  int64_t first = 0, end = 0;
  directBlock(c.count, c.elemSize, c.nRanks, c.rank, &first, &end);
  const int64_t piece = static_cast<int64_t>(std::max<size_t>(1, kPieceBytes / c.elemSize));
  if (directStreams(c)) {
    allReduceStreamed(c, first, end, piece);
  } else {
    allReduceCached(c, first, end, piece);
  }
}

// out[self][0, count) = block `rank` of every input, reduced, this rank's own first (in place,
// the output is the block of this rank's input that only this rank reads).
void reduceScatter(const DirectCall& c) {
  const int64_t piece = static_cast<int64_t>(std::max<size_t>(1, kPieceBytes / c.elemSize));
  const size_t base = static_cast<size_t>(c.count) * static_cast<size_t>(c.rank) * c.elemSize;
  const int n = c.nRanks;
  char* mine = c.recv[c.rank];
  for (int64_t at = 0; at < c.count; at += piece) {
    const size_t elems = static_cast<size_t>(std::min(piece, c.count - at));
    const size_t off = static_cast<size_t>(at) * c.elemSize;
    const char* acc = c.send[c.rank] + base + off;
    if (n == 1 && mine + off != acc) std::memcpy(mine + off, acc, elems * c.elemSize);
    for (int k = 1; k < n; ++k) {
      c.reduce(mine + off, acc, c.send[(c.rank + k) % n] + base + off, elems, k == n - 1 ? c.avgDivisor : 0);
      acc = mine + off;
    }
  }
}

// out[self][r * count, (r + 1) * count) = in[r] for every r (a copy onto itself is skipped).
void allGather(const DirectCall& c) {
  const size_t bytes = static_cast<size_t>(c.count) * c.elemSize;
  char* mine = c.recv[c.rank];
  for (int r = 0; r < c.nRanks; ++r) {
    char* dst = mine + bytes * static_cast<size_t>(r);
    if (dst != c.send[r]) std::memcpy(dst, c.send[r], bytes);
  }
}

// out[self] = in[root].
void broadcast(const DirectCall& c) {
  char* mine = c.recv[c.rank];
  const char* src = c.send[c.root];
  if (mine != src) std::memcpy(mine, src, static_cast<size_t>(c.count) * c.elemSize);
}

using DirectFn = void (*)(const DirectCall&);

DirectFn directFunction(CollKind kind) {
  switch (kind) {
    case CollKind::kAllReduce:
      return allReduce;
    case CollKind::kReduceScatter:
      return reduceScatter;
    case CollKind::kAllGather:
      return allGather;
    case CollKind::kBroadcast:
      return broadcast;
    default:
      return nullptr;
  }
}

}  // namespace

// Blocks start at multiples of 64 bytes where the element size allows, so no two ranks write
// one cache line.
void directBlock(int64_t count, size_t elemSize, int nRanks, int rank, int64_t* first, int64_t* end) {
  const int64_t align = elemSize <= 64 ? static_cast<int64_t>(64 / elemSize) : 1;
  int64_t per = (count + nRanks - 1) / nRanks;
  per = (per + align - 1) / align * align;
  *first = std::min(count, per * rank);
  *end = std::min(count, *first + per);
}

void copyOtherBlocks(const char* src, char* dst, int64_t count, size_t elemSize, int nRanks, int rank) {
  int64_t mineFirst = 0, mineEnd = 0;
  directBlock(count, elemSize, nRanks, rank, &mineFirst, &mineEnd);
  // Everything before this rank's block, then everything after it.
  std::memcpy(dst, src, static_cast<size_t>(mineFirst) * elemSize);
  const size_t tail = static_cast<size_t>(mineEnd) * elemSize;
  std::memcpy(dst + tail, src + tail, static_cast<size_t>(count - mineEnd) * elemSize);
}

// In place, the output lines are the inputs just read: in the cache, owned without a read.
bool directStreams(const DirectCall& c) {
  if (c.kind != CollKind::kAllReduce || c.streamBytes <= 0) return false;
  int64_t first = 0, end = 0;
  directBlock(c.count, c.elemSize, c.nRanks, c.rank, &first, &end);
  if (static_cast<size_t>(end - first) * c.elemSize < static_cast<size_t>(c.streamBytes)) return false;
  const size_t bytes = static_cast<size_t>(c.count) * c.elemSize;
  for (int r = 0; r < c.nRanks; ++r) {
    const char* s = c.send[static_cast<size_t>(r)];
    const char* d = c.recv[static_cast<size_t>(r)];
    if (!(s + bytes <= d || d + bytes <= s)) return false;
  }
  return true;
}

bool directSupported(CollKind kind) { return directFunction(kind) != nullptr; }

void runDirect(const DirectCall& call) {
  if (call.count > 0) directFunction(call.kind)(call);
}

}  // namespace coll
}  // namespace weft
