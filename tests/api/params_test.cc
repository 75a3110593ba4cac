// weftParamCount / weftParamInfo / weftParamGet: the table's names and types, values read from
// the environment at each call (a bad value reads as the default), and every bad argument
// refused with a sentence.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "weft/weft.h"

namespace {

std::string lastError() { return weftGetLastError(nullptr); }

// Sets (or, with nullptr, unsets) a variable for one test and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    hadOld_ = old != nullptr;
    if (hadOld_) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (hadOld_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool hadOld_ = false;
  std::string old_;
};

std::string valueOf(const char* name) {
  char text[256];
  size_t length = 0;
  EXPECT_EQ(weftParamGet(name, text, sizeof(text), &length), weftSuccess) << lastError();
  EXPECT_EQ(length, std::strlen(text));
  return text;
}

// The index of a name, -1 when the table lacks it.
int indexOf(const std::string& wanted, weftParamType_t* type) {
  int count = 0;
  EXPECT_EQ(weftParamCount(&count), weftSuccess);
  for (int i = 0; i < count; ++i) {
    const char* name = nullptr;
    EXPECT_EQ(weftParamInfo(i, &name, type), weftSuccess) << lastError();
    if (name && wanted == name) return i;
  }
  return -1;
}

TEST(Params, TheTableListsKnownNamesWithTheirTypes) {
  int count = 0;
  ASSERT_EQ(weftParamCount(&count), weftSuccess);
  EXPECT_GT(count, 10);
  weftParamType_t type = weftParamString;
  EXPECT_GE(indexOf("WEFT_TIMEOUT_S", &type), 0);
  EXPECT_EQ(type, weftParamInt64);
  EXPECT_GE(indexOf("WEFT_CHECK_CALLS", &type), 0);
  EXPECT_EQ(type, weftParamBool);
  EXPECT_GE(indexOf("WEFT_DEBUG_FILE", &type), 0);
  EXPECT_EQ(type, weftParamString);
  EXPECT_EQ(indexOf("WEFT_NO_SUCH_PARAMETER", &type), -1);
}

TEST(Params, ValuesComeFromTheEnvironmentAtEachCall) {
  {
    ScopedEnv unset("WEFT_TIMEOUT_S", nullptr);
    EXPECT_EQ(valueOf("WEFT_TIMEOUT_S"), "1800");
  }
  {
    ScopedEnv set("WEFT_TIMEOUT_S", "77");
    EXPECT_EQ(valueOf("WEFT_TIMEOUT_S"), "77");
  }
  {
    ScopedEnv bad("WEFT_TIMEOUT_S", "soon");  // does not parse: the default
    EXPECT_EQ(valueOf("WEFT_TIMEOUT_S"), "1800");
  }
  {
    ScopedEnv off("WEFT_CHECK_CALLS", "off");
    EXPECT_EQ(valueOf("WEFT_CHECK_CALLS"), "0");
  }
  ScopedEnv file("WEFT_DEBUG_FILE", "/tmp/weft-%p.log");
  EXPECT_EQ(valueOf("WEFT_DEBUG_FILE"), "/tmp/weft-%p.log");
}

TEST(Params, LengthFirstThenABufferOfThatSize) {
  ScopedEnv set("WEFT_TIMEOUT_S", "123456");
  size_t length = 0;
  ASSERT_EQ(weftParamGet("WEFT_TIMEOUT_S", nullptr, 0, &length), weftSuccess) << lastError();
  EXPECT_EQ(length, 6u);
  char small[6];
  length = 0;
  EXPECT_EQ(weftParamGet("WEFT_TIMEOUT_S", small, sizeof(small), &length), weftInvalidArgument);
  EXPECT_EQ(length, 6u) << "a short buffer still learns the length";
  EXPECT_NE(lastError().find("7 bytes with its NUL, more than valueBytes (6)"), std::string::npos) << lastError();
  char exact[7];
  ASSERT_EQ(weftParamGet("WEFT_TIMEOUT_S", exact, sizeof(exact), &length), weftSuccess) << lastError();
  EXPECT_STREQ(exact, "123456");
}

TEST(Params, BadArgumentsAreRefusedWithASentence) {
  int count = 0;
  ASSERT_EQ(weftParamCount(&count), weftSuccess);
  EXPECT_EQ(weftParamCount(nullptr), weftInvalidArgument);
  EXPECT_NE(lastError().find("weftParamCount: count is NULL"), std::string::npos) << lastError();

  const char* name = nullptr;
  weftParamType_t type;
  EXPECT_EQ(weftParamInfo(-1, &name, &type), weftInvalidArgument);
  EXPECT_NE(lastError().find("index -1 is not a parameter's"), std::string::npos) << lastError();
  EXPECT_EQ(weftParamInfo(count, &name, &type), weftInvalidArgument);
  EXPECT_NE(lastError().find("there are " + std::to_string(count)), std::string::npos) << lastError();
  EXPECT_EQ(weftParamInfo(0, nullptr, &type), weftInvalidArgument);
  EXPECT_EQ(weftParamInfo(0, &name, nullptr), weftInvalidArgument);

  char text[32];
  size_t length = 0;
  EXPECT_EQ(weftParamGet("WEFT_TIMEOUT", text, sizeof(text), &length), weftInvalidArgument);
  EXPECT_NE(lastError().find("\"WEFT_TIMEOUT\" is not a Weft parameter"), std::string::npos) << lastError();
  EXPECT_EQ(weftParamGet(nullptr, text, sizeof(text), &length), weftInvalidArgument);
  EXPECT_EQ(weftParamGet("WEFT_TIMEOUT_S", text, sizeof(text), nullptr), weftInvalidArgument);
  EXPECT_EQ(weftParamGet("WEFT_TIMEOUT_S", nullptr, 8, &length), weftInvalidArgument);
  EXPECT_NE(lastError().find("value is NULL but valueBytes is 8"), std::string::npos) << lastError();
}

}  // namespace
