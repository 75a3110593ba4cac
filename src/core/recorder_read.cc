// Copying flight recorders out of segments and dump files without trusting them
// (recorder_read.h). A segment is mapped read-only and its entries copied under their sequence
// locks while the owner may be writing them; a dump file is read whole (it is not written to
// any more: the writer renames it into place when complete).
#include "core/recorder_read.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/coll_traits.h"
#include "base/os.h"
#include "base/status.h"
#include "weft/weft.h"

namespace weft {
namespace core {
namespace {

constexpr int kCopyAttempts = 8;  // an entry changing under us this often is "being written"
constexpr uint64_t kMaxRecorderBytes =
    sizeof(RecorderHeader) + uint64_t{kRecorderMaxCapacity} * sizeof(RecorderEntry);

bool terminated(const char* chars, size_t size) { return std::memchr(chars, '\0', size) != nullptr; }

// The header's checks, in the order that makes each later field meaningful; "" when it passes.
std::string headerProblem(const RecorderHeader& h, uint64_t size) {
  if (h.magic != kRecorderMagic) {
    return formatText("its magic number is 0x%016" PRIx64 ", not a Weft flight recorder's (0x%016" PRIx64
                  ", \"WEFTREC1\"); it is some other file, or a corrupt one",
                  h.magic, kRecorderMagic);
  }
  if (h.layout != kRecorderLayout) {
    return formatText("it has recorder layout %u (written by Weft version %d) and this weft-inspect reads layout %u; "
                  "read it with the weft-inspect of the Weft version that wrote it",
                  h.layout, h.version, kRecorderLayout);
  }
  if (h.headerBytes != sizeof(RecorderHeader) || h.entryBytes != sizeof(RecorderEntry)) {
    return formatText("its header says %u-byte header and %u-byte entries where layout %u has %zu and %zu; it is corrupt",
                  h.headerBytes, h.entryBytes, kRecorderLayout, sizeof(RecorderHeader), sizeof(RecorderEntry));
  }
  if (h.capacity < 1 || h.capacity > kRecorderMaxCapacity) {
    return formatText("its capacity is %u entries, outside 1..%u; it is corrupt", h.capacity, kRecorderMaxCapacity);
  }
  uint64_t expected = sizeof(RecorderHeader) + uint64_t{h.capacity} * sizeof(RecorderEntry);
  if (size != expected) {
    return formatText("it is %" PRIu64 " bytes but its header promises %u entries, %" PRIu64
                  " bytes; it was cut short or is corrupt",
                  size, h.capacity, expected);
  }
  if (h.nRanks < 1 || h.rank < 0 || h.rank >= h.nRanks || h.pid <= 0) {
    return formatText("it says rank %d of %d ranks, pid %d, which cannot be; it is corrupt", h.rank, h.nRanks, h.pid);
  }
  if (!terminated(h.host, sizeof(h.host)) || !terminated(h.frontEnd, sizeof(h.frontEnd))) {
    return "its host or front-end name is not NUL-terminated; it is corrupt";
  }
  if (h.doneCalls.load() > h.calls.load()) {
    return formatText("it says %" PRIu64 " calls ended of %" PRIu64 " begun; it is corrupt", h.doneCalls.load(),
                      h.calls.load());
  }
  if (h.dumped < 0 || h.dumped > static_cast<int32_t>(RecorderDumpReason::kRequest)) {
    return formatText("its dump reason is %d, not one Weft writes; it is corrupt", h.dumped);
  }
  return "";
}

// The entry's checks against its header; "" when it passes.
std::string entryProblem(const RecorderEntry& e, const RecorderHeader& h) {
  const uint64_t calls = h.calls.load();
  if (e.firstCallNo < 1 || e.firstCallNo > calls + 1 || (e.lastCallNo != 0 && e.lastCallNo < e.firstCallNo) ||
      e.lastCallNo > calls) {
    return formatText("holds calls %" PRIu64 " to %" PRIu64 ", which cannot be with %" PRIu64 " calls recorded",
                      e.firstCallNo, e.lastCallNo, calls);
  }
  if (e.callBytes > (uint64_t{1} << 50)) return formatText("says each call moves %" PRIu64 " bytes", e.callBytes);
  bool kindOk = (e.kind >= 0 && e.kind < coll::kNumCollKinds) || e.kind == kRecordedBarrier;
  if (!kindOk) return formatText("has call kind %d, not one Weft records", e.kind);
  if (e.state <= static_cast<int32_t>(RecordedState::kFree) || e.state > static_cast<int32_t>(RecordedState::kFailed)) {
    return formatText("has state %d, not one Weft records", e.state);
  }
  if (e.type < 0 || e.type >= weftNumTypes) return formatText("has datatype %d, not a weftDataType_t", e.type);
  if (e.op < 0) return formatText("has reduction op %d, not a weftRedOp_t", e.op);
  if (e.root < -1 || e.root >= h.nRanks) return formatText("has root %d of %d ranks", e.root, h.nRanks);
  if (e.algo < -1 || e.algo >= coll::kNumAlgos) return formatText("has algorithm %d, not one Weft has", e.algo);
  if (e.waitPeer < -1 || e.waitPeer >= h.nRanks) return formatText("waits for rank %d of %d ranks", e.waitPeer, h.nRanks);
  if (e.waitStep < -1) return formatText("waits in step %d", e.waitStep);
  if (e.queuedNs < 0 || e.startedNs < 0 || e.endedNs < 0) return "has a negative time";
  if (!terminated(e.error, sizeof(e.error))) return "has an error text that is not NUL-terminated";
  return "";
}

enum class EntryCopy { kOk, kTorn };

// Copies the entry when its sequence number is even and unchanged across the copy.
EntryCopy copyEntry(const RecorderEntry& src, RecorderEntry* dst) {
  for (int attempt = 0; attempt < kCopyAttempts; ++attempt) {
    uint64_t before = src.version.load(std::memory_order_acquire);
    if (before & 1) {
      sched_yield();
      continue;
    }
    std::memcpy(static_cast<void*>(dst), static_cast<const void*>(&src), sizeof(RecorderEntry));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (src.version.load(std::memory_order_relaxed) == before) return EntryCopy::kOk;
  }
  return EntryCopy::kTorn;
}

CopiedCall fromEntry(const RecorderEntry& e) {
  CopiedCall c;
  c.firstCallNo = e.firstCallNo;
  c.callNo = e.lastCallNo;  // 0 for the open run: settled by settleRuns
  c.callBytes = e.callBytes;
  c.kind = e.kind;
  c.type = e.type;
  c.op = e.op;
  c.root = e.root;
  c.algo = e.algo;
  c.state = static_cast<RecordedState>(e.state);
  c.waitPeer = e.waitPeer;
  c.waitStep = e.waitStep;
  c.count = e.count;
  c.bytesDone = e.bytesDone;
  c.queuedNs = e.queuedNs;
  c.startedNs = e.startedNs;
  c.endedNs = e.endedNs;
  c.error = e.error;
  return c;
}

// The runs, sorted by their first call, as the calls their last ones are (recorder_format.h): an
// open run ends where the next begins, the newest at the header's calls; a run whose last call
// another followed completed; the newest's last completed once doneCalls reaches it. A run that
// overlaps the next is left out.
void settleRuns(const RecorderHeader& h, const std::string& source, std::vector<CopiedCall>* runs,
                std::vector<std::string>* problems) {
  std::sort(runs->begin(), runs->end(),
            [](const CopiedCall& a, const CopiedCall& b) { return a.firstCallNo < b.firstCallNo; });
  std::vector<CopiedCall> kept;
  for (size_t i = 0; i < runs->size(); ++i) {
    CopiedCall c = (*runs)[i];
    const bool newest = i + 1 == runs->size();
    const uint64_t nextFirst = newest ? h.calls.load() + 1 : (*runs)[i + 1].firstCallNo;
    if (c.callNo == 0) c.callNo = nextFirst - 1;
    if (c.callNo < c.firstCallNo || c.callNo >= nextFirst) {
      if (problems) {
        problems->push_back(formatText("%s: the run of calls %" PRIu64 "-%" PRIu64 " left out: it overlaps the next one.",
                                       source.c_str(), c.firstCallNo, c.callNo));
      }
      continue;
    }
    if (newest && c.callNo > c.firstCallNo && c.state != RecordedState::kQueued) c.startedNs = h.latestNs.load();
    if (c.state == RecordedState::kRunning && (!newest || h.doneCalls.load() >= c.callNo)) {
      c.state = RecordedState::kDone;
      if (newest) c.endedNs = h.doneNs.load();
    }
    if (c.state == RecordedState::kDone) c.bytesDone = c.callBytes;
    kept.push_back(std::move(c));
  }
  *runs = std::move(kept);
}

void fillFromHeader(const RecorderHeader& h, RecorderCopy* out) {
  out->pid = h.pid;
  out->rank = h.rank;
  out->nRanks = h.nRanks;
  out->version = h.version;
  out->commHash = h.commHash;
  out->ownerStartTicks = h.ownerStartTicks;
  out->createdNs = h.createdNs;
  out->updatedNs = h.updatedNs.load(std::memory_order_relaxed);
  out->calls = h.calls.load(std::memory_order_relaxed);
  out->dumped = static_cast<RecorderDumpReason>(h.dumped);
  out->host = h.host;
  out->frontEnd = h.frontEnd;
}

}  // namespace

bool copyRecorder(const void* bytes, size_t size, const std::string& source, RecorderCopy* out, std::string* problem,
                  std::vector<std::string>* entryProblems) {
  if (size < sizeof(RecorderHeader)) {
    *problem = formatText("%s: refused: it is %zu bytes, shorter than a flight recorder's header (%zu bytes); it is not a "
                      "recorder, or its owner is still creating it",
                      source.c_str(), size, sizeof(RecorderHeader));
    return false;
  }
  RecorderHeader h;
  std::memcpy(static_cast<void*>(&h), bytes, sizeof(h));
  std::string why = headerProblem(h, size);
  if (!why.empty()) {
    *problem = source + ": refused: " + why + ".";
    return false;
  }
  *out = RecorderCopy();
  out->source = source;
  fillFromHeader(h, out);
  const auto* entries = reinterpret_cast<const RecorderEntry*>(static_cast<const char*>(bytes) + sizeof(RecorderHeader));
  RecorderEntry copy;
  for (size_t i = 0; i < h.capacity; ++i) {
    if (copyEntry(entries[i], &copy) == EntryCopy::kTorn) {
      ++out->beingWritten;
      continue;
    }
    if (copy.firstCallNo == 0 && copy.state == static_cast<int32_t>(RecordedState::kFree)) continue;  // never written
    std::string bad = entryProblem(copy, h);
    if (!bad.empty()) {
      if (entryProblems) entryProblems->push_back(formatText("%s: entry %zu left out: it ", source.c_str(), i) + bad + ".");
      continue;
    }
    out->entries.push_back(fromEntry(copy));
  }
  settleRuns(h, source, &out->entries, entryProblems);
  if (out->beingWritten > 0 && entryProblems) {
    entryProblems->push_back(formatText("%s: %d entries left out: they were being written on every one of %d tries.",
                                    source.c_str(), out->beingWritten, kCopyAttempts));
  }
  return true;
}

namespace {

// Maps `path` read-only and copies the recorder in it.
bool copySegmentFile(const std::string& path, RecorderCopy* out, std::string* problem, std::vector<std::string>* more) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *problem = path + ": cannot open it: " + std::strerror(errno) + ".";
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    *problem = path + ": refused: it is not a regular file.";
    return false;
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < sizeof(RecorderHeader) || size > kMaxRecorderBytes) {
    close(fd);
    std::vector<char> none(sizeof(RecorderHeader));  // the size message, without mapping anything
    if (size < sizeof(RecorderHeader)) return copyRecorder(none.data(), size, path, out, problem, more);
    *problem = formatText("%s: refused: it is %" PRIu64 " bytes, larger than any flight recorder (%" PRIu64 ").",
                      path.c_str(), size, kMaxRecorderBytes);
    return false;
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    *problem = path + ": cannot map it: " + std::strerror(errno) + ".";
    return false;
  }
  bool ok = copyRecorder(map, size, path, out, problem, more);
  munmap(map, size);
  return ok;
}

// Reads the whole file `path` (a dump: nobody writes it any more) and copies the recorder in it.
bool copyDumpFile(const std::string& path, RecorderCopy* out, std::string* problem, std::vector<std::string>* more) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    *problem = path + ": cannot open it: " + std::strerror(errno) + ".";
    return false;
  }
  uint64_t size = static_cast<uint64_t>(in.tellg());
  if (size > kMaxRecorderBytes) {
    *problem = formatText("%s: refused: it is %" PRIu64 " bytes, larger than any flight recorder (%" PRIu64 ").",
                      path.c_str(), size, kMaxRecorderBytes);
    return false;
  }
  // uint64_t words: the entries' atomics need 8-byte alignment.
  std::vector<uint64_t> words((size + 7) / 8 + sizeof(RecorderHeader) / 8);
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(words.data()), static_cast<std::streamsize>(size))) {
    *problem = path + ": cannot read it.";
    return false;
  }
  return copyRecorder(words.data(), size, path, out, problem, more);
}

// The names in `dir` that start with the recorder prefix (and end with `suffix`), sorted.
bool recorderNames(const std::string& dir, const char* suffix, std::vector<std::string>* names, std::string* problem) {
  DIR* d = opendir(dir.c_str());
  if (!d) {
    *problem = dir + ": cannot list it: " + std::strerror(errno) + ".";
    return false;
  }
  size_t prefix = std::strlen(kRecorderPrefix), tail = std::strlen(suffix);
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, prefix, kRecorderPrefix) != 0 || name.size() < prefix + tail) continue;
    if (name.compare(name.size() - tail, tail, suffix) != 0) continue;
    // A segment's name has no dot: dump files (.bin) and a writer's temporary files are not segments.
    if (tail == 0 && name.find('.') != std::string::npos) continue;
    names->push_back(name);
  }
  closedir(d);
  std::sort(names->begin(), names->end());
  return true;
}

}  // namespace

OwnerLiveness segmentOwnerLiveness(int pid, uint64_t startTicks) {
  if (!processAlive(pid)) return OwnerLiveness::kDead;
  ProcStat st;
  // No /proc (or not ours to read): kill() said it runs, which is all we can know.
  if (!readProcStat(pid, &st)) return OwnerLiveness::kAlive;
  if (st.startTicks != startTicks) return OwnerLiveness::kPidReused;
  return st.state == 'T' || st.state == 't' ? OwnerLiveness::kStopped : OwnerLiveness::kAlive;
}

RecorderScan scanSegments(const std::string& shmDir) {
  RecorderScan scan;
  std::vector<std::string> names;
  std::string problem;
  if (!recorderNames(shmDir, "", &names, &problem)) {
    scan.problems.push_back(problem);
    return scan;
  }
  for (const std::string& name : names) {
    RecorderCopy copy;
    if (!copySegmentFile(shmDir + "/" + name, &copy, &problem, &scan.problems)) {
      scan.problems.push_back(problem);
      continue;
    }
    copy.liveness = copy.dumped != RecorderDumpReason::kNone ? OwnerLiveness::kAsDumped
                                                              : segmentOwnerLiveness(copy.pid, copy.ownerStartTicks);
    scan.copies.push_back(std::move(copy));
  }
  return scan;
}

void scanDumps(const std::string& path, RecorderScan* scan) {
  struct stat st;
  std::vector<std::string> files;
  std::string problem;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::vector<std::string> names;
    if (!recorderNames(path, ".bin", &names, &problem)) scan->problems.push_back(problem);
    for (const std::string& name : names) files.push_back(path + "/" + name);
  } else {
    files.push_back(path);
  }
  for (const std::string& file : files) {
    RecorderCopy copy;
    if (!copyDumpFile(file, &copy, &problem, &scan->problems)) {
      scan->problems.push_back(problem);
      continue;
    }
    copy.liveness = OwnerLiveness::kAsDumped;
    scan->copies.push_back(std::move(copy));
  }
}

const char* livenessName(OwnerLiveness liveness) {
  switch (liveness) {
    case OwnerLiveness::kAlive:
      return "alive";
    case OwnerLiveness::kStopped:
      return "stopped";
    case OwnerLiveness::kDead:
      return "dead";
    case OwnerLiveness::kPidReused:
      return "dead (pid reused)";
    case OwnerLiveness::kAsDumped:
      return "as dumped";
  }
  return "unknown";
}

const char* stateName(RecordedState state) {
  static const char* const kNames[] = {"free", "queued", "running", "waiting", "done", "failed"};
  int i = static_cast<int>(state);
  return i >= 0 && i < 6 ? kNames[i] : "unknown";
}

const char* recordedKindName(int32_t kind) {
  if (kind == kRecordedBarrier) return "barrier";
  if (kind < 0 || kind >= coll::kNumCollKinds) return "unknown";
  return coll::collName(static_cast<coll::CollKind>(kind));
}

}  // namespace core
}  // namespace weft
