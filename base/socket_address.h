// An IPv4 or IPv6 address and port, for sockets (socket.h) and the interfaces they leave
// through (net_interface.h).
#ifndef WEFT_BASE_SOCKET_ADDRESS_H_
#define WEFT_BASE_SOCKET_ADDRESS_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "base/status.h"

namespace weft {

// An IPv4 or IPv6 address and port.
class SocketAddress {
 public:
  SocketAddress() = default;
  // "1.2.3.4:80", "[fd00::1]:80", "[fe80::1%eth0]:80" or "hostname:80" (resolved, IPv4 first).
  static Status parse(const std::string& text, SocketAddress* out);
  // A numeric host ("127.0.0.1", "::1") and a port.
  static Status fromHostPort(const std::string& host, uint16_t port, SocketAddress* out);
  static SocketAddress fromSockaddr(const sockaddr* sa, socklen_t len);
  static SocketAddress loopbackV4(uint16_t port = 0);
  static SocketAddress anyOfFamily(int family, uint16_t port = 0);

  bool valid() const { return family() == AF_INET || family() == AF_INET6; }
  int family() const { return storage_.ss_family; }
  uint16_t port() const;
  void setPort(uint16_t port);
  bool isLoopback() const;
  // "127.0.0.1:80", "[::1]:80"; "(none)" when not valid.
  std::string toString() const;
  // Just the host part: "127.0.0.1", "::1".
  std::string hostString() const;

  const sockaddr* sockaddrPtr() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t length() const;
  bool operator==(const SocketAddress& o) const;
  bool operator!=(const SocketAddress& o) const { return !(*this == o); }

 private:
  sockaddr_storage storage_{};
};

}  // namespace weft

#endif  // WEFT_BASE_SOCKET_ADDRESS_H_
