// The bootstrap's point-to-point messages, in memory, for transport tests: one mailbox per
// (from, to, tag), and a PeerExchange over them for each rank.
#ifndef WEFT_TESTS_UNIT_TRANSPORTS_MAILBOXES_H_
#define WEFT_TESTS_UNIT_TRANSPORTS_MAILBOXES_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "base/status.h"
#include "transports/transport.h"

namespace weft {
namespace test_util {

class Mailboxes {
 public:
  void put(int from, int to, int tag, const void* data, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    const char* p = static_cast<const char*>(data);
    boxes_[{from, to, tag}].emplace_back(p, p + bytes);
    cv_.notify_all();
  }
  // Waits up to `seconds` for a message of exactly `bytes` bytes; gives up (weftRemoteError,
  // "aborted") once `stop` (may be null) becomes true, looking every 10 ms.
  Status take(int from, int to, int tag, void* data, size_t bytes, double seconds = 10,
              const std::atomic<bool>* stop = nullptr) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto& box = boxes_[{from, to, tag}];
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (box.empty()) {
      if (stop != nullptr && stop->load()) return Status::error(weftRemoteError, "aborted");
      if (std::chrono::steady_clock::now() >= until) return Status::error(weftTimeout, "no message");
      cv_.wait_for(lock, std::chrono::milliseconds(10));
    }
    if (box.front().size() != bytes) return Status::error(weftInternalError, "size mismatch");
    std::memcpy(data, box.front().data(), bytes);
    box.pop_front();
    return Status::ok();
  }
  // The last message put in a mailbox (without taking it).
  std::vector<char> peek(int from, int to, int tag) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& box = boxes_[{from, to, tag}];
    return box.empty() ? std::vector<char>() : box.back();
  }
  // Messages not taken yet, in every mailbox.
  size_t count() {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t n = 0;
    for (auto& [key, box] : boxes_) n += box.size();
    return n;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<char>>> boxes_;
};

class Exchange final : public PeerExchange {
 public:
  Exchange(Mailboxes* boxes, int self) : boxes_(boxes), self_(self) {}
  Status send(int peer, int tag, const void* data, size_t bytes) override {
    boxes_->put(self_, peer, tag, data, bytes);
    return Status::ok();
  }
  Status recv(int peer, int tag, void* data, size_t bytes) override {
    return boxes_->take(peer, self_, tag, data, bytes);
  }
  Status recv(int peer, int tag, void* data, size_t bytes, Deadline deadline, const std::atomic<bool>* stop) override {
    return boxes_->take(peer, self_, tag, data, bytes, deadline.remainingMs() / 1000.0, stop);
  }

 private:
  Mailboxes* boxes_;
  int self_;
};

}  // namespace test_util
}  // namespace weft

#endif  // WEFT_TESTS_UNIT_TRANSPORTS_MAILBOXES_H_
