// Every tag src/core uses on a communicator's bootstrap (Bootstrap::send / recv), in one table so
// that no two exchanges share one. Sequences (one tag per split, shrink or grow) have ranges of their
// own and wrap inside them (each such exchange completes before the next starts). The transports'
// connection offers use tags above all of these: socket and libfabric 0x6e000 + lane, network
// plugins 0x6f000 + lane, p2p (1 << 20) + lane and the credits after it.
#ifndef WEFT_CORE_BOOTSTRAP_TAGS_H_
#define WEFT_CORE_BOOTSTRAP_TAGS_H_

namespace weft {
namespace core {
namespace bootstrap_tags {

constexpr int kSettings = 0x4f00;        // comm_settings.cc: rank 0's settings and tuner inputs
constexpr int kReadersRow = 0x4f01;      // connections.cc: which peers may read this rank's memory
constexpr int kReadersColumn = 0x4f02;
constexpr int kTopoDescription = 0x4f10;  // comm_topology.cc: each rank's description
constexpr int kTopoTable = 0x4f11;
constexpr int kLivenessAddresses = 0x4f20;  // liveness.cc: heartbeat addresses
constexpr int kSplitBase = 0x10000;         // comm.cc: weftCommSplit number s uses kSplitBase + s
constexpr int kShrinkBase = 0x20000;        // comm_shrink.cc: weftCommShrink number s
constexpr int kGrowBase = 0x30000;          // comm_grow.cc: weftCommGrow number g
constexpr int kSequenceRange = 0x10000;     // tags per sequence; numbers wrap inside it
constexpr int kTransportOffersBase = 0x6e000;  // the lowest tag a transport uses

// The tag of exchange number `n` of the sequence starting at `base`.
constexpr int sequenceTag(int base, unsigned n) { return base + static_cast<int>(n % kSequenceRange); }

static_assert(kLivenessAddresses < kSplitBase && kSplitBase + kSequenceRange <= kShrinkBase &&
                  kShrinkBase + kSequenceRange <= kGrowBase && kGrowBase + kSequenceRange <= kTransportOffersBase,
              "bootstrap tag ranges must not overlap");

}  // namespace bootstrap_tags
}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_BOOTSTRAP_TAGS_H_
