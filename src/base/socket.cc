#include "base/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
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

// ---- addresses --------------------------------------------------------------------------

bool isLinkLocalV6(const SocketAddress& a) {
  if (a.family() != AF_INET6) return false;
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a.sockaddrPtr());
  return IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr);
}

// Resolves a host (numeric or a name) to one address; IPv4 results win over IPv6 ones.
Status resolveHost(const std::string& host, uint16_t port, SocketAddress* out) {
  if (host.empty()) return WEFT_ERROR(weftInvalidArgument, "empty host name in a socket address");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    return WEFT_ERROR(weftInvalidArgument, "cannot resolve host \"%s\": %s", host.c_str(), gai_strerror(rc));
  }
  const addrinfo* pick = nullptr;
  for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET) {
      pick = ai;
      break;
    }
    if (ai->ai_family == AF_INET6 && pick == nullptr) pick = ai;
  }
  if (pick == nullptr) {
    freeaddrinfo(res);
    return WEFT_ERROR(weftInvalidArgument, "host \"%s\" has no IPv4 or IPv6 address", host.c_str());
  }
  *out = SocketAddress::fromSockaddr(pick->ai_addr, pick->ai_addrlen);
  out->setPort(port);
  freeaddrinfo(res);
  return Status::ok();
}

bool parsePort(const std::string& text, uint16_t* port) {
  if (text.empty() || text.size() > 5) return false;
  uint32_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  if (v > 65535) return false;
  *port = static_cast<uint16_t>(v);
  return true;
}

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

// ---- SocketAddress ------------------------------------------------------------------------

Status SocketAddress::parse(const std::string& text, SocketAddress* out) {
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return WEFT_ERROR(weftInvalidArgument, "bad socket address \"%s\": expected [ipv6]:port", text.c_str());
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      return WEFT_ERROR(weftInvalidArgument, "bad socket address \"%s\": expected host:port", text.c_str());
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string::npos) {
      return WEFT_ERROR(weftInvalidArgument, "bad socket address \"%s\": write IPv6 addresses as [addr]:port",
                        text.c_str());
    }
  }
  uint16_t p = 0;
  if (!parsePort(port, &p)) {
    return WEFT_ERROR(weftInvalidArgument, "bad socket address \"%s\": port \"%s\" is not a number in 0..65535",
                      text.c_str(), port.c_str());
  }
  return resolveHost(host, p, out).withPrefix("bad socket address \"" + text + "\": ");
}

Status SocketAddress::fromHostPort(const std::string& host, uint16_t port, SocketAddress* out) {
  return resolveHost(host, port, out);
}

SocketAddress SocketAddress::fromSockaddr(const sockaddr* sa, socklen_t len) {
  SocketAddress a;
  if (sa != nullptr && len > 0) {
    std::memcpy(&a.storage_, sa, std::min(static_cast<size_t>(len), sizeof(a.storage_)));
  }
  return a;
}

SocketAddress SocketAddress::loopbackV4(uint16_t port) {
  SocketAddress a;
  auto* in = reinterpret_cast<sockaddr_in*>(&a.storage_);
  in->sin_family = AF_INET;
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  in->sin_port = htons(port);
  return a;
}

SocketAddress SocketAddress::anyOfFamily(int family, uint16_t port) {
  SocketAddress a;
  if (family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.storage_);
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = in6addr_any;
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&a.storage_);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_ANY);
  }
  a.setPort(port);
  return a;
}

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  return 0;
}

void SocketAddress::setPort(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage_)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage_)->sin6_port = htons(port);
}

bool SocketAddress::isLoopback() const {
  if (family() == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr.s_addr) >> 24) == 127;
  }
  if (family() == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
  }
  return false;
}

socklen_t SocketAddress::length() const {
  if (family() == AF_INET) return sizeof(sockaddr_in);
  if (family() == AF_INET6) return sizeof(sockaddr_in6);
  return 0;
}

std::string SocketAddress::hostString() const {
  char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 2] = {0};
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, buf, sizeof(buf));
    return buf;
  }
  if (family() == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage_);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
    std::string s = buf;
    if (in6->sin6_scope_id != 0) {
      char name[IF_NAMESIZE] = {0};
      s += "%";
      s += if_indextoname(in6->sin6_scope_id, name) ? std::string(name) : std::to_string(in6->sin6_scope_id);
    }
    return s;
  }
  return "(none)";
}

std::string SocketAddress::toString() const {
  if (family() == AF_INET) return hostString() + ":" + std::to_string(port());
  if (family() == AF_INET6) return "[" + hostString() + "]:" + std::to_string(port());
  return "(none)";
}

bool SocketAddress::operator==(const SocketAddress& o) const {
  if (family() != o.family()) return false;
  if (family() == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&storage_);
    const auto* b = reinterpret_cast<const sockaddr_in*>(&o.storage_);
    return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
  }
  if (family() == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage_);
    const auto* b = reinterpret_cast<const sockaddr_in6*>(&o.storage_);
    return a->sin6_port == b->sin6_port && a->sin6_scope_id == b->sin6_scope_id &&
           std::memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(in6_addr)) == 0;
  }
  return true;
}

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

Status Socket::connect(const SocketAddress& addr, Deadline deadline, const std::atomic<bool>* abort, Socket* out) {
  return connect(addr, deadline, abort, nullptr, out);
}

Status Socket::connect(const SocketAddress& addr, Deadline deadline, const std::atomic<bool>* abort,
                       SocketSource* source, Socket* out) {
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
    int err = 0;
    if (::connect(fd, addr.sockaddrPtr(), addr.length()) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        Wait w = waitFd(fd, POLLOUT, deadline, abort);
        if (w == Wait::kAborted) {
          return WEFT_ERROR(weftRemoteError, "aborted while connecting to %s", addr.toString().c_str());
        }
        if (w == Wait::kTimeout) {
          err = ETIMEDOUT;
        } else {
          socklen_t len = sizeof(err);
          if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        }
      }
    }
    if (err == 0) {
      s.refreshAddresses();
      *out = std::move(s);
      return Status::ok();
    }
    // A wait cut short by the deadline says less than the error of the attempt before it.
    if (err != ETIMEDOUT || lastErr == 0) lastErr = err;
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

// ---- interfaces ---------------------------------------------------------------------------

std::vector<NetInterface> matchInterfaces(const std::string& spec, const std::vector<NetInterface>& candidates) {
  // Parse the spec: [^][=]name,name,...
  std::string s = spec;
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t'; }), s.end());
  bool exclude = !s.empty() && s[0] == '^';
  if (exclude) s.erase(0, 1);
  bool exact = !s.empty() && s[0] == '=';
  if (exact) s.erase(0, 1);
  std::vector<std::string> names;
  for (size_t start = 0; start <= s.size();) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) names.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  bool byDefault = names.empty();

  auto nameMatches = [&](const std::string& name) {
    for (const auto& n : names) {
      if (exact ? name == n : name.compare(0, n.size(), n) == 0) return true;
    }
    return false;
  };
  auto isVirtual = [](const std::string& name) {
    for (const char* p : {"docker", "virbr", "veth"}) {
      if (name.compare(0, std::strlen(p), p) == 0) return true;
    }
    return false;
  };

  // One entry per interface: its first IPv4 address, else its first routable IPv6 one.
  std::vector<NetInterface> perIf;
  for (const auto& c : candidates) {
    if (!c.address.valid() || isLinkLocalV6(c.address)) continue;
    auto it = std::find_if(perIf.begin(), perIf.end(), [&](const NetInterface& x) { return x.name == c.name; });
    if (it == perIf.end()) {
      perIf.push_back(c);
    } else if (it->address.family() != AF_INET && c.address.family() == AF_INET) {
      it->address = c.address;
    }
  }

  // Rank: real interfaces, then bridges to containers (by default only), then loopback;
  // within each, IPv4 before IPv6. The sort is stable, so the host's order breaks ties.
  std::vector<std::pair<int, NetInterface>> ranked;
  for (const auto& i : perIf) {
    if (!byDefault && nameMatches(i.name) == exclude) continue;
    int cls = i.loopback ? 2 : (byDefault && isVirtual(i.name) ? 1 : 0);
    ranked.emplace_back(cls * 2 + (i.address.family() == AF_INET ? 0 : 1), i);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<NetInterface> out;
  for (auto& r : ranked) {
    // By default, loopback is only the fallback.
    if (byDefault && r.second.loopback && !out.empty()) break;
    out.push_back(std::move(r.second));
  }
  return out;
}

Status listInterfaces(std::vector<NetInterface>* out) {
  out->clear();
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return WEFT_ERROR(weftSystemError, "getifaddrs: %s", errnoText(errno).c_str());
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || !(ifa->ifa_flags & IFF_UP)) continue;
    int family = ifa->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    NetInterface i;
    i.name = ifa->ifa_name;
    i.address =
        SocketAddress::fromSockaddr(ifa->ifa_addr, family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    i.address.setPort(0);
    i.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
    out->push_back(std::move(i));
  }
  freeifaddrs(list);
  return Status::ok();
}

Status findInterfaces(const std::string& spec, std::vector<NetInterface>* out) {
  std::vector<NetInterface> all;
  WEFT_TRY(listInterfaces(&all));
  *out = matchInterfaces(spec, all);
  if (out->empty()) {
    std::string names;
    for (const auto& i : all) {
      if (names.find(i.name) != std::string::npos) continue;
      names += (names.empty() ? "" : ", ") + i.name;
    }
    return WEFT_ERROR(weftSystemError,
                      "no usable network interface matches WEFT_SOCKET_IFNAME=\"%s\" (up interfaces here: %s); "
                      "set WEFT_SOCKET_IFNAME to one of them",
                      spec.c_str(), names.empty() ? "none" : names.c_str());
  }
  WEFT_LOG(kInfo, kBoot, "bootstrap: using interface %s (%s)%s%s%s", out->front().name.c_str(),
           out->front().address.hostString().c_str(), spec.empty() ? "" : " chosen by WEFT_SOCKET_IFNAME=\"",
           spec.c_str(), spec.empty() ? "" : "\"");
  return Status::ok();
}

}  // namespace weft
