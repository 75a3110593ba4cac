// The asynchronous half of the backend: every collective returns a Work at once, and one worker
// thread per process group runs the Weft calls in call order. Weft's host calls block until this
// rank's part is done, so the caller's thread (DDP's backward pass) keeps computing while the
// worker communicates; every rank issues the calls in the same order because each group has one
// worker, fed in the order torch called it.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace weft_torch {

// One call of a collective. Completed by the worker: its future gets the output tensors (or the
// error), then wait() returns (or rethrows). c10d's Work keeps the state (finish()).
class WeftWork : public c10d::Work {
 public:
  WeftWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs);

  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  // Marks the call done: the future first (DDP's comm hooks chain on it), then the Work.
  void complete(std::exception_ptr error);

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// The per-group worker. A task is a function that does the Weft calls and throws on failure.
class WorkQueue {
 public:
  WorkQueue();
  ~WorkQueue();  // runs what is queued, then stops the thread
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Runs `run` after everything pushed before it, then completes `works` (with its exception, if
  // it throws). Several works share one run when torch batched their calls.
  void push(std::vector<c10::intrusive_ptr<WeftWork>> works, std::function<void()> run);
  // Returns when every task pushed so far has run (for calls that must not overtake them).
  void drain();

 private:
  struct Task {
    std::vector<c10::intrusive_ptr<WeftWork>> works;
    std::function<void()> run;
  };
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;  // a task was pushed, or stop
  std::condition_variable idle_;  // the queue ran empty
  std::deque<Task> tasks_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace weft_torch
