// OwnAllocations: the GPU runtime's record of its own allocHost blocks, which lets a lane launch
// skip the driver's pointer-attribute queries for the library's own tables.
#include <gtest/gtest.h>

#include <vector>

#include "device/own_allocations.h"

namespace weft {
namespace device {
namespace {

TEST(OwnAllocations, KnowsEveryByteOfItsBlocksAndNothingElse) {
  std::vector<char> memory(4096);
  char* a = memory.data() + 256;
  char* b = memory.data() + 1024;
  OwnAllocations own;
  EXPECT_FALSE(own.contains(a));
  own.add(a, 100);
  own.add(b, 1);
  EXPECT_TRUE(own.contains(a));
  EXPECT_TRUE(own.contains(a + 99));
  EXPECT_FALSE(own.contains(a + 100));
  EXPECT_FALSE(own.contains(a - 1));
  EXPECT_TRUE(own.contains(b));
  EXPECT_FALSE(own.contains(b + 1));
  EXPECT_FALSE(own.contains(memory.data()));
  EXPECT_FALSE(own.remove(a + 1)) << "only a block's start removes it";
  EXPECT_TRUE(own.remove(a));
  EXPECT_FALSE(own.contains(a + 10));
  EXPECT_FALSE(own.remove(a));
  EXPECT_TRUE(own.contains(b));
  own.add(nullptr, 10);
  own.add(a, 0);
  EXPECT_FALSE(own.contains(a));
  EXPECT_FALSE(own.contains(nullptr));
}

}  // namespace
}  // namespace device
}  // namespace weft
