// A network plugin built outside Weft against include/weft/net_v1.h only: TCP over 127.0.0.1,
// each message an 8-byte length and its bytes, requests completed in order per communication.
// The tests load it through WEFT_NET_PLUGIN. Built several times with one of these defined, it
// is also each broken plugin the loader must refuse clearly:
//   WEFT_TEST_PLUGIN_NO_SYMBOL   exports its table under another name
//   WEFT_TEST_PLUGIN_SHORT_TABLE a table whose size field is smaller than version 1's
//   WEFT_TEST_PLUGIN_INIT_FAILS  init() fails (after logging why)
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>

#include "weft/net_v1.h"

namespace {

weftNetLogger_v1_t logger = nullptr;
std::atomic<uint64_t> messagesSent{0};  // for tests: proof that traffic went through here

struct Request;

struct Comm {
  int fd = -1;
  bool sending = false;
  std::deque<Request*> queue;  // in order; only the front moves
  bool broken = false;
};

struct Request {
  Comm* comm = nullptr;
  char* data = nullptr;
  size_t capacity = 0;
  uint64_t length = 0;  // the message's length (sender: known; receiver: read from the stream)
  size_t headerDone = 0;
  size_t dataDone = 0;
  bool complete = false;
};

void setNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Moves the front requests of `c` as far as the socket allows.
weftResult_t progress(Comm* c) {
  while (!c->queue.empty()) {
    Request* r = c->queue.front();
    if (r->complete) return weftSuccess;  // waiting for test() to collect it
    char* header = reinterpret_cast<char*>(&r->length);
    while (r->headerDone < sizeof(r->length)) {
      ssize_t n = c->sending ? ::send(c->fd, header + r->headerDone, sizeof(r->length) - r->headerDone, MSG_NOSIGNAL)
                             : ::recv(c->fd, header + r->headerDone, sizeof(r->length) - r->headerDone, 0);
      if (n > 0) {
        r->headerDone += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return weftSuccess;
      c->broken = true;
      if (logger)
        logger(WEFT_NET_LOG_INFO, "loopback: fd %d %s: %s", c->fd, c->sending ? "send" : "recv",
               n == 0 ? "closed by the peer" : strerror(errno));
      return weftRemoteError;  // closed or reset by the peer
    }
    if (r->length > r->capacity) {
      if (logger)
        logger(WEFT_NET_LOG_WARN, "loopback: a %llu-byte message for a %zu-byte receive",
               static_cast<unsigned long long>(r->length), r->capacity);
      return weftInternalError;
    }
    while (r->dataDone < r->length) {
      ssize_t n = c->sending ? ::send(c->fd, r->data + r->dataDone, r->length - r->dataDone, MSG_NOSIGNAL)
                             : ::recv(c->fd, r->data + r->dataDone, r->length - r->dataDone, 0);
      if (n > 0) {
        r->dataDone += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return weftSuccess;
      c->broken = true;
      if (logger)
        logger(WEFT_NET_LOG_INFO, "loopback: fd %d %s mid-message (%zu of %llu): %s", c->fd,
               c->sending ? "send" : "recv", r->dataDone, static_cast<unsigned long long>(r->length),
               n == 0 ? "closed by the peer" : strerror(errno));
      return weftRemoteError;
    }
    r->complete = true;
    if (c->sending) messagesSent.fetch_add(1, std::memory_order_relaxed);
    c->queue.pop_front();
  }
  return weftSuccess;
}

weftResult_t pluginInit(weftNetLogger_v1_t log) {
  logger = log;
#ifdef WEFT_TEST_PLUGIN_INIT_FAILS
  if (logger) logger(WEFT_NET_LOG_WARN, "loopback: this build refuses to start (test)");
  return weftSystemError;
#else
  if (logger) logger(WEFT_NET_LOG_INFO, "loopback: ready");
  return weftSuccess;
#endif
}

weftResult_t pluginDevices(int* n) {
  *n = 1;
  return weftSuccess;
}

weftResult_t pluginProperties(int dev, weftNetProperties_v1_t* p) {
  if (dev != 0) return weftInvalidArgument;
  std::memset(p, 0, sizeof(*p));
  p->name = "lo";
  p->speedMbps = 10000;
  p->ptrSupport = WEFT_NET_PTR_HOST;
  return weftSuccess;
}

weftResult_t pluginListen(int, void* handle, void** listenComm) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return weftSystemError;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, 16) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return weftSystemError;
  }
  setNonBlocking(fd);
  std::memcpy(handle, &a, sizeof(a));
  auto* c = new Comm;
  c->fd = fd;
  *listenComm = c;
  return weftSuccess;
}

weftResult_t pluginConnect(int, const void* handle, void** sendComm) {
  sockaddr_in a;
  std::memcpy(&a, handle, sizeof(a));
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return weftSystemError;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return errno == ECONNREFUSED ? weftRemoteError : weftSystemError;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setNonBlocking(fd);
  auto* c = new Comm;
  c->fd = fd;
  c->sending = true;
  *sendComm = c;
  return weftSuccess;
}

weftResult_t pluginAccept(void* listenComm, void** recvComm) {
  auto* l = static_cast<Comm*>(listenComm);
  int fd = ::accept(l->fd, nullptr, nullptr);
  if (fd < 0) {
    *recvComm = nullptr;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? weftSuccess : weftSystemError;
  }
  setNonBlocking(fd);
  auto* c = new Comm;
  c->fd = fd;
  *recvComm = c;
  return weftSuccess;
}

weftResult_t post(void* comm, void* data, size_t size, void** request, bool sending) {
  auto* c = static_cast<Comm*>(comm);
  if (c->broken) return weftRemoteError;
  auto* r = new Request;
  r->comm = c;
  r->data = static_cast<char*>(data);
  r->capacity = size;
  if (sending) r->length = size;
  c->queue.push_back(r);
  *request = r;
  // Start it now; a failure (the peer closed after its last message) is for test() to report,
  // once the requests ahead of it have completed.
  (void)progress(c);
  return weftSuccess;
}

weftResult_t pluginIsend(void* sendComm, const void* data, size_t size, uint64_t, void** request) {
  return post(sendComm, const_cast<void*>(data), size, request, true);
}

weftResult_t pluginIrecv(void* recvComm, void* data, size_t size, uint64_t, void** request) {
  return post(recvComm, data, size, request, false);
}

weftResult_t pluginTest(void* request, int* done, size_t* size) {
  auto* r = static_cast<Request*>(request);
  if (!r->complete) {
    // Progress may complete this request and then fail on a later one (the peer closed after
    // its last message): that error belongs to the later request's test().
    weftResult_t res = progress(r->comm);
    if (res != weftSuccess && !r->complete) return res;
  }
  *done = r->complete ? 1 : 0;
  if (r->complete) {
    *size = r->length;
    delete r;
  }
  return weftSuccess;
}

weftResult_t closeComm(void* comm) {
  auto* c = static_cast<Comm*>(comm);
  for (Request* r : c->queue) delete r;
  ::close(c->fd);
  delete c;
  return weftSuccess;
}

}  // namespace

// Not part of the ABI: lets a test that loaded this library see that messages crossed it.
extern "C" __attribute__((visibility("default"))) uint64_t weftTestLoopbackMessagesSent() {
  return messagesSent.load(std::memory_order_relaxed);
}

#if defined(WEFT_TEST_PLUGIN_NO_SYMBOL)
#define WEFT_TEST_PLUGIN_TABLE weftNetPlugin_v0
#else
#define WEFT_TEST_PLUGIN_TABLE weftNetPlugin_v1
#endif

extern "C" __attribute__((visibility("default"))) const weftNet_v1_t WEFT_TEST_PLUGIN_TABLE = {
#if defined(WEFT_TEST_PLUGIN_SHORT_TABLE)
    .size = offsetof(weftNet_v1_t, closeListen),  // as if built against an older, shorter header
#else
    .size = sizeof(weftNet_v1_t),
#endif
    .version = WEFT_NET_PLUGIN_VERSION_V1,
    .reserved = 0,
    .name = "loopback",
    .init = pluginInit,
    .devices = pluginDevices,
    .getProperties = pluginProperties,
    .listen = pluginListen,
    .connect = pluginConnect,
    .accept = pluginAccept,
    .isend = pluginIsend,
    .irecv = pluginIrecv,
    .test = pluginTest,
    .closeSend = closeComm,
    .closeRecv = closeComm,
    .closeListen = closeComm,
    .finalize = nullptr,
};
