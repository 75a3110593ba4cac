#include "transports/net/ofi_domain.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "base/params.h"
#include "transports/net/ofi_shm_names.h"

namespace weft {
namespace net {
namespace {

// Completions read per fi_cq_read call, and calls per progress turn (so that one busy turn
// does not starve posting).
constexpr size_t kCompletionBatch = 16;
constexpr int kCompletionReadsPerTurn = 8;

std::atomic<bool> forcedRegistration{false};

template <typename T>
void closeFid(T*& object) {
  if (object != nullptr) {
    int rc = fi_close(&object->fid);
    (void)rc;  // nothing to do about a failed close during teardown
    object = nullptr;
  }
}

}  // namespace

Status OfiDomain::open(int rank, std::shared_ptr<OfiDomain>* out, const std::string& nic) {
  std::string why;
  const OfiApi* api = ofiApi(&why);
  if (api == nullptr) {
    return WEFT_ERROR(weftSystemError,
                      "rank %d: WEFT_NET=ofi, but libfabric cannot be used: %s; or set WEFT_NET=socket", rank,
                      why.c_str());
  }
  OfiProviderChoice choice;
  WEFT_TRY(chooseOfiProvider(*api, params::OfiProvider(), params::SocketIfname(), rank, &choice, nic));
  if (ofiShmProvider(choice.provider)) {
    // Its segments carry names that tell whether their creator still runs (ofi_shm_names.h).
    sweepOfiShmOnce(rank);
    const std::string address = ofiShmSourceAddress();
    std::free(choice.info->src_addr);
    choice.info->src_addr = strdup(address.c_str());
    choice.info->src_addrlen = address.size() + 1;
  }
  std::shared_ptr<OfiDomain> domain(new OfiDomain(api, rank));
  WEFT_TRY(domain->openEndpoint(std::move(choice)));
  *out = std::move(domain);
  return Status::ok();
}

Status OfiDomain::openEndpoint(OfiProviderChoice choice) {
  struct fi_info* info = choice.info.get();
  provider_ = choice.provider;
  domainName_ = choice.domain;
  hmem_ = choice.hmem;
  mrMode_ = info->domain_attr->mr_mode;
  registerAll_ = (mrMode_ & FI_MR_LOCAL) != 0 || forcedRegistration.load();
  maxMessageBytes_ = info->ep_attr ? info->ep_attr->max_msg_size : 0;
  injectBytes_ = info->tx_attr ? info->tx_attr->inject_size : 0;
  auto failed = [&](const char* call, int rc) {
    return WEFT_ERROR(weftSystemError,
                      "rank %d: libfabric provider %s (domain %s): %s failed: %s; choose another provider with "
                      "WEFT_OFI_PROVIDER or set WEFT_NET=socket",
                      rank_, provider_.c_str(), domainName_.c_str(), call, api_->strerror(-rc));
  };
  int rc = api_->fabric(info->fabric_attr, &fabric_, nullptr);
  if (rc != 0) return failed("fi_fabric", rc);
  rc = fi_domain(fabric_, info, &domain_, nullptr);
  if (rc != 0) return failed("fi_domain", rc);
  struct fi_cq_attr cqAttr;
  std::memset(&cqAttr, 0, sizeof(cqAttr));
  cqAttr.format = FI_CQ_FORMAT_TAGGED;
  cqAttr.wait_obj = FI_WAIT_NONE;
  rc = fi_cq_open(domain_, &cqAttr, &cq_, nullptr);
  if (rc != 0) return failed("fi_cq_open", rc);
  struct fi_av_attr avAttr;
  std::memset(&avAttr, 0, sizeof(avAttr));
  avAttr.type = FI_AV_TABLE;
  rc = fi_av_open(domain_, &avAttr, &av_, nullptr);
  if (rc != 0) return failed("fi_av_open", rc);
  rc = fi_endpoint(domain_, info, &ep_, nullptr);
  if (rc != 0) return failed("fi_endpoint", rc);
  rc = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV);
  if (rc != 0) return failed("fi_ep_bind (completion queue)", rc);
  rc = fi_ep_bind(ep_, &av_->fid, 0);
  if (rc != 0) return failed("fi_ep_bind (address vector)", rc);
  rc = fi_enable(ep_);
  if (rc != 0) return failed("fi_enable", rc);
  size_t nameBytes = 256;
  address_.assign(nameBytes, 0);
  rc = fi_getname(&ep_->fid, address_.data(), &nameBytes);
  if (rc == -FI_ETOOSMALL) {
    address_.assign(nameBytes, 0);
    rc = fi_getname(&ep_->fid, address_.data(), &nameBytes);
  }
  if (rc != 0) return failed("fi_getname", rc);
  address_.resize(nameBytes);
  WEFT_LOG(kInfo, kNet,
           "rank %d: libfabric transport: provider %s, domain %s (%s), address %s, memory registration%s%s%s, "
           "device memory %s",
           rank_, provider_.c_str(), domainName_.c_str(), choice.why.c_str(),
           addressText(address_.data(), address_.size()).c_str(), registerAll_ ? " of every buffer" : " not needed",
           (mrMode_ & FI_MR_ENDPOINT) ? ", per endpoint" : "", (mrMode_ & FI_MR_PROV_KEY) ? ", provider keys" : "",
           hmem_ ? "direct (FI_HMEM)" : "staged through host slots");
  return Status::ok();
}

OfiDomain::~OfiDomain() {
  std::lock_guard<std::mutex> guard(mutex_);
  for (auto& [key, reg] : registrations_) closeFid(reg.mr);
  registrations_.clear();
  closeFid(ep_);
  closeFid(av_);
  closeFid(cq_);
  closeFid(domain_);
  closeFid(fabric_);
}

void OfiDomain::forceMemoryRegistration(bool on) { forcedRegistration.store(on); }

std::string OfiDomain::addressText(const void* name, size_t bytes) const {
  char text[128] = {0};
  size_t len = sizeof(text);
  if (av_ == nullptr || fi_av_straddr(av_, name, text, &len) == nullptr) {
    return "(" + std::to_string(bytes) + "-byte name)";
  }
  text[sizeof(text) - 1] = 0;
  return text;
}

const char* OfiDomain::errorText(int err) const { return api_->strerror(err < 0 ? -err : err); }

bool OfiDomain::tryProgress() {
  std::unique_lock<std::mutex> guard(mutex_, std::try_to_lock);
  if (!guard.owns_lock()) return false;
  return progressLocked();
}

bool OfiDomain::progressLocked() {
  bool moved = pollCompletionsLocked();
  // Owners may detach (and be destroyed) only under the lock, so the list is stable here.
  bool posted = false;
  for (OfiOpOwner* owner : ownerList_) posted = owner->post() || posted;
  // Sends often complete as they are posted (the provider wrote them out at once): reaping
  // them now frees the executor's slot without waiting for another turn.
  if (posted) pollCompletionsLocked();
  bool busy = false;
  for (OfiOpOwner* owner : ownerList_) busy = busy || owner->needsProgress();
  busy_.store(busy, std::memory_order_relaxed);
  return moved || posted;
}

bool OfiDomain::pollCompletionsLocked() {
  bool moved = false;
  for (int turn = 0; turn < kCompletionReadsPerTurn; ++turn) {
    struct fi_cq_tagged_entry entries[kCompletionBatch];
    ssize_t n = fi_cq_read(cq_, entries, kCompletionBatch);
    if (n > 0) {
      moved = true;
      for (ssize_t i = 0; i < n; ++i) {
        auto* op = static_cast<OfiOp*>(entries[i].op_context);
        if (op == nullptr || op->owner == nullptr) continue;
        op->posted = false;
        op->owner->onCompletion(op, entries[i].len, entries[i].tag);
      }
      if (static_cast<size_t>(n) < kCompletionBatch) break;
      continue;
    }
    if (n == -FI_EAVAIL) {
      moved = true;
      struct fi_cq_err_entry err;
      std::memset(&err, 0, sizeof(err));
      if (fi_cq_readerr(cq_, &err, 0) <= 0) break;
      char detail[256] = {0};
      const char* provText = fi_cq_strerror(cq_, err.prov_errno, err.err_data, detail, sizeof(detail));
      std::string text = errorText(err.err);
      if (provText != nullptr && provText[0] != 0) text += std::string(" (") + provText + ")";
      auto* op = static_cast<OfiOp*>(err.op_context);
      if (op == nullptr || op->owner == nullptr) {
        WEFT_LOG(kWarn, kNet, "rank %d: libfabric provider %s reported an error with no operation: %s", rank_,
                 provider_.c_str(), text.c_str());
        continue;
      }
      op->posted = false;
      op->owner->onError(op, err.err, text);
      continue;
    }
    if (n != -FI_EAGAIN) {
      WEFT_LOG(kWarn, kNet, "rank %d: fi_cq_read on provider %s failed: %s", rank_, provider_.c_str(),
               errorText(static_cast<int>(n)));
    }
    break;
  }
  return moved;
}

void OfiDomain::attachLocked(OfiOpOwner* owner) { ownerList_.push_back(owner); }

void OfiDomain::detachLocked(OfiOpOwner* owner) {
  ownerList_.erase(std::remove(ownerList_.begin(), ownerList_.end(), owner), ownerList_.end());
}

Status OfiDomain::insertAddressLocked(const void* name, size_t bytes, fi_addr_t* out) {
  std::string key(static_cast<const char*>(name), bytes);
  auto it = addresses_.find(key);
  if (it != addresses_.end()) {
    *out = it->second;
    return Status::ok();
  }
  fi_addr_t addr = FI_ADDR_NOTAVAIL;
  int n = fi_av_insert(av_, name, 1, &addr, 0, nullptr);
  if (n != 1) {
    return WEFT_ERROR(weftSystemError,
                      "rank %d: libfabric provider %s cannot reach address %s (fi_av_insert: %s); every rank must "
                      "use the same WEFT_OFI_PROVIDER and a network they all reach (WEFT_SOCKET_IFNAME)",
                      rank_, provider_.c_str(), addressText(name, bytes).c_str(),
                      n < 0 ? errorText(n) : "not inserted");
  }
  addresses_.emplace(std::move(key), addr);
  *out = addr;
  return Status::ok();
}

Status OfiDomain::registerMemoryLocked(void* base, size_t bytes, void** desc) {
  *desc = nullptr;
  if (!registerAll_) return Status::ok();
  auto key = std::make_pair(reinterpret_cast<uintptr_t>(base), bytes);
  auto it = registrations_.find(key);
  if (it != registrations_.end()) {
    ++it->second.users;
    *desc = it->second.desc;
    return Status::ok();
  }
  Registration reg;
  uint64_t requestedKey = (mrMode_ & FI_MR_PROV_KEY) ? 0 : nextKey_++;
  int rc = fi_mr_reg(domain_, base, bytes, FI_SEND | FI_RECV, 0, requestedKey, 0, &reg.mr, nullptr);
  if (rc == 0 && (mrMode_ & FI_MR_ENDPOINT)) {
    rc = fi_mr_bind(reg.mr, &ep_->fid, 0);
    if (rc == 0) rc = fi_mr_enable(reg.mr);
  }
  if (rc != 0) {
    closeFid(reg.mr);
    return WEFT_ERROR(weftSystemError,
                      "rank %d: libfabric provider %s cannot register %zu bytes of slot memory: %s; raise the "
                      "locked-memory limit (ulimit -l unlimited) or lower WEFT_BUFFSIZE",
                      rank_, provider_.c_str(), bytes, errorText(rc));
  }
  reg.desc = fi_mr_desc(reg.mr);
  reg.users = 1;
  *desc = reg.desc;
  registrations_.emplace(key, reg);
  return Status::ok();
}

void OfiDomain::releaseMemoryLocked(void* base, size_t bytes) {
  auto it = registrations_.find(std::make_pair(reinterpret_cast<uintptr_t>(base), bytes));
  if (it == registrations_.end() || --it->second.users > 0) return;
  // The memory goes back to the allocator next: a later buffer at the same address is other
  // pages, so its registration must not outlive this one.
  closeFid(it->second.mr);
  registrations_.erase(it);
}

ssize_t OfiDomain::sendLocked(const void* buf, size_t bytes, void* desc, fi_addr_t dest, uint64_t tag, OfiOp* op) {
  ssize_t rc = fi_tsend(ep_, buf, bytes, desc, dest, tag, &op->scratch);
  if (rc == 0) op->posted = true;
  return rc;
}

ssize_t OfiDomain::injectLocked(const void* buf, size_t bytes, fi_addr_t dest, uint64_t tag) {
  return fi_tinject(ep_, buf, bytes, dest, tag);
}

ssize_t OfiDomain::recvLocked(void* buf, size_t bytes, void* desc, uint64_t tag, OfiOp* op) {
  ssize_t rc = fi_trecv(ep_, buf, bytes, desc, FI_ADDR_UNSPEC, tag, 0, &op->scratch);
  if (rc == 0) op->posted = true;
  return rc;
}

void OfiDomain::cancelLocked(OfiOp* op) {
  if (!op->posted) return;
  ssize_t rc = fi_cancel(&ep_->fid, &op->scratch);
  (void)rc;  // -FI_ENOENT: it completed meanwhile; its completion is still in the queue
}

}  // namespace net
}  // namespace weft
