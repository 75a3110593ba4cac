// weftMemAlloc / weftMemFree / weftMemQuery without a GPU backend (page-aligned host memory),
// and weftCommRegister / weftCommDeregister: handles per communicator, unknown and double
// deregistration refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

std::string lastError() { return weftGetLastError(nullptr); }

TEST(Memory, HostAllocationsArePageAlignedUsableAndFreedOnce) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (size_t size : {size_t{1}, size_t{4095}, size_t{4096}, size_t{(1 << 20) + 3}}) {
    void* p = nullptr;
    ASSERT_EQ(weftMemAlloc(&p, size), weftSuccess) << lastError();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % page, 0u) << size;
    std::memset(p, 0xab, size);  // every byte is ours
    EXPECT_EQ(static_cast<unsigned char*>(p)[size - 1], 0xab);
    weftMemKind_t kind = weftMemDevice;
    int dev = 5;
    ASSERT_EQ(weftMemQuery(p, &kind, &dev), weftSuccess) << lastError();
    EXPECT_EQ(kind, weftMemHost);
    EXPECT_EQ(dev, -1);
    if (size > 1) {
      EXPECT_EQ(weftMemFree(static_cast<char*>(p) + 1), weftInvalidArgument);  // not the start
      EXPECT_NE(lastError().find("was not returned by weftMemAlloc"), std::string::npos) << lastError();
    }
    EXPECT_EQ(weftMemFree(p), weftSuccess) << lastError();
    EXPECT_EQ(weftMemFree(p), weftInvalidArgument);
    EXPECT_NE(lastError().find("or was freed already"), std::string::npos) << lastError();
  }
  void* mine = std::malloc(64);
  EXPECT_EQ(weftMemFree(mine), weftInvalidArgument);
  std::free(mine);
  EXPECT_EQ(weftMemFree(nullptr), weftSuccess);
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(weftMemAlloc(&p, 0), weftInvalidArgument);
  EXPECT_NE(lastError().find("weftMemAlloc: size is 0"), std::string::npos);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(weftMemAlloc(nullptr, 8), weftInvalidArgument);
  weftMemKind_t kind;
  int dev;
  int x = 0;
  EXPECT_EQ(weftMemQuery(nullptr, &kind, &dev), weftInvalidArgument);
  EXPECT_NE(lastError().find("weftMemQuery: ptr is NULL"), std::string::npos);
  EXPECT_EQ(weftMemQuery(&x, nullptr, &dev), weftInvalidArgument);
  EXPECT_EQ(weftMemQuery(&x, &kind, nullptr), weftInvalidArgument);
  ASSERT_EQ(weftMemQuery(&x, &kind, &dev), weftSuccess);  // any host memory
  EXPECT_EQ(kind, weftMemHost);
}

TEST(Memory, AllocatedBuffersServeCollectives) {
  runRanks(Mode::kThreads, 3, [](Rank& r) {
    const size_t count = 1001;
    void* send = nullptr;
    void* recv = nullptr;
    ASSERT_EQ(weftMemAlloc(&send, count * sizeof(int32_t)), weftSuccess);
    ASSERT_EQ(weftMemAlloc(&recv, count * sizeof(int32_t)), weftSuccess);
    void* handles[2] = {nullptr, nullptr};
    ASSERT_EQ(weftCommRegister(r.comm, send, count * sizeof(int32_t), &handles[0]), weftSuccess);
    ASSERT_EQ(weftCommRegister(r.comm, recv, count * sizeof(int32_t), &handles[1]), weftSuccess);
    EXPECT_NE(handles[0], handles[1]);
    auto* s = static_cast<int32_t*>(send);
    for (size_t i = 0; i < count; ++i) s[i] = r.rank * 7 + static_cast<int32_t>(i);
    ASSERT_EQ(weftAllReduce(send, recv, count, weftInt32, weftSum, r.comm, nullptr), weftSuccess);
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(static_cast<int32_t*>(recv)[i], 21 + 3 * static_cast<int32_t>(i));
    EXPECT_EQ(weftCommDeregister(r.comm, handles[0]), weftSuccess);
    // handles[1] stays registered: the communicator frees it when destroyed.
    EXPECT_EQ(weftMemFree(send), weftSuccess);
    EXPECT_EQ(weftMemFree(recv), weftSuccess);
  });
}

TEST(Registration, HandlesArePerCommunicatorAndDeregisteredOnce) {
  runRanks(Mode::kThreads, 2, [](Rank& r) {
    std::vector<char> buf(4096);
    void* h = nullptr;
    ASSERT_EQ(weftCommRegister(r.comm, buf.data(), buf.size(), &h), weftSuccess) << weftGetLastError(r.comm);
    ASSERT_NE(h, nullptr);
    // The same buffer twice gives two handles, each deregistered once.
    void* h2 = nullptr;
    ASSERT_EQ(weftCommRegister(r.comm, buf.data(), buf.size(), &h2), weftSuccess);
    EXPECT_NE(h, h2);
    // A handle of another communicator is unknown here.
    weftComm_t other = nullptr;
    int color = 0;
    ASSERT_EQ(weftCommSplit(r.comm, color, r.rank, &other, nullptr), weftSuccess);
    EXPECT_EQ(weftCommDeregister(other, h), weftInvalidArgument);
    EXPECT_NE(std::string(weftGetLastError(other)).find("is not registered on this communicator"), std::string::npos)
        << weftGetLastError(other);
    EXPECT_EQ(weftCommDestroy(other), weftSuccess);
    EXPECT_EQ(weftCommDeregister(r.comm, h), weftSuccess);
    EXPECT_EQ(weftCommDeregister(r.comm, h), weftInvalidArgument);
    EXPECT_NE(std::string(weftGetLastError(r.comm)).find("deregistered already"), std::string::npos);
    int local = 0;
    EXPECT_EQ(weftCommDeregister(r.comm, &local), weftInvalidArgument);
    EXPECT_EQ(weftCommDeregister(r.comm, h2), weftSuccess);
    // Arguments.
    void* out = reinterpret_cast<void*>(0x1);
    EXPECT_EQ(weftCommRegister(r.comm, nullptr, 8, &out), weftInvalidArgument);
    EXPECT_NE(std::string(weftGetLastError(r.comm))
                  .find("rank " + std::to_string(r.rank) + ": weftCommRegister: buff is NULL"),
              std::string::npos)
        << weftGetLastError(r.comm);
    EXPECT_EQ(out, nullptr);
    EXPECT_EQ(weftCommRegister(r.comm, buf.data(), 0, &out), weftInvalidArgument);
    EXPECT_EQ(weftCommRegister(r.comm, buf.data(), 8, nullptr), weftInvalidArgument);
    EXPECT_EQ(weftCommRegister(nullptr, buf.data(), 8, &out), weftInvalidArgument);
    EXPECT_EQ(weftCommDeregister(nullptr, h), weftInvalidArgument);
    // Left registered: freed by weftCommDestroy (the harness destroys the communicator).
    ASSERT_EQ(weftCommRegister(r.comm, buf.data(), buf.size(), &h), weftSuccess);
  });
}

}  // namespace
}  // namespace weft_test
