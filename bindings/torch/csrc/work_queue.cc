#include "work_queue.h"

#include <ATen/core/grad_mode.h>
#include <ATen/core/jit_type.h>
#include <pthread.h>

#include <algorithm>
#include <utility>

namespace weft_torch {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kStartDelay = std::chrono::milliseconds(1);
// Sends and receives wait longer: those queued before anyone waits must run as one group (a
// send split from the receive queued after it can wait forever for its peer's receive, which
// sits behind that peer's own send), and a loaded machine can take over a millisecond between
// two pushes. Asked (a wait, a poll, a collective queued behind them), they start at once.
constexpr auto kPointToPointStartDelay = std::chrono::milliseconds(50);
constexpr auto kPoll = std::chrono::milliseconds(1);
constexpr auto kIdle = std::chrono::milliseconds(128);

}  // namespace

WeftWork::WeftWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, std::weak_ptr<WorkQueue> queue)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))),
      queue_(std::move(queue)) {}

int WeftWork::sourceRank() const {
  if (!source_) return c10d::Work::sourceRank();  // torch's own error for other calls
  const int source = source_->load();
  if (source < 0) throw std::runtime_error("weft: recv from any source: sourceRank() is known once the call is done");
  return source;
}

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

WorkQueue::WorkQueue(GroupRunner runGroup) : runGroup_(std::move(runGroup)), thread_([this] { loop(); }) {}

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

void WorkQueue::push(std::vector<c10::intrusive_ptr<WeftWork>> works, std::vector<Call> calls, bool pointToPoint) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = Clock::now();
    tasks_.push_back(Task{std::move(works), std::move(calls), pointToPoint, now});
    ++pushes_;
    // Collectives queued behind another one: nobody waits on the first alone, start now.
    if (tasks_.size() > 1 && !pointToPoint) started_ = true;
    wake = deepSleep_ || (started_ && !busy_);
  }
  if (wake) wake_.notify_one();
}

void WorkQueue::kick() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (tasks_.empty()) return;
    started_ = true;
    if (busy_) return;  // the worker (or a waiting caller) is running a task and loops on
  }
  wake_.notify_one();
}

void WorkQueue::drain() {
  kick();
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return tasks_.empty() && !busy_; });
}

bool WorkQueue::startable() const {
  if (busy_ || tasks_.empty()) return false;
  return started_ || stop_ || Clock::now() >= startTime(tasks_.front());
}

Clock::time_point WorkQueue::startTime(const Task& task) {
  return task.pushed + (task.pointToPoint ? kPointToPointStartDelay : kStartDelay);
}

std::vector<WorkQueue::Task> WorkQueue::takeNext() {
  std::vector<Task> batch;
  batch.push_back(std::move(tasks_.front()));
  tasks_.pop_front();
  while (batch.front().pointToPoint && !tasks_.empty() && tasks_.front().pointToPoint) {
    batch.push_back(std::move(tasks_.front()));
    tasks_.pop_front();
  }
  busy_ = true;
  return batch;
}

void WorkQueue::run(std::vector<Task>& batch) {
  // Output tensors may be parameters that require grad; copying results into them is not
  // something autograd should see (grad mode is per thread and on by default).
  at::NoGradGuard noGrad;
  std::exception_ptr error;
  try {
    std::vector<Call*> calls;
    for (Task& task : batch) {
      for (Call& call : task.calls) calls.push_back(&call);
    }
    if (calls.size() == 1) {
      calls[0]->issue(nullptr);
      if (calls[0]->finish) calls[0]->finish();
    } else {
      runGroup_(calls);
    }
  } catch (...) {
    error = std::current_exception();
  }
  for (Task& task : batch) {
    for (auto& work : task.works) work->complete(error);
  }
  batch.clear();  // drop the tensors before taking the lock again
}

void WorkQueue::finishRun(std::unique_lock<std::mutex>& lock) {
  busy_ = false;
  if (tasks_.empty()) {
    started_ = false;
    idle_.notify_all();
  }
}

bool WorkQueue::runIfNext(const WeftWork* work) {
  std::vector<Task> batch;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (busy_ || stop_ || tasks_.empty()) return false;
    const auto& next = tasks_.front().works;
    if (std::find_if(next.begin(), next.end(), [work](const auto& w) { return w.get() == work; }) == next.end()) {
      return false;
    }
    batch = takeNext();  // busy_: the worker waits until this batch is done
  }
  run(batch);
  bool more;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    finishRun(lock);
    more = !tasks_.empty();
  }
  if (more) wake_.notify_one();
  return true;
}

void WorkQueue::loop() {
  pthread_setname_np(pthread_self(), "weft-torch");  // tells it apart in top -H and /proc
  std::unique_lock<std::mutex> lock(mutex_);
  auto idleWait = std::chrono::duration_cast<Clock::duration>(kPoll);
  for (;;) {
    while (!startable()) {
      if (stop_ && tasks_.empty() && !busy_) return;
      if (!tasks_.empty() && !busy_) {
        wake_.wait_until(lock, startTime(tasks_.front()));  // or until asked
        continue;
      }
      // Nothing to start (empty queue, or a waiting caller runs the task). Look again after
      // idleWait, doubled each time no call came meanwhile: between DDP's all-reduces the
      // backward pass then keeps its core instead of being interrupted every kPoll. Once the
      // wait exceeds the start delay, push() wakes this thread instead.
      const uint64_t pushesBefore = pushes_;
      deepSleep_ = idleWait > kStartDelay;
      if (idleWait >= kIdle) {
        wake_.wait(lock);
      } else {
        wake_.wait_for(lock, idleWait);
      }
      deepSleep_ = false;
      idleWait = pushes_ != pushesBefore ? std::chrono::duration_cast<Clock::duration>(kPoll)
                                         : std::min<Clock::duration>(idleWait * 2, kIdle);
    }
    std::vector<Task> batch = takeNext();
    lock.unlock();
    run(batch);
    lock.lock();
    finishRun(lock);
  }
}

}  // namespace weft_torch
