#include "core/bootstrap_check.h"

#include <algorithm>
#include <cstring>

namespace weft {
namespace core {
namespace wire {

namespace {

// A peer's host name must end inside its field: it is printed with %s further on.
bool terminated(const char* text, size_t capacity) { return std::memchr(text, '\0', capacity) != nullptr; }

Status checkAddress(const Addr& a, const char* what) {
  if (a.family != 4 && a.family != 6) {
    return WEFT_ERROR(weftInvalidArgument, "%s has address family %u (neither IPv4 nor IPv6)", what, a.family);
  }
  if (a.port == 0) return WEFT_ERROR(weftInvalidArgument, "%s has port 0", what);
  if (!fromWire(a).valid()) return WEFT_ERROR(weftInvalidArgument, "%s is not a usable address", what);
  return Status::ok();
}

}  // namespace

Status checkHelloPrefix(const Hello& h, size_t got) {
  if (got >= sizeof(h.magic) && h.magic != kHelloMagic) {
    return WEFT_ERROR(weftInvalidArgument,
                      "not a Weft bootstrap hello (bad magic 0x%08x; a stranger, or another program using this port)",
                      h.magic);
  }
  if (got >= sizeof(h.magic) + sizeof(h.version) && h.version != kProtocolVersion) {
    return WEFT_ERROR(weftInvalidUsage, "bootstrap protocol version %u, but the root speaks %u (mixed Weft builds?)",
                      h.version, kProtocolVersion);
  }
  return Status::ok();
}

Status checkHello(const Hello& h, const UniqueIdInfo& id, int agreedRanks) {
  WEFT_TRY(checkHelloPrefix(h, sizeof(h)));
  if (!sameSecret(h.secret, id.secret) || h.nonce != id.nonce) {
    return WEFT_ERROR(weftInvalidArgument, "wrong secret (a unique id from another communicator, or a stranger)");
  }
  if (h.nRanks < 1 || h.nRanks > kMaxRanks) {
    return WEFT_ERROR(weftInvalidArgument, "nRanks %d is out of range (1 to %d)", h.nRanks, kMaxRanks);
  }
  if (h.rank < 0 || h.rank >= h.nRanks) {
    return WEFT_ERROR(weftInvalidArgument, "rank %d is out of range for %d ranks", h.rank, h.nRanks);
  }
  if (agreedRanks > 0 && h.nRanks != agreedRanks) {
    return WEFT_ERROR(weftInvalidArgument,
                      "rank %d says the communicator has %d ranks, but the ranks that joined first say %d", h.rank,
                      h.nRanks, agreedRanks);
  }
  if (h.info.rank != h.rank) {
    return WEFT_ERROR(weftInvalidArgument, "rank %d sent the description of rank %d", h.rank, h.info.rank);
  }
  if (!terminated(h.info.hostName, sizeof(h.info.hostName))) {
    return WEFT_ERROR(weftInvalidArgument, "rank %d sent a host name without its terminating zero", h.rank);
  }
  if (h.timeoutMs > kMaxHelloTimeoutMs) {
    return WEFT_ERROR(weftInvalidArgument, "rank %d announced a wait of %llu ms (more than a year)", h.rank,
                      static_cast<unsigned long long>(h.timeoutMs));
  }
  return checkAddress(h.listen, "the hello's listen address");
}

Status checkReply(const Reply& r, int nRanks) {
  if (r.magic != kReplyMagic) {
    return WEFT_ERROR(weftInternalError, "the answer has bad magic 0x%08x (not a Weft root)", r.magic);
  }
  if (r.status < 0 || r.status >= weftNumResults) {
    return WEFT_ERROR(weftInternalError, "the answer has status %d, which is no weftResult_t", r.status);
  }
  if (r.status != weftSuccess) {
    if (r.textBytes > kMaxReplyTextBytes) {
      return WEFT_ERROR(weftInternalError, "the answer announces %u bytes of error text (at most %u)", r.textBytes,
                        kMaxReplyTextBytes);
    }
    return Status::ok();
  }
  if (r.nRanks != nRanks) {
    return WEFT_ERROR(weftInternalError, "the answer holds a table of %d ranks, not %d", r.nRanks, nRanks);
  }
  if (r.textBytes != 0) {
    return WEFT_ERROR(weftInternalError, "the answer holds the table and %u bytes of error text", r.textBytes);
  }
  return Status::ok();
}

Status checkProgress(const Progress& p, int rank, int nRanks) {
  if (p.magic != kProgressMagic) {
    return WEFT_ERROR(weftInternalError, "the progress report has bad magic 0x%08x (not a Weft root)", p.magic);
  }
  if (p.nRanks != nRanks) {
    return WEFT_ERROR(weftInternalError, "the progress report is for %d ranks, not %d", p.nRanks, nRanks);
  }
  // This rank joined before the root reported to it: at least one rank joined, never all missing.
  if (p.joined < 1 || p.joined > nRanks || p.missingTotal != nRanks - p.joined) {
    return WEFT_ERROR(weftInternalError, "the progress report says %d of %d ranks joined and %d missing", p.joined,
                      nRanks, p.missingTotal);
  }
  if (p.missingShown != std::min(p.missingTotal, kProgressMissingShown)) {
    return WEFT_ERROR(weftInternalError, "the progress report lists %d of its %d missing ranks (expected %d)",
                      p.missingShown, p.missingTotal, std::min(p.missingTotal, kProgressMissingShown));
  }
  for (int i = 0; i < p.missingShown; ++i) {
    const int r = p.missing[i];
    if (r < 0 || r >= nRanks || r == rank || (i > 0 && r <= p.missing[i - 1])) {
      return WEFT_ERROR(weftInternalError,
                        "the progress report's missing rank %d (entry %d) is out of range, this rank, or out of "
                        "order",
                        r, i);
    }
  }
  return Status::ok();
}

Status checkEntry(const Entry& e, int index) {
  if (e.info.rank != index) {
    return WEFT_ERROR(weftInternalError, "entry %d of the table describes rank %d", index, e.info.rank);
  }
  if (!terminated(e.info.hostName, sizeof(e.info.hostName))) {
    return WEFT_ERROR(weftInternalError, "entry %d of the table has a host name without its terminating zero", index);
  }
  Status s = checkAddress(e.listen, "the listen address");
  if (!s.isOk()) return Status::error(weftInternalError, "entry " + std::to_string(index) + ": " + s.message());
  return Status::ok();
}

Status checkConnHelloPrefix(const ConnHello& h, size_t got) {
  if (got >= sizeof(h.magic) && h.magic != kConnMagic) {
    return WEFT_ERROR(weftInvalidArgument, "not a Weft bootstrap connection (bad magic 0x%08x)", h.magic);
  }
  if (got >= sizeof(h.magic) + sizeof(h.version) && h.version != kProtocolVersion) {
    return WEFT_ERROR(weftInvalidUsage, "bootstrap protocol version %u, but this rank speaks %u (mixed Weft builds?)",
                      h.version, kProtocolVersion);
  }
  return Status::ok();
}

Status checkConnHello(const ConnHello& h, const UniqueIdInfo& id, int self, int nRanks) {
  WEFT_TRY(checkConnHelloPrefix(h, sizeof(h)));
  if (!sameSecret(h.secret, id.secret) || h.nonce != id.nonce) {
    return WEFT_ERROR(weftInvalidArgument, "wrong secret (another communicator, or a stranger)");
  }
  if (h.to != self || h.from < 0 || h.from >= nRanks || h.from == self) {
    return WEFT_ERROR(weftInvalidArgument, "addressed from rank %d to rank %d, but this is rank %d of %d", h.from, h.to,
                      self, nRanks);
  }
  return Status::ok();
}

Status checkFrame(const Frame& f) {
  if (f.kind != kUser && f.kind != kInternal) {
    return WEFT_ERROR(weftInternalError, "a message header of kind %u (neither user nor internal)", f.kind);
  }
  if (f.kind == kInternal && (f.tag < kGather || f.tag > kBarrierRelease)) {
    return WEFT_ERROR(weftInternalError, "an internal message with tag %d, which the bootstrap never sends", f.tag);
  }
  if (f.bytes > kMaxFrameBytes) {
    return WEFT_ERROR(weftInternalError, "a message header announcing %llu bytes (at most %llu)",
                      static_cast<unsigned long long>(f.bytes), static_cast<unsigned long long>(kMaxFrameBytes));
  }
  return Status::ok();
}

}  // namespace wire
}  // namespace core
}  // namespace weft
