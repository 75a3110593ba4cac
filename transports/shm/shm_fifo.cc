#include "transports/shm/shm_fifo.h"

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
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "base/log.h"

namespace weft {
namespace shm {
namespace {

size_t roundUp(size_t v, size_t to) { return (v + to - 1) / to * to; }

// Closes a descriptor on every path out.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Unmaps on every path out unless released.
class Mapping {
 public:
  Mapping(void* base, size_t bytes) : base_(base), bytes_(bytes) {}
  ~Mapping() {
    if (base_ != nullptr) munmap(base_, bytes_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  void* get() const { return base_; }
  void* release() { return std::exchange(base_, nullptr); }

 private:
  void* base_;
  size_t bytes_;
};

// Unlinks a segment name on every path out unless dismissed (creation failed half-way).
class UnlinkGuard {
 public:
  explicit UnlinkGuard(const std::string& name) : name_(name) {}
  ~UnlinkGuard() {
    if (armed_) shm_unlink(name_.c_str());
  }
  UnlinkGuard(const UnlinkGuard&) = delete;
  UnlinkGuard& operator=(const UnlinkGuard&) = delete;
  void dismiss() { armed_ = false; }

 private:
  const std::string& name_;
  bool armed_ = true;
};

Status checkGeometry(const FifoSpec& spec) {
  if (spec.nSlots < 1 || spec.nSlots > kMaxSlots || spec.slotBytes < 1 || spec.slotBytes > kMaxSlotBytes) {
    return WEFT_ERROR(weftInvalidArgument,
                      "rank %d: a shared-memory FIFO needs 1 to %zu slots of 1 B to %zu B, not %zu slots of %zu B; "
                      "check WEFT_BUFFSIZE and WEFT_NSLOTS",
                      spec.selfRank, kMaxSlots, kMaxSlotBytes, spec.nSlots, spec.slotBytes);
  }
  return Status::ok();
}

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

// Once per process, before its first FIFO (removeFifosOfDeadProcesses).
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

// Creating with O_EXCL found `name` already there. A segment whose creator still runs belongs
// to someone else (two communicators with one tag): an error. Anything else is left over from a
// crashed run and is replaced.
Status removeStale(const FifoSpec& spec) {
  const char* name = spec.name.c_str();
  bool ready = false;
  int owner = 0;
  uint64_t ownerNs = 0;
  if (segmentOwner(name, &ready, &owner, &ownerNs) && ready && owner != getpid() && ownerNs == processPidNamespace() &&
      processAlive(owner)) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: the shared-memory FIFO %s from rank %d already exists and belongs to the running "
                      "process %d; do two communicators on this host use the same tag?",
                      spec.selfRank, name, spec.peerRank, owner);
  }
  WEFT_LOG(kInfo, kShm, "rank %d: replacing the stale shared-memory segment %s (left by an earlier run)", spec.selfRank,
           name);
  if (shm_unlink(name) != 0 && errno != ENOENT) {
    int err = errno;
    return WEFT_ERROR(weftSystemError, "rank %d: shm_unlink(%s) of a stale segment failed: %s", spec.selfRank, name,
                      errnoText(err).c_str());
  }
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

FifoLayout fifoLayout(size_t nSlots, size_t slotBytes) {
  FifoLayout l;
  l.slotStride = roundUp(slotBytes, slotBytes >= kPageBytes ? kPageBytes : kCacheLine);
  l.controlsOffset = roundUp(sizeof(FifoHeader), kPageBytes);
  l.controlBytes = roundUp(kControlBytes + nSlots * sizeof(SlotDesc), kPageBytes);
  l.controlCandidates = l.controlBytes <= kMaxPlacedControlBytes ? kControlCandidates : 1;
  l.dataOffset = l.controlsOffset + l.controlCandidates * l.controlBytes;
  l.totalBytes = roundUp(l.dataOffset + nSlots * l.slotStride, kPageBytes);
  return l;
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

// A receiver that could not create its FIFO for lack of /dev/shm leaves an empty segment (no
// data: it fits in a full tmpfs) named "<fifo>-nospace"; the sender waiting in attach() finds
// it, removes it and fails at once with the same remedy, instead of timing out.
static std::string noSpaceMarker(const std::string& fifoName) { return fifoName + "-nospace"; }

// The markers this process left: removed at exit when no sender took them (its peer failed too,
// or gave up), so that nothing stays in /dev/shm.
static std::mutex markersMutex;
static std::vector<std::string>* markers = new std::vector<std::string>();  // used at exit

// A rank that fails often exits at once: give each waiting sender up to 2 s (it polls every
// 200 us at most) to take its marker before removing it (failure path only).
static void removeMarkersAtExit() {
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

static void markNoSpace(const std::string& fifoName) {
  const std::string marker = noSpaceMarker(fifoName);
  int fd = shm_open(marker.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) return;
  close(fd);
  static const int registered = std::atexit(removeMarkersAtExit);
  (void)registered;
  std::lock_guard<std::mutex> lock(markersMutex);
  markers->push_back(marker);
}

static bool takeNoSpaceMark(const std::string& fifoName) {
  return shm_unlink(noSpaceMarker(fifoName).c_str()) == 0;
}

Status checkShmSpace(uint64_t freeBytes, uint64_t needBytes, int selfRank, int peerRank) {
  if (needBytes <= freeBytes) return Status::ok();
  return WEFT_ERROR(weftSystemError,
                    "rank %d: /dev/shm has %s free but the shared-memory transport needs %s more for the FIFO from "
                    "rank %d; run the container with --shm-size=1g, lower WEFT_BUFFSIZE, or set WEFT_SHM_DISABLE=1",
                    selfRank, formatBytes(freeBytes).c_str(), formatBytes(needBytes).c_str(), peerRank);
}

ShmFifo::ShmFifo(Role role, const FifoSpec& spec, void* base, size_t bytes)
    : role_(role), spec_(spec), base_(base), mappedBytes_(bytes) {
  header_ = static_cast<FifoHeader*>(base);
  nSlots_ = header_->nSlots;
  slotBytes_ = header_->slotBytes;
  stride_ = header_->slotStride;
  control_ = reinterpret_cast<FifoControl*>(static_cast<char*>(base) + header_->controlOffset);
  descs_ = reinterpret_cast<SlotDesc*>(static_cast<char*>(base) + header_->descsOffset);
  data_ = static_cast<char*>(base) + header_->dataOffset;
}

ShmFifo::~ShmFifo() {
  // The sender unlinks the name once it has mapped the segment; until then it is ours to remove.
  if (role_ == Role::kReceiver && header_->senderAttached.load(std::memory_order_acquire) == 0) {
    if (shm_unlink(spec_.name.c_str()) != 0 && errno != ENOENT) {
      int err = errno;
      WEFT_LOG(kWarn, kShm, "rank %d: shm_unlink(%s) failed: %s", spec_.selfRank, spec_.name.c_str(),
               errnoText(err).c_str());
    }
  }
  munmap(base_, mappedBytes_);
}

namespace {

// The candidate control block nearest this CPU (near_pages.h); the segment's pages must exist.
size_t chooseControlBlock(const char* base, const FifoSpec& spec, const FifoLayout& layout) {
  if (layout.controlCandidates <= 1 || !spec.nearPages) return 0;
  const PageProbe probe = spec.probe ? spec.probe : [](size_t, const void* line) { return reloadCycles(line); };
  std::vector<uint64_t> costs;
  const size_t block =
      nearestBlock(base + layout.controlsOffset, layout.controlBytes, layout.controlCandidates, probe, &costs);
  std::string text;
  for (uint64_t c : costs) text += " " + std::to_string(c);
  WEFT_LOG(kTrace, kShm, "rank %d: the FIFO from rank %d keeps its control block on candidate %zu (reload cycles:%s)",
           spec.selfRank, spec.peerRank, block, text.c_str());
  return block;
}

// Writes a new FIFO's header, control block and slot descriptors into `base`; the magic last,
// so that a sender that sees it sees the rest.
void initHeader(void* base, const FifoSpec& spec, const FifoLayout& layout) {
  const size_t block = chooseControlBlock(static_cast<const char*>(base), spec, layout);
  auto* h = new (base) FifoHeader();
  h->version = kFifoVersion;
  h->nSlots = spec.nSlots;
  h->slotBytes = spec.slotBytes;
  h->slotStride = layout.slotStride;
  h->controlOffset = layout.controlsOffset + block * layout.controlBytes;
  h->descsOffset = h->controlOffset + kControlBytes;
  h->dataOffset = layout.dataOffset;
  h->totalBytes = layout.totalBytes;
  h->receiverRank = spec.selfRank;
  h->receiverPid = getpid();
  h->receiverPidNs = processPidNamespace();
  h->senderRank = spec.peerRank;
  new (static_cast<char*>(base) + h->controlOffset) FifoControl{{0}, {0}};
  auto* descs = reinterpret_cast<char*>(base) + h->descsOffset;
  for (size_t i = 0; i < spec.nSlots; ++i) new (descs + i * sizeof(SlotDesc)) SlotDesc{{0}, 0, 0, {}};
  h->magic.store(kFifoMagic, std::memory_order_release);
}

// Reserves the segment's real space: a sparse segment over-commits /dev/shm, and the first write
// past what is left would kill this rank or its peer with SIGBUS instead of failing here.
Status reserveSpace(int fd, size_t bytes, const FifoSpec& spec) {
  int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  while (rc == EINTR) rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc == ENOSPC) {
    markNoSpace(spec.name);
    return WEFT_ERROR(weftSystemError,
                      "rank %d: /dev/shm has %s free but the shared-memory transport needs %s for the FIFO from rank "
                      "%d; run the container with --shm-size=1g, lower WEFT_BUFFSIZE, or set WEFT_SHM_DISABLE=1",
                      spec.selfRank, formatBytes(shmFreeBytes()).c_str(), formatBytes(bytes).c_str(), spec.peerRank);
  }
  if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
    return WEFT_ERROR(weftSystemError, "rank %d: reserving %s of /dev/shm for %s (the FIFO from rank %d) failed: %s",
                      spec.selfRank, formatBytes(bytes).c_str(), spec.name.c_str(), spec.peerRank,
                      errnoText(rc).c_str());
  }
  return Status::ok();
}

// Re-draws the far pages of the control candidates and the slots (near_pages.h), where there
// are not too many to probe.
Status settlePages(int fd, char* base, const FifoSpec& spec, const FifoLayout& layout) {
  constexpr size_t kMaxSettledBytes = size_t{16} << 20;
  constexpr int kMaxRounds = 12;  // on the VM measured, 256 pages settle in about 10
  const size_t bytes = layout.totalBytes - layout.controlsOffset;
  if (bytes > kMaxSettledBytes || !spec.nearPages) return Status::ok();
  SettleReport r;
  const PageProbe probe = [](size_t, const void* line) { return reloadCycles(line); };
  Status s = settleNear(fd, base, layout.controlsOffset, bytes, probe, kMaxRounds, &r);
  if (!s.isOk()) {
    markNoSpace(spec.name);
    return std::move(s).withPrefix("rank " + std::to_string(spec.selfRank) + ": the FIFO from rank " +
                                   std::to_string(spec.peerRank) + ": ");
  }
  WEFT_LOG(kTrace, kShm, "rank %d: the FIFO from rank %d: %zu of %zu pages were far, %zu after %d rounds",
           spec.selfRank, spec.peerRank, r.farBefore, r.pages, r.farAfter, r.rounds);
  return Status::ok();
}

// Asks for the segment's pages on spec.numaNode; returns the node the kernel then reports, -1
// when none was asked for or the kernel refused (logged: the FIFO still works, pages fall where
// they are first allocated).
int placeOnNode(void* base, size_t bytes, const FifoSpec& spec) {
  if (spec.numaNode < 0) return -1;
  int err = 0;
  if (!preferNumaNode(base, bytes, spec.numaNode, &err)) {
    WEFT_LOG(kInfo, kShm, "rank %d: cannot place the FIFO from rank %d on NUMA node %d (%s); left to first touch",
             spec.selfRank, spec.peerRank, spec.numaNode, errnoText(err).c_str());
    return -1;
  }
  return preferredNumaNode(base);
}

// Whether a header's control block is one of the layout's candidates, with the descriptors
// right after it (a sender must not trust offsets it did not check).
bool controlPlaced(const FifoHeader& h, const FifoLayout& layout) {
  if (h.controlOffset < layout.controlsOffset) return false;
  const uint64_t rel = h.controlOffset - layout.controlsOffset;
  return rel % layout.controlBytes == 0 && rel / layout.controlBytes < layout.controlCandidates &&
         h.descsOffset == h.controlOffset + kControlBytes;
}

}  // namespace

Status ShmFifo::create(const FifoSpec& spec, std::unique_ptr<ShmFifo>* out, uint64_t freeBytes) {
  WEFT_TRY(checkGeometry(spec));
  sweepDeadOwners(spec.selfRank);
  const FifoLayout layout = fifoLayout(spec.nSlots, spec.slotBytes);
  if (Status space = checkShmSpace(freeBytes, layout.totalBytes, spec.selfRank, spec.peerRank); !space.isOk()) {
    markNoSpace(spec.name);
    return space;
  }
  const char* name = spec.name.c_str();

  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 && errno == EEXIST) {
    WEFT_TRY(removeStale(spec));
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  }
  if (fd < 0) {
    int err = errno;
    return WEFT_ERROR(weftSystemError, "rank %d: shm_open(%s) for the FIFO from rank %d failed: %s", spec.selfRank,
                      name, spec.peerRank, errnoText(err).c_str());
  }
  Fd guard(fd);
  UnlinkGuard unlinkOnError(spec.name);

  if (ftruncate(fd, static_cast<off_t>(layout.totalBytes)) != 0) {
    int err = errno;
    return WEFT_ERROR(weftSystemError, "rank %d: ftruncate(%s, %s) for the FIFO from rank %d failed: %s", spec.selfRank,
                      name, formatBytes(layout.totalBytes).c_str(), spec.peerRank, errnoText(err).c_str());
  }
  void* base = mmap(nullptr, layout.totalBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    int err = errno;
    return WEFT_ERROR(weftSystemError, "rank %d: mmap of %s (%s) for the FIFO from rank %d failed: %s", spec.selfRank,
                      name, formatBytes(layout.totalBytes).c_str(), spec.peerRank, errnoText(err).c_str());
  }
  Mapping map(base, layout.totalBytes);
  // The policy goes on the segment before its pages exist, so that the reservation below
  // allocates them on the reader's (this rank's) NUMA node.
  const int placed = placeOnNode(base, layout.totalBytes, spec);
  WEFT_TRY(reserveSpace(fd, layout.totalBytes, spec));
  WEFT_TRY(settlePages(fd, static_cast<char*>(base), spec, layout));

  // The header, byte counts and stamps are written here; the slots' pages already exist (the
  // reservation allocated them, on the preferred node where one was given).
  initHeader(base, spec, layout);

  std::unique_ptr<ShmFifo> fifo(new ShmFifo(Role::kReceiver, spec, map.release(), layout.totalBytes));
  fifo->placedNode_ = placed;
  // Until the sender attaches, the pid the peer reported at init is all there is to watch.
  fifo->peerPidComparable_ = spec.peerPid > 0 && spec.peerPid != getpid() && processAlive(spec.peerPid);
  unlinkOnError.dismiss();
  *out = std::move(fifo);
  WEFT_LOG(kTrace, kShm, "rank %d: created %s: %zu slots of %zu B, %s mapped", spec.selfRank, name, spec.nSlots,
           spec.slotBytes, formatBytes(layout.totalBytes).c_str());
  return Status::ok();
}

Status ShmFifo::attach(const FifoSpec& spec, Deadline deadline, std::unique_ptr<ShmFifo>* out) {
  WEFT_TRY(checkGeometry(spec));
  const char* name = spec.name.c_str();
  const uint64_t startNs = nowNs();
  Backoff backoff;
  for (;;) {
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0 && errno == ENOENT && takeNoSpaceMark(spec.name)) {
      return WEFT_ERROR(weftSystemError,
                        "rank %d: rank %d could not create the shared-memory FIFO to this rank: /dev/shm is full (%s "
                        "free here); run the container with --shm-size=1g, lower WEFT_BUFFSIZE, or set "
                        "WEFT_SHM_DISABLE=1",
                        spec.selfRank, spec.peerRank, formatBytes(shmFreeBytes()).c_str());
    }
    if (fd < 0 && errno != ENOENT) {
      int err = errno;
      return WEFT_ERROR(weftSystemError, "rank %d: shm_open(%s) for the FIFO to rank %d failed: %s", spec.selfRank,
                        name, spec.peerRank, errnoText(err).c_str());
    }
    if (fd >= 0) {
      Fd guard(fd);
      struct stat st;
      if (fstat(fd, &st) != 0) {
        int err = errno;
        return WEFT_ERROR(weftSystemError, "rank %d: fstat(%s) failed: %s", spec.selfRank, name,
                          errnoText(err).c_str());
      }
      // Size 0: the receiver has not sized it yet.
      const size_t bytes = static_cast<size_t>(st.st_size);
      if (bytes >= sizeof(FifoHeader)) {
        void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) {
          int err = errno;
          return WEFT_ERROR(weftSystemError, "rank %d: mmap of %s (%s) for the FIFO to rank %d failed: %s",
                            spec.selfRank, name, formatBytes(bytes).c_str(), spec.peerRank, errnoText(err).c_str());
        }
        Mapping map(base, bytes);
        auto* h = static_cast<FifoHeader*>(base);
        bool ready = h->magic.load(std::memory_order_acquire) == kFifoMagic;
        // A ready segment made by another process than the peer is left over from a crashed
        // run; the peer replaces it when it gets to connectRecv().
        bool stale = ready && (spec.peerPid > 0 ? h->receiverPid != spec.peerPid
                                                : h->receiverPid != getpid() && !processAlive(h->receiverPid));
        if (ready && !stale) {
          if (h->version != kFifoVersion) {
            return WEFT_ERROR(weftInvalidUsage,
                              "rank %d: rank %d made the shared-memory FIFO %s with format version %u but this rank "
                              "uses version %u; every rank must run the same Weft build",
                              spec.selfRank, spec.peerRank, name, h->version, kFifoVersion);
          }
          if (h->nSlots != spec.nSlots || h->slotBytes != spec.slotBytes) {
            return WEFT_ERROR(weftInvalidUsage,
                              "rank %d: rank %d made the shared-memory FIFO %s with %" PRIu64 " slots of %" PRIu64
                              " B but this rank expects %zu slots of %zu B; every rank must use the same "
                              "WEFT_BUFFSIZE and WEFT_NSLOTS",
                              spec.selfRank, spec.peerRank, name, h->nSlots, h->slotBytes, spec.nSlots, spec.slotBytes);
          }
          const FifoLayout layout = fifoLayout(spec.nSlots, spec.slotBytes);
          if (h->totalBytes != bytes || layout.totalBytes != bytes || h->slotStride != layout.slotStride ||
              !controlPlaced(*h, layout) || h->dataOffset != layout.dataOffset) {
            return WEFT_ERROR(weftInternalError,
                              "rank %d: the shared-memory FIFO %s from rank %d has an inconsistent layout "
                              "(%zu B mapped, header says %" PRIu64 " B, expected %zu B)",
                              spec.selfRank, name, spec.peerRank, bytes, h->totalBytes, layout.totalBytes);
          }
          // Both sides have it mapped now: drop the name so that no crash can leak it.
          if (shm_unlink(name) != 0 && errno != ENOENT) {
            int err = errno;
            WEFT_LOG(kWarn, kShm, "rank %d: shm_unlink(%s) failed: %s", spec.selfRank, name, errnoText(err).c_str());
          }
          h->senderPid.store(getpid(), std::memory_order_relaxed);
          h->senderPidNs.store(processPidNamespace(), std::memory_order_relaxed);
          h->senderAttached.store(1, std::memory_order_release);

          std::unique_ptr<ShmFifo> fifo(new ShmFifo(Role::kSender, spec, map.release(), bytes));
          int peer = h->receiverPid;
          fifo->peerPidComparable_ = peer != getpid() && h->receiverPidNs == processPidNamespace();
          *out = std::move(fifo);
          WEFT_LOG(kTrace, kShm, "rank %d: attached to %s after %.3f s", spec.selfRank, name,
                   static_cast<double>(nowNs() - startNs) / 1e9);
          return Status::ok();
        }
      }
    }
    if (spec.abort && spec.abort->load(std::memory_order_relaxed)) {
      return WEFT_ERROR(weftRemoteError, "rank %d: aborted while waiting for rank %d's shared-memory FIFO %s",
                        spec.selfRank, spec.peerRank, name);
    }
    if (deadline.expired()) {
      double waited = static_cast<double>(nowNs() - startNs) / 1e9;
      return WEFT_ERROR(weftTimeout,
                        "rank %d: timed out after %.3g s waiting for rank %d to create its shared-memory FIFO %s; "
                        "is rank %d running and in the same communicator?",
                        spec.selfRank, waited, spec.peerRank, name, spec.peerRank);
    }
    backoff.pause();
  }
}

size_t ShmFifo::controlBlock() const {
  const FifoLayout layout = fifoLayout(nSlots_, slotBytes_);
  return (header_->controlOffset - layout.controlsOffset) / layout.controlBytes;
}

int ShmFifo::peerPidToCheck() const {
  if (role_ == Role::kSender) return peerPidComparable_ ? header_->receiverPid : 0;
  if (header_->senderAttached.load(std::memory_order_acquire) != 0) {
    int pid = header_->senderPid.load(std::memory_order_relaxed);
    bool comparable = pid != getpid() && header_->senderPidNs.load(std::memory_order_relaxed) == processPidNamespace();
    return comparable ? pid : 0;
  }
  return peerPidComparable_ ? spec_.peerPid : 0;
}

Status ShmFifo::checkPeer() const {
  const std::atomic<uint32_t>& peerAbort = role_ == Role::kSender ? header_->receiverAbort : header_->senderAbort;
  if (peerAbort.load(std::memory_order_acquire) != 0) {
    return WEFT_ERROR(weftRemoteError, "rank %d reported a failure; see its log for the cause", spec_.peerRank);
  }
  // Threads of one process share a pid: for them the abort flag is the only signal.
  int pid = peerPidToCheck();
  if (pid > 0 && !processAlive(pid)) {
    const std::string host = spec_.peerHost.empty() ? hostName() : spec_.peerHost;
    return WEFT_ERROR(weftRemoteError,
                      "rank %d (pid %d on host %s) exited while this rank was waiting for it; check rank %d's output "
                      "for the cause (a crash, the OOM killer, a kill)",
                      spec_.peerRank, pid, host.c_str(), spec_.peerRank);
  }
  return Status::ok();
}

void ShmFifo::signalAbort(int culprit) {
  std::atomic<uint32_t>& mine = role_ == Role::kSender ? header_->senderAbort : header_->receiverAbort;
  uint32_t value = culprit >= 0 ? static_cast<uint32_t>(culprit) + 2 : 1;
  uint32_t expected = 0;
  mine.compare_exchange_strong(expected, value, std::memory_order_release);
}

}  // namespace shm
}  // namespace weft
