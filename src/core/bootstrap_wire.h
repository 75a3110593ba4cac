// The bootstrap's wire format: the unique id's layout, the hello a rank sends the root, the
// root's answer, the header of a connection between ranks and the frame of one message.
// Fixed-size little-endian PODs (every platform Weft runs on is little-endian), identical for
// every vendor's build. Internal to bootstrap*.cc and unique_id.cc.
#ifndef WEFT_CORE_BOOTSTRAP_WIRE_H_
#define WEFT_CORE_BOOTSTRAP_WIRE_H_

#include <cstdint>
#include <string>

#include "base/socket.h"
#include "core/bootstrap.h"
#include "transports/transport.h"

namespace weft {
namespace core {
namespace wire {

constexpr uint32_t kIdMagic = 0x44494657u;     // "WFID"
constexpr uint32_t kHelloMagic = 0x48424657u;  // "WFBH": rank -> root
constexpr uint32_t kReplyMagic = 0x52424657u;  // "WFBR": root -> rank
constexpr uint32_t kConnMagic = 0x43424657u;   // "WFBC": rank -> rank
constexpr uint32_t kProgressMagic = 0x50424657u;  // "WFBP": root -> waiting rank
// Bumped whenever a struct below changes, so that mismatched builds fail clearly.
// 2: the root sends Progress messages before its answer.
constexpr uint32_t kProtocolVersion = 2;

// Largest communicator the root accepts (a sanity bound on a hello from a stranger).
constexpr int32_t kMaxRanks = 1 << 20;

// A socket address in 24 bytes.
struct Addr {
  uint16_t family = 0;  // 4 or 6 (not AF_*, which differs between systems)
  uint16_t port = 0;
  uint32_t scope = 0;  // IPv6 scope id
  uint8_t bytes[16] = {0};
};
static_assert(sizeof(Addr) == 24, "wire::Addr layout");

Addr toWire(const SocketAddress& a);
SocketAddress fromWire(const Addr& a);

// The 128 bytes of a weftUniqueId.
struct IdBlob {
  uint32_t magic;
  uint32_t version;
  Addr root;
  uint8_t secret[kSecretBytes];
  uint64_t nonce;
};
static_assert(sizeof(IdBlob) <= WEFT_UNIQUE_ID_BYTES, "the unique id must fit in weftUniqueId");

// Rank -> root, right after connecting.
struct Hello {
  uint32_t magic;
  uint32_t version;
  uint8_t secret[kSecretBytes];
  uint64_t nonce;
  int32_t rank;
  int32_t nRanks;
  uint64_t timeoutMs;  // how long this rank will wait for the others
  PeerInfo info;
  Addr listen;  // where this rank accepts connections from the others
};

// Root -> rank: then nRanks Entry records (status 0) or textBytes of error text.
struct Reply {
  uint32_t magic;
  int32_t status;  // weftResult_t
  int32_t nRanks;
  uint32_t textBytes;
};

// Root -> a rank that joined, while ranks are still missing (any number, before the Reply):
// how many ranks joined and the lowest missing ones, so that every waiting rank can name them.
constexpr int kProgressMissingShown = 16;
struct Progress {
  uint32_t magic;
  int32_t nRanks;
  int32_t joined;
  int32_t missingTotal;  // nRanks - joined
  int32_t missingShown;  // entries of missing[] used: min(missingTotal, kProgressMissingShown)
  int32_t missing[kProgressMissingShown];  // ascending
};
static_assert(sizeof(Progress) == 20 + 4 * kProgressMissingShown, "wire::Progress layout");

struct Entry {
  PeerInfo info;
  Addr listen;
};

// Rank -> rank, first thing on a new connection.
struct ConnHello {
  uint32_t magic;
  uint32_t version;
  uint8_t secret[kSecretBytes];
  uint64_t nonce;
  int32_t from;
  int32_t to;
};

// Header of each message between ranks.
enum FrameKind : uint32_t { kUser = 1, kInternal = 2 };
struct Frame {
  uint32_t kind;
  int32_t tag;
  uint64_t bytes;
};

// Tags of kInternal frames.
enum InternalTag : int32_t { kGather = 1, kGatherResult = 2, kBarrier = 3, kBarrierRelease = 4 };

// Constant-time comparison of two secrets.
bool sameSecret(const uint8_t* a, const uint8_t* b);

}  // namespace wire

// Starts a root thread serving `info` on `listener` (bootstrap_root.cc).
Status launchRoot(Socket listener, const UniqueIdInfo& info);
}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_BOOTSTRAP_WIRE_H_
