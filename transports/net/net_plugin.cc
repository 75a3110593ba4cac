// The net-plugin transport (net_plugin.h): Weft's link protocol over a plugin's
// one-directional communications. The loader is net_plugin_loader.cc.
#include "transports/net/net_plugin.h"

#include <cstring>
#include <deque>
#include <vector>

#include "base/log.h"
#include "base/params.h"
#include "transports/net/net_builtin.h"
#include "transports/net/net_link.h"
#include "transports/net/net_select.h"

namespace weft {
namespace net {
namespace {

// Bootstrap tag of the offer for lane L: kOfferTagBase + L (the socket transport uses 0x6e000).
constexpr int kOfferTagBase = 0x6f000;
constexpr uint32_t kOfferMagic = 0x4e504c47u;  // "GLPN"
constexpr uint32_t kFrameHello = 0x100;        // first message: the sender's back-channel handle
constexpr double kFlushSeconds = 30.0;

// What the receiver sends the sender through the bootstrap.
struct Offer {
  uint32_t magic = 0;
  uint32_t version = 0;
  int32_t rank = -1;
  int32_t lane = -1;
  uint64_t nSlots = 0;
  uint64_t slotBytes = 0;
  char plugin[64] = {0};  // the receiver's plugin name: both sides must use the same
  unsigned char handle[WEFT_NET_HANDLE_BYTES_V1] = {0};
};

// One direction of one edge over the plugin. Sending link: forward sendComm (data, hello,
// abort) plus a back recvComm the receiver connects to (abort). Receiving link: forward
// recvComm, and a back sendComm once the hello told it where.
class PluginLink final : public NetLink {
 public:
  // Each slot has room for a FrameHeader after its bytes: a data message is the slot's payload
  // with its header as a trailer, sent from and received into the slot itself (no copy).
  PluginLink(const ConnectRequest& req, bool sending, const NetPlugin* plugin)
      : NetLink(req, sending, sizeof(FrameHeader)), ops_(plugin->ops), pluginName_(plugin->name) {
    ctl_.resize(sizeof(FrameHeader) + WEFT_NET_HANDLE_BYTES_V1);
  }
  ~PluginLink() override {
    // Requests are abandoned with their communications (net_v1.h).
    if (sendComm_) ops_.closeSend(sendComm_);
    if (recvComm_) ops_.closeRecv(recvComm_);
    if (listenComm_) ops_.closeListen(listenComm_);
    if (backSend_) ops_.closeSend(backSend_);
    if (backRecv_) ops_.closeRecv(backRecv_);
    if (backListen_) ops_.closeListen(backListen_);
  }

  bool sendsReferencedBytes() const override { return sending_; }
  // As over the socket transport, the receiver acknowledges every message it released (a
  // kFrameCredit frame on the back channel carrying the count), so a sender's
  // allSendsConsumed() means consumed: a receiver that refuses a message (another call:
  // collectives/call_stamp.h) never releases it, and the sender fails instead of succeeding.
  bool allSendsDelivered() const override {
    const uint64_t head = ring_.head.load(std::memory_order_acquire);
    return ring_.tail.load(std::memory_order_acquire) == head && consumed_.load(std::memory_order_acquire) >= head;
  }
  bool acksReleases() const override { return !sending_; }
  bool wantsDrive() const override {
    return !sending_ && !ackClosed_.load(std::memory_order_relaxed) &&
           ring_.tail.load(std::memory_order_acquire) != ackSent_.load(std::memory_order_relaxed);
  }

  // Receiver: listens and fills the offer's handle.
  Status listen(Offer* offer) {
    weftResult_t r = ops_.listen(0, offer->handle, &listenComm_);
    if (r != weftSuccess) return pluginError("listen", r);
    return Status::ok();
  }
  // Sender: listens for the back channel, connects forward (waiting until the deadline).
  Status connect(const Offer& offer, const ConnectRequest& req) {
    weftResult_t r = ops_.listen(0, hello_.data(), &backListen_);
    if (r != weftSuccess) return pluginError("listen", r);
    Backoff backoff;
    while (sendComm_ == nullptr) {
      r = ops_.connect(0, offer.handle, &sendComm_);
      if (r != weftSuccess) return pluginError("connect", r);
      if (sendComm_) break;
      if (req.abort && req.abort->load()) {
        return WEFT_ERROR(weftRemoteError, "connecting to %s ended: the communicator was aborted", peerText_.c_str());
      }
      if (req.deadline.expired()) {
        return WEFT_ERROR(weftTimeout, "network plugin %s: connecting to %s timed out", pluginName_.c_str(),
                          peerText_.c_str());
      }
      backoff.pause();
    }
    return Status::ok();
  }

 protected:
  bool drive() override {
    if (abortRequest_) {
      // Our abort frame is on its way: keep it moving (the link has failed already).
      int finished = 0;
      size_t n = 0;
      if (ops_.test(abortRequest_, &finished, &n) != weftSuccess || finished) abortRequest_ = nullptr;
    }
    if (state_.failed()) return false;
    return sending_ ? driveSend() : driveRecv();
  }

 private:
  struct Pending {
    void* request = nullptr;
    uint64_t counter = 0;
  };

  Status pluginError(const char* what, weftResult_t r) const {
    return WEFT_ERROR(r == weftRemoteError ? weftRemoteError : weftSystemError,
                      "rank %d: network plugin %s failed %s with %s: %s", selfRank_, pluginName_.c_str(), what,
                      peerText_.c_str(), netResultName(r));
  }
  void fail(const char* what, weftResult_t r) {
    if (r == weftRemoteError) {
      state_.fail(WEFT_ERROR(weftRemoteError,
                             "%s closed the connection (network plugin %s, %s); check that rank's "
                             "output",
                             peerText_.c_str(), pluginName_.c_str(), what),
                  false);
    } else {
      state_.fail(pluginError(what, r), false);
    }
  }
  // Polls a request; true when it completed. On an error the link fails and *failed is set.
  bool done(void* request, const char* what, size_t* size, bool* failed) {
    int finished = 0;
    size_t n = 0;
    weftResult_t r = ops_.test(request, &finished, &n);
    if (r != weftSuccess) {
      fail(what, r);
      *failed = true;
      return false;
    }
    if (finished && size) *size = n;
    return finished != 0;
  }
  // Starts sending one frame from `buffer`; false when the plugin cannot take it now.
  bool startSend(void* comm, void* buffer, size_t bytes, void** request) {
    weftResult_t r = ops_.isend(comm, buffer, bytes, 0, request);
    if (r != weftSuccess) {
      fail("sending", r);
      return false;
    }
    return *request != nullptr;
  }
  void abortFrame(std::vector<char>& buffer) {
    FrameHeader h;
    h.magic = kFrameMagic;
    h.type = kFrameAbort;
    int culprit = state_.abortCulprit.load();
    h.bytes = culprit >= 0 ? static_cast<uint64_t>(culprit) + 1 : 0;
    std::memcpy(buffer.data(), &h, sizeof(h));
  }
  // Reads an abort frame the peer sent; true when it was one.
  bool takeAbort(const char* frame, size_t n) {
    FrameHeader h;
    if (n < sizeof(h)) return false;
    std::memcpy(&h, frame, sizeof(h));
    if (h.magic != kFrameMagic || h.type != kFrameAbort) return false;
    state_.setPeerCulprit(h.bytes == 0 ? -1 : static_cast<int>(h.bytes - 1));
    state_.fail(WEFT_ERROR(weftRemoteError, "%s reported a failure; see its log for the cause", peerText_.c_str()),
                true);
    return true;
  }
  // This side's abort: sent once, on whichever communication leads to the peer.
  bool sendAbort(void* comm) {
    if (abortSent_ || comm == nullptr) return false;
    abortFrame(abortBuf_);
    void* request = nullptr;
    if (!startSend(comm, abortBuf_.data(), sizeof(FrameHeader), &request)) return false;
    abortSent_ = true;
    abortRequest_ = request;
    state_.fail(WEFT_ERROR(weftRemoteError, "this rank aborted its connection to %s", peerText_.c_str()), false);
    return true;
  }

  // Sender: the frames the receiver sends back (credits, an abort); false when the link failed.
  bool takeControl(bool* moved) {
    for (;;) {
      if (ctlRequest_ == nullptr) {
        weftResult_t r = ops_.irecv(backRecv_, ctl_.data(), ctl_.size(), 0, &ctlRequest_);
        if (r != weftSuccess) return fail("receiving", r), false;
        if (ctlRequest_ == nullptr) return true;
      }
      size_t n = 0;
      bool failed = false;
      if (!done(ctlRequest_, "receiving", &n, &failed)) return !failed;
      ctlRequest_ = nullptr;
      *moved = true;
      if (takeAbort(ctl_.data(), n)) return false;
      FrameHeader h;
      std::memcpy(&h, ctl_.data(), std::min(n, sizeof(h)));
      const uint64_t sent = ring_.head.load(std::memory_order_acquire);
      if (n != sizeof(h) || h.magic != kFrameMagic || h.type != kFrameCredit || h.bytes > sent) {
        state_.fail(WEFT_ERROR(weftRemoteError,
                               "%s sent a control message this rank cannot use over network plugin %s (%zu bytes, "
                               "acknowledging %llu of %llu messages); the plugin corrupted it or another program is "
                               "on this connection",
                               peerText_.c_str(), pluginName_.c_str(), n, static_cast<unsigned long long>(h.bytes),
                               static_cast<unsigned long long>(sent)),
                    false);
        return false;
      }
      consumed_.store(h.bytes, std::memory_order_release);
    }
  }

  // Receiver: tells the sender how many messages the executor has released, one
  // acknowledgement in flight at a time.
  bool sendAck() {
    if (ackRequest_) {
      int finished = 0;
      size_t n = 0;
      if (ops_.test(ackRequest_, &finished, &n) != weftSuccess) {
        // A sender that closed after its last message no longer reads; what it sent still counts.
        ackClosed_.store(true, std::memory_order_relaxed);
        ackRequest_ = nullptr;
        return false;
      }
      if (!finished) return false;
      ackRequest_ = nullptr;
      ackSent_.store(ackInFlight_, std::memory_order_relaxed);
    }
    if (backSend_ == nullptr || ackClosed_.load(std::memory_order_relaxed)) return false;
    const uint64_t released = ring_.tail.load(std::memory_order_acquire);
    if (released == ackSent_.load(std::memory_order_relaxed)) return false;
    FrameHeader h;
    h.magic = kFrameMagic;
    h.type = kFrameCredit;
    h.bytes = released;
    std::memcpy(ackBuf_.data(), &h, sizeof(h));
    weftResult_t r = ops_.isend(backSend_, ackBuf_.data(), sizeof(h), 0, &ackRequest_);
    if (r != weftSuccess) {
      // A sender that closed after its last message no longer reads; what it sent still counts.
      ackClosed_.store(true, std::memory_order_relaxed);
      ackRequest_ = nullptr;
      return false;
    }
    if (ackRequest_ == nullptr) return false;
    ackInFlight_ = released;
    return true;
  }

  // Sender: one turn of the proxy: the back channel, the hello, the slots, the completions.
  bool driveSend() {
    bool moved = false, failed = false;
    // The back channel: the receiver connects to it and may send an abort on it.
    if (backRecv_ == nullptr) {
      weftResult_t r = ops_.accept(backListen_, &backRecv_);
      if (r != weftSuccess) return fail("accepting the back channel", r), true;
      moved = backRecv_ != nullptr;
    }
    if (backRecv_ && !takeControl(&moved)) return true;
    // The hello first, even before an abort: the back channel's handle.
    if (!helloSent_) {
      if (!startHello()) return moved;
      moved = true;
    }
    if (state_.abortRequested.load(std::memory_order_relaxed)) return sendAbort(sendComm_);
    bool overflowed = false;
    moved = postSlots(&overflowed) || moved;
    if (overflowed) return true;
    if (helloRequest_ && done(helloRequest_, "sending", nullptr, &failed)) helloRequest_ = nullptr;
    if (failed) return true;
    // Completed sends free their slots, in order.
    while (!inflight_.empty() && done(inflight_.front().request, "sending", nullptr, &failed)) {
      ring_.tail.store(inflight_.front().counter + 1, std::memory_order_release);
      inflight_.pop_front();
      moved = true;
    }
    return moved || failed;
  }

  // Sender: starts sending the hello (the back channel's handle); false while the plugin cannot
  // take it.
  bool startHello() {
    FrameHeader h;
    h.magic = kFrameMagic;
    h.type = kFrameHello;
    h.bytes = WEFT_NET_HANDLE_BYTES_V1;
    std::memcpy(helloFrame_.data(), &h, sizeof(h));
    std::memcpy(helloFrame_.data() + sizeof(h), hello_.data(), WEFT_NET_HANDLE_BYTES_V1);
    if (!startSend(sendComm_, helloFrame_.data(), helloFrame_.size(), &helloRequest_)) return false;
    helloSent_ = true;
    return true;
  }

  // Sender: posts every slot not on its way yet: the bytes (a reference's, copied in) and the
  // header. True when any went; *overflowed when a slot held more than it can (the link failed).
  bool postSlots(bool* overflowed) {
    bool moved = false;
    const uint64_t head = ring_.head.load(std::memory_order_acquire);
    while (ring_.tail.load(std::memory_order_relaxed) + inflight_.size() < head) {
      const uint64_t c = ring_.tail.load(std::memory_order_relaxed) + inflight_.size();
      size_t bytes = ring_.size(c).load(std::memory_order_relaxed);
      char* slot = ring_.slot(c);
      const char* data = slot;
      resolveReferencedBytes(&data, &bytes);
      if (bytes > ring_.slotBytes()) {
        state_.fail(WEFT_ERROR(weftInternalError,
                               "rank %d: a slot to %s holds %zu bytes, more than its %zu; this is "
                               "a bug in the caller",
                               selfRank_, peerText_.c_str(), bytes, ring_.slotBytes()),
                    false);
        *overflowed = true;
        return moved;
      }
      // A reference's bytes go into the slot it was posted in (the peer cannot read this
      // process's memory); the header goes right after the payload.
      if (data != slot) {
        std::memmove(slot, data, bytes);
        // A post the plugin refuses for now is retried from the slot, which is data now.
        ring_.size(c).store(bytes, std::memory_order_relaxed);
      }
      FrameHeader h;
      h.magic = kFrameMagic;
      h.type = kFrameData;
      h.bytes = bytes;
      h.stamp = ring_.stamp(c).load(std::memory_order_relaxed);
      std::memcpy(slot + bytes, &h, sizeof(h));
      Pending p;
      p.counter = c;
      if (!startSend(sendComm_, slot, bytes + sizeof(h), &p.request)) break;
      inflight_.push_back(p);
      moved = true;
    }
    return moved;
  }

  // Receiver: one turn of the proxy: the connection, the hello, the back channel, the
  // acknowledgements, the receives.
  bool driveRecv() {
    bool moved = false, failed = false;
    if (recvComm_ == nullptr) {
      weftResult_t r = ops_.accept(listenComm_, &recvComm_);
      if (r != weftSuccess) return fail("accepting", r), true;
      if (recvComm_ == nullptr) return false;
      moved = true;
    }
    if (!helloSeen_) {
      if (ctlRequest_ == nullptr) {
        weftResult_t r = ops_.irecv(recvComm_, ctl_.data(), ctl_.size(), 0, &ctlRequest_);
        if (r != weftSuccess) return fail("receiving", r), true;
        if (ctlRequest_ == nullptr) return moved;
      }
      size_t n = 0;
      if (!done(ctlRequest_, "receiving", &n, &failed)) return moved || failed;
      ctlRequest_ = nullptr;
      if (takeAbort(ctl_.data(), n)) return true;
      FrameHeader h;
      std::memcpy(&h, ctl_.data(), sizeof(h));
      if (n != sizeof(h) + WEFT_NET_HANDLE_BYTES_V1 || h.magic != kFrameMagic || h.type != kFrameHello) {
        state_.fail(WEFT_ERROR(weftInternalError,
                               "rank %d: %s sent no hello first over network plugin %s; do both "
                               "ranks use the same WEFT_NET_PLUGIN?",
                               selfRank_, peerText_.c_str(), pluginName_.c_str()),
                    false);
        return true;
      }
      std::memcpy(hello_.data(), ctl_.data() + sizeof(h), WEFT_NET_HANDLE_BYTES_V1);
      helloSeen_ = true;
      moved = true;
    }
    if (backSend_ == nullptr && !backFailed_) connectBackChannel();
    if (state_.abortRequested.load(std::memory_order_relaxed)) return sendAbort(backSend_);
    moved = sendAck() || moved;
    postReceives();
    bool ended = false;
    moved = takeReceived(&failed, &ended) || moved;
    if (ended) return true;
    if (!failed && postError_ != weftSuccess && inflight_.empty()) {
      fail("receiving", postError_);
      return true;
    }
    return moved || failed;
  }

  // Receiver: connects the back channel to the handle the hello carried.
  void connectBackChannel() {
    // A sender that already finished and exited refuses this; its data still counts, and the
    // forward communication reports the exit once it is drained.
    weftResult_t r = ops_.connect(0, hello_.data(), &backSend_);
    if (r != weftSuccess) {
      backFailed_ = true;
      ackClosed_.store(true, std::memory_order_relaxed);
      WEFT_LOG(kInfo, kNet, "rank %d: no back channel to %s (%s): its aborts will show as a closed connection",
               selfRank_, peerText_.c_str(), netResultName(r));
    }
  }

  // Receiver: posts a receive into staging for every free slot, in order.
  void postReceives() {
    while (ring_.head.load(std::memory_order_relaxed) + inflight_.size() <
           ring_.tail.load(std::memory_order_acquire) + ring_.nSlots()) {
      const uint64_t c = ring_.head.load(std::memory_order_relaxed) + inflight_.size();
      Pending p;
      p.counter = c;
      weftResult_t r = ops_.irecv(recvComm_, ring_.slot(c), ring_.slotBytes() + sizeof(FrameHeader), 0, &p.request);
      if (r != weftSuccess) {
        // A peer that closed after its last message: what the earlier receives hold still
        // counts, so collect them first and fail only once none is left.
        postError_ = r;
        break;
      }
      if (p.request == nullptr) break;
      inflight_.push_back(p);
    }
  }

  // Receiver: hands the completed receives to the executor, in order. True when any was;
  // *failed when polling failed the link, *ended when a message was an abort or not Weft's.
  bool takeReceived(bool* failed, bool* ended) {
    bool moved = false;
    size_t n = 0;
    while (!inflight_.empty() && done(inflight_.front().request, "receiving", &n, failed)) {
      const uint64_t c = inflight_.front().counter;
      inflight_.pop_front();
      // The header is the message's last bytes (an abort is a header alone).
      FrameHeader h;
      const char* trailer = ring_.slot(c) + (n >= sizeof(h) ? n - sizeof(h) : 0);
      if (n >= sizeof(h) && takeAbort(trailer, sizeof(h))) return *ended = true;
      if (n >= sizeof(h)) std::memcpy(&h, trailer, sizeof(h));
      if (n < sizeof(h) || h.magic != kFrameMagic || h.type != kFrameData || h.bytes != n - sizeof(h) ||
          h.bytes > ring_.slotBytes()) {
        state_.fail(WEFT_ERROR(weftInternalError,
                               "rank %d: a message from %s over network plugin %s is not one of "
                               "Weft's (%zu bytes); the plugin corrupted or reordered it",
                               selfRank_, peerText_.c_str(), pluginName_.c_str(), n),
                    false);
        return *ended = true;
      }
      ring_.size(c).store(h.bytes, std::memory_order_relaxed);
      ring_.stamp(c).store(h.stamp, std::memory_order_relaxed);
      ring_.head.store(c + 1, std::memory_order_release);
      moved = true;
    }
    return moved;
  }

  const weftNet_v1_t ops_;
  const std::string pluginName_;
  void* listenComm_ = nullptr;
  void* sendComm_ = nullptr;
  void* recvComm_ = nullptr;
  void* backListen_ = nullptr;
  void* backSend_ = nullptr;
  void* backRecv_ = nullptr;
  std::deque<Pending> inflight_;            // posted to the plugin, not completed, in order
  std::vector<char> ctl_;                   // the hello (receiver) or an abort (sender) arrives here
  void* ctlRequest_ = nullptr;
  std::vector<unsigned char> hello_ = std::vector<unsigned char>(WEFT_NET_HANDLE_BYTES_V1);  // back-channel handle
  std::vector<char> helloFrame_ = std::vector<char>(sizeof(FrameHeader) + WEFT_NET_HANDLE_BYTES_V1);
  void* helloRequest_ = nullptr;
  bool helloSent_ = false;
  bool helloSeen_ = false;
  bool backFailed_ = false;
  weftResult_t postError_ = weftSuccess;  // receiver: irecv refused; reported once the rest is in
  std::vector<char> ackBuf_ = std::vector<char>(sizeof(FrameHeader));
  void* ackRequest_ = nullptr;                // receiver: the acknowledgement on its way
  uint64_t ackInFlight_ = 0;                  // receiver: the count it carries
  std::atomic<uint64_t> ackSent_{0};          // receiver: released messages the sender knows of
  std::atomic<bool> ackClosed_{false};        // receiver: the sender takes no more acknowledgements
  std::atomic<uint64_t> consumed_{0};         // sender: messages the receiver acknowledged
  std::vector<char> abortBuf_ = std::vector<char>(sizeof(FrameHeader));
  bool abortSent_ = false;
  void* abortRequest_ = nullptr;
};

struct Registrar {
  Registrar() {
    // Ahead of libfabric (20) and sockets (10): a plugin the user named wins.
    registerTransport("net-plugin", 30, [] { return std::unique_ptr<Transport>(new PluginTransport()); });
    // Weft's own tables through the same transport; WEFT_NET chooses them (net_select.h).
    registerTransport("net-socket-v1", 25,
                      [] { return std::unique_ptr<Transport>(new PluginTransport(NetTable::kSocket)); });
    registerTransport("net-ofi-v1", 24, [] { return std::unique_ptr<Transport>(new PluginTransport(NetTable::kOfi)); });
  }
} registrar;

}  // namespace

PluginTransport::PluginTransport(NetTable table) : table_(table) {}
PluginTransport::~PluginTransport() = default;

const char* PluginTransport::name() const {
  switch (table_) {
    case NetTable::kSocket:
      return "net-socket-v1";
    case NetTable::kOfi:
      return "net-ofi-v1";
    case NetTable::kExternal:
      break;
  }
  return "net-plugin";
}

bool PluginTransport::canConnect(const PeerInfo& self, const PeerInfo& peer) const {
  const bool external = !params::NetPlugin().empty();
  bool chosen = external;
  if (table_ == NetTable::kSocket) chosen = !external && selectedNet() == NetKind::kSocketPlugin;
  if (table_ == NetTable::kOfi) chosen = !external && selectedNet() == NetKind::kOfiPlugin;
  return chosen && (self.hostHash != peer.hostHash || params::ShmDisable());
}

Status PluginTransport::start(const NetPlugin** plugin) {
  if (table_ != NetTable::kExternal) {
    WEFT_TRY(builtinNetPlugin(table_ == NetTable::kSocket ? weftNetSocket_v1() : weftNetOfi_v1(), plugin));
  } else {
    const std::string path = params::NetPlugin();
    if (path.empty()) {
      return WEFT_ERROR(weftInternalError, "network plugin transport used without WEFT_NET_PLUGIN; this is a bug");
    }
    WEFT_TRY(loadNetPlugin(path, plugin));
  }
  std::lock_guard<std::mutex> lock(startMutex_);
  if (!proxy_) {
    auto proxy = std::make_shared<Proxy>("weft-net-plug");
    WEFT_TRY(proxy->start());
    proxy_ = std::move(proxy);
  }
  return Status::ok();
}

Status PluginTransport::connectRecv(const ConnectRequest& req, std::unique_ptr<Connection>* out) {
  const NetPlugin* plugin = nullptr;
  WEFT_TRY(start(&plugin));
  auto link = std::make_shared<PluginLink>(req, false, plugin);
  Offer offer;
  offer.magic = kOfferMagic;
  offer.version = WEFT_NET_PLUGIN_VERSION_V1;
  offer.rank = req.self.rank;
  offer.lane = req.lane;
  offer.nSlots = req.nSlots;
  offer.slotBytes = req.slotBytes;
  std::snprintf(offer.plugin, sizeof(offer.plugin), "%s", plugin->name.c_str());
  WEFT_TRY(link->listen(&offer));
  WEFT_TRY(req.exchange->send(req.peer.rank, kOfferTagBase + req.lane, &offer, sizeof(offer)));
  *out = makeNetConnection(std::move(link), proxy_, kFlushSeconds);
  return Status::ok();
}

Status PluginTransport::connectSend(const ConnectRequest& req, std::unique_ptr<Connection>* out) {
  const NetPlugin* plugin = nullptr;
  WEFT_TRY(start(&plugin));
  Offer offer;
  Status got = req.exchange->recv(req.peer.rank, kOfferTagBase + req.lane, &offer, sizeof(offer), req.deadline, req.abort);
  if (!got.isOk()) {
    return WEFT_ERROR(got.code(),
                      "rank %d: no offer from rank %d (host %s) for network plugin %s: %s; do both ranks "
                      "set the same WEFT_NET_PLUGIN?",
                      req.self.rank, req.peer.rank, req.peer.hostName, plugin->name.c_str(), got.message().c_str());
  }
  offer.plugin[sizeof(offer.plugin) - 1] = '\0';
  if (offer.magic != kOfferMagic || offer.version != WEFT_NET_PLUGIN_VERSION_V1 || offer.rank != req.peer.rank ||
      offer.lane != req.lane || offer.nSlots != req.nSlots || offer.slotBytes != req.slotBytes ||
      plugin->name != offer.plugin) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: rank %d (host %s) answered lane %d with an offer this rank cannot use (plugin \"%s\" "
                      "here \"%s\", %llu x %llu bytes here %zu x %zu); every rank must set the same WEFT_NET_PLUGIN, "
                      "WEFT_NSLOTS and WEFT_BUFFSIZE",
                      req.self.rank, req.peer.rank, req.peer.hostName, req.lane, offer.plugin, plugin->name.c_str(),
                      static_cast<unsigned long long>(offer.nSlots), static_cast<unsigned long long>(offer.slotBytes),
                      req.nSlots, req.slotBytes);
  }
  auto link = std::make_shared<PluginLink>(req, true, plugin);
  WEFT_TRY(link->connect(offer, req));
  *out = makeNetConnection(std::move(link), proxy_, kFlushSeconds);
  return Status::ok();
}

}  // namespace net
}  // namespace weft
