// The heartbeat datagrams between hosts (liveness_udp.h).
#include "core/liveness_udp.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "base/log.h"
#include "base/status.h"

namespace weft {
namespace core {

BeatSocket::~BeatSocket() {
  if (fd4_ >= 0) close(fd4_);
  if (fd6_ >= 0) close(fd6_);
}

SocketAddress BeatSocket::addressFor(const SocketAddress& host) {
  if (!host.valid()) return SocketAddress();
  int& fd = host.family() == AF_INET6 ? fd6_ : fd4_;
  if (fd < 0) {
    int s = socket(host.family(), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    SocketAddress any = SocketAddress::anyOfFamily(host.family());
    if (s >= 0 && bind(s, any.sockaddrPtr(), any.length()) != 0) {
      close(s);
      s = -1;
    }
    if (s < 0) {
      WEFT_LOG(kInfo, kInit,
               "liveness: no UDP socket for heartbeats to other hosts (%s): ranks there cannot watch "
               "this process's heartbeat",
               errnoText(errno).c_str());
      return SocketAddress();
    }
    fd = s;
  }
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return SocketAddress();
  SocketAddress out = host;
  out.setPort(SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&local), len).port());
  return out;
}

void BeatSocket::send(const SocketAddress& to, const BeatMessage& beat) {
  int fd = to.family() == AF_INET6 ? fd6_ : fd4_;
  if (fd < 0) return;
  // A full socket buffer or an unreachable peer loses one beat; silence is judged over many.
  (void)sendto(fd, &beat, sizeof(beat), MSG_DONTWAIT | MSG_NOSIGNAL, to.sockaddrPtr(), to.length());
}

void BeatSocket::drain(const std::function<void(const BeatMessage&)>& take) {
  for (int fd : {fd4_, fd6_}) {
    if (fd < 0) continue;
    // Bounded: a flood of datagrams must not keep the heartbeat thread from beating.
    for (int i = 0; i < 4096; ++i) {
      BeatMessage beat;
      ssize_t n = recv(fd, &beat, sizeof(beat), MSG_DONTWAIT | MSG_TRUNC);
      if (n < 0) break;
      if (n != static_cast<ssize_t>(sizeof(beat)) || beat.magic != kBeatMagic) continue;
      take(beat);
    }
  }
}

}  // namespace core
}  // namespace weft
