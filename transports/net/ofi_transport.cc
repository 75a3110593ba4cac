#include "transports/net/ofi_transport.h"

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "base/params.h"
#include "transports/net/net_link.h"
#include "transports/net/net_select.h"
#include "transports/net/ofi_domain.h"
#include "transports/net/ofi_link.h"

namespace weft {
namespace net {
namespace {

// Bootstrap tag of the offer for lane L: kOfferTagBase + L, the socket transport's tags on
// purpose: ranks that disagree on WEFT_NET then fail at once on an offer of the wrong size or
// magic instead of waiting for an offer that never comes.
constexpr int kOfferTagBase = 0x6e000;
constexpr uint64_t kOfferMagic = 0x5246464f4946574full;  // "OWFIOFFR"
// How long a closing sending end waits for its posted slots to be sent.
constexpr double kFlushSeconds = 30.0;

// Receiver -> sender through the bootstrap.
struct Offer {
  uint64_t magic = 0;
  int32_t receiverRank = 0;
  int32_t lane = 0;
  uint64_t nSlots = 0;
  uint64_t slotBytes = 0;
  uint32_t nameBytes = 0;
  uint32_t reserved = 0;
  char provider[64] = {0};
  char name[kOfiMaxName] = {0};
};

struct Registrar {
  Registrar() {
    registerTransport("ofi", 20, [] { return std::unique_ptr<Transport>(new OfiTransport()); });
  }
} registrar;

Status checkRequest(const ConnectRequest& req) {
  if (req.exchange == nullptr || req.self.rank < 0 || req.peer.rank < 0 || req.self.rank >= kOfiMaxRanks ||
      req.peer.rank >= kOfiMaxRanks || req.lane < 0 || req.lane >= kOfiMaxLanes || req.nSlots < 1 ||
      req.slotBytes < 1) {
    return WEFT_ERROR(weftInternalError,
                      "libfabric transport: bad connect request (rank %d, peer %d, lane %d of at most %d, %zu slots "
                      "of %zu bytes, exchange %s); this is a bug in the caller",
                      req.self.rank, req.peer.rank, req.lane, kOfiMaxLanes, req.nSlots, req.slotBytes,
                      req.exchange ? "set" : "missing");
  }
  return Status::ok();
}

}  // namespace

OfiTransport::OfiTransport() = default;

OfiTransport::~OfiTransport() {
  if (proxy_ && domain_) proxy_->remove(domain_.get());
}

bool OfiTransport::canConnect(const PeerInfo& self, const PeerInfo& peer) const {
  if (selectedNet() != NetKind::kOfi) return false;
  return self.hostHash != peer.hostHash || params::ShmDisable();
}

bool OfiTransport::supportsDeviceMemory() const {
  std::lock_guard<std::mutex> lock(startMutex_);
  return domain_ && domain_->supportsHmem();
}

std::string OfiTransport::provider() const {
  std::lock_guard<std::mutex> lock(startMutex_);
  return domain_ ? domain_->provider() : std::string();
}

Status OfiTransport::start(const ConnectRequest& req) {
  std::lock_guard<std::mutex> lock(startMutex_);
  if (domain_) return Status::ok();
  std::shared_ptr<OfiDomain> domain;
  WEFT_TRY(OfiDomain::open(req.self.rank, &domain, req.nic));
  auto proxy = std::make_shared<Proxy>("weft-net-ofi");
  WEFT_TRY(proxy->start());
  proxy->add(domain);
  domain_ = std::move(domain);
  proxy_ = std::move(proxy);
  return Status::ok();
}

Status OfiTransport::connectRecv(const ConnectRequest& req, std::unique_ptr<Connection>* out) {
  WEFT_TRY(checkRequest(req));
  WEFT_TRY(start(req));
  if (domain_->maxMessageBytes() != 0 && req.slotBytes > domain_->maxMessageBytes()) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: slots of %zu bytes exceed the %zu-byte messages libfabric provider %s carries; "
                      "lower WEFT_BUFFSIZE or raise WEFT_NSLOTS",
                      req.self.rank, req.slotBytes, domain_->maxMessageBytes(), domain_->provider().c_str());
  }
  auto link = std::make_shared<OfiLink>(req, false, domain_, FI_ADDR_UNSPEC);
  WEFT_TRY(link->start());
  Offer offer;
  offer.magic = kOfferMagic;
  offer.receiverRank = req.self.rank;
  offer.lane = req.lane;
  offer.nSlots = req.nSlots;
  offer.slotBytes = req.slotBytes;
  const std::vector<char>& name = domain_->address();
  offer.nameBytes = static_cast<uint32_t>(std::min(name.size(), kOfiMaxName));
  std::memcpy(offer.name, name.data(), offer.nameBytes);
  std::strncpy(offer.provider, domain_->provider().c_str(), sizeof(offer.provider) - 1);
  Status sent = req.exchange->send(req.peer.rank, kOfferTagBase + req.lane, &offer, sizeof(offer));
  if (!sent.isOk()) return std::move(sent).withPrefix("libfabric transport: sending the connection offer: ");
  *out = makeNetConnection(std::move(link), proxy_, kFlushSeconds);
  return Status::ok();
}

Status OfiTransport::connectSend(const ConnectRequest& req, std::unique_ptr<Connection>* out) {
  WEFT_TRY(checkRequest(req));
  WEFT_TRY(start(req));
  Offer offer;
  Status got = req.exchange->recv(req.peer.rank, kOfferTagBase + req.lane, &offer, sizeof(offer), req.deadline, req.abort);
  if (!got.isOk()) {
    return std::move(got).withPrefix(
        "libfabric transport: waiting for the connection offer (every rank must use "
        "the same WEFT_NET): ");
  }
  offer.provider[sizeof(offer.provider) - 1] = 0;
  if (offer.magic != kOfferMagic || offer.lane != req.lane || offer.receiverRank != req.peer.rank ||
      offer.nameBytes == 0 || offer.nameBytes > kOfiMaxName) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: rank %d answered the libfabric transport's connection request with something else "
                      "(magic 0x%llx, lane %d, rank %d, %u-byte address); every rank must use the same WEFT_NET "
                      "and Weft version",
                      req.self.rank, req.peer.rank, static_cast<unsigned long long>(offer.magic), offer.lane,
                      offer.receiverRank, offer.nameBytes);
  }
  if (domain_->provider() != offer.provider) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: rank %d (host %s) uses libfabric provider %s, this rank %s; set the same "
                      "WEFT_OFI_PROVIDER on every rank",
                      req.self.rank, req.peer.rank, req.peer.hostName, offer.provider, domain_->provider().c_str());
  }
  if (offer.nSlots != req.nSlots || offer.slotBytes != req.slotBytes) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: rank %d offers %llu slots of %llu bytes, this rank expects %zu of %zu; every rank "
                      "must run with the same WEFT_BUFFSIZE and WEFT_NSLOTS",
                      req.self.rank, req.peer.rank, static_cast<unsigned long long>(offer.nSlots),
                      static_cast<unsigned long long>(offer.slotBytes), req.nSlots, req.slotBytes);
  }
  fi_addr_t peer = FI_ADDR_NOTAVAIL;
  std::string selfAddress, peerAddress;
  {
    auto guard = domain_->lock();
    Status inserted = domain_->insertAddressLocked(offer.name, offer.nameBytes, &peer);
    if (!inserted.isOk()) {
      return std::move(inserted).withPrefix("connecting to rank " + std::to_string(req.peer.rank) + ": ");
    }
    peerAddress = domain_->addressText(offer.name, offer.nameBytes);
    selfAddress = domain_->addressText(domain_->address().data(), domain_->address().size());
  }
  auto link = std::make_shared<OfiLink>(req, true, domain_, peer);
  link->setPeerText(link->peerText() + ", " + peerAddress);
  WEFT_TRY(link->start());
  WEFT_LOG(kInfo, kNet, "rank %d: sending to rank %d lane %d over libfabric %s %s -> %s", req.self.rank, req.peer.rank,
           req.lane, domain_->provider().c_str(), selfAddress.c_str(), peerAddress.c_str());
  *out = makeNetConnection(std::move(link), proxy_, kFlushSeconds);
  return Status::ok();
}

}  // namespace net
}  // namespace weft
