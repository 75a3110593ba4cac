// Tests for the zero-copy all-reduce's shares (direct_host.h), ranks simulated in one process:
// every rank's call addresses every rank's buffers, and the ranks run their shares one after the
// other (each writes only its own block of every output). The streamed form (outputs written
// with stores that bypass the caches, from DirectCall::streamBytes) must store exactly what the
// cached form stores, for every rank count, type, op and length around the piece, write nothing
// outside the outputs, and be chosen only out of place and from the threshold up.
#include "collectives/direct_host.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/datatypes.h"
#include "collectives/reduce.h"

namespace weft {
namespace coll {
namespace {

constexpr unsigned char kGuard = 0xEE;
constexpr size_t kGuardBytes = 64;

struct World {
  int nRanks = 0;
  size_t bytes = 0;
  // Each buffer with kGuardBytes of guard before and after.
  std::vector<std::vector<unsigned char>> send, recv;

  bool inPlace = false;
  World(int n, size_t b, bool inPlaceCall) : nRanks(n), bytes(b), send(n), recv(n), inPlace(inPlaceCall) {
    for (int r = 0; r < n; ++r) {
      send[r].assign(bytes + 2 * kGuardBytes, kGuard);
      // Small magnitudes, different on every rank and lane: every type stays finite.
      for (size_t i = 0; i < bytes; ++i)
        send[r][kGuardBytes + i] = static_cast<unsigned char>((i * (5 + 2 * r) + r) % 53);
      if (!inPlace) recv[r].assign(bytes + 2 * kGuardBytes, kGuard);
    }
  }
  char* sendOf(int r) { return reinterpret_cast<char*>(send[r].data() + kGuardBytes); }
  char* recvOf(int r) { return inPlace ? sendOf(r) : reinterpret_cast<char*>(recv[r].data() + kGuardBytes); }

  DirectCall callOf(int rank, weftDataType_t type, weftRedOp_t op, int64_t count, int64_t streamBytes) {
    DirectCall c;
    c.kind = CollKind::kAllReduce;
    c.rank = rank;
    c.nRanks = nRanks;
    c.count = count;
    c.elemSize = dataTypeSize(type);
    c.reduce = reduceFunction(type, op);
    c.reduceCopy = reduceCopyFunction(type, op);
    c.avgDivisor = op == weftAvg ? static_cast<uint32_t>(nRanks) : 0;
    c.streamBytes = streamBytes;
    for (int r = 0; r < nRanks; ++r) {
      c.send.push_back(sendOf(r));
      c.recv.push_back(recvOf(r));
    }
    return c;
  }

  void run(weftDataType_t type, weftRedOp_t op, int64_t count, int64_t streamBytes) {
    for (int r = 0; r < nRanks; ++r) runDirect(callOf(r, type, op, count, streamBytes));
  }

  // Every rank's output, guards included.
  std::vector<std::vector<unsigned char>> outputs() const { return inPlace ? send : recv; }
};

struct Case {
  weftDataType_t type;
  weftRedOp_t op;
};

const Case kCases[] = {
    {weftFloat32, weftSum},    {weftFloat32, weftAvg}, {weftFloat32, weftMax}, {weftFloat64, weftProd},
    {weftInt32, weftSum},      {weftUint8, weftMin},   {weftFloat16, weftSum}, {weftBfloat16, weftSum},
    {weftFloat8e4m3, weftSum}, {weftInt64, weftAvg},
};

std::string describe(const Case& c, int n, int64_t count) {
  return std::string("type ") + std::to_string(c.type) + " op " + std::to_string(c.op) + ", " + std::to_string(n) +
         " ranks, count " + std::to_string(count);
}

TEST(DirectAllReduce, StreamedOutputsHoldWhatCachedOnesHold) {
  for (const Case& k : kCases) {
    const size_t es = dataTypeSize(k.type);
    for (int n = 1; n <= 4; ++n) {
      // Around a cache line, the 32 KiB piece and a block that spans several pieces.
      for (int64_t count : {int64_t{1}, int64_t{17}, int64_t{1000}, static_cast<int64_t>(32768 / es) * n + 3,
                            static_cast<int64_t>(100000 / es)}) {
        World cached(n, static_cast<size_t>(count) * es, false);
        World streamed(n, static_cast<size_t>(count) * es, false);
        cached.run(k.type, k.op, count, 0);
        streamed.run(k.type, k.op, count, 1);
        ASSERT_EQ(cached.outputs(), streamed.outputs()) << describe(k, n, count);
        // The inputs are untouched, the guards too (compared above, and equal to a fresh world's).
        ASSERT_EQ(cached.send, World(n, static_cast<size_t>(count) * es, false).send) << describe(k, n, count);
      }
    }
  }
}

// With integer sums the answer is known: every output element is the sum of the ranks' inputs.
TEST(DirectAllReduce, StreamedIntegerSumIsTheSumOfTheInputs) {
  const int64_t count = 50000;
  for (int n = 2; n <= 4; ++n) {
    World w(n, static_cast<size_t>(count) * 4, false);
    w.run(weftInt32, weftSum, count, 1);
    for (int r = 0; r < n; ++r) {
      const auto* out = reinterpret_cast<const int32_t*>(w.recvOf(r));
      for (int64_t i = 0; i < count; ++i) {
        int32_t want = 0;
        for (int q = 0; q < n; ++q) {
          int32_t v;
          std::memcpy(&v, w.sendOf(q) + i * 4, 4);
          want += v;
        }
        ASSERT_EQ(out[i], want) << n << " ranks, rank " << r << ", element " << i;
      }
    }
  }
}

TEST(DirectAllReduce, InPlaceGivesTheSameResultWithOrWithoutTheThreshold) {
  const int64_t count = 30011;
  for (int n = 2; n <= 3; ++n) {
    World outOfPlace(n, static_cast<size_t>(count) * 4, false);
    World inPlace(n, static_cast<size_t>(count) * 4, true);
    World inPlaceStream(n, static_cast<size_t>(count) * 4, true);
    outOfPlace.run(weftFloat32, weftSum, count, 0);
    inPlace.run(weftFloat32, weftSum, count, 0);
    inPlaceStream.run(weftFloat32, weftSum, count, 1);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(0, std::memcmp(outOfPlace.recvOf(r), inPlace.recvOf(r), static_cast<size_t>(count) * 4));
      ASSERT_EQ(0, std::memcmp(inPlace.recvOf(r), inPlaceStream.recvOf(r), static_cast<size_t>(count) * 4));
    }
  }
}

TEST(DirectAllReduce, StreamsOnlyOutOfPlaceAndFromTheThresholdUp) {
  World w(2, 4096 * 4, false);
  World in(2, 4096 * 4, true);
  // Each rank's block is 2048 floats = 8 KiB.
  EXPECT_TRUE(directStreams(w.callOf(0, weftFloat32, weftSum, 4096, 8192)));
  EXPECT_FALSE(directStreams(w.callOf(0, weftFloat32, weftSum, 4096, 8193)));
  EXPECT_FALSE(directStreams(w.callOf(0, weftFloat32, weftSum, 4096, 0)));
  EXPECT_FALSE(directStreams(in.callOf(0, weftFloat32, weftSum, 4096, 1)));
  // One rank in place is enough to keep every rank's stores cached.
  DirectCall mixed = w.callOf(1, weftFloat32, weftSum, 4096, 1);
  mixed.recv[0] = w.sendOf(0);
  EXPECT_FALSE(directStreams(mixed));
}

}  // namespace
}  // namespace coll
}  // namespace weft
