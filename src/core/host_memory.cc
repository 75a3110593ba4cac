// Shared host allocations (host_memory.h): this process's own, and its mappings of its peers'.
#include "core/host_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "base/log.h"
#include "base/os.h"

namespace weft {
namespace core {
namespace {

struct Segment {
  uint64_t owner = 0;  // processHash() of the allocating process (a forked child inherits the table)
  uint64_t id = 0;
  size_t bytes = 0;
};

// Written after the memory, in a page of its own that nobody maps: who created the segment, so
// that a later process can tell one left by a killed process (removeHostMemoryOfDeadProcesses).
struct SegmentTrailer {
  uint64_t magic = 0;
  int64_t pid = 0;
  uint64_t pidNs = 0;
};
constexpr uint64_t kTrailerMagic = 0x776566746d656d31ull;  // "weftmem1"

size_t pageBytes() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

struct SharedTables {
  std::mutex mutex;
  uint64_t nextId = 1;
  std::map<char*, Segment> own;  // by start address
  std::map<std::pair<uint64_t, uint64_t>, std::pair<char*, size_t>> peers;  // (owner, id) -> mapping
};

SharedTables& tables() {
  static SharedTables* t = new SharedTables();  // never destroyed: frees may come at exit
  return *t;
}

constexpr char kSegmentPrefix[] = "/weft-mem-";

std::string segmentName(uint64_t owner, uint64_t id) {
  char name[64];
  std::snprintf(name, sizeof(name), "%s%016" PRIx64 "-%" PRIu64, kSegmentPrefix, owner, id);
  return name;
}

// Names of allocations never freed would outlive the process in /dev/shm (a forked child leaves
// its parent's alone).
void unlinkLeftovers() {
  SharedTables& t = tables();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (const auto& [p, seg] : t.own) {
    if (seg.owner == processHash()) shm_unlink(segmentName(seg.owner, seg.id).c_str());
  }
}

Status mapNamed(const std::string& name, size_t bytes, bool create, char** out) {
  int fd = shm_open(name.c_str(), create ? O_RDWR | O_CREAT | O_EXCL : O_RDWR, 0600);
  if (fd < 0) {
    return WEFT_ERROR(weftSystemError, "shm_open(%s) for shared host memory failed: %s", name.c_str(),
                      errnoText(errno).c_str());
  }
  struct stat st {};
  int err = 0;
  // The trailer lies past the memory: the segment is a page longer than what is mapped.
  const SegmentTrailer trailer{kTrailerMagic, getpid(), processPidNamespace()};
  if (create && ftruncate(fd, static_cast<off_t>(bytes + pageBytes())) != 0) err = errno;
  if (create && err == 0 && pwrite(fd, &trailer, sizeof(trailer), static_cast<off_t>(bytes)) != sizeof(trailer)) {
    err = errno != 0 ? errno : EIO;
  }
  if (!create && fstat(fd, &st) != 0) err = errno;
  if (!create && err == 0 && static_cast<uint64_t>(st.st_size) < bytes) err = EINVAL;
  void* p = err == 0 ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (err == 0 && p == MAP_FAILED) err = errno;
  close(fd);
  if (err != 0) {
    if (create) shm_unlink(name.c_str());
    return WEFT_ERROR(weftSystemError,
                      "mapping %s of shared host memory (%s) failed: %s; /dev/shm may be too small (run the "
                      "container with a larger --shm-size) or the owner freed it",
                      formatBytes(bytes).c_str(), name.c_str(), errnoText(err).c_str());
  }
  *out = static_cast<char*>(p);
  return Status::ok();
}

// The trailer of segment `name`; false when it cannot be read or is not (yet) there.
bool readTrailer(const std::string& name, SegmentTrailer* out) {
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  struct stat st {};
  const size_t page = pageBytes();
  bool ok = fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= page && st.st_size % page == 0 &&
            pread(fd, out, sizeof(*out), st.st_size - static_cast<off_t>(page)) == sizeof(*out);
  close(fd);
  return ok && out->magic == kTrailerMagic;
}

}  // namespace

size_t removeHostMemoryOfDeadProcesses() {
  return unlinkShmSegments(kSegmentPrefix + 1, [](const std::string& name) {
    SegmentTrailer t;
    // A forked child of the creator holds the allocation too and may offer it to peers, who open
    // it by name: kept while any process maps it (peers' mappings would survive the unlink).
    return readTrailer(name, &t) && creatorGone(static_cast<int>(t.pid), t.pidNs) &&
           !mappedByLiveProcess("/dev/shm" + name);
  });
}

void sweepDeadHostMemoryOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    const size_t removed = removeHostMemoryOfDeadProcesses();
    if (removed > 0) {
      WEFT_LOG(kInfo, kShm, "removed %zu shared host memory segments (weftMemAlloc) left by processes that no longer run",
               removed);
    }
  });
}

Status allocSharedHost(size_t bytes, void** out) {
  static const bool atExit = std::atexit(unlinkLeftovers) == 0;
  (void)atExit;
  sweepDeadHostMemoryOnce();
  const size_t page = pageBytes();
  const size_t rounded = (bytes + page - 1) / page * page;
  SharedTables& t = tables();
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    id = t.nextId++;
  }
  char* p = nullptr;
  WEFT_TRY(mapNamed(segmentName(processHash(), id), rounded, true, &p));
  std::lock_guard<std::mutex> lock(t.mutex);
  t.own[p] = Segment{processHash(), id, rounded};
  *out = p;
  return Status::ok();
}

bool freeSharedHost(void* p) {
  SharedTables& t = tables();
  Segment seg;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    auto it = t.own.find(static_cast<char*>(p));
    if (it == t.own.end()) return false;
    seg = it->second;
    t.own.erase(it);
  }
  if (seg.owner == processHash()) shm_unlink(segmentName(seg.owner, seg.id).c_str());
  munmap(p, seg.bytes);
  return true;
}

bool findSharedHost(const void* p, size_t bytes, SharedSpan* out) {
  const char* c = static_cast<const char*>(p);
  SharedTables& t = tables();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.own.upper_bound(const_cast<char*>(c));
  if (it == t.own.begin()) return false;
  --it;
  const size_t offset = static_cast<size_t>(c - it->first);
  if (offset >= it->second.bytes || bytes > it->second.bytes - offset) return false;
  *out = SharedSpan{it->second.owner, it->second.id, it->second.bytes, offset, bytes};
  return true;
}

Status mapSharedHost(const SharedSpan& span, char** out) {
  if (span.owner == 0 || span.offset > span.segmentBytes || span.bytes > span.segmentBytes - span.offset) {
    return WEFT_ERROR(weftInternalError,
                      "a peer described shared host memory that cannot be (%" PRIu64 " bytes at offset %" PRIu64
                      " of a %" PRIu64 "-byte segment)",
                      span.bytes, span.offset, span.segmentBytes);
  }
  SharedTables& t = tables();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (const auto& [p, seg] : t.own) {
    if (seg.owner == span.owner && seg.id == span.id && seg.bytes == span.segmentBytes) {
      *out = p + span.offset;
      return Status::ok();
    }
  }
  auto key = std::make_pair(span.owner, span.id);
  auto it = t.peers.find(key);
  if (it == t.peers.end() || it->second.second < span.segmentBytes) {
    char* base = nullptr;
    WEFT_TRY(mapNamed(segmentName(span.owner, span.id), span.segmentBytes, false, &base));
    if (it != t.peers.end()) munmap(it->second.first, it->second.second);
    it = t.peers.insert_or_assign(key, std::make_pair(base, static_cast<size_t>(span.segmentBytes))).first;
  }
  *out = it->second.first + span.offset;
  return Status::ok();
}

}  // namespace core
}  // namespace weft
