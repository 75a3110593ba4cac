#include "transports/net/socket_transport.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "base/log.h"
#include "base/params.h"
#include "base/socket.h"
#include "transports/net/net_link.h"
#include "transports/net/net_select.h"
#include "transports/net/socket_wire.h"

namespace weft {
namespace net {
namespace {

// Bootstrap tag of the offer for lane L: kOfferTagBase + L.
constexpr int kOfferTagBase = 0x6e000;
// How long an accepted connection may take to introduce itself.
constexpr double kHelloTimeoutS = 10.0;
// Connections waiting to introduce themselves beyond which new ones are turned away.
constexpr size_t kMaxPendingIntroductions = 256;
// How long a closing sending end waits for its posted slots to reach the kernel.
constexpr double kFlushSeconds = 30.0;

// The wire format and its checks live in socket_wire.h.
using Offer = SocketOffer;
using Hello = SocketHello;

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

}  // namespace

// One direction of one edge over one TCP connection.
class SocketLink final : public NetLink {
 public:
  SocketLink(const ConnectRequest& req, bool sending, Socket socket)
      : NetLink(req, sending), lane_(req.lane), socket_(std::move(socket)) {
    if (socket_.valid()) {
      describePeer();
      fd_.store(socket_.fd());
    }
  }

  // An abort the executor asked for that the proxy had no turn to send yet goes out before the
  // socket closes (a rank that failed tears its communicator down at once): the peer would
  // otherwise see only the close and take this rank, not the one it blames, for the cause.
  ~SocketLink() override {
    if (socket_.valid() && !state_.failed() && state_.abortRequested.load()) sendAbort();
  }

  int lane() const { return lane_; }
  bool sendsReferencedBytes() const override { return true; }
  // The receiver acknowledges every message it released (a kFrameCredit frame carrying the
  // count), so that a sender's allSendsConsumed() means consumed, not just written to the
  // kernel: a receiver that refuses a message (another call: collectives/call_stamp.h) never
  // releases it, and the sender fails instead of returning success.
  bool allSendsDelivered() const override {
    uint64_t head = ring_.head.load(std::memory_order_acquire);
    return ring_.tail.load(std::memory_order_acquire) == head && consumed_.load(std::memory_order_acquire) >= head;
  }
  bool acksReleases() const override { return !sending_; }
  bool wantsDrive() const override {
    return !sending_ && !ackClosed_.load(std::memory_order_relaxed) &&
           ring_.tail.load(std::memory_order_acquire) != ackSent_.load(std::memory_order_relaxed);
  }

  // Receiving link: the connection the sender opened, handed over by the listener (proxy
  // thread); drive() adopts it.
  void attach(Socket socket) {
    std::lock_guard<std::mutex> lock(handoverMutex_);
    handover_ = std::move(socket);
    handedOver_.store(true, std::memory_order_release);
  }

  bool drive() override {
    if (!socket_.valid()) {
      if (!handedOver_.load(std::memory_order_acquire)) return false;
      std::lock_guard<std::mutex> lock(handoverMutex_);
      socket_ = std::move(handover_);
      describePeer();
      fd_.store(socket_.fd(), std::memory_order_release);
    }
    if (state_.failed()) return false;
    if (state_.abortRequested.load(std::memory_order_relaxed)) return sendAbort();
    return sending_ ? progressSend() : progressRecv();
  }

  int pollFd() const override {
    int fd = fd_.load(std::memory_order_acquire);
    if (!sending_ && !proxyReceives()) return kNothingToWaitFor;
    if (fd < 0 || state_.failed() || abortSent_.load(std::memory_order_relaxed)) return kNothingToWaitFor;
    return fd;
  }

  short pollEvents() const override {
    if (sending_) {
      bool pending = ring_.tail.load(std::memory_order_relaxed) != ring_.head.load(std::memory_order_acquire);
      return static_cast<short>(POLLIN | (pending ? POLLOUT : 0));
    }
    return roomForOne() ? POLLIN : 0;
  }

 private:
  void describePeer() {
    char text[224];
    std::snprintf(text, sizeof(text), "%s, %s", peerText_.c_str(), socket_.peerAddress().toString().c_str());
    peerText_ = text;
  }

  bool roomForOne() const {
    return ring_.head.load(std::memory_order_relaxed) - ring_.tail.load(std::memory_order_acquire) < ring_.nSlots();
  }

  void failIo(const char* doing, int err) {
    state_.fail(WEFT_ERROR(weftRemoteError,
                           "the connection to %s failed while %s: %s; its process probably exited or its host or "
                           "link went down",
                           peerText_.c_str(), doing, errnoText(err).c_str()),
                false);
  }

  void failClosed(bool midMessage) {
    state_.fail(WEFT_ERROR(weftRemoteError, "%s closed the connection%s; its process exited or failed",
                           peerText_.c_str(), midMessage ? " in the middle of a message" : ""),
                false);
  }

  // The control frames a peer may send on the reverse direction: an abort, and (to a sender)
  // acknowledgements.
  bool handleFrame(const FrameHeader& h) {
    FrameHeader checked;
    Status bad = parseFrameHeader(&h, sizeof(h), !sending_, ring_.slotBytes(), &checked);
    if (!bad.isOk()) {
      state_.fail(Status::error(bad.code(), peerText_ + " sent " + bad.message()), false);
      return false;
    }
    if (checked.type == kFrameAbort) {
      state_.setPeerCulprit(abortCulprit(checked));
      state_.fail(WEFT_ERROR(weftRemoteError, "%s reported a failure; see its log for the cause", peerText_.c_str()),
                  true);
      return false;
    }
    if (checked.type == kFrameCredit) {
      const uint64_t sent = ring_.head.load(std::memory_order_acquire);
      if (checked.bytes > sent) {
        state_.fail(WEFT_ERROR(weftRemoteError,
                               "%s acknowledged %llu messages but this rank sent %llu; another program or another "
                               "Weft version is on this connection",
                               peerText_.c_str(), static_cast<unsigned long long>(checked.bytes),
                               static_cast<unsigned long long>(sent)),
                    false);
        return false;
      }
      consumed_.store(checked.bytes, std::memory_order_release);
    }
    return true;
  }

  bool sendAbort() {
    if (abortSent_.load(std::memory_order_relaxed)) return false;
    abortSent_.store(true, std::memory_order_relaxed);
    // At a frame boundary an abort frame tells the peer this side failed; in the middle of a
    // message the connection is just shut down, which the peer sees as a closed connection.
    if (headerDone_ == 0 && dataDone_ == 0 && ackDone_ == 0) {
      FrameHeader h;
      h.magic = kFrameMagic;
      h.type = kFrameAbort;
      int culprit = state_.abortCulprit.load();
      h.bytes = culprit >= 0 ? static_cast<uint64_t>(culprit) + 1 : 0;
      ssize_t w = ::send(socket_.fd(), &h, sizeof(h), MSG_NOSIGNAL | MSG_DONTWAIT);
      (void)w;
    }
    ::shutdown(socket_.fd(), SHUT_WR);
    state_.fail(WEFT_ERROR(weftRemoteError, "this rank aborted its connection to %s", peerText_.c_str()),
                false);
    return true;
  }

  enum class Read { kComplete, kWouldBlock, kFailed };
  // Reads into p[*done, bytes) without waiting; *moved when any byte came. kFailed: the link
  // failed (closed, reset) and the failure is recorded; `midMessage` words a close.
  Read readInto(char* p, size_t bytes, size_t* done, bool midMessage, bool* moved) {
    while (*done < bytes) {
      ssize_t r = ::recv(socket_.fd(), p + *done, bytes - *done, MSG_DONTWAIT);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (wouldBlock(errno)) return Read::kWouldBlock;
        failIo("receiving from it", errno);
        return Read::kFailed;
      }
      if (r == 0) {
        failClosed(midMessage || *done != 0);
        return Read::kFailed;
      }
      *moved = true;
      *done += static_cast<size_t>(r);
    }
    return Read::kComplete;
  }

  // The receiver sends acknowledgements and at most one abort frame (or closes).
  bool readControl() {
    bool moved = false;
    for (;;) {
      Read r = readInto(reinterpret_cast<char*>(&control_), sizeof(control_), &controlDone_, false, &moved);
      if (r != Read::kComplete) return moved || r == Read::kFailed;
      controlDone_ = 0;
      if (!handleFrame(control_)) return true;
    }
  }

  // Receiving link: tells the sender how many messages the executor has released so far.
  bool sendAck() {
    if (ackClosed_.load(std::memory_order_relaxed)) return false;
    if (ackDone_ == 0) {
      uint64_t released = ring_.tail.load(std::memory_order_acquire);
      if (released == ackSent_.load(std::memory_order_relaxed)) return false;
      ack_.magic = kFrameMagic;
      ack_.type = kFrameCredit;
      ack_.bytes = released;
      ack_.stamp = 0;
    }
    while (ackDone_ < sizeof(ack_)) {
      ssize_t w = ::send(socket_.fd(), reinterpret_cast<const char*>(&ack_) + ackDone_, sizeof(ack_) - ackDone_,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (wouldBlock(errno)) return false;  // wantsDrive() keeps the proxy at it
        // A sender that closed after its last message no longer reads: what it sent before
        // still counts, and reading finds the close once that is taken.
        ackClosed_.store(true, std::memory_order_relaxed);
        return false;
      }
      ackDone_ += static_cast<size_t>(w);
    }
    ackDone_ = 0;
    ackSent_.store(ack_.bytes, std::memory_order_relaxed);
    return true;
  }

  bool progressSend() {
    bool moved = readControl();
    if (state_.failed()) return moved;
    for (;;) {
      uint64_t tail = ring_.tail.load(std::memory_order_relaxed);
      if (tail == ring_.head.load(std::memory_order_acquire)) return moved;
      size_t bytes = ring_.size(tail).load(std::memory_order_relaxed);
      const char* data = ring_.slot(tail);
      resolveReferencedBytes(&data, &bytes);
      if (headerDone_ == 0 && dataDone_ == 0) {
        header_.magic = kFrameMagic;
        header_.type = kFrameData;
        header_.bytes = bytes;
        header_.stamp = ring_.stamp(tail).load(std::memory_order_relaxed);
      }
      iovec iov[2];
      int n = 0;
      if (headerDone_ < sizeof(header_)) {
        iov[n++] = {reinterpret_cast<char*>(&header_) + headerDone_, sizeof(header_) - headerDone_};
      }
      if (dataDone_ < bytes) iov[n++] = {const_cast<char*>(data) + dataDone_, bytes - dataDone_};
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<size_t>(n);
      ssize_t w = ::sendmsg(socket_.fd(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (wouldBlock(errno)) return moved;
        failIo("sending to it", errno);
        return true;
      }
      moved = true;
      size_t written = static_cast<size_t>(w);
      size_t toHeader = std::min(written, sizeof(header_) - headerDone_);
      headerDone_ += toHeader;
      dataDone_ += written - toHeader;
      if (headerDone_ < sizeof(header_) || dataDone_ < bytes) return moved;  // the socket is full
      headerDone_ = dataDone_ = 0;
      ring_.tail.store(tail + 1, std::memory_order_release);
    }
  }

  bool progressRecv() {
    bool moved = sendAck();
    if (state_.failed()) return true;
    for (;;) {
      uint64_t head = ring_.head.load(std::memory_order_relaxed);
      if (headerDone_ < sizeof(header_)) {
        // Take a message only when a slot is free for it; until then it waits in the kernel.
        if (head - ring_.tail.load(std::memory_order_acquire) >= ring_.nSlots()) return moved;
        Read r = readInto(reinterpret_cast<char*>(&header_), sizeof(header_), &headerDone_, false, &moved);
        if (r != Read::kComplete) return moved || r == Read::kFailed;
        if (!handleFrame(header_)) return true;
      }
      size_t bytes = static_cast<size_t>(header_.bytes);
      Read r = readInto(ring_.slot(head), bytes, &dataDone_, true, &moved);
      if (r != Read::kComplete) return moved || r == Read::kFailed;
      ring_.size(head).store(bytes, std::memory_order_relaxed);
      ring_.stamp(head).store(header_.stamp, std::memory_order_relaxed);
      ring_.head.store(head + 1, std::memory_order_release);
      headerDone_ = dataDone_ = 0;
      moved = true;
    }
  }

  const int lane_;
  Socket socket_;                  // touched by drive() only
  std::atomic<int> fd_{-1};        // socket_'s descriptor once it is set, for pollFd()
  std::mutex handoverMutex_;       // guards handover_
  Socket handover_;
  std::atomic<bool> handedOver_{false};
  FrameHeader header_;
  size_t headerDone_ = 0;
  size_t dataDone_ = 0;
  FrameHeader control_;
  size_t controlDone_ = 0;
  FrameHeader ack_;                      // receiving: the acknowledgement on its way
  size_t ackDone_ = 0;
  std::atomic<uint64_t> ackSent_{0};     // receiving: released messages the sender knows of
  std::atomic<uint64_t> consumed_{0};    // sending: messages the receiver acknowledged
  std::atomic<bool> ackClosed_{false};   // receiving: the sender no longer takes acknowledgements
  std::atomic<bool> abortSent_{false};
};

// Accepts the connections senders open and hands each to the receiving link whose token it
// presents. Runs on the proxy thread; expect() is called from the ranks' threads.
class SocketListener final : public ProxyTask {
 public:
  SocketListener(Socket socket, int selfRank) : socket_(std::move(socket)), selfRank_(selfRank) {}

  const SocketAddress& address() const { return socket_.localAddress(); }

  void expect(uint64_t token, std::shared_ptr<SocketLink> link) {
    std::lock_guard<std::mutex> lock(mutex_);
    expected_[token] = std::move(link);
  }

  bool progress() override {
    bool moved = false;
    for (;;) {
      Socket s;
      Status accepted = socket_.tryAccept(&s);
      if (!accepted.isOk()) {
        WEFT_LOG(kWarn, kNet, "rank %d: network listener %s: %s", selfRank_, address().toString().c_str(),
                 accepted.message().c_str());
        break;
      }
      if (!s.valid()) break;
      if (pending_.size() >= kMaxPendingIntroductions) {
        // A flood must not exhaust descriptors, nor lock real senders out: the connection that
        // has waited longest goes (a sender introduces itself at once; a stranger had its chance).
        drop(pending_.front(), "it was the oldest of too many connections waiting to introduce themselves");
        pending_.erase(pending_.begin());
      }
      pending_.push_back(Pending{std::move(s), Hello(), 0, Deadline::afterSeconds(kHelloTimeoutS)});
      moved = true;
    }
    for (size_t i = 0; i < pending_.size();) {
      if (servePending(pending_[i], &moved)) {
        pending_.erase(pending_.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
    return moved;
  }

  int pollFd() const override { return pending_.empty() ? socket_.fd() : kPollSlice; }

 private:
  struct Pending {
    Socket socket;
    Hello hello;
    size_t got;
    Deadline deadline;
  };

  void drop(const Pending& p, const char* why) {
    WEFT_LOG(kWarn, kNet,
             "rank %d: dropped a connection to the network listener %s from %s: %s. A program that is not a rank "
             "of this communicator connected (a port scanner, another job); nothing was changed",
             selfRank_, address().toString().c_str(), p.socket.peerAddress().toString().c_str(), why);
  }

  // True when the pending connection is finished with (handed over or dropped).
  bool servePending(Pending& p, bool* moved) {
    size_t got = 0;
    bool closed = false;
    Status s = p.socket.recvSome(reinterpret_cast<char*>(&p.hello) + p.got, sizeof(Hello) - p.got, &got, &closed);
    if (!s.isOk()) {
      drop(p, s.message().c_str());
      return true;
    }
    p.got += got;
    *moved = *moved || got > 0;
    Status bad = checkSocketHelloPrefix(p.hello, p.got);
    if (!bad.isOk()) {
      drop(p, bad.message().c_str());
      return true;
    }
    if (p.got < sizeof(Hello)) {
      if (closed) {
        drop(p, "it closed the connection before introducing itself");
        return true;
      }
      if (p.deadline.expired()) {
        drop(p, "it sent no valid introduction within 10 s");
        return true;
      }
      return false;
    }
    std::shared_ptr<SocketLink> link;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = expected_.find(p.hello.token);
      if (it != expected_.end()) {
        link = it->second.lock();
        expected_.erase(it);
      }
    }
    if (!link) {
      drop(p, "it presented a token this rank did not issue");
      return true;
    }
    bad = checkSocketHello(p.hello, link->peerRank(), link->lane());
    if (!bad.isOk()) {
      drop(p, bad.message().c_str());
      return true;
    }
    WEFT_LOG(kInfo, kNet, "rank %d: rank %d lane %d connected from %s", selfRank_, p.hello.senderRank,
             p.hello.lane, p.socket.peerAddress().toString().c_str());
    link->attach(std::move(p.socket));
    return true;
  }

  Socket socket_;
  int selfRank_;
  std::vector<Pending> pending_;  // proxy thread only
  std::mutex mutex_;              // guards expected_
  std::map<uint64_t, std::weak_ptr<SocketLink>> expected_;
};

namespace {

struct Registrar {
  Registrar() {
    registerTransport("socket", 10, [] { return std::unique_ptr<Transport>(new SocketTransport()); });
  }
} registrar;

Status checkRequest(const ConnectRequest& req) {
  if (req.exchange == nullptr || req.self.rank < 0 || req.peer.rank < 0 || req.lane < 0 || req.nSlots < 1 ||
      req.slotBytes < 1) {
    return WEFT_ERROR(weftInternalError,
                      "socket transport: bad connect request (rank %d, peer %d, lane %d, %zu slots of %zu bytes, "
                      "exchange %s); this is a bug in the caller",
                      req.self.rank, req.peer.rank, req.lane, req.nSlots, req.slotBytes,
                      req.exchange ? "set" : "missing");
  }
  return Status::ok();
}

}  // namespace

SocketTransport::SocketTransport() = default;

SocketTransport::~SocketTransport() {
  if (!proxy_) return;
  if (listener_) proxy_->remove(listener_.get());
  for (auto& [name, e] : nics_) {
    if (e.listener) proxy_->remove(e.listener.get());
  }
}

bool SocketTransport::canConnect(const PeerInfo& self, const PeerInfo& peer) const {
  if (selectedNet() != NetKind::kSocket) return false;
  return self.hostHash != peer.hostHash || params::ShmDisable();
}

Status SocketTransport::defaultListener(int selfRank, std::shared_ptr<SocketListener>* out) {
  if (!proxy_) {
    auto proxy = std::make_shared<Proxy>("weft-net-sock");
    WEFT_TRY(proxy->start());
    proxy_ = std::move(proxy);
  }
  if (!listener_) {
    std::vector<NetInterface> ifs;
    WEFT_TRY(findInterfaces(params::SocketIfname(), &ifs));
    Socket socket;
    Status listening = Socket::listen(ifs.front().address, &socket);
    if (!listening.isOk()) {
      return std::move(listening).withPrefix("rank " + std::to_string(selfRank) +
                                             ": the socket transport cannot listen on " + ifs.front().name + ": ");
    }
    listener_ = std::make_shared<SocketListener>(std::move(socket), selfRank);
    WEFT_LOG(kInfo, kNet, "rank %d: socket transport listens on %s (%s); WEFT_SOCKET_IFNAME chooses the interface",
             selfRank, listener_->address().toString().c_str(), ifs.front().name.c_str());
    proxy_->add(listener_);
  }
  *out = listener_;
  return Status::ok();
}

Status SocketTransport::listenerFor(const ConnectRequest& req, std::shared_ptr<SocketListener>* out,
                                    NicInterface* nic) {
  std::lock_guard<std::mutex> lock(startMutex_);
  const int self = req.self.rank;
  std::shared_ptr<SocketListener> fallback;
  WEFT_TRY(defaultListener(self, &fallback));
  *out = fallback;
  *nic = NicInterface();
  // Ranks on one host talk over the loopback or the default interface: no NIC to choose.
  if (req.nic.empty() || req.self.hostHash == req.peer.hostHash) return Status::ok();
  auto it = nics_.find(req.nic);
  if (it == nics_.end()) {
    NicEndpoint e;
    std::vector<NetInterface> up;
    WEFT_TRY(listInterfaces(&up));
    e.nic = chooseNicInterface(req.nic, up, netdevsOfRdmaDevice(req.nic), params::SocketIfname());
    if (e.nic.usable) {
      Socket socket;
      Status listening = Socket::listen(e.nic.iface.address, &socket);
      if (listening.isOk()) {
        e.listener = std::make_shared<SocketListener>(std::move(socket), self);
        proxy_->add(e.listener);
        WEFT_LOG(kInfo, kNet, "rank %d: socket transport listens on %s (%s) for NIC %s, which the topology chose",
                 self, e.listener->address().toString().c_str(), e.nic.iface.name.c_str(), req.nic.c_str());
      } else {
        e.nic.usable = false;
        e.nic.why = "listening on its address failed: " + listening.message();
      }
    }
    if (!e.nic.usable) {
      WEFT_LOG(kWarn, kNet,
               "rank %d: the topology routes this rank's traffic to other hosts through NIC %s, but %s; the socket "
               "transport uses its default interface (%s) instead",
               self, req.nic.c_str(), e.nic.why.c_str(), fallback->address().hostString().c_str());
    }
    it = nics_.emplace(req.nic, std::move(e)).first;
  }
  if (it->second.nic.usable) {
    *out = it->second.listener;
    *nic = it->second.nic;
  }
  return Status::ok();
}

Status SocketTransport::connectFrom(const ConnectRequest& req, const NicInterface& nic, const SocketAddress& to,
                                    Socket* out) {
  const std::string who = "rank " + std::to_string(req.self.rank) + ": connecting to rank " +
                          std::to_string(req.peer.rank) + " (host " + req.peer.hostName + ") over the socket transport";
  if (nic.usable) {
    SocketSource source{nic.iface.address, nic.iface.name};
    Status viaNic = Socket::connect(to, req.deadline, req.abort, &source, out);
    if (viaNic.isOk() || viaNic.code() != weftSystemError) {
      if (!viaNic.isOk()) return std::move(viaNic).withPrefix(who + " from NIC " + req.nic + ": ");
      WEFT_LOG(kInfo, kNet, "rank %d: lane %d to rank %d leaves through NIC %s (%s, %s)", req.self.rank, req.lane,
               req.peer.rank, req.nic.c_str(), nic.iface.name.c_str(),
               source.deviceBound ? "bound to the interface" : "bound to its address; SO_BINDTODEVICE needs root");
      return Status::ok();
    }
    // Bound to the NIC the peer cannot be reached (no route through it): the default route can.
    WEFT_LOG(kWarn, kNet, "%s: not through NIC %s (%s): %s; using the default route instead", who.c_str(),
             req.nic.c_str(), nic.iface.name.c_str(), viaNic.message().c_str());
  }
  Status connected = Socket::connect(to, req.deadline, req.abort, out);
  if (!connected.isOk()) return std::move(connected).withPrefix(who + ": ");
  return Status::ok();
}

Status SocketTransport::connectRecv(const ConnectRequest& req, std::unique_ptr<Connection>* out) {
  WEFT_TRY(checkRequest(req));
  std::shared_ptr<SocketListener> listener;
  NicInterface nic;
  WEFT_TRY(listenerFor(req, &listener, &nic));
  auto link = std::make_shared<SocketLink>(req, false, Socket());
  Offer offer;
  offer.magic = kSocketOfferMagic;
  if (!randomBytes(&offer.token, sizeof(offer.token))) offer.token = hashBytes(&link, sizeof(link), nowNs());
  offer.address = listener->address();
  offer.lane = req.lane;
  offer.receiverRank = req.self.rank;
  listener->expect(offer.token, link);
  Status sent = req.exchange->send(req.peer.rank, kOfferTagBase + req.lane, &offer, sizeof(offer));
  if (!sent.isOk()) return std::move(sent).withPrefix("socket transport: sending the connection offer: ");
  *out = makeNetConnection(std::move(link), proxy_, kFlushSeconds);
  return Status::ok();
}

Status SocketTransport::connectSend(const ConnectRequest& req, std::unique_ptr<Connection>* out) {
  WEFT_TRY(checkRequest(req));
  std::shared_ptr<SocketListener> listener;
  NicInterface nic;
  WEFT_TRY(listenerFor(req, &listener, &nic));
  Offer offer;
  Status got = req.exchange->recv(req.peer.rank, kOfferTagBase + req.lane, &offer, sizeof(offer), req.deadline, req.abort);
  if (!got.isOk()) return std::move(got).withPrefix("socket transport: waiting for the connection offer: ");
  Status bad = checkSocketOffer(offer, req.peer.rank, req.lane);
  if (!bad.isOk()) return std::move(bad).withPrefix("rank " + std::to_string(req.self.rank) + ": ");
  Socket socket;
  WEFT_TRY(connectFrom(req, nic, offer.address, &socket));
  Hello hello;
  hello.magic = kSocketHelloMagic;
  hello.token = offer.token;
  hello.senderRank = req.self.rank;
  hello.lane = req.lane;
  WEFT_TRY(socket.sendAll(&hello, sizeof(hello), req.deadline, req.abort));
  WEFT_LOG(kInfo, kNet, "rank %d: sending to rank %d lane %d over TCP %s -> %s", req.self.rank, req.peer.rank,
           req.lane, socket.localAddress().toString().c_str(), offer.address.toString().c_str());
  auto link = std::make_shared<SocketLink>(req, true, std::move(socket));
  *out = makeNetConnection(std::move(link), proxy_, kFlushSeconds);
  return Status::ok();
}

}  // namespace net
}  // namespace weft
