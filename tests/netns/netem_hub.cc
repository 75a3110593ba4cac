// weft-netem-hub: a slow, lossy Ethernet switch in user space, for the netns tests on kernels
// without the netem qdisc (CONFIG_NET_SCH_NETEM). netns.sh starts it in the "switch" namespace;
// it creates one TAP device per host, which netns.sh moves into that host's namespace and renames
// to eth0. The hub keeps the TAP file descriptors: every frame a host sends comes out of its fd
// here, waits in a delay line, and is written to the fd of the host it is for.
//
// Each frame read from a TAP is lost with probability --loss (independently, from a seeded PRNG
// whose seed is printed, so a run can be repeated) or otherwise delivered --delay-ms later: to
// the TAP where its destination MAC was last seen as a source, or to every other TAP when that
// MAC is unknown, broadcast or multicast. One direction takes the delay once, as netem on each
// host's eth0 would, so a ping sees twice the delay. The delay is the same for every frame, so
// one FIFO holds the frames of every source in the order they arrived, and order per source is
// kept. The FIFO is bounded (--queue-mb); a frame that would overflow it is dropped and counted.
//
// One thread: epoll over the TAPs, a timerfd armed for the head of the FIFO, and a signalfd.
// SIGTERM, SIGINT or SIGHUP prints the counters and exits 0; SIGUSR1 prints them and goes on. A
// TAP that disappears (its namespace deleted) is dropped; the hub exits when none is left.
// --exit-with-parent ends the hub (SIGTERM) when the process that started it dies, even by
// SIGKILL, so a test script killed outright leaves no hub behind.
//
// Usage: weft-netem-hub --taps N [--prefix NAME] [--delay-ms MS] [--loss PERCENT] [--seed S]
//                       [--queue-mb MB] [--exit-with-parent]
// Prints "weft-netem-hub: ready: ..." on stdout once the TAPs exist, and the counters when it
// ends. Exit status: 0 after a signal, 1 on a runtime error, 2 on a bad command line.
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr int kMaxTaps = 64;
constexpr size_t kMaxFrame = 65536 + 64;  // larger than any frame a TAP without offloads hands us
constexpr int kReadBurst = 64;            // frames taken from one TAP before looking at the others
constexpr int kFlood = -1;

struct Options {
  int taps = 0;
  std::string prefix = "hub";
  double delayMs = 200;
  double lossPercent = 1;
  uint64_t seed = 0;
  bool seedGiven = false;
  double queueMb = 64;
  bool exitWithParent = false;
};

struct Frame {
  int64_t dueNs;
  int src;
  int dst;  // a TAP index, or kFlood
  std::vector<uint8_t> bytes;
};

struct Counters {
  uint64_t received = 0;     // frames read from the TAPs
  uint64_t forwarded = 0;    // frames that left the delay line (each counts once, flooded or not)
  uint64_t flooded = 0;      // of those, how many went to every other TAP
  uint64_t lost = 0;         // dropped by --loss
  uint64_t overflow = 0;     // dropped because the delay line was full
  uint64_t filtered = 0;     // addressed to a MAC behind the TAP they came from
  uint64_t writeErrors = 0;  // copies a TAP refused (its link down, its queue full)
  uint64_t bytesForwarded = 0;
  uint64_t peakQueueBytes = 0;
  uint64_t largestFrame = 0;     // bytes; with offloads off, at most the MTU plus 14
  std::vector<uint64_t> rx, tx;  // per TAP
};

// splitmix64: small, fast, and the same sequence for the same seed everywhere.
class Prng {
 public:
  explicit Prng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void usage(FILE* to) {
  std::fprintf(to,
               "usage: weft-netem-hub --taps N [--prefix NAME] [--delay-ms MS] [--loss PERCENT] [--seed S]\n"
               "                      [--queue-mb MB] [--exit-with-parent]\n"
               "  --taps N            TAP devices to create, 1..%d, named NAME0..NAME<N-1>\n"
               "  --prefix NAME       TAP name prefix (default hub)\n"
               "  --delay-ms MS       one-way delay of every frame, 0..60000 (default 200)\n"
               "  --loss PERCENT      chance that a frame is lost, 0..100 (default 1)\n"
               "  --seed S            seed of the loss PRNG (default: from /dev/urandom; printed)\n"
               "  --queue-mb MB       most bytes waiting in the delay line, in MiB (default 64)\n"
               "  --exit-with-parent  exit when the process that started the hub dies\n",
               kMaxTaps);
}

bool parseDouble(const char* s, double lo, double hi, double* out) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parseU64(const char* s, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  if (*s == '-') return false;
  unsigned long long v = std::strtoull(s, &end, 0);
  if (errno != 0 || end == s || *end != '\0') return false;
  *out = v;
  return true;
}

// Fills opts from argv; on a bad command line prints why and returns false.
bool parseArgs(int argc, char** argv, Options* opts) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      usage(stdout);
      std::exit(0);
    }
    if (flag == "--exit-with-parent") {
      opts->exitWithParent = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "weft-netem-hub: %s needs a value\n", flag.c_str());
      return false;
    }
    const char* value = argv[++i];
    double d = 0;
    bool ok = true;
    if (flag == "--taps") {
      ok = parseDouble(value, 1, kMaxTaps, &d) && d == std::floor(d);
      opts->taps = static_cast<int>(d);
    } else if (flag == "--prefix") {
      opts->prefix = value;
      ok = !opts->prefix.empty() && opts->prefix.find_first_of("/ \t\n:") == std::string::npos;
    } else if (flag == "--delay-ms") {
      ok = parseDouble(value, 0, 60000, &opts->delayMs);
    } else if (flag == "--loss") {
      ok = parseDouble(value, 0, 100, &opts->lossPercent);
    } else if (flag == "--seed") {
      ok = parseU64(value, &opts->seed);
      opts->seedGiven = true;
    } else if (flag == "--queue-mb") {
      ok = parseDouble(value, 0.0625, 65536, &opts->queueMb);
    } else {
      std::fprintf(stderr, "weft-netem-hub: unknown option %s (see --help)\n", flag.c_str());
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "weft-netem-hub: bad value for %s: '%s' (see --help)\n", flag.c_str(), value);
      return false;
    }
  }
  if (opts->taps == 0) {
    std::fprintf(stderr, "weft-netem-hub: --taps N is required (see --help)\n");
    return false;
  }
  // Interface names hold at most IFNAMSIZ - 1 characters.
  const size_t longest = opts->prefix.size() + std::to_string(opts->taps - 1).size();
  if (longest >= IFNAMSIZ) {
    std::fprintf(stderr, "weft-netem-hub: --prefix '%s' is too long: TAP names hold at most %d characters\n",
                 opts->prefix.c_str(), IFNAMSIZ - 1);
    return false;
  }
  return true;
}

// Opens /dev/net/tun and attaches a new TAP device `name` (Ethernet frames, no packet-info header).
int openTap(const std::string& name) {
  int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr,
                 "weft-netem-hub: cannot open /dev/net/tun: %s; the kernel needs CONFIG_TUN and the hub "
                 "CAP_NET_ADMIN (run it as root)\n",
                 std::strerror(errno));
    return -1;
  }
  ifreq ifr;
  std::memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
  std::snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name.c_str());
  if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
    std::fprintf(stderr, "weft-netem-hub: cannot create TAP device %s (TUNSETIFF): %s\n", name.c_str(),
                 std::strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

uint64_t macKey(const uint8_t* mac) {
  uint64_t k = 0;
  for (int i = 0; i < 6; ++i) k = (k << 8) | mac[i];
  return k;
}

class Hub {
 public:
  Hub(const Options& opts, std::vector<int> tapFds)
      : opts_(opts),
        taps_(std::move(tapFds)),
        liveTaps_(taps_.size()),
        prng_(opts.seed),
        delayNs_(static_cast<int64_t>(std::llround(opts.delayMs * 1e6))),
        lossP_(opts.lossPercent / 100.0),
        queueLimit_(static_cast<uint64_t>(opts.queueMb * 1024 * 1024)) {
    counters_.rx.assign(taps_.size(), 0);
    counters_.tx.assign(taps_.size(), 0);
  }

  // Runs until a signal ends it or every TAP is gone; returns the exit status.
  int run(int signalFd) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int timerFd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (ep < 0 || timerFd < 0) {
      std::fprintf(stderr, "weft-netem-hub: epoll_create1/timerfd_create: %s\n", std::strerror(errno));
      return 1;
    }
    // epoll data: 0..N-1 a TAP, N the timer, N+1 the signals.
    const uint64_t timerTag = taps_.size(), signalTag = taps_.size() + 1;
    auto watch = [&](int fd, uint64_t tag) {
      epoll_event ev;
      std::memset(&ev, 0, sizeof ev);
      ev.events = EPOLLIN;
      ev.data.u64 = tag;
      return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0;
    };
    bool ok = watch(timerFd, timerTag) && watch(signalFd, signalTag);
    for (size_t i = 0; ok && i < taps_.size(); ++i) ok = watch(taps_[i], i);
    if (!ok) {
      std::fprintf(stderr, "weft-netem-hub: epoll_ctl: %s\n", std::strerror(errno));
      return 1;
    }
    std::vector<uint8_t> scratch(kMaxFrame);
    int64_t armedFor = 0;  // due time the timer is set to, 0 when disarmed
    epoll_event events[kMaxTaps + 2];
    for (;;) {
      int n = epoll_wait(ep, events, kMaxTaps + 2, -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        std::fprintf(stderr, "weft-netem-hub: epoll_wait: %s\n", std::strerror(errno));
        return 1;
      }
      for (int e = 0; e < n; ++e) {
        const uint64_t tag = events[e].data.u64;
        if (tag == signalTag) {
          signalfd_siginfo si;
          while (read(signalFd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
            const int sig = static_cast<int>(si.ssi_signo);
            printCounters(sig == SIGUSR1 ? "SIGUSR1" : sig == SIGINT ? "SIGINT" : sig == SIGHUP ? "SIGHUP" : "SIGTERM");
            if (sig != SIGUSR1) return 0;
          }
        } else if (tag == timerTag) {
          uint64_t expirations;
          (void)!read(timerFd, &expirations, sizeof expirations);
          armedFor = 0;
        } else if (!readFrom(static_cast<int>(tag), scratch.data())) {
          // The TAP is gone (its namespace deleted): stop watching it, or epoll reports it forever.
          epoll_ctl(ep, EPOLL_CTL_DEL, taps_[tag], nullptr);
          close(taps_[tag]);
          taps_[tag] = -1;
          if (--liveTaps_ == 0) {
            printCounters("every TAP is gone");
            return 0;
          }
        }
      }
      deliverDue(nowNs());
      // Wake up when the oldest waiting frame is due (the FIFO is in due order).
      if (!line_.empty() && line_.front().dueNs != armedFor) {
        armedFor = line_.front().dueNs;
        itimerspec its;
        std::memset(&its, 0, sizeof its);
        its.it_value.tv_sec = armedFor / 1000000000;
        its.it_value.tv_nsec = armedFor % 1000000000;
        timerfd_settime(timerFd, TFD_TIMER_ABSTIME, &its, nullptr);
      }
    }
  }

  void printCounters(const char* why) {
    const double lostPct = counters_.received ? 100.0 * counters_.lost / counters_.received : 0.0;
    std::printf("weft-netem-hub: %s: received %" PRIu64 " frames, forwarded %" PRIu64 " (%" PRIu64 " bytes, %" PRIu64
                " flooded), lost %" PRIu64 " (%.2f%%), dropped %" PRIu64 " on overflow, %" PRIu64 " filtered, %" PRIu64
                " write errors, %zu still queued, peak queue %" PRIu64 " bytes, largest frame %" PRIu64 " bytes;",
                why, counters_.received, counters_.forwarded, counters_.bytesForwarded, counters_.flooded,
                counters_.lost, lostPct, counters_.overflow, counters_.filtered, counters_.writeErrors, line_.size(),
                counters_.peakQueueBytes, counters_.largestFrame);
    for (size_t i = 0; i < taps_.size(); ++i) {
      std::printf(" %s%zu rx %" PRIu64 " tx %" PRIu64, opts_.prefix.c_str(), i, counters_.rx[i], counters_.tx[i]);
    }
    std::printf("\n");
    std::fflush(stdout);
  }

 private:
  // Takes up to kReadBurst frames from TAP `src` into the delay line; false when the TAP is gone.
  bool readFrom(int src, uint8_t* buf) {
    for (int k = 0; k < kReadBurst; ++k) {
      ssize_t len = read(taps_[src], buf, kMaxFrame);
      if (len < 0) {
        if (errno == EAGAIN || errno == EINTR) return true;
        std::fprintf(stderr, "weft-netem-hub: read from %s%d: %s; no longer forwarding to or from it\n",
                     opts_.prefix.c_str(), src, std::strerror(errno));
        return false;
      }
      if (len < 14) continue;  // shorter than an Ethernet header
      ++counters_.received;
      if (static_cast<uint64_t>(len) > counters_.largestFrame) counters_.largestFrame = static_cast<uint64_t>(len);
      ++counters_.rx[src];
      const uint8_t* dstMac = buf;
      const uint8_t* srcMac = buf + 6;
      // Learn where the sender lives (unicast sources only).
      if ((srcMac[0] & 1) == 0) macTable_[macKey(srcMac)] = src;
      // Draw for every frame, lost or not, so that the sequence depends only on the seed and the traffic.
      if (prng_.uniform() < lossP_) {
        ++counters_.lost;
        continue;
      }
      int dst = kFlood;
      if ((dstMac[0] & 1) == 0) {
        auto it = macTable_.find(macKey(dstMac));
        if (it != macTable_.end()) dst = it->second;
      }
      if (dst == src) {  // a switch does not send a frame back where it came from
        ++counters_.filtered;
        continue;
      }
      if (queuedBytes_ + static_cast<uint64_t>(len) > queueLimit_) {
        ++counters_.overflow;
        continue;
      }
      queuedBytes_ += static_cast<uint64_t>(len);
      if (queuedBytes_ > counters_.peakQueueBytes) counters_.peakQueueBytes = queuedBytes_;
      line_.push_back(Frame{nowNs() + delayNs_, src, dst, std::vector<uint8_t>(buf, buf + len)});
    }
    return true;
  }

  // Writes every frame due by `now` to its TAP (or to every TAP but its source).
  void deliverDue(int64_t now) {
    while (!line_.empty() && line_.front().dueNs <= now) {
      Frame& f = line_.front();
      if (f.dst == kFlood) {
        ++counters_.flooded;
        for (size_t i = 0; i < taps_.size(); ++i) {
          if (static_cast<int>(i) != f.src) writeTo(static_cast<int>(i), f.bytes);
        }
      } else {
        writeTo(f.dst, f.bytes);
      }
      ++counters_.forwarded;
      counters_.bytesForwarded += f.bytes.size();
      queuedBytes_ -= f.bytes.size();
      line_.pop_front();
    }
  }

  void writeTo(int dst, const std::vector<uint8_t>& bytes) {
    if (taps_[dst] < 0) return;
    if (write(taps_[dst], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size())) {
      ++counters_.tx[dst];
    } else {
      ++counters_.writeErrors;  // e.g. EIO while that host's eth0 is down
    }
  }

  const Options opts_;
  std::vector<int> taps_;  // -1 once a TAP is gone
  size_t liveTaps_;
  Prng prng_;
  const int64_t delayNs_;
  const double lossP_;
  const uint64_t queueLimit_;
  std::deque<Frame> line_;  // the delay line, in due order
  uint64_t queuedBytes_ = 0;
  std::unordered_map<uint64_t, int> macTable_;  // MAC -> the TAP it was last seen coming from
  Counters counters_;
};

uint64_t randomSeed() {
  uint64_t seed = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)!read(fd, &seed, sizeof seed);
    close(fd);
  }
  return seed ^ static_cast<uint64_t>(nowNs());
}

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  if (!parseArgs(argc, argv, &opts)) return 2;
  if (!opts.seedGiven) opts.seed = randomSeed();

  // Signals arrive through a signalfd; block them first so none is lost before it exists.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGUSR1, SIGHUP}) sigaddset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int signalFd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signalFd < 0) {
    std::fprintf(stderr, "weft-netem-hub: signalfd: %s\n", std::strerror(errno));
    return 1;
  }
  if (opts.exitWithParent) {
    const pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) return 0;  // the parent died before the line above took effect
  }

  std::vector<int> fds;
  std::string names;
  for (int i = 0; i < opts.taps; ++i) {
    const std::string name = opts.prefix + std::to_string(i);
    int fd = openTap(name);
    if (fd < 0) return 1;  // the kernel removes the TAPs made so far when their fds close
    fds.push_back(fd);
    names += (i ? " " : "") + name;
  }
  Hub hub(opts, std::move(fds));
  std::printf("weft-netem-hub: ready: %d TAPs (%s), delay %g ms each way, loss %g%%, seed 0x%016" PRIx64
              ", queue limit %g MiB\n",
              opts.taps, names.c_str(), opts.delayMs, opts.lossPercent, opts.seed, opts.queueMb);
  std::fflush(stdout);
  return hub.run(signalFd);
}
