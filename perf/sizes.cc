// Size stepping for weft-perf (see sizes.h).
#include "perf/sizes.h"

namespace weft::perf {

std::vector<size_t> sizeSteps(size_t minBytes, size_t maxBytes, size_t stepBytes, size_t stepFactor) {
  std::vector<size_t> sizes;
  size_t size = minBytes;
  while (size <= maxBytes) {
    sizes.push_back(size);
    size_t next;
    if (stepFactor > 1) {
      if (size == 0) {
        next = 1;
      } else {
        next = size * stepFactor;
        if (next / stepFactor != size) break;  // overflow
      }
    } else {
      if (stepBytes == 0) break;
      next = size + stepBytes;
      if (next < size) break;  // overflow
    }
    size = next;
  }
  return sizes;
}

}  // namespace weft::perf
