#include "transports/net/socket_transport.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "base/log.h"
#include "base/params.h"
#include "base/socket.h"
#include "transports/net/net_link.h"
#include "transports/net/net_select.h"
#include "transports/net/socket_link.h"
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

}  // namespace

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
