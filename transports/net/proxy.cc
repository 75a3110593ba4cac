#include "transports/net/proxy.h"

#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

#include "base/log.h"

namespace weft {
namespace net {

Proxy::Proxy(std::string name) : name_(std::move(name)) {}

Proxy::~Proxy() {
  stop_.store(true);
  if (thread_.joinable()) {
    wake();
    thread_.join();
  }
  if (eventFd_ >= 0) ::close(eventFd_);
}

Status Proxy::start() {
  if (thread_.joinable()) return Status::ok();
  eventFd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (eventFd_ < 0) {
    return WEFT_ERROR(weftSystemError, "network proxy: eventfd failed: %s (too many open files? check ulimit -n)",
                      errnoText(errno).c_str());
  }
  try {
    thread_ = std::thread([this] { loop(); });
  } catch (const std::system_error& e) {
    return WEFT_ERROR(weftSystemError, "network proxy: cannot start a thread: %s (check ulimit -u)", e.what());
  }
  std::string threadName = name_.substr(0, 15);
  pthread_setname_np(thread_.native_handle(), threadName.c_str());
  return Status::ok();
}

void Proxy::add(std::shared_ptr<ProxyTask> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
    ++generation_;
  }
  wake();
}

void Proxy::remove(const ProxyTask* task) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = std::find_if(tasks_.begin(), tasks_.end(), [&](const auto& t) { return t.get() == task; });
  if (it == tasks_.end()) return;
  tasks_.erase(it);
  uint64_t wanted = ++generation_;
  if (!thread_.joinable() || stop_.load()) return;
  lock.unlock();
  wake();
  lock.lock();
  // The proxy drops its references when it takes the new list at the start of its next turn.
  turnDone_.wait(lock, [&] { return runningGeneration_ >= wanted || stop_.load(); });
}

void Proxy::wake() {
  // Pairs with the store of sleeping_ in sleepUntilWoken(): either the proxy sees the work
  // published before this call, or this call sees it asleep.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!sleeping_.load(std::memory_order_relaxed) || eventFd_ < 0) return;
  uint64_t one = 1;
  ssize_t n = ::write(eventFd_, &one, sizeof(one));
  (void)n;  // EAGAIN: the counter is already non-zero, the proxy wakes anyway
}

void Proxy::loop() {
  std::vector<std::shared_ptr<ProxyTask>> tasks;
  uint64_t seen = ~uint64_t{0};
  int idleTurns = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (generation_ != seen) {
        tasks = tasks_;
        seen = runningGeneration_ = generation_;
        turnDone_.notify_all();
      }
    }
    bool progressed = false;
    for (const auto& t : tasks) progressed |= t->progress();
    if (progressed) {
      idleTurns = 0;
      continue;
    }
    if (++idleTurns < kSpinTurns) {
      sched_yield();
      continue;
    }
    idleTurns = 0;
    sleepUntilWoken(tasks);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  tasks.clear();
  runningGeneration_ = generation_;
  turnDone_.notify_all();
}

void Proxy::sleepUntilWoken(const std::vector<std::shared_ptr<ProxyTask>>& tasks) {
  sleeping_.store(true, std::memory_order_seq_cst);
  // Work published just before sleeping_ became visible would otherwise wait for the poll.
  bool progressed = false;
  for (const auto& t : tasks) progressed |= t->progress();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    progressed = progressed || generation_ != runningGeneration_;
  }
  if (progressed || stop_.load()) {
    sleeping_.store(false, std::memory_order_relaxed);
    return;
  }
  static thread_local std::vector<pollfd> fds;
  fds.clear();
  fds.push_back({eventFd_, POLLIN, 0});
  bool anyWithoutFd = false;
  for (const auto& t : tasks) {
    int fd = t->pollFd();
    if (fd < 0) {
      anyWithoutFd = anyWithoutFd || fd == ProxyTask::kPollSlice;
      continue;
    }
    fds.push_back({fd, t->pollEvents(), 0});
  }
  timespec timeout;
  timeout.tv_sec = 0;
  timeout.tv_nsec = anyWithoutFd ? kPollSliceUs * 1000L : 100L * 1000 * 1000;
  int n = ::ppoll(fds.data(), fds.size(), &timeout, nullptr);
  if (n > 0 && (fds[0].revents & POLLIN)) {
    uint64_t value = 0;
    ssize_t r = ::read(eventFd_, &value, sizeof(value));
    (void)r;
  }
  sleeping_.store(false, std::memory_order_relaxed);
}

}  // namespace net
}  // namespace weft
