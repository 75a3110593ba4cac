// What each collective under test means to the perf tester: its names, whether it reduces or
// has a root, how a byte size becomes element counts and buffer offsets, and how a time
// becomes algorithm and bus bandwidth (the nccl-tests conventions, formats.md §1).
#ifndef WEFT_PERF_COLLECTIVES_H_
#define WEFT_PERF_COLLECTIVES_H_

#include <cstddef>

namespace weft::perf {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAllToAll, kSendRecv };
constexpr int kNumCollectives = 7;

const char* collectiveName(Collective coll);                  // "allreduce"
const char* collectiveProgram(Collective coll);               // "all_reduce_perf"
bool collectiveFromName(const char* name, Collective* coll);  // accepts "allreduce", "all_reduce", "all_reduce_perf"
bool collectiveReduces(Collective coll);                      // uses the op column
bool collectiveRooted(Collective coll);                       // uses the root column

// Element counts for one row, derived from the row's byte size as nccl-tests does.
struct CollCounts {
  size_t sendCount = 0;          // elements in the send buffer
  size_t recvCount = 0;          // elements in the receive buffer
  size_t paramCount = 0;         // the count argument of the call (per rank for gather/scatter/alltoall)
  size_t sendInplaceOffset = 0;  // in-place: sendbuff = buffer + this (elements)
  size_t recvInplaceOffset = 0;  // in-place: recvbuff = buffer + this (elements)
};

CollCounts collCounts(Collective coll, size_t bytes, size_t typeSize, int nranks);

// The bytes printed in the size column: the larger of the send and receive buffers.
size_t rowBytes(const CollCounts& c, size_t typeSize);

// busbw = algbw x busBwFactor; algbw = algBytes / seconds. GB/s are 1e9 bytes/s.
double busBwFactor(Collective coll, int nranks);
double algBytes(Collective coll, size_t paramCount, size_t typeSize, int nranks);
void bandwidth(Collective coll, size_t paramCount, size_t typeSize, int nranks, double seconds, double* algBwGBs,
               double* busBwGBs);

}  // namespace weft::perf

#endif  // WEFT_PERF_COLLECTIVES_H_
