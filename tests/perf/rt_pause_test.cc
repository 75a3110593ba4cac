// The pause a timed block takes under a real-time policy (perf/rt_pause.h), on a thread of its own
// so that the test runner's policy is left alone.
#include "perf/rt_pause.h"

#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace weft::perf {
namespace {

TEST(RtPause, NoPauseUnderTheNormalPolicy) {
  bool realTime = true, paused = true;
  std::thread t([&] {
    sched_param none{};
    ASSERT_EQ(pthread_setschedparam(pthread_self(), SCHED_OTHER, &none), 0);
    realTime = underRealTimePolicy();
    paused = pauseForRtThrottling();
  });
  t.join();
  EXPECT_FALSE(realTime);
  EXPECT_FALSE(paused);
}

TEST(RtPause, ARealTimeThreadSleepsBeforeItsBlock) {
  bool realTime = false, paused = false, allowed = true;
  double sleptMs = 0;
  std::thread t([&] {
    sched_param p{};
    p.sched_priority = sched_get_priority_min(SCHED_FIFO);
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) != 0) {
      allowed = false;  // no CAP_SYS_NICE / RLIMIT_RTPRIO here
      return;
    }
    realTime = underRealTimePolicy();
    const auto t0 = std::chrono::steady_clock::now();
    paused = pauseForRtThrottling();
    sleptMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  });
  t.join();
  if (!allowed) GTEST_SKIP() << "this process may not use SCHED_FIFO";
  EXPECT_TRUE(realTime);
  EXPECT_TRUE(paused);
  EXPECT_GE(sleptMs, kRtPauseMs * 0.99);  // a sleep lasts at least as long as asked
}

}  // namespace
}  // namespace weft::perf
