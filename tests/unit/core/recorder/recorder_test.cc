// The flight recorder's writer (src/core/recorder.*): the segment's life, the entries of host
// calls (kinds, numbers, counts, states, the ring), a stalled rank's kWaiting entry, the sweep
// of a dead owner's segment, and dumps. The segment is read here with the layout alone
// (core/recorder_format.h), as weft-inspect reads it.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "api/harness.h"
#include "base/coll_traits.h"
#include "base/os.h"
#include "core/recorder.h"
#include "core/recorder_format.h"
#include "core/recorder_read.h"
#include "weft/weft.h"

namespace weft_test {
namespace {

using weft::core::RecordedState;
using weft::core::RecorderEntry;
using weft::core::RecorderHeader;

// Sets an environment variable for one test and restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    if (old) had_ = true, old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1);
    else unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

// The /dev/shm recorder segments of process `pid` (for `rank`, or every rank with -1).
// A fresh directory for dumps ("" when it cannot be made).
std::string makeDumpDir() {
  char dirTemplate[] = "/tmp/weft-recorder-test-XXXXXX";
  return mkdtemp(dirTemplate) != nullptr ? std::string(dirTemplate) : std::string();
}

// The files in `dir` (full paths; none when it cannot be read).
std::vector<std::string> filesIn(const std::string& dir) {
  std::vector<std::string> files;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return files;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') files.push_back(dir + "/" + e->d_name);
  }
  closedir(d);
  return files;
}

std::vector<std::string> segmentsOf(int pid, int rank = -1) {
  std::vector<std::string> out;
  const std::string prefix = "weft-rec-" + std::to_string(pid) + "-";
  const std::string suffix = "-" + std::to_string(rank);
  DIR* d = opendir("/dev/shm");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.rfind(prefix, 0) != 0) continue;
    if (rank >= 0 && (n.size() < suffix.size() || n.compare(n.size() - suffix.size(), suffix.size(), suffix) != 0)) {
      continue;
    }
    out.push_back("/dev/shm/" + n);
  }
  closedir(d);
  return out;
}

// A copy of a segment's (or a dump file's) bytes: the header and every entry.
struct Snapshot {
  std::vector<char> bytes;
  const RecorderHeader& header() const { return *reinterpret_cast<const RecorderHeader*>(bytes.data()); }
  const RecorderEntry* entries() const {
    return reinterpret_cast<const RecorderEntry*>(bytes.data() + sizeof(RecorderHeader));
  }
};

bool readSnapshot(const std::string& path, Snapshot* s) {
  std::ifstream in(path, std::ios::binary);
  s->bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (s->bytes.size() < sizeof(RecorderHeader)) return false;
  const size_t n = (s->bytes.size() - sizeof(RecorderHeader)) / sizeof(RecorderEntry);
  return s->header().capacity == n;
}

// Call `callNo` as weft-inspect's reader sees it (recorder_read.h): the run that holds it.
weft::core::CopiedCall entryOf(const Snapshot& s, uint64_t callNo) {
  weft::core::RecorderCopy c;
  std::string problem;
  EXPECT_TRUE(weft::core::copyRecorder(s.bytes.data(), s.bytes.size(), "snapshot", &c, &problem, nullptr)) << problem;
  for (const weft::core::CopiedCall& e : c.entries) {
    if (e.firstCallNo <= callNo && callNo <= e.callNo) return e;
  }
  ADD_FAILURE() << "no run holds call " << callNo;
  return {};
}

void allReduce(const Rank& r, size_t count) {
  std::vector<float> buf(count, 1.0f);
  ASSERT_EQ(weftAllReduce(buf.data(), buf.data(), count, weftFloat32, weftSum, r.comm, nullptr), weftSuccess)
      << weftGetLastError(r.comm);
}

TEST(Recorder, SegmentLivesWithTheCommunicatorAndRecordsCalls) {
  ScopedEnv calls("WEFT_RECORDER_CALLS", "8");
  const int pid = getpid();
  runRanks(Mode::kThreads, 2, [&](Rank& r) {
    for (size_t c = 1; c <= 3; ++c) allReduce(r, c * 10);
    std::vector<char> buf(64);
    const int peer = 1 - r.rank;
    ASSERT_EQ(weftGroupStart(), weftSuccess);
    ASSERT_EQ(weftSend(buf.data(), 32, weftInt8, peer, r.comm, nullptr), weftSuccess);
    ASSERT_EQ(weftRecv(buf.data() + 32, 32, weftInt8, peer, r.comm, nullptr), weftSuccess);
    ASSERT_EQ(weftGroupEnd(), weftSuccess);
    const std::vector<std::string> seg = segmentsOf(pid, r.rank);
    ASSERT_EQ(seg.size(), 1u);
    Snapshot s;
    ASSERT_TRUE(readSnapshot(seg[0], &s));
    EXPECT_EQ(s.header().magic, weft::core::kRecorderMagic);
    EXPECT_EQ(s.header().layout, weft::core::kRecorderLayout);
    EXPECT_EQ(s.header().pid, pid);
    EXPECT_EQ(s.header().rank, r.rank);
    EXPECT_EQ(s.header().nRanks, 2);
    EXPECT_EQ(s.header().capacity, 8u);
    weft::ProcStat self;
    ASSERT_TRUE(weft::readProcStat(0, &self));
    EXPECT_EQ(s.header().ownerStartTicks, self.startTicks);
    EXPECT_STREQ(s.header().frontEnd, "weft");
    ASSERT_EQ(s.header().calls.load(), 4u);
    for (uint64_t c = 1; c <= 3; ++c) {
      const weft::core::CopiedCall e = entryOf(s, c);
      EXPECT_EQ(e.callNo, c);
      EXPECT_EQ(e.kind, static_cast<int32_t>(weft::coll::CollKind::kAllReduce));
      EXPECT_EQ(e.count, c * 10);
      EXPECT_EQ(e.type, static_cast<int32_t>(weftFloat32));
      EXPECT_EQ(e.state, RecordedState::kDone);
      EXPECT_EQ(e.bytesDone, c * 10 * sizeof(float));
      EXPECT_GT(e.startedNs, 0);
      EXPECT_GE(e.endedNs, e.startedNs);
    }
    const weft::core::CopiedCall g = entryOf(s, 4);
    EXPECT_EQ(g.kind, static_cast<int32_t>(weft::coll::CollKind::kSendRecv));
    EXPECT_EQ(g.count, 2u);
    EXPECT_EQ(g.state, RecordedState::kDone);
  });
  EXPECT_TRUE(segmentsOf(pid).empty()) << "a segment outlived its communicator";
}

TEST(Recorder, ProcessRanksEachHaveASegment) {
  ScopedEnv calls("WEFT_RECORDER_CALLS", "8");
  runRanks(Mode::kProcesses, 2, [&](Rank& r) {
    allReduce(r, 3);
    const std::vector<std::string> seg = segmentsOf(getpid(), r.rank);
    ASSERT_EQ(seg.size(), 1u);
    Snapshot s;
    ASSERT_TRUE(readSnapshot(seg[0], &s));
    EXPECT_EQ(s.header().pid, getpid());
    EXPECT_EQ(s.header().calls.load(), 1u);
    // Both ranks' segments carry the same communicator id.
    const std::string base = seg[0].substr(std::string("/dev/shm/weft-rec-").size());  // <pid>-<hash>-<rank>
    const std::string mine = base.substr(base.find('-') + 1, 16);
    std::vector<std::string> all;
    DIR* d = opendir("/dev/shm");
    ASSERT_NE(d, nullptr);
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind("weft-rec-", 0) == 0 && n.find("-" + mine + "-") != std::string::npos) all.push_back(n);
    }
    closedir(d);
    EXPECT_EQ(all.size(), 2u);
    allReduce(r, 3);  // neither rank destroys its communicator (and segment) before both looked
  });
}

TEST(Recorder, RingWrapsAtCapacity) {
  ScopedEnv calls("WEFT_RECORDER_CALLS", "4");
  const int pid = getpid();
  runRanks(Mode::kThreads, 2, [&](Rank& r) {
    for (size_t c = 1; c <= 10; ++c) allReduce(r, c);
    const std::vector<std::string> seg = segmentsOf(pid, r.rank);
    ASSERT_EQ(seg.size(), 1u);
    Snapshot s;
    ASSERT_TRUE(readSnapshot(seg[0], &s));
    ASSERT_EQ(s.header().calls.load(), 10u);
    for (uint64_t c = 7; c <= 10; ++c) {
      EXPECT_EQ(entryOf(s, c).callNo, c);
      EXPECT_EQ(entryOf(s, c).count, c);
    }
  });
}

TEST(Recorder, ZeroCallsCreatesNothing) {
  ScopedEnv calls("WEFT_RECORDER_CALLS", "0");
  const int pid = getpid();
  runRanks(Mode::kThreads, 2, [&](Rank& r) {
    allReduce(r, 4);
    EXPECT_TRUE(segmentsOf(pid).empty());
  });
}

// Rank 0 calls, rank 1 looks at rank 0's segment before it joins: rank 0 waits for rank 1.
TEST(Recorder, StalledRankShowsWaitingForItsPeer) {
  ScopedEnv calls("WEFT_RECORDER_CALLS", "16");
  const int pid = getpid();
  runRanks(Mode::kThreads, 2, [&](Rank& r) {
    allReduce(r, 1024);  // connected; call #1 done
    if (r.rank == 0) {
      allReduce(r, 1024);
      return;
    }
    const std::vector<std::string> seg = segmentsOf(pid, 0);
    ASSERT_EQ(seg.size(), 1u);
    Snapshot s;
    bool waiting = false;
    for (int i = 0; i < 200 && !waiting; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      ASSERT_TRUE(readSnapshot(seg[0], &s));
      waiting = s.header().calls.load() == 2 && entryOf(s, 2).callNo == 2 && entryOf(s, 2).state == RecordedState::kWaiting;
    }
    ASSERT_TRUE(waiting) << "rank 0's call #2 never showed as waiting";
    EXPECT_EQ(entryOf(s, 2).waitPeer, 1);
    EXPECT_GE(entryOf(s, 2).waitStep, 0);
    allReduce(r, 1024);
  });
}

TEST(Recorder, SweepRemovesTheSegmentOfADeadOwner) {
  // A child makes a segment with the recorder's name and header, then dies without removing it.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char name[96];
    std::snprintf(name, sizeof(name), "/weft-rec-%d-%016x-0", static_cast<int>(getpid()), 0x1234);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, sizeof(RecorderHeader) + sizeof(RecorderEntry)) != 0) _exit(1);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(segmentsOf(child).size(), 1u);
  EXPECT_GE(weft::core::sweepRecorderSegments(), 1u);
  EXPECT_TRUE(segmentsOf(child).empty());
  for (const std::string& s : segmentsOf(child)) unlink(s.c_str());
}

TEST(Recorder, DumpOnRequestWritesTheSegmentsLayout) {
  const std::string dir = makeDumpDir();
  ASSERT_FALSE(dir.empty());
  {
    ScopedEnv calls("WEFT_RECORDER_CALLS", "8");
    ScopedEnv where("WEFT_RECORDER_DIR", dir.c_str());
    ScopedEnv signal("WEFT_RECORDER_SIGNAL", "0");
    runRanks(Mode::kThreads, 2, [&](Rank& r) {
      allReduce(r, 5);
      ASSERT_EQ(weftCommDumpRecorder(r.comm), weftSuccess) << weftGetLastError(r.comm);
    });
  }
  const std::vector<std::string> files = filesIn(dir);
  ASSERT_EQ(files.size(), 2u);
  for (const std::string& f : files) {
    EXPECT_NE(f.find("/weft-rec-"), std::string::npos);
    EXPECT_EQ(f.substr(f.size() - 4), ".bin");
    Snapshot s;
    ASSERT_TRUE(readSnapshot(f, &s)) << f;
    EXPECT_EQ(s.header().magic, weft::core::kRecorderMagic);
    EXPECT_EQ(s.header().dumped, static_cast<int32_t>(weft::core::RecorderDumpReason::kRequest));
    EXPECT_EQ(s.header().calls.load(), 1u);
    EXPECT_EQ(entryOf(s, 1).count, 5u);
    EXPECT_EQ(entryOf(s, 1).state, RecordedState::kDone);
    unlink(f.c_str());
  }
  rmdir(dir.c_str());
}

// Rank 1 never makes the call rank 0 waits in: rank 0 times out and dumps, the call kFailed.
TEST(Recorder, TimeOutDumpsWithTheFailedCall) {
  const std::string dir = makeDumpDir();
  ASSERT_FALSE(dir.empty());
  {
    ScopedEnv calls("WEFT_RECORDER_CALLS", "8");
    ScopedEnv where("WEFT_RECORDER_DIR", dir.c_str());
    ScopedEnv signal("WEFT_RECORDER_SIGNAL", "0");
    runRanks(Mode::kThreads, 2, [&](Rank& r) {
      allReduce(r, 16);
      if (r.rank == 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        return;
      }
      ASSERT_EQ(weftCommSetTimeout(r.comm, 1), weftSuccess);
      std::vector<float> buf(16, 1.0f);
      EXPECT_EQ(weftAllReduce(buf.data(), buf.data(), 16, weftFloat32, weftSum, r.comm, nullptr), weftTimeout)
          << weftGetLastError(r.comm);
    }, 60);
  }
  const std::vector<std::string> files = filesIn(dir);
  ASSERT_EQ(files.size(), 1u);
  Snapshot s;
  ASSERT_TRUE(readSnapshot(files[0], &s));
  EXPECT_EQ(s.header().rank, 0);
  EXPECT_EQ(s.header().dumped, static_cast<int32_t>(weft::core::RecorderDumpReason::kTimeout));
  ASSERT_EQ(s.header().calls.load(), 2u);
  EXPECT_EQ(entryOf(s, 2).state, RecordedState::kFailed);
  EXPECT_FALSE(entryOf(s, 2).error.empty());
  EXPECT_EQ(entryOf(s, 1).state, RecordedState::kDone);
  for (const std::string& f : files) unlink(f.c_str());
  rmdir(dir.c_str());
}

TEST(Recorder, DumpWithoutADirectoryIsRefused) {
  ScopedEnv calls("WEFT_RECORDER_CALLS", "8");
  ScopedEnv where("WEFT_RECORDER_DIR", "");
  runRanks(Mode::kThreads, 1, [&](Rank& r) { EXPECT_EQ(weftCommDumpRecorder(r.comm), weftInvalidUsage); });
}

}  // namespace
}  // namespace weft_test
