// Checks of every bootstrap message a peer or a stranger can send: pure functions of the bytes
// received (and of what this end already knows), so that the root, the ranks, the fuzzer
// (fuzz/bootstrap_fuzz.cc) and the corpus test share one definition of "well formed".
//
// Each returns Status::ok() or an error whose message says what was wrong with the message,
// without naming the sender: the caller knows the sender's address or rank and prefixes it.
// The code is the one a rank that speaks the protocol should be answered with
// (weftInvalidUsage: a mixed build; weftInvalidArgument: anything else).
#ifndef WEFT_CORE_BOOTSTRAP_CHECK_H_
#define WEFT_CORE_BOOTSTRAP_CHECK_H_

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "core/bootstrap_wire.h"

namespace weft {
namespace core {
namespace wire {

// Longest wait a hello may announce (a year): longer is garbage, not patience.
constexpr uint64_t kMaxHelloTimeoutMs = 365ull * 24 * 3600 * 1000;
// Longest error text a root's answer may carry.
constexpr uint32_t kMaxReplyTextBytes = 64u << 10;
// Largest message between ranks. The biggest legitimate one is rank 0's allGather result (a
// PeerInfo-sized record per rank at most a few KiB); the receive buffer grows only as bytes
// arrive (see Bootstrap::readFrom), so this bounds garbage, not memory.
constexpr uint64_t kMaxFrameBytes = 1ull << 36;

// The first `got` bytes of a hello (any prefix): wrong as soon as the magic or the version shows
// it, so that strangers are turned away on their first bytes.
Status checkHelloPrefix(const Hello& h, size_t got);
// A complete hello, against the id the root serves. `agreedRanks`: the size the ranks that
// joined first announced (-1 when none has joined yet).
Status checkHello(const Hello& h, const UniqueIdInfo& id, int agreedRanks);
// The root's answer as `rank` of `nRanks` reads it (the header only).
Status checkReply(const Reply& r, int nRanks);
// A progress report from the root as `rank` of `nRanks` reads it.
Status checkProgress(const Progress& p, int rank, int nRanks);
// Entry `index` of the root's table.
Status checkEntry(const Entry& e, int index);
// The first `got` bytes of a connection's introduction (any prefix).
Status checkConnHelloPrefix(const ConnHello& h, size_t got);
// A complete introduction on `self`'s listener, against the communicator's id.
Status checkConnHello(const ConnHello& h, const UniqueIdInfo& id, int self, int nRanks);
// The header of a message between ranks.
Status checkFrame(const Frame& f);

}  // namespace wire
}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_BOOTSTRAP_CHECK_H_
