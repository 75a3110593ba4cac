// The shared-memory FIFO on its own, both ends in this process: order, fullness, wraparound,
// byte counts, layout, running out of /dev/shm and stale segments. The /dev/shm side alone
// (names, the space check, the sweep) is shm_segments_test.cc's.
#include "transports/shm/shm_fifo.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

#include "shm_test_util.h"

namespace weft {
namespace shm {
namespace {

// The stamp these tests post with every message, and the last one received (the conformance
// suite checks that stamps arrive intact).
constexpr uint64_t kTestStamp = 0x5eed5eed00000042ull;
thread_local uint64_t lastStamp = 0;

using shmtest::patternByte;
using shmtest::shmEntries;
using shmtest::uniqueTag;

FifoSpec spec(const std::string& tag, bool sender, size_t nSlots, size_t slotBytes) {
  FifoSpec s;
  s.name = fifoName(tag, 0, 1, 0);
  s.nSlots = nSlots;
  s.slotBytes = slotBytes;
  s.selfRank = sender ? 0 : 1;
  s.peerRank = sender ? 1 : 0;
  s.peerPid = getpid();
  return s;
}

struct Pair {
  std::unique_ptr<ShmFifo> recv;
  std::unique_ptr<ShmFifo> send;
};

Pair makePair(const std::string& tag, size_t nSlots, size_t slotBytes) {
  Pair p;
  Status st = ShmFifo::create(spec(tag, false, nSlots, slotBytes), &p.recv);
  EXPECT_TRUE(st.isOk()) << st.message();
  st = ShmFifo::attach(spec(tag, true, nSlots, slotBytes), Deadline::afterSeconds(5), &p.send);
  EXPECT_TRUE(st.isOk()) << st.message();
  return p;
}

// A FIFO segment mapped by the test itself (read and write), found by name while it has one.
struct TestMapping {
  TestMapping(const std::string& name, size_t length) : bytes(length) {
    int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) return;
    void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p != MAP_FAILED) base = static_cast<unsigned char*>(p);
  }
  ~TestMapping() {
    if (base != nullptr) munmap(base, bytes);
  }
  TestMapping(const TestMapping&) = delete;
  TestMapping& operator=(const TestMapping&) = delete;
  unsigned char* base = nullptr;
  size_t bytes;
};

// Fills the first `fill` bytes of the next slot with patternByte(n, i), posts n bytes with
// kTestStamp + n, and receives them: *slot the sender's slot, *data what the receiver got (the
// byte count and stamp checked). The caller releases.
void roundTrip(Pair& p, size_t n, size_t fill, unsigned char** slot, const unsigned char** data) {
  *slot = static_cast<unsigned char*>(p.send->trySendSlot());
  ASSERT_NE(*slot, nullptr) << n;
  for (size_t i = 0; i < fill; ++i) (*slot)[i] = patternByte(n, i);
  p.send->postSend(n, kTestStamp + n);
  size_t got = 99;
  uint64_t stamp = 0;
  *data = static_cast<const unsigned char*>(p.recv->tryRecv(&got, &stamp));
  ASSERT_NE(*data, nullptr) << n;
  ASSERT_EQ(got, n);
  EXPECT_EQ(stamp, kTestStamp + n);
}

class FifoGeometry : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {
 protected:
  size_t nSlots() const { return std::get<0>(GetParam()); }
  size_t slotBytes() const { return std::get<1>(GetParam()); }
};

TEST_P(FifoGeometry, FillsUpThenReturnsNullAndKeepsOrder) {
  std::string tag = uniqueTag();
  Pair p = makePair(tag, nSlots(), slotBytes());
  ASSERT_TRUE(p.recv && p.send);
  EXPECT_EQ(p.send->slotBytes(), slotBytes());

  size_t bytes = 0;
  EXPECT_EQ(p.recv->tryRecv(&bytes, &lastStamp), nullptr) << "an empty FIFO has nothing to receive";

  std::set<void*> slots;
  for (size_t i = 0; i < nSlots(); ++i) {
    void* slot = p.send->trySendSlot();
    ASSERT_NE(slot, nullptr) << "slot " << i << " of " << nSlots();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(slot) % 64, 0u);
    EXPECT_EQ(p.send->trySendSlot(), slot) << "asking again before posting gives the same slot";
    slots.insert(slot);
    size_t n = (i * 13 + 1) % (slotBytes() + 1);
    std::memset(slot, static_cast<int>(i + 1), n);
    p.send->postSend(n, kTestStamp);
  }
  EXPECT_EQ(slots.size(), nSlots()) << "every slot is distinct";
  EXPECT_EQ(p.send->trySendSlot(), nullptr) << "a full FIFO has no free slot";

  for (size_t i = 0; i < nSlots(); ++i) {
    const void* data = p.recv->tryRecv(&bytes, &lastStamp);
    ASSERT_NE(data, nullptr);
    EXPECT_EQ(p.recv->tryRecv(&bytes, &lastStamp), data) << "asking again before releasing gives the same slot";
    EXPECT_EQ(bytes, (i * 13 + 1) % (slotBytes() + 1)) << "message " << i;
    const auto* b = static_cast<const unsigned char*>(data);
    for (size_t k = 0; k < bytes; ++k) ASSERT_EQ(b[k], static_cast<unsigned char>(i + 1)) << "message " << i;
    p.recv->releaseRecv();
    EXPECT_NE(p.send->trySendSlot(), nullptr) << "a released slot is free again";
  }
  EXPECT_EQ(p.recv->tryRecv(&bytes, &lastStamp), nullptr);
}

TEST_P(FifoGeometry, WrapsAroundOverManyRounds) {
  std::string tag = uniqueTag();
  Pair p = makePair(tag, nSlots(), slotBytes());
  ASSERT_TRUE(p.recv && p.send);
  uint64_t sent = 0, received = 0;
  const uint64_t total = nSlots() * 50 + 3;
  // Uneven bursts, so that head and tail meet at every slot index.
  for (int round = 0; received < total; ++round) {
    for (int k = 0; k <= round % 4 && sent < total; ++k) {
      void* slot = p.send->trySendSlot();
      if (slot == nullptr) break;
      size_t n = shmtest::messageBytes(sent, slotBytes());
      auto* b = static_cast<unsigned char*>(slot);
      for (size_t i = 0; i < n; ++i) b[i] = patternByte(sent, i);
      p.send->postSend(n, kTestStamp);
      ++sent;
    }
    for (int k = 0; k <= (round + 2) % 3; ++k) {
      size_t n = 0;
      const void* data = p.recv->tryRecv(&n, &lastStamp);
      if (data == nullptr) break;
      ASSERT_EQ(n, shmtest::messageBytes(received, slotBytes())) << "message " << received;
      const auto* b = static_cast<const unsigned char*>(data);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(b[i], patternByte(received, i)) << "message " << received;
      p.recv->releaseRecv();
      ++received;
    }
    ASSERT_LE(sent - received, nSlots());
  }
  EXPECT_EQ(sent, total);
}

INSTANTIATE_TEST_SUITE_P(
    Shm, FifoGeometry,
    ::testing::Values(std::make_tuple(size_t{1}, size_t{1}), std::make_tuple(size_t{2}, size_t{64}),
                      std::make_tuple(size_t{3}, size_t{1000}), std::make_tuple(size_t{8}, size_t{4096}),
                      std::make_tuple(size_t{5}, size_t{65536 + 3})),
    [](const auto& test) {
      return std::to_string(std::get<0>(test.param)) + "x" + std::to_string(std::get<1>(test.param));
    });

// Messages of 1..kInlineBytes bytes travel in the slot's descriptor line; the receiver must get
// exactly the bytes posted (a copy taken at postSend: the sender may reuse the slot's memory only
// after release, but bytes past the message must not leak in), and a 0-byte message (a reference,
// host_executor.cc) must still point at the slot the sender filled.
TEST(ShmFifo, SmallMessagesTravelInTheDescriptorAndZeroBytesPointAtTheSlot) {
  std::string tag = uniqueTag();
  Pair p = makePair(tag, 2, 256);
  ASSERT_TRUE(p.recv && p.send);
  for (size_t n = 0; n <= 2 * kInlineBytes + 1; ++n) {
    unsigned char* slot = nullptr;
    const unsigned char* data = nullptr;
    ASSERT_NO_FATAL_FAILURE(roundTrip(p, n, 256, &slot, &data));
    // The two ends map the segment at different addresses: tell the slot from the descriptor by
    // what the receiver sees after the sender's slot memory changes.
    const size_t check = n == 0 ? 64 : n;
    for (size_t i = 0; i < check; ++i) ASSERT_EQ(data[i], patternByte(n, i)) << n << " bytes, byte " << i;
    for (size_t i = 0; i < 256; ++i) slot[i] = static_cast<unsigned char>(~patternByte(n, i));
    const bool fromSlot = data[0] == static_cast<unsigned char>(~patternByte(n, 0));
    EXPECT_EQ(fromSlot, n == 0 || n > kInlineBytes) << n << " bytes";
    p.recv->releaseRecv();
  }
}

// The receiver announces the call it runs; the sender sees that stamp, and only that one, until
// the next announcement, whatever the slots do meanwhile.
TEST(ShmFifo, TheSenderSeesTheCallTheReceiverAnnounced) {
  std::string tag = uniqueTag();
  Pair p = makePair(tag, 2, 64);
  ASSERT_TRUE(p.recv && p.send);
  EXPECT_FALSE(p.send->peerAnnounced(kTestStamp));
  p.recv->announce(kTestStamp);
  EXPECT_TRUE(p.send->peerAnnounced(kTestStamp));
  EXPECT_FALSE(p.send->peerAnnounced(kTestStamp + 1));
  ASSERT_NE(p.send->trySendSlot(), nullptr);
  p.send->postSend(8, kTestStamp);
  size_t bytes = 0;
  uint64_t stamp = 0;
  ASSERT_NE(p.recv->tryRecv(&bytes, &stamp), nullptr);
  p.recv->releaseRecv();
  EXPECT_TRUE(p.send->allSendsConsumed());
  EXPECT_TRUE(p.send->peerAnnounced(kTestStamp));
  p.recv->announce(kTestStamp + 1);
  EXPECT_FALSE(p.send->peerAnnounced(kTestStamp));
  EXPECT_TRUE(p.send->peerAnnounced(kTestStamp + 1));
}

TEST(ShmFifo, LayoutAlignsSlotsAndData) {
  for (size_t slotBytes : {size_t{1}, size_t{63}, size_t{64}, size_t{1000}, size_t{4096}, size_t{5000}}) {
    for (size_t nSlots : {size_t{1}, size_t{7}, size_t{600}}) {
      FifoLayout l = fifoLayout(nSlots, slotBytes);
      EXPECT_EQ(l.slotStride % 64, 0u);
      EXPECT_GE(l.slotStride, slotBytes);
      EXPECT_EQ(l.dataOffset % 4096, 0u);
      EXPECT_GE(l.controlsOffset, sizeof(FifoHeader));
      EXPECT_EQ(l.controlsOffset % 4096, 0u);
      EXPECT_EQ(l.controlBytes % 4096, 0u);
      EXPECT_GE(l.controlBytes, kControlBytes + nSlots * sizeof(SlotDesc)) << "a candidate holds a control block";
      EXPECT_EQ(l.controlCandidates, nSlots <= 511 ? kControlCandidates : 1u) << nSlots << " slots";
      EXPECT_EQ(l.dataOffset, l.controlsOffset + l.controlCandidates * l.controlBytes);
      EXPECT_GE(l.totalBytes, l.dataOffset + nSlots * l.slotStride);
      EXPECT_EQ(l.totalBytes % 4096, 0u);
    }
  }
}

// The block whose slowest page is fastest wins; equals go to the lowest index; a block's pages
// are each probed once.
TEST(NearPages, TheBlockWhoseSlowestPageIsFastestWins) {
  const char* base = reinterpret_cast<const char*>(uintptr_t{1} << 20);
  std::vector<std::vector<uint64_t>> cost = {{400, 400}, {300, 500}, {350, 360}, {350, 350}, {350, 350}};
  std::vector<int> probed(cost.size() * 2, 0);
  auto probe = [&](size_t block, const void* line) {
    const size_t page = (static_cast<const char*>(line) - base - block * 8192) / 4096;
    EXPECT_LT(page, 2u);
    ++probed[block * 2 + page];
    return cost[block][page];
  };
  EXPECT_EQ(nearestBlock(base, 8192, cost.size(), probe), 3u);
  for (int n : probed) EXPECT_EQ(n, 1);
  EXPECT_EQ(nearestBlock(base, 8192, 1, probe), 0u) << "one candidate: nothing to choose";
}

// Every reload of a line takes some time where there is a flush to measure it with.
TEST(NearPages, AReloadFromMemoryTakesTime) {
  std::vector<char> page(4096, 1);
#if defined(__x86_64__)
  EXPECT_GT(reloadCycles(page.data()), 0u);
#else
  EXPECT_EQ(reloadCycles(page.data()), 0u) << "no flush here: every page looks alike";
#endif
}

// A memfd of `pages` pages, each allocated and marked with its index + 1 in its first byte.
struct MarkedFile {
  explicit MarkedFile(size_t n) : pages(n) {
    fd = static_cast<int>(syscall(SYS_memfd_create, "weft-near-test", 0));
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(n * 4096)) != 0) return;
    void* p = mmap(nullptr, n * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return;
    base = static_cast<char*>(p);
    for (size_t i = 0; i < n; ++i) base[i * 4096] = static_cast<char>(i + 1);
  }
  ~MarkedFile() {
    if (base != nullptr) munmap(base, pages * 4096);
    if (fd >= 0) close(fd);
  }
  MarkedFile(const MarkedFile&) = delete;
  MarkedFile& operator=(const MarkedFile&) = delete;
  size_t allocatedBytes() const {
    struct stat st;
    return fstat(fd, &st) == 0 ? static_cast<size_t>(st.st_blocks) * 512 : 0;
  }
  size_t pages;
  int fd = -1;
  char* base = nullptr;
};

// Far pages are re-drawn (a new page reads zero: the probe sees each draw) until near or out of
// rounds; near ones are never touched; no page is left a hole.
TEST(NearPages, FarPagesAreRedrawnUntilNearAndNoneIsLeftAHole) {
  MarkedFile f(10);
  ASSERT_NE(f.base, nullptr);
  // Draw 0 is the page as allocated; a page's later draws cost what its row says, in order.
  const std::vector<std::vector<uint64_t>> draws = {{350}, {340}, {360}, {355}, {345}, {350},
                                                    {470, 350}, {480, 470, 340}, {470, 490, 480, 500}, {460, 330}};
  std::vector<size_t> drawn(10, 0);
  auto probe = [&](size_t page, const void* line) {
    char* first = static_cast<char*>(const_cast<void*>(line));
    EXPECT_EQ(first, f.base + page * 4096);
    if (*first == 0) {  // a new page: mark it as seen
      ++drawn[page];
      *first = static_cast<char>(page + 1);
    }
    return draws[page][std::min(drawn[page], draws[page].size() - 1)];
  };
  SettleReport r;
  ASSERT_TRUE(settleNear(f.fd, f.base, 0, 10 * 4096, probe, 3, &r).isOk());
  EXPECT_EQ(r.pages, 10u);
  EXPECT_EQ(r.farBefore, 4u);
  EXPECT_EQ(r.farAfter, 1u) << "page 8 never draws near in 3 rounds";
  EXPECT_EQ(r.rounds, 3);
  EXPECT_EQ(drawn, (std::vector<size_t>{0, 0, 0, 0, 0, 0, 1, 2, 3, 1}));
  EXPECT_EQ(f.allocatedBytes(), 10u * 4096) << "every page is memory again, none a hole";
}

// Memory that is all alike (within a quarter of the near level) is left as it is.
TEST(NearPages, UniformMemoryIsLeftAlone) {
  MarkedFile f(16);
  ASSERT_NE(f.base, nullptr);
  SettleReport r;
  auto probe = [](size_t page, const void*) { return uint64_t{300 + 5 * (page % 7)}; };
  ASSERT_TRUE(settleNear(f.fd, f.base, 0, 16 * 4096, probe, 8, &r).isOk());
  EXPECT_EQ(r.farBefore, 0u);
  EXPECT_EQ(r.rounds, 0);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(f.base[i * 4096], static_cast<char>(i + 1)) << "page " << i << " kept";
}

// The receiver puts the control block (tail and descriptors) on the candidate its probe finds
// nearest; both ends use it (messages in the descriptors and in the slots, the tail and the
// announcement), and the other candidates stay untouched.
TEST(ShmFifo, TheControlBlockGoesWhereTheProbeFindsMemoryNearest) {
  for (size_t nearest : {size_t{0}, size_t{5}, kControlCandidates - 1}) {
    std::string tag = uniqueTag();
    FifoSpec rs = spec(tag, false, 3, 4096);
    rs.probe = [nearest](size_t block, const void*) { return block == nearest ? uint64_t{350} : uint64_t{470}; };
    Pair p;
    ASSERT_TRUE(ShmFifo::create(rs, &p.recv).isOk());
    const FifoLayout l = fifoLayout(3, 4096);
    TestMapping segment(fifoName(tag, 0, 1, 0), l.totalBytes);  // before the sender unlinks the name
    ASSERT_NE(segment.base, nullptr);
    ASSERT_TRUE(ShmFifo::attach(spec(tag, true, 3, 4096), Deadline::afterSeconds(5), &p.send).isOk());
    EXPECT_EQ(p.recv->controlBlock(), nearest);
    EXPECT_EQ(p.send->controlBlock(), nearest);
    p.recv->announce(kTestStamp);
    EXPECT_TRUE(p.send->peerAnnounced(kTestStamp));
    for (size_t n : {size_t{8}, size_t{kInlineBytes}, size_t{3000}, size_t{8}, size_t{4096}, size_t{1}, size_t{77}}) {
      unsigned char* slot = nullptr;
      const unsigned char* data = nullptr;
      ASSERT_NO_FATAL_FAILURE(roundTrip(p, n, n, &slot, &data));
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(data[i], patternByte(n, i)) << n << " bytes, byte " << i;
      p.recv->releaseRecv();
      EXPECT_TRUE(p.send->allSendsConsumed());
    }
    // The candidates not chosen were never written (the segment starts zeroed).
    for (size_t b = 0; b < l.controlCandidates; ++b) {
      const unsigned char* block = segment.base + l.controlsOffset + b * l.controlBytes;
      size_t nonZero = 0;
      for (size_t i = 0; i < l.controlBytes; ++i) nonZero += block[i] != 0;
      if (b == nearest) {
        EXPECT_GT(nonZero, 0u) << "the chosen block holds the tail and the descriptors";
      } else {
        EXPECT_EQ(nonZero, 0u) << "candidate " << b;
      }
    }
  }
}

// WEFT_SHM_NEAR_PAGES=0: the first candidate, whatever a probe would say.
TEST(ShmFifo, WithoutNearPagesTheControlBlockStaysFirst) {
  std::string tag = uniqueTag();
  FifoSpec rs = spec(tag, false, 3, 4096);
  rs.nearPages = false;
  rs.probe = [](size_t block, const void*) { return block == 5 ? uint64_t{350} : uint64_t{470}; };
  Pair p;
  ASSERT_TRUE(ShmFifo::create(rs, &p.recv).isOk());
  ASSERT_TRUE(ShmFifo::attach(spec(tag, true, 3, 4096), Deadline::afterSeconds(5), &p.send).isOk());
  EXPECT_EQ(p.recv->controlBlock(), 0u);
  EXPECT_EQ(p.send->controlBlock(), 0u);
}

// Whatever re-drawing the slots' pages did, the segment a receiver hands out has all its memory
// (a hole would be a SIGBUS in the sender when /dev/shm fills up later).
TEST(ShmFifo, ACreatedSegmentHasAllItsPages) {
  for (size_t slotBytes : {size_t{4096}, size_t{256} << 10}) {
    std::string tag = uniqueTag();
    std::unique_ptr<ShmFifo> recv;
    ASSERT_TRUE(ShmFifo::create(spec(tag, false, 4, slotBytes), &recv).isOk());
    int fd = shm_open(fifoName(tag, 0, 1, 0).c_str(), O_RDONLY, 0);
    ASSERT_GE(fd, 0);
    struct stat st;
    ASSERT_EQ(fstat(fd, &st), 0);
    close(fd);
    EXPECT_GE(static_cast<size_t>(st.st_blocks) * 512, fifoLayout(4, slotBytes).totalBytes) << slotBytes;
  }
}

// A sender checks where the header says the control block is before it trusts it.
TEST(ShmFifo, AttachRejectsAControlBlockOutsideTheCandidates) {
  const FifoLayout l = fifoLayout(2, 256);
  for (uint64_t bad : {uint64_t{0}, uint64_t{l.controlsOffset + 64}, uint64_t{l.dataOffset},
                       uint64_t{l.controlsOffset + l.controlCandidates * l.controlBytes}}) {
    std::string tag = uniqueTag();
    std::unique_ptr<ShmFifo> recv, send;
    ASSERT_TRUE(ShmFifo::create(spec(tag, false, 2, 256), &recv).isOk());
    TestMapping segment(fifoName(tag, 0, 1, 0), l.totalBytes);
    ASSERT_NE(segment.base, nullptr);
    auto* header = reinterpret_cast<FifoHeader*>(segment.base);
    header->controlOffset = bad;
    header->descsOffset = bad + kControlBytes;
    Status st = ShmFifo::attach(spec(tag, true, 2, 256), Deadline::afterSeconds(5), &send);
    EXPECT_FALSE(st.isOk()) << bad;
    EXPECT_NE(st.message().find("inconsistent layout"), std::string::npos) << st.message();
  }
}

TEST(ShmFifo, CreateFailsCleanlyWithoutSpace) {
  std::string tag = uniqueTag();
  std::unique_ptr<ShmFifo> fifo;
  Status st = ShmFifo::create(spec(tag, false, 8, 1 << 16), &fifo, /*freeBytes=*/64 << 10);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), weftSystemError);
  EXPECT_NE(st.message().find("/dev/shm has 64 KiB free"), std::string::npos) << st.message();
  EXPECT_EQ(fifo, nullptr);
  // Only the empty marker that tells the waiting sender (issue 13: the error on every rank).
  EXPECT_EQ(shmEntries(tag).size(), 1u);
  // The sender fails at once with the remedy (not at its deadline) and takes the marker.
  std::unique_ptr<ShmFifo> send;
  const auto t0 = std::chrono::steady_clock::now();
  st = ShmFifo::attach(spec(tag, true, 8, 1 << 16), Deadline::afterSeconds(20), &send);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(st.code(), weftSystemError);
  EXPECT_NE(st.message().find("rank 1 could not create the shared-memory FIFO"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("--shm-size"), std::string::npos) << st.message();
  EXPECT_TRUE(shmEntries(tag).empty());
}

TEST(ShmFifo, RejectsImpossibleGeometry) {
  std::string tag = uniqueTag();
  std::unique_ptr<ShmFifo> fifo;
  Status st = ShmFifo::create(spec(tag, false, 0, 4096), &fifo);
  EXPECT_EQ(st.code(), weftInvalidArgument) << st.message();
  st = ShmFifo::create(spec(tag, false, 4, 0), &fifo);
  EXPECT_EQ(st.code(), weftInvalidArgument) << st.message();
  EXPECT_TRUE(shmEntries(tag).empty());
}

TEST(ShmFifo, ReplacesAStaleSegmentFromACrashedRun) {
  std::string tag = uniqueTag();
  std::string name = fifoName(tag, 0, 1, 0);
  // What a crash half-way through creation leaves: a segment of the right name and junk in it.
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  ASSERT_EQ(write(fd, "junk", 4), 4);
  close(fd);

  Pair p = makePair(tag, 4, 256);
  ASSERT_TRUE(p.recv && p.send);
  void* slot = p.send->trySendSlot();
  ASSERT_NE(slot, nullptr);
  std::memcpy(slot, "hello", 5);
  p.send->postSend(5, kTestStamp);
  size_t n = 0;
  const void* data = p.recv->tryRecv(&n, &lastStamp);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(std::string(static_cast<const char*>(data), n), "hello");
}

TEST(ShmFifo, SenderUnlinksTheNameOnceAttached) {
  std::string tag = uniqueTag();
  std::unique_ptr<ShmFifo> recv, send;
  ASSERT_TRUE(ShmFifo::create(spec(tag, false, 4, 256), &recv).isOk());
  EXPECT_EQ(shmEntries(tag).size(), 1u);
  ASSERT_TRUE(ShmFifo::attach(spec(tag, true, 4, 256), Deadline::afterSeconds(5), &send).isOk());
  EXPECT_TRUE(shmEntries(tag).empty()) << "both sides mapped: nothing can leak";
}

TEST(ShmFifo, ReceiverUnlinksWhenNoSenderCame) {
  std::string tag = uniqueTag();
  {
    std::unique_ptr<ShmFifo> recv;
    ASSERT_TRUE(ShmFifo::create(spec(tag, false, 4, 256), &recv).isOk());
    EXPECT_EQ(shmEntries(tag).size(), 1u);
  }
  EXPECT_TRUE(shmEntries(tag).empty());
}

// A receiver's FIFO is placed on the NUMA node it is given (its own: it reads the FIFO), as the
// kernel reports the segment's policy; a node the machine lacks leaves the FIFO working, unplaced.
TEST(ShmFifo, PagesArePlacedOnTheReadersNumaNode) {
  void* probe = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(probe, MAP_FAILED);
  int err = 0;
  const bool numa = preferNumaNode(probe, 4096, 0, &err);
  if (numa) EXPECT_EQ(preferredNumaNode(probe), 0);
  munmap(probe, 4096);
  if (!numa) GTEST_SKIP() << "this kernel has no NUMA policies: " << std::strerror(err);

  std::string tag = uniqueTag();
  FifoSpec placed = spec(tag, false, 4, 4096);
  placed.numaNode = 0;
  std::unique_ptr<ShmFifo> recv, send;
  ASSERT_TRUE(ShmFifo::create(placed, &recv).isOk());
  EXPECT_EQ(recv->placedNumaNode(), 0);
  ASSERT_TRUE(ShmFifo::attach(spec(tag, true, 4, 4096), Deadline::afterSeconds(5), &send).isOk());
  void* slot = send->trySendSlot();
  ASSERT_NE(slot, nullptr);
  std::memset(slot, 0x5a, 4096);
  send->postSend(4096, kTestStamp);
  size_t bytes = 0;
  uint64_t stamp = 0;
  const void* got = recv->tryRecv(&bytes, &stamp);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(bytes, 4096u);
  EXPECT_EQ(static_cast<const unsigned char*>(got)[4095], 0x5a);

  // No preference asked: the default policy.
  std::string plainTag = uniqueTag();
  std::unique_ptr<ShmFifo> plain;
  ASSERT_TRUE(ShmFifo::create(spec(plainTag, false, 4, 4096), &plain).isOk());
  EXPECT_EQ(plain->placedNumaNode(), -1);
  // A node this machine does not have (a topology file may claim one): created, not placed.
  std::string farTag = uniqueTag();
  FifoSpec far = spec(farTag, false, 4, 4096);
  far.numaNode = 1000;
  std::unique_ptr<ShmFifo> unplaced;
  ASSERT_TRUE(ShmFifo::create(far, &unplaced).isOk());
  EXPECT_EQ(unplaced->placedNumaNode(), -1);
}

}  // namespace
}  // namespace shm
}  // namespace weft
