// One libfabric endpoint per communicator, shared by all of its network links: the fabric,
// domain, reliable datagram endpoint (FI_EP_RDM), address vector (FI_AV_TABLE) and completion
// queue (FI_CQ_FORMAT_TAGGED). OfiTransport opens it on the first connect; every OfiLink
// posts its operations through it.
//
// The completion queue is shared, so progress is domain-wide: whoever drives a link (the
// executor waiting on it, or the proxy) takes the domain's lock with a try-lock, reads every
// completion and hands each to the link named by its operation context, then lets every link
// post what it can. Everything that touches libfabric objects runs under that lock
// (FI_THREAD_DOMAIN). Memory is registered through a small cache (FI_MR_LOCAL providers need
// a descriptor for every buffer) and peer addresses are inserted into the address vector once.
#ifndef WEFT_TRANSPORTS_NET_OFI_DOMAIN_H_
#define WEFT_TRANSPORTS_NET_OFI_DOMAIN_H_

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "transports/net/ofi_api.h"
#include "transports/net/ofi_provider.h"
#include "transports/net/proxy.h"

namespace weft {
namespace net {

class OfiOpOwner;

// The context of one posted operation. libfabric's scratch space comes first (FI_CONTEXT and
// FI_CONTEXT2 providers use it while the operation is in flight); the rest says whose it is.
struct OfiOp {
  struct fi_context2 scratch;
  OfiOpOwner* owner = nullptr;
  uint32_t kind = 0;
  uint32_t index = 0;
  bool posted = false;
};

// A user of the domain (an OfiLink). Called with the domain's lock held.
class OfiOpOwner {
 public:
  virtual ~OfiOpOwner() = default;
  // `op` completed: `bytes` received (receives) and the message's tag.
  virtual void onCompletion(OfiOp* op, size_t bytes, uint64_t tag) = 0;
  // `op` failed (err is a positive FI_* code; FI_ECANCELED for cancelled receives).
  virtual void onError(OfiOp* op, int err, const std::string& text) = 0;
  // Posts what can be posted now; true when something moved.
  virtual bool post() = 0;
  // Has work that only progress finishes (sends in flight or waiting for credits, credits
  // owed): the proxy keeps polling while any owner has.
  virtual bool needsProgress() const = 0;
};

class OfiDomain final : public ProxyTask {
 public:
  // Chooses the provider (WEFT_OFI_PROVIDER, WEFT_SOCKET_IFNAME, the rank's NIC `nic`:
  // chooseOfiProvider) and opens the endpoint.
  static Status open(int rank, std::shared_ptr<OfiDomain>* out, const std::string& nic = "");
  ~OfiDomain() override;
  OfiDomain(const OfiDomain&) = delete;
  OfiDomain& operator=(const OfiDomain&) = delete;

  const std::string& provider() const { return provider_; }
  const std::string& domainName() const { return domainName_; }
  // The provider moves device memory itself (FI_HMEM); otherwise device buffers are staged
  // through host slots.
  bool supportsHmem() const { return hmem_; }
  size_t maxMessageBytes() const { return maxMessageBytes_; }
  // Largest message fi_tinject takes (sent without a completion, the buffer free at once).
  size_t injectBytes() const { return injectBytes_; }
  // This endpoint's name (fi_getname), what peers insert into their address vectors.
  const std::vector<char>& address() const { return address_; }
  std::string addressText(const void* name, size_t bytes) const;
  int rank() const { return rank_; }
  const char* errorText(int err) const;

  // Blocking lock for setting links up and tearing them down; progress uses tryProgress().
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }
  // Reads completions and lets every owner post, unless another thread is at it.
  bool tryProgress();

  // The rest: with the lock held.
  bool progressLocked();
  // Reads and dispatches completions only (no posting); true when some arrived.
  bool pollCompletionsLocked();
  void attachLocked(OfiOpOwner* owner);
  void detachLocked(OfiOpOwner* owner);
  Status insertAddressLocked(const void* name, size_t bytes, fi_addr_t* out);
  // A descriptor for [base, base + bytes) (nullptr when the provider needs none); counted, so
  // each user calls releaseMemoryLocked() once.
  Status registerMemoryLocked(void* base, size_t bytes, void** desc);
  void releaseMemoryLocked(void* base, size_t bytes);
  size_t registeredRegionsLocked() const { return registrations_.size(); }
  // Tests: register every buffer, as FI_MR_LOCAL providers (verbs, efa) need, whatever this
  // host's providers ask for. Applies to domains opened afterwards.
  static void forceMemoryRegistration(bool on);
  // fi_tsend / fi_trecv with `op` as the context; 0, -FI_EAGAIN or another negative code.
  ssize_t sendLocked(const void* buf, size_t bytes, void* desc, fi_addr_t dest, uint64_t tag, OfiOp* op);
  ssize_t injectLocked(const void* buf, size_t bytes, fi_addr_t dest, uint64_t tag);
  ssize_t recvLocked(void* buf, size_t bytes, void* desc, uint64_t tag, OfiOp* op);
  void cancelLocked(OfiOp* op);

  // ProxyTask: the proxy progresses the domain (receiving links need it to return credits).
  // It polls in slices while some owner needs progress, and otherwise sleeps until woken (a
  // posted slot, a released one): an executor waiting for data drives the domain itself.
  bool progress() override { return tryProgress(); }
  int pollFd() const override { return busy_.load(std::memory_order_relaxed) ? kPollSlice : kNothingToWaitFor; }

 private:
  OfiDomain(const OfiApi* api, int rank) : api_(api), rank_(rank) {}
  Status openEndpoint(OfiProviderChoice choice);

  struct Registration {
    struct fid_mr* mr = nullptr;
    void* desc = nullptr;
    int users = 0;
  };

  const OfiApi* api_;
  const int rank_;
  std::string provider_;
  std::string domainName_;
  bool hmem_ = false;
  uint64_t mrMode_ = 0;
  bool registerAll_ = false;  // FI_MR_LOCAL, or forced
  size_t maxMessageBytes_ = 0;
  size_t injectBytes_ = 0;
  std::vector<char> address_;

  struct fid_fabric* fabric_ = nullptr;
  struct fid_domain* domain_ = nullptr;
  struct fid_ep* ep_ = nullptr;
  struct fid_av* av_ = nullptr;
  struct fid_cq* cq_ = nullptr;

  std::mutex mutex_;  // guards everything below and every call into the objects above
  std::vector<OfiOpOwner*> ownerList_;
  std::atomic<bool> busy_{false};
  std::map<std::pair<uintptr_t, size_t>, Registration> registrations_;
  uint64_t nextKey_ = 1;
  std::map<std::string, fi_addr_t> addresses_;
};

}  // namespace net
}  // namespace weft

#endif  // WEFT_TRANSPORTS_NET_OFI_DOMAIN_H_
