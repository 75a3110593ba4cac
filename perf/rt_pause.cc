#include "perf/rt_pause.h"

#include <sched.h>

#include <chrono>
#include <thread>

namespace weft::perf {

bool underRealTimePolicy() {
  const int policy = sched_getscheduler(0);
  return policy == SCHED_FIFO || policy == SCHED_RR;
}

bool pauseForRtThrottling() {
  if (!underRealTimePolicy()) return false;
  std::this_thread::sleep_for(std::chrono::milliseconds(kRtPauseMs));
  return true;
}

}  // namespace weft::perf
