// NCCL's parameter API (ncclParam*) over Weft's WEFT_* table: typed reads that fit or are refused,
// strings, raw bytes, reads by key, the list of keys, and bad handles and keys.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "nccl_harness.h"

namespace {

std::string lastError() { return ncclGetLastError(nullptr); }
bool said(const std::string& words) { return lastError().find(words) != std::string::npos; }

// Sets a variable for one test and unsets it after (the tests' environment sets none of these).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

ncclParamHandle_t bind(const char* key) {
  ncclParamHandle_t h = nullptr;
  EXPECT_EQ(ncclParamBind(&h, key), ncclSuccess) << lastError();
  return h;
}

TEST(NcclParams, IntegersReadWithEveryTypeThatHoldsThem) {
  ncclParamHandle_t h = bind("WEFT_TIMEOUT_S");
  ASSERT_NE(h, nullptr);
  {
    ScopedEnv env("WEFT_TIMEOUT_S", "77");
    int8_t i8 = 0;
    uint8_t u8 = 0;
    int64_t i64 = 0;
    uint64_t u64 = 0;
    EXPECT_EQ(ncclParamGetI8(h, &i8), ncclSuccess) << lastError();
    EXPECT_EQ(ncclParamGetU8(h, &u8), ncclSuccess) << lastError();
    EXPECT_EQ(ncclParamGetI64(h, &i64), ncclSuccess) << lastError();
    EXPECT_EQ(ncclParamGetU64(h, &u64), ncclSuccess) << lastError();
    EXPECT_EQ(i8, 77);
    EXPECT_EQ(u8, 77);
    EXPECT_EQ(i64, 77);
    EXPECT_EQ(u64, 77u);
  }
  {
    ScopedEnv env("WEFT_TIMEOUT_S", "300");
    int8_t i8 = 5;
    EXPECT_EQ(ncclParamGetI8(h, &i8), ncclInvalidArgument);
    EXPECT_TRUE(said("WEFT_TIMEOUT_S is 300, which int8_t cannot hold")) << lastError();
    EXPECT_EQ(i8, 5) << "a refused read writes nothing";
    int16_t i16 = 0;
    uint16_t u16 = 0;
    EXPECT_EQ(ncclParamGetI16(h, &i16), ncclSuccess);
    EXPECT_EQ(ncclParamGetU16(h, &u16), ncclSuccess);
    EXPECT_EQ(i16, 300);
    EXPECT_EQ(u16, 300);
  }
  {
    ScopedEnv env("WEFT_TIMEOUT_S", "-5");
    int32_t i32 = 0;
    uint32_t u32 = 9;
    EXPECT_EQ(ncclParamGetI32(h, &i32), ncclSuccess);
    EXPECT_EQ(i32, -5);
    EXPECT_EQ(ncclParamGetU32(h, &u32), ncclInvalidArgument);
    EXPECT_TRUE(said("which uint32_t cannot hold")) << lastError();
  }
  int64_t byDefault = 0;
  ASSERT_EQ(ncclParamGetI64(h, &byDefault), ncclSuccess);
  EXPECT_EQ(byDefault, 1800) << "unset: Weft's default";
}

TEST(NcclParams, StringsBooleansAndRawBytes) {
  ScopedEnv file("WEFT_DEBUG_FILE", "/tmp/x-%p.log");
  ScopedEnv checks("WEFT_CHECK_CALLS", "off");
  ScopedEnv timeout("WEFT_TIMEOUT_S", "77");
  ncclParamHandle_t str = bind("WEFT_DEBUG_FILE"), flag = bind("WEFT_CHECK_CALLS"), num = bind("WEFT_TIMEOUT_S");
  const char* text = nullptr;
  ASSERT_EQ(ncclParamGetStr(str, &text), ncclSuccess) << lastError();
  EXPECT_STREQ(text, "/tmp/x-%p.log");
  ASSERT_EQ(ncclParamGetStr(num, &text), ncclSuccess);
  EXPECT_STREQ(text, "77");
  int32_t i32 = 0;
  EXPECT_EQ(ncclParamGetI32(str, &i32), ncclInvalidArgument);
  EXPECT_TRUE(said("WEFT_DEBUG_FILE is a string parameter; read it with ncclParamGetStr")) << lastError();
  int8_t on = 1;
  ASSERT_EQ(ncclParamGetI8(flag, &on), ncclSuccess);
  EXPECT_EQ(on, 0);

  char raw[32];
  int len = 0;
  ASSERT_EQ(ncclParamGet(num, raw, sizeof(raw), &len), ncclSuccess) << lastError();
  ASSERT_EQ(len, 8);
  int64_t v = 0;
  std::memcpy(&v, raw, sizeof(v));
  EXPECT_EQ(v, 77);
  ASSERT_EQ(ncclParamGet(flag, raw, sizeof(raw), &len), ncclSuccess);
  EXPECT_EQ(len, 1);
  EXPECT_EQ(raw[0], 0);
  ASSERT_EQ(ncclParamGet(str, raw, sizeof(raw), &len), ncclSuccess);
  EXPECT_EQ(len, 14) << "the characters and their NUL";
  EXPECT_STREQ(raw, "/tmp/x-%p.log");
  len = 0;
  EXPECT_EQ(ncclParamGet(num, raw, 4, &len), ncclInvalidArgument);
  EXPECT_EQ(len, 8) << "a short buffer learns the size";
  EXPECT_TRUE(said("takes 8 bytes, more than maxLen (4)")) << lastError();
  EXPECT_EQ(ncclParamGet(num, nullptr, 4, &len), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGet(num, raw, -1, &len), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGet(num, raw, 8, nullptr), ncclInvalidArgument);
}

TEST(NcclParams, ByKeyAndTheListOfKeys) {
  ScopedEnv timeout("WEFT_TIMEOUT_S", "4321");
  const char* value = nullptr;
  int valueLen = 0;
  ASSERT_EQ(ncclParamGetParameter("WEFT_TIMEOUT_S", &value, &valueLen), ncclSuccess) << lastError();
  EXPECT_STREQ(value, "4321");
  EXPECT_EQ(valueLen, 4);
  EXPECT_EQ(ncclParamGetParameter("WEFT_TIMEOUT_S", nullptr, &valueLen), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGetParameter(nullptr, &value, &valueLen), ncclInvalidArgument);

  const char** keys = nullptr;
  int n = 0;
  ASSERT_EQ(ncclParamGetAllParameterKeys(&keys, &n), ncclSuccess);
  ASSERT_GT(n, 10);
  bool found = false;
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(std::strncmp(keys[i], "WEFT_", 5), 0) << keys[i];
    found = found || std::strcmp(keys[i], "WEFT_TIMEOUT_S") == 0;
    ncclParamHandle_t h = nullptr;
    EXPECT_EQ(ncclParamBind(&h, keys[i]), ncclSuccess) << "every listed key binds: " << keys[i];
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(ncclParamGetAllParameterKeys(nullptr, &n), ncclInvalidArgument);
}

TEST(NcclParams, UnknownKeysAndStrayHandlesAreRefused) {
  ncclParamHandle_t h = reinterpret_cast<ncclParamHandle_t>(0x1);
  EXPECT_EQ(ncclParamBind(&h, "NCCL_ALGO"), ncclInvalidArgument);
  EXPECT_TRUE(said("Weft has WEFT_ALGO, which may not mean the same")) << lastError();
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(ncclParamBind(&h, "NO_SUCH_THING"), ncclInvalidArgument);
  EXPECT_TRUE(said("\"NO_SUCH_THING\" is not a parameter")) << lastError();
  EXPECT_EQ(ncclParamBind(&h, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclParamBind(nullptr, "WEFT_TIMEOUT_S"), ncclInvalidArgument);
  const char* value = nullptr;
  int len = 0;
  EXPECT_EQ(ncclParamGetParameter("NCCL_ALGO", &value, &len), ncclInvalidArgument);
  EXPECT_TRUE(said("ncclParamGetParameter: \"NCCL_ALGO\"")) << lastError();

  int local = 0;
  ncclParamHandle_t stray = reinterpret_cast<ncclParamHandle_t>(&local);
  int64_t v = 0;
  EXPECT_EQ(ncclParamGetI64(stray, &v), ncclInvalidArgument);
  EXPECT_TRUE(said("was not returned by ncclParamBind")) << lastError();
  EXPECT_EQ(ncclParamGetStr(nullptr, &value), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGetI64(bind("WEFT_TIMEOUT_S"), nullptr), ncclInvalidArgument);
  EXPECT_TRUE(said("ncclParamGetI64: out is NULL")) << lastError();
}

// Checked by ctest (nccl.param_dump_all): with NCCL_DEBUG=INFO every parameter is logged.
TEST(NcclParams, DumpAll) { ncclParamDumpAll(); }

}  // namespace
