// Backoff (base/os.h): how a waiting rank gives way when other threads need its core.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <atomic>
#include <thread>

#include "base/os.h"

namespace weft {
namespace {

long voluntarySwitches() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_nvcsw;
}

bool pinToCpu(pthread_t thread, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(thread, sizeof(set), &set) == 0;
}

// Yields that hand the core to a busy thread must turn the waiter to sleeping (a voluntary
// context switch per pause) instead of yielding a thousand times first (none: a yield leaves the
// thread runnable and counts as involuntary).
TEST(Backoff, SleepsOnceAYieldGivesTheCoreToABusyThread) {
  const int cpu = sched_getcpu();
  ASSERT_GE(cpu, 0);
  cpu_set_t saved;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved), 0);
  ASSERT_TRUE(pinToCpu(pthread_self(), cpu));
  std::atomic<bool> stop{false};
  std::atomic<bool> running{false};
  std::thread busy([&] {
    running = true;
    while (!stop.load(std::memory_order_relaxed)) cpuRelax();
  });
  ASSERT_TRUE(pinToCpu(busy.native_handle(), cpu));
  while (!running) sched_yield();

  constexpr uint32_t kSpins = 8, kPauses = 60;
  Backoff::setSpins(kSpins);
  Backoff backoff;
  const long before = voluntarySwitches();
  for (uint32_t i = 0; i < kSpins + kPauses; ++i) backoff.pause();
  const long slept = voluntarySwitches() - before;
  Backoff::setSpins(400);  // the default, for the tests after this one
  stop = true;
  busy.join();
  pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
  // The first yields give the core to the busy thread for a time slice each; the pauses after sleep.
  EXPECT_GE(slept, static_cast<long>(kPauses / 2)) << "after " << kPauses << " pauses past the spins";
}

}  // namespace
}  // namespace weft
