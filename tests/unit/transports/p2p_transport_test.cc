// The GPU peer-to-peer transport over a fake runtime (p2p_fake_runtime.h), both ends in this
// process: which pairs it takes, the FIFO both ends see, messages moved through the FifoViews
// the way the lane program moves them, the IPC path, aborts with their culprit, a peer process
// exiting, and every refusal (host executor, no peer path, a corrupted or refused handshake)
// with nothing left allocated.
#include "transports/p2p/p2p_transport.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "base/os.h"
#include "mailboxes.h"
#include "p2p_fake_runtime.h"
#include "transports/p2p/p2p_fifo.h"

namespace weft {
namespace p2p {
namespace {

// The stamp these tests post with every message, and the last one received (the conformance
// suite checks that stamps arrive intact).
constexpr uint64_t kTestStamp = 0x5eed5eed00000042ull;
thread_local uint64_t lastStamp = 0;

using p2ptest::FakeRuntime;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

using test_util::Exchange;
using test_util::Mailboxes;

PeerInfo info(int rank, int device, uint64_t process = 0x2000) {
  PeerInfo p;
  p.rank = rank;
  p.pid = getpid();
  p.hostHash = 0x1000;
  p.processHash = process;
  p.device = device;
  std::snprintf(p.hostName, sizeof(p.hostName), "host");
  return p;
}

// Rank 0 sends to rank 1 on `lane`. `ipc`: the two ranks claim different processes, so the
// receiver exports its block and the sender imports it.
struct Pair {
  FakeRuntime rt;  // first: outlives the connections
  Mailboxes boxes;
  Exchange ex0{&boxes, 0};
  Exchange ex1{&boxes, 1};
  P2pTransport transport;
  int sendDevice = 0;
  int recvDevice = 1;
  bool ipc = false;
  size_t nSlots = 3;
  size_t slotBytes = 100;
  int lane = (1 << 16) + 2;  // device executor FIFO lanes start at 1 << 16
  std::unique_ptr<Connection> send;
  std::unique_ptr<Connection> recv;

  ConnectRequest request(int self) {
    ConnectRequest r;
    r.commTag = "test";
    const uint64_t p0 = 0x2000;
    const uint64_t p1 = ipc ? 0x2001 : 0x2000;
    r.self = self == 0 ? info(0, sendDevice, p0) : info(1, recvDevice, p1);
    r.peer = self == 0 ? info(1, recvDevice, p1) : info(0, sendDevice, p0);
    r.lane = lane;
    r.nSlots = nSlots;
    r.slotBytes = slotBytes;
    r.deadline = Deadline::afterSeconds(10);
    r.exchange = self == 0 ? static_cast<PeerExchange*>(&ex0) : &ex1;
    r.runtime = &rt;
    return r;
  }
  // The sender offers its credits first (as the communicator's connect does), so that the
  // receiver, which waits for them, can be made on this thread before the sender attaches.
  bool prepared = false;
  Status prepareSend() {
    prepared = true;
    return transport.prepareSend(request(0));
  }
  Status connectRecv() {
    if (!prepared) WEFT_TRY(prepareSend());
    return transport.connectRecv(request(1), &recv);
  }
  Status connectSend() { return transport.connectSend(request(0), &send); }
  void connect() {
    Status r = connectRecv();
    ASSERT_TRUE(r.isOk()) << r.message();
    Status s = connectSend();
    ASSERT_TRUE(s.isOk()) << s.message();
  }
  // The sender's handle goes first: an importer must close before the exporter frees.
  void close() {
    send.reset();
    recv.reset();
  }
};

TEST(P2pTransportTest, TakesGpuRanksOnOneHostOnly) {
  P2pTransport t;
  EXPECT_STREQ(t.name(), "p2p");
  EXPECT_TRUE(t.forDevices());
  EXPECT_TRUE(t.canConnect(info(0, 0), info(1, 0)));            // one GPU, two ranks
  EXPECT_TRUE(t.canConnect(info(0, 0, 0x1), info(1, 0, 0x2)));  // two processes on one GPU
  // Two GPUs: only when the GPU runtime says each reaches the other (here there is none, so the
  // pair is staged through host memory instead).
  ASSERT_EQ(device::gpuRuntime(), nullptr);
  EXPECT_FALSE(t.canConnect(info(0, 0), info(1, 1)));
  EXPECT_FALSE(t.canConnect(info(0, 0, 0x1), info(1, 1, 0x2)));
  EXPECT_FALSE(t.canConnect(info(0, -1), info(1, 1)));          // a host-memory rank
  EXPECT_FALSE(t.canConnect(info(0, 0), info(1, -1)));
  EXPECT_FALSE(t.canConnect(info(0, -1), info(1, -1)));
  PeerInfo far = info(1, 1);
  far.hostHash = 0x9999;
  EXPECT_FALSE(t.canConnect(info(0, 0), far));
}

TEST(P2pTransportTest, RegisteredAheadOfEveryOtherTransport) {
  auto transports = makeTransports();
  ASSERT_FALSE(transports.empty());
  EXPECT_STREQ(transports.front()->name(), "p2p");
  bool sawShm = false;
  for (auto& t : transports) sawShm = sawShm || std::string(t->name()) == "shm";
  EXPECT_TRUE(sawShm);
}

// Both ends of a FIFO: the geometries that can happen (one GPU; two GPUs of one process; two
// processes through IPC).
class P2pPairTest : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(P2pPairTest, BothEndsSeeOneFifo) {
  Pair p;
  std::tie(p.sendDevice, p.recvDevice, p.ipc) = GetParam();
  ASSERT_TRUE(p.rt.setDevice(1).isOk());  // the transport must put it back
  p.connect();
  int current = -1;
  ASSERT_TRUE(p.rt.getDevice(&current).isOk());
  EXPECT_EQ(current, 1);
  ASSERT_NE(p.send, nullptr);
  ASSERT_NE(p.recv, nullptr);
  EXPECT_EQ(p.send->slotBytes(), p.slotBytes);

  device::FifoView s, r;
  ASSERT_TRUE(p.send->deviceFifo(&s));
  ASSERT_TRUE(p.recv->deviceFifo(&r));
  EXPECT_EQ(s.data, r.data);
  EXPECT_EQ(s.sizes, r.sizes);
  EXPECT_EQ(s.head, r.head);
  EXPECT_EQ(s.tail, r.tail);
  EXPECT_EQ(s.nSlots, p.nSlots);
  EXPECT_EQ(r.nSlots, p.nSlots);
  EXPECT_EQ(s.slotBytes, p.slotBytes);
  EXPECT_EQ(s.stride, 128u);  // 100 B rounded up to a line
  EXPECT_EQ(r.stride, 128u);
  EXPECT_EQ(s.selfAbort, r.peerAbort);
  EXPECT_EQ(r.selfAbort, s.peerAbort);
  EXPECT_NE(s.selfAbort, r.selfAbort);
  EXPECT_NE(s.cursor, r.cursor);
  EXPECT_EQ(s.peer, 1);
  EXPECT_EQ(r.peer, 0);
  // Every counter on its own line, slots on line boundaries.
  std::vector<uintptr_t> lines = {reinterpret_cast<uintptr_t>(s.head), reinterpret_cast<uintptr_t>(s.tail),
                                  reinterpret_cast<uintptr_t>(s.selfAbort), reinterpret_cast<uintptr_t>(r.selfAbort),
                                  reinterpret_cast<uintptr_t>(s.sizes)};
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i] % kLineBytes, 0u) << i;
    for (size_t j = 0; j < i; ++j) EXPECT_NE(lines[i] / kLineBytes, lines[j] / kLineBytes) << i << " " << j;
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data) % kLineBytes, 0u);
  EXPECT_GE(reinterpret_cast<uintptr_t>(s.stamps), reinterpret_cast<uintptr_t>(s.sizes + p.nSlots));
  EXPECT_GE(reinterpret_cast<uintptr_t>(s.data), reinterpret_cast<uintptr_t>(s.stamps + p.nSlots));

  // The block and the receiver's cursor on the receiver's GPU, the sender's cursor on its own.
  EXPECT_EQ(p.rt.deviceOf(s.data), p.recvDevice);
  EXPECT_EQ(p.rt.deviceOf(s.data + (p.nSlots - 1) * s.stride + p.slotBytes - 1), p.recvDevice);
  EXPECT_EQ(p.rt.deviceOf(r.cursor), p.recvDevice);
  EXPECT_EQ(p.rt.deviceOf(s.cursor), p.sendDevice);
  // Each side polls only its own GPU's memory: the receiver head, the sender its credits (tail),
  // which the receiver posts there.
  EXPECT_EQ(p.rt.deviceOf(r.head), p.recvDevice);
  EXPECT_EQ(p.rt.deviceOf(s.tail), p.sendDevice);
  EXPECT_NE(reinterpret_cast<uintptr_t>(s.tail) / kLineBytes, reinterpret_cast<uintptr_t>(s.cursor) / kLineBytes);
  // Zeroed: counters, sizes, flags, cursors, credits, slots.
  EXPECT_TRUE(p.rt.allZero(s.head, p2pLayout(p.nSlots, p.slotBytes).stampsOffset + p.nSlots * sizeof(uint64_t)));
  EXPECT_TRUE(p.rt.allZero(s.data, p.nSlots * s.stride));
  EXPECT_EQ(*s.cursor, 0u);
  EXPECT_EQ(*r.cursor, 0u);
  EXPECT_EQ(*s.tail, 0u);

  // Each end shares its block with the other: the receiver's FIFO, the sender's credits.
  EXPECT_EQ(p.rt.exports(), p.ipc ? 2 : 0);
  EXPECT_EQ(p.rt.liveImports(), p.ipc ? 2 : 0);
  EXPECT_EQ(p.rt.peerEnabled(p.sendDevice, p.recvDevice), !p.ipc && p.sendDevice != p.recvDevice);
  EXPECT_EQ(p.rt.peerEnabled(p.recvDevice, p.sendDevice), !p.ipc && p.sendDevice != p.recvDevice);
  EXPECT_EQ(p.rt.liveAllocations(), 3u);  // the block and two cursors
  // Each polled by another agent while lanes run: memory shared with other agents (device.h).
  EXPECT_TRUE(p.rt.allocatedShared(r.head)) << "the FIFO block starts with head";
  EXPECT_TRUE(p.rt.allocatedShared(r.cursor));
  EXPECT_TRUE(p.rt.allocatedShared(s.cursor));
  EXPECT_EQ(p.boxes.count(), 0u);         // the offer was taken

  p.close();
  EXPECT_EQ(p.rt.liveAllocations(), 0u);
  EXPECT_EQ(p.rt.liveImports(), 0);
}

// Messages through the two FifoViews exactly as the lane program moves them, wrapping around
// the slots several times, with the FIFO filling up on the way.
TEST_P(P2pPairTest, MovesMessagesThroughTheViews) {
  Pair p;
  std::tie(p.sendDevice, p.recvDevice, p.ipc) = GetParam();
  p.connect();
  device::FifoView s, r;
  ASSERT_TRUE(p.send->deviceFifo(&s));
  ASSERT_TRUE(p.recv->deviceFifo(&r));

  auto canSend = [&] { return *s.cursor - *s.tail < s.nSlots; };
  auto canRecv = [&] { return *r.head > *r.cursor; };
  auto post = [&](uint64_t m) {
    const uint64_t c = *s.cursor;
    char* slot = s.data + (c % s.nSlots) * s.stride;
    const uint64_t bytes = 1 + m % s.slotBytes;
    for (uint64_t i = 0; i < bytes; ++i) slot[i] = static_cast<char>(m * 31 + i);
    s.sizes[c % s.nSlots] = bytes;
    *s.head = c + 1;
    *s.cursor = c + 1;
  };
  auto take = [&](uint64_t m) {
    const uint64_t c = *r.cursor;
    ASSERT_EQ(r.sizes[c % r.nSlots], 1 + m % r.slotBytes) << m;
    const char* slot = r.data + (c % r.nSlots) * r.stride;
    for (uint64_t i = 0; i < 1 + m % r.slotBytes; ++i) ASSERT_EQ(slot[i], static_cast<char>(m * 31 + i)) << m;
    *r.tail = c + 1;
    *r.cursor = c + 1;
  };

  EXPECT_TRUE(p.send->allSendsConsumed());
  EXPECT_FALSE(canRecv());
  const uint64_t kMessages = 11;
  uint64_t sent = 0, got = 0;
  while (got < kMessages) {
    // The sender fills every free slot, then must wait; the receiver takes two at a time.
    while (sent < kMessages && canSend()) post(sent++);
    if (sent < kMessages) {
      EXPECT_EQ(*s.cursor - *s.tail, s.nSlots);
    }
    EXPECT_FALSE(p.send->allSendsConsumed());
    for (int k = 0; k < 2 && got < sent; ++k) {
      ASSERT_TRUE(canRecv());
      take(got++);
    }
  }
  EXPECT_FALSE(canRecv());
  EXPECT_TRUE(p.send->allSendsConsumed());
  EXPECT_EQ(*s.head, kMessages);
  EXPECT_EQ(*r.tail, kMessages);

  // The host executor's methods do nothing on either end.
  size_t bytes = 7;
  EXPECT_EQ(p.send->trySendSlot(), nullptr);
  EXPECT_EQ(p.recv->trySendSlot(), nullptr);
  EXPECT_EQ(p.send->tryRecv(&bytes, &lastStamp), nullptr);
  EXPECT_EQ(p.recv->tryRecv(&bytes, &lastStamp), nullptr);
  p.send->postSend(5, kTestStamp);
  p.recv->releaseRecv();
  EXPECT_EQ(*s.head, kMessages);
  EXPECT_EQ(*r.tail, kMessages);
  EXPECT_TRUE(p.recv->allSendsConsumed());
  p.close();
}

TEST_P(P2pPairTest, AbortsReachThePeerWithTheCulprit) {
  Pair p;
  std::tie(p.sendDevice, p.recvDevice, p.ipc) = GetParam();
  p.connect();
  device::FifoView s, r;
  ASSERT_TRUE(p.send->deviceFifo(&s));
  ASSERT_TRUE(p.recv->deviceFifo(&r));
  EXPECT_TRUE(p.send->checkPeer().isOk());
  EXPECT_TRUE(p.recv->checkPeer().isOk());
  EXPECT_FALSE(p.send->peerAborted());
  EXPECT_FALSE(p.recv->peerAborted());
  EXPECT_EQ(p.recv->peerAbortCulprit(), -1);

  // Sender -> receiver, with a culprit; the first culprit stays.
  p.send->signalAbort(5);
  EXPECT_EQ(*r.peerAbort, 7u);
  EXPECT_TRUE(p.recv->peerAborted());
  EXPECT_EQ(p.recv->peerAbortCulprit(), 5);
  Status st = p.recv->checkPeer();
  EXPECT_EQ(st.code(), weftRemoteError);
  EXPECT_TRUE(contains(st.message(), "rank 0 reported a failure")) << st.message();
  EXPECT_FALSE(p.send->peerAborted());
  EXPECT_TRUE(p.send->checkPeer().isOk());
  p.send->signalAbort(9);
  EXPECT_EQ(p.recv->peerAbortCulprit(), 5);

  // Receiver -> sender: the lane program's 1 (culprit unknown) gives way to a known culprit.
  *r.selfAbort = 1;
  EXPECT_TRUE(p.send->peerAborted());
  EXPECT_EQ(p.send->peerAbortCulprit(), -1);
  p.recv->signalAbort(0);
  EXPECT_EQ(p.send->peerAbortCulprit(), 0);
  EXPECT_EQ(p.send->checkPeer().code(), weftRemoteError);
  p.close();
}

TEST_P(P2pPairTest, UnknownCulpritIsOne) {
  Pair p;
  std::tie(p.sendDevice, p.recvDevice, p.ipc) = GetParam();
  p.connect();
  p.recv->signalAbort(-1);
  device::FifoView s;
  ASSERT_TRUE(p.send->deviceFifo(&s));
  EXPECT_EQ(*s.peerAbort, 1u);
  EXPECT_TRUE(p.send->peerAborted());
  EXPECT_EQ(p.send->peerAbortCulprit(), -1);
  p.close();
}

INSTANTIATE_TEST_SUITE_P(Geometries, P2pPairTest,
                         ::testing::Values(std::make_tuple(0, 0, false), std::make_tuple(0, 1, false),
                                           std::make_tuple(1, 0, false), std::make_tuple(0, 1, true),
                                           std::make_tuple(0, 0, true)),
                         [](const auto& param) {
                           return "dev" + std::to_string(std::get<0>(param.param)) + "to" +
                                  std::to_string(std::get<1>(param.param)) +
                                  (std::get<2>(param.param) ? "_ipc" : "_sameProcess");
                         });

TEST(P2pTransportTest, SenderWaitsForTheReceiversOffer) {
  Pair p;
  Status sent;
  p.prepared = true;  // the sender offers its credits itself, in its thread
  std::thread sender([&] { sent = p.connectSend(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  Status r = p.connectRecv();
  sender.join();
  ASSERT_TRUE(r.isOk()) << r.message();
  ASSERT_TRUE(sent.isOk()) << sent.message();
  device::FifoView s, v;
  ASSERT_TRUE(p.send->deviceFifo(&s));
  ASSERT_TRUE(p.recv->deviceFifo(&v));
  EXPECT_EQ(s.data, v.data);
  p.close();
}

TEST(P2pTransportTest, LanesAreIndependent) {
  Pair p;
  std::unique_ptr<Connection> send2, recv2;
  p.connect();
  ConnectRequest rr = p.request(1), rs = p.request(0);
  rr.lane = rs.lane = p.lane + 1;
  ASSERT_TRUE(p.transport.prepareSend(rs).isOk());
  ASSERT_TRUE(p.transport.connectRecv(rr, &recv2).isOk());
  ASSERT_TRUE(p.transport.connectSend(rs, &send2).isOk());
  device::FifoView a, b;
  ASSERT_TRUE(p.send->deviceFifo(&a));
  ASSERT_TRUE(send2->deviceFifo(&b));
  EXPECT_NE(a.data, b.data);
  send2.reset();
  recv2.reset();
  p.close();
}

TEST(P2pTransportTest, HostExecutorRequestsAreABug) {
  Pair p;
  ConnectRequest r = p.request(1), s = p.request(0);
  r.runtime = nullptr;
  s.runtime = nullptr;
  Status got = p.transport.connectRecv(r, &p.recv);
  EXPECT_EQ(got.code(), weftInternalError);
  EXPECT_TRUE(contains(got.message(), "host-executor")) << got.message();
  got = p.transport.connectSend(s, &p.send);
  EXPECT_EQ(got.code(), weftInternalError);
  EXPECT_TRUE(contains(got.message(), "device executor only")) << got.message();
  EXPECT_EQ(p.recv, nullptr);
  EXPECT_EQ(p.send, nullptr);
  EXPECT_EQ(p.boxes.count(), 0u);
  EXPECT_EQ(p.rt.liveAllocations(), 0u);
}

TEST(P2pTransportTest, BadRequestsAreRefused) {
  Pair p;
  ConnectRequest r = p.request(1);
  r.nSlots = 0;
  Status got = p.transport.connectRecv(r, &p.recv);
  EXPECT_EQ(got.code(), weftInvalidArgument);
  EXPECT_TRUE(contains(got.message(), "WEFT_NSLOTS")) << got.message();
  r = p.request(1);
  r.exchange = nullptr;
  EXPECT_EQ(p.transport.connectRecv(r, &p.recv).code(), weftInvalidArgument);
  r = p.request(1);
  r.lane = kMaxLanes;
  EXPECT_EQ(p.transport.connectRecv(r, &p.recv).code(), weftInvalidArgument);
  r = p.request(1);
  r.peer.device = -1;
  EXPECT_EQ(p.transport.connectRecv(r, &p.recv).code(), weftInternalError);
  EXPECT_EQ(p.recv, nullptr);
  EXPECT_EQ(p.rt.liveAllocations(), 0u);
}

TEST(P2pTransportTest, NoPeerPathIsAClearError) {
  Pair p;
  p.rt.refusePeerAccess(true);
  Status r = p.connectRecv();
  EXPECT_EQ(r.code(), weftSystemError);
  EXPECT_TRUE(contains(r.message(), "no GPU peer path")) << r.message();
  EXPECT_TRUE(contains(r.message(), "device 0 cannot access device 1")) << r.message();
  EXPECT_TRUE(contains(r.message(), "shared memory")) << r.message();
  Status s = p.connectSend();
  EXPECT_EQ(s.code(), weftSystemError);
  EXPECT_TRUE(contains(s.message(), "no GPU peer path")) << s.message();
  EXPECT_EQ(p.recv, nullptr);
  EXPECT_EQ(p.send, nullptr);
  EXPECT_EQ(p.rt.liveAllocations(), 0u);
  EXPECT_FALSE(p.rt.peerEnabled(0, 1));
}

TEST(P2pTransportTest, OneGpuNeedsNoPeerAccess) {
  Pair p;
  p.rt.refusePeerAccess(true);
  p.recvDevice = 0;
  p.connect();
  EXPECT_FALSE(p.rt.peerEnabled(0, 0));
  p.close();
}

TEST(P2pTransportTest, ReceiverFailureEndsTheSendersWaitAtOnce) {
  Pair p;
  ASSERT_TRUE(p.prepareSend().isOk());
  p.rt.failAllocations(true);
  Status r = p.connectRecv();
  EXPECT_EQ(r.code(), weftUnhandledDeviceError);
  EXPECT_TRUE(contains(r.message(), "out of device memory")) << r.message();
  p.rt.failAllocations(false);
  const uint64_t start = nowNs();
  Status s = p.connectSend();
  EXPECT_LT(nowNs() - start, 5'000'000'000ull);
  EXPECT_EQ(s.code(), weftRemoteError);
  EXPECT_TRUE(contains(s.message(), "rank 1 could not make its end")) << s.message();
  EXPECT_EQ(p.send, nullptr);
  EXPECT_EQ(p.rt.liveAllocations(), 0u);
}

TEST(P2pTransportTest, AbortBeforeConnectingEndsTheWait) {
  Pair p;
  std::atomic<bool> abort{true};
  ConnectRequest s = p.request(0);
  s.abort = &abort;
  Status got = p.transport.connectSend(s, &p.send);
  EXPECT_EQ(got.code(), weftRemoteError);
  EXPECT_TRUE(contains(got.message(), "aborted")) << got.message();
  EXPECT_EQ(p.rt.liveAllocations(), 0u);
}

// The receiver's offer, altered on its way to the sender: refused with a message that says
// what is wrong, nothing mapped or allocated by the sender.
struct Corruption {
  const char* name;
  std::function<void(P2pOffer*)> change;
  weftResult_t code;
  const char* says;
};
void PrintTo(const Corruption& c, std::ostream* os) { *os << c.name; }

class P2pCorruptOfferTest : public ::testing::TestWithParam<std::tuple<Corruption, bool>> {};

TEST_P(P2pCorruptOfferTest, IsRefusedCleanly) {
  const Corruption& c = std::get<0>(GetParam());
  Pair p;
  p.ipc = std::get<1>(GetParam());
  ASSERT_TRUE(p.connectRecv().isOk());
  const size_t receiverAllocations = p.rt.liveAllocations();
  P2pOffer offer;
  ASSERT_TRUE(p.boxes.take(1, 0, kOfferTagBase + p.lane, &offer, sizeof(offer)).isOk());
  c.change(&offer);
  p.boxes.put(1, 0, kOfferTagBase + p.lane, &offer, sizeof(offer));
  Status s = p.connectSend();
  EXPECT_EQ(s.code(), c.code) << s.message();
  EXPECT_TRUE(contains(s.message(), c.says)) << s.message();
  EXPECT_TRUE(contains(s.message(), "rank 0")) << s.message();
  EXPECT_EQ(p.send, nullptr);
  // The sender's block went with its failed end (the fake keeps it while the receiver's IPC
  // mapping of it lives); the sender mapped nothing.
  EXPECT_EQ(p.rt.liveAllocations(), receiverAllocations - (p.ipc ? 0 : 1));
  EXPECT_EQ(p.rt.liveImports(), p.ipc ? 1 : 0);  // the receiver's, of the sender's credits
  p.close();
  EXPECT_EQ(p.rt.liveAllocations(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Offers, P2pCorruptOfferTest,
    ::testing::Combine(
        ::testing::Values(
            Corruption{"magic", [](P2pOffer* o) { o->magic ^= 1; }, weftInvalidUsage, "with something else"},
            Corruption{"version", [](P2pOffer* o) { o->version = 99; }, weftInvalidUsage, "version 99"},
            Corruption{"slots", [](P2pOffer* o) { o->nSlots = 4; }, weftInvalidUsage, "WEFT_NSLOTS"},
            Corruption{"slotBytes", [](P2pOffer* o) { o->slotBytes = 4096; }, weftInvalidUsage, "4096 B"},
            Corruption{"stride", [](P2pOffer* o) { o->stride = 100; }, weftInternalError, "inconsistent layout"},
            Corruption{"total", [](P2pOffer* o) { o->totalBytes += 128; }, weftInternalError, "inconsistent layout"},
            Corruption{"lane", [](P2pOffer* o) { o->lane = 7; }, weftInternalError, "lane 7"},
            Corruption{"rank", [](P2pOffer* o) { o->receiverRank = 3; }, weftInternalError, "to rank 3"},
            Corruption{"process", [](P2pOffer* o) { o->sameProcess ^= 1; }, weftInternalError, "bootstrap says"},
            Corruption{"sameProcessValue", [](P2pOffer* o) { o->sameProcess = 2; }, weftInternalError,
                       "bootstrap says"},
            Corruption{"device", [](P2pOffer* o) { o->device = 5; }, weftInternalError, "device 5"},
            Corruption{"failed", [](P2pOffer* o) { o->failed = 1; }, weftRemoteError, "could not make its end"}),
        ::testing::Bool()),
    [](const auto& param) {
      return std::string(std::get<0>(param.param).name) + (std::get<1>(param.param) ? "_ipc" : "_sameProcess");
    });

// The receiver waits for the sender's credits before it offers its FIFO; a corrupt or refused
// answer fails the receiving end with nothing of its own left allocated or imported.
struct CreditsCorruption {
  const char* name;
  std::function<void(P2pCredits*)> change;
  weftResult_t code;
  const char* says;
};
void PrintTo(const CreditsCorruption& c, std::ostream* os) { *os << c.name; }

class P2pCorruptCreditsTest : public ::testing::TestWithParam<std::tuple<CreditsCorruption, bool>> {};

TEST_P(P2pCorruptCreditsTest, FailTheReceivingEndCleanly) {
  const CreditsCorruption& c = std::get<0>(GetParam());
  Pair p;
  p.ipc = std::get<1>(GetParam());
  ASSERT_TRUE(p.prepareSend().isOk());
  const size_t senderAllocations = p.rt.liveAllocations();
  P2pCredits credits;
  ASSERT_TRUE(p.boxes.take(0, 1, kCreditsTagBase + p.lane, &credits, sizeof(credits)).isOk());
  c.change(&credits);
  p.boxes.put(0, 1, kCreditsTagBase + p.lane, &credits, sizeof(credits));
  Status r = p.connectRecv();
  EXPECT_EQ(r.code(), c.code) << r.message();
  EXPECT_TRUE(contains(r.message(), c.says)) << r.message();
  EXPECT_EQ(p.recv, nullptr);
  EXPECT_EQ(p.rt.liveAllocations(), senderAllocations);
  EXPECT_EQ(p.rt.liveImports(), 0);
  // The receiver's refusal reaches the sender at once.
  Status s = p.connectSend();
  EXPECT_EQ(s.code(), weftRemoteError) << s.message();
  EXPECT_EQ(p.send, nullptr);
  p.close();
  EXPECT_EQ(p.rt.liveAllocations(), 0u);  // connectSend took the prepared end and released it
}

INSTANTIATE_TEST_SUITE_P(
    Credits, P2pCorruptCreditsTest,
    ::testing::Combine(
        ::testing::Values(
            CreditsCorruption{"magic", [](P2pCredits* c) { c->magic ^= 1; }, weftInvalidUsage, "something else"},
            CreditsCorruption{"version", [](P2pCredits* c) { c->version = 99; }, weftInvalidUsage, "version 99"},
            CreditsCorruption{"failed", [](P2pCredits* c) { c->failed = 1; }, weftRemoteError, "could not make"},
            CreditsCorruption{"lane", [](P2pCredits* c) { c->lane = 7; }, weftInternalError, "lane 7"},
            CreditsCorruption{"device", [](P2pCredits* c) { c->device = 5; }, weftInternalError, "device 5"},
            CreditsCorruption{"process", [](P2pCredits* c) { c->sameProcess ^= 1; }, weftInternalError,
                              "do not describe a sender"},
            CreditsCorruption{"pointer", [](P2pCredits* c) { c->pointer += 8; }, weftInternalError,
                              "do not describe a sender"}),
        ::testing::Bool()),
    [](const auto& param) {
      return std::string(std::get<0>(param.param).name) + (std::get<1>(param.param) ? "_ipc" : "_sameProcess");
    });

TEST(P2pTransportTest, SenderFailureReachesTheReceiverAtOnce) {
  Pair p;
  p.ipc = true;
  p.rt.failAllocations(true);
  EXPECT_EQ(p.prepareSend().code(), weftUnhandledDeviceError);
  p.rt.failAllocations(false);
  Status r = p.connectRecv();  // the sender's refusal is waiting: no wait for the deadline
  EXPECT_EQ(r.code(), weftRemoteError) << r.message();
  EXPECT_TRUE(contains(r.message(), "rank 0 could not make its end")) << r.message();
  EXPECT_EQ(p.recv, nullptr);
  EXPECT_EQ(p.rt.liveAllocations(), 0u);
  EXPECT_EQ(p.rt.liveImports(), 0);
}

// Fields that only one of the two paths reads.
TEST(P2pTransportTest, ForeignPointerIsRefused) {
  Pair p;
  ASSERT_TRUE(p.connectRecv().isOk());
  P2pOffer offer;
  ASSERT_TRUE(p.boxes.take(1, 0, kOfferTagBase + p.lane, &offer, sizeof(offer)).isOk());
  alignas(128) static char notDevice[256];
  offer.pointer = reinterpret_cast<uint64_t>(notDevice);
  p.boxes.put(1, 0, kOfferTagBase + p.lane, &offer, sizeof(offer));
  Status s = p.connectSend();
  EXPECT_EQ(s.code(), weftInternalError);
  EXPECT_TRUE(contains(s.message(), "not know as memory of device 1")) << s.message();
  EXPECT_EQ(p.rt.liveAllocations(), 2u);
  p.close();
}

TEST(P2pTransportTest, BadIpcHandleIsRefused) {
  Pair p;
  p.ipc = true;
  ASSERT_TRUE(p.connectRecv().isOk());
  P2pOffer offer;
  ASSERT_TRUE(p.boxes.take(1, 0, kOfferTagBase + p.lane, &offer, sizeof(offer)).isOk());
  offer.ipc.bytes[0] ^= 0xff;
  p.boxes.put(1, 0, kOfferTagBase + p.lane, &offer, sizeof(offer));
  Status s = p.connectSend();
  EXPECT_EQ(s.code(), weftUnhandledDeviceError);
  EXPECT_TRUE(contains(s.message(), "mapping rank 1's GPU peer-to-peer FIFO")) << s.message();
  EXPECT_EQ(p.rt.liveImports(), 1);       // the receiver's, of the sender's credits
  EXPECT_EQ(p.rt.liveAllocations(), 3u);  // the receiver's two, and the sender's block it maps
  p.close();
  EXPECT_EQ(p.rt.liveAllocations(), 0u);
}

// A sender that was not prepared makes its block in connectSend; when it cannot, nothing of it
// stays, and the receiver is told (failed = 1) instead of waiting for its credits.
TEST(P2pTransportTest, SenderAllocationFailureLeavesNothing) {
  Pair p;
  p.ipc = true;
  p.rt.failAllocations(true);
  Status s = p.connectSend();
  EXPECT_EQ(s.code(), weftUnhandledDeviceError);
  p.rt.failAllocations(false);
  EXPECT_EQ(p.send, nullptr);
  EXPECT_EQ(p.rt.liveImports(), 0);
  EXPECT_EQ(p.rt.liveAllocations(), 0u);
  P2pCredits refusal;
  ASSERT_TRUE(p.boxes.take(0, 1, kCreditsTagBase + p.lane, &refusal, sizeof(refusal)).isOk());
  EXPECT_EQ(refusal.failed, 1u);
}

// The receiver watches the sender's process when the pid means something here.
TEST(P2pTransportTest, ReceiverSeesThePeerProcessExit) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[1]);
    char c;
    (void)!read(ready[0], &c, 1);
    _exit(0);
  }
  Pair p;
  p.ipc = true;
  ConnectRequest r = p.request(1);
  r.peer.pid = child;
  ASSERT_TRUE(p.prepareSend().isOk());
  Status got = p.transport.connectRecv(r, &p.recv);
  ASSERT_TRUE(got.isOk()) << got.message();
  EXPECT_TRUE(p.recv->checkPeer().isOk());
  close(ready[1]);  // the child exits
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  close(ready[0]);
  Status st = p.recv->checkPeer();
  EXPECT_EQ(st.code(), weftRemoteError);
  EXPECT_TRUE(contains(st.message(), "pid " + std::to_string(child))) << st.message();
  EXPECT_TRUE(contains(st.message(), "exited")) << st.message();
  p.close();
}

TEST(P2pTransportTest, LayoutRoundsSlotsToLines) {
  P2pLayout l = p2pLayout(1, 1);
  EXPECT_EQ(l.stride, 128u);
  EXPECT_EQ(l.stampsOffset, P2pLayout::kSizesOffset + 128);
  EXPECT_EQ(l.dataOffset, P2pLayout::kSizesOffset + 256);
  EXPECT_EQ(l.llOffset, l.dataOffset + 128);
  EXPECT_EQ(l.llStride, 128u);  // 3 header lines and 1 data line
  EXPECT_EQ(l.totalBytes, l.llOffset + 128);
  l = p2pLayout(17, 128);
  EXPECT_EQ(l.stride, 128u);
  EXPECT_EQ(l.stampsOffset, P2pLayout::kSizesOffset + 256);  // 136 B of sizes
  EXPECT_EQ(l.dataOffset, P2pLayout::kSizesOffset + 512);    // 136 B of stamps
  EXPECT_EQ(l.llOffset, l.dataOffset + 17 * 128);
  EXPECT_EQ(l.llStride, 384u);  // 3 + 32 lines: 280 B
  EXPECT_EQ(l.totalBytes, l.llOffset + 17 * 384);
  l = p2pLayout(8, 129);
  EXPECT_EQ(l.stride, 256u);
  // LL slots hold at most 8 KiB of data, whatever the slot: 3 + 2048 lines, 16408 B.
  l = p2pLayout(4, 1 << 18);
  EXPECT_EQ(l.llStride, 16512u);
  EXPECT_EQ(l.totalBytes, l.llOffset + 4 * 16512);
  EXPECT_EQ(P2pSenderLayout::bytes(1 << 18), 2 * kLineBytes + 8192);
  EXPECT_TRUE(checkGeometry(kMaxSlots, kMaxSlotBytes, 0).isOk());
  EXPECT_FALSE(checkGeometry(kMaxSlots + 1, 1, 0).isOk());
  EXPECT_FALSE(checkGeometry(1, 0, 0).isOk());
}

}  // namespace
}  // namespace p2p
}  // namespace weft
