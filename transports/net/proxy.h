// The proxy: one thread per network transport instance (that is, per communicator) that moves
// bytes between the connections' slot queues and the network, so that the executor only ever
// touches memory (../shared/DESIGN.md, "Data flow" step 4). The executor fills a send slot and
// posts it; the proxy puts it on the wire. The proxy fills a receive slot from the wire; the
// executor reduces from it and releases it.
//
// Tasks (one per connection, plus the socket listener) register with the proxy. Each turn the
// proxy calls every task's progress(); when none moves it spins a little, then sleeps in
// poll(2) on the tasks' file descriptors and an eventfd that wake() writes. wake() costs a
// syscall only while the proxy sleeps, so a busy pipeline pays nothing for it.
#ifndef WEFT_TRANSPORTS_NET_PROXY_H_
#define WEFT_TRANSPORTS_NET_PROXY_H_

#include <poll.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"

namespace weft {
namespace net {

class ProxyTask {
 public:
  virtual ~ProxyTask() = default;
  // Moves whatever can move without blocking; true when something moved.
  virtual bool progress() = 0;
  // The descriptor and events to sleep on while nothing moves: kPollSlice (the proxy then
  // sleeps at most kPollSliceUs between turns) or kNothingToWaitFor (a finished task).
  static constexpr int kPollSlice = -1;
  static constexpr int kNothingToWaitFor = -2;
  virtual int pollFd() const { return kPollSlice; }
  virtual short pollEvents() const { return POLLIN; }
};

class Proxy {
 public:
  // `name` appears in the thread name and in log lines ("weft-net-sock").
  explicit Proxy(std::string name);
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Starts the thread (once); an error when the OS refuses a thread or an eventfd.
  Status start();
  // From any thread. The proxy calls the task until remove().
  void add(std::shared_ptr<ProxyTask> task);
  // From any thread but the proxy's: when it returns, the proxy no longer runs `task` and
  // holds no reference to it.
  void remove(const ProxyTask* task);
  // Makes a sleeping proxy take a turn now. Cheap when it is awake. Safe from any thread.
  void wake();

  // Longest a sleeping proxy goes without a turn when some task has no descriptor.
  static constexpr int kPollSliceUs = 200;
  // Turns without progress before the proxy sleeps.
  static constexpr int kSpinTurns = 64;

 private:
  void loop();
  void sleepUntilWoken(const std::vector<std::shared_ptr<ProxyTask>>& tasks);

  std::string name_;
  std::thread thread_;
  int eventFd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<bool> sleeping_{false};

  std::mutex mutex_;  // guards tasks_, generation_, turnDone_
  std::vector<std::shared_ptr<ProxyTask>> tasks_;
  uint64_t generation_ = 0;  // bumped on every change of tasks_
  uint64_t runningGeneration_ = 0;  // the generation of the turn in progress
  std::condition_variable turnDone_;
};

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_PROXY_H_
