// The asynchronous half of the backend: every collective returns a Work at once, and one worker
// thread per process group runs the Weft calls in call order. Weft's host calls block until this
// rank's part is done, so the caller's thread (DDP's backward pass) keeps computing while the
// worker communicates; every rank issues the calls in the same order because each group has one
// worker, fed in the order torch called it.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace weft_torch {

class WorkQueue;

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

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::weak_ptr<WorkQueue> queue_;
};

// The per-group worker. A task is a function that does the Weft calls and throws on failure.
//
// Waking a thread costs more than a small all-reduce on a busy machine, so a push does not wake
// the worker when the caller may be about to wait (and run the task itself, WeftWork::wait):
// the worker is woken by getFuture / isCompleted / a wait that cannot run the task, by a second
// queued task, and after a long idle period; otherwise it looks at the queue every kPoll while
// calls keep coming, so a call nobody waits for yet still starts within kPoll.
class WorkQueue {
 public:
  WorkQueue();
  ~WorkQueue();  // shutdown()
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Runs `run` after everything pushed before it, then completes `works` (with its exception, if
  // it throws). Several works share one run when torch batched their calls.
  void push(std::vector<c10::intrusive_ptr<WeftWork>> works, std::function<void()> run);
  // Returns when every task pushed so far has run (for calls that must not overtake them).
  void drain();
  // Runs what is queued, then stops the thread.
  void shutdown();
  // Runs the task of `work` on the calling thread if it is the next one and the worker is idle;
  // false if not (the worker has it, or earlier tasks come first).
  bool runIfNext(const WeftWork* work);
  // Wakes the worker if a task waits for it.
  void kick();

 private:
  struct Task {
    std::vector<c10::intrusive_ptr<WeftWork>> works;
    std::function<void()> run;
  };
  void loop();
  void runTask(Task& task);  // with mutex_ unlocked and busy_ set

  std::mutex mutex_;
  std::condition_variable wake_;  // a task was pushed, or stop
  std::condition_variable idle_;  // the queue ran empty
  std::deque<Task> tasks_;
  bool busy_ = false;
  bool stop_ = false;
  bool deepSleep_ = false;  // the worker sleeps until notified (no call for kIdle)
  std::chrono::steady_clock::time_point lastPush_;
  std::thread thread_;
};

}  // namespace weft_torch
