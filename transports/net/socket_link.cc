// The socket transport's links (socket_link.h).
#include "transports/net/socket_link.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "transports/net/socket_wire.h"

namespace weft {
namespace net {
namespace {

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

}  // namespace

bool SocketLink::drive() {
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

int SocketLink::pollFd() const {
  int fd = fd_.load(std::memory_order_acquire);
  if (!sending_ && !proxyReceives()) return kNothingToWaitFor;
  if (fd < 0 || state_.failed() || abortSent_.load(std::memory_order_relaxed)) return kNothingToWaitFor;
  return fd;
}

short SocketLink::pollEvents() const {
  if (sending_) {
    bool pending = ring_.tail.load(std::memory_order_relaxed) != ring_.head.load(std::memory_order_acquire);
    return static_cast<short>(POLLIN | (pending ? POLLOUT : 0));
  }
  return roomForOne() ? POLLIN : 0;
}

void SocketLink::describePeer() {
  char text[224];
  std::snprintf(text, sizeof(text), "%s, %s", peerText_.c_str(), socket_.peerAddress().toString().c_str());
  peerText_ = text;
}

bool SocketLink::roomForOne() const {
  return ring_.head.load(std::memory_order_relaxed) - ring_.tail.load(std::memory_order_acquire) < ring_.nSlots();
}

void SocketLink::failIo(const char* doing, int err) {
  state_.fail(WEFT_ERROR(weftRemoteError,
                         "the connection to %s failed while %s: %s; its process probably exited or its host or "
                         "link went down",
                         peerText_.c_str(), doing, errnoText(err).c_str()),
              false);
}

void SocketLink::failClosed(bool midMessage) {
  state_.fail(WEFT_ERROR(weftRemoteError, "%s closed the connection%s; its process exited or failed", peerText_.c_str(),
                         midMessage ? " in the middle of a message" : ""),
              false);
}

// The control frames a peer may send on the reverse direction: an abort, and (to a sender)
// acknowledgements.
bool SocketLink::handleFrame(const FrameHeader& h) {
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

bool SocketLink::sendAbort() {
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
  state_.fail(WEFT_ERROR(weftRemoteError, "this rank aborted its connection to %s", peerText_.c_str()), false);
  return true;
}

// Reads into p[*done, bytes) without waiting; *moved when any byte came. kFailed: the link
// failed (closed, reset) and the failure is recorded; `midMessage` words a close.
SocketLink::Read SocketLink::readInto(char* p, size_t bytes, size_t* done, bool midMessage, bool* moved) {
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
bool SocketLink::readControl() {
  bool moved = false;
  for (;;) {
    Read r = readInto(reinterpret_cast<char*>(&control_), sizeof(control_), &controlDone_, false, &moved);
    if (r != Read::kComplete) return moved || r == Read::kFailed;
    controlDone_ = 0;
    if (!handleFrame(control_)) return true;
  }
}

// Receiving link: tells the sender how many messages the executor has released so far.
bool SocketLink::sendAck() {
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

bool SocketLink::progressSend() {
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

bool SocketLink::progressRecv() {
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

}  // namespace net
}  // namespace weft
