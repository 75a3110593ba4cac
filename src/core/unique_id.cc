// Unique ids: their layout, making one (with its root), and the launcher (environment) path
// to one. Also the wire helpers the bootstrap shares.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "base/params.h"
#include "core/bootstrap.h"
#include "core/bootstrap_wire.h"

namespace weft {
namespace core {

// ---- wire helpers -------------------------------------------------------------------------

namespace wire {

Addr toWire(const SocketAddress& a) {
  Addr w;
  w.port = a.port();
  if (a.family() == AF_INET) {
    w.family = 4;
    std::memcpy(w.bytes, &reinterpret_cast<const sockaddr_in*>(a.sockaddrPtr())->sin_addr, 4);
  } else if (a.family() == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a.sockaddrPtr());
    w.family = 6;
    w.scope = in6->sin6_scope_id;
    std::memcpy(w.bytes, &in6->sin6_addr, 16);
  }
  return w;
}

SocketAddress fromWire(const Addr& w) {
  sockaddr_storage ss{};
  if (w.family == 4) {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    in->sin_family = AF_INET;
    in->sin_port = htons(w.port);
    std::memcpy(&in->sin_addr, w.bytes, 4);
    return SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&ss), sizeof(sockaddr_in));
  }
  if (w.family == 6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(w.port);
    in6->sin6_scope_id = w.scope;
    std::memcpy(&in6->sin6_addr, w.bytes, 16);
    return SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&ss), sizeof(sockaddr_in6));
  }
  return SocketAddress();
}

bool sameSecret(const uint8_t* a, const uint8_t* b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < kSecretBytes; ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace wire

// ---- the unique id ------------------------------------------------------------------------

Status encodeUniqueId(const UniqueIdInfo& info, weftUniqueId* out) {
  if (!info.root.valid()) return WEFT_ERROR(weftInternalError, "unique id without a root address");
  wire::IdBlob blob{};
  blob.magic = wire::kIdMagic;
  blob.version = wire::kProtocolVersion;
  blob.root = wire::toWire(info.root);
  std::memcpy(blob.secret, info.secret, kSecretBytes);
  blob.nonce = info.nonce;
  std::memset(out->internal, 0, sizeof(out->internal));
  std::memcpy(out->internal, &blob, sizeof(blob));
  return Status::ok();
}

Status decodeUniqueId(const weftUniqueId& id, UniqueIdInfo* out) {
  wire::IdBlob blob;
  std::memcpy(&blob, id.internal, sizeof(blob));
  if (blob.magic != wire::kIdMagic) {
    return WEFT_ERROR(weftInvalidArgument,
                      "the unique id is not one Weft made (bad magic); pass the bytes weftGetUniqueId filled "
                      "to every rank unchanged");
  }
  if (blob.version != wire::kProtocolVersion) {
    return WEFT_ERROR(weftInvalidArgument,
                      "the unique id has bootstrap protocol version %u but this Weft speaks %u; use the same "
                      "Weft build on every rank",
                      blob.version, wire::kProtocolVersion);
  }
  out->root = wire::fromWire(blob.root);
  if (!out->root.valid()) return WEFT_ERROR(weftInvalidArgument, "the unique id holds no valid root address");
  std::memcpy(out->secret, blob.secret, kSecretBytes);
  out->nonce = blob.nonce;
  return Status::ok();
}

std::string commTagFromId(const weftUniqueId& id) {
  UniqueIdInfo info;
  uint64_t nonce = decodeUniqueId(id, &info).isOk() ? info.nonce : hashBytes(id.internal, sizeof(id.internal));
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(nonce));
  return buf;
}

namespace {

Status parseSecret(const std::string& hex, uint8_t* out) {
  if (hex.empty()) {
    return WEFT_ERROR(weftInvalidArgument,
                      "WEFT_ROOT_SECRET is not set; give every rank the same 32 hex digits (for example from "
                      "`openssl rand -hex 16`)");
  }
  if (hex.size() != 2 * kSecretBytes) {
    return WEFT_ERROR(weftInvalidArgument, "WEFT_ROOT_SECRET has %zu characters; it must be exactly %zu hex digits",
                      hex.size(), 2 * kSecretBytes);
  }
  auto nibble = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < kSecretBytes; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return WEFT_ERROR(weftInvalidArgument, "WEFT_ROOT_SECRET contains '%c', which is not a hex digit",
                        hi < 0 ? hex[2 * i] : hex[2 * i + 1]);
    }
    out[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return Status::ok();
}

}  // namespace

// ---- making ids ---------------------------------------------------------------------------

Status createUniqueIdAt(const SocketAddress& bind, weftUniqueId* out) {
  Socket listener;
  Status s = Socket::listen(bind, &listener);
  if (!s.isOk()) return std::move(s).withPrefix("cannot start the bootstrap root: ");
  UniqueIdInfo info;
  info.root = listener.localAddress();
  if (!randomBytes(info.secret, sizeof(info.secret)) || !randomBytes(&info.nonce, sizeof(info.nonce))) {
    return WEFT_ERROR(weftSystemError, "cannot make a unique id: the kernel gave no random bytes (getrandom)");
  }
  WEFT_TRY(encodeUniqueId(info, out));
  return launchRoot(std::move(listener), info);
}

Status createUniqueId(weftUniqueId* out) {
  std::vector<NetInterface> ifs;
  WEFT_TRY(findInterfaces(params::SocketIfname(), &ifs));
  return createUniqueIdAt(ifs.front().address, out);
}

Status startRoot(const weftUniqueId& id) {
  UniqueIdInfo info;
  WEFT_TRY(decodeUniqueId(id, &info));
  // Loopback stays loopback; any other address may be a name that resolves differently here
  // than on the other hosts, so listen on every address (the secret keeps strangers out).
  SocketAddress bind =
      info.root.isLoopback() ? info.root : SocketAddress::anyOfFamily(info.root.family(), info.root.port());
  Socket listener;
  Status s = Socket::listen(bind, &listener);
  if (!s.isOk()) return std::move(s).withPrefix("cannot start the bootstrap root for " + info.root.toString() + ": ");
  return launchRoot(std::move(listener), info);
}

Status uniqueIdFromAddress(const std::string& rootAddr, const std::string& secretHex, weftUniqueId* out) {
  if (rootAddr.empty()) {
    return WEFT_ERROR(weftInvalidArgument,
                      "WEFT_ROOT_ADDR is not set; set it on every rank to host:port where rank 0 listens "
                      "(for example WEFT_ROOT_ADDR=node0:29500)");
  }
  UniqueIdInfo info;
  Status s = SocketAddress::parse(rootAddr, &info.root);
  if (!s.isOk()) return std::move(s).withPrefix("WEFT_ROOT_ADDR: ");
  if (info.root.port() == 0) {
    return WEFT_ERROR(weftInvalidArgument, "WEFT_ROOT_ADDR=%s needs a fixed port, not 0", rootAddr.c_str());
  }
  WEFT_TRY(parseSecret(secretHex, info.secret));
  // Every rank must derive the same nonce without talking: take it from the secret and port.
  uint16_t port = info.root.port();
  info.nonce = hashBytes(&port, sizeof(port), hashBytes(info.secret, sizeof(info.secret)));
  return encodeUniqueId(info, out);
}

Status uniqueIdFromEnv(weftUniqueId* id, int* rank, int* nRanks) {
  int64_t r = params::Rank();
  int64_t n = params::NRanks();
  if (r < 0) r = params::launcherRank();
  if (n < 0) n = params::launcherSize();
  if (r < 0) {
    return WEFT_ERROR(weftInvalidArgument,
                      "weftCommInitFromEnv: WEFT_RANK is not set (nor OMPI_COMM_WORLD_RANK or PMI_RANK); the "
                      "launcher must give each process its rank");
  }
  if (n < 1) {
    return WEFT_ERROR(weftInvalidArgument,
                      "weftCommInitFromEnv: WEFT_NRANKS is not set (nor OMPI_COMM_WORLD_SIZE or PMI_SIZE); the "
                      "launcher must give each process the number of ranks");
  }
  if (r >= n || n > wire::kMaxRanks) {
    return WEFT_ERROR(weftInvalidArgument, "weftCommInitFromEnv: rank %lld is out of range for %lld ranks",
                      static_cast<long long>(r), static_cast<long long>(n));
  }
  Status s = uniqueIdFromAddress(params::RootAddr(), params::RootSecret(), id);
  if (!s.isOk()) return std::move(s).withPrefix("weftCommInitFromEnv: ");
  *rank = static_cast<int>(r);
  *nRanks = static_cast<int>(n);
  if (r == 0) {
    s = startRoot(*id);
    if (!s.isOk()) return std::move(s).withPrefix("weftCommInitFromEnv: rank 0: ");
  }
  return Status::ok();
}

}  // namespace core
}  // namespace weft
