// The asynchronous half of the backend: every collective returns a Work at once, and one worker
// thread per process group runs the Weft calls in call order. Weft's host calls block until this
// rank's part is done, so the caller's thread (DDP's backward pass) keeps computing while the
// worker communicates; every rank issues the calls in the same order because each group has one
// queue, fed in the order torch called it.
#pragma once

#include <ATen/core/ivalue.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "weft/weft.h"

namespace weft_torch {

class WorkQueue;

// What one torch call asks of Weft. issue() makes the Weft calls on `stream` (NULL: host
// tensors, on the worker); finish() copies results into tensors that were not contiguous. They
// are two steps so that several sends and receives can be issued inside one Weft group.
struct Call {
  std::function<void(weftStream_t)> issue;
  std::function<void()> finish;
};

// One call of a collective. Completed by the worker: its future gets the output tensors (or the
// error), then wait() returns (or rethrows). c10d's Work keeps the state (finish()).
class WeftWork : public c10d::Work {
 public:
  WeftWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, std::weak_ptr<WorkQueue> queue = {});

  // A caller that waits for a call the worker has not started runs it itself (it is next in call
  // order, so the order is kept): dist.all_reduce(t) then costs no hand-off between threads.
  // Asking for the future (DDP's comm hook) or polling starts the worker at once instead.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  bool isCompleted() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  // Marks the call done: the future first (DDP's comm hooks chain on it), then the Work.
  void complete(std::exception_ptr error);
  // A receive from any source: the rank it received from, once done (sourceRank()).
  void setSource(std::shared_ptr<std::atomic<int>> source) { source_ = std::move(source); }
  int sourceRank() const override;

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::weak_ptr<WorkQueue> queue_;
  std::shared_ptr<std::atomic<int>> source_;  // set for receives from any source
};

// The per-group queue and its worker thread.
//
// Waking a thread costs more than a small all-reduce on a busy machine, so a push does not wake
// the worker: a caller about to wait runs the call itself (WeftWork::wait). The worker starts
// queued calls at once when asked (getFuture, isCompleted, a wait that cannot run the call, a
// second queued collective), and otherwise once the oldest is kStartDelay old. With nothing to
// start it looks at the queue every kPoll while calls keep coming, backs off (doubling) when none
// come, and then leaves it to push() to wake it.
//
// Sends and receives queued one after another run as one Weft group (all at once), so that
// `isend(a, p); irecv(b, p)` on two ranks cannot wait on each other; unasked, they start only
// once the oldest is kPointToPointStartDelay (50 ms) old, so that a loaded machine's gaps
// between pushes do not split such a group.
class WorkQueue {
 public:
  // Runs several calls as one Weft group, then their finish() steps; throws on failure.
  using GroupRunner = std::function<void(const std::vector<Call*>&)>;

  explicit WorkQueue(GroupRunner runGroup);
  ~WorkQueue();  // shutdown()
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `calls` (one, or a batch of sends and receives) for `works`, which complete together
  // (with the exception of the first call that throws, if any). pointToPoint: sends and
  // receives only, which may share a Weft group with their neighbours in the queue.
  void push(std::vector<c10::intrusive_ptr<WeftWork>> works, std::vector<Call> calls, bool pointToPoint);
  // Returns when every task pushed so far has run (for calls that must not overtake them).
  void drain();
  // Runs what is queued, then stops the thread.
  void shutdown();
  // Runs the task of `work` on the calling thread if it is the next one and the worker is idle;
  // false if not (the worker has it, or earlier tasks come first).
  bool runIfNext(const WeftWork* work);
  // Asks the worker to run what is queued now.
  void kick();

 private:
  struct Task {
    std::vector<c10::intrusive_ptr<WeftWork>> works;
    std::vector<Call> calls;
    bool pointToPoint = false;
    std::chrono::steady_clock::time_point pushed;
  };
  std::vector<Task> takeNext();                        // mutex_ held: the front task, and sends/receives after it
  void run(std::vector<Task>& batch);                  // mutex_ not held, busy_ set
  void finishRun(std::unique_lock<std::mutex>& lock);  // after run(): clears busy_
  bool startable() const;                              // mutex_ held
  static std::chrono::steady_clock::time_point startTime(const Task& task);  // when it starts unasked
  void loop();

  GroupRunner runGroup_;
  std::mutex mutex_;
  std::condition_variable wake_;  // something to do, or stop
  std::condition_variable idle_;  // the queue ran empty
  std::deque<Task> tasks_;
  bool busy_ = false;
  bool stop_ = false;
  bool started_ = false;    // asked to run what is queued without waiting for it to age
  bool deepSleep_ = false;  // the worker sleeps longer than the start delay: push() wakes it
  uint64_t pushes_ = 0;     // calls pushed so far (the worker backs off while it stays put)
  std::thread thread_;
};

}  // namespace weft_torch
