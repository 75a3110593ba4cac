// The /dev/shm side of the shared-memory FIFOs (transports/shm/shm_segments.h): names, the
// space check, creating and opening segments, and the sweep of what dead processes left.
#include "transports/shm/shm_segments.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "shm_test_util.h"
#include "transports/shm/shm_fifo.h"

namespace weft {
namespace shm {
namespace {

using shmtest::shmEntries;
using shmtest::uniqueTag;

// A receiver's FIFO of `nSlots` slots of `slotBytes` from rank 0 to rank 1 in this process.
FifoSpec receiverSpec(const std::string& tag, size_t nSlots, size_t slotBytes) {
  FifoSpec s;
  s.name = fifoName(tag, 0, 1, 0);
  s.nSlots = nSlots;
  s.slotBytes = slotBytes;
  s.selfRank = 1;
  s.peerRank = 0;
  s.peerPid = getpid();
  return s;
}

// A receiver that dies before its sender attached leaves its segment; the next process's sweep
// removes it, and keeps the segments of live processes (this one's).
TEST(ShmSegments, SegmentsOfDeadCreatorsAreSweptAndLiveOnesKept) {
  const std::string deadTag = uniqueTag(), liveTag = uniqueTag();
  std::unique_ptr<ShmFifo> live;
  ASSERT_TRUE(ShmFifo::create(receiverSpec(liveTag, 2, 64), &live).isOk());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::unique_ptr<ShmFifo> orphan;
    const bool ok = ShmFifo::create(receiverSpec(deadTag, 2, 64), &orphan).isOk();
    _exit(ok ? 0 : 1);  // no destructor: the segment stays, as after a kill
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::string dead = fifoName(deadTag, 0, 1, 0), kept = fifoName(liveTag, 0, 1, 0);
  auto exists = [](const std::string& name) {
    int fd = shm_open(name.c_str(), O_RDONLY, 0);
    if (fd >= 0) close(fd);
    return fd >= 0;
  };
  ASSERT_TRUE(exists(dead)) << "the dead child's segment is left behind";
  EXPECT_GE(removeFifosOfDeadProcesses(), 1u);
  EXPECT_FALSE(exists(dead)) << "swept";
  EXPECT_TRUE(exists(kept)) << "this live process's FIFO is kept";
}

TEST(ShmSegments, NamesAreDeterministicAndValid) {
  EXPECT_EQ(fifoName("abc", 2, 3, 1), "/weft-abc-2-3-1");
  EXPECT_NE(fifoName("abc", 2, 3, 1), fifoName("abc", 3, 2, 1)) << "each direction has its own FIFO";
  std::string odd = fifoName("a/b c", 0, 1, 0);
  EXPECT_EQ(odd.find('/', 1), std::string::npos) << odd;
  EXPECT_EQ(odd.find(' '), std::string::npos) << odd;
  std::string longName = fifoName(std::string(1000, 'x'), 12345, 54321, 7);
  EXPECT_LT(longName.size(), 255u);
  EXPECT_NE(longName, fifoName(std::string(1000, 'y'), 12345, 54321, 7));
}

TEST(ShmSegments, SpaceCheckPassesWhenTheFifoFits) {
  EXPECT_TRUE(checkShmSpace(60ull << 20, 512ull << 10, 3, 2).isOk());
  EXPECT_TRUE(checkShmSpace(4096, 4096, 3, 2).isOk());
}

TEST(ShmSegments, SpaceCheckSaysWhatToDoWhenDevShmIsFull) {
  Status st = checkShmSpace(100ull << 10, 512ull << 10, 3, 2);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), weftSystemError);
  EXPECT_NE(st.message().find("rank 3: /dev/shm has 100 KiB free"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("needs 512 KiB more for the FIFO from rank 2"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("--shm-size"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("WEFT_BUFFSIZE"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("WEFT_SHM_DISABLE=1"), std::string::npos) << st.message();
}

// A created segment is unlinked again when it is not handed over (creation failed half-way),
// and kept once released; the sender's open finds nothing until the name exists.
TEST(ShmSegments, ACreatedSegmentIsUnlinkedUnlessReleased) {
  const std::string tag = uniqueTag();
  const SegmentId id{fifoName(tag, 0, 1, 0), 1, 0};
  {
    Segment missing;
    ASSERT_TRUE(Segment::open(id, 64, &missing).isOk());
    EXPECT_FALSE(missing.mapped()) << "nothing there yet";
  }
  {
    Segment failed;
    ASSERT_TRUE(Segment::create(id, 4096, &failed).isOk());
    EXPECT_TRUE(failed.mapped());
    EXPECT_EQ(shmEntries(tag).size(), 1u);
  }
  EXPECT_TRUE(shmEntries(tag).empty()) << "not released: unlinked";
  void* base = nullptr;
  {
    Segment kept;
    ASSERT_TRUE(Segment::create(id, 4096, &kept).isOk());
    base = kept.release();
  }
  ASSERT_EQ(shmEntries(tag).size(), 1u) << "released: kept";
  Segment opened;
  ASSERT_TRUE(Segment::open(id, 64, &opened).isOk());
  EXPECT_TRUE(opened.mapped());
  EXPECT_EQ(opened.bytes(), 4096u);
  unmapSegment(base, 4096);
  unlinkSegment(id.name, id.selfRank);
  EXPECT_TRUE(shmEntries(tag).empty());
}

}  // namespace
}  // namespace shm
}  // namespace weft
