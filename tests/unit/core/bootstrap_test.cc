// The bootstrap: ranks as threads and as processes, strangers at the root, missing ranks, the
// launcher (environment) path, abort and peers that go away. Loopback only.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "base/log.h"
#include "core/bootstrap.h"
#include "core/bootstrap_wire.h"
#include "fixtures/port_holder.h"

namespace weft {
namespace core {
namespace {

double secondsSince(uint64_t startNs) { return static_cast<double>(nowNs() - startNs) / 1e9; }

PeerInfo infoFor(int rank) {
  PeerInfo info;
  info.rank = -7;  // the bootstrap fills in the rank
  info.pid = static_cast<int32_t>(getpid());
  info.hostHash = hostHash();
  info.processHash = processHash();
  info.device = 100 + rank;  // a marker the table must carry back
  std::snprintf(info.hostName, sizeof(info.hostName), "host-of-%d", rank);
  return info;
}

weftUniqueId loopbackId() {
  weftUniqueId id;
  Status s = createUniqueIdAt(SocketAddress::loopbackV4(), &id);
  EXPECT_TRUE(s.isOk()) << s.message();
  return id;
}

// Runs body(rank, bootstrap) for every rank, each in its own thread, after joining `id`.
void runRanks(const weftUniqueId& id, int n, const std::function<void(int, Bootstrap&)>& body, double timeoutS = 20) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Bootstrap> b;
      Status s = Bootstrap::create(id, r, n, infoFor(r), Deadline::afterSeconds(timeoutS), &b);
      ASSERT_TRUE(s.isOk()) << "rank " << r << ": " << s.message();
      body(r, *b);
    });
  }
  for (auto& t : threads) t.join();
}

// Waits (briefly) for the root threads of this process to finish.
bool rootsFinish() {
  for (int i = 0; i < 200 && runningRootCount() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return runningRootCount() == 0;
}

class BootstrapThreads : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapThreads, TableAllGatherBarrierAndTaggedMessages) {
  const int n = GetParam();
  weftUniqueId id = loopbackId();
  runRanks(id, n, [n](int rank, Bootstrap& b) {
    EXPECT_EQ(b.rank(), rank);
    EXPECT_EQ(b.nRanks(), n);
    ASSERT_EQ(b.peers().size(), static_cast<size_t>(n));
    for (int p = 0; p < n; ++p) {
      EXPECT_EQ(b.peers()[p].rank, p);
      EXPECT_EQ(b.peers()[p].device, 100 + p);
      EXPECT_EQ(std::string(b.peers()[p].hostName), "host-of-" + std::to_string(p));
      EXPECT_EQ(b.peers()[p].pid, getpid());
    }
    // allGather and barrier, many times; contributions of different sizes in different rounds.
    for (int iter = 0; iter < 100; ++iter) {
      size_t words = 1 + static_cast<size_t>(iter % 5);
      std::vector<uint64_t> mine(words), all(words * n);
      for (size_t w = 0; w < words; ++w) mine[w] = static_cast<uint64_t>(rank) * 1000000 + iter * 10 + w;
      ASSERT_TRUE(b.allGather(mine.data(), all.data(), words * sizeof(uint64_t)).isOk());
      for (int p = 0; p < n; ++p) {
        for (size_t w = 0; w < words; ++w) {
          ASSERT_EQ(all[p * words + w], static_cast<uint64_t>(p) * 1000000 + iter * 10 + w) << "iter " << iter;
        }
      }
      ASSERT_TRUE(b.barrier().isOk());
    }
    // In place: my contribution already sits in its slot.
    std::vector<int32_t> inPlace(n, -1);
    inPlace[rank] = rank * 3;
    ASSERT_TRUE(b.allGather(&inPlace[rank], inPlace.data(), sizeof(int32_t)).isOk());
    for (int p = 0; p < n; ++p) EXPECT_EQ(inPlace[p], p * 3);

    // Point to point: to every peer, tags 3, 2, 1 in that order; received as 1, 2, 3.
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      for (int tag = 3; tag >= 1; --tag) {
        int64_t msg[3] = {rank, p, tag};
        ASSERT_TRUE(b.send(p, tag, msg, sizeof(msg)).isOk());
      }
    }
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      for (int tag = 1; tag <= 3; ++tag) {
        int64_t msg[3] = {0, 0, 0};
        Status s = b.recv(p, tag, msg, sizeof(msg));
        ASSERT_TRUE(s.isOk()) << s.message();
        EXPECT_EQ(msg[0], p);
        EXPECT_EQ(msg[1], rank);
        EXPECT_EQ(msg[2], tag);
      }
    }
    // Same tag twice: in order. And a message to oneself.
    int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    for (int k = 0; k < 2; ++k) ASSERT_TRUE(b.send(next, 9, &k, sizeof(k)).isOk());
    for (int k = 0; k < 2; ++k) {
      int got = -1;
      ASSERT_TRUE(b.recv(prev, 9, &got, sizeof(got)).isOk());
      EXPECT_EQ(got, k);
    }
    ASSERT_TRUE(b.barrier().isOk());
  });
  EXPECT_TRUE(rootsFinish()) << "the root thread should end once the communicator formed";
}

INSTANTIATE_TEST_SUITE_P(Ranks, BootstrapThreads, ::testing::Values(1, 2, 4, 8));

TEST(Bootstrap, LargeMessagesAndConcurrentReceivers) {
  weftUniqueId id = loopbackId();
  runRanks(id, 3, [](int rank, Bootstrap& b) {
    // 8 MiB from rank 0 to rank 1 while rank 2 talks to rank 1 too; rank 1 receives in two
    // threads at once.
    std::vector<uint8_t> big(8 << 20);
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 31 + 7);
    if (rank == 0) {
      ASSERT_TRUE(b.send(1, 5, big.data(), big.size()).isOk());
    }
    if (rank == 2) {
      for (int k = 0; k < 50; ++k) ASSERT_TRUE(b.send(1, 6, &k, sizeof(k)).isOk());
    }
    if (rank == 1) {
      std::thread other([&] {
        for (int k = 0; k < 50; ++k) {
          int got = -1;
          ASSERT_TRUE(b.recv(2, 6, &got, sizeof(got)).isOk());
          EXPECT_EQ(got, k);
        }
      });
      std::vector<uint8_t> in(big.size());
      ASSERT_TRUE(b.recv(0, 5, in.data(), in.size()).isOk());
      EXPECT_TRUE(in == big);
      other.join();
    }
    ASSERT_TRUE(b.barrier().isOk());
  });
}

TEST(Bootstrap, RanksAsProcesses) {
  const int n = 4;
  // Child 0 makes the id and hands it to the others through pipes.
  int pipes[n][2];
  for (auto& p : pipes) ASSERT_EQ(pipe(p), 0);
  std::vector<pid_t> kids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto run = [&]() -> int {
        weftUniqueId id;
        if (r == 0) {
          if (!createUniqueIdAt(SocketAddress::loopbackV4(), &id).isOk()) return 10;
          for (int p = 1; p < n; ++p) {
            if (write(pipes[p][1], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) return 11;
          }
        } else if (read(pipes[r][0], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) {
          return 12;
        }
        std::unique_ptr<Bootstrap> b;
        Status s = Bootstrap::create(id, r, n, infoFor(r), Deadline::afterSeconds(15), &b);
        if (!s.isOk()) {
          std::fprintf(stderr, "rank %d: %s\n", r, s.message().c_str());
          return 13;
        }
        int32_t mine = getpid(), all[n];
        if (!b->allGather(&mine, all, sizeof(mine)).isOk()) return 14;
        for (int p = 0; p < n; ++p) {
          if (all[p] != b->peers()[p].pid) return 15;
        }
        // A ring of messages between processes.
        int64_t token = r * 7, got = -1;
        if (!b->send((r + 1) % n, 1, &token, sizeof(token)).isOk()) return 16;
        if (!b->recv((r + n - 1) % n, 1, &got, sizeof(got)).isOk()) return 17;
        if (got != ((r + n - 1) % n) * 7) return 18;
        if (!b->barrier().isOk()) return 19;
        return 0;
      };
      _exit(run());
    }
    kids.push_back(pid);
  }
  for (auto& p : pipes) close(p[0]), close(p[1]);
  uint64_t start = nowNs();
  for (int r = 0; r < n; ++r) {
    int status = 0;
    pid_t done = 0;
    while ((done = waitpid(kids[r], &status, WNOHANG)) == 0 && secondsSince(start) < 25) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (done == 0) {
      for (pid_t k : kids) kill(k, SIGKILL);
      FAIL() << "rank " << r << " did not finish";
    }
    ASSERT_TRUE(WIFEXITED(status)) << "rank " << r;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "rank " << r;
  }
}

// ---- strangers and misbehaving ranks at the root ------------------------------------------

wire::Hello helloFor(const UniqueIdInfo& info, int rank, int nRanks) {
  wire::Hello h{};
  h.magic = wire::kHelloMagic;
  h.version = wire::kProtocolVersion;
  std::memcpy(h.secret, info.secret, kSecretBytes);
  h.nonce = info.nonce;
  h.rank = rank;
  h.nRanks = nRanks;
  h.timeoutMs = 10000;
  h.info = infoFor(rank);
  h.listen = wire::toWire(SocketAddress::loopbackV4(1));
  return h;
}

// Reads the root's answer to a rejected hello.
std::string rejection(const Socket& s) {
  wire::Reply r{};
  if (!s.recvAll(&r, sizeof(r), Deadline::afterSeconds(5)).isOk()) return "(no answer)";
  std::string text(r.textBytes, '\0');
  if (!s.recvAll(&text[0], text.size(), Deadline::afterSeconds(5)).isOk()) return "(no text)";
  return text;
}

// Waits until the root closes s.
bool closedByRoot(const Socket& s) {
  char c;
  Status st = s.recvAll(&c, 1, Deadline::afterSeconds(5));
  return st.code() == weftRemoteError;
}

TEST(BootstrapRoot, StrangersDoNotStopTheCommunicator) {
  setenv("WEFT_DEBUG", "WARN", 1);
  reloadLogSettings();
  weftUniqueId id = loopbackId();
  UniqueIdInfo info;
  ASSERT_TRUE(decodeUniqueId(id, &info).isOk());
  testing::internal::CaptureStderr();

  // Garbage.
  Socket garbage;
  ASSERT_TRUE(Socket::connect(info.root, Deadline::afterSeconds(5), nullptr, &garbage).isOk());
  const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(garbage.sendAll(http, sizeof(http) - 1, Deadline::afterSeconds(5)).isOk());
  EXPECT_TRUE(closedByRoot(garbage));
  // A hello with the wrong secret: turned away, with the reason.
  Socket wrong;
  ASSERT_TRUE(Socket::connect(info.root, Deadline::afterSeconds(5), nullptr, &wrong).isOk());
  wire::Hello h = helloFor(info, 0, 4);
  h.secret[3] ^= 0x40;
  ASSERT_TRUE(wrong.sendAll(&h, sizeof(h), Deadline::afterSeconds(5)).isOk());
  EXPECT_NE(rejection(wrong).find("wrong secret"), std::string::npos);
  // A truncated hello.
  Socket truncated;
  ASSERT_TRUE(Socket::connect(info.root, Deadline::afterSeconds(5), nullptr, &truncated).isOk());
  h = helloFor(info, 1, 4);
  ASSERT_TRUE(truncated.sendAll(&h, 40, Deadline::afterSeconds(5)).isOk());
  truncated.close();
  // Out of range, and a size that disagrees with the first rank's.
  Socket outOfRange;
  ASSERT_TRUE(Socket::connect(info.root, Deadline::afterSeconds(5), nullptr, &outOfRange).isOk());
  h = helloFor(info, 9, 4);
  ASSERT_TRUE(outOfRange.sendAll(&h, sizeof(h), Deadline::afterSeconds(5)).isOk());
  EXPECT_NE(rejection(outOfRange).find("rank 9 is out of range for 4 ranks"), std::string::npos);
  // One that says nothing at all, and stays connected.
  Socket silent;
  ASSERT_TRUE(Socket::connect(info.root, Deadline::afterSeconds(5), nullptr, &silent).isOk());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  uint64_t start = nowNs();
  runRanks(id, 4, [](int, Bootstrap& b) { ASSERT_TRUE(b.barrier().isOk()); });
  EXPECT_LT(secondsSince(start), 3.0) << "a silent stranger must not hold up the ranks";
  ASSERT_TRUE(rootsFinish());
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("bad magic"), std::string::npos) << log;
  EXPECT_NE(log.find("wrong secret"), std::string::npos) << log;
  EXPECT_NE(log.find("closed after 40 of"), std::string::npos) << log;
  EXPECT_NE(log.find("rank 9 is out of range"), std::string::npos) << log;
  EXPECT_NE(log.find("no complete hello before the communicator formed"), std::string::npos) << log;
  EXPECT_NE(log.find("dropped the connection from 127.0.0.1:"), std::string::npos) << log;
}

// A second hello for a rank that is still waiting means the id serves two groups of ranks (or
// one rank twice): nobody may form a communicator from the mix, and every rank hears why.
TEST(BootstrapRoot, WrongSizeIsTurnedAwayAndADuplicateRankFailsEveryone) {
  weftUniqueId id = loopbackId();
  const int n = 3;
  Status first;
  std::thread firstThread([&] {
    std::unique_ptr<Bootstrap> b;
    first = Bootstrap::create(id, 1, n, infoFor(1), Deadline::afterSeconds(10), &b);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::unique_ptr<Bootstrap> other;
  Status s = Bootstrap::create(id, 2, n + 2, infoFor(2), Deadline::afterSeconds(5), &other);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("says the communicator has 5 ranks"), std::string::npos) << s.message();

  uint64_t start = nowNs();
  s = Bootstrap::create(id, 1, n, infoFor(1), Deadline::afterSeconds(5), &other);
  EXPECT_EQ(s.code(), weftInvalidUsage);
  EXPECT_NE(s.message().find("the unique id was used twice: rank 1 joined from"), std::string::npos) << s.message();
  firstThread.join();
  EXPECT_EQ(first.code(), weftInvalidUsage) << "the first rank 1 must not form a communicator from the mix";
  EXPECT_NE(first.message().find("used twice"), std::string::npos) << first.message();
  // A latecomer of either group is told the same, at once.
  s = Bootstrap::create(id, 0, n, infoFor(0), Deadline::afterSeconds(5), &other);
  EXPECT_EQ(s.code(), weftInvalidUsage);
  EXPECT_NE(s.message().find("call weftGetUniqueId for each new communicator"), std::string::npos) << s.message();
  EXPECT_LT(secondsSince(start), 3.0);
  // The root stays a few seconds for the latecomers, then ends.
  for (int i = 0; i < 100 && runningRootCount() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(runningRootCount(), 0u);
}

// Once an id formed a communicator, its ranks in this process are refused at once if they come
// back with it (the root is gone: they would wait out the whole time-out).
TEST(BootstrapRoot, AnIdThatFormedACommunicatorIsRefusedTheSecondTime) {
  weftUniqueId id = loopbackId();
  runRanks(id, 2, [](int, Bootstrap& b) { ASSERT_TRUE(b.barrier().isOk()); });
  ASSERT_TRUE(rootsFinish());
  for (int r = 0; r < 2; ++r) {
    uint64_t start = nowNs();
    std::unique_ptr<Bootstrap> again;
    Status s = Bootstrap::create(id, r, 2, infoFor(r), Deadline::afterSeconds(30), &again);
    EXPECT_EQ(s.code(), weftInvalidUsage) << s.message();
    EXPECT_NE(s.message().find("was already used"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("call weftGetUniqueId for each new communicator"), std::string::npos) << s.message();
    EXPECT_LT(secondsSince(start), 1.0) << "refused at once, not after the time-out";
  }
}

// A join that failed (here: nobody else came) may be tried again with the same id: only a
// communicator that formed uses the id up.
TEST(BootstrapRoot, AFailedJoinDoesNotUseTheIdUp) {
  weftUniqueId id = loopbackId();
  std::unique_ptr<Bootstrap> b;
  std::atomic<bool> abortNow{true};
  Status s = Bootstrap::create(id, 0, 2, infoFor(0), Deadline::afterSeconds(5), &b, &abortNow);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message().find("already used"), std::string::npos) << s.message();
  runRanks(id, 2, [](int, Bootstrap& boot) { ASSERT_TRUE(boot.barrier().isOk()); });
}

TEST(BootstrapRoot, MissingRankIsNamed) {
  weftUniqueId id = loopbackId();
  const int n = 4;
  std::vector<Status> results(n);
  std::vector<std::thread> threads;
  uint64_t start = nowNs();
  for (int r : {0, 2}) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Bootstrap> b;
      results[r] = Bootstrap::create(id, r, n, infoFor(r), Deadline::afterSeconds(2), &b);
    });
  }
  for (auto& t : threads) t.join();
  double took = secondsSince(start);
  for (int r : {0, 2}) {
    EXPECT_EQ(results[r].code(), weftTimeout) << results[r].message();
    EXPECT_NE(results[r].message().find("2 of 4 ranks joined within"), std::string::npos) << results[r].message();
    EXPECT_NE(results[r].message().find("missing ranks 1, 3"), std::string::npos) << results[r].message();
    EXPECT_NE(results[r].message().find("127.0.0.1:"), std::string::npos) << results[r].message();
  }
  EXPECT_GT(took, 1.4);
  EXPECT_LT(took, 3.5);
  EXPECT_TRUE(rootsFinish());
}

TEST(BootstrapRoot, UnreachableRootTimesOut) {
  // A root that has already served its communicator is gone: a rank this process did not join
  // as before fails at the deadline, and the message mentions an id used twice.
  weftUniqueId id = loopbackId();
  runRanks(id, 1, [](int, Bootstrap&) {});
  ASSERT_TRUE(rootsFinish());
  std::unique_ptr<Bootstrap> b;
  uint64_t start = nowNs();
  Status s = Bootstrap::create(id, 1, 2, infoFor(1), Deadline::afterSeconds(0.5), &b);
  EXPECT_EQ(s.code(), weftTimeout);
  EXPECT_NE(s.message().find("cannot reach the root at 127.0.0.1:"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("an id used before finds none"), std::string::npos) << s.message();
  EXPECT_LT(secondsSince(start), 2.0);
}

// ---- ids ------------------------------------------------------------------------------------

TEST(UniqueId, RoundTripAndTags) {
  weftUniqueId a = loopbackId(), b = loopbackId();
  UniqueIdInfo ia, ib;
  ASSERT_TRUE(decodeUniqueId(a, &ia).isOk());
  ASSERT_TRUE(decodeUniqueId(b, &ib).isOk());
  EXPECT_TRUE(ia.root.isLoopback());
  EXPECT_NE(ia.root.port(), 0);
  EXPECT_NE(ia.nonce, ib.nonce);
  EXPECT_NE(std::memcmp(ia.secret, ib.secret, kSecretBytes), 0);
  std::string ta = commTagFromId(a), tb = commTagFromId(b);
  EXPECT_EQ(ta, commTagFromId(a));
  EXPECT_NE(ta, tb);
  EXPECT_EQ(ta.size(), 16u);
  EXPECT_EQ(ta.find_first_not_of("0123456789abcdef"), std::string::npos);
  // Serve both roots so that they end.
  runRanks(a, 1, [](int, Bootstrap&) {});
  runRanks(b, 1, [](int, Bootstrap&) {});

  weftUniqueId junk;
  std::memset(&junk, 0x5a, sizeof(junk));
  UniqueIdInfo ij;
  EXPECT_EQ(decodeUniqueId(junk, &ij).code(), weftInvalidArgument);
  std::unique_ptr<Bootstrap> bs;
  Status s = Bootstrap::create(junk, 0, 2, infoFor(0), Deadline::afterSeconds(1), &bs);
  EXPECT_EQ(s.code(), weftInvalidArgument);
  EXPECT_NE(s.message().find("weftGetUniqueId"), std::string::npos) << s.message();
  EXPECT_EQ(Bootstrap::create(a, 2, 2, infoFor(0), Deadline::afterSeconds(1), &bs).code(), weftInvalidArgument);
}

TEST(UniqueId, CreateUniqueIdHonoursSocketIfname) {
  setenv("WEFT_SOCKET_IFNAME", "=lo", 1);
  weftUniqueId id;
  Status s = createUniqueId(&id);
  unsetenv("WEFT_SOCKET_IFNAME");
  ASSERT_TRUE(s.isOk()) << s.message();
  UniqueIdInfo info;
  ASSERT_TRUE(decodeUniqueId(id, &info).isOk());
  EXPECT_EQ(info.root.hostString(), "127.0.0.1");
  runRanks(id, 2, [](int, Bootstrap& b) { EXPECT_TRUE(b.barrier().isOk()); });
}

// ---- the launcher path ----------------------------------------------------------------------

class EnvGuard {
 public:
  ~EnvGuard() {
    for (const char* v : {"WEFT_ROOT_ADDR", "WEFT_ROOT_SECRET", "WEFT_RANK", "WEFT_NRANKS"}) unsetenv(v);
  }
};

using weft_test::PortHolder;

TEST(BootstrapEnv, FixedPortAndSecret) {
  EnvGuard guard;
  ASSERT_TRUE(rootsFinish());
  const int n = 3;
  PortHolder holder;
  std::string addr = "127.0.0.1:" + std::to_string(holder.port());
  const char* secret = "00112233445566778899aabbccddeeff";
  setenv("WEFT_ROOT_ADDR", addr.c_str(), 1);
  setenv("WEFT_ROOT_SECRET", secret, 1);
  setenv("WEFT_NRANKS", "3", 1);

  // Every rank computes the same id; ranks 1 and 2 start before rank 0 listens.
  weftUniqueId expect;
  ASSERT_TRUE(uniqueIdFromAddress(addr, secret, &expect).isOk());
  weftUniqueId id1;
  int rank = -1, nRanks = -1;
  setenv("WEFT_RANK", "1", 1);
  ASSERT_TRUE(uniqueIdFromEnv(&id1, &rank, &nRanks).isOk());
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(nRanks, 3);
  EXPECT_EQ(std::memcmp(&id1, &expect, sizeof(id1)), 0);
  EXPECT_EQ(runningRootCount(), 0u) << "only rank 0 starts the root";

  std::vector<std::thread> early;
  for (int r : {1, 2}) {
    early.emplace_back([&, r] {
      std::unique_ptr<Bootstrap> b;
      Status s = Bootstrap::create(expect, r, n, infoFor(r), Deadline::afterSeconds(10), &b);
      ASSERT_TRUE(s.isOk()) << s.message();
      EXPECT_TRUE(b->barrier().isOk());
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  holder.release();
  setenv("WEFT_RANK", "0", 1);
  weftUniqueId id0;
  Status s = uniqueIdFromEnv(&id0, &rank, &nRanks);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(std::memcmp(&id0, &expect, sizeof(id0)), 0);
  EXPECT_EQ(commTagFromId(id0), commTagFromId(id1));
  std::unique_ptr<Bootstrap> b0;
  s = Bootstrap::create(id0, 0, n, infoFor(0), Deadline::afterSeconds(10), &b0);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_TRUE(b0->barrier().isOk());
  for (auto& t : early) t.join();
}

TEST(BootstrapEnv, ClearErrors) {
  EnvGuard guard;
  weftUniqueId id;
  int rank = -1, nRanks = -1;
  auto expectError = [&](const char* needle) {
    Status s = uniqueIdFromEnv(&id, &rank, &nRanks);
    EXPECT_EQ(s.code(), weftInvalidArgument) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("PMI_RANK");
  expectError("WEFT_RANK is not set");
  setenv("WEFT_RANK", "1", 1);
  setenv("WEFT_NRANKS", "2", 1);
  expectError("WEFT_ROOT_ADDR is not set");
  setenv("WEFT_ROOT_ADDR", "127.0.0.1", 1);
  expectError("expected host:port");
  setenv("WEFT_ROOT_ADDR", "127.0.0.1:0", 1);
  expectError("fixed port");
  setenv("WEFT_ROOT_ADDR", "127.0.0.1:29500", 1);
  expectError("WEFT_ROOT_SECRET is not set");
  setenv("WEFT_ROOT_SECRET", "0011", 1);
  expectError("WEFT_ROOT_SECRET has 4 characters");
  setenv("WEFT_ROOT_SECRET", "00112233445566778899aabbccddeefg", 1);
  expectError("'g', which is not a hex digit");
  setenv("WEFT_RANK", "2", 1);
  expectError("rank 2 is out of range for 2 ranks");
  setenv("WEFT_RANK", "1", 1);
  setenv("WEFT_ROOT_SECRET", "00112233445566778899AABBCCDDEEFF", 1);
  EXPECT_TRUE(uniqueIdFromEnv(&id, &rank, &nRanks).isOk());
}

// ---- failures after init --------------------------------------------------------------------

TEST(Bootstrap, AbortUnblocksARecvQuickly) {
  weftUniqueId id = loopbackId();
  std::atomic<bool> done{false};
  runRanks(id, 2, [&](int rank, Bootstrap& b) {
    if (rank == 0) {
      // Stay (connected) until rank 1 is through.
      while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (rank == 1) {
      uint64_t abortedAt = 0;
      std::thread aborter([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        abortedAt = nowNs();
        b.abort();
      });
      char buf[8];
      Status s = b.recv(0, 42, buf, sizeof(buf));
      uint64_t returned = nowNs();
      aborter.join();
      EXPECT_EQ(s.code(), weftRemoteError);
      EXPECT_NE(s.message().find("aborted"), std::string::npos) << s.message();
      EXPECT_LT(static_cast<double>(returned - abortedAt) / 1e9, 0.5);
      EXPECT_EQ(b.barrier().code(), weftRemoteError);
      done = true;
    }
  });
}

// A stop flag ends one wait (a transport's connect, told to stop by the communicator) the way
// abort() ends them all, and leaves the bootstrap usable.
TEST(Bootstrap, AStopFlagEndsOneRecvAndLeavesTheBootstrapUsable) {
  weftUniqueId id = loopbackId();
  runRanks(id, 2, [&](int rank, Bootstrap& b) {
    if (rank == 1) {
      std::atomic<bool> stop{false};
      std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        stop = true;
      });
      char buf[8];
      PeerExchange& exchange = b;
      Status s = exchange.recv(0, 42, buf, sizeof(buf), Deadline::afterSeconds(60), &stop);
      stopper.join();
      EXPECT_EQ(s.code(), weftRemoteError) << s.message();
      EXPECT_NE(s.message().find("aborted"), std::string::npos) << s.message();
    }
    EXPECT_TRUE(b.barrier().isOk()) << "rank " << rank;
  });
}

TEST(Bootstrap, PeerThatLeavesIsNamed) {
  weftUniqueId id = loopbackId();
  std::atomic<bool> leaving{false};
  runRanks(id, 3, [&](int rank, Bootstrap& b) {
    if (rank == 2) return;  // leaves: its Bootstrap is destroyed
    char buf[16] = {0};
    if (rank == 1) {
      Status s = b.allGather(buf, buf, 1);
      EXPECT_NE(s.code(), weftSuccess);
      return;
    }
    std::vector<char> all(3);
    Status s = b.allGather(buf, all.data(), 1);
    EXPECT_EQ(s.code(), weftRemoteError);
    EXPECT_NE(s.message().find("bootstrap: rank 2 (host-of-2:" + std::to_string(getpid()) +
                               ") closed its connection during allGather"),
              std::string::npos)
        << s.message();
    leaving = true;
  });
  EXPECT_TRUE(leaving.load());
}

TEST(Bootstrap, TimeoutAndSizeMismatchAreReported) {
  weftUniqueId id = loopbackId();
  runRanks(id, 2, [](int rank, Bootstrap& b) {
    if (rank == 0) {
      char buf[4];
      uint64_t start = nowNs();
      Status s = b.recv(1, 77, buf, sizeof(buf), Deadline::afterSeconds(0.3));
      EXPECT_EQ(s.code(), weftTimeout);
      EXPECT_NE(s.message().find("waiting for rank 1 (host-of-1:"), std::string::npos) << s.message();
      EXPECT_LT(secondsSince(start), 1.0);
      s = b.recv(1, 78, buf, sizeof(buf));
      EXPECT_EQ(s.code(), weftInvalidUsage);
      EXPECT_NE(s.message().find("sent 8 bytes with tag 78 but rank 0 expects 4"), std::string::npos) << s.message();
    } else {
      uint64_t v = 1;
      ASSERT_TRUE(b.send(0, 78, &v, sizeof(v)).isOk());
    }
    EXPECT_EQ(b.send(5, 1, nullptr, 0).code(), weftInvalidArgument);
    EXPECT_TRUE(b.barrier().isOk());
  });
}

}  // namespace
}  // namespace core
}  // namespace weft
