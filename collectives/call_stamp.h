// Call stamps: the 64 bits every data message carries beside its byte count
// (Connection::postSend), so that a receiver can tell whether its sender made the same call.
//
//   stamp = (sequence number of the call, low 32 bits) << 32 | 32-bit fingerprint of the call
//
// src/core computes one per call (the fingerprint of what the rank called: collective kind,
// count, datatype, op, root, algorithm) and hands it to the executors in the plan; a receiver
// that finds another stamp on a message fails the operation at once (host_executor.cc).
// Point-to-point messages carry the pair's own sequence (the n-th send from a rank to a peer
// matches the peer's n-th receive from it) with kP2pSeqBit set, so that they never pass for a
// collective's.
#ifndef WEFT_COLLECTIVES_CALL_STAMP_H_
#define WEFT_COLLECTIVES_CALL_STAMP_H_

#include <cstdint>

namespace weft {
namespace coll {

constexpr uint32_t kP2pSeqBit = 0x80000000u;

// One multiply-xorshift round per 8-byte field and a final mix: a short dependency chain (about
// 30 cycles for a collective's 7 fields; the byte-wise FNV-1a it replaces took ~200 cycles, a
// quarter of a 1-rank 8 B all-reduce), and every bit of every field reaches the result
// (call_stamp_test.cc flips each one).
inline uint32_t fingerprintOf(const uint64_t* fields, int n) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < n; ++i) {
    h = (h ^ fields[i]) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  h *= 0x94d049bb133111ebull;
  h ^= h >> 29;
  return static_cast<uint32_t>(h ^ (h >> 32));
}

// A collective: root only where the collective has one (a non-rooted call's root is noise).
inline uint32_t collectiveFingerprint(int kind, uint64_t count, int type, int op, int root, int algo) {
  const uint64_t fields[] = {1, static_cast<uint64_t>(kind), count, static_cast<uint64_t>(type),
                             static_cast<uint64_t>(static_cast<uint32_t>(op)),
                             static_cast<uint64_t>(static_cast<uint32_t>(root)), static_cast<uint64_t>(algo)};
  return fingerprintOf(fields, 7);
}

// A send or a receive: only what both sides know, the bytes.
inline uint32_t p2pFingerprint(uint64_t bytes) {
  const uint64_t fields[] = {2, bytes};
  return fingerprintOf(fields, 2);
}

inline uint64_t makeStamp(uint32_t seq, uint32_t fingerprint) {
  return (static_cast<uint64_t>(seq) << 32) | fingerprint;
}
inline uint32_t stampSeq(uint64_t stamp) { return static_cast<uint32_t>(stamp >> 32); }
inline uint32_t stampFingerprint(uint64_t stamp) { return static_cast<uint32_t>(stamp); }
// The sequence field of a collective's stamp (never has kP2pSeqBit).
inline uint32_t collectiveSeq(uint64_t seq) { return static_cast<uint32_t>(seq) & ~kP2pSeqBit; }

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_CALL_STAMP_H_
