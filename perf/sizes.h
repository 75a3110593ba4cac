// The byte sizes one run visits, as nccl-tests steps them: from -b to -e inclusive, multiplying
// by -f when it is above 1, otherwise adding -i.
#ifndef WEFT_PERF_SIZES_H_
#define WEFT_PERF_SIZES_H_

#include <cstddef>
#include <vector>

namespace weft::perf {

// A size of 0 is visited once; with a factor the next size after 0 is 1 byte (rows whose size
// is below one element per rank print as 0 bytes, as in nccl-tests). An overflowing step ends
// the list. stepBytes 0 with factor <= 1 visits minBytes alone.
std::vector<size_t> sizeSteps(size_t minBytes, size_t maxBytes, size_t stepBytes, size_t stepFactor);

}  // namespace weft::perf

#endif  // WEFT_PERF_SIZES_H_
