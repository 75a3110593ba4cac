#include "transports/net/socket_wire.h"

#include <cstring>

namespace weft {
namespace net {

Status parseFrameHeader(const void* bytes, size_t n, bool receiving, size_t slotBytes, FrameHeader* out) {
  if (n < sizeof(FrameHeader)) {
    return WEFT_ERROR(weftRemoteError, "a frame header of %zu bytes (%zu expected)", n, sizeof(FrameHeader));
  }
  FrameHeader h;
  std::memcpy(&h, bytes, sizeof(h));
  if (h.magic != kFrameMagic || (h.type != kFrameData && h.type != kFrameAbort && h.type != kFrameCredit)) {
    return WEFT_ERROR(weftRemoteError,
                      "bytes that are not a Weft frame (magic 0x%08x, type %u); another program or another Weft "
                      "version is on this connection",
                      h.magic, h.type);
  }
  if (h.type == kFrameData && !receiving) {
    return WEFT_ERROR(weftRemoteError,
                      "a data frame of %llu bytes on the connection's return path, which carries only aborts; the "
                      "ranks run different Weft versions",
                      static_cast<unsigned long long>(h.bytes));
  }
  if (h.type == kFrameCredit && receiving) {
    return WEFT_ERROR(weftRemoteError,
                      "an acknowledgement (%llu messages) on the connection's data path, which carries only data and "
                      "aborts; the ranks run different Weft versions",
                      static_cast<unsigned long long>(h.bytes));
  }
  if (h.type == kFrameData && h.bytes > slotBytes) {
    return WEFT_ERROR(weftRemoteError,
                      "a data message of %llu bytes where slots hold %zu; the ranks run with different "
                      "WEFT_BUFFSIZE/WEFT_NSLOTS or Weft versions",
                      static_cast<unsigned long long>(h.bytes), slotBytes);
  }
  *out = h;
  return Status::ok();
}

int abortCulprit(const FrameHeader& h) {
  if (h.type != kFrameAbort || h.bytes < 1 || h.bytes > kMaxAbortCulprit) return -1;
  return static_cast<int>(h.bytes - 1);
}

Status checkSocketHelloPrefix(const SocketHello& h, size_t got) {
  if (got >= sizeof(h.magic) && h.magic != kSocketHelloMagic) {
    return WEFT_ERROR(weftRemoteError, "its first bytes are not a Weft introduction (magic 0x%016llx)",
                      static_cast<unsigned long long>(h.magic));
  }
  return Status::ok();
}

Status checkSocketHello(const SocketHello& h, int expectedRank, int expectedLane) {
  WEFT_TRY(checkSocketHelloPrefix(h, sizeof(h)));
  if (h.senderRank != expectedRank || h.lane != expectedLane) {
    return WEFT_ERROR(weftRemoteError,
                      "it presented the token of rank %d lane %d but introduced itself as rank %d lane %d (another "
                      "connection's token)",
                      expectedRank, expectedLane, h.senderRank, h.lane);
  }
  return Status::ok();
}

Status checkSocketOffer(const SocketOffer& o, int peerRank, int lane) {
  if (o.magic != kSocketOfferMagic || o.lane != lane || o.receiverRank != peerRank || !o.address.valid()) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d answered the socket transport's connection request for lane %d with something else "
                      "(magic 0x%llx, lane %d, rank %d, address %s); every rank must use the same WEFT_NET and Weft "
                      "version",
                      peerRank, lane, static_cast<unsigned long long>(o.magic), o.lane, o.receiverRank,
                      o.address.valid() ? "valid" : "invalid");
  }
  return Status::ok();
}

}  // namespace net
}  // namespace weft
