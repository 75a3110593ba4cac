// Heartbeats between hosts (liveness.h): one UDP socket per address family and process, owned
// by the heartbeat thread. Each beat is one 56-byte datagram to each rank on another host that
// watches a rank of this process; a rank watches only its nearest ranks on other hosts, before
// and after it in rank order, so the traffic is O(ranks of the process x 2), not O(n^2).
//
// UDP because nothing on the existing paths fits: the bootstrap's sockets are driven by the
// application thread and carry framed, ordered messages (a beat must not wait behind them,
// nor be read by them), and the transports' framing is not Weft core's to change. A datagram
// that is lost costs nothing: the next one comes 100 ms later, and silence is declared only
// after WEFT_HEARTBEAT_TIMEOUT_S (30 beats at the default).
//
// A beat also carries the failure the sending rank published on the watch's communicator (the
// record's, liveness_record.h), so that the ranks on other hosts, which cannot read that record,
// learn whom it blamed: it goes at once when published, with every beat after, and once more when
// the communicator is torn down.
//
// Datagrams come from outside: size, magic and the sender's nonce are checked, and beats are
// kept only for nonces a watch expects, so a stranger's packets change nothing.
#ifndef WEFT_CORE_LIVENESS_UDP_H_
#define WEFT_CORE_LIVENESS_UDP_H_

#include <cstdint>
#include <functional>

#include "base/socket.h"

namespace weft {
namespace core {

// What one datagram carries.
struct BeatMessage {
  uint64_t magic = 0;
  uint64_t nonce = 0;  // the sending process's liveness record nonce
  uint64_t beats = 0;
  int32_t pid = 0;
  int32_t reserved = 0;
  // The sending rank's failure of call #failedSeq on the communicator of commHash (0: none), and
  // the rank it blamed (-1: itself).
  uint64_t commHash = 0;
  uint64_t failedSeq = 0;
  int32_t rank = -1;
  int32_t culprit = -1;
};

class BeatSocket {
 public:
  BeatSocket() = default;
  ~BeatSocket();
  BeatSocket(const BeatSocket&) = delete;
  BeatSocket& operator=(const BeatSocket&) = delete;

  // The address peers send beats to: `host` (this rank's bootstrap address, which they reach)
  // with the port of this process's socket of that family, opened on first use. Invalid (family
  // 0) when no socket could be opened; that is logged.
  SocketAddress addressFor(const SocketAddress& host);
  void send(const SocketAddress& to, const BeatMessage& beat);
  // Hands every well-formed datagram waiting on the sockets to `take`, without blocking.
  void drain(const std::function<void(const BeatMessage&)>& take);

 private:
  int fd4_ = -1;
  int fd6_ = -1;
};

constexpr uint64_t kBeatMagic = 0x3254414542544657ull;  // "WFTBEAT2"

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_LIVENESS_UDP_H_
