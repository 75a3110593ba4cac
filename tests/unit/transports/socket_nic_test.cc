// Which interface the socket transport uses for the NIC a route names (socket_nic.h): by name,
// through an RDMA device's network interfaces, never when WEFT_SOCKET_IFNAME excludes it, and
// with a reason when there is none.
#include "transports/net/socket_nic.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures/fake_interface.h"

namespace weft {
namespace net {
namespace {

using weft_test::fakeInterface;

const std::vector<NetInterface>& host() {
  static const std::vector<NetInterface> list = {
      fakeInterface("lo", "127.0.0.1", true), fakeInterface("eth0", "198.18.0.1"), fakeInterface("nic0", "fe80::1"), fakeInterface("nic0", "198.18.1.1"),
      fakeInterface("nic1", "fd00::7"),       fakeInterface("ib0", "198.18.3.1"),  fakeInterface("ib1", "fe80::9"),
  };
  return list;
}

TEST(SocketNic, AnInterfaceOfThatNameWithItsIPv4Address) {
  NicInterface n = chooseNicInterface("nic0", host(), {}, "");
  ASSERT_TRUE(n.usable) << n.why;
  EXPECT_EQ(n.iface.name, "nic0");
  EXPECT_EQ(n.iface.address.hostString(), "198.18.1.1");  // not the link-local IPv6 one
  n = chooseNicInterface("nic1", host(), {}, "");
  ASSERT_TRUE(n.usable) << n.why;
  EXPECT_EQ(n.iface.address.hostString(), "fd00::7");
}

TEST(SocketNic, ExactNamesOnly) {
  // "nic" is a prefix of nic0 and nic1, but names no interface.
  NicInterface n = chooseNicInterface("nic", host(), {}, "");
  EXPECT_FALSE(n.usable);
  EXPECT_NE(n.why.find("no interface named nic "), std::string::npos) << n.why;
}

TEST(SocketNic, AnRdmaDeviceThroughItsNetworkInterfaces) {
  // mlx5_0 is no interface; sysfs says its port is ib1 (link-local only) and ib0.
  NicInterface n = chooseNicInterface("mlx5_0", host(), {"ib1", "ib0"}, "");
  ASSERT_TRUE(n.usable) << n.why;
  EXPECT_EQ(n.iface.name, "ib0");
  EXPECT_EQ(n.iface.address.hostString(), "198.18.3.1");
  n = chooseNicInterface("mlx5_1", host(), {"ib1"}, "");
  EXPECT_FALSE(n.usable);
  EXPECT_NE(n.why.find("mlx5_1"), std::string::npos) << n.why;
  EXPECT_NE(n.why.find("RDMA device"), std::string::npos) << n.why;
}

TEST(SocketNic, WeftSocketIfnameMustSelectItToo) {
  EXPECT_TRUE(chooseNicInterface("nic0", host(), {}, "nic").usable);
  EXPECT_TRUE(chooseNicInterface("nic0", host(), {}, "^eth").usable);
  NicInterface n = chooseNicInterface("nic0", host(), {}, "eth0");
  EXPECT_FALSE(n.usable);
  EXPECT_NE(n.why.find("WEFT_SOCKET_IFNAME=\"eth0\" excludes its interface nic0"), std::string::npos) << n.why;
  EXPECT_FALSE(chooseNicInterface("nic0", host(), {}, "^=nic0").usable);
}

TEST(SocketNic, NoNicOrANameThatIsNoInterfaceName) {
  NicInterface n = chooseNicInterface("", host(), {}, "");
  EXPECT_FALSE(n.usable);
  EXPECT_NE(n.why.find("names no NIC"), std::string::npos) << n.why;
  for (const char* bad : {"../eth0", "eth0 ", ".", "..", "a_name_longer_than_ifnamsiz"}) {
    n = chooseNicInterface(bad, host(), {}, "");
    EXPECT_FALSE(n.usable) << bad;
    EXPECT_NE(n.why.find("not the name of a network interface"), std::string::npos) << bad << ": " << n.why;
  }
  // Interfaces a device lists with such names are skipped, not looked for.
  EXPECT_FALSE(chooseNicInterface("mlx5_0", host(), {"../eth0"}, "").usable);
  EXPECT_TRUE(netdevsOfRdmaDevice("../../../etc").empty());
  EXPECT_TRUE(netdevsOfRdmaDevice("").empty());
}

TEST(SocketNic, TheLoopbackAsANic) {
  NicInterface n = chooseNicInterface("lo", host(), {}, "");
  ASSERT_TRUE(n.usable) << n.why;
  EXPECT_EQ(n.iface.address.hostString(), "127.0.0.1");
}

}  // namespace
}  // namespace net
}  // namespace weft
