// The argument checks every runtime applies before a reduce-copy launch (checkReduceCopyArgs),
// through the host runtime, which then says it has no kernels.
#include <gtest/gtest.h>

#include <vector>

#include "device/device.h"

namespace weft {
namespace device {
namespace {

struct Buffers {
  std::vector<float> a = std::vector<float>(16, 1.0f), b = std::vector<float>(16, 2.0f), out = std::vector<float>(16);
  ReduceCopyArgs args() {
    ReduceCopyArgs r;
    r.type = weftFloat32;
    r.op = weftSum;
    r.nSrcs = 2;
    r.srcs[0] = a.data();
    r.srcs[1] = b.data();
    r.nDsts = 1;
    r.dsts[0] = out.data();
    r.count = 16;
    return r;
  }
};

void expectRejected(const ReduceCopyArgs& args, const std::string& words) {
  Status s = checkReduceCopyArgs(args);
  EXPECT_EQ(s.code(), weftInvalidArgument) << words;
  EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
  // The host runtime checks the same way before it says it has no kernels.
  Status h = hostRuntime().launchReduceCopy(args, nullptr);
  EXPECT_EQ(h.code(), weftInvalidArgument);
  EXPECT_EQ(h.message(), s.message());
}

TEST(ReduceCopyArgs, ValidArgumentsPass) {
  Buffers b;
  EXPECT_TRUE(checkReduceCopyArgs(b.args()).isOk());
  ReduceCopyArgs max = b.args();
  max.nSrcs = kMaxReduceSrcs;
  max.nDsts = kMaxReduceDsts;
  for (int i = 0; i < kMaxReduceSrcs; ++i) max.srcs[i] = b.a.data();
  for (int j = 0; j < kMaxReduceDsts; ++j) max.dsts[j] = b.out.data();
  EXPECT_TRUE(checkReduceCopyArgs(max).isOk());
  // Nothing to move: buffers may be null.
  ReduceCopyArgs empty = b.args();
  empty.count = 0;
  empty.srcs[1] = nullptr;
  empty.dsts[0] = nullptr;
  EXPECT_TRUE(checkReduceCopyArgs(empty).isOk());
}

TEST(ReduceCopyArgs, CountsOutOfRange) {
  Buffers b;
  for (int n : {0, -1, kMaxReduceSrcs + 1}) {
    ReduceCopyArgs a = b.args();
    a.nSrcs = n;
    expectRejected(a, "nSrcs is " + std::to_string(n) + "; it must be 1 to 8");
  }
  for (int n : {0, kMaxReduceDsts + 1}) {
    ReduceCopyArgs a = b.args();
    a.nDsts = n;
    expectRejected(a, "nDsts is " + std::to_string(n) + "; it must be 1 to 4");
  }
}

TEST(ReduceCopyArgs, UnknownTypeOrOp) {
  Buffers b;
  ReduceCopyArgs a = b.args();
  a.type = static_cast<weftDataType_t>(weftNumTypes);
  expectRejected(a, "datatype 12 is not a weftDataType_t");
  a = b.args();
  a.op = static_cast<weftRedOp_t>(-1);
  expectRejected(a, "op -1 is not a weftRedOp_t");
}

TEST(ReduceCopyArgs, AvgNeedsADivisor) {
  Buffers b;
  ReduceCopyArgs a = b.args();
  a.op = weftAvg;
  a.divisor = 0;
  expectRejected(a, "weftAvg with divisor 0");
  a.divisor = 2;
  EXPECT_TRUE(checkReduceCopyArgs(a).isOk());
  a.divisor = uint64_t{1} << 32;
  expectRejected(a, "divisor 4294967296 is larger than any rank count");
}

TEST(ReduceCopyArgs, NullBuffersWithData) {
  Buffers b;
  ReduceCopyArgs a = b.args();
  a.srcs[1] = nullptr;
  expectRejected(a, "srcs[1] is null with 16 elements to read");
  a = b.args();
  a.nDsts = 2;
  a.dsts[1] = nullptr;
  expectRejected(a, "dsts[1] is null with 16 elements to write");
}

TEST(ReduceCopyArgs, HostRuntimeHasNoKernels) {
  Buffers b;
  Status s = hostRuntime().launchReduceCopy(b.args(), nullptr);
  EXPECT_EQ(s.code(), weftInvalidUsage);
  EXPECT_NE(s.message().find("no kernels for host memory"), std::string::npos) << s.message();
  EXPECT_EQ(b.out[0], 0.0f) << "nothing was written";
}

}  // namespace
}  // namespace device
}  // namespace weft
