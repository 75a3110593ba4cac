// The socket transport's wire format and the checks of everything a peer (or a stranger on the
// listener) sends it: pure functions of the bytes, shared by socket_transport.cc, the fuzzer
// (fuzz/socket_frame_fuzz.cc) and the corpus test. Each check returns Status::ok() or an error
// whose message says what was wrong, without the sender: the caller names it.
#ifndef WEFT_TRANSPORTS_NET_SOCKET_WIRE_H_
#define WEFT_TRANSPORTS_NET_SOCKET_WIRE_H_

#include <cstddef>
#include <cstdint>

#include "base/socket.h"
#include "base/status.h"
#include "transports/net/net_link.h"

namespace weft {
namespace net {

constexpr uint64_t kSocketOfferMagic = 0x524646304b434f53ull;  // "SOCK0FFR"
constexpr uint64_t kSocketHelloMagic = 0x4f4c4c454b434f53ull;  // "SOCKELLO"
// An abort frame names at most this culprit (bytes = culprit + 1); a larger value names none.
constexpr uint64_t kMaxAbortCulprit = 1u << 30;

// Receiver -> sender through the bootstrap: where to connect and the token to present.
struct SocketOffer {
  uint64_t magic = 0;
  uint64_t token = 0;
  SocketAddress address;
  int32_t lane = 0;
  int32_t receiverRank = 0;
};

// Sender -> receiver, the first bytes on a new connection.
struct SocketHello {
  uint64_t magic = 0;
  uint64_t token = 0;
  int32_t senderRank = 0;
  int32_t lane = 0;
};

// Reads one frame header from the first sizeof(FrameHeader) of `n` bytes and checks it for a
// link that `receiving` data into slots of `slotBytes`: a data frame (receiving links only) that
// fits a slot, an acknowledgement of released messages (kFrameCredit, on the return path to a
// sender only; the caller checks its count), or an abort frame (either direction).
// weftRemoteError otherwise.
Status parseFrameHeader(const void* bytes, size_t n, bool receiving, size_t slotBytes, FrameHeader* out);
// The rank an abort frame blames, -1 when it names none.
int abortCulprit(const FrameHeader& h);

// The first `got` bytes of an introduction on the listener (any prefix): wrong as soon as the
// magic shows it.
Status checkSocketHelloPrefix(const SocketHello& h, size_t got);
// A complete introduction against the link its token selected (its peer rank and lane).
Status checkSocketHello(const SocketHello& h, int expectedRank, int expectedLane);
// An offer as the sender of `lane` to `peerRank` receives it through the bootstrap.
Status checkSocketOffer(const SocketOffer& o, int peerRank, int lane);

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_SOCKET_WIRE_H_
