// weft-nettest `stranger HOST:PORT [HOLD_S]`: a program that is not a rank connects to the
// bootstrap root while the real ranks join, and misbehaves on several connections at once:
// garbage bytes, a hello with the right magic but a wrong secret, one whose every field is 0xff,
// a connection that says nothing, half a hello, a byte every 200 ms, connect-and-close, and a
// burst of idle connections. The root must drop each of them (the netns_fault_stranger test
// checks that the real ranks still form their communicator and run correctly).
//
// Exit status: 0 when every connection was made and the root closed each within HOLD_S; 1 when
// one stayed open; 2 when the root could not be reached at all (then nothing was tested).
// The hello layout used here is only the first eight bytes of Weft's (magic "WFBH", version 2);
// the rest is random, so the secret is wrong whatever the real layout is.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nettest.h"

namespace nettest {
namespace {

constexpr uint32_t kHelloMagic = 0x48424657u;  // "WFBH"
constexpr uint32_t kReplyMagic = 0x52424657u;  // "WFBR"
constexpr uint32_t kHelloVersion = 2;  // wire::kProtocolVersion
constexpr double kConnectWithinS = 30.0;

struct Target {
  sockaddr_storage addr{};
  socklen_t len = 0;
};

bool resolve(const std::string& hostPort, Target* t) {
  size_t colon = hostPort.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = hostPort.substr(0, colon), port = hostPort.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr) return false;
  std::memcpy(&t->addr, res->ai_addr, res->ai_addrlen);
  t->len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

// Connects, retrying while the root does not listen yet; -1 past the deadline.
int connectTo(const Target& t, double deadline) {
  for (;;) {
    int fd = ::socket(t.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&t.addr), t.len) == 0) return fd;
    ::close(fd);
    if (nowS() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool sendBytes(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

// Reads until the peer closes or `until`; returns what was read, *closed says which.
std::string readUntilClosed(int fd, double until, bool* closed) {
  std::string got;
  *closed = false;
  while (nowS() < until) {
    pollfd p{fd, POLLIN, 0};
    int ms = static_cast<int>((until - nowS()) * 1000) + 1;
    if (::poll(&p, 1, ms) <= 0) continue;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      *closed = true;
      break;
    }
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

// The root's answer to a hello, if it sent one: {magic, status, nRanks, textBytes} then text.
std::string replyText(const std::string& got) {
  if (got.size() < 16) return got.empty() ? "no answer" : "an answer of " + std::to_string(got.size()) + " bytes";
  uint32_t magic = 0, textBytes = 0;
  int32_t status = 0;
  std::memcpy(&magic, got.data(), 4);
  std::memcpy(&status, got.data() + 4, 4);
  std::memcpy(&textBytes, got.data() + 12, 4);
  if (magic != kReplyMagic) return "an answer without the reply magic";
  return "answer status " + std::to_string(status) + ": \"" + got.substr(16, textBytes) + "\"";
}

struct Report {
  std::mutex mutex;
  int failures = 0;
  void line(bool ok, const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!ok) ++failures;
    std::printf("stranger: %s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  }
};

}  // namespace

int runStranger(const char* hostPort, double holdS) {
  Target target;
  if (!resolve(hostPort, &target)) {
    std::fprintf(stderr, "stranger: cannot resolve %s (want HOST:PORT)\n", hostPort);
    return 2;
  }
  // Wait for the root to listen (rank 0 starts it), then misbehave on every front at once.
  int first = connectTo(target, nowS() + kConnectWithinS);
  if (first < 0) {
    std::fprintf(stderr, "stranger: could not connect to %s within %.0f s: %s\n", hostPort, kConnectWithinS,
                 std::strerror(errno));
    return 2;
  }
  std::printf("stranger: the root at %s accepts connections\n", hostPort);
  Report report;
  std::mt19937_64 rng(0x57a4);
  std::vector<char> noise(4096);
  for (auto& c : noise) c = static_cast<char>(rng());

  // Each behaviour gets a connected socket; it returns after the root closed it or HOLD_S.
  auto behave = [&](const char* name, int fd, std::function<void(int)> act) {
    const double t0 = nowS();
    act(fd);
    bool closed = false;
    std::string got = readUntilClosed(fd, t0 + holdS, &closed);
    ::close(fd);
    char what[512];
    std::snprintf(what, sizeof(what), "%-14s %s after %.2f s; %s", name, closed ? "closed by the root" : "STILL OPEN",
                  nowS() - t0, replyText(got).c_str());
    report.line(closed, what);
  };
  struct Probe {
    const char* name;
    std::function<void(int)> act;
  };
  std::vector<Probe> probes = {
      {"garbage", [&](int fd) { sendBytes(fd, noise.data(), 256); }},
      {"wrong-secret",
       [&](int fd) {
         std::vector<char> hello(noise);
         std::memcpy(hello.data(), &kHelloMagic, 4);
         std::memcpy(hello.data() + 4, &kHelloVersion, 4);
         sendBytes(fd, hello.data(), hello.size());
       }},
      {"silent", [](int) {}},
      // The right magic and version, then 0xff to past the end of a hello: absurd counts,
      // ranks and lengths in every field.
      {"huge-fields",
       [&](int fd) {
         std::vector<char> hello(512, '\xff');
         std::memcpy(hello.data(), &kHelloMagic, 4);
         std::memcpy(hello.data() + 4, &kHelloVersion, 4);
         sendBytes(fd, hello.data(), hello.size());
       }},
      {"half-hello",
       [&](int fd) {
         uint32_t head[2] = {kHelloMagic, kHelloVersion};
         sendBytes(fd, head, sizeof(head));
       }},
      {"slow-drip",
       [&](int fd) {
         uint32_t head[2] = {kHelloMagic, kHelloVersion};
         const char* p = reinterpret_cast<const char*>(head);
         for (size_t i = 0; i < 20; ++i) {
           if (!sendBytes(fd, i < 8 ? p + i : &noise[i], 1)) break;
           std::this_thread::sleep_for(std::chrono::milliseconds(200));
         }
       }},
  };
  std::vector<std::thread> threads;
  threads.emplace_back(behave, probes[0].name, first, probes[0].act);
  for (size_t i = 1; i < probes.size(); ++i) {
    int fd = connectTo(target, nowS() + 5);
    if (fd < 0) {
      report.line(false, std::string(probes[i].name) + " could not connect: " + std::strerror(errno));
      continue;
    }
    threads.emplace_back(behave, probes[i].name, fd, probes[i].act);
  }
  // Connect and hang up at once, ten times; then twenty idle connections held open together.
  int hangups = 0;
  for (int i = 0; i < 10; ++i) {
    int fd = connectTo(target, nowS() + 1);
    if (fd >= 0) ::close(fd), ++hangups;
  }
  std::printf("stranger: connect-and-close %d of 10 connected\n", hangups);
  std::vector<int> idle;
  for (int i = 0; i < 20; ++i) {
    int fd = connectTo(target, nowS() + 1);
    if (fd >= 0) idle.push_back(fd);
  }
  const double t0 = nowS();
  size_t closedIdle = 0;
  for (int fd : idle) {
    bool closed = false;
    readUntilClosed(fd, t0 + holdS, &closed);
    closedIdle += closed ? 1 : 0;
    ::close(fd);
  }
  char what[160];
  std::snprintf(what, sizeof(what), "idle-burst     %zu of %zu idle connections closed by the root within %.0f s",
                closedIdle, idle.size(), holdS);
  report.line(closedIdle == idle.size(), what);
  for (auto& t : threads) t.join();
  return report.failures == 0 ? 0 : 1;
}

}  // namespace nettest
