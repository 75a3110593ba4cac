// TCP sockets for the bootstrap and the socket fallback transport: addresses (IPv4 and IPv6),
// an RAII Socket whose every wait has a deadline and an optional abort flag, and the choice of
// network interface (WEFT_SOCKET_IFNAME, with NCCL_SOCKET_IFNAME's rules).
//
// Every Socket is non-blocking underneath; the blocking-looking calls poll in slices of at most
// kAbortPollMs so that an abort flag set by another thread ends them within about 0.1 s.
// Errors name the peer: "connection to 198.18.0.2:41234 closed by peer while receiving 64 bytes".
#ifndef WEFT_BASE_SOCKET_H_
#define WEFT_BASE_SOCKET_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/os.h"
#include "base/status.h"

namespace weft {

// Longest a blocked socket call goes without looking at its abort flag.
constexpr int kAbortPollMs = 50;

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

// Where a connection leaves this host: the local address to bind to before connecting (port 0:
// any) and, optionally, the interface whose link it must leave through (SO_BINDTODEVICE; that
// needs CAP_NET_RAW, and without it only the address is bound).
struct SocketSource {
  SocketAddress address;
  std::string device;  // "" none
  bool deviceBound = false;  // set by connect(): SO_BINDTODEVICE took effect
};

// A connected or listening TCP socket. Move-only; closes itself.
class Socket {
 public:
  Socket() = default;
  ~Socket() { close(); }
  Socket(Socket&& o) noexcept;
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // Listens on `bind` (port 0: the kernel picks one; localAddress() tells which).
  static Status listen(const SocketAddress& bind, Socket* out);
  // Connects to `addr`, retrying refused connections with back-off until the deadline: the
  // peer may not listen yet.
  static Status connect(const SocketAddress& addr, Deadline deadline, const std::atomic<bool>* abort, Socket* out);
  // The same, from `source` (null: wherever the kernel's routing puts it). A source that cannot
  // be bound (an address not on this host, an interface that is gone) or that cannot reach
  // `addr` (no route through that interface) is an error of its own: not retried.
  static Status connect(const SocketAddress& addr, Deadline deadline, const std::atomic<bool>* abort,
                        SocketSource* source, Socket* out);

  // Listening socket: waits for one connection.
  Status accept(Deadline deadline, const std::atomic<bool>* abort, Socket* out) const;
  // Listening socket: takes a pending connection if there is one (*out stays invalid if not).
  Status tryAccept(Socket* out) const;

  Status sendAll(const void* data, size_t bytes, Deadline deadline, const std::atomic<bool>* abort = nullptr) const;
  Status recvAll(void* data, size_t bytes, Deadline deadline, const std::atomic<bool>* abort = nullptr) const;
  // Reads what is available without waiting, up to `bytes`. *got = 0 and ok: nothing yet.
  // *closed = true when the peer closed the connection (and nothing more will come).
  Status recvSome(void* data, size_t bytes, size_t* got, bool* closed) const;

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  const SocketAddress& localAddress() const { return local_; }
  const SocketAddress& peerAddress() const { return peer_; }
  void close();

 private:
  explicit Socket(int fd);
  void refreshAddresses();

  int fd_ = -1;
  SocketAddress local_;
  SocketAddress peer_;
};

// One address of one network interface.
struct NetInterface {
  std::string name;
  SocketAddress address;  // port 0
  bool loopback = false;
};

// The interfaces among `candidates` (one entry per address of each up interface) that `spec`
// selects, one entry per interface with its preferred address (IPv4 first, never link-local
// IPv6), best first. spec follows NCCL_SOCKET_IFNAME: comma-separated name prefixes; a leading
// '^' excludes them instead; a leading '=' (after the '^', if any) makes them exact names.
// Empty spec: the first interface that is not loopback (nor docker/virbr/veth) and has an IPv4
// address, else one with an IPv6 address, else loopback.
std::vector<NetInterface> matchInterfaces(const std::string& spec, const std::vector<NetInterface>& candidates);

// The up interfaces of this host, one entry per IPv4/IPv6 address.
Status listInterfaces(std::vector<NetInterface>* out);

// matchInterfaces() over this host's interfaces; an error naming the interfaces that exist when
// none matches. Logs the choice at INFO (kBoot).
Status findInterfaces(const std::string& spec, std::vector<NetInterface>* out);

}  // namespace weft

#endif  // WEFT_BASE_SOCKET_H_
