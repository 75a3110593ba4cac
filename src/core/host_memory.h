// Host memory that the other processes on this host can map: weftMemAlloc's host allocations
// (api_memory.cc) and the zero-copy collectives that read and write them (comm_zero_copy.cc).
//
// Every allocation is its own POSIX shared-memory segment, named after this process's hash and
// a counter ("/weft-mem-<process hash>-<id>"), mapped shared. A peer maps it by that name on
// first use and keeps the mapping for the life of its process (mappings of the same segment are
// cached, so a buffer that is reused costs one mmap). Names, not file descriptors passed with
// pidfd_getfd or /proc/<pid>/fd: those need ptrace permission over the owner, which Yama
// (ptrace_scope 1, Ubuntu's default) denies between sibling ranks; /dev/shm is what the FIFOs
// already need. The name is unlinked when the memory is freed (and at exit for what was not);
// peers' mappings stay valid after that, as POSIX keeps the memory until its last unmap.
// A process killed before it unlinks leaves its names behind: every segment is a page longer
// than its memory, and that unmapped page records the creator (pid, pid namespace), so that a
// later process removes what dead processes left (removeHostMemoryOfDeadProcesses).
#ifndef WEFT_CORE_HOST_MEMORY_H_
#define WEFT_CORE_HOST_MEMORY_H_

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace weft {
namespace core {

// Where a byte range lies inside a shared allocation, in terms any process of the host can use.
struct SharedSpan {
  uint64_t owner = 0;  // processHash() of the allocating process; 0: not shared memory
  uint64_t id = 0;     // the allocation's number in that process
  uint64_t segmentBytes = 0;
  uint64_t offset = 0;  // of the range's first byte from the segment's start
  uint64_t bytes = 0;   // of the range
};

// A new shared segment of at least `bytes` (page-rounded), zero-filled and page-aligned.
Status allocSharedHost(size_t bytes, void** out);
// Unmaps and unlinks an allocation of allocSharedHost; false when p is not the start of one.
bool freeSharedHost(void* p);
// True when [p, p + bytes) lies inside one live allocation of this process (*out describes it).
bool findSharedHost(const void* p, size_t bytes, SharedSpan* out);
// The first byte of `span`'s range in this process: the allocation itself when this process
// owns it, else a (cached) mapping of the owner's segment. The span comes from a peer: a range
// outside the segment, or a segment that is not there, is an error.
Status mapSharedHost(const SharedSpan& span, char** out);

// Removes the segments (/dev/shm/weft-mem-*) whose creator ran in this pid namespace and no
// longer runs, and which no running process maps (a forked child of the creator may still offer
// its allocation to peers, who open it by name); returns how many. Segments of live processes,
// of other namespaces or users, and half-made ones are left alone.
size_t removeHostMemoryOfDeadProcesses();
// The same once per process: at its first allocation, and when a communicator is created.
void sweepDeadHostMemoryOnce();

// A growable buffer of shared host memory that frees itself (a communicator's staging area).
class SharedHostBuffer {
 public:
  SharedHostBuffer() = default;
  SharedHostBuffer(const SharedHostBuffer&) = delete;
  SharedHostBuffer& operator=(const SharedHostBuffer&) = delete;
  ~SharedHostBuffer() {
    if (data_ != nullptr) freeSharedHost(data_);
  }
  // At least `bytes` (the contents are not kept when it grows).
  Status reserve(size_t bytes) {
    if (bytes <= bytes_) return Status::ok();
    if (data_ != nullptr) freeSharedHost(data_);
    data_ = nullptr;
    bytes_ = 0;
    void* p = nullptr;
    WEFT_TRY(allocSharedHost(bytes, &p));
    data_ = static_cast<char*>(p);
    bytes_ = bytes;
    return Status::ok();
  }
  char* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  char* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_HOST_MEMORY_H_
