// printf into a std::string, for weft-perf's text and picture output.
#ifndef WEFT_PERF_FORMAT_H_
#define WEFT_PERF_FORMAT_H_

#include <string>

namespace weft::perf {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace weft::perf

#endif  // WEFT_PERF_FORMAT_H_
