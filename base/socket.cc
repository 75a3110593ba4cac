#include "base/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include "base/log.h"

namespace weft {
namespace {

// ---- waiting ------------------------------------------------------------------------------

enum class Wait { kReady, kTimeout, kAborted };

bool aborted(const std::atomic<bool>* abort) { return abort != nullptr && abort->load(std::memory_order_acquire); }

// Waits until fd has `events`, the deadline passes or the abort flag is set, looking at the flag
// at least every kAbortPollMs.
Wait waitFd(int fd, short events, Deadline deadline, const std::atomic<bool>* abort) {
  for (;;) {
    if (aborted(abort)) return Wait::kAborted;
    if (deadline.expired()) return Wait::kTimeout;
    pollfd p{fd, events, 0};
    int ms = std::min(deadline.remainingMs(), kAbortPollMs);
    int rc = ::poll(&p, 1, ms);
    if (rc > 0) return Wait::kReady;  // errors and hang-ups show up in the next call
    if (rc < 0 && errno != EINTR) return Wait::kReady;
  }
}

// Sleeps `ms` (or until the deadline or an abort), in slices.
void sleepMs(int ms, Deadline deadline, const std::atomic<bool>* abort) {
  Deadline until = Deadline::afterSeconds(ms / 1e3);
  while (!until.expired() && !deadline.expired() && !aborted(abort)) {
    int slice = std::min({until.remainingMs(), deadline.remainingMs(), kAbortPollMs});
    timespec ts{slice / 1000, static_cast<long>(slice % 1000) * 1000000L};
    nanosleep(&ts, nullptr);
  }
}

double secondsSince(uint64_t startNs) { return static_cast<double>(nowNs() - startNs) / 1e9; }

void setNoDelay(int fd) {
  int one = 1;
  // Bootstrap messages are small and latency-bound.
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

bool connectRetryable(int err) {
  return err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET || err == EAGAIN || err == EINTR ||
         err == ECONNABORTED;
}

// Binds a socket about to connect to `addr` to source->address (and, where permitted, to
// source->device). EPERM on the device (no CAP_NET_RAW) leaves the address bound alone.
Status bindSource(int fd, const SocketAddress& addr, SocketSource* source) {
  source->deviceBound = false;
  if (!source->device.empty()) {
    if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, source->device.c_str(),
                   static_cast<socklen_t>(source->device.size())) == 0) {
      source->deviceBound = true;
    } else if (const int err = errno; err != EPERM) {
      return WEFT_ERROR(weftSystemError, "cannot connect to %s through interface %s: SO_BINDTODEVICE: %s",
                        addr.toString().c_str(), source->device.c_str(), errnoText(err).c_str());
    }
  }
  if (::bind(fd, source->address.sockaddrPtr(), source->address.length()) != 0) {
    const int err = errno;
    return WEFT_ERROR(weftSystemError, "cannot connect to %s from %s: bind: %s%s", addr.toString().c_str(),
                      source->address.toString().c_str(), errnoText(err).c_str(),
                      err == EADDRNOTAVAIL ? " (that address is not on this host)" : "");
  }
  return Status::ok();
}

}  // namespace

// ---- Socket -------------------------------------------------------------------------------

Socket::Socket(int fd) : fd_(fd) { refreshAddresses(); }

Socket::Socket(Socket&& o) noexcept : fd_(o.fd_), local_(o.local_), peer_(o.peer_) { o.fd_ = -1; }

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    local_ = o.local_;
    peer_ = o.peer_;
    o.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::refreshAddresses() {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
    local_ = SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
  }
  len = sizeof(ss);
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
    peer_ = SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
  }
}

Status Socket::listen(const SocketAddress& bind, Socket* out) {
  if (!bind.valid()) return WEFT_ERROR(weftInvalidArgument, "listen: no address to bind to");
  int fd = ::socket(bind.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return WEFT_ERROR(weftSystemError, "socket(): %s", errnoText(errno).c_str());
  Socket s(fd);
  int one = 1;
  // A fixed port (WEFT_ROOT_ADDR) must be reusable while an old connection is in TIME_WAIT.
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, bind.sockaddrPtr(), bind.length()) != 0) {
    int err = errno;
    return WEFT_ERROR(weftSystemError, "cannot listen on %s: bind: %s%s", bind.toString().c_str(),
                      errnoText(err).c_str(),
                      err == EADDRINUSE ? " (another process uses this port; pick another one)" : "");
  }
  if (::listen(fd, SOMAXCONN) != 0) {
    return WEFT_ERROR(weftSystemError, "cannot listen on %s: %s", bind.toString().c_str(), errnoText(errno).c_str());
  }
  s.refreshAddresses();
  *out = std::move(s);
  return Status::ok();
}

namespace {

// One attempt to connect non-blocking socket `fd`: 0, the attempt's errno, or ECANCELED once
// *abort became true.
int connectAttempt(int fd, const SocketAddress& addr, Deadline deadline, const std::atomic<bool>* abort) {
  if (::connect(fd, addr.sockaddrPtr(), addr.length()) == 0) return 0;
  int err = errno;
  if (err != EINPROGRESS) return err;
  Wait w = waitFd(fd, POLLOUT, deadline, abort);
  if (w == Wait::kAborted) return ECANCELED;
  if (w == Wait::kTimeout) return ETIMEDOUT;
  socklen_t len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  return err;
}

}  // namespace

Status Socket::connect(const SocketAddress& addr, Deadline deadline, const std::atomic<bool>* abort, Socket* out) {
  return connect(addr, deadline, abort, nullptr, out);
}

Status Socket::connect(const SocketAddress& addr, Deadline deadline, const std::atomic<bool>* abort,
                       SocketSource* source, Socket* out) {
  return connect(addr, deadline, abort, source, Refused::kRetry, out);
}

Status Socket::connect(const SocketAddress& addr, Deadline deadline, const std::atomic<bool>* abort,
                       SocketSource* source, Refused refused, Socket* out, bool* wasRefused) {
  if (wasRefused != nullptr) *wasRefused = false;
  if (!addr.valid()) return WEFT_ERROR(weftInvalidArgument, "connect: no address");
  if (source != nullptr && source->address.family() != addr.family()) {
    return WEFT_ERROR(weftInvalidArgument, "cannot connect to %s from %s: the addresses are of different families",
                      addr.toString().c_str(), source->address.toString().c_str());
  }
  uint64_t start = nowNs();
  int backoffMs = 5;
  int lastErr = 0;
  int attempts = 0;
  for (;;) {
    ++attempts;
    int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return WEFT_ERROR(weftSystemError, "socket(): %s", errnoText(errno).c_str());
    Socket s(fd);
    setNoDelay(fd);
    if (source != nullptr) WEFT_TRY(bindSource(fd, addr, source));
    const int err = connectAttempt(fd, addr, deadline, abort);
    if (err == ECANCELED) return WEFT_ERROR(weftRemoteError, "aborted while connecting to %s", addr.toString().c_str());
    if (err == 0) {
      s.refreshAddresses();
      *out = std::move(s);
      return Status::ok();
    }
    // A wait cut short by the deadline says less than the error of the attempt before it.
    if (err != ETIMEDOUT || lastErr == 0) lastErr = err;
    if (err == ECONNREFUSED && refused == Refused::kGone) {
      if (wasRefused != nullptr) *wasRefused = true;
      return WEFT_ERROR(weftRemoteError, "%s refused the connection: nothing listens there any more",
                        addr.toString().c_str());
    }
    if (!connectRetryable(err)) {
      return WEFT_ERROR(weftSystemError, "cannot connect to %s%s%s: %s", addr.toString().c_str(),
                        source ? " from " : "", source ? source->address.hostString().c_str() : "",
                        errnoText(err).c_str());
    }
    if (aborted(abort)) return WEFT_ERROR(weftRemoteError, "aborted while connecting to %s", addr.toString().c_str());
    if (deadline.expired()) break;
    // The peer may not listen yet: try again a little later.
    sleepMs(backoffMs, deadline, abort);
    backoffMs = std::min(backoffMs * 2, 200);
    if (deadline.expired()) break;
  }
  return WEFT_ERROR(weftTimeout, "could not connect to %s within %.1f s (%d attempts; last error: %s)",
                    addr.toString().c_str(), secondsSince(start), attempts, errnoText(lastErr).c_str());
}

bool Socket::peerClosed() const {
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  return fd_ >= 0 && ::poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

Status Socket::tryAccept(Socket* out) const {
  for (;;) {
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      setNoDelay(fd);
      *out = Socket(fd);
      return Status::ok();
    }
    int err = errno;
    if (err == EINTR || err == ECONNABORTED) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      out->close();
      return Status::ok();
    }
    return WEFT_ERROR(weftSystemError, "accept on %s: %s", local_.toString().c_str(), errnoText(err).c_str());
  }
}

Status Socket::accept(Deadline deadline, const std::atomic<bool>* abort, Socket* out) const {
  uint64_t start = nowNs();
  for (;;) {
    WEFT_TRY(tryAccept(out));
    if (out->valid()) return Status::ok();
    Wait w = waitFd(fd_, POLLIN, deadline, abort);
    if (w == Wait::kAborted) {
      return WEFT_ERROR(weftRemoteError, "aborted while waiting for a connection on %s", local_.toString().c_str());
    }
    if (w == Wait::kTimeout) {
      return WEFT_ERROR(weftTimeout, "no connection arrived on %s within %.1f s", local_.toString().c_str(),
                        secondsSince(start));
    }
  }
}

Status Socket::sendAll(const void* data, size_t bytes, Deadline deadline, const std::atomic<bool>* abort) const {
  const auto* p = static_cast<const char*>(data);
  size_t done = 0;
  uint64_t start = nowNs();
  while (done < bytes) {
    ssize_t n = ::send(fd_, p + done, bytes - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    int err = n < 0 ? errno : EAGAIN;
    if (err == EINTR) continue;
    if (err == EPIPE || err == ECONNRESET) {
      return WEFT_ERROR(weftRemoteError, "connection to %s closed by peer while sending %zu bytes (%zu sent)",
                        peer_.toString().c_str(), bytes, done);
    }
    if (err != EAGAIN && err != EWOULDBLOCK) {
      return WEFT_ERROR(weftSystemError, "sending %zu bytes to %s: %s", bytes, peer_.toString().c_str(),
                        errnoText(err).c_str());
    }
    Wait w = waitFd(fd_, POLLOUT, deadline, abort);
    if (w == Wait::kAborted) {
      return WEFT_ERROR(weftRemoteError, "aborted while sending %zu bytes to %s", bytes, peer_.toString().c_str());
    }
    if (w == Wait::kTimeout) {
      return WEFT_ERROR(weftTimeout, "timed out after %.1f s sending %zu bytes to %s (%zu sent)", secondsSince(start),
                        bytes, peer_.toString().c_str(), done);
    }
  }
  return Status::ok();
}

Status Socket::recvSome(void* data, size_t bytes, size_t* got, bool* closed) const {
  *got = 0;
  *closed = false;
  if (bytes == 0) return Status::ok();
  for (;;) {
    ssize_t n = ::recv(fd_, data, bytes, 0);
    if (n > 0) {
      *got = static_cast<size_t>(n);
      return Status::ok();
    }
    if (n == 0) {
      *closed = true;
      return Status::ok();
    }
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return Status::ok();
    if (err == ECONNRESET) {
      *closed = true;
      return Status::ok();
    }
    return WEFT_ERROR(weftSystemError, "receiving from %s: %s", peer_.toString().c_str(), errnoText(err).c_str());
  }
}

Status Socket::recvAll(void* data, size_t bytes, Deadline deadline, const std::atomic<bool>* abort) const {
  auto* p = static_cast<char*>(data);
  size_t done = 0;
  uint64_t start = nowNs();
  while (done < bytes) {
    size_t got = 0;
    bool closed = false;
    WEFT_TRY(recvSome(p + done, bytes - done, &got, &closed));
    done += got;
    if (closed) {
      if (done == 0) {
        return WEFT_ERROR(weftRemoteError, "connection to %s closed by peer while receiving %zu bytes",
                          peer_.toString().c_str(), bytes);
      }
      return WEFT_ERROR(weftRemoteError, "connection to %s closed by peer while receiving %zu bytes (%zu arrived)",
                        peer_.toString().c_str(), bytes, done);
    }
    if (got > 0 || done == bytes) continue;
    Wait w = waitFd(fd_, POLLIN, deadline, abort);
    if (w == Wait::kAborted) {
      return WEFT_ERROR(weftRemoteError, "aborted while receiving %zu bytes from %s", bytes, peer_.toString().c_str());
    }
    if (w == Wait::kTimeout) {
      return WEFT_ERROR(weftTimeout, "timed out after %.1f s receiving %zu bytes from %s (%zu arrived)",
                        secondsSince(start), bytes, peer_.toString().c_str(), done);
    }
  }
  return Status::ok();
}

}  // namespace weft
