// The data weft-perf feeds a collective and the result it expects back, chosen so that the
// exact answer is known in every datatype, whatever order the library reduces in.
//
// All inputs are small integers (or products of +-1 and +-2) picked by a hash of (rank,
// element, check iteration), so that every element of every rank differs in a way a misplaced
// block or a missing contribution would show. Per datatype, let M be the largest integer up to
// which every integer is exact (int8 127, uint8 254 (255 is the sentinel), half 2048, bfloat16 256, f8e4m3 16,
// f8e5m2 8, float 2^24, ...) and P the largest power of two p with +-2^p exact (int8 6,
// uint8 7, half 15, f8e4m3 8, f8e5m2 15, others capped at 30).
//
//  - sum, avg: each input lies in [-V, V] (unsigned [0, V]) with V = min(1000, M / n), so every
//    partial sum of any subset of ranks stays within [-M, M] and is exact, in any order, even
//    when the library rounds to the type after each step. When n > M (e.g. 9+ ranks in
//    f8e5m2) V would be 0: then an element is +-1 on at most M ranks and 0 on the others
//    (rank r is nonzero at element i when (i + r + rep) % ceil(n / M) == 0).
//  - prod: inputs are +-1 or +-2 (no zeros, which would hide everything behind them; unsigned
//    types use +1/+2), with a 2 allowed only where (i + r + rep) % m == 0, m = max(2, ceil(n / P)),
//    so at most P factors of 2 meet in any partial product: every partial product is +-2^k,
//    k <= P, exact.
//  - min, max and data movement (allgather, broadcast, alltoall, sendrecv): inputs in
//    [-min(M, 100), min(M, 100)] (unsigned from 0); no arithmetic, so any value is exact.
//
// The expected sum/prod/min/max is therefore an exact integer. avg is the exact sum divided by
// n, rounded once to the type (integer types: C division, truncating toward zero).
#ifndef WEFT_PERF_EXPECTED_H_
#define WEFT_PERF_EXPECTED_H_

#include <cstddef>
#include <cstdint>

#include "perf/collectives.h"
#include "weft/weft.h"

namespace weft::perf {

enum class Pattern { kSum, kProd, kSpread };

// The input pattern a collective/op pair uses (kSpread for collectives that do not reduce).
Pattern patternFor(Collective coll, weftRedOp_t op);

// M and P above, for the type.
int64_t exactIntLimit(weftDataType_t t);
int exactPow2Limit(weftDataType_t t);

// What `rank` contributes at element `index` of its send buffer in check iteration `rep`.
int64_t inputValue(weftDataType_t t, Pattern p, int nranks, int rank, size_t index, int rep);

// The correct reduction over all ranks of inputValue(.., index, ..), as the type holds it.
double expectedReduction(weftDataType_t t, weftRedOp_t op, int nranks, size_t index, int rep);

// One rank's view of one check: what it ran and with which counts.
struct DataSpec {
  Collective coll = Collective::kAllReduce;
  weftDataType_t type = weftFloat32;
  weftRedOp_t op = weftSum;
  int nranks = 1;
  int rank = 0;
  int root = 0;
  int rep = 0;
  CollCounts counts;
};

// Writes this rank's inputs for elements [first, first + count) of its send pattern to buf[0..count).
void fillInput(const DataSpec& s, void* buf, size_t first, size_t count);
// Fills buf[0..count) with a value no expected result equals (the minimum of signed integer
// types, the maximum of unsigned ones, NaN in floating types), so that an element the
// collective never wrote counts as wrong.
void fillSentinel(weftDataType_t t, void* buf, size_t count);
// Counts the elements of recvbuff (counts.recvCount of them) that differ from the expected
// result on this rank; 0 on ranks whose receive buffer carries no result (reduce, non-root).
int64_t countWrong(const DataSpec& s, const void* recvbuff);

}  // namespace weft::perf

#endif  // WEFT_PERF_EXPECTED_H_
