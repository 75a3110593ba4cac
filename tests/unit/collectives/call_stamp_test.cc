// Call stamps (call_stamp.h): the fingerprint changes when any single bit of any field of the call
// changes, so that two ranks whose calls differ in one field (count, type, op, root, algorithm,
// kind) never carry equal stamps because of the hash; and the stamp's fields come back out.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "collectives/call_stamp.h"

namespace weft {
namespace coll {
namespace {

// Calls to flip bits in: small fields as real calls have them, and fields with every bit set.
const uint64_t kBases[][7] = {
    {1, 0, 2, 7, 0, 0, 3},
    {1, 4, 1000, 7, 1, 3, 0},
    {1, 2, 1ull << 40, 9, 4, 0xffffffffull, 1},
    {~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull},
};

TEST(CallStamp, EveryBitOfEveryFieldChangesTheFingerprint) {
  for (const auto& base : kBases) {
    const uint32_t fp = fingerprintOf(base, 7);
    for (int field = 0; field < 7; ++field) {
      for (int bit = 0; bit < 64; ++bit) {
        uint64_t changed[7];
        for (int i = 0; i < 7; ++i) changed[i] = base[i];
        changed[field] ^= 1ull << bit;
        EXPECT_NE(fingerprintOf(changed, 7), fp) << "field " << field << " bit " << bit;
      }
    }
  }
}

TEST(CallStamp, ManyCallsHaveDistinctFingerprints) {
  // Every call of 4 kinds x 64 counts x 12 types x 6 ops x 4 roots: all distinct fingerprints
  // would be expected of a good 32-bit hash of 18432 values (a collision has odds ~4e-2); the
  // test asks for at most one, and that calls differing only in the count never collide.
  std::set<uint32_t> all;
  size_t calls = 0;
  for (int kind = 0; kind < 4; ++kind)
    for (int root = 0; root < 4; ++root)
      for (int type = 0; type < 12; ++type)
        for (int op = 0; op < 6; ++op) {
          std::set<uint32_t> byCount;
          for (uint64_t count = 1; count <= 64; ++count) {
            const uint32_t fp = collectiveFingerprint(kind, count, type, op, root, 0);
            byCount.insert(fp);
            all.insert(fp);
            ++calls;
          }
          EXPECT_EQ(byCount.size(), 64u);
        }
  EXPECT_GE(all.size() + 1, calls);
}

TEST(CallStamp, PointToPointAndCollectiveFingerprintsDiffer) {
  // The first field (2 against 1) tells them apart: a send of b bytes against a collective of
  // count b whose other fields are zero.
  for (uint64_t bytes = 0; bytes < 4096; ++bytes) {
    EXPECT_NE(p2pFingerprint(bytes), collectiveFingerprint(0, bytes, 0, 0, 0, 0)) << bytes;
  }
}

TEST(CallStamp, StampFieldsComeBack) {
  const uint64_t stamp = makeStamp(0x12345678u | kP2pSeqBit, 0x9abcdef0u);
  EXPECT_EQ(stampSeq(stamp), 0x12345678u | kP2pSeqBit);
  EXPECT_EQ(stampFingerprint(stamp), 0x9abcdef0u);
  EXPECT_EQ(collectiveSeq(0xffffffffull), 0x7fffffffu);
  EXPECT_EQ(collectiveSeq(0x100000005ull), 5u);
}

}  // namespace
}  // namespace coll
}  // namespace weft
