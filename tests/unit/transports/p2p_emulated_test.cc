// The GPU peer-to-peer transport between two real processes over the emulated device
// (device/emulated_runtime.cc): the receiver (a forked child) exports its FIFO through an
// IPC handle, the sender imports it, messages cross through the FifoViews as the lane program
// moves them, an abort reaches the child with its culprit, and the child's exit is seen by the
// sender's checkPeer(). The handshake travels through pipes.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "base/os.h"
#include "device/device.h"
#include "device/gpu_loader.h"
#include "transports/p2p/p2p_transport.h"

namespace weft {
namespace p2p {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Reads or writes exactly `bytes`, waiting at most 10 s in all.
bool transfer(int fd, void* data, size_t bytes, bool writing) {
  auto* p = static_cast<char*>(data);
  Deadline deadline = Deadline::afterSeconds(10);
  while (bytes > 0) {
    pollfd pfd{fd, static_cast<short>(writing ? POLLOUT : POLLIN), 0};
    if (poll(&pfd, 1, deadline.remainingMs()) <= 0) return false;
    ssize_t n = writing ? write(fd, p, bytes) : read(fd, p, bytes);
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

// Point-to-point messages between the two processes over a pair of pipes, in order.
class PipeExchange final : public PeerExchange {
 public:
  PipeExchange(int in, int out) : in_(in), out_(out) {}
  Status send(int, int tag, const void* data, size_t bytes) override {
    uint64_t header[2] = {static_cast<uint64_t>(tag), bytes};
    if (!transfer(out_, header, sizeof(header), true) || !transfer(out_, const_cast<void*>(data), bytes, true)) {
      return Status::error(weftSystemError, "pipe exchange: write failed");
    }
    return Status::ok();
  }
  Status recv(int, int tag, void* data, size_t bytes) override {
    uint64_t header[2] = {0, 0};
    if (!transfer(in_, header, sizeof(header), false)) return Status::error(weftTimeout, "pipe exchange: no message");
    if (header[0] != static_cast<uint64_t>(tag) || header[1] != bytes) {
      return Status::error(weftInternalError, "pipe exchange: unexpected message");
    }
    if (!transfer(in_, data, bytes, false)) return Status::error(weftTimeout, "pipe exchange: short message");
    return Status::ok();
  }

 private:
  int in_;
  int out_;
};

constexpr int kResultTag = 1;
constexpr uint64_t kMessages = 40;
constexpr size_t kSlots = 4;
constexpr size_t kSlotBytes = 1000;

uint64_t loadAcquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void storeRelease(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

ConnectRequest request(int self, int selfPid, int peerPid, PeerExchange* exchange, device::Runtime* runtime) {
  auto info = [](int rank, int pid) {
    PeerInfo p;
    p.rank = rank;
    p.pid = pid;
    p.hostHash = hostHash();
    p.processHash = 0x5000 + static_cast<uint64_t>(pid);
    p.device = 0;
    std::snprintf(p.hostName, sizeof(p.hostName), "%s", hostName().c_str());
    return p;
  };
  ConnectRequest r;
  r.commTag = "emulated";
  r.self = info(self, selfPid);
  r.peer = info(1 - self, peerPid);
  r.lane = (1 << 16) + 1;
  r.nSlots = kSlots;
  r.slotBytes = kSlotBytes;
  r.deadline = Deadline::afterSeconds(10);
  r.exchange = exchange;
  r.runtime = runtime;
  return r;
}

// The child: rank 1, the receiver. Returns its exit code: 0, or the step that went wrong.
int runReceiver(PipeExchange* exchange, int parentPid) {
  device::Runtime* rt = &device::emulatedRuntime();
  P2pTransport transport;
  std::unique_ptr<Connection> conn;
  if (!transport.connectRecv(request(1, getpid(), parentPid, exchange, rt), &conn).isOk()) return 10;
  device::FifoView v;
  if (!conn->deviceFifo(&v)) return 11;
  Deadline deadline = Deadline::afterSeconds(10);
  for (uint64_t m = 0; m < kMessages; ++m) {
    const uint64_t c = *v.cursor;
    while (loadAcquire(v.head) <= c) {
      if (deadline.expired()) return 12;
    }
    const uint64_t bytes = __atomic_load_n(&v.sizes[c % v.nSlots], __ATOMIC_ACQUIRE);
    if (bytes != 1 + (m * 37) % kSlotBytes) return 13;
    const char* slot = v.data + (c % v.nSlots) * v.stride;
    for (uint64_t i = 0; i < bytes; ++i) {
      if (slot[i] != static_cast<char>(m + i)) return 14;
    }
    storeRelease(v.tail, c + 1);
    *v.cursor = c + 1;
  }
  int32_t done = 1;
  if (!exchange->send(0, kResultTag, &done, sizeof(done)).isOk()) return 15;
  // Wait for the sender's abort, then report its culprit.
  while (!conn->peerAborted()) {
    if (deadline.expired()) return 16;
  }
  int32_t culprit = conn->peerAbortCulprit();
  if (!exchange->send(0, kResultTag, &culprit, sizeof(culprit)).isOk()) return 17;
  return 0;
}

TEST(P2pEmulatedTest, TwoProcessesThroughIpc) {
  int toChild[2], toParent[2];
  ASSERT_EQ(pipe(toChild), 0);
  ASSERT_EQ(pipe(toParent), 0);
  const int parentPid = getpid();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(toChild[1]);
    close(toParent[0]);
    PipeExchange ex(toChild[0], toParent[1]);
    int code = runReceiver(&ex, parentPid);
    // Wait for the parent to close its end: it checks this process while it lives.
    char c;
    (void)!read(toChild[0], &c, 1);
    _exit(code);
  }
  close(toChild[0]);
  close(toParent[1]);
  PipeExchange ex(toParent[0], toChild[1]);
  device::Runtime* rt = &device::emulatedRuntime();
  P2pTransport transport;
  std::unique_ptr<Connection> conn;
  Status s = transport.connectSend(request(0, parentPid, child, &ex, rt), &conn);
  ASSERT_TRUE(s.isOk()) << s.message();
  device::FifoView v;
  ASSERT_TRUE(conn->deviceFifo(&v));
  EXPECT_TRUE(conn->checkPeer().isOk());

  // Send every message as the lane program does, waiting for free slots.
  Deadline deadline = Deadline::afterSeconds(10);
  for (uint64_t m = 0; m < kMessages; ++m) {
    const uint64_t c = *v.cursor;
    while (c - loadAcquire(v.tail) >= v.nSlots) ASSERT_FALSE(deadline.expired()) << "message " << m;
    char* slot = v.data + (c % v.nSlots) * v.stride;
    const uint64_t bytes = 1 + (m * 37) % kSlotBytes;
    for (uint64_t i = 0; i < bytes; ++i) slot[i] = static_cast<char>(m + i);
    __atomic_store_n(&v.sizes[c % v.nSlots], bytes, __ATOMIC_RELEASE);
    storeRelease(v.head, c + 1);
    *v.cursor = c + 1;
  }
  int32_t result = 0;
  ASSERT_TRUE(ex.recv(1, kResultTag, &result, sizeof(result)).isOk());
  EXPECT_EQ(result, 1);
  EXPECT_TRUE(conn->allSendsConsumed());

  conn->signalAbort(3);
  ASSERT_TRUE(ex.recv(1, kResultTag, &result, sizeof(result)).isOk());
  EXPECT_EQ(result, 3);

  // Let the child go; its exit is what checkPeer() reports now.
  close(toChild[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  Status st = conn->checkPeer();
  EXPECT_EQ(st.code(), weftRemoteError);
  EXPECT_TRUE(contains(st.message(), "pid " + std::to_string(child))) << st.message();
  conn.reset();
  close(toParent[0]);
}

}  // namespace
}  // namespace p2p
}  // namespace weft
