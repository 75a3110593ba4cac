// Timelines read back (`weft-timeline`, and `weft-inspect --timeline`): the trace files that
// WEFT_TRACE_FILE made (src/core/trace.h), one or more ranks each, checked event by event and
// gathered per rank; which rank the others waited for; and the command that draws them
// (timeline_svg.h).
#ifndef WEFT_TOOLS_TIMELINE_H_
#define WEFT_TOOLS_TIMELINE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace weft {
namespace tools {

struct TimelineCall {
  std::string name;     // the collective kind ("allreduce", "sendrecv")
  std::string comm;     // communicator id (args.comm)
  int64_t call = -1;    // call number (args.call)
  int64_t startNs = 0;  // as written (CLOCK_REALTIME-aligned)
  int64_t endNs = 0;
  int64_t bytes = 0;
  std::string algo;
  std::string result;
};

struct TimelineWait {
  int64_t startNs = 0;
  int64_t endNs = 0;
  int peer = -1;
};

struct RankTimeline {
  int rank = -1;         // the events' pid (Weft writes the rank)
  std::string label;     // process_name ("rank 3 (host a)")
  std::string file;
  std::vector<TimelineCall> calls;  // in start order
  std::vector<TimelineWait> waits;  // level 2's wait events
};

// Parses one trace file's text (`file` names it in messages) and adds its ranks to *ranks;
// false with *error ("FILE: offset N: ...", or "FILE: event K: ...") for bad JSON or an event
// that is not well-formed: name, ph, ts, pid, tid of the right types; X with dur; E matched by
// a B of its (pid, tid); timestamps that never go back on one thread.
bool parseTraceText(const std::string& file, const std::string& text, std::vector<RankTimeline>* ranks,
                    std::string* error);
bool loadTraceFile(const std::string& file, std::vector<RankTimeline>* ranks, std::string* error);

// The rank the others waited for: over every call that several ranks made (same communicator and
// number), how much later than the first rank each rank entered it; the straggler is the rank
// with the most such lateness in all. rank -1 when no call was made by two ranks.
struct Straggler {
  int rank = -1;
  int64_t lateNs = 0;       // its total lateness
  std::string worstCall;    // the call it was latest to ("allreduce #12")
  int64_t worstLateNs = 0;
};
Straggler findStraggler(const std::vector<RankTimeline>& ranks);

// `--timeline FILES... --svg OUT` (argv[0] is the program): reads the files, writes the SVG,
// prints a line per rank and the straggler. Returns the process exit status.
int runTimelineCommand(int argc, char** argv);

}  // namespace tools
}  // namespace weft

#endif  // WEFT_TOOLS_TIMELINE_H_
