// Every NCCL function Weft does not provide is exported, returns its code, and leaves a message
// in ncclGetLastError that names the function and what to use instead: the device API's host
// functions (called through dlsym: nccl.h does not declare them).
#include <dlfcn.h>

#include <cstring>
#include <string>
#include <vector>

#include "nccl_harness.h"

namespace {

std::string lastError() { return ncclGetLastError(nullptr); }

// The message names fn (so it is this call's, not an older one's) and says what to do.
void expectRefused(ncclResult_t got, const char* fn, const char* advice) {
  EXPECT_EQ(got, ncclInvalidUsage) << fn;
  const std::string message = lastError();
  EXPECT_NE(message.find(std::string(fn) + ": Weft does not provide"), std::string::npos) << fn << ": " << message;
  EXPECT_NE(message.find(advice), std::string::npos) << fn << ": " << message;
}

// A device-API host function, looked up in the process (libnccl.so.2 is linked).
template <typename F>
F deviceFunction(const char* name) {
  void* f = dlsym(RTLD_DEFAULT, name);
  EXPECT_NE(f, nullptr) << name << " is not exported";
  return reinterpret_cast<F>(f);
}

struct TeamValue {
  int nRanks, rank, stride;
};

TEST(NcclRefused, DeviceApiHostFunctionsSayTheyNeedNcclsDeviceCommunicator) {
  const char* advice = "use the host collectives";
  // Those returning ncclResult_t: called with NULL arguments of pointer size (never read).
  using Call2 = ncclResult_t (*)(void*, void*);
  using Call3 = ncclResult_t (*)(void*, void*, void*);
  using Call4 = ncclResult_t (*)(void*, size_t, void*, void*);
  if (auto f = deviceFunction<Call2>("ncclDevCommDestroy")) {
    expectRefused(f(nullptr, nullptr), "ncclDevCommDestroy", advice);
  }
  for (const char* fn : {"ncclDevCommCreate", "ncclGetLsaMultimemDevicePointer"}) {
    auto f = deviceFunction<Call3>(fn);
    if (f) expectRefused(f(nullptr, nullptr, nullptr), fn, advice);
  }
  for (const char* fn : {"ncclGetMultimemDevicePointer", "ncclGetLsaDevicePointer", "ncclGetPeerDevicePointer",
                         "ncclGetMultimemDeviceLeInfo", "ncclGetPeerDeviceLeInfo"}) {
    auto f = deviceFunction<Call4>(fn);
    if (f) expectRefused(f(nullptr, 0, nullptr, nullptr), fn, advice);
  }
  using CftLe = ncclResult_t (*)(void*, size_t, int, TeamValue, void*, void*);
  if (auto f = deviceFunction<CftLe>("ncclGetCftDeviceLeInfo")) {
    expectRefused(f(nullptr, 0, 0, TeamValue{1, 0, 1}, nullptr, nullptr), "ncclGetCftDeviceLeInfo", advice);
  }
  using Requirement = ncclResult_t (*)(TeamValue, int, void*, void*);
  for (const char* fn : {"ncclLsaBarrierCreateRequirement", "ncclCftBarrierCreateRequirement"}) {
    auto f = deviceFunction<Requirement>(fn);
    if (f) expectRefused(f(TeamValue{1, 0, 1}, 1, nullptr, nullptr), fn, advice);
  }
  using GinBarrier = ncclResult_t (*)(void*, TeamValue, int, void*, void*);
  if (auto f = deviceFunction<GinBarrier>("ncclGinBarrierCreateRequirement")) {
    expectRefused(f(nullptr, TeamValue{1, 0, 1}, 1, nullptr, nullptr), "ncclGinBarrierCreateRequirement", advice);
  }
  using Blocks = ncclResult_t (*)(int, int, void*, void*);
  for (const char* fn : {"ncclLLA2ACreateRequirement", "ncclGinOutboxCreateRequirement"}) {
    auto f = deviceFunction<Blocks>(fn);
    if (f) expectRefused(f(1, 1, nullptr, nullptr), fn, advice);
  }
  using Inbox = ncclResult_t (*)(TeamValue, int, int, void*, void*);
  if (auto f = deviceFunction<Inbox>("ncclGinInboxA2ACreateRequirement")) {
    expectRefused(f(TeamValue{1, 0, 1}, 1, 1, nullptr, nullptr), "ncclGinInboxA2ACreateRequirement", advice);
  }

  // Those returning a team or an int: an empty team, or -1, and the same message.
  using Team = TeamValue (*)(void*);
  for (const char* fn : {"ncclTeamWorld", "ncclTeamLsa", "ncclTeamRail", "ncclTeamCftMultimem"}) {
    auto f = deviceFunction<Team>(fn);
    if (!f) continue;
    EXPECT_EQ(f(nullptr).nRanks, 0) << fn;
    EXPECT_NE(lastError().find(std::string(fn) + ": Weft does not provide"), std::string::npos) << lastError();
  }
  using TeamMode = TeamValue (*)(void*, int);
  if (auto f = deviceFunction<TeamMode>("ncclTeamCft")) {
    EXPECT_EQ(f(nullptr, 0).nRanks, 0);
    EXPECT_NE(lastError().find("ncclTeamCft: Weft does not provide"), std::string::npos) << lastError();
  }
  using RankOf = int (*)(void*, TeamValue, int);
  for (const char* fn : {"ncclTeamRankToWorld", "ncclTeamRankToLsa"}) {
    auto f = deviceFunction<RankOf>(fn);
    if (!f) continue;
    EXPECT_EQ(f(nullptr, TeamValue{1, 0, 1}, 0), -1) << fn;
    EXPECT_NE(lastError().find(std::string(fn) + ": Weft does not provide"), std::string::npos) << lastError();
  }
  if (auto f = deviceFunction<int (*)(int, int)>("ncclLLA2ACalcSlots")) {
    EXPECT_EQ(f(16, 8), -1);
    EXPECT_NE(lastError().find("ncclLLA2ACalcSlots: Weft does not provide"), std::string::npos) << lastError();
  }
}

}  // namespace
