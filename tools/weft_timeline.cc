// weft-timeline: draws the timelines WEFT_TRACE_FILE wrote (timeline.h) on one time axis.
//   weft-timeline [--timeline] FILES... --svg OUT.svg
// The same command as `weft-inspect --timeline`; kept on its own for the tests and for hosts
// without weft-inspect.
#include "timeline.h"

int main(int argc, char** argv) { return weft::tools::runTimelineCommand(argc, argv); }
