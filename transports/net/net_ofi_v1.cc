// The built-in libfabric network code as a net_v1.h table (weftNetOfi_v1, net_builtin.h): what
// WEFT_NET=ofi-plugin runs through the same generic transport an external plugin gets, over the
// libfabric transport's own endpoint code (OfiDomain: provider choice by WEFT_OFI_PROVIDER and
// WEFT_SOCKET_IFNAME, memory registration, completion dispatch).
//
// The table opens one reliable datagram endpoint per process (the first devices() call) and
// carries every communication on it with tagged messages. listen() takes a fresh 32-bit
// communication id and posts a receive for the introduction; its handle holds the endpoint's
// name, the id and a random token. connect() inserts the address and sends the introduction
// (magic and token); accept() takes the communication once an introduction with this
// listener's token arrived, and drops (with a warning) anything else. Message n of a
// communication carries the tag (data, id, n mod 2^24), so the receive posted n-th matches it
// whatever order the provider completes them in: messages arrive whole and in order, as
// net_v1.h asks. Small sends are injected (complete at once).
//
// Every call into libfabric runs under the domain's lock; test() moves completions with a
// try-lock, so a communication polled from another thread never blocks on this one. A forked
// child opens an endpoint of its own on first use (the parent's is not its to use). RDM
// endpoints have no connection to lose: a peer that exits shows as requests that never finish,
// not as weftRemoteError (the libfabric transport behaves the same).
#include <rdma/fi_errno.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "base/log.h"
#include "base/os.h"
#include "transports/net/net_builtin.h"
#include "transports/net/ofi_domain.h"
#include "transports/net/ofi_link.h"

namespace weft {
namespace net {
namespace {

constexpr uint64_t kHandleMagic = 0x3148564e4649464full;  // "OFIFNVH1"
constexpr uint64_t kIntroMagic = 0x3149564e4649464full;   // "OFIFNVI1"
// Tags: kind 5 (past OfiTagKind's, on an endpoint of its own anyway) | what (4 bits) | id (32
// bits) | sequence (24 bits).
constexpr uint64_t kTagKind = 5;
constexpr uint64_t kTagIntro = 1;
constexpr uint64_t kTagData = 2;
// How long closing a communication waits for the provider to let go of its buffers.
constexpr double kDrainSeconds = 2.0;

constexpr uint64_t tableTag(uint64_t what, uint32_t id, uint64_t seq) {
  return (kTagKind << 60) | (what << 56) | (static_cast<uint64_t>(id) << 24) | (seq & kOfiSeqMask);
}

// What listen() writes for the sender.
struct Handle {
  uint64_t magic = 0;
  uint64_t token = 0;
  uint32_t id = 0;
  uint32_t nameBytes = 0;
  char name[WEFT_NET_HANDLE_BYTES_V1 - 24] = {0};
};
static_assert(sizeof(Handle) == WEFT_NET_HANDLE_BYTES_V1, "a handle must fit net_v1.h's handle");

// The sender's first message on a communication.
struct Intro {
  uint64_t magic = 0;
  uint64_t token = 0;
};

struct Comm;

enum RequestState : int { kPosted, kDone, kFailed };

// One operation; its OfiOp comes first, the part the domain dispatches completions to.
struct Request : OfiOp {
  Comm* comm = nullptr;
  void* buffer = nullptr;
  size_t size = 0;
  bool registered = false;
  size_t bytes = 0;  // moved, once done
  int error = 0;     // FI_* code, once failed
  std::atomic<int> state{kPosted};
};

// A communication: sending (to peer's id) or receiving (its own id), or a listener.
struct Comm {
  bool sending = false;
  uint32_t id = 0;
  fi_addr_t peer = FI_ADDR_UNSPEC;
  uint64_t seq = 0;
  std::set<Request*> open;  // not yet collected by test(); under the domain's lock
};

struct Listener {
  Comm comm;  // receives the introduction, then becomes the receiving communication's id
  uint64_t token = 0;
  Intro intro;
  Request* introRequest = nullptr;
};

// The process's endpoint, and the owner its completions go to.
class Table final : public OfiOpOwner {
 public:
  std::mutex openMutex;
  bool tried = false;
  pid_t pid = 0;  // the process that opened `domain`
  std::shared_ptr<OfiDomain> domain;
  std::atomic<uint32_t> nextId{0};
  std::mutex connectingMutex;
  std::map<uint64_t, Request*> connecting;  // by token: the introduction on its way

  void onCompletion(OfiOp* op, size_t bytes, uint64_t) override {
    auto* r = static_cast<Request*>(op);
    r->bytes = r->comm->sending ? r->size : bytes;
    settle(r, kDone);
  }
  void onError(OfiOp* op, int err, const std::string& text) override {
    auto* r = static_cast<Request*>(op);
    r->error = err;
    if (err != FI_ECANCELED) {
      WEFT_LOG(kWarn, kNet, "libfabric network table: a %s of %zu bytes failed: %s",
               r->comm->sending ? "send" : "receive", r->size, text.c_str());
    }
    settle(r, kFailed);
  }
  bool post() override { return false; }
  bool needsProgress() const override { return false; }

 private:
  void settle(Request* r, int state) {
    if (r->registered) domain->releaseMemoryLocked(r->buffer, r->size);
    r->registered = false;
    r->state.store(state, std::memory_order_release);
  }
};

Table& table() {
  static Table* t = new Table;  // never freed: the endpoint outlives every communicator
  return *t;
}

weftResult_t resultOf(int err) {
  err = err < 0 ? -err : err;  // providers report FI_* codes with either sign
  if (err == FI_ETRUNC || err == FI_EMSGSIZE) return weftInternalError;
  return err == FI_ECONNREFUSED || err == FI_ECONNRESET || err == FI_ECONNABORTED || err == FI_EHOSTUNREACH
             ? weftRemoteError
             : weftSystemError;
}

weftResult_t ofiInit(weftNetLogger_v1_t) { return weftSuccess; }

weftResult_t ofiDevices(int* ndev) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.openMutex);
  if (t.tried && t.pid != getpid()) {
    // A forked child: the endpoint is its parent's (the same sockets). It is left alone, not
    // closed (that could disturb the parent), and the child opens its own.
    std::lock_guard<std::mutex> connectingLock(t.connectingMutex);
    (void)new std::shared_ptr<OfiDomain>(std::move(t.domain));
    t.connecting.clear();
    t.tried = false;
  }
  if (!t.tried) {
    t.tried = true;
    t.pid = getpid();
    Status s = OfiDomain::open(-1, &t.domain);
    if (!s.isOk()) WEFT_LOG(kWarn, kNet, "libfabric network table: %s", s.message().c_str());
    uint32_t seed = 0;
    if (!randomBytes(&seed, sizeof(seed))) seed = static_cast<uint32_t>(nowNs());
    t.nextId.store(seed);
  }
  *ndev = t.domain ? 1 : 0;
  return t.domain ? weftSuccess : weftSystemError;
}

OfiDomain* domainFor(int dev) {
  int n = 0;
  return dev == 0 && ofiDevices(&n) == weftSuccess ? table().domain.get() : nullptr;
}

weftResult_t ofiProperties(int dev, weftNetProperties_v1_t* props) {
  OfiDomain* d = domainFor(dev);
  if (d == nullptr) return weftInvalidArgument;
  std::memset(props, 0, sizeof(*props));
  props->name = d->domainName().c_str();  // set once, never changed afterwards
  props->ptrSupport = WEFT_NET_PTR_HOST;
  return weftSuccess;
}

// The provider refused a post for now (-FI_EAGAIN): its queues free up only as completions are
// read, and with nothing else in flight no test() would read them, so read them here.
weftResult_t busyLocked(OfiDomain* d) {
  (void)d->pollCompletionsLocked();
  return weftSuccess;
}

// Posts one operation of `c` (a send when c->sending) under the domain's lock. *request NULL:
// the provider is busy (-FI_EAGAIN), call again.
weftResult_t postLocked(OfiDomain* d, Comm* c, void* data, size_t size, uint64_t tag, Request** request) {
  *request = nullptr;
  auto r = std::make_unique<Request>();
  r->owner = &table();
  r->comm = c;
  r->buffer = data;
  r->size = size;
  if (c->sending && size <= d->injectBytes()) {
    ssize_t rc = d->injectLocked(data, size, c->peer, tag);
    if (rc == -FI_EAGAIN) return busyLocked(d);
    if (rc != 0) return resultOf(static_cast<int>(-rc));
    r->bytes = size;
    r->state.store(kDone, std::memory_order_relaxed);
  } else {
    void* desc = nullptr;
    if (!d->registerMemoryLocked(data, size, &desc).isOk()) return weftSystemError;
    ssize_t rc = c->sending ? d->sendLocked(data, size, desc, c->peer, tag, r.get())
                            : d->recvLocked(data, size, desc, tag, r.get());
    if (rc != 0) d->releaseMemoryLocked(data, size);
    if (rc == -FI_EAGAIN) return busyLocked(d);
    if (rc != 0) return resultOf(static_cast<int>(-rc));
    r->registered = true;  // released once, when it settles (a no-op where nothing was registered)
  }
  *request = r.release();
  c->open.insert(*request);
  return weftSuccess;
}

weftResult_t ofiListen(int dev, void* handle, void** listenComm) {
  OfiDomain* d = domainFor(dev);
  if (d == nullptr) return weftInvalidArgument;
  Handle h;
  if (d->address().size() > sizeof(h.name)) {
    WEFT_LOG(kWarn, kNet,
             "libfabric network table: provider %s's endpoint name is %zu bytes, more than a net_v1.h handle "
             "carries (%zu); use WEFT_NET=ofi, or another WEFT_OFI_PROVIDER",
             d->provider().c_str(), d->address().size(), sizeof(h.name));
    return weftSystemError;
  }
  auto l = std::make_unique<Listener>();
  l->comm.id = table().nextId.fetch_add(1);
  if (!randomBytes(&l->token, sizeof(l->token))) l->token = hashBytes(&l, sizeof(l), nowNs());
  auto guard = d->lock();
  weftResult_t r = postLocked(d, &l->comm, &l->intro, sizeof(l->intro), tableTag(kTagIntro, l->comm.id, 0),
                              &l->introRequest);
  if (r != weftSuccess || l->introRequest == nullptr) return r != weftSuccess ? r : weftSystemError;
  h.magic = kHandleMagic;
  h.token = l->token;
  h.id = l->comm.id;
  h.nameBytes = static_cast<uint32_t>(d->address().size());
  std::memcpy(h.name, d->address().data(), h.nameBytes);
  std::memcpy(handle, &h, sizeof(h));
  *listenComm = l.release();
  return weftSuccess;
}

// Takes the request's outcome (test()'s part): kPosted, kDone or kFailed; a settled request
// leaves its communication's open set and is freed.
int collectLocked(Request* r, size_t* bytes, int* error) {
  int state = r->state.load(std::memory_order_acquire);
  if (state == kPosted) return state;
  *bytes = r->bytes;
  *error = r->error;
  r->comm->open.erase(r);
  delete r;
  return state;
}

weftResult_t ofiConnect(int dev, const void* handle, void** sendComm) {
  *sendComm = nullptr;
  OfiDomain* d = domainFor(dev);
  Handle h;
  std::memcpy(&h, handle, sizeof(h));
  if (d == nullptr || h.magic != kHandleMagic || h.nameBytes == 0 || h.nameBytes > sizeof(h.name)) {
    WEFT_LOG(kWarn, kNet, "libfabric network table: connect() got a handle listen() did not write");
    return weftInvalidArgument;
  }
  Table& t = table();
  std::lock_guard<std::mutex> connectingLock(t.connectingMutex);
  auto guard = d->lock();
  auto it = t.connecting.find(h.token);
  if (it == t.connecting.end()) {
    auto c = std::make_unique<Comm>();
    c->sending = true;
    c->id = h.id;
    Status s = d->insertAddressLocked(h.name, h.nameBytes, &c->peer);
    if (!s.isOk()) {
      WEFT_LOG(kWarn, kNet, "libfabric network table: %s", s.message().c_str());
      return weftSystemError;
    }
    auto intro = std::make_unique<Intro>();
    intro->magic = kIntroMagic;
    intro->token = h.token;
    Request* r = nullptr;
    weftResult_t res = postLocked(d, c.get(), intro.get(), sizeof(Intro), tableTag(kTagIntro, h.id, 0), &r);
    if (res != weftSuccess || r == nullptr) return res;
    (void)intro.release();  // freed with the request, once sent (below)
    (void)c.release();
    it = t.connecting.emplace(h.token, r).first;
  }
  (void)d->progressLocked();
  size_t bytes = 0;
  int error = 0;
  Request* r = it->second;
  Comm* c = r->comm;
  void* introBuffer = r->buffer;
  int state = collectLocked(r, &bytes, &error);
  if (state == kPosted) return weftSuccess;
  t.connecting.erase(it);
  delete static_cast<Intro*>(introBuffer);
  if (state == kFailed) {
    delete c;
    return resultOf(error);
  }
  *sendComm = c;
  return weftSuccess;
}

weftResult_t ofiAccept(void* listenComm, void** recvComm) {
  auto* l = static_cast<Listener*>(listenComm);
  *recvComm = nullptr;
  OfiDomain* d = table().domain.get();
  auto guard = d->lock();
  if (l->introRequest == nullptr) {
    weftResult_t r = postLocked(d, &l->comm, &l->intro, sizeof(l->intro), tableTag(kTagIntro, l->comm.id, 0),
                                &l->introRequest);
    if (r != weftSuccess || l->introRequest == nullptr) return r;
  }
  (void)d->progressLocked();
  size_t bytes = 0;
  int error = 0;
  int state = collectLocked(l->introRequest, &bytes, &error);
  if (state == kPosted) return weftSuccess;
  l->introRequest = nullptr;
  if (state == kFailed) return resultOf(error);
  if (bytes != sizeof(Intro) || l->intro.magic != kIntroMagic || l->intro.token != l->token) {
    WEFT_LOG(kWarn, kNet,
             "libfabric network table: dropped an introduction that does not carry this listener's token (%zu "
             "bytes); a program that is not a rank of this job sent it; nothing was changed",
             bytes);
    return weftSuccess;  // the next accept() posts the receive again
  }
  auto* c = new Comm;
  c->id = l->comm.id;
  *recvComm = c;
  return weftSuccess;
}

weftResult_t post(void* comm, void* data, size_t size, void** request) {
  auto* c = static_cast<Comm*>(comm);
  OfiDomain* d = table().domain.get();
  auto guard = d->lock();
  Request* r = nullptr;
  weftResult_t res = postLocked(d, c, data, size, tableTag(kTagData, c->id, c->seq), &r);
  if (r != nullptr) ++c->seq;
  *request = r;
  return res;
}

weftResult_t ofiIsend(void* sendComm, const void* data, size_t size, uint64_t, void** request) {
  return post(sendComm, const_cast<void*>(data), size, request);
}

weftResult_t ofiIrecv(void* recvComm, void* data, size_t size, uint64_t, void** request) {
  return post(recvComm, data, size, request);
}

weftResult_t ofiTest(void* request, int* done, size_t* size) {
  auto* r = static_cast<Request*>(request);
  *done = 0;
  OfiDomain* d = table().domain.get();
  if (r->state.load(std::memory_order_acquire) == kPosted) (void)d->tryProgress();
  if (r->state.load(std::memory_order_acquire) == kPosted) return weftSuccess;
  auto guard = d->lock();
  size_t bytes = 0;
  int error = 0;
  if (collectLocked(r, &bytes, &error) == kFailed) return resultOf(error);
  *done = 1;
  *size = bytes;
  return weftSuccess;
}

// Cancels what `c` still has posted, waits (bounded) for the provider to let go, and frees
// its requests (those still held by the provider after that are leaked, not freed under it).
void drainLocked(OfiDomain* d, Comm* c) {
  for (Request* r : c->open) d->cancelLocked(r);
  Deadline deadline = Deadline::afterSeconds(kDrainSeconds);
  auto held = [c] {
    int n = 0;
    for (Request* r : c->open) n += r->state.load(std::memory_order_acquire) == kPosted;
    return n;
  };
  while (held() > 0 && !deadline.expired()) {
    if (!d->pollCompletionsLocked()) sched_yield();
  }
  if (held() > 0) {
    WEFT_LOG(kWarn, kNet,
             "libfabric network table: %d operations were still pending %.0f s after closing a communication "
             "(provider %s cannot cancel them)",
             held(), kDrainSeconds, d->provider().c_str());
  }
  for (auto it = c->open.begin(); it != c->open.end();) {
    Request* r = *it;
    if (r->state.load(std::memory_order_acquire) == kPosted) {
      r->owner = nullptr;  // a late completion is dropped by the domain
      ++it;
      continue;
    }
    it = c->open.erase(it);
    delete r;
  }
}

weftResult_t closeComm(void* comm) {
  auto* c = static_cast<Comm*>(comm);
  OfiDomain* d = table().domain.get();
  {
    auto guard = d->lock();
    drainLocked(d, c);
  }
  delete c;
  return weftSuccess;
}

weftResult_t closeListener(void* listenComm) {
  auto* l = static_cast<Listener*>(listenComm);
  OfiDomain* d = table().domain.get();
  {
    auto guard = d->lock();
    drainLocked(d, &l->comm);
  }
  delete l;
  return weftSuccess;
}

const weftNet_v1_t kOfiTable = {
    .size = sizeof(weftNet_v1_t),
    .version = WEFT_NET_PLUGIN_VERSION_V1,
    .reserved = 0,
    .name = "ofi",
    .init = ofiInit,
    .devices = ofiDevices,
    .getProperties = ofiProperties,
    .listen = ofiListen,
    .connect = ofiConnect,
    .accept = ofiAccept,
    .isend = ofiIsend,
    .irecv = ofiIrecv,
    .test = ofiTest,
    .closeSend = closeComm,
    .closeRecv = closeComm,
    .closeListen = closeListener,
    .finalize = nullptr,
};

}  // namespace

const weftNet_v1_t* weftNetOfi_v1() { return &kOfiTable; }

}  // namespace net
}  // namespace weft
