// The socket transport's wire checks (transports/net/socket_wire.h): frame headers in both
// directions, the introduction on the listener and the connection offer.
#include "transports/net/socket_wire.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace weft {
namespace net {
namespace {

FrameHeader frame(uint32_t magic, uint32_t type, uint64_t bytes) {
  FrameHeader h;
  h.magic = magic;
  h.type = type;
  h.bytes = bytes;
  return h;
}

std::string refusal(const FrameHeader& h, bool receiving, size_t slotBytes = 1024) {
  FrameHeader out;
  Status s = parseFrameHeader(&h, sizeof(h), receiving, slotBytes, &out);
  return s.isOk() ? "" : s.message();
}

TEST(SocketWire, FrameHeaders) {
  EXPECT_EQ(refusal(frame(kFrameMagic, kFrameData, 1024), true), "");
  EXPECT_EQ(refusal(frame(kFrameMagic, kFrameData, 0), true), "");
  EXPECT_EQ(refusal(frame(kFrameMagic, kFrameAbort, 3), true), "");
  EXPECT_EQ(refusal(frame(kFrameMagic, kFrameAbort, 3), false), "") << "aborts travel both ways";
  EXPECT_NE(refusal(frame(kFrameMagic, kFrameData, 1025), true).find("1025 bytes where slots hold 1024"),
            std::string::npos);
  EXPECT_NE(refusal(frame(kFrameMagic, kFrameData, UINT64_MAX), true).find("where slots hold"), std::string::npos);
  EXPECT_NE(refusal(frame(kFrameMagic, kFrameData, 4), false).find("return path"), std::string::npos);
  EXPECT_NE(refusal(frame(0x50545448, kFrameData, 4), true).find("magic 0x50545448"), std::string::npos);
  EXPECT_NE(refusal(frame(kFrameMagic, kFrameCredit, 1), true).find("acknowledgement (1 messages) on the connection's data path"), std::string::npos)
      << "acknowledgements travel only to the sender";
  EXPECT_EQ(refusal(frame(kFrameMagic, kFrameCredit, 7), false), "") << "the receiver acknowledges released messages";
  EXPECT_NE(refusal(frame(kFrameMagic, 4, 1), false).find("type 4"), std::string::npos);
  FrameHeader h = frame(kFrameMagic, kFrameData, 1), out;
  EXPECT_FALSE(parseFrameHeader(&h, sizeof(h) - 1, true, 1024, &out).isOk()) << "a short header";
}

TEST(SocketWire, AbortCulprit) {
  EXPECT_EQ(abortCulprit(frame(kFrameMagic, kFrameAbort, 0)), -1);
  EXPECT_EQ(abortCulprit(frame(kFrameMagic, kFrameAbort, 1)), 0);
  EXPECT_EQ(abortCulprit(frame(kFrameMagic, kFrameAbort, 8)), 7);
  EXPECT_EQ(abortCulprit(frame(kFrameMagic, kFrameAbort, kMaxAbortCulprit + 1)), -1);
  EXPECT_EQ(abortCulprit(frame(kFrameMagic, kFrameData, 8)), -1);
}

TEST(SocketWire, IntroductionAndOffer) {
  SocketHello h;
  h.magic = kSocketHelloMagic;
  h.senderRank = 3;
  h.lane = 1;
  EXPECT_TRUE(checkSocketHello(h, 3, 1).isOk());
  EXPECT_NE(checkSocketHello(h, 3, 0).message().find("introduced itself as rank 3 lane 1"), std::string::npos);
  SocketHello http;
  std::memcpy(&http, "GET / HTTP/1.0\r\n\r\n\r\n\r\n\r\n", sizeof(http));
  EXPECT_TRUE(checkSocketHelloPrefix(http, 7).isOk()) << "seven bytes say nothing yet";
  EXPECT_NE(checkSocketHelloPrefix(http, 8).message().find("not a Weft introduction"), std::string::npos);

  SocketOffer o;
  o.magic = kSocketOfferMagic;
  o.address = SocketAddress::loopbackV4(9);
  o.lane = 2;
  o.receiverRank = 5;
  EXPECT_TRUE(checkSocketOffer(o, 5, 2).isOk());
  EXPECT_FALSE(checkSocketOffer(o, 4, 2).isOk());
  EXPECT_FALSE(checkSocketOffer(o, 5, 1).isOk());
  SocketOffer noAddress = o;
  noAddress.address = SocketAddress();
  EXPECT_NE(checkSocketOffer(noAddress, 5, 2).message().find("same WEFT_NET"), std::string::npos);
}

}  // namespace
}  // namespace net
}  // namespace weft
