// The Connection contract (transports/transport.h), held against every transport the way Gloo
// runs every algorithm test over every transport: shm, socket, libfabric over each RDM provider
// this host has, p2p on the emulated device, and the device bridge over shared memory. Each
// contract point is checked with exact data: slots wrapping around many times, zero-byte
// messages, reference messages, aborts both ways with their culprit, each end doing only its
// own half, and (forked, where the transport crosses processes) a peer that exits. The same
// contract holds for an external network plugin (net_v1.h) through the plugin transport, and
// for Weft's built-in network tables (net_builtin.h) through that same transport.
//
// A device-FIFO connection (p2p, bridge) is driven the way the lane program drives it, through
// its FifoView; host connections through their methods (Port, below). A transport that cannot
// run here (a libfabric provider missing) skips with the reason. Transport-specific behaviour
// (handshake refusals, strangers on a listener, credits, /dev/shm space) stays in the
// per-transport tests next to this file.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "base/os.h"
#include "device/device.h"
#include "device/gpu_loader.h"
#include "mailboxes.h"
#include "shm_test_util.h"
#include "transports/bridge/device_bridge.h"
#include "transports/net/net_plugin.h"
#include "transports/net/ofi_api.h"
#include "transports/net/ofi_provider.h"
#include "transports/net/ofi_transport.h"
#include "transports/net/proxy.h"
#include "transports/net/socket_transport.h"
#include "transports/p2p/p2p_transport.h"
#include "transports/shm/shm_transport.h"

namespace weft {
namespace {

using shmtest::patternByte;
using test_util::Exchange;
using test_util::Mailboxes;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

uint64_t loadAcquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void storeRelease(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

// One end of a connection as the contract describes it: host connections through their methods,
// device FIFOs exactly as the lane program moves them (kernel_api.h, FifoView).
class Port {
 public:
  explicit Port(Connection* c) : c_(c) { device_ = c->deviceFifo(&v_); }
  size_t slotBytes() const { return device_ ? v_.slotBytes : c_->slotBytes(); }
  void* trySendSlot() {
    if (!device_) return c_->trySendSlot();
    const uint64_t c = *v_.cursor;
    if (c - loadAcquire(v_.tail) >= v_.nSlots) return nullptr;
    return v_.data + (c % v_.nSlots) * v_.stride;
  }
  void postSend(size_t bytes, uint64_t stamp) {
    if (!device_) return c_->postSend(bytes, stamp);
    const uint64_t c = *v_.cursor;
    __atomic_store_n(&v_.sizes[c % v_.nSlots], bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&v_.stamps[c % v_.nSlots], stamp, __ATOMIC_RELAXED);
    storeRelease(v_.head, c + 1);
    *v_.cursor = c + 1;
  }
  const void* tryRecv(size_t* bytes, uint64_t* stamp) {
    if (!device_) return c_->tryRecv(bytes, stamp);
    const uint64_t c = *v_.cursor;
    if (loadAcquire(v_.head) <= c) return nullptr;
    *bytes = __atomic_load_n(&v_.sizes[c % v_.nSlots], __ATOMIC_RELAXED);
    *stamp = __atomic_load_n(&v_.stamps[c % v_.nSlots], __ATOMIC_RELAXED);
    return v_.data + (c % v_.nSlots) * v_.stride;
  }
  void releaseRecv() {
    if (!device_) return c_->releaseRecv();
    const uint64_t c = *v_.cursor;
    storeRelease(v_.tail, c + 1);
    *v_.cursor = c + 1;
  }
  Connection* conn() const { return c_; }

 private:
  Connection* c_;
  bool device_ = false;
  device::FifoView v_;
};

// How one transport is set up for these tests.
struct TransportCase {
  std::string name;
  // Empty when the transport can run here; otherwise why not.
  std::function<std::string()> unavailable = [] { return std::string(); };
  // Sets what the transport reads from the environment (before it is made).
  std::function<void()> environment = [] {};
  std::function<std::unique_ptr<Transport>()> make;
  // What rank `rank` (process `pid`) tells its peers.
  std::function<PeerInfo(int rank, int pid)> info;
  bool device = false;   // a device executor FIFO: the requests carry the emulated runtime
  bool bridged = false;  // each end wrapped by the device bridge (a device FIFO over a host one)
  // Why peer exit is not tested across processes for it; empty: it is.
  std::string noFork;
  // Why reference messages are not tested on it; empty: they are.
  std::string noReferences;
};

std::ostream& operator<<(std::ostream& os, const TransportCase& tc) { return os << tc.name; }

PeerInfo sameHostInfo(int rank, int pid) { return shmtest::peerInfo(rank, pid); }

// Every rank on its own host (network transports), in process `pid`.
PeerInfo ownHostInfo(int rank, int pid) {
  PeerInfo p;
  p.rank = rank;
  p.pid = pid;
  p.hostHash = 0x1000 + static_cast<uint64_t>(rank);
  p.processHash = 0x2000 + static_cast<uint64_t>(pid);
  std::snprintf(p.hostName, sizeof(p.hostName), "host%d", rank);
  return p;
}

// One GPU (device 0 of the emulated runtime) shared by the ranks; a process of its own each.
PeerInfo emulatedGpuInfo(int rank, int pid) {
  PeerInfo p = sameHostInfo(rank, pid);
  p.processHash = 0x5000 + static_cast<uint64_t>(pid);
  p.device = 0;
  return p;
}

std::string ofiUnavailable(const std::string& provider) {
  std::string why;
  const net::OfiApi* api = net::ofiApi(&why);
  if (api == nullptr) return "libfabric cannot be loaded: " + why;
  std::vector<std::string> names = net::ofiAvailableProviders(*api);
  if (std::find(names.begin(), names.end(), provider) == names.end()) {
    return "libfabric has no RDM tagged provider " + provider + " here";
  }
  return "";
}

std::vector<TransportCase> transportCases() {
  std::vector<TransportCase> out;
  TransportCase shm;
  shm.name = "shm";
  shm.make = [] { return std::make_unique<shm::ShmTransport>(); };
  shm.info = sameHostInfo;
  out.push_back(shm);

  TransportCase socket;
  socket.name = "socket";
  socket.environment = [] { setenv("WEFT_SOCKET_IFNAME", "lo", 1); };
  socket.make = [] { return std::make_unique<net::SocketTransport>(); };
  socket.info = ownHostInfo;
  out.push_back(socket);

  for (std::string provider : {"tcp;ofi_rxm", "shm"}) {
    TransportCase ofi;
    ofi.name = "ofi_" + std::string(provider == "shm" ? "shm" : "tcp");
    ofi.unavailable = [provider] { return ofiUnavailable(provider); };
    ofi.environment = [provider] {
      setenv("WEFT_SOCKET_IFNAME", "lo", 1);
      setenv("WEFT_OFI_PROVIDER", provider.c_str(), 1);
    };
    ofi.make = [] { return std::make_unique<net::OfiTransport>(); };
    ofi.info = ownHostInfo;
    ofi.noFork = "libfabric's state does not survive fork() in a process that already used it";
    // Found by this suite: OfiLink sent a zero-byte slot as zero bytes, so a reference arrived
    // empty (with WEFT_SHM_DISABLE=1 and WEFT_NET=ofi on one host the executor sends them); it
    // now sends the referenced bytes.
    out.push_back(ofi);
  }

  // An external network plugin (include/weft/net_v1.h) built outside Weft: TCP on loopback.
  TransportCase plugin;
  plugin.name = "net_plugin_loopback";
  plugin.environment = [] { setenv("WEFT_NET_PLUGIN", WEFT_TEST_NET_PLUGIN_DIR "/libweft_test_net_loopback.so", 1); };
  plugin.make = [] { return std::make_unique<net::PluginTransport>(); };
  plugin.info = ownHostInfo;
  out.push_back(plugin);

  // Weft's own TCP code as a net_v1.h table (net_builtin.h) through the same plugin transport
  // (what WEFT_NET=socket-plugin selects).
  TransportCase socketTable;
  socketTable.name = "net_socket_v1";
  socketTable.environment = [] { setenv("WEFT_SOCKET_IFNAME", "lo", 1); };
  socketTable.make = [] { return std::make_unique<net::PluginTransport>(net::NetTable::kSocket); };
  socketTable.info = ownHostInfo;
  out.push_back(socketTable);

  // Weft's own libfabric code as a net_v1.h table (WEFT_NET=ofi-plugin). The table opens one
  // endpoint per process, on the provider set when it is first used: tcp;ofi_rxm here.
  TransportCase ofiTable;
  ofiTable.name = "net_ofi_v1";
  ofiTable.unavailable = [] { return ofiUnavailable("tcp;ofi_rxm"); };
  ofiTable.environment = [] {
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    setenv("WEFT_OFI_PROVIDER", "tcp;ofi_rxm", 1);
  };
  ofiTable.make = [] { return std::make_unique<net::PluginTransport>(net::NetTable::kOfi); };
  ofiTable.info = ownHostInfo;
  ofiTable.noFork = "libfabric's state does not survive fork() in a process that already used it";
  out.push_back(ofiTable);

  TransportCase p2p;
  p2p.name = "p2p_emulated";
  p2p.make = [] { return std::make_unique<p2p::P2pTransport>(); };
  p2p.info = emulatedGpuInfo;
  p2p.device = true;
  out.push_back(p2p);

  TransportCase bridge;
  bridge.name = "bridge_over_shm";
  bridge.make = [] { return std::make_unique<shm::ShmTransport>(); };
  bridge.info = sameHostInfo;
  bridge.bridged = true;
  bridge.noFork = "a bridge's peer exit is its host connection's (the shm case forks)";
  bridge.noReferences = "the lane program never sends references; the bridge forwards a slot's bytes only";
  out.push_back(bridge);
  return out;
}

// Rank 0 -> rank 1 on one lane, both ends in this process, and what they need alive.
struct Wire {
  Mailboxes boxes;
  Exchange ex0{&boxes, 0};
  Exchange ex1{&boxes, 1};
  std::shared_ptr<net::Proxy> proxy;        // the bridge's
  std::unique_ptr<Transport> transport[2];  // rank 0's, rank 1's
  std::unique_ptr<Connection> recv;
  std::unique_ptr<Connection> send;  // closed before recv (an importer before its exporter)
  std::string tag;
  // A second lane between the same ranks (LanesAreIndependent); closed first.
  std::unique_ptr<Connection> recv2;
  std::unique_ptr<Connection> send2;
};

ConnectRequest makeRequest(const TransportCase& tc, const std::string& tag, int self, int selfPid, int peerPid,
                           size_t nSlots, size_t slotBytes, PeerExchange* exchange, int lane = 0) {
  ConnectRequest r;
  r.commTag = tag;
  r.self = tc.info(self, selfPid);
  r.peer = tc.info(1 - self, peerPid);
  r.lane = (tc.device ? (1 << 16) + 1 : 0) + lane;  // device executor FIFO lanes start at 1 << 16
  r.nSlots = nSlots;
  r.slotBytes = slotBytes;
  r.deadline = Deadline::afterSeconds(20);
  r.exchange = exchange;
  r.runtime = tc.device ? &device::emulatedRuntime() : nullptr;
  return r;
}

// Wraps a host connection into the device bridge when the case asks for it.
Status maybeBridge(const TransportCase& tc, bool sender, size_t nSlots, size_t slotBytes, Wire* w,
                   std::unique_ptr<Connection>* conn) {
  if (!tc.bridged) return Status::ok();
  if (!w->proxy) {
    w->proxy = std::make_shared<net::Proxy>("weft-test-br");
    WEFT_TRY(w->proxy->start());
  }
  std::unique_ptr<Connection> host = std::move(*conn);
  return bridge::makeDeviceBridge(std::move(host), sender, &device::emulatedRuntime(), nSlots, slotBytes,
                                  sender ? 1 : 0, w->proxy.get(), conn);
}

// Connects rank 0 -> rank 1 on `lane` with the wire's transports (made on the first call).
Status connectLane(const TransportCase& tc, size_t nSlots, size_t slotBytes, int lane, Wire* w,
                   std::unique_ptr<Connection>* recv, std::unique_ptr<Connection>* send) {
  if (!w->transport[0]) {
    tc.environment();
    w->transport[0] = tc.make();
    w->transport[1] = tc.make();
    w->tag = shmtest::uniqueTag();
  }
  const int pid = getpid();
  // As the communicator does: the sending end prepares (never waiting), the receiving end is
  // made (waiting at most for what the sender prepared), the sending end attaches.
  WEFT_TRY(w->transport[0]->prepareSend(makeRequest(tc, w->tag, 0, pid, pid, nSlots, slotBytes, &w->ex0, lane)));
  WEFT_TRY(w->transport[1]->connectRecv(makeRequest(tc, w->tag, 1, pid, pid, nSlots, slotBytes, &w->ex1, lane), recv));
  WEFT_TRY(w->transport[0]->connectSend(makeRequest(tc, w->tag, 0, pid, pid, nSlots, slotBytes, &w->ex0, lane), send));
  WEFT_TRY(maybeBridge(tc, false, nSlots, slotBytes, w, recv));
  WEFT_TRY(maybeBridge(tc, true, nSlots, slotBytes, w, send));
  return Status::ok();
}

Status connectWire(const TransportCase& tc, size_t nSlots, size_t slotBytes, Wire* w) {
  return connectLane(tc, nSlots, slotBytes, 0, w, &w->recv, &w->send);
}

// Message `m` of a stream: its size (from `sizes`, cycled) and its bytes (patternByte).
struct StreamSpec {
  uint64_t count;
  std::function<size_t(uint64_t m)> bytes;
  uint64_t salt = 0;  // added to m in the bytes: streams that must not mix differ in it
};

// The stamp message m travels with: every one of its 64 bits varies between messages.
uint64_t stampOf(uint64_t m) { return (m + 1) * 0x9e3779b97f4a7c15ull; }

void fill(void* slot, uint64_t m, size_t n) {
  auto* b = static_cast<unsigned char*>(slot);
  for (size_t i = 0; i < n; ++i) b[i] = patternByte(m, i);
}

// Sends the stream; "" or what went wrong.
std::string sendStream(Port port, const StreamSpec& spec, Deadline deadline) {
  Backoff backoff;
  for (uint64_t m = 0; m < spec.count;) {
    void* slot = port.trySendSlot();
    if (slot == nullptr) {
      if ((backoff.rounds() & 255) == 255) {
        Status st = port.conn()->checkPeer();
        if (!st.isOk()) return "sender, message " + std::to_string(m) + ": " + st.message();
        if (deadline.expired()) return "sender: deadline at message " + std::to_string(m);
      }
      backoff.pause();
      continue;
    }
    backoff.reset();
    size_t n = spec.bytes(m);
    fill(slot, m + spec.salt, n);
    port.postSend(n, stampOf(m + spec.salt));
    ++m;
  }
  return "";
}

// Receives the stream, checking every size and every byte; "" or the first difference.
std::string recvStream(Port port, const StreamSpec& spec, Deadline deadline) {
  Backoff backoff;
  for (uint64_t m = 0; m < spec.count;) {
    size_t n = 0;
    uint64_t stamp = 0;
    const void* data = port.tryRecv(&n, &stamp);
    if (data == nullptr) {
      if ((backoff.rounds() & 255) == 255) {
        Status st = port.conn()->checkPeer();
        if (!st.isOk()) return "receiver, message " + std::to_string(m) + ": " + st.message();
        if (deadline.expired()) return "receiver: deadline at message " + std::to_string(m);
      }
      backoff.pause();
      continue;
    }
    backoff.reset();
    if (n != spec.bytes(m)) {
      return "message " + std::to_string(m) + " has " + std::to_string(n) + " bytes, expected " +
             std::to_string(spec.bytes(m));
    }
    if (stamp != stampOf(m + spec.salt)) {
      return "message " + std::to_string(m) + " has stamp " + std::to_string(stamp) + ", expected " +
             std::to_string(stampOf(m + spec.salt));
    }
    const auto* b = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      if (b[i] != patternByte(m + spec.salt, i))
        return "message " + std::to_string(m) + " byte " + std::to_string(i) + " differs";
    }
    port.releaseRecv();
    ++m;
  }
  return "";
}

// Sender and receiver as two threads; then every slot must have come back to the sender.
void streamThroughThreads(Wire& w, const StreamSpec& spec) {
  std::string sendWhy, recvWhy;
  std::thread receiver([&] { recvWhy = recvStream(Port(w.recv.get()), spec, Deadline::afterSeconds(60)); });
  sendWhy = sendStream(Port(w.send.get()), spec, Deadline::afterSeconds(60));
  receiver.join();
  EXPECT_EQ(sendWhy, "");
  EXPECT_EQ(recvWhy, "");
  Deadline deadline = Deadline::afterSeconds(10);
  while (!w.send->allSendsConsumed() && !deadline.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(w.send->allSendsConsumed());
  EXPECT_TRUE(w.send->checkPeer().isOk()) << w.send->checkPeer().message();
  EXPECT_TRUE(w.recv->checkPeer().isOk()) << w.recv->checkPeer().message();
  EXPECT_FALSE(w.send->peerAborted());
  EXPECT_FALSE(w.recv->peerAborted());
}

struct Geometry {
  size_t nSlots;
  size_t slotBytes;
};

class Conformance : public ::testing::TestWithParam<std::tuple<TransportCase, Geometry>> {
 protected:
  void SetUp() override {
    std::string why = tc().unavailable();
    if (!why.empty()) GTEST_SKIP() << why;
  }
  const TransportCase& tc() const { return std::get<0>(GetParam()); }
  size_t nSlots() const { return std::get<1>(GetParam()).nSlots; }
  size_t slotBytes() const { return std::get<1>(GetParam()).slotBytes; }
  void connect(Wire* w) {
    Status st = connectWire(tc(), nSlots(), slotBytes(), w);
    ASSERT_TRUE(st.isOk()) << st.message();
  }
};

TEST_P(Conformance, SlotsWrapAroundManyTimesWithExactData) {
  Wire w;
  ASSERT_NO_FATAL_FAILURE(connect(&w));
  const size_t cap = slotBytes();
  // Every size from 1 to a full slot occurs; the count is no multiple of the slot count.
  StreamSpec spec{nSlots() * 50 + 3, [cap](uint64_t m) { return 1 + (m * 7919) % cap; }};
  streamThroughThreads(w, spec);
}

TEST_P(Conformance, ZeroByteMessagesKeepTheirPlace) {
  Wire w;
  ASSERT_NO_FATAL_FAILURE(connect(&w));
  const size_t cap = slotBytes();
  // Zero bytes every other message, between a byte, a full slot and sizes in between.
  StreamSpec spec{nSlots() * 6 + 5, [cap](uint64_t m) -> size_t {
                    if (m % 2 == 0) return 0;
                    return m % 3 == 0 ? cap : 1 + (m * 31) % cap;
                  }};
  streamThroughThreads(w, spec);
}

TEST_P(Conformance, ReferenceMessagesArriveAsReferencesOrAsTheirBytes) {
  if (!tc().noReferences.empty()) GTEST_SKIP() << tc().noReferences;
  Wire w;
  ASSERT_NO_FATAL_FAILURE(connect(&w));
  Port send(w.send.get()), recv(w.recv.get());
  const bool carriesBytes = w.send->sendsReferencedBytes();
  const size_t sizes[] = {1, slotBytes(), std::min<size_t>(17, slotBytes())};
  std::vector<std::vector<unsigned char>> buffers;
  for (size_t k = 0; k < 3; ++k) {
    buffers.emplace_back(sizes[k]);
    fill(buffers[k].data(), 100 + k, sizes[k]);
  }
  // Reference, data message, reference, reference: their order holds.
  for (size_t k = 0; k < 3; ++k) {
    for (int plain = 0; plain < (k == 0 ? 2 : 1); ++plain) {
      void* slot = nullptr;
      Deadline deadline = Deadline::afterSeconds(20);
      while ((slot = send.trySendSlot()) == nullptr && !deadline.expired()) {
        size_t n = 0;
        uint64_t stamp = 0;
        ASSERT_EQ(recv.tryRecv(&n, &stamp), nullptr) << "a message arrived before its time";
        std::this_thread::yield();
      }
      ASSERT_NE(slot, nullptr);
      if (plain == 1) {
        fill(slot, 7, 5);
        send.postSend(5, stampOf(k * 2 + 1));
      } else {
        ReferenceMessage ref;
        ref.magic = kReferenceMagic;
        ref.address = reinterpret_cast<uint64_t>(buffers[k].data());
        ref.bytes = sizes[k];
        std::memcpy(slot, &ref, sizeof(ref));
        send.postSend(0, stampOf(k * 2));
      }
      // Receive what was just posted: its stamp arrives with it, whichever form it takes.
      size_t n = 0;
      uint64_t stamp = 0;
      const void* data = nullptr;
      while ((data = recv.tryRecv(&n, &stamp)) == nullptr && !deadline.expired()) std::this_thread::yield();
      ASSERT_NE(data, nullptr) << "message " << k << "/" << plain << " never arrived";
      EXPECT_EQ(stamp, stampOf(k * 2 + plain)) << "message " << k << "/" << plain;
      const auto* b = static_cast<const unsigned char*>(data);
      if (plain == 1) {
        ASSERT_EQ(n, 5u);
        for (size_t i = 0; i < 5; ++i) ASSERT_EQ(b[i], patternByte(7, i));
      } else if (carriesBytes) {
        // The transport read the referenced memory itself: an ordinary message.
        ASSERT_EQ(n, sizes[k]);
        EXPECT_EQ(std::memcmp(b, buffers[k].data(), sizes[k]), 0);
      } else {
        // The reference itself, intact, in a zero-byte slot.
        ASSERT_EQ(n, 0u);
        ReferenceMessage got;
        std::memcpy(&got, b, sizeof(got));
        EXPECT_EQ(got.magic, kReferenceMagic);
        EXPECT_EQ(got.address, reinterpret_cast<uint64_t>(buffers[k].data()));
        EXPECT_EQ(got.bytes, sizes[k]);
      }
      recv.releaseRecv();
    }
  }
  // The referenced memory may change only once every send is consumed.
  Deadline deadline = Deadline::afterSeconds(10);
  while (!w.send->allSendsConsumed() && !deadline.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(w.send->allSendsConsumed());
}

// Two lanes between the same ranks, streaming at once with different bytes: nothing crosses.
TEST_P(Conformance, LanesAreIndependent) {
  Wire w;
  ASSERT_NO_FATAL_FAILURE(connect(&w));
  Status st = connectLane(tc(), nSlots(), slotBytes(), 1, &w, &w.recv2, &w.send2);
  ASSERT_TRUE(st.isOk()) << st.message();
  const size_t cap = slotBytes();
  StreamSpec a{nSlots() * 20 + 1, [cap](uint64_t m) { return 1 + (m * 7919) % cap; }, 0};
  StreamSpec b{nSlots() * 20 + 3, [cap](uint64_t m) { return 1 + (m * 31) % cap; }, 1000003};
  std::string why[4];
  std::vector<std::thread> threads;
  threads.emplace_back([&] { why[0] = recvStream(Port(w.recv.get()), a, Deadline::afterSeconds(60)); });
  threads.emplace_back([&] { why[1] = recvStream(Port(w.recv2.get()), b, Deadline::afterSeconds(60)); });
  threads.emplace_back([&] { why[2] = sendStream(Port(w.send2.get()), b, Deadline::afterSeconds(60)); });
  why[3] = sendStream(Port(w.send.get()), a, Deadline::afterSeconds(60));
  for (auto& t : threads) t.join();
  for (const std::string& text : why) EXPECT_EQ(text, "");
}

TEST_P(Conformance, EachEndDoesOnlyItsOwnHalf) {
  Wire w;
  ASSERT_NO_FATAL_FAILURE(connect(&w));
  EXPECT_TRUE(w.send->allSendsConsumed());
  size_t bytes = 7;
  uint64_t stamp = 0;
  EXPECT_EQ(w.send->tryRecv(&bytes, &stamp), nullptr);
  EXPECT_EQ(w.recv->trySendSlot(), nullptr);
  size_t n = 0;
  EXPECT_EQ(Port(w.recv.get()).tryRecv(&n, &stamp), nullptr);  // nothing posted yet
  EXPECT_TRUE(w.send->checkPeer().isOk()) << w.send->checkPeer().message();
  EXPECT_TRUE(w.recv->checkPeer().isOk()) << w.recv->checkPeer().message();
  EXPECT_FALSE(w.send->peerAborted());
  EXPECT_FALSE(w.recv->peerAborted());
  EXPECT_EQ(w.send->peerAbortCulprit(), -1);
  EXPECT_EQ(w.recv->peerAbortCulprit(), -1);
}

// Polls `waiting` (receiving when it is the receiver, sending when the sender: a network
// transport learns of the peer's abort while it moves data) until it sees the peer's abort.
bool waitForPeerAbort(Port waiting, bool sender) {
  Deadline deadline = Deadline::afterSeconds(10);
  while (!waiting.conn()->peerAborted() && !deadline.expired()) {
    if (sender) {
      if (void* slot = waiting.trySendSlot()) {
        std::memset(slot, 0, 16);
        waiting.postSend(16, stampOf(0));
      }
    } else {
      size_t n = 0;
      uint64_t stamp = 0;
      if (waiting.tryRecv(&n, &stamp) != nullptr) waiting.releaseRecv();
    }
    std::this_thread::yield();
  }
  return waiting.conn()->peerAborted();
}

TEST_P(Conformance, ASendersAbortReachesTheReceiverWithItsCulprit) {
  Wire w;
  ASSERT_NO_FATAL_FAILURE(connect(&w));
  w.send->signalAbort(5);
  ASSERT_TRUE(waitForPeerAbort(Port(w.recv.get()), false));
  EXPECT_EQ(w.recv->peerAbortCulprit(), 5);
  Status st = w.recv->checkPeer();
  EXPECT_EQ(st.code(), weftRemoteError) << st.message();
  EXPECT_TRUE(contains(st.message(), "reported a failure")) << st.message();
  // The side that aborted has heard nothing from its peer.
  EXPECT_FALSE(w.send->peerAborted());
}

TEST_P(Conformance, AReceiversAbortReachesTheSender) {
  Wire w;
  ASSERT_NO_FATAL_FAILURE(connect(&w));
  w.recv->signalAbort(-1);
  ASSERT_TRUE(waitForPeerAbort(Port(w.send.get()), true));
  EXPECT_EQ(w.send->peerAbortCulprit(), -1);
  Status st = w.send->checkPeer();
  EXPECT_EQ(st.code(), weftRemoteError) << st.message();
  EXPECT_FALSE(w.recv->peerAborted());
}

// Reads or writes exactly `bytes` on a pipe, waiting at most 20 s in all.
bool transfer(int fd, void* data, size_t bytes, bool writing) {
  auto* p = static_cast<char*>(data);
  Deadline deadline = Deadline::afterSeconds(20);
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

// The bootstrap between two processes: tagged blobs over a pair of pipes, in order.
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

// The sender is a forked process that sends its stream, closes and exits; the receiver gets
// every message, then sees the exit (an error naming the peer, not an abort).
TEST_P(Conformance, APeerThatExitsIsSeenAfterItsLastMessage) {
  if (!tc().noFork.empty()) GTEST_SKIP() << tc().noFork;
  tc().environment();
  const std::string tag = shmtest::uniqueTag();
  const size_t cap = slotBytes();
  StreamSpec spec{nSlots() * 3 + 1, [cap](uint64_t m) { return 1 + (m * 131) % cap; }};
  int toChild[2], toParent[2];
  ASSERT_EQ(pipe(toChild), 0);
  ASSERT_EQ(pipe(toParent), 0);
  const int parentPid = getpid();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(toChild[1]);
    close(toParent[0]);
    int code = 0;
    {
      PipeExchange exchange(toChild[0], toParent[1]);
      std::unique_ptr<Transport> transport = tc().make();
      std::unique_ptr<Connection> send;
      ConnectRequest req = makeRequest(tc(), tag, 0, getpid(), parentPid, nSlots(), slotBytes(), &exchange);
      if (!transport->connectSend(req, &send).isOk()) {
        code = 10;
      } else if (!sendStream(Port(send.get()), spec, Deadline::afterSeconds(20)).empty()) {
        code = 11;
      }
      // Closing flushes what was posted (network transports); then the process is gone.
    }
    _exit(code);
  }
  close(toChild[0]);
  close(toParent[1]);
  PipeExchange exchange(toParent[0], toChild[1]);
  std::unique_ptr<Transport> transport = tc().make();
  std::unique_ptr<Connection> recv;
  Status st = transport->connectRecv(
      makeRequest(tc(), tag, 1, parentPid, static_cast<int>(child), nSlots(), slotBytes(), &exchange), &recv);
  EXPECT_TRUE(st.isOk()) << st.message();
  std::string why = recv ? recvStream(Port(recv.get()), spec, Deadline::afterSeconds(20)) : "no connection";
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  close(toParent[0]);
  close(toChild[1]);
  ASSERT_TRUE(recv);
  EXPECT_EQ(why, "");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  // Nothing more comes; waiting now reports the exit, naming the peer, within 10 s.
  Deadline deadline = Deadline::afterSeconds(10);
  Port port(recv.get());
  while (recv->checkPeer().isOk() && !deadline.expired()) {
    size_t n = 0;
    uint64_t stamp = 0;
    EXPECT_EQ(port.tryRecv(&n, &stamp), nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  st = recv->checkPeer();
  ASSERT_FALSE(st.isOk()) << "the receiver never noticed that rank 0 exited";
  EXPECT_TRUE(contains(st.message(), "rank 0")) << st.message();
  EXPECT_FALSE(recv->peerAborted());
}

std::string caseName(const ::testing::TestParamInfo<Conformance::ParamType>& info) {
  const Geometry& g = std::get<1>(info.param);
  return std::get<0>(info.param).name + "_" + std::to_string(g.nSlots) + "x" + std::to_string(g.slotBytes);
}

INSTANTIATE_TEST_SUITE_P(EveryTransport, Conformance,
                         ::testing::Combine(::testing::ValuesIn(transportCases()),
                                            ::testing::Values(Geometry{1, 64}, Geometry{4, 4096})),
                         caseName);

}  // namespace
}  // namespace weft
