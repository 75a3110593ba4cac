// Zero-copy collectives on host memory: every rank addresses every rank's buffers (ranks that
// are threads of one process, or buffers in shared memory each process mapped), so each rank
// does its share of the work straight from the inputs into the outputs, with no FIFO between.
// Called by src/core (comm_zero_copy.cc) between two synchronisations over the FIFOs: all ranks
// have entered the call before any runs its share, and none returns before all are done.
//
// Shares: an all-reduce splits the elements into nRanks blocks; rank r reduces block r of every
// input and writes the result into every output (2 ranks: each rank reads 2 x B/2 and writes
// 2 x B/2, against ~3.5 B through FIFOs; large blocks out of place with streaming stores, so
// that no output line is read first). A reduce-scatter reduces its own output's block from
// every input; an all-gather and a broadcast copy into this rank's own output (pulling).
#ifndef WEFT_COLLECTIVES_DIRECT_HOST_H_
#define WEFT_COLLECTIVES_DIRECT_HOST_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/coll_traits.h"
#include "collectives/reduce.h"

namespace weft {
namespace coll {

struct DirectCall {
  CollKind kind = CollKind::kAllReduce;
  int rank = 0;
  int nRanks = 1;
  int root = 0;
  int64_t count = 0;  // the collective's count (collExtents)
  size_t elemSize = 1;
  ReduceFn reduce = nullptr;          // for the collectives that reduce
  ReduceCopyFn reduceCopy = nullptr;  // the same, storing the result twice
  uint32_t avgDivisor = 0;            // nRanks for avg, else 0
  // An all-reduce whose block is at least this many bytes, with no rank in place, writes its
  // outputs with stores that bypass the caches (WEFT_STREAM_STORE_BYTES; 0: never).
  int64_t streamBytes = 0;
  std::vector<const char*> send;      // every rank's send buffer, as this rank addresses it
  std::vector<char*> recv;            // every rank's receive buffer
};

// Elements [first, end) of the all-reduce block rank `rank` computes.
void directBlock(int64_t count, size_t elemSize, int nRanks, int rank, int64_t* first, int64_t* end);
// Copies every all-reduce block but `rank`'s from src to dst (same offsets): a rank whose buffer
// peers cannot address stages the blocks they work on through shared memory it lends them.
void copyOtherBlocks(const char* src, char* dst, int64_t count, size_t elemSize, int nRanks, int rank);

// Whether this rank's share of `call` writes its outputs with stores that bypass the caches: an
// all-reduce whose block is at least call.streamBytes, with no rank's buffers in place.
bool directStreams(const DirectCall& call);
// Whether `kind` has a zero-copy implementation.
bool directSupported(CollKind kind);
// Runs this rank's share of `call` (directSupported(call.kind)).
void runDirect(const DirectCall& call);

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_DIRECT_HOST_H_
