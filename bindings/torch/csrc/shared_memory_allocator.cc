#include "shared_memory_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace weft_torch {
namespace {

constexpr size_t kBlockAlign = 4096;  // blocks start on pages (torch needs 64 bytes)
constexpr size_t kArenaAlign = size_t(2) << 20;
constexpr uint8_t kPriority = 1;                     // above c10's default CPU allocator (0)
constexpr size_t kShmReserveMin = size_t(64) << 20;  // left free in /dev/shm for the FIFOs

size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

std::string mib(size_t bytes) { return std::to_string((bytes + (size_t(1) << 19)) >> 20) + " MiB"; }

// Free bytes of /dev/shm, and its size; false when it cannot be asked.
bool shmSpace(size_t* avail, size_t* total) {
  struct statvfs s {};
  if (statvfs("/dev/shm", &s) != 0) return false;
  *avail = static_cast<size_t>(s.f_bavail) * s.f_frsize;
  *total = static_cast<size_t>(s.f_blocks) * s.f_frsize;
  return true;
}

// Faults the pages of [p, p + bytes) in. A full tmpfs makes this fail (ENOMEM / EFAULT) where a
// write would raise SIGBUS. Kernels before 5.14 do not know the advice (EINVAL): true, unchecked.
bool populate(void* p, size_t bytes, std::string* why) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0 || errno == EINVAL) return true;
  *why = "/dev/shm ran out while the pool faulted in a new arena of " + mib(bytes) + " (" + std::strerror(errno) +
         "); run with a larger /dev/shm (docker --shm-size) or a smaller max_bytes";
  return false;
#else
  (void)p;
  (void)bytes;
  (void)why;
  return true;
#endif
}

}  // namespace

SharedMemoryAllocator::SharedMemoryAllocator() : state_(std::make_unique<State>()) {
  state_->previous = c10::GetDefaultCPUAllocator();
}

SharedMemoryAllocator& SharedMemoryAllocator::instance() {
  // Never destroyed: tensors from the pool may be freed while the process exits.
  static SharedMemoryAllocator* a = [] {
    auto* made = new SharedMemoryAllocator();
    // The mutex is held across fork() so that the child gets a consistent pool, which it then
    // only frees into: its allocations go to the previous allocator (the arenas' pages are the
    // parent's too).
    pthread_atfork([] { instance().state_->mutex.lock(); }, [] { instance().state_->mutex.unlock(); },
                   [] {
                     State& s = *instance().state_;
                     s.forked = true;
                     s.handles.clear();
                     s.mutex.unlock();
                   });
    return made;
  }();
  return *a;
}

void SharedMemoryAllocator::install(const SharedMemoryOptions& options) {
  if (options.thresholdBytes == 0) throw std::invalid_argument("weft: threshold_bytes must be at least 1");
  if (options.arenaBytes < options.thresholdBytes) {
    throw std::invalid_argument("weft: arena_bytes (" + std::to_string(options.arenaBytes) +
                                ") must be at least threshold_bytes (" + std::to_string(options.thresholdBytes) + ")");
  }
  if (options.maxBytes != 0 && options.maxBytes < options.thresholdBytes) {
    throw std::invalid_argument("weft: max_bytes (" + std::to_string(options.maxBytes) +
                                ") must be 0 (no limit) or at least threshold_bytes");
  }
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.forked) throw std::runtime_error("weft: the shared-memory allocator cannot be installed in a forked child");
  c10::Allocator* current = c10::GetCPUAllocator();
  if (current != this) s.previous = current;
  c10::SetCPUAllocator(this, kPriority);
  if (c10::GetCPUAllocator() != this) {
    throw std::runtime_error(
        "weft: torch kept its CPU allocator (one was installed with a higher priority); the shared-memory "
        "allocator is not in use");
  }
  s.options = options;
  s.installed = true;
}

void SharedMemoryAllocator::uninstall() {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.installed) return;
  c10::SetCPUAllocator(s.previous, kPriority);
  s.installed = false;
}

SharedMemoryStats SharedMemoryAllocator::stats() const {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  SharedMemoryStats out = s.counters;
  out.installed = s.installed;
  out.arenas = s.arenas.size();
  out.arenaBytes = 0;
  for (const auto& a : s.arenas) out.arenaBytes += a->bytes;
  out.liveBlocks = s.blocks.size();
  out.liveBytes = 0;
  for (const auto& [p, b] : s.blocks) out.liveBytes += b.bytes;
  out.communicators = s.handles.size();
  out.registrations = 0;
  for (const auto& [comm, perArena] : s.handles) out.registrations += perArena.size();
  return out;
}

size_t SharedMemoryAllocator::releaseUnused() {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  size_t released = 0;
  for (auto it = s.arenas.begin(); it != s.arenas.end();) {
    Arena* a = it->get();
    if (a->liveBlocks != 0) {
      ++it;
      continue;
    }
    for (auto& [comm, perArena] : s.handles) {
      auto h = perArena.find(a);
      if (h == perArena.end()) continue;
      (void)weftCommDeregister(comm, h->second);
      perArena.erase(h);
    }
    // A forked child leaves the parent's segments alone (its weftMemFree would unlink them).
    if (!s.forked) (void)weftMemFree(a->base);
    it = s.arenas.erase(it);
    ++released;
  }
  return released;
}

void SharedMemoryAllocator::attach(weftComm_t comm) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.forked || s.handles.count(comm) != 0) return;
  s.handles[comm];
  for (const auto& a : s.arenas) registerArena(comm, a.get());
}

void SharedMemoryAllocator::detach(weftComm_t comm) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.handles.find(comm);
  if (it == s.handles.end()) return;
  for (const auto& [arena, handle] : it->second) (void)weftCommDeregister(comm, handle);
  s.handles.erase(it);
}

// A registration that fails costs only speed (collectives on the arena copy through the FIFOs).
void SharedMemoryAllocator::registerArena(weftComm_t comm, Arena* arena) const {
  void* handle = nullptr;
  if (weftCommRegister(comm, arena->base, arena->bytes, &handle) == weftSuccess) {
    state_->handles[comm][arena] = handle;
  }
}

c10::DataPtr SharedMemoryAllocator::allocate(size_t n) WEFT_TORCH_ALLOCATE_CONST {
  State& s = *state_;
  Refusal why;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.installed && !s.forked && n >= s.options.thresholdBytes) {
      void* p = takeBlock(roundUp(n, kBlockAlign), &why);
      if (p != nullptr) return c10::DataPtr(p, p, &SharedMemoryAllocator::freeBlock, c10::Device(c10::DeviceType::CPU));
    } else {
      ++s.counters.forwarded;
    }
  }
  if (!why.kind.empty()) fellBack(n, why);
  return s.previous->allocate(n);
}

void SharedMemoryAllocator::fellBack(size_t n, const Refusal& why) const {
  State& s = *state_;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.counters.fallbacks;
    s.counters.lastFallback = why.text;
    first = s.warned.insert(why.kind).second;
  }
  if (first) {
    TORCH_WARN("weft: a CPU tensor of ", n, " bytes comes from torch's allocator, not from shared memory (", why.text,
               "); collectives on such tensors copy through Weft's FIFOs instead of running zero-copy");
  }
}

void* SharedMemoryAllocator::takeBlock(size_t bytes, Refusal* why) const {
  State& s = *state_;
  Block b;
  if (fromFreeRun(bytes, &b)) {
    ++s.counters.reused;
  } else {
    Arena* a = newArena(bytes, why);
    if (a == nullptr) return nullptr;
    b = Block{a, 0, bytes};
    a->free.erase(0);
    if (a->bytes > bytes) a->free[bytes] = a->bytes - bytes;
  }
  ++b.arena->liveBlocks;
  ++s.counters.served;
  void* p = b.arena->base + b.offset;
  s.blocks[p] = b;
  return p;
}

// The smallest free run that holds `bytes` (best fit keeps large runs for large buckets).
bool SharedMemoryAllocator::fromFreeRun(size_t bytes, Block* out) const {
  Arena* best = nullptr;
  size_t bestOffset = 0, bestBytes = 0;
  for (const auto& a : state_->arenas) {
    for (const auto& [offset, run] : a->free) {
      if (run >= bytes && (best == nullptr || run < bestBytes)) {
        best = a.get();
        bestOffset = offset;
        bestBytes = run;
      }
    }
  }
  if (best == nullptr) return false;
  best->free.erase(bestOffset);
  if (bestBytes > bytes) best->free[bestOffset + bytes] = bestBytes - bytes;
  *out = Block{best, bestOffset, bytes};
  return true;
}

SharedMemoryAllocator::Arena* SharedMemoryAllocator::newArena(size_t bytes, Refusal* why) const {
  State& s = *state_;
  size_t size = std::max(roundUp(s.options.arenaBytes, kArenaAlign), roundUp(bytes, kArenaAlign));
  size_t inPool = 0;
  for (const auto& a : s.arenas) inPool += a->bytes;
  if (s.options.maxBytes != 0 && inPool + size > s.options.maxBytes) {
    size = roundUp(bytes, kBlockAlign);  // the smallest arena that serves the request
    if (inPool + size > s.options.maxBytes) {
      why->kind = "max_bytes";
      why->text = "the pool holds " + mib(inPool) + " of its max_bytes " + mib(s.options.maxBytes);
      return nullptr;
    }
  }
  size_t avail = 0, total = 0;
  if (shmSpace(&avail, &total)) {
    const size_t reserve = std::max(kShmReserveMin, total / 8);
    if (avail < size + reserve) {
      why->kind = "/dev/shm space";
      why->text = "/dev/shm has " + mib(avail) + " free of " + mib(total) + ", too little for a " + mib(size) +
                  " arena and a " + mib(reserve) + " reserve; run with a larger /dev/shm (docker --shm-size)";
      return nullptr;
    }
  }
  void* p = nullptr;
  if (weftMemAlloc(&p, size) != weftSuccess) {
    why->kind = "weftMemAlloc";
    why->text = std::string("weftMemAlloc of ") + mib(size) + " failed: " + weftGetLastError(nullptr);
    return nullptr;
  }
  weftMemKind_t kind = weftMemHost;
  int device = -1;
  if (weftMemQuery(p, &kind, &device) != weftSuccess || kind != weftMemHost) {
    (void)weftMemFree(p);
    why->kind = "device memory";
    why->text = "weftMemAlloc gave GPU memory (a GPU is current on this thread)";
    return nullptr;
  }
  if (!populate(p, size, &why->text)) {
    why->kind = "populate";
    (void)weftMemFree(p);
    return nullptr;
  }
  auto arena = std::make_unique<Arena>();
  arena->base = static_cast<char*>(p);
  arena->bytes = size;
  arena->free[0] = size;
  Arena* a = arena.get();
  s.arenas.push_back(std::move(arena));
  for (auto& [comm, perArena] : s.handles) registerArena(comm, a);
  return a;
}

void SharedMemoryAllocator::freeBlock(void* p) {
  State& s = *instance().state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.blocks.find(p);
  if (it == s.blocks.end()) return;  // cannot be: only the pool's blocks carry this deleter
  Block b = it->second;
  s.blocks.erase(it);
  Arena* a = b.arena;
  --a->liveBlocks;
  // Back into the free runs, merged with the neighbours.
  size_t offset = b.offset, bytes = b.bytes;
  auto next = a->free.find(offset + bytes);
  if (next != a->free.end()) {
    bytes += next->second;
    a->free.erase(next);
  }
  auto after = a->free.lower_bound(offset);
  if (after != a->free.begin()) {
    auto prev = std::prev(after);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      bytes += prev->second;
      a->free.erase(prev);
    }
  }
  a->free[offset] = bytes;
}

// The raw interface (context == data) holds for the pool's blocks and, when the previous
// allocator has it, for the forwarded ones.
c10::DeleterFnPtr SharedMemoryAllocator::raw_deleter() const {
  if (state_->previous->raw_deleter() == nullptr) return nullptr;
  return [](void* p) {
    SharedMemoryAllocator& self = instance();
    bool ours = false;
    {
      std::lock_guard<std::mutex> lock(self.state_->mutex);
      ours = self.state_->blocks.count(p) != 0;
    }
    if (ours) {
      freeBlock(p);
    } else {
      self.state_->previous->raw_deleter()(p);
    }
  };
}

#ifdef WEFT_TORCH_ALLOCATOR_COPY_DATA
void SharedMemoryAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  std::memcpy(dest, src, count);
}
#endif

}  // namespace weft_torch
