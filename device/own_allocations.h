// The pinned host allocations a GPU runtime made itself (allocHost), so that a launch's checks
// answer "can the device reach this table?" for Weft's own tables (lane tables, the error record,
// the abort flag: all from allocHost) from memory instead of asking the driver: a pointer
// attribute query on every launch costs microseconds on the host, per table, per call. Pointers
// it does not know (a caller's) are still asked about. Plain host code: gpu_runtime.cu keeps one,
// and the unit tests check it.
#ifndef WEFT_DEVICE_OWN_ALLOCATIONS_H_
#define WEFT_DEVICE_OWN_ALLOCATIONS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace weft {
namespace device {

class OwnAllocations {
 public:
  // [base, base + bytes) is ours until remove(base).
  void add(const void* base, size_t bytes) {
    if (base == nullptr || bytes == 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    map_[address(base)] = bytes;
  }
  // False when `base` is not the start of an allocation added before.
  bool remove(const void* base) {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.erase(address(base)) == 1;
  }
  // Whether `ptr` lies inside one of them.
  bool contains(const void* ptr) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.upper_bound(address(ptr));
    if (it == map_.begin()) return false;
    --it;
    return address(ptr) - it->first < it->second;
  }

 private:
  static uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }
  mutable std::mutex mu_;
  std::map<uintptr_t, size_t> map_;  // base -> bytes
};

}  // namespace device
}  // namespace weft

#endif  // WEFT_DEVICE_OWN_ALLOCATIONS_H_
