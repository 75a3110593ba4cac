// SharedMemoryAllocator: a CPU allocator for torch that serves large tensors from Weft's shared
// host memory, so that collectives on them (DDP's gradient buckets above all) run zero-copy.
//
// Weft's zero-copy path (src/core/comm_zero_copy.cc) reads and writes the peers' buffers directly
// when every rank's buffers of a call lie in memory from weftMemAlloc (a named shared segment the
// other processes of the host can map) registered with weftCommRegister; other memory goes
// through the FIFOs. Torch allocates DDP's buckets itself, from c10's CPU allocator. Installed
// (weft_torch.use_shared_memory_allocator()), this allocator takes that place: allocations of at
// least `thresholdBytes` come from a pool of arenas, each one weftMemAlloc allocation registered
// with every attached communicator (each ProcessGroupWeft attaches its own while it lives);
// smaller ones, and every allocation the pool cannot serve, go to the allocator it replaced.
//
// - Freed blocks return to their arena (coalesced with free neighbours) and are reused; arenas
//   stay until releaseUnused() (they are registered, and peers keep their mappings anyway).
// - A tensor outlives the process groups that registered its arena: the pool owns the arenas,
//   the groups only their registrations. The allocator itself is never destroyed (tensors may be
//   freed during exit).
// - /dev/shm running out never crashes: before an arena is made, /dev/shm must have room for it
//   (and a reserve for the FIFOs), and its pages are faulted in at once (MADV_POPULATE_WRITE
//   reports a full tmpfs as an error where a later write would raise SIGBUS); when either fails,
//   or the pool reached maxBytes, the allocation falls back with a warning (once per reason).
// - fork: a child process shares the arenas' pages with its parent, so it never serves new
//   blocks from them nor registers them; its new allocations all go to the previous allocator.
#pragma once

#include <c10/core/Allocator.h>
#include <torch/version.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "weft/weft.h"

// torch 2.3 made Allocator::allocate non-const and added the pure virtual copy_data.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define WEFT_TORCH_ALLOCATE_CONST
#define WEFT_TORCH_ALLOCATOR_COPY_DATA 1
#else
#define WEFT_TORCH_ALLOCATE_CONST const
#endif

namespace weft_torch {

struct SharedMemoryOptions {
  size_t thresholdBytes = size_t(1) << 20;  // smaller allocations go to the previous allocator
  size_t arenaBytes = size_t(64) << 20;     // the smallest arena made (larger requests get their own)
  size_t maxBytes = 0;                      // most bytes of arenas in all; 0: what /dev/shm holds
};

struct SharedMemoryStats {
  bool installed = false;
  size_t arenas = 0;
  size_t arenaBytes = 0;  // of all arenas
  size_t liveBlocks = 0;
  size_t liveBytes = 0;      // of the live blocks (rounded to pages)
  uint64_t served = 0;       // allocations served from the pool
  uint64_t reused = 0;       // of those, served from memory an earlier block had used
  uint64_t forwarded = 0;    // allocations below the threshold, sent to the previous allocator
  uint64_t fallbacks = 0;    // allocations at or above the threshold the pool could not serve
  std::string lastFallback;  // why the last of those fell back
  size_t communicators = 0;  // attached
  size_t registrations = 0;  // live weftCommRegister handles
};

class SharedMemoryAllocator final : public c10::Allocator {
 public:
  static SharedMemoryAllocator& instance();

  // Becomes torch's CPU allocator with `options` (again: new options); throws std::invalid_argument
  // on bad options and std::runtime_error when torch keeps another allocator of higher priority.
  void install(const SharedMemoryOptions& options);
  // Gives torch back the allocator install() replaced; live blocks stay valid.
  void uninstall();
  SharedMemoryStats stats() const;
  // Frees the arenas that hold no live block; returns how many.
  size_t releaseUnused();

  // Registers every arena (and every later one) with comm, until detach(comm).
  void attach(weftComm_t comm);
  void detach(weftComm_t comm);

  c10::DataPtr allocate(size_t n) WEFT_TORCH_ALLOCATE_CONST override;
  c10::DeleterFnPtr raw_deleter() const override;
#ifdef WEFT_TORCH_ALLOCATOR_COPY_DATA
  void copy_data(void* dest, const void* src, std::size_t count) const override;
#endif

 private:
  struct Arena {
    char* base = nullptr;
    size_t bytes = 0;
    std::map<size_t, size_t> free;  // offset -> bytes of each free run
    size_t liveBlocks = 0;
  };
  struct Block {
    Arena* arena = nullptr;
    size_t offset = 0;
    size_t bytes = 0;
  };
  // Why the pool could not serve an allocation: `kind` (one warning per kind) and a sentence.
  struct Refusal {
    std::string kind;
    std::string text;
  };
  // The pool's state; allocate() is const in torch 1.13, so it lives behind a pointer.
  struct State {
    std::mutex mutex;
    SharedMemoryOptions options;
    c10::Allocator* previous = nullptr;
    bool installed = false;
    bool forked = false;  // this process is a fork() child of the one that made the arenas
    std::vector<std::unique_ptr<Arena>> arenas;
    std::unordered_map<void*, Block> blocks;                // live blocks by address
    std::map<weftComm_t, std::map<Arena*, void*>> handles;  // attached comm -> arena -> handle
    std::set<std::string> warned;                           // kinds of fallback already warned about
    SharedMemoryStats counters;
  };

  SharedMemoryAllocator();
  static void freeBlock(void* p);                     // the deleter of the pool's DataPtrs (context == data)
  void* takeBlock(size_t bytes, Refusal* why) const;  // called with the mutex held
  bool fromFreeRun(size_t bytes, Block* out) const;
  Arena* newArena(size_t bytes, Refusal* why) const;
  void registerArena(weftComm_t comm, Arena* arena) const;
  void fellBack(size_t n, const Refusal& why) const;

  std::unique_ptr<State> state_;
};

}  // namespace weft_torch
