#include "work_queue.h"

#include <ATen/core/grad_mode.h>
#include <ATen/core/jit_type.h>

#include <algorithm>
#include <utility>

namespace weft_torch {

WeftWork::WeftWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, std::weak_ptr<WorkQueue> queue)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))),
      queue_(std::move(queue)) {}

bool WeftWork::wait(std::chrono::milliseconds timeout) {
  if (!c10d::Work::isCompleted()) {
    if (auto queue = queue_.lock()) {
      if (!queue->runIfNext(this)) queue->kick();
    }
  }
  return c10d::Work::wait(timeout);
}

bool WeftWork::isCompleted() {
  if (c10d::Work::isCompleted()) return true;
  if (auto queue = queue_.lock()) queue->kick();
  return false;
}

c10::intrusive_ptr<c10::ivalue::Future> WeftWork::getFuture() {
  if (auto queue = queue_.lock()) queue->kick();
  return future_;
}

void WeftWork::complete(std::exception_ptr error) {
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
  finish(error);
}

WorkQueue::WorkQueue() : thread_([this] { loop(); }) {}

WorkQueue::~WorkQueue() { shutdown(); }

void WorkQueue::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return;
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

namespace {
constexpr auto kPoll = std::chrono::milliseconds(1);
constexpr auto kIdle = std::chrono::milliseconds(200);
}  // namespace

void WorkQueue::push(std::vector<c10::intrusive_ptr<WeftWork>> works, std::function<void()> run) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(Task{std::move(works), std::move(run)});
    lastPush_ = std::chrono::steady_clock::now();
    wake = deepSleep_ || tasks_.size() > 1;
  }
  if (wake) wake_.notify_one();
}

void WorkQueue::kick() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (tasks_.empty() || busy_) return;  // nothing to start, or it is running (and loops on)
  }
  wake_.notify_one();
}

void WorkQueue::drain() {
  wake_.notify_one();
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return tasks_.empty() && !busy_; });
}

void WorkQueue::runTask(Task& task) {
  std::exception_ptr error;
  try {
    task.run();
  } catch (...) {
    error = std::current_exception();
  }
  for (auto& work : task.works) work->complete(error);
  task = Task{};  // drop the tensors before taking the lock again
}

bool WorkQueue::runIfNext(const WeftWork* work) {
  Task task;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (busy_ || stop_ || tasks_.empty()) return false;
    const auto& next = tasks_.front().works;
    if (std::find_if(next.begin(), next.end(), [work](const auto& w) { return w.get() == work; }) == next.end()) {
      return false;
    }
    task = std::move(tasks_.front());
    tasks_.pop_front();
    busy_ = true;  // the worker waits until this task is done
  }
  {
    at::NoGradGuard noGrad;
    runTask(task);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
    if (tasks_.empty()) idle_.notify_all();
  }
  wake_.notify_one();
  return true;
}

void WorkQueue::loop() {
  // Output tensors may be parameters that require grad; copying results into them is not
  // something autograd should see (grad mode is per thread and on by default).
  at::NoGradGuard noGrad;
  std::unique_lock<std::mutex> lock(mutex_);
  auto ready = [this] { return (stop_ || !tasks_.empty()) && !busy_; };
  for (;;) {
    while (!ready()) {
      if (std::chrono::steady_clock::now() - lastPush_ < kIdle) {
        wake_.wait_for(lock, kPoll);
      } else {
        deepSleep_ = true;
        wake_.wait(lock, ready);
        deepSleep_ = false;
      }
    }
    if (tasks_.empty()) return;  // stop_, and everything queued has run
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    busy_ = true;
    lock.unlock();
    runTask(task);
    lock.lock();
    busy_ = false;
    if (tasks_.empty()) idle_.notify_all();
  }
}

}  // namespace weft_torch
