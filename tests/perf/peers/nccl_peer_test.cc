// weft-perf --compare nccl's peer (perf/peer_nccl.cc): without a GPU, a driver, the CUDA runtime
// or NCCL, every rank skips alike with a reason; with a GPU, one rank's all-reduce is exact.
// Ranks are threads meeting through an in-process bootstrap.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "perf/peer_libs.h"

namespace weft::perf {
namespace {

// What n thread ranks share: a generation barrier and one broadcast slot.
class Rendezvous {
 public:
  explicit Rendezvous(int n) : n_(n) {}
  int size() const { return n_; }
  void barrier() {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t gen = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != gen; });
  }
  void put(const void* data, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    slot_.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
  }
  void get(void* data, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    std::memcpy(data, slot_.data(), bytes);
  }

 private:
  const int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<char> slot_;
};

class ThreadBootstrap : public PeerBootstrap {
 public:
  ThreadBootstrap(Rendezvous& rv, int rank) : rv_(rv), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return rv_.size(); }
  PeerStatus broadcast(void* data, size_t bytes, int root) override {
    if (rank_ == root) rv_.put(data, bytes);
    rv_.barrier();
    if (rank_ != root) rv_.get(data, bytes);
    rv_.barrier();  // nobody overwrites the slot before every rank has read it
    return PeerStatus::success();
  }
  PeerStatus barrier() override {
    rv_.barrier();
    return PeerStatus::success();
  }

 private:
  Rendezvous& rv_;
  int rank_;
};

// makePeer("nccl") on n thread ranks; each rank's status and peer.
struct Made {
  std::vector<PeerStatus> status;
  std::vector<std::unique_ptr<PeerLib>> peers;
};
Made makeOnThreads(int n) {
  Rendezvous rv(n);
  Made m;
  m.status.resize(static_cast<size_t>(n));
  m.peers.resize(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ThreadBootstrap boot(rv, r);
      m.status[static_cast<size_t>(r)] = makePeer("nccl", PeerSettings{}, boot, &m.peers[static_cast<size_t>(r)]);
    });
  }
  for (std::thread& t : threads) t.join();
  return m;
}

TEST(PeerNccl, IsRegistered) {
  const std::vector<std::string> built = builtPeers();
  EXPECT_NE(std::find(built.begin(), built.end(), "nccl"), built.end());
}

// No GPU here: every rank gets the same "skipped: <why>", and none waits for the others in NCCL.
TEST(PeerNccl, EveryRankSkipsAlikeWithoutAGpu) {
  const Made probe = makeOnThreads(1);
  if (probe.status[0].ok) GTEST_SKIP() << "a GPU and NCCL are present: " << probe.peers[0]->description();
  const Made m = makeOnThreads(3);
  for (int r = 0; r < 3; ++r) {
    const PeerStatus& s = m.status[static_cast<size_t>(r)];
    ASSERT_FALSE(s.ok) << "rank " << r;
    EXPECT_EQ(s.error.rfind("skipped: ", 0), 0u) << s.error;
    EXPECT_EQ(s.error, m.status[0].error) << "rank " << r;
    EXPECT_EQ(m.peers[static_cast<size_t>(r)], nullptr);
  }
  // The reason names what is missing: the runtime, a device, or NCCL.
  const std::string& why = m.status[0].error;
  EXPECT_TRUE(why.find("cudaGetDeviceCount") != std::string::npos || why.find("libcudart") != std::string::npos ||
              why.find("libnccl") != std::string::npos || why.find("lacks") != std::string::npos)
      << why;
  EXPECT_EQ(why.find("rank "), std::string::npos) << "every rank agreed, so no rank is singled out: " << why;
}

// With a GPU: one rank's all-reduce (host buffers staged through the device) returns its input.
TEST(PeerNccl, OneRankAllReduceOnTheGpu) {
  Made m = makeOnThreads(1);
  if (!m.status[0].ok) GTEST_SKIP() << "no GPU for NCCL: " << m.status[0].error;
  std::vector<float> in(1000), out(1000, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 97);
  PeerCall c;
  c.send = in.data();
  c.recv = out.data();
  c.count = in.size();
  const PeerStatus s = m.peers[0]->run(c);
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(out, in);
  // In place too.
  c.send = c.recv = in.data();
  const std::vector<float> before = in;
  ASSERT_TRUE(m.peers[0]->run(c).ok);
  EXPECT_EQ(in, before);
}

}  // namespace
}  // namespace weft::perf
