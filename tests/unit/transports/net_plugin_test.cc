// Loading network plugins (include/weft/net_v1.h, transports/net/net_plugin.h): the loopback
// plugin built beside this test loads and initialises; each broken one (no such file, no
// weftNetPlugin_v1 symbol, a table shorter than version 1's, an unset entry, a wrong version,
// an init that fails) is refused with a sentence naming the library and what to do. The
// Connection contract over a working plugin is in conformance_test.cc.
#include "transports/net/net_plugin.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "mailboxes.h"

namespace weft {
namespace net {
namespace {

std::string pluginPath(const char* variant) {
  return std::string(WEFT_TEST_NET_PLUGIN_DIR) + "/libweft_test_net_" + variant + ".so";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(NetPlugin, TheLoopbackPluginLoadsOnceAndInitialises) {
  const NetPlugin* plugin = nullptr;
  Status st = loadNetPlugin(pluginPath("loopback"), &plugin);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(plugin->name, "loopback");
  EXPECT_EQ(plugin->devices, 1);
  EXPECT_EQ(plugin->ops.size, sizeof(weftNet_v1_t));
  const NetPlugin* again = nullptr;
  ASSERT_TRUE(loadNetPlugin(pluginPath("loopback"), &again).isOk());
  EXPECT_EQ(again, plugin);
}

TEST(NetPlugin, AMissingLibraryNamesThePathAndTheWayOut) {
  const NetPlugin* plugin = nullptr;
  Status st = loadNetPlugin("/nonexistent/libnothing.so", &plugin);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), weftSystemError);
  EXPECT_TRUE(contains(st.message(), "WEFT_NET_PLUGIN=/nonexistent/libnothing.so cannot be loaded")) << st.message();
  EXPECT_TRUE(contains(st.message(), "unset WEFT_NET_PLUGIN")) << st.message();
}

TEST(NetPlugin, ALibraryWithoutTheSymbolIsNotAPlugin) {
  const NetPlugin* plugin = nullptr;
  Status st = loadNetPlugin(pluginPath("no_symbol"), &plugin);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), weftInvalidArgument);
  EXPECT_TRUE(contains(st.message(), "has no symbol weftNetPlugin_v1")) << st.message();
}

TEST(NetPlugin, ATableShorterThanVersionOnesIsRefused) {
  const NetPlugin* plugin = nullptr;
  Status st = loadNetPlugin(pluginPath("short_table"), &plugin);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), weftInvalidArgument);
  EXPECT_TRUE(contains(st.message(), "needs at least " + std::to_string(sizeof(weftNet_v1_t)))) << st.message();
  EXPECT_TRUE(contains(st.message(), "rebuild the plugin")) << st.message();
}

TEST(NetPlugin, AnInitThatFailsIsReportedAndRemembered) {
  const NetPlugin* plugin = nullptr;
  Status st = loadNetPlugin(pluginPath("init_fails"), &plugin);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), weftSystemError);
  EXPECT_TRUE(contains(st.message(), "(loopback): init failed (weftSystemError)")) << st.message();
  Status again = loadNetPlugin(pluginPath("init_fails"), &plugin);
  EXPECT_EQ(again.message(), st.message());
}

TEST(NetPlugin, TablesAreCheckedEntryByEntry) {
  const NetPlugin* plugin = nullptr;
  ASSERT_TRUE(loadNetPlugin(pluginPath("loopback"), &plugin).isOk());
  weftNet_v1_t t = plugin->ops;
  EXPECT_TRUE(checkNetPluginTable(&t, "x.so").isOk());
  // A newer plugin's longer table is fine: Weft uses the entries it knows.
  t.size = sizeof(weftNet_v1_t) + 64;
  EXPECT_TRUE(checkNetPluginTable(&t, "x.so").isOk());
  t.size = sizeof(weftNet_v1_t);
  t.version = 2;
  Status st = checkNetPluginTable(&t, "x.so");
  EXPECT_TRUE(contains(st.message(), "says version 2")) << st.message();
  t.version = WEFT_NET_PLUGIN_VERSION_V1;
  t.isend = nullptr;
  st = checkNetPluginTable(&t, "x.so");
  EXPECT_TRUE(contains(st.message(), "WEFT_NET_PLUGIN=x.so: its weftNetPlugin_v1 table leaves isend unset"))
      << st.message();
  t = plugin->ops;
  t.finalize = nullptr;  // the one optional entry
  EXPECT_TRUE(checkNetPluginTable(&t, "x.so").isOk());
}

// Sets an environment variable for the scope.
class EnvGuard {
 public:
  EnvGuard(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~EnvGuard() {
    if (had_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

PeerInfo info(int rank, uint64_t host) {
  PeerInfo p;
  p.rank = rank;
  p.hostHash = host;
  p.processHash = 0x2000 + static_cast<uint64_t>(rank);
  std::snprintf(p.hostName, sizeof(p.hostName), "host%d", rank);
  return p;
}

TEST(PluginTransport, TakesNetworkedPairsOnlyWhenAPluginIsNamed) {
  PluginTransport t;
  EXPECT_STREQ(t.name(), "net-plugin");
  {
    EnvGuard none("WEFT_NET_PLUGIN", "");
    EXPECT_FALSE(t.canConnect(info(0, 1), info(1, 2)));
  }
  EnvGuard plugin("WEFT_NET_PLUGIN", pluginPath("loopback"));
  EnvGuard shm("WEFT_SHM_DISABLE", "0");
  EXPECT_TRUE(t.canConnect(info(0, 1), info(1, 2)));
  EXPECT_FALSE(t.canConnect(info(0, 1), info(1, 1)));
  EnvGuard noShm("WEFT_SHM_DISABLE", "1");
  EXPECT_TRUE(t.canConnect(info(0, 1), info(1, 1)));
  // Ahead of the built-in network transports.
  auto transports = makeTransports();
  int plugins = -1, sockets = -1;
  for (size_t i = 0; i < transports.size(); ++i) {
    if (std::string(transports[i]->name()) == "net-plugin") plugins = static_cast<int>(i);
    if (std::string(transports[i]->name()) == "socket") sockets = static_cast<int>(i);
  }
  ASSERT_GE(plugins, 0);
  EXPECT_LT(plugins, sockets);
}

TEST(PluginTransport, ABrokenPluginFailsTheConnectionWithTheLoadersSentence) {
  EnvGuard plugin("WEFT_NET_PLUGIN", pluginPath("no_symbol"));
  test_util::Mailboxes boxes;
  test_util::Exchange ex(&boxes, 1);
  ConnectRequest req;
  req.commTag = "plugintest";
  req.self = info(1, 2);
  req.peer = info(0, 1);
  req.deadline = Deadline::afterSeconds(5);
  req.exchange = &ex;
  PluginTransport t;
  std::unique_ptr<Connection> conn;
  Status st = t.connectRecv(req, &conn);
  ASSERT_FALSE(st.isOk());
  EXPECT_TRUE(contains(st.message(), "has no symbol weftNetPlugin_v1")) << st.message();
  EXPECT_EQ(conn, nullptr);
}

}  // namespace
}  // namespace net
}  // namespace weft
