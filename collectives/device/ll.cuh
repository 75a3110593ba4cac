// The low-latency (LL) line format for small messages: the sender writes each 4 bytes of data
// together with a 4-byte flag as one 8-byte store; the receiver polls the line with one 8-byte
// load and takes the data once the flag is the one it expects. No separate "ready" flag, no
// fence between data and flag: an aligned 8-byte access is a single transaction on every GPU
// and on x86-64, so data and flag are seen together. The price is half the bandwidth, which
// the tuner pays only for small messages (DESIGN.md, "Performance model").
//
// Line i of a message holds its bytes [4i, 4i + 4) in the low 32 bits (in memory order on the
// little-endian machines we run on) and the flag in the high 32 bits; the last line of a
// message whose size is not a multiple of 4 is padded with zero bytes. Lines are 8-byte aligned.
//
// Flags: the sender of step n of a buffer writes flag n, with n never 0 and never the flag of
// the previous use of the same lines, so a line left over from before is never taken as ready
// (a buffer starts zeroed). Data bits do not matter: any 4 bytes are valid data.
//
// The functions take (tid, nthreads) like reduce_copy.cuh: thread tid handles lines tid,
// tid + nthreads, ... The host tests run them for every tid.
#ifndef WEFT_COLLECTIVES_DEVICE_LL_CUH_
#define WEFT_COLLECTIVES_DEVICE_LL_CUH_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "collectives/device/pack.cuh"
#include "device/kernel_api.h"
#include "device/platform.h"

namespace weft {
namespace coll {
namespace kernel {

constexpr size_t kLLDataBytes = device::kLLDataBytes;  // data bytes per line
constexpr size_t kLLLineBytes = device::kLLLineBytes;
static_assert(kLLDataBytes == 4 && kLLLineBytes == 8, "a line is one 8-byte store: 4 data bytes and the flag");

WEFT_HOST_DEVICE inline uint64_t llMakeLine(uint32_t data, uint32_t flag) {
  return (static_cast<uint64_t>(flag) << 32) | data;
}
WEFT_HOST_DEVICE inline uint32_t llLineData(uint64_t line) { return static_cast<uint32_t>(line); }
WEFT_HOST_DEVICE inline uint32_t llLineFlag(uint64_t line) { return static_cast<uint32_t>(line >> 32); }

// Lines needed for nbytes of data.
WEFT_HOST_DEVICE inline size_t llLineCount(size_t nbytes) { return (nbytes + kLLDataBytes - 1) / kLLDataBytes; }

// The 4 data bytes of line i of a message of nbytes at src (any alignment; zero past the end).
WEFT_HOST_DEVICE inline uint32_t llGatherWord(const void* src, size_t nbytes, size_t i) {
  const size_t at = i * kLLDataBytes;
  if (reinterpret_cast<uintptr_t>(src) % kLLDataBytes == 0 && at + kLLDataBytes <= nbytes) {
#if WEFT_KERNEL_DEVICE_PASS
    return static_cast<const uint32_t*>(src)[i];
#else
    uint32_t word;  // the host reads the bytes of any type through memcpy, not a uint32_t lvalue
    memcpy(&word, static_cast<const unsigned char*>(src) + at, sizeof word);
    return word;
#endif
  }
  const unsigned char* p = static_cast<const unsigned char*>(src);
  uint32_t word = 0;
  for (size_t b = 0; b < kLLDataBytes && at + b < nbytes; ++b) word |= static_cast<uint32_t>(p[at + b]) << (8 * b);
  return word;
}

// Stores the data bytes of line i (those below nbytes) to dst (any alignment).
WEFT_HOST_DEVICE inline void llScatterWord(void* dst, size_t nbytes, size_t i, uint32_t word) {
  const size_t at = i * kLLDataBytes;
  if (reinterpret_cast<uintptr_t>(dst) % kLLDataBytes == 0 && at + kLLDataBytes <= nbytes) {
#if WEFT_KERNEL_DEVICE_PASS
    static_cast<uint32_t*>(dst)[i] = word;
#else
    memcpy(static_cast<unsigned char*>(dst) + at, &word, sizeof word);
#endif
    return;
  }
  unsigned char* p = static_cast<unsigned char*>(dst);
  for (size_t b = 0; b < kLLDataBytes && at + b < nbytes; ++b) p[at + b] = static_cast<unsigned char>(word >> (8 * b));
}

// One 8-byte store of a whole line, which another agent (the peer GPU, or the host) polls: at
// system scope (platform.h: a system-scope atomic on AMD GPUs, so that the line goes past the
// caches to the fine-grained memory the peer reads; volatile on NVIDIA; a relaxed atomic on the
// host), never torn.
WEFT_HOST_DEVICE inline void llStoreLine(uint64_t* line, uint32_t data, uint32_t flag) {
  weftStoreSystem(line, llMakeLine(data, flag));
}

// One 8-byte load of a line another agent writes (system scope, as above): true, with its data,
// if it carries `flag`.
WEFT_HOST_DEVICE inline bool llTryLoadLine(const uint64_t* line, uint32_t flag, uint32_t* data) {
  const uint64_t v = weftLoadSystem(line);
  if (llLineFlag(v) != flag) return false;
  *data = llLineData(v);
  return true;
}

WEFT_HOST_DEVICE inline bool llReady(const uint64_t* line, uint32_t flag) {
  return llLineFlag(weftLoadSystem(line)) == flag;
}

// Writes the lines of nbytes at src, flagged `flag`, to `lines` (thread tid's share).
WEFT_HOST_DEVICE inline void llPack(uint64_t* lines, const void* src, size_t nbytes, uint32_t flag, size_t tid,
                                    size_t nthreads) {
  const size_t n = llLineCount(nbytes);
  for (size_t i = tid; i < n; i += nthreads) llStoreLine(lines + i, llGatherWord(src, nbytes, i), flag);
}

// Copies the data of the lines of thread tid's share that carry `flag` to dst (nbytes in all)
// and returns how many of its lines do not yet: the caller polls again (against its deadline)
// until that is 0. Lines already taken are taken again, harmlessly.
WEFT_HOST_DEVICE inline size_t llTryUnpack(void* dst, const uint64_t* lines, size_t nbytes, uint32_t flag,
                                           size_t tid, size_t nthreads) {
  const size_t n = llLineCount(nbytes);
  size_t pending = 0;
  for (size_t i = tid; i < n; i += nthreads) {
    uint32_t word;
    if (llTryLoadLine(lines + i, flag, &word)) {
      llScatterWord(dst, nbytes, i, word);
    } else {
      ++pending;
    }
  }
  return pending;
}

// ---- LL messages on a FIFO (kernel_api.h, FifoView::ll) ------------------------------------
// A message of nbytes at count c of a FIFO is one LL slot: kLLHeaderLines header lines (the call
// stamp's low and high words, then nbytes) and the data lines, every one flagged llFlag(c).

// The flag of the message a FIFO carries at count c: 1..2^32-1, never 0 (the zeroed region).
// The previous use of the same LL slot was at c - k * nSlots for some k >= 1, whose flag differs
// unless k * nSlots is a multiple of 2^32 - 1: the slot would have to carry no LL message for
// over four billion uses in a row (2^32 - 1 = 3 x 5 x 17 x 257 x 65537).
WEFT_HOST_DEVICE inline uint32_t llFlag(uint64_t count) { return static_cast<uint32_t>(count % 0xffffffffull) + 1; }

// Line i of an LL message: the header's words first, then the data's.
WEFT_HOST_DEVICE inline uint32_t llMessageWord(const void* src, size_t nbytes, uint64_t stamp, size_t i) {
  if (i == 0) return static_cast<uint32_t>(stamp);
  if (i == 1) return static_cast<uint32_t>(stamp >> 32);
  if (i == 2) return static_cast<uint32_t>(nbytes);
  return llGatherWord(src, nbytes, i - device::kLLHeaderLines);
}

// Writes the whole LL message (header and data lines, thread tid's share) to the LL slot `lines`.
WEFT_HOST_DEVICE inline void llPackMessage(uint64_t* lines, const void* src, size_t nbytes, uint64_t stamp,
                                           uint32_t flag, size_t tid, size_t nthreads) {
  const size_t n = device::kLLHeaderLines + llLineCount(nbytes);
  for (size_t i = tid; i < n; i += nthreads) llStoreLine(lines + i, llMessageWord(src, nbytes, stamp, i), flag);
}

// True, with the stamp and byte count, once every header line of the LL slot carries `flag`.
WEFT_HOST_DEVICE inline bool llTryHeader(const uint64_t* lines, uint32_t flag, uint64_t* stamp, uint64_t* nbytes) {
  uint32_t lo, hi, n;
  if (!llTryLoadLine(lines, flag, &lo) || !llTryLoadLine(lines + 1, flag, &hi) || !llTryLoadLine(lines + 2, flag, &n)) {
    return false;
  }
  *stamp = static_cast<uint64_t>(hi) << 32 | lo;
  *nbytes = n;
  return true;
}

}  // namespace kernel
}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_DEVICE_LL_CUH_
