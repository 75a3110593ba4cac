// The comparison benchmarks' own flags (--libs, --iface, ...), taken out of the command line
// before the rest goes to weft-perf's parser (perf/options.h), which knows the nccl-tests
// flags (-b -e -f -n -w -d -o -x ...). Pure parsing, tested in tests/perf.
#ifndef WEFT_PERF_COMPARE_OPTIONS_H_
#define WEFT_PERF_COMPARE_OPTIONS_H_

#include <string>
#include <vector>

#include "perf/peer_libs.h"

namespace weft::perf {

struct CompareOptions {
  std::vector<std::string> libs = {"weft", "gloo", "mpi"};  // --libs: the first is compared with the others
  int blocks = 4;                                           // --blocks: timed blocks per library and size
  bool inPlace = false;                                     // --in-place: nccl-tests' in-place buffers
  PeerSettings peers;                                       // --iface --host --gloo-allreduce --gloo-store
};

// The library names --libs accepts.
const std::vector<std::string>& knownCompareLibs();

struct CompareParse {
  bool ok = true;
  std::string error;              // one sentence, without the program name
  std::vector<std::string> rest;  // argv[0] and every argument that is not ours, in order
};

// Takes our flags ("--libs a,b" or "--libs=a,b") out of argv[0..argc) into *opts.
CompareParse parseCompareOptions(int argc, const char* const* argv, CompareOptions* opts);

// The usage lines for our flags.
std::string compareUsageText();

}  // namespace weft::perf

#endif  // WEFT_PERF_COMPARE_OPTIONS_H_
