// SocketAddress (socket_address.h): parsing "host:port" text (names resolved, IPv4 first),
// conversions to and from sockaddr, and printing.
#include "base/socket_address.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>

#include <algorithm>
#include <cstring>

namespace weft {
namespace {

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

}  // namespace

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

}  // namespace weft
