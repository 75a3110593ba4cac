// Parameters: parsing, defaults on bad values, and the warning about unknown WEFT_* variables.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>

#include "base/coll_traits.h"
#include "base/log.h"
#include "base/params.h"

namespace weft {
namespace {

struct EnvVar {
  EnvVar(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~EnvVar() { unsetenv(name_); }
  const char* name_;
};

TEST(Params, DefaultsWhenUnset) {
  unsetenv("WEFT_TIMEOUT_S");
  EXPECT_EQ(params::TimeoutS(), 1800);
  EXPECT_FALSE(params::ShmDisable());
  EXPECT_EQ(params::Algo(), "");
}

TEST(Params, ParsesIntegersWithSizeSuffixesAndBooleans) {
  {
    EnvVar v("WEFT_BUFFSIZE", "4M");
    EXPECT_EQ(params::Buffsize(), 4 << 20);
  }
  {
    EnvVar v("WEFT_BUFFSIZE", "512k");
    EXPECT_EQ(params::Buffsize(), 512 << 10);
  }
  {
    EnvVar v("WEFT_TIMEOUT_S", "0x10");
    EXPECT_EQ(params::TimeoutS(), 16);
  }
  {
    EnvVar v("WEFT_STREAM_STORE_BYTES", "64M");
    EXPECT_EQ(params::StreamStoreBytes(), 64 << 20);
  }
  for (const char* yes : {"1", "true", "YES", "on"}) {
    EnvVar v("WEFT_SHM_DISABLE", yes);
    EXPECT_TRUE(params::ShmDisable()) << yes;
  }
  for (const char* no : {"0", "false", "No", "off", ""}) {
    EnvVar v("WEFT_SHM_DISABLE", no);
    EXPECT_FALSE(params::ShmDisable()) << no;
  }
}

TEST(Params, BadValuesFallBackToTheDefault) {
  {
    EnvVar v("WEFT_TIMEOUT_S", "ten");
    EXPECT_EQ(params::TimeoutS(), 1800);
  }
  {
    EnvVar v("WEFT_TIMEOUT_S", "10 s");
    EXPECT_EQ(params::TimeoutS(), 1800);
  }
  {
    EnvVar v("WEFT_SHM_DISABLE", "maybe");
    EXPECT_FALSE(params::ShmDisable());
  }
}

// Issue 13: an out-of-range value is warned about, with the value used instead.
TEST(Params, OutOfRangeValuesAreWarnedAboutWithTheValueUsed) {
  struct Case {
    const char* env;
    const char* text;
    int64_t (*read)();
    int64_t used;
    const char* words;
  };
  const Case cases[] = {
      {"WEFT_BUFFSIZE", "1", params::Buffsize, 4096, "WEFT_BUFFSIZE=1 is below the smallest allowed value; using 4096"},
      {"WEFT_NSLOTS", "0", params::NSlots, 2, "WEFT_NSLOTS=0 is below the smallest allowed value; using 2"},
      {"WEFT_MIN_NCHANNELS", "1000", params::MinNChannels, 32,
       "WEFT_MIN_NCHANNELS=1000 is above the largest allowed value; using 32"},
      {"WEFT_MAX_NCHANNELS", "-3", params::MaxNChannels, 1, "WEFT_MAX_NCHANNELS=-3 is below"},
      {"WEFT_EMULATED_DEVICES", "9", params::EmulatedDevices, 8, "WEFT_EMULATED_DEVICES=9 is above"},
      {"WEFT_STREAM_STORE_BYTES", "-1", params::StreamStoreBytes, 0, "WEFT_STREAM_STORE_BYTES=-1 is below"},
  };
  for (const Case& c : cases) {
    EnvVar v(c.env, c.text);
    testing::internal::CaptureStderr();
    EXPECT_EQ(c.read(), c.used) << c.env;
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(c.words), std::string::npos) << c.env << ": " << err;
  }
  // In range: no warning, the value itself.
  EnvVar ok("WEFT_NSLOTS", "8");
  testing::internal::CaptureStderr();
  EXPECT_EQ(params::NSlots(), 8);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(Params, UnknownLogLevelIsWarnedAbout) {
  {
    EnvVar v("WEFT_DEBUG", "garbage");
    testing::internal::CaptureStderr();
    reloadLogSettings();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("WEFT_DEBUG=\"garbage\" is not a log level"), std::string::npos) << err;
  }
  reloadLogSettings();
}

TEST(Params, TableListsEveryParameterWithHelpAndCurrentValue) {
  EnvVar v("WEFT_NSLOTS", "6");
  auto all = params::all();
  auto it = std::find_if(all.begin(), all.end(), [](const params::ParamInfo& p) { return p.env == "WEFT_NSLOTS"; });
  ASSERT_NE(it, all.end());
  EXPECT_EQ(it->value, "6");
  EXPECT_EQ(it->defaultValue, "4");
  EXPECT_TRUE(it->isSet);
  EXPECT_EQ(it->type, "int64_t");
  for (const auto& p : all) {
    EXPECT_EQ(p.env.rfind("WEFT_", 0), 0u) << p.env;
    EXPECT_FALSE(p.help.empty()) << p.env;
  }
}

TEST(Params, UnknownVariablesAreReportedWithTheClosestName) {
  EnvVar typo("WEFT_TIMEOUT", "5");
  EnvVar far("WEFT_COMPLETELY_DIFFERENT_THING", "1");
  auto unknown = params::unknownVariables();
  auto find = [&](const std::string& name) {
    return std::find_if(unknown.begin(), unknown.end(), [&](const auto& u) { return u.first == name; });
  };
  auto t = find("WEFT_TIMEOUT");
  ASSERT_NE(t, unknown.end());
  EXPECT_EQ(t->second, "WEFT_TIMEOUT_S");
  auto f = find("WEFT_COMPLETELY_DIFFERENT_THING");
  ASSERT_NE(f, unknown.end());
  EXPECT_EQ(f->second, "");
  EXPECT_EQ(find("WEFT_TIMEOUT_S"), unknown.end());
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

TEST(Params, LauncherRankAndSizeFromOpenMpiThenPmi) {
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("PMI_RANK");
  unsetenv("PMI_SIZE");
  EXPECT_EQ(params::launcherRank(), -1);
  EXPECT_EQ(params::launcherSize(), -1);
  {
    EnvVar r("PMI_RANK", "3"), n("PMI_SIZE", "8");
    EXPECT_EQ(params::launcherRank(), 3);
    EXPECT_EQ(params::launcherSize(), 8);
    EnvVar r2("OMPI_COMM_WORLD_RANK", "5"), bad("OMPI_COMM_WORLD_SIZE", "eight");
    EXPECT_EQ(params::launcherRank(), 5);  // Open MPI's first
    EXPECT_EQ(params::launcherSize(), 8);  // a non-integer is skipped
  }
}

}  // namespace
}  // namespace weft

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace weft {
namespace {

// Issue 13, item 5: a thread warning about parameters (as the root listener does) while the
// process forks must not leave the warnings' lock held in the child. Each child reads bad and
// out-of-range values (new ones, so it warns and takes the lock) and must exit within 10 s.
TEST(Params, ForkWhileAnotherThreadWarnsDoesNotDeadlockTheChild) {
  std::atomic<bool> stop{false};
  // (The thread only reads the environment: setenv's own lock is not Weft's to guard.)
  setenv("WEFT_TREE_MAX_BYTES", "bad", 1);
  std::thread warner([&] {
    while (!stop.load()) (void)params::TreeMaxBytes();  // takes the warnings' lock each time
  });
  testing::internal::CaptureStderr();
  int hung = 0;
  for (int k = 0; k < 40; ++k) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(10);  // a deadlocked child dies of SIGALRM
      setenv("WEFT_NSLOTS", ("-" + std::to_string(k + 100)).c_str(), 1);
      (void)params::NSlots();
      setenv("WEFT_BUFFSIZE", "x", 1);
      (void)params::Buffsize();
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) ++hung;
  }
  stop.store(true);
  warner.join();
  testing::internal::GetCapturedStderr();
  unsetenv("WEFT_TREE_MAX_BYTES");
  unsetenv("WEFT_NSLOTS");
  unsetenv("WEFT_BUFFSIZE");
  EXPECT_EQ(hung, 0) << "children deadlocked after fork";
}

// WEFT_ALGO's help is text in the parameter table; it must name exactly the all-reduce
// algorithms of the algorithm table (base/coll_traits.h), so that a new one is not forgotten.
// WEFT_ALGO forces any algorithm (in the collectives that have it): its help names them all.
TEST(Params, AlgoHelpNamesEveryAlgorithm) {
  const std::vector<params::ParamInfo> all = params::all();
  auto it = std::find_if(all.begin(), all.end(), [](const params::ParamInfo& p) { return p.env == "WEFT_ALGO"; });
  ASSERT_NE(it, all.end());
  std::string help = it->help;
  std::transform(help.begin(), help.end(), help.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const coll::AlgoTraits& a : coll::kAlgoTraits) {
    EXPECT_NE(help.find(a.name), std::string::npos) << a.name << " in: " << it->help;
  }
}

}  // namespace
}  // namespace weft
