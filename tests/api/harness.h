// Multi-rank test harness over the public API: runs a body on n ranks, as threads of this
// process or as forked processes, each with its own communicator from one unique id.
#ifndef WEFT_TESTS_API_HARNESS_H_
#define WEFT_TESTS_API_HARNESS_H_

#include <functional>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft_test {

enum class Mode { kThreads, kProcesses };
inline const char* modeName(Mode m) { return m == Mode::kThreads ? "threads" : "processes"; }

struct Rank {
  int rank = 0;
  int nranks = 1;
  weftComm_t comm = nullptr;
};

// Runs body(rank) on n ranks and waits for all. Failures inside a body are reported as test
// failures (for processes: through the child's exit status). Communicators are destroyed after
// the body returns. timeoutS bounds the whole run (processes are killed past it).
void runRanks(Mode mode, int n, const std::function<void(Rank&)>& body, int timeoutS = 300);

// Values and reference results that are exact in every datatype (small integers).
double inputValue(weftRedOp_t op, int rank, size_t i);
void storeValue(weftDataType_t type, void* buf, size_t i, double v);
double loadValue(weftDataType_t type, const void* buf, size_t i);
size_t typeSize(weftDataType_t type);
// The exact reduction of inputValue over ranks 0..n-1 at index i, rounded once to the type.
void storeExpected(weftDataType_t type, weftRedOp_t op, int nranks, size_t i, void* out);
// Number of elements of `got` (count elements of `type`) that differ bit-wise from `expected`.
size_t countMismatches(weftDataType_t type, const void* got, const void* expected, size_t count);

}  // namespace weft_test

#endif  // WEFT_TESTS_API_HARNESS_H_
