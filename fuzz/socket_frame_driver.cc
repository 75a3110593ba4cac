// Fuzz driver for the socket transport's wire (transports/net/socket_wire.*, socket_transport.cc):
// frame headers in both directions, the introduction on the listener and the connection offer,
// through the pure checks and through a live listener and a live receiving link over loopback.
// See wire_drivers.h.
#include <poll.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/log.h"
#include "transports/net/socket_transport.h"
#include "transports/net/socket_wire.h"
#include "wire_driver_util.h"
#include "wire_drivers.h"

namespace weft {
namespace fuzz {
namespace {

using net::FrameHeader;

// Slot sizes the first byte chooses from: tiny ones make "larger than a slot" reachable.
size_t slotBytesFor(uint8_t b) { return static_cast<size_t>(1) << (b % 13); }

struct DataMessage {
  std::string bytes;
  uint64_t stamp = 0;  // the frame's, delivered with the message
};

// What a receiving link must deliver for the stream [p, p + n): the complete data messages
// before the first refused header, abort or truncation; *aborted when an abort frame ended it.
std::vector<DataMessage> expectedMessages(const uint8_t* p, size_t n, bool receiving, size_t slotBytes, bool* aborted) {
  std::vector<DataMessage> out;
  *aborted = false;
  size_t off = 0;
  while (n - off >= sizeof(FrameHeader)) {
    FrameHeader h;
    Status s = net::parseFrameHeader(p + off, n - off, receiving, slotBytes, &h);
    expectMessage(s, "parseFrameHeader");
    if (!s.isOk()) return out;
    off += sizeof(FrameHeader);
    if (h.type == net::kFrameAbort) {
      int culprit = net::abortCulprit(h);
      if (culprit < -1 || culprit >= static_cast<int>(net::kMaxAbortCulprit)) fail("abort culprit out of range", "");
      *aborted = true;
      return out;
    }
    if (h.type == net::kFrameCredit) {
      if (receiving) fail("parseFrameHeader accepted an acknowledgement on the data path", "");
      continue;  // the return path's acknowledgement: no payload
    }
    if (h.type != net::kFrameData || !receiving || h.bytes > slotBytes)
      fail("parseFrameHeader accepted a bad frame", "");
    if (n - off < h.bytes) return out;
    out.push_back({std::string(reinterpret_cast<const char*>(p + off), static_cast<size_t>(h.bytes)), h.stamp});
    off += static_cast<size_t>(h.bytes);
  }
  return out;
}

void frameChecks(const uint8_t* p, size_t n, bool receiving) {
  if (n == 0) return;
  bool aborted = false;
  (void)expectedMessages(p + 1, n - 1, receiving, slotBytesFor(p[0]), &aborted);
  FrameHeader h;
  if (net::parseFrameHeader(p, std::min<size_t>(n, sizeof(FrameHeader) - 1), receiving, 1 << 20, &h).isOk()) {
    fail("parseFrameHeader accepted a short header", "");
  }
}

void introductionChecks(const uint8_t* p, size_t n) {
  net::SocketHello h = readStruct<net::SocketHello>(p, n);
  bool prefixOk = net::checkSocketHelloPrefix(h, std::min(n, sizeof(h))).isOk();
  Status s = net::checkSocketHello(h, 0, 0);
  expectMessage(s, "checkSocketHello");
  if (s.isOk() && (!prefixOk || h.magic != net::kSocketHelloMagic || h.senderRank != 0 || h.lane != 0)) {
    fail("checkSocketHello accepted a bad introduction", "");
  }
}

void offerChecks(const uint8_t* p, size_t n) {
  net::SocketOffer o = readStruct<net::SocketOffer>(p, n);
  Status s = net::checkSocketOffer(o, 0, 0);
  expectMessage(s, "checkSocketOffer");
  if (s.isOk() && (o.magic != net::kSocketOfferMagic || o.receiverRank != 0 || o.lane != 0 || !o.address.valid())) {
    fail("checkSocketOffer accepted a bad offer", "");
  }
}

// ---- live code paths ----------------------------------------------------------------------

// The bootstrap as the transport sees it: keeps the offers the receiving side sends.
class OfferBox final : public PeerExchange {
 public:
  Status send(int, int, const void* data, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    last_.assign(static_cast<const char*>(data), bytes);
    return Status::ok();
  }
  Status recv(int, int, void*, size_t) override {
    return Status::error(weftInternalError, "the fuzz driver's exchange only takes offers");
  }
  net::SocketOffer lastOffer() {
    std::lock_guard<std::mutex> lock(mutex_);
    return readStruct<net::SocketOffer>(reinterpret_cast<const uint8_t*>(last_.data()), last_.size());
  }

 private:
  std::mutex mutex_;
  std::string last_;
};

struct Live {
  OfferBox box;
  net::SocketTransport transport;
  std::unique_ptr<Connection> first;  // the connection whose offer gave the listener's address
  SocketAddress listener;
};

ConnectRequest receiveRequest(PeerExchange* box, size_t slotBytes) {
  ConnectRequest r;
  r.commTag = "fuzz";
  r.self.rank = 1;
  r.self.hostHash = 1;
  r.peer.rank = 0;
  r.peer.hostHash = 2;
  std::snprintf(r.peer.hostName, sizeof(r.peer.hostName), "fuzz-sender");
  r.nSlots = 4;
  r.slotBytes = slotBytes;
  r.deadline = Deadline::afterSeconds(5);
  r.exchange = box;
  return r;
}

// One transport for the whole run, never destroyed (its proxy thread outlives any input).
Live& live() {
  static Live* l = [] {
    auto* made = new Live();
    Status s = made->transport.connectRecv(receiveRequest(&made->box, 4096), &made->first);
    if (!s.isOk()) fail("the socket transport cannot listen on loopback", s.message());
    made->listener = made->box.lastOffer().address;
    return made;
  }();
  return *l;
}

void toListener(const uint8_t* p, size_t n) {
  if (sendAndExpectHangUp(live().listener, p, n, nullptr) == HangUp::kKeptOpen) {
    fail("the listener kept a connection open after the sender went quiet", std::to_string(n) + " bytes");
  }
}

// A real receiving link reads the bytes after a valid introduction; it must deliver exactly the
// complete data messages they hold, then fail (the sender closed) without hanging.
void toLink(const uint8_t* p, size_t n) {
  if (n == 0) return;
  Live& l = live();
  const size_t slotBytes = slotBytesFor(p[0]);
  std::unique_ptr<Connection> recv;
  Status s = l.transport.connectRecv(receiveRequest(&l.box, slotBytes), &recv);
  if (!s.isOk()) fail("connectRecv failed", s.message());
  net::SocketOffer offer = l.box.lastOffer();
  net::SocketHello hello;
  hello.magic = net::kSocketHelloMagic;
  hello.token = offer.token;
  std::string bytes(reinterpret_cast<const char*>(&hello), sizeof(hello));
  bytes.append(reinterpret_cast<const char*>(p + 1), n - 1);
  bool aborted = false;
  std::vector<DataMessage> expected = expectedMessages(p + 1, n - 1, true, slotBytes, &aborted);

  Socket sender;
  if (!Socket::connect(offer.address, Deadline::afterSeconds(2), nullptr, &sender).isOk()) fail("cannot connect", "");
  (void)sender.sendAll(bytes.data(), bytes.size(), Deadline::afterSeconds(5));
  ::shutdown(sender.fd(), SHUT_WR);
  size_t got = 0;
  Deadline deadline = Deadline::afterSeconds(kHangUpWithinS);
  for (;;) {
    size_t size = 0;
    uint64_t stamp = 0;
    const void* data = recv->tryRecv(&size, &stamp);
    if (data != nullptr) {
      if (got >= expected.size()) fail("the link delivered a message the bytes do not hold", "");
      if (std::string(static_cast<const char*>(data), size) != expected[got].bytes) {
        fail("the link delivered other bytes than were sent", "message " + std::to_string(got));
      }
      if (stamp != expected[got].stamp) fail("the link delivered another stamp than was sent", std::to_string(got));
      ++got;
      recv->releaseRecv();
      continue;
    }
    Status peer = recv->checkPeer();
    if (!peer.isOk()) {
      if (peer.message().find("rank 0") == std::string::npos) fail("a link failure that names no rank", peer.message());
      if (recv->peerAborted() != aborted) fail("abort frame seen differently by the link", peer.message());
      break;
    }
    if (deadline.expired()) fail("a receiving link hung on bytes followed by a close", std::to_string(n) + " bytes");
    pollfd none{-1, 0, 0};
    ::poll(&none, 0, 1);
  }
  if (got != expected.size()) fail("the link lost complete messages before failing", std::to_string(got));
}

}  // namespace

void socketFrameOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const uint8_t* p = data + 1;
  size_t n = size - 1;
  switch (data[0] % kSocketModes) {
    case kFramesToReceiver:
      return frameChecks(p, n, true);
    case kFramesToSender:
      return frameChecks(p, n, false);
    case kIntroduction:
      return introductionChecks(p, n);
    case kOffer:
      return offerChecks(p, n);
    case kListenerRaw:
      return toListener(p, n);
    default:
      return toLink(p, n);
  }
}

}  // namespace fuzz
}  // namespace weft
