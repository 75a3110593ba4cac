// The flight recorder's reader (src/core/recorder_read.*) on segments synthesized here byte by
// byte: a good one is copied field for field; one of another layout, a corrupt header, a short
// file or a bad entry is refused (or the entry left out) with a sentence naming the file and
// what is wrong; an entry its owner is writing is not taken; owners are told alive, stopped,
// dead or reused; scans find segments and dump files by name and skip other files.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/coll_traits.h"
#include "base/os.h"
#include "core/recorder_format.h"
#include "core/recorder_read.h"
#include "weft/weft.h"

namespace weft_test {
namespace {

using weft::core::CopiedCall;
using weft::core::OwnerLiveness;
using weft::core::RecordedState;
using weft::core::RecorderCopy;
using weft::core::RecorderEntry;
using weft::core::RecorderHeader;
using weft::core::RecorderScan;

// A recorder of `capacity` entries as its writer lays it out, built in plain memory.
class Segment {
 public:
  explicit Segment(uint32_t capacity, int rank = 1, int nRanks = 4)
      : bytes_(sizeof(RecorderHeader) + capacity * sizeof(RecorderEntry), 0) {
    RecorderHeader& h = header();
    h.magic = weft::core::kRecorderMagic;
    h.layout = weft::core::kRecorderLayout;
    h.headerBytes = sizeof(RecorderHeader);
    h.entryBytes = sizeof(RecorderEntry);
    h.capacity = capacity;
    h.pid = 4242;
    h.rank = rank;
    h.nRanks = nRanks;
    h.version = WEFT_VERSION_CODE;
    h.commHash = 0x0123456789abcdefull;
    h.ownerStartTicks = 77;
    h.createdNs = 1000;
    h.updatedNs.store(5000);
    std::snprintf(h.host, sizeof(h.host), "node7");
    std::snprintf(h.frontEnd, sizeof(h.frontEnd), "torch");
  }
  RecorderHeader& header() { return *reinterpret_cast<RecorderHeader*>(bytes_.data()); }
  RecorderEntry& entry(size_t i) {
    return reinterpret_cast<RecorderEntry*>(bytes_.data() + sizeof(RecorderHeader))[i];
  }
  // Records call `no` (from 1) as a run of its own in the next entry of the ring, a finished
  // all-reduce of `count` floats.
  RecorderEntry& record(uint64_t no, uint64_t count = 1024) {
    RecorderEntry& e = entry(next_);
    next_ = (next_ + 1) % header().capacity;
    e.version.store(2 * no);
    e.firstCallNo = no;
    e.lastCallNo = no;
    e.callBytes = count * 4;
    e.kind = static_cast<int32_t>(weft::coll::CollKind::kAllReduce);
    e.type = weftFloat32;
    e.op = weftSum;
    e.root = -1;
    e.algo = static_cast<int32_t>(weft::coll::Algo::kRing);
    e.state = static_cast<int32_t>(RecordedState::kRunning);  // completed: doneCalls reaches it
    e.waitPeer = -1;
    e.waitStep = -1;
    e.count = count;
    e.bytesDone = 0;
    e.queuedNs = 100 * no;
    e.startedNs = 100 * no + 10;
    e.endedNs = 100 * no + 50;
    if (no > header().calls.load()) header().calls.store(no), header().doneCalls.store(no);
    return e;
  }
  bool copy(RecorderCopy* out, std::string* problem, std::vector<std::string>* entryProblems) const {
    return weft::core::copyRecorder(bytes_.data(), bytes_.size(), "seg", out, problem, entryProblems);
  }
  std::vector<char>& bytes() { return bytes_; }

 private:
  std::vector<char> bytes_;
  uint32_t next_ = 0;
};

bool contains(const std::string& text, const std::string& words) { return text.find(words) != std::string::npos; }

TEST(RecorderRead, CopiesEveryFieldOfAGoodSegmentOldestCallFirst) {
  Segment seg(4);
  for (uint64_t no = 1; no <= 6; ++no) seg.record(no, 10 * no);  // the ring holds calls 3..6 (call 6 in entry 1)
  RecorderEntry& last = seg.entry(1);  // call 6's, the newest run
  last.lastCallNo = 0;                 // open
  seg.header().doneCalls.store(5);
  last.state = static_cast<int32_t>(RecordedState::kWaiting);
  last.waitPeer = 3;
  last.waitStep = 5;
  RecorderCopy c;
  std::string problem;
  std::vector<std::string> more;
  ASSERT_TRUE(seg.copy(&c, &problem, &more)) << problem;
  EXPECT_TRUE(more.empty());
  EXPECT_EQ(c.pid, 4242);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.nRanks, 4);
  EXPECT_EQ(c.commHash, 0x0123456789abcdefull);
  EXPECT_EQ(c.ownerStartTicks, 77u);
  EXPECT_EQ(c.calls, 6u);
  EXPECT_EQ(c.host, "node7");
  EXPECT_EQ(c.frontEnd, "torch");
  ASSERT_EQ(c.entries.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(c.entries[i].callNo, i + 3);
  const CopiedCall& e = c.entries.back();
  EXPECT_EQ(e.state, RecordedState::kWaiting);
  EXPECT_EQ(e.waitPeer, 3);
  EXPECT_EQ(e.waitStep, 5);
  EXPECT_EQ(e.count, 60u);
  EXPECT_EQ(e.bytesDone, 0u);  // it has not moved anything yet
  EXPECT_EQ(e.startedNs, 610);
  EXPECT_EQ(c.entries[0].state, RecordedState::kDone);
  EXPECT_EQ(c.entries[0].bytesDone, 120u);
}

// A loop's calls are runs: calls 1-5 one run (closed), 6-9 another (open, call 9 running).
TEST(RecorderRead, RunsReadAsTheirLastCalls) {
  Segment seg(4);
  RecorderEntry& a = seg.record(1);
  a.lastCallNo = 5;
  RecorderEntry& b = seg.record(6, 2048);
  b.lastCallNo = 0;
  seg.header().calls.store(9);
  seg.header().doneCalls.store(8);
  seg.header().latestNs.store(7777);
  RecorderCopy c;
  std::string problem;
  std::vector<std::string> more;
  ASSERT_TRUE(seg.copy(&c, &problem, &more)) << problem;
  EXPECT_TRUE(more.empty());
  ASSERT_EQ(c.entries.size(), 2u);
  EXPECT_EQ(c.entries[0].firstCallNo, 1u);
  EXPECT_EQ(c.entries[0].callNo, 5u);
  EXPECT_EQ(c.entries[0].state, RecordedState::kDone);
  EXPECT_EQ(c.entries[1].firstCallNo, 6u);
  EXPECT_EQ(c.entries[1].callNo, 9u);
  EXPECT_EQ(c.entries[1].state, RecordedState::kRunning);
  EXPECT_EQ(c.entries[1].startedNs, 7777);
  seg.header().doneCalls.store(9);
  ASSERT_TRUE(seg.copy(&c, &problem, &more)) << problem;
  EXPECT_EQ(c.entries[1].state, RecordedState::kDone);
  EXPECT_EQ(c.entries[1].bytesDone, 8192u);
  // Runs that overlap: the older is left out, with a sentence.
  a.lastCallNo = 7;
  more.clear();
  ASSERT_TRUE(seg.copy(&c, &problem, &more)) << problem;
  ASSERT_EQ(c.entries.size(), 1u);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_TRUE(contains(more[0], "the run of calls 1-7 left out: it overlaps the next one")) << more[0];
}

TEST(RecorderRead, RefusesOtherLayoutsAndCorruptHeadersWithASentence) {
  struct Case {
    const char* what;
    void (*spoil)(RecorderHeader&);
    const char* words;
  };
  const Case cases[] = {
      {"magic", [](RecorderHeader& h) { h.magic = 42; }, "not a Weft flight recorder's"},
      {"layout", [](RecorderHeader& h) { h.layout = weft::core::kRecorderLayout + 1; }, "recorder layout 3"},
      {"entry size", [](RecorderHeader& h) { h.entryBytes = 128; }, "128-byte entries"},
      {"capacity", [](RecorderHeader& h) { h.capacity = 0; }, "capacity is 0 entries"},
      {"size", [](RecorderHeader& h) { h.capacity = 5; }, "promises 5 entries"},
      {"rank", [](RecorderHeader& h) { h.rank = 4; }, "rank 4 of 4 ranks"},
      {"host", [](RecorderHeader& h) { std::memset(h.host, 'x', sizeof(h.host)); }, "not NUL-terminated"},
      {"dump reason", [](RecorderHeader& h) { h.dumped = 9; }, "dump reason is 9"},
      {"ended calls", [](RecorderHeader& h) { h.doneCalls.store(5); }, "5 calls ended of 1 begun"},
  };
  for (const Case& c : cases) {
    Segment seg(4);
    seg.record(1);
    c.spoil(seg.header());
    RecorderCopy copy;
    std::string problem;
    EXPECT_FALSE(seg.copy(&copy, &problem, nullptr)) << c.what;
    EXPECT_TRUE(contains(problem, "seg: refused: ")) << problem;
    EXPECT_TRUE(contains(problem, c.words)) << c.what << ": " << problem;
  }
  Segment seg(4);
  RecorderCopy copy;
  std::string problem;
  EXPECT_FALSE(weft::core::copyRecorder(seg.bytes().data(), 100, "short", &copy, &problem, nullptr));
  EXPECT_TRUE(contains(problem, "short: refused: it is 100 bytes, shorter than")) << problem;
  EXPECT_FALSE(weft::core::copyRecorder(seg.bytes().data(), seg.bytes().size() - 1, "cut", &copy, &problem, nullptr));
  EXPECT_TRUE(contains(problem, "cut short")) << problem;
}

TEST(RecorderRead, LeavesOutBadEntriesAndSaysWhich) {
  struct Case {
    void (*spoil)(RecorderEntry&);
    const char* words;
  };
  const Case cases[] = {
      {[](RecorderEntry& e) { e.firstCallNo = 3; }, "holds calls 3 to 2, which cannot be with 2 calls recorded"},
      {[](RecorderEntry& e) { e.kind = 55; }, "call kind 55"},
      {[](RecorderEntry& e) { e.state = 9; }, "state 9"},
      {[](RecorderEntry& e) { e.type = weftNumTypes; }, "datatype"},
      {[](RecorderEntry& e) { e.root = 4; }, "root 4 of 4 ranks"},
      {[](RecorderEntry& e) { e.waitPeer = 7; }, "waits for rank 7 of 4"},
      {[](RecorderEntry& e) { e.startedNs = -5; }, "negative time"},
      {[](RecorderEntry& e) { std::memset(e.error, 'e', sizeof(e.error)); }, "error text that is not NUL-terminated"},
  };
  for (const Case& c : cases) {
    Segment seg(4);
    seg.record(1);
    c.spoil(seg.record(2));
    RecorderCopy copy;
    std::string problem;
    std::vector<std::string> more;
    ASSERT_TRUE(seg.copy(&copy, &problem, &more)) << problem;
    ASSERT_EQ(copy.entries.size(), 1u) << c.words;
    EXPECT_EQ(copy.entries[0].callNo, 1u);
    ASSERT_EQ(more.size(), 1u) << c.words;
    EXPECT_TRUE(contains(more[0], "seg: entry 1 left out: it ")) << more[0];
    EXPECT_TRUE(contains(more[0], c.words)) << more[0];
  }
}

TEST(RecorderRead, AnEntryBeingWrittenIsNotTaken) {
  Segment seg(4);
  seg.record(1);
  seg.record(2).version.store(5);  // odd: its owner is writing it (and stays so here)
  RecorderCopy copy;
  std::string problem;
  std::vector<std::string> more;
  ASSERT_TRUE(seg.copy(&copy, &problem, &more)) << problem;
  ASSERT_EQ(copy.entries.size(), 1u);
  EXPECT_EQ(copy.beingWritten, 1);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_TRUE(contains(more[0], "1 entries left out: they were being written")) << more[0];
}

TEST(RecorderRead, TellsOwnersAliveStoppedDeadAndReused) {
  weft::ProcStat self;
  ASSERT_TRUE(weft::readProcStat(0, &self));
  EXPECT_EQ(weft::core::segmentOwnerLiveness(getpid(), self.startTicks), OwnerLiveness::kAlive);
  EXPECT_EQ(weft::core::segmentOwnerLiveness(getpid(), self.startTicks + 1), OwnerLiveness::kPidReused);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) pause();
  }
  weft::ProcStat childStat;
  ASSERT_TRUE(weft::readProcStat(child, &childStat));
  ASSERT_EQ(kill(child, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, WUNTRACED), child);
  EXPECT_EQ(weft::core::segmentOwnerLiveness(child, childStat.startTicks), OwnerLiveness::kStopped);
  EXPECT_STREQ(weft::core::livenessName(OwnerLiveness::kStopped), "stopped");
  kill(child, SIGKILL);
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(weft::core::segmentOwnerLiveness(child, childStat.startTicks), OwnerLiveness::kDead);
}

void writeFile(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(RecorderRead, ScansFindRecordersByNameAndSayWhatTheyRefused) {
  char dirTemplate[] = "/tmp/weft-recorder-read-XXXXXX";
  ASSERT_NE(mkdtemp(dirTemplate), nullptr);
  const std::string dir = dirTemplate;
  Segment live(4, 0, 2);
  live.header().pid = getpid();
  weft::ProcStat self;
  ASSERT_TRUE(weft::readProcStat(0, &self));
  live.header().ownerStartTicks = self.startTicks;
  live.record(1);
  writeFile(dir + "/weft-rec-1-0123456789abcdef-0", live.bytes());
  Segment dumped(4, 1, 2);
  dumped.header().dumped = static_cast<int32_t>(weft::core::RecorderDumpReason::kSignal);
  dumped.record(1);
  writeFile(dir + "/weft-rec-node7-4242-0123456789abcdef-1.bin", dumped.bytes());
  Segment other(4);
  other.header().layout = 9;
  writeFile(dir + "/weft-rec-node8-1-0123456789abcdef-2.bin", other.bytes());
  writeFile(dir + "/unrelated-file", {'x'});

  RecorderScan shm = weft::core::scanSegments(dir);
  ASSERT_EQ(shm.copies.size(), 1u) << (shm.problems.empty() ? "" : shm.problems[0]);
  EXPECT_EQ(shm.copies[0].liveness, OwnerLiveness::kAlive);
  EXPECT_EQ(shm.copies[0].rank, 0);

  RecorderScan dumps;
  weft::core::scanDumps(dir, &dumps);
  ASSERT_EQ(dumps.copies.size(), 1u);
  EXPECT_EQ(dumps.copies[0].liveness, OwnerLiveness::kAsDumped);
  EXPECT_EQ(dumps.copies[0].dumped, weft::core::RecorderDumpReason::kSignal);
  ASSERT_EQ(dumps.problems.size(), 1u);
  EXPECT_TRUE(contains(dumps.problems[0], "weft-rec-node8-1-0123456789abcdef-2.bin: refused: it has recorder layout 9"))
      << dumps.problems[0];

  RecorderScan one;
  weft::core::scanDumps(dir + "/weft-rec-node7-4242-0123456789abcdef-1.bin", &one);
  EXPECT_EQ(one.copies.size(), 1u);
  RecorderScan none = weft::core::scanSegments(dir + "/absent");
  EXPECT_TRUE(none.copies.empty());
  ASSERT_EQ(none.problems.size(), 1u);
  for (const char* name : {"weft-rec-1-0123456789abcdef-0", "weft-rec-node7-4242-0123456789abcdef-1.bin",
                           "weft-rec-node8-1-0123456789abcdef-2.bin", "unrelated-file"}) {
    unlink((dir + "/" + name).c_str());
  }
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace weft_test
