// Benchmarks timed at real-time priority (chrt, as perf/mpi_compare.sh runs 2 ranks) run into the
// kernel's RT throttling: Linux lets real-time tasks run 950 ms of every second
// (/proc/sys/kernel/sched_rt_runtime_us) and then stops them for 50 ms, which doubles whichever
// short timed block the stop falls into (perf/RESULTS.md, session 14). A rank that sleeps
// kRtPauseMs before every timed block never reaches the limit.
#ifndef WEFT_PERF_RT_PAUSE_H_
#define WEFT_PERF_RT_PAUSE_H_

namespace weft::perf {

constexpr int kRtPauseMs = 100;

// Whether the calling thread runs under a real-time policy (SCHED_FIFO or SCHED_RR).
bool underRealTimePolicy();

// Sleeps kRtPauseMs when the calling thread runs under a real-time policy; returns whether it did.
bool pauseForRtThrottling();

}  // namespace weft::perf

#endif  // WEFT_PERF_RT_PAUSE_H_
