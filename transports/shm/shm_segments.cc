// The /dev/shm side of the shared-memory FIFOs (shm_segments.h).
#include "transports/shm/shm_segments.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/log.h"
#include "base/os.h"
#include "transports/shm/shm_fifo.h"

namespace weft {
namespace shm {
namespace {

// Closes a descriptor on every path out.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

 private:
  int fd_;
};

// Unmaps on every path out.
class Mapping {
 public:
  Mapping(void* base, size_t bytes) : base_(base), bytes_(bytes) {}
  ~Mapping() {
    if (base_ != nullptr) munmap(base_, bytes_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

 private:
  void* base_;
  size_t bytes_;
};

// The creator of the FIFO segment `name` as its header says: *ready false while the header is
// not complete (being created, or not a FIFO); false when the segment cannot be read.
bool segmentOwner(const char* name, bool* ready, int* owner, uint64_t* ownerPidNs) {
  int fd = shm_open(name, O_RDONLY, 0);
  if (fd < 0) return false;
  Fd guard(fd);
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(FifoHeader)) return false;
  void* p = mmap(nullptr, sizeof(FifoHeader), PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return false;
  Mapping map(p, sizeof(FifoHeader));
  const auto* h = static_cast<const FifoHeader*>(p);
  *ready = h->magic.load(std::memory_order_acquire) == kFifoMagic;
  *owner = h->receiverPid;
  *ownerPidNs = h->receiverPidNs;
  return true;
}

// Creating with O_EXCL found `id.name` already there. A segment whose creator still runs belongs
// to someone else (two communicators with one tag): an error. Anything else is left over from a
// crashed run and is replaced.
Status removeStale(const SegmentId& id) {
  const char* name = id.name.c_str();
  bool ready = false;
  int owner = 0;
  uint64_t ownerNs = 0;
  if (segmentOwner(name, &ready, &owner, &ownerNs) && ready && owner != getpid() && ownerNs == processPidNamespace() &&
      processAlive(owner)) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: the shared-memory FIFO %s from rank %d already exists and belongs to the running "
                      "process %d; do two communicators on this host use the same tag?",
                      id.selfRank, name, id.peerRank, owner);
  }
  WEFT_LOG(kInfo, kShm, "rank %d: replacing the stale shared-memory segment %s (left by an earlier run)", id.selfRank,
           name);
  if (shm_unlink(name) != 0 && errno != ENOENT) {
    int err = errno;
    return WEFT_ERROR(weftSystemError, "rank %d: shm_unlink(%s) of a stale segment failed: %s", id.selfRank, name,
                      errnoText(err).c_str());
  }
  return Status::ok();
}

std::string noSpaceMarker(const std::string& fifoName) { return fifoName + "-nospace"; }

// The markers this process left: removed at exit when no sender took them (its peer failed too,
// or gave up), so that nothing stays in /dev/shm.
std::mutex markersMutex;
std::vector<std::string>* markers = new std::vector<std::string>();  // used at exit

// A rank that fails often exits at once: give each waiting sender up to 2 s (it polls every
// 200 us at most) to take its marker before removing it (failure path only).
void removeMarkersAtExit() {
  std::lock_guard<std::mutex> lock(markersMutex);
  for (const std::string& m : *markers) {
    for (int i = 0; i < 400; ++i) {
      int fd = shm_open(m.c_str(), O_RDONLY, 0);
      if (fd < 0) break;  // taken
      close(fd);
      usleep(5000);
    }
    shm_unlink(m.c_str());
  }
  markers->clear();
}

bool takeNoSpaceMark(const std::string& fifoName) { return shm_unlink(noSpaceMarker(fifoName).c_str()) == 0; }

// Maps `bytes` of the segment open on `fd`; `direction` words the message ("from", "to").
Status mapSegment(int fd, size_t bytes, const SegmentId& id, const char* direction, void** base) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    return WEFT_ERROR(weftSystemError, "rank %d: mmap of %s (%s) for the FIFO %s rank %d failed: %s", id.selfRank,
                      id.name.c_str(), formatBytes(bytes).c_str(), direction, id.peerRank, errnoText(err).c_str());
  }
  *base = p;
  return Status::ok();
}

}  // namespace

size_t removeFifosOfDeadProcesses() {
  return unlinkShmSegments("weft-", [](const std::string& name) {
    if (name.rfind("/weft-mem-", 0) == 0) return false;  // weftMemAlloc's (host_memory.cc)
    bool ready = false;
    int owner = 0;
    uint64_t ownerNs = 0;
    return segmentOwner(name.c_str(), &ready, &owner, &ownerNs) && ready && creatorGone(owner, ownerNs);
  });
}

void sweepDeadOwners(int selfRank) {
  static std::once_flag once;
  std::call_once(once, [selfRank] {
    const size_t removed = removeFifosOfDeadProcesses();
    if (removed > 0) {
      WEFT_LOG(kInfo, kShm, "rank %d: removed %zu shared-memory FIFO segments left by processes that no longer run",
               selfRank, removed);
    }
  });
}

std::string fifoName(const std::string& commTag, int sender, int receiver, int lane) {
  std::string tag = commTag;
  for (char& c : tag) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    if (!ok) c = '_';
  }
  if (tag.size() > 160) {
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016" PRIx64, hashBytes(commTag.data(), commTag.size()));
    tag = hex;
  }
  char buf[256];
  std::snprintf(buf, sizeof(buf), "/weft-%s-%d-%d-%d", tag.c_str(), sender, receiver, lane);
  return buf;
}

uint64_t shmFreeBytes() {
  struct statvfs vfs;
  if (statvfs("/dev/shm", &vfs) != 0) return UINT64_MAX;
  return static_cast<uint64_t>(vfs.f_bavail) * static_cast<uint64_t>(vfs.f_frsize);
}

Status checkShmSpace(uint64_t freeBytes, uint64_t needBytes, int selfRank, int peerRank) {
  if (needBytes <= freeBytes) return Status::ok();
  return WEFT_ERROR(weftSystemError,
                    "rank %d: /dev/shm has %s free but the shared-memory transport needs %s more for the FIFO from "
                    "rank %d; run the container with --shm-size=1g, lower WEFT_BUFFSIZE, or set WEFT_SHM_DISABLE=1",
                    selfRank, formatBytes(freeBytes).c_str(), formatBytes(needBytes).c_str(), peerRank);
}

void markNoSpace(const std::string& fifoName) {
  const std::string marker = noSpaceMarker(fifoName);
  int fd = shm_open(marker.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) return;
  close(fd);
  static const int registered = std::atexit(removeMarkersAtExit);
  (void)registered;
  std::lock_guard<std::mutex> lock(markersMutex);
  markers->push_back(marker);
}

Segment::~Segment() {
  if (base_ != nullptr) munmap(base_, bytes_);
  if (!unlinkName_.empty()) shm_unlink(unlinkName_.c_str());
  if (fd_ >= 0) close(fd_);
}

Status Segment::create(const SegmentId& id, size_t bytes, Segment* out) {
  const char* name = id.name.c_str();
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 && errno == EEXIST) {
    WEFT_TRY(removeStale(id));
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  }
  if (fd < 0) {
    int err = errno;
    return WEFT_ERROR(weftSystemError, "rank %d: shm_open(%s) for the FIFO from rank %d failed: %s", id.selfRank, name,
                      id.peerRank, errnoText(err).c_str());
  }
  out->fd_ = fd;
  out->unlinkName_ = id.name;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    return WEFT_ERROR(weftSystemError, "rank %d: ftruncate(%s, %s) for the FIFO from rank %d failed: %s", id.selfRank,
                      name, formatBytes(bytes).c_str(), id.peerRank, errnoText(err).c_str());
  }
  WEFT_TRY(mapSegment(fd, bytes, id, "from", &out->base_));
  out->bytes_ = bytes;
  return Status::ok();
}

Status Segment::open(const SegmentId& id, size_t minBytes, Segment* out) {
  const char* name = id.name.c_str();
  int fd = shm_open(name, O_RDWR, 0);
  if (fd < 0 && errno == ENOENT && takeNoSpaceMark(id.name)) {
    return WEFT_ERROR(weftSystemError,
                      "rank %d: rank %d could not create the shared-memory FIFO to this rank: /dev/shm is full (%s "
                      "free here); run the container with --shm-size=1g, lower WEFT_BUFFSIZE, or set "
                      "WEFT_SHM_DISABLE=1",
                      id.selfRank, id.peerRank, formatBytes(shmFreeBytes()).c_str());
  }
  if (fd < 0 && errno != ENOENT) {
    int err = errno;
    return WEFT_ERROR(weftSystemError, "rank %d: shm_open(%s) for the FIFO to rank %d failed: %s", id.selfRank, name,
                      id.peerRank, errnoText(err).c_str());
  }
  if (fd < 0) return Status::ok();  // not made yet
  out->fd_ = fd;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    return WEFT_ERROR(weftSystemError, "rank %d: fstat(%s) failed: %s", id.selfRank, name, errnoText(err).c_str());
  }
  // Too short (size 0: the receiver has not sized it yet): not there yet.
  const size_t bytes = static_cast<size_t>(st.st_size);
  if (bytes < minBytes) return Status::ok();
  WEFT_TRY(mapSegment(fd, bytes, id, "to", &out->base_));
  out->bytes_ = bytes;
  return Status::ok();
}

Status Segment::reserve(const SegmentId& id) const {
  int rc = posix_fallocate(fd_, 0, static_cast<off_t>(bytes_));
  while (rc == EINTR) rc = posix_fallocate(fd_, 0, static_cast<off_t>(bytes_));
  if (rc == ENOSPC) {
    markNoSpace(id.name);
    return WEFT_ERROR(weftSystemError,
                      "rank %d: /dev/shm has %s free but the shared-memory transport needs %s for the FIFO from rank "
                      "%d; run the container with --shm-size=1g, lower WEFT_BUFFSIZE, or set WEFT_SHM_DISABLE=1",
                      id.selfRank, formatBytes(shmFreeBytes()).c_str(), formatBytes(bytes_).c_str(), id.peerRank);
  }
  if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
    return WEFT_ERROR(weftSystemError, "rank %d: reserving %s of /dev/shm for %s (the FIFO from rank %d) failed: %s",
                      id.selfRank, formatBytes(bytes_).c_str(), id.name.c_str(), id.peerRank, errnoText(rc).c_str());
  }
  return Status::ok();
}

void* Segment::release() {
  unlinkName_.clear();
  return std::exchange(base_, nullptr);
}

void unmapSegment(void* base, size_t bytes) { munmap(base, bytes); }

void unlinkSegment(const std::string& name, int selfRank) {
  if (shm_unlink(name.c_str()) != 0 && errno != ENOENT) {
    int err = errno;
    WEFT_LOG(kWarn, kShm, "rank %d: shm_unlink(%s) failed: %s", selfRank, name.c_str(), errnoText(err).c_str());
  }
}

}  // namespace shm
}  // namespace weft
