// weft-perf: the perf tester, a drop-in for nccl-tests on GPU or host memory, which can also run the
// same sweep through MPI, Gloo and NCCL (--compare). Run as weft-perf [collective] [flags], or
// through its all_reduce_perf, all_gather_perf, ... links.
#include <stdlib.h>

#include <cstdio>

#include "perf/launch.h"
#include "perf/options.h"

int main(int argc, char** argv) {
  using namespace weft::perf;
  // The flight recorder names who made the communicators (unless the user says otherwise).
  setenv("WEFT_RECORDER_FRONT_END", "weft-perf", 0);
  Options o;
  collectiveFromProgramName(argv[0], &o.coll);
  const ParseResult parsed = parseOptions(argc, argv, &o);
  if (!parsed.ok) {
    std::fprintf(stderr, "weft-perf: %s\n\n%s", parsed.error.c_str(), usageText(argv[0]).c_str());
    return 2;
  }
  if (o.help) {
    std::fputs(usageText(argv[0]).c_str(), stdout);
    return 0;
  }
  return launch(o, collectiveProgram(o.coll), argc, argv);
}
