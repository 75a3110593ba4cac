// One fuzz input, for the wire's two readers: the bootstrap (bootstrap_driver.cc) and the socket
// transport (socket_frame_driver.cc). The first byte picks what the rest is fed to (a pure check,
// or a real listener over loopback); the driver aborts when a property fails, so the libFuzzer
// targets (bootstrap_fuzz.cc, socket_frame_fuzz.cc) and the corpus replay in ctest
// (tests/unit/wire) find the same bugs. Nothing here needs clang: the replay builds with gcc.
#ifndef WEFT_FUZZ_WIRE_DRIVERS_H_
#define WEFT_FUZZ_WIRE_DRIVERS_H_

#include <cstddef>
#include <cstdint>

namespace weft {
namespace fuzz {

// What the first byte of a bootstrap input selects (modulo kBootstrapModes).
enum BootstrapMode : uint8_t {
  kHelloRaw = 0,      // a hello as sent, checked as the root checks it
  kHelloKeyed = 1,    // the same with this id's magic, version, secret and nonce written in
  kConnHelloRaw = 2,  // a connection's introduction on a rank's listener
  kConnHelloKeyed = 3,
  kReplyTable = 4,   // the root's answer and table as a rank reads them (byte 1: nRanks)
  kFrameStream = 5,  // messages between ranks, header after header
  kRootRaw = 6,      // the bytes, sent to a live root over loopback
  kRootKeyed = 7,    // a keyed hello then the rest, sent to a live root
  kRankReply = 8,    // a live rank joining through a fake root that answers with the bytes
  kRankFrames = 9,   // a keyed introduction then the bytes, read by a live rank of three
  kProgress = 10,    // the root's progress report as rank (byte 1 % 4) of 4 reads it
  kBootstrapModes = 11
};

enum SocketMode : uint8_t {
  kFramesToReceiver = 0,  // frame headers as a receiving link reads them (byte 1: slot size)
  kFramesToSender = 1,    // what a sending link reads on the return path
  kIntroduction = 2,      // a connection's introduction to the listener
  kOffer = 3,             // a connection offer through the bootstrap
  kListenerRaw = 4,       // the bytes, sent to a live listener
  kLinkKeyed = 5,         // a valid introduction then the bytes, read by a live receiving link
  kSocketModes = 6
};

// Sets up logging (every line formatted, none shown) and loopback-only networking.
void initWireDrivers();
void bootstrapOneInput(const uint8_t* data, size_t size);
void socketFrameOneInput(const uint8_t* data, size_t size);

}  // namespace fuzz
}  // namespace weft

#endif  // WEFT_FUZZ_WIRE_DRIVERS_H_
