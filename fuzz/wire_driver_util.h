// Helpers the wire drivers share: failing loudly, reading a struct from fuzz bytes, and sending
// bytes to a live listener and waiting for it to hang up.
#ifndef WEFT_FUZZ_WIRE_DRIVER_UTIL_H_
#define WEFT_FUZZ_WIRE_DRIVER_UTIL_H_

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/socket.h"
#include "base/status.h"

namespace weft {
namespace fuzz {

// How long a listener may take to hang up on a connection that has said all it will say.
constexpr double kHangUpWithinS = 10.0;

[[noreturn]] inline void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "wire fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// A refusal must say something a person can act on.
inline void expectMessage(const Status& s, const char* what) {
  if (!s.isOk() && s.message().size() < 10) fail(what, "refused with too short a message: " + s.message());
}

// The first sizeof(T) bytes of [p, p + n), zero-padded: a short input is a truncated message.
template <typename T>
T readStruct(const uint8_t* p, size_t n) {
  T t{};
  std::memcpy(static_cast<void*>(&t), p, std::min(n, sizeof(T)));
  return t;
}

enum class HangUp { kClosed, kKeptOpen, kNoConnection };

// Sends `bytes` to `to`, half-closes, and waits for the other end to close: kKeptOpen when it
// kept the connection open past kHangUpWithinS (a hang). `answer` collects what it sent back.
inline HangUp sendAndExpectHangUp(const SocketAddress& to, const void* bytes, size_t n, std::string* answer,
                                  double connectS = 2.0) {
  Socket s;
  if (!Socket::connect(to, Deadline::afterSeconds(connectS), nullptr, &s).isOk()) return HangUp::kNoConnection;
  (void)s.sendAll(bytes, n, Deadline::afterSeconds(2));
  ::shutdown(s.fd(), SHUT_WR);
  Deadline deadline = Deadline::afterSeconds(kHangUpWithinS);
  char buf[4096];
  while (!deadline.expired()) {
    size_t got = 0;
    bool closed = false;
    if (!s.recvSome(buf, sizeof(buf), &got, &closed).isOk() || closed) return HangUp::kClosed;
    if (answer != nullptr && answer->size() < (1u << 20)) answer->append(buf, got);
    if (got == 0) {
      pollfd p{s.fd(), POLLIN, 0};
      ::poll(&p, 1, 50);
    }
  }
  return HangUp::kKeptOpen;
}

}  // namespace fuzz
}  // namespace weft

#endif  // WEFT_FUZZ_WIRE_DRIVER_UTIL_H_
