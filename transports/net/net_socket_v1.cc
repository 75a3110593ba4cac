// The built-in TCP network code as a net_v1.h table (weftNetSocket_v1, net_builtin.h): what
// WEFT_NET=socket-plugin runs through the same generic transport an external plugin gets, and
// the proof that the ABI carries everything the socket transport needs.
//
// listen() opens a listening socket on the interface WEFT_SOCKET_IFNAME selects (as the socket
// transport does) and writes a handle: its address and a random token. connect() opens a
// non-blocking connection and presents magic and token; accept() takes only a connection that
// presents this listener's token within 10 s and drops (with a warning) anything else, so
// strangers on the port change nothing. Each message on a connection is an 8-byte length and
// the bytes; a communication's requests complete in order.
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/os.h"
#include "base/params.h"
#include "base/socket.h"
#include "transports/net/net_builtin.h"

namespace weft {
namespace net {
namespace {

constexpr uint64_t kHandleMagic = 0x3148564b434f5357ull;  // "WSOCKVH1"
constexpr uint64_t kIntroMagic = 0x3149564b434f5357ull;   // "WSOCKVI1"
constexpr double kIntroTimeoutS = 10.0;
constexpr size_t kMaxPendingIntros = 256;

// What listen() writes for the sender: where to connect, and what to present.
struct Handle {
  uint64_t magic = 0;
  uint64_t token = 0;
  uint32_t addrLen = 0;
  uint32_t reserved = 0;
  unsigned char addr[sizeof(sockaddr_in6)] = {0};
};
static_assert(sizeof(Handle) <= WEFT_NET_HANDLE_BYTES_V1, "a handle must fit net_v1.h's handle");

// The sender's first bytes on a new connection.
struct Intro {
  uint64_t magic = 0;
  uint64_t token = 0;
};

struct Comm;

struct Request {
  Comm* comm = nullptr;
  char* data = nullptr;
  size_t capacity = 0;
  uint64_t length = 0;  // sending: known; receiving: read from the stream
  size_t lengthDone = 0;
  size_t dataDone = 0;
  bool complete = false;
};

struct Comm {
  int fd = -1;
  bool sending = false;
  std::deque<Request*> queue;  // in order; only the front moves
  weftResult_t broken = weftSuccess;
  Intro intro;  // connecting: the introduction still to go out
  size_t introDone = 0;
  ~Comm() {
    for (Request* r : queue) delete r;
    if (fd >= 0) ::close(fd);
  }
};

struct PendingIntro {
  int fd = -1;
  Intro intro;
  size_t got = 0;
  Deadline deadline;
};

struct Listener {
  int fd = -1;
  uint64_t token = 0;
  std::vector<PendingIntro> pending;
  ~Listener() {
    for (PendingIntro& p : pending) ::close(p.fd);
    if (fd >= 0) ::close(fd);
  }
};

struct Interface {
  std::mutex mutex;
  bool found = false;
  NetInterface chosen;
};

Interface& interface() {
  static Interface i;
  return i;
}

bool transient(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

void tune(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Connections in progress, by token (connect() is called again with the same handle).
struct Connecting {
  std::mutex mutex;
  std::map<uint64_t, std::unique_ptr<Comm>> byToken;
};
Connecting& connecting() {
  static Connecting c;
  return c;
}

weftResult_t socketInit(weftNetLogger_v1_t) { return weftSuccess; }

weftResult_t socketDevices(int* ndev) {
  Interface& i = interface();
  std::lock_guard<std::mutex> lock(i.mutex);
  if (!i.found) {
    std::vector<NetInterface> ifs;
    Status s = findInterfaces(params::SocketIfname(), &ifs);
    if (!s.isOk()) {
      WEFT_LOG(kWarn, kNet, "socket network table: %s", s.message().c_str());
      *ndev = 0;
      return weftSystemError;
    }
    i.chosen = ifs.front();
    i.found = true;
  }
  *ndev = 1;
  return weftSuccess;
}

weftResult_t socketProperties(int dev, weftNetProperties_v1_t* props) {
  int n = 0;
  if (dev != 0 || socketDevices(&n) != weftSuccess) return weftInvalidArgument;
  std::memset(props, 0, sizeof(*props));
  props->name = interface().chosen.name.c_str();  // set once, never changed afterwards
  props->ptrSupport = WEFT_NET_PTR_HOST;
  return weftSuccess;
}

weftResult_t socketListen(int dev, void* handle, void** listenComm) {
  int n = 0;
  if (dev != 0 || socketDevices(&n) != weftSuccess) return weftInvalidArgument;
  SocketAddress bind = interface().chosen.address;
  bind.setPort(0);
  auto l = std::make_unique<Listener>();
  l->fd = ::socket(bind.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l->fd < 0) return weftSystemError;
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (::bind(l->fd, bind.sockaddrPtr(), bind.length()) != 0 || ::listen(l->fd, 64) != 0 ||
      ::getsockname(l->fd, reinterpret_cast<sockaddr*>(&local), &len) != 0 || len > sizeof(Handle::addr)) {
    WEFT_LOG(kWarn, kNet, "socket network table: cannot listen on %s: %s", bind.toString().c_str(),
             errnoText(errno).c_str());
    return weftSystemError;
  }
  (void)fcntl(l->fd, F_SETFL, fcntl(l->fd, F_GETFL) | O_NONBLOCK);
  Handle h;
  h.magic = kHandleMagic;
  if (!randomBytes(&h.token, sizeof(h.token))) h.token = hashBytes(&l, sizeof(l), nowNs());
  h.addrLen = len;
  std::memcpy(h.addr, &local, len);
  l->token = h.token;
  std::memcpy(handle, &h, sizeof(h));
  *listenComm = l.release();
  return weftSuccess;
}

// Moves a connection in progress on: connected and introduced (true), not yet, or failed.
weftResult_t finishConnect(Comm* c, bool* ready) {
  *ready = false;
  pollfd p{c->fd, POLLOUT, 0};
  if (c->introDone == 0) {
    if (::poll(&p, 1, 0) <= 0) return weftSuccess;
    int err = 0;
    socklen_t len = sizeof(err);
    if (::getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      return err == ECONNREFUSED || err == ECONNRESET ? weftRemoteError : weftSystemError;
    }
  }
  while (c->introDone < sizeof(c->intro)) {
    ssize_t w = ::send(c->fd, reinterpret_cast<const char*>(&c->intro) + c->introDone, sizeof(c->intro) - c->introDone,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) return transient(errno) ? weftSuccess : weftRemoteError;
    c->introDone += static_cast<size_t>(w);
  }
  *ready = true;
  return weftSuccess;
}

weftResult_t startConnect(const Handle& h, std::unique_ptr<Comm>* out) {
  auto c = std::make_unique<Comm>();
  c->sending = true;
  c->intro.magic = kIntroMagic;
  c->intro.token = h.token;
  c->fd = ::socket(reinterpret_cast<const sockaddr*>(h.addr)->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->fd < 0) return weftSystemError;
  tune(c->fd);
  if (::connect(c->fd, reinterpret_cast<const sockaddr*>(h.addr), h.addrLen) != 0 && errno != EINPROGRESS) {
    return errno == ECONNREFUSED ? weftRemoteError : weftSystemError;
  }
  *out = std::move(c);
  return weftSuccess;
}

weftResult_t socketConnect(int dev, const void* handle, void** sendComm) {
  *sendComm = nullptr;
  Handle h;
  std::memcpy(&h, handle, sizeof(h));
  if (dev != 0 || h.magic != kHandleMagic || h.addrLen < sizeof(sockaddr_in) || h.addrLen > sizeof(h.addr)) {
    WEFT_LOG(kWarn, kNet, "socket network table: connect() got a handle listen() did not write");
    return weftInvalidArgument;
  }
  Connecting& all = connecting();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto it = all.byToken.find(h.token);
  if (it == all.byToken.end()) {
    std::unique_ptr<Comm> c;
    weftResult_t r = startConnect(h, &c);
    if (r != weftSuccess) return r;
    it = all.byToken.emplace(h.token, std::move(c)).first;
  }
  bool ready = false;
  weftResult_t r = finishConnect(it->second.get(), &ready);
  if (r != weftSuccess) {
    all.byToken.erase(it);
    return r;
  }
  if (ready) {
    *sendComm = it->second.release();
    all.byToken.erase(it);
  }
  return weftSuccess;
}

// One pending connection's introduction: kept (false), or finished with (true; *fd set when it
// is the sender, else closed).
bool serveIntro(Listener* l, PendingIntro& p, int* fd) {
  ssize_t r = ::recv(p.fd, reinterpret_cast<char*>(&p.intro) + p.got, sizeof(p.intro) - p.got, MSG_DONTWAIT);
  const char* why = nullptr;
  if (r > 0) p.got += static_cast<size_t>(r);
  if (r == 0) why = "it closed the connection before introducing itself";
  if (r < 0 && !transient(errno)) why = "its connection failed before it introduced itself";
  if (!why && p.got == sizeof(p.intro)) {
    if (p.intro.magic == kIntroMagic && p.intro.token == l->token) {
      *fd = p.fd;
      return true;
    }
    why = "it presented a token this listener did not issue";
  }
  if (!why && p.deadline.expired()) why = "it sent no valid introduction within 10 s";
  if (!why) return false;
  WEFT_LOG(kWarn, kNet,
           "socket network table: dropped a connection: %s. A program that is not a rank of this job connected (a "
           "port scanner, another job); nothing was changed",
           why);
  ::close(p.fd);
  return true;
}

weftResult_t socketAccept(void* listenComm, void** recvComm) {
  auto* l = static_cast<Listener*>(listenComm);
  *recvComm = nullptr;
  for (;;) {
    int fd = ::accept4(l->fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (transient(errno) || errno == ECONNABORTED) break;
      return weftSystemError;
    }
    tune(fd);
    if (l->pending.size() >= kMaxPendingIntros) {
      ::close(l->pending.front().fd);
      l->pending.erase(l->pending.begin());
    }
    l->pending.push_back(PendingIntro{fd, Intro(), 0, Deadline::afterSeconds(kIntroTimeoutS)});
  }
  for (size_t i = 0; i < l->pending.size();) {
    int fd = -1;
    if (!serveIntro(l, l->pending[i], &fd)) {
      ++i;
      continue;
    }
    l->pending.erase(l->pending.begin() + static_cast<long>(i));
    if (fd >= 0) {
      auto* c = new Comm;
      c->fd = fd;
      *recvComm = c;
      return weftSuccess;
    }
  }
  return weftSuccess;
}

// Reads or writes [p + *done, p + bytes): kComplete, kBlocked, or the comm broke.
enum class Io { kComplete, kBlocked, kBroken };
Io moveBytes(Comm* c, char* p, size_t bytes, size_t* done) {
  while (*done < bytes) {
    ssize_t n = c->sending ? ::send(c->fd, p + *done, bytes - *done, MSG_NOSIGNAL | MSG_DONTWAIT)
                           : ::recv(c->fd, p + *done, bytes - *done, MSG_DONTWAIT);
    if (n > 0) {
      *done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && transient(errno)) return Io::kBlocked;
    c->broken = weftRemoteError;  // closed or reset by the peer
    return Io::kBroken;
  }
  return Io::kComplete;
}

// A sender's front request: length and bytes in one system call where the socket takes them.
Io sendFront(Comm* c, Request* r) {
  while (r->lengthDone < sizeof(r->length) || r->dataDone < r->length) {
    iovec iov[2];
    int n = 0;
    if (r->lengthDone < sizeof(r->length)) {
      iov[n++] = {reinterpret_cast<char*>(&r->length) + r->lengthDone, sizeof(r->length) - r->lengthDone};
    }
    if (r->dataDone < r->length) iov[n++] = {r->data + r->dataDone, r->length - r->dataDone};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    ssize_t w = ::sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (transient(errno)) return Io::kBlocked;
      c->broken = weftRemoteError;
      return Io::kBroken;
    }
    size_t written = static_cast<size_t>(w);
    size_t toLength = std::min(written, sizeof(r->length) - r->lengthDone);
    r->lengthDone += toLength;
    r->dataDone += written - toLength;
  }
  return Io::kComplete;
}

// Moves the front requests of `c` as far as the socket allows.
weftResult_t progress(Comm* c) {
  while (!c->queue.empty()) {
    Request* r = c->queue.front();
    if (r->complete) return weftSuccess;  // waiting for test() to collect it
    Io io = Io::kComplete;
    if (c->sending) {
      io = sendFront(c, r);
    } else {
      io = moveBytes(c, reinterpret_cast<char*>(&r->length), sizeof(r->length), &r->lengthDone);
      if (io == Io::kComplete && r->length > r->capacity) {
        WEFT_LOG(kWarn, kNet, "socket network table: a %llu-byte message for a %zu-byte receive",
                 static_cast<unsigned long long>(r->length), r->capacity);
        c->broken = weftInternalError;
        return weftInternalError;
      }
      if (io == Io::kComplete) io = moveBytes(c, r->data, r->length, &r->dataDone);
    }
    if (io == Io::kBlocked) return weftSuccess;
    if (io == Io::kBroken) return c->broken;
    r->complete = true;
    c->queue.pop_front();
  }
  return weftSuccess;
}

weftResult_t post(void* comm, void* data, size_t size, void** request, bool sending) {
  auto* c = static_cast<Comm*>(comm);
  *request = nullptr;
  if (c->broken != weftSuccess) return c->broken;
  auto* r = new Request;
  r->comm = c;
  r->data = static_cast<char*>(data);
  r->capacity = size;
  if (sending) r->length = size;
  c->queue.push_back(r);
  *request = r;
  // Started now; a failure is test()'s to report, after the requests ahead of it completed.
  (void)progress(c);
  return weftSuccess;
}

weftResult_t socketIsend(void* sendComm, const void* data, size_t size, uint64_t, void** request) {
  return post(sendComm, const_cast<void*>(data), size, request, true);
}

weftResult_t socketIrecv(void* recvComm, void* data, size_t size, uint64_t, void** request) {
  return post(recvComm, data, size, request, false);
}

weftResult_t socketTest(void* request, int* done, size_t* size) {
  auto* r = static_cast<Request*>(request);
  if (!r->complete) {
    // Progress may complete this request and fail on a later one: that error is the later's.
    weftResult_t res = progress(r->comm);
    if (res != weftSuccess && !r->complete) {
      r->comm->queue.erase(std::find(r->comm->queue.begin(), r->comm->queue.end(), r));
      delete r;
      return res;
    }
  }
  *done = r->complete ? 1 : 0;
  if (r->complete) {
    *size = r->length;
    delete r;
  }
  return weftSuccess;
}

weftResult_t closeComm(void* comm) {
  delete static_cast<Comm*>(comm);
  return weftSuccess;
}

weftResult_t closeListener(void* listenComm) {
  delete static_cast<Listener*>(listenComm);
  return weftSuccess;
}

const weftNet_v1_t kSocketTable = {
    .size = sizeof(weftNet_v1_t),
    .version = WEFT_NET_PLUGIN_VERSION_V1,
    .reserved = 0,
    .name = "socket",
    .init = socketInit,
    .devices = socketDevices,
    .getProperties = socketProperties,
    .listen = socketListen,
    .connect = socketConnect,
    .accept = socketAccept,
    .isend = socketIsend,
    .irecv = socketIrecv,
    .test = socketTest,
    .closeSend = closeComm,
    .closeRecv = closeComm,
    .closeListen = closeListener,
    .finalize = nullptr,
};

}  // namespace

const weftNet_v1_t* weftNetSocket_v1() { return &kSocketTable; }

}  // namespace net
}  // namespace weft
