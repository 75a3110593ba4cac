// TCP sockets for the bootstrap and the socket fallback transport: an RAII Socket whose every
// wait has a deadline and an optional abort flag. Its addresses (IPv4 and IPv6) are
// socket_address.h's, the choice of network interface (WEFT_SOCKET_IFNAME, with
// NCCL_SOCKET_IFNAME's rules) net_interface.h's; this header includes both.
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

#include "base/net_interface.h"
#include "base/os.h"
#include "base/socket_address.h"
#include "base/status.h"

namespace weft {

// Longest a blocked socket call goes without looking at its abort flag.
constexpr int kAbortPollMs = 50;

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
  // What a refused connection means. kRetry: the peer may not listen yet. kGone: it listened
  // before (its address came from it once it was listening), so nothing listens there any more;
  // connect() then fails at once with weftRemoteError and *refused (when given) = true.
  enum class Refused { kRetry, kGone };
  static Status connect(const SocketAddress& addr, Deadline deadline, const std::atomic<bool>* abort,
                        SocketSource* source, Refused refused, Socket* out, bool* wasRefused = nullptr);

  // Listening socket: waits for one connection.
  Status accept(Deadline deadline, const std::atomic<bool>* abort, Socket* out) const;
  // Listening socket: takes a pending connection if there is one (*out stays invalid if not).
  Status tryAccept(Socket* out) const;

  Status sendAll(const void* data, size_t bytes, Deadline deadline, const std::atomic<bool>* abort = nullptr) const;
  Status recvAll(void* data, size_t bytes, Deadline deadline, const std::atomic<bool>* abort = nullptr) const;
  // Reads what is available without waiting, up to `bytes`. *got = 0 and ok: nothing yet.
  // *closed = true when the peer closed the connection (and nothing more will come).
  Status recvSome(void* data, size_t bytes, size_t* got, bool* closed) const;

  // True when the peer closed or reset the connection, for a socket this side only writes to
  // (anything readable on it then means the end). Does not wait.
  bool peerClosed() const;

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

}  // namespace weft

#endif  // WEFT_BASE_SOCKET_H_
