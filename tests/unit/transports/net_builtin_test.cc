// Weft's built-in network tables (transports/net/net_builtin.h) at the net_v1.h level, the way
// the generic plugin transport uses them (and the way it uses a vendor's): they pass the
// loader's checks; messages posted ahead of their receives arrive whole, in order, with exact
// bytes; a message longer than its receive is an error; a connection that presents a token its
// listener did not issue is dropped and the real one still accepted. The Connection contract
// through these tables is in conformance_test.cc (instances net_socket_v1, net_ofi_v1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/os.h"
#include "transports/net/net_builtin.h"
#include "transports/net/net_plugin.h"
#include "transports/net/net_select.h"
#include "transports/net/ofi_api.h"
#include "transports/net/ofi_provider.h"

namespace weft {
namespace net {
namespace {

// Both built-in handles carry their listener's token in bytes 8..15.
constexpr size_t kTokenOffset = 8;

struct TableCase {
  const char* name;
  const weftNet_v1_t* (*table)();
};

std::string unavailable(const TableCase& c) {
  if (std::string(c.name) != "ofi") return "";
  std::string why;
  const OfiApi* api = ofiApi(&why);
  if (api == nullptr) return "libfabric cannot be loaded: " + why;
  std::vector<std::string> names = ofiAvailableProviders(*api);
  if (std::find(names.begin(), names.end(), "tcp;ofi_rxm") == names.end()) return "no tcp;ofi_rxm provider here";
  return "";
}

class BuiltinTable : public ::testing::TestWithParam<TableCase> {
 protected:
  void SetUp() override {
    std::string why = unavailable(GetParam());
    if (!why.empty()) GTEST_SKIP() << why;
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    setenv("WEFT_OFI_PROVIDER", "tcp;ofi_rxm", 1);
    const NetPlugin* plugin = nullptr;
    Status st = builtinNetPlugin(GetParam().table(), &plugin);
    ASSERT_TRUE(st.isOk()) << st.message();
    t_ = &plugin->ops;
  }
  void TearDown() override {
    for (void* c : sends_) t_->closeSend(c);
    for (void* c : recvs_) t_->closeRecv(c);
    for (void* c : listens_) t_->closeListen(c);
  }

  void listen(std::vector<unsigned char>* handle) {
    handle->assign(WEFT_NET_HANDLE_BYTES_V1, 0);
    void* l = nullptr;
    ASSERT_EQ(t_->listen(0, handle->data(), &l), weftSuccess);
    listens_.push_back(l);
  }
  // Connects with `handle` and accepts on the last listener until both ends exist (or `acceptS`
  // seconds passed: *recv stays NULL).
  void connect(const std::vector<unsigned char>& handle, void** send, void** recv, double acceptS = 10) {
    *send = *recv = nullptr;
    Deadline deadline = Deadline::afterSeconds(acceptS);
    while ((*send == nullptr || *recv == nullptr) && !deadline.expired()) {
      if (*send == nullptr) ASSERT_EQ(t_->connect(0, handle.data(), send), weftSuccess);
      if (*recv == nullptr) ASSERT_EQ(t_->accept(listens_.back(), recv), weftSuccess);
    }
    if (*send) sends_.push_back(*send);
    if (*recv) recvs_.push_back(*recv);
  }
  // Posts until the table takes it.
  void* post(bool sending, void* comm, void* data, size_t size) {
    void* request = nullptr;
    Deadline deadline = Deadline::afterSeconds(10);
    while (request == nullptr && !deadline.expired()) {
      weftResult_t r = sending ? t_->isend(comm, data, size, 0, &request) : t_->irecv(comm, data, size, 0, &request);
      EXPECT_EQ(r, weftSuccess);
      if (r != weftSuccess) return nullptr;
    }
    return request;
  }
  // Tests every request until all completed: their results, and sizes in *sizes.
  std::vector<weftResult_t> waitAll(std::vector<void*> requests, std::vector<size_t>* sizes) {
    std::vector<weftResult_t> results(requests.size(), weftSuccess);
    sizes->assign(requests.size(), 0);
    Deadline deadline = Deadline::afterSeconds(20);
    size_t left = requests.size();
    while (left > 0 && !deadline.expired()) {
      for (size_t i = 0; i < requests.size(); ++i) {
        if (requests[i] == nullptr) continue;
        int done = 0;
        results[i] = t_->test(requests[i], &done, &(*sizes)[i]);
        if (results[i] != weftSuccess || done) {
          requests[i] = nullptr;
          --left;
        }
      }
    }
    EXPECT_EQ(left, 0u) << "requests still open after 20 s";
    return results;
  }

  const weftNet_v1_t* t_ = nullptr;
  std::vector<void*> sends_, recvs_, listens_;
};

TEST_P(BuiltinTable, PassesTheLoadersChecks) {
  const weftNet_v1_t* table = GetParam().table();
  EXPECT_TRUE(checkNetPluginTable(table, "built-in").isOk());
  EXPECT_EQ(table->size, sizeof(weftNet_v1_t));
  EXPECT_EQ(table->version, static_cast<uint32_t>(WEFT_NET_PLUGIN_VERSION_V1));
  EXPECT_STREQ(table->name, GetParam().name);
  weftNetProperties_v1_t props{};
  ASSERT_EQ(t_->getProperties(0, &props), weftSuccess);
  EXPECT_EQ(props.ptrSupport, WEFT_NET_PTR_HOST);
  EXPECT_STREQ(props.name, "lo");
}

TEST_P(BuiltinTable, MessagesPostedAheadOfTheirReceivesArriveWholeAndInOrder) {
  std::vector<unsigned char> handle;
  ASSERT_NO_FATAL_FAILURE(listen(&handle));
  void *send = nullptr, *recv = nullptr;
  ASSERT_NO_FATAL_FAILURE(connect(handle, &send, &recv));
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  const std::vector<size_t> sizes = {0, 1, 100, 4096, 70001, 0, 3, 1 << 20};
  std::vector<std::vector<char>> out(sizes.size()), in(sizes.size(), std::vector<char>(1 << 20, 0));
  std::vector<void*> requests;
  for (size_t i = 0; i < sizes.size(); ++i) {
    out[i].resize(sizes[i]);
    for (size_t b = 0; b < sizes[i]; ++b) out[i][b] = static_cast<char>((b * 7 + i * 31) & 0xff);
    requests.push_back(post(true, send, out[i].data(), sizes[i]));
  }
  for (size_t i = 0; i < sizes.size(); ++i) requests.push_back(post(false, recv, in[i].data(), in[i].size()));
  ASSERT_EQ(std::count(requests.begin(), requests.end(), nullptr), 0);
  std::vector<size_t> got;
  std::vector<weftResult_t> results = waitAll(requests, &got);
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(results[i], weftSuccess) << "send " << i;
    EXPECT_EQ(results[sizes.size() + i], weftSuccess) << "receive " << i;
    EXPECT_EQ(got[sizes.size() + i], sizes[i]) << "receive " << i;
    EXPECT_EQ(std::memcmp(in[i].data(), out[i].data(), sizes[i]), 0) << "message " << i << " arrived changed";
  }
}

TEST_P(BuiltinTable, AMessageLongerThanItsReceiveIsAnError) {
  std::vector<unsigned char> handle;
  ASSERT_NO_FATAL_FAILURE(listen(&handle));
  void *send = nullptr, *recv = nullptr;
  ASSERT_NO_FATAL_FAILURE(connect(handle, &send, &recv));
  ASSERT_NE(recv, nullptr);
  std::vector<char> out(200, 'x'), in(100, 0);
  std::vector<size_t> got;
  std::vector<weftResult_t> results =
      waitAll({post(true, send, out.data(), out.size()), post(false, recv, in.data(), in.size())}, &got);
  EXPECT_EQ(results[1], weftInternalError);
}

TEST_P(BuiltinTable, AConnectionWithAForeignTokenIsDroppedAndTheRealOneAccepted) {
  std::vector<unsigned char> handle;
  ASSERT_NO_FATAL_FAILURE(listen(&handle));
  std::vector<unsigned char> forged = handle;
  forged[kTokenOffset] ^= 0x5a;
  void *strangerSend = nullptr, *strangerRecv = nullptr;
  ASSERT_NO_FATAL_FAILURE(connect(forged, &strangerSend, &strangerRecv, 1.0));
  EXPECT_EQ(strangerRecv, nullptr) << "the listener accepted a connection that presented a foreign token";
  void *send = nullptr, *recv = nullptr;
  ASSERT_NO_FATAL_FAILURE(connect(handle, &send, &recv));
  ASSERT_NE(recv, nullptr);
  char out[5] = {'w', 'e', 'f', 't', '!'}, in[16] = {0};
  std::vector<size_t> got;
  std::vector<weftResult_t> results =
      waitAll({post(true, send, out, sizeof(out)), post(false, recv, in, sizeof(in))}, &got);
  EXPECT_EQ(results[1], weftSuccess);
  EXPECT_EQ(got[1], sizeof(out));
  EXPECT_EQ(std::memcmp(in, out, sizeof(out)), 0);
}

INSTANTIATE_TEST_SUITE_P(Tables, BuiltinTable,
                         ::testing::Values(TableCase{"socket", weftNetSocket_v1}, TableCase{"ofi", weftNetOfi_v1}),
                         [](const ::testing::TestParamInfo<TableCase>& info) { return std::string(info.param.name); });

// A built-in table that finds no device (libfabric missing, no interface) is named by the
// WEFT_NET value that chose it, with the way out, not as a WEFT_NET_PLUGIN library.
weftResult_t noDevices(int* ndev) {
  *ndev = 0;
  return weftSystemError;
}

TEST(BuiltinTableStart, ATableWithoutDevicesNamesTheWeftNetValueAndTheWayOut) {
  weftNet_v1_t broken = *weftNetSocket_v1();
  broken.name = "nodev";
  broken.devices = noDevices;
  const NetPlugin* plugin = nullptr;
  Status st = builtinNetPlugin(&broken, &plugin);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), weftSystemError);
  EXPECT_NE(st.message().find("WEFT_NET=nodev-plugin (nodev) offers no network device"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("set WEFT_NET=socket"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("WEFT_NET_PLUGIN"), std::string::npos) << st.message();
}

TEST(NetSelect, NamesTheTableBackedTransports) {
  bool valid = false;
  EXPECT_EQ(resolveNet("socket-plugin", true, &valid), NetKind::kSocketPlugin);
  EXPECT_TRUE(valid);
  EXPECT_EQ(resolveNet("OFI-PLUGIN", false, &valid), NetKind::kOfiPlugin);
  EXPECT_TRUE(valid);
  EXPECT_STREQ(PluginTransport(NetTable::kSocket).name(), "net-socket-v1");
  EXPECT_STREQ(PluginTransport(NetTable::kOfi).name(), "net-ofi-v1");
}

}  // namespace
}  // namespace net
}  // namespace weft
