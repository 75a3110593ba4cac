// Communicator's windows and signals (comm_window.h says how they work): registration (an
// all-gather of every rank's window over the bootstrap), puts, signals and waits.
#include "core/comm_window.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/os.h"
#include "core/comm.h"

namespace weft {
namespace core {
namespace {

// What each rank tells the others about its new window: plain old data, exchanged as bytes.
struct WindowOffer {
  uint64_t address = 0;
  uint64_t bytes = 0;
  SharedSpan span;  // owner 0: not shared memory
  uint32_t id = 0;
  uint32_t pad = 0;
};

}  // namespace

Status Communicator::makeSignals(const Deadline& deadline) {
  auto set = std::make_unique<WindowSet>();
  const size_t n = static_cast<size_t>(nRanks_) * kWindowSignals * kWindowContexts;
  WEFT_TRY(set->signals.reserve(n * sizeof(uint64_t)));  // zero-filled
  SharedSpan mine;
  if (!findSharedHost(set->signals.data(), n * sizeof(uint64_t), &mine)) {
    return WEFT_ERROR(weftInternalError, "rank %d: the signal block is not shared memory", rank_);
  }
  std::vector<SharedSpan> all(static_cast<size_t>(nRanks_));
  WEFT_TRY(bootstrap_->allGather(&mine, all.data(), sizeof(SharedSpan), deadline));
  set->peerSignals.resize(all.size());
  for (int r = 0; r < nRanks_; ++r) {
    char* p = set->signals.data();
    if (r != rank_) WEFT_TRY(mapSharedHost(all[static_cast<size_t>(r)], &p));
    set->peerSignals[static_cast<size_t>(r)] = reinterpret_cast<std::atomic<uint64_t>*>(p);
  }
  set->consumed.assign(n, 0);
  windows_ = std::move(set);
  return Status::ok();
}

Status Communicator::registerWindow(void* buff, size_t bytes, uint32_t* id) {
  // Every rank sees the same peer table: all refuse alike, without talking.
  for (const PeerInfo& p : peers()) {
    if (p.hostHash != peers()[static_cast<size_t>(rank_)].hostHash) {
      return WEFT_ERROR(weftInvalidUsage,
                        "rank %d: weftCommWindowRegister: rank %d is on another host (%s); windows and signals reach "
                        "ranks on one host only: split the communicator by host first",
                        rank_, p.rank, p.hostName);
    }
  }
  const Deadline deadline = Deadline::afterSeconds(settings_.timeoutS);
  if (!windows_) WEFT_TRY(makeSignals(deadline));
  WindowOffer mine;
  mine.address = reinterpret_cast<uintptr_t>(buff);
  mine.bytes = bytes;
  mine.id = windows_->nextId;
  if (bytes == 0 || !findSharedHost(buff, bytes, &mine.span)) mine.span = SharedSpan();
  std::vector<WindowOffer> all(static_cast<size_t>(nRanks_));
  WEFT_TRY(bootstrap_->allGather(&mine, all.data(), sizeof(WindowOffer), deadline));
  Window window;
  window.targets.resize(all.size());
  for (int r = 0; r < nRanks_; ++r) {
    const WindowOffer& o = all[static_cast<size_t>(r)];
    if (o.id != mine.id) {
      return WEFT_ERROR(weftInvalidUsage,
                        "rank %d: weftCommWindowRegister: rank %d registers its window #%u while this rank registers "
                        "#%u; every rank registers and deregisters windows in the same order",
                        rank_, r, o.id, mine.id);
    }
    WindowTarget& t = window.targets[static_cast<size_t>(r)];
    const PeerInfo& peer = peers()[static_cast<size_t>(r)];
    t.address = o.address;
    t.bytes = o.bytes;
    t.pid = peer.pid;
    if (r == rank_ || peer.processHash == peers()[static_cast<size_t>(rank_)].processHash) {
      t.mapped = reinterpret_cast<char*>(o.address);
    } else if (o.span.owner != 0) {
      WEFT_TRY(mapSharedHost(o.span, &t.mapped));
    }
  }
  windows_->windows[mine.id] = std::move(window);
  *id = windows_->nextId++;
  WEFT_LOG(kInfo, kInit, "rank %d: window #%u of %zu bytes registered%s", rank_, *id, bytes,
           mine.span.owner != 0 ? " (shared memory: peers map it)" : "");
  return Status::ok();
}

Status Communicator::deregisterWindow(uint32_t id) {
  if (!windows_ || windows_->windows.count(id) == 0) {
    return WEFT_ERROR(weftInvalidArgument, "rank %d: weftCommWindowDeregister: window #%u is not registered", rank_,
                      id);
  }
  // Puts to it return once written: after every rank arrived none is in flight.
  WEFT_TRY(bootstrap_->barrier(Deadline::afterSeconds(settings_.timeoutS)));
  windows_->windows.erase(id);
  return Status::ok();
}

Status Communicator::checkWindows(const char* fn) const {
  if (!windows_) {
    return WEFT_ERROR(weftInvalidUsage,
                      "rank %d: %s: no window is registered on this communicator; signals live with its windows: call "
                      "weftCommWindowRegister first",
                      rank_, fn);
  }
  return Status::ok();
}

Status Communicator::putSignal(const void* src, size_t bytes, int peer, uint32_t id, size_t offset, bool signal,
                               int sigIdx, int ctx) {
  WEFT_TRY(checkWindows(id != UINT32_MAX ? "weftPutSignal" : "weftSignal"));
  WEFT_TRY(connections_.healthCheck());
  if (id != UINT32_MAX) {
    auto it = windows_->windows.find(id);
    if (it == windows_->windows.end()) {
      return WEFT_ERROR(weftInvalidArgument,
                        "rank %d: weftPutSignal: window #%u is not registered on this communicator (deregistered, or "
                        "made on another one)",
                        rank_, id);
    }
    const WindowTarget& t = it->second.targets[static_cast<size_t>(peer)];
    if (offset > t.bytes || bytes > t.bytes - offset) {
      return WEFT_ERROR(weftInvalidArgument,
                        "rank %d: weftPutSignal: %zu bytes at peerWinOffset %zu run past rank %d's window of %llu "
                        "bytes; keep offset + bytes within the size rank %d registered",
                        rank_, bytes, offset, peer, static_cast<unsigned long long>(t.bytes), peer);
    }
    int err = 0;
    if (bytes > 0 && t.mapped != nullptr) {
      std::memcpy(t.mapped + offset, src, bytes);
    } else if (bytes > 0 && !writeProcessMemory(t.pid, t.address + offset, src, bytes, &err)) {
      return WEFT_ERROR(weftSystemError,
                        "rank %d: weftPutSignal: writing %zu bytes into rank %d's window (pid %d) failed: %s. That "
                        "window is not memory from weftMemAlloc, so another process writes it with process_vm_writev, "
                        "which the OS refused (ptrace rules) or the rank exited; register windows on memory from "
                        "weftMemAlloc",
                        rank_, bytes, peer, t.pid, errnoText(err).c_str());
    }
  }
  if (signal) {
    // Release: the data written above is visible to the peer once it sees the signal.
    windows_->peerSignals[static_cast<size_t>(peer)][WindowSet::counter(rank_, sigIdx, ctx)].fetch_add(
        1, std::memory_order_release);
  }
  return Status::ok();
}

Status Communicator::waitSignals(const weftWaitSignalDesc_t* descs, int nDesc) {
  WEFT_TRY(checkWindows("weftWaitSignal"));
  // What every counter must reach (descs on one counter add up).
  std::map<size_t, uint64_t> targets;
  std::vector<int> involved;
  for (int i = 0; i < nDesc; ++i) {
    const size_t c = WindowSet::counter(descs[i].peer, descs[i].sigIdx, descs[i].ctx);
    auto [it, fresh] = targets.emplace(c, windows_->consumed[c]);
    (void)fresh;
    it->second += static_cast<uint64_t>(descs[i].opCnt);
    involved.push_back(descs[i].peer);
  }
  opNumber_ = liveNumber(collSeq_, false);
  WatchedOp watched(liveness_.get(), opNumber_, &involved);
  std::atomic<uint64_t>* mine = windows_->peerSignals[static_cast<size_t>(rank_)];
  const Deadline deadline = Deadline::afterSeconds(settings_.timeoutS);
  Backoff backoff;
  for (uint64_t round = 0;; ++round) {
    auto unmet = std::find_if(targets.begin(), targets.end(), [&](const std::pair<const size_t, uint64_t>& t) {
      return mine[t.first].load(std::memory_order_acquire) < t.second;
    });
    if (unmet == targets.end()) break;
    if (aborted_.load() || stopWaits_.load() || round % 256 == 255) {
      Status health = connections_.healthCheck();
      if (!health.isOk()) return fail(std::move(health));
      if (deadline.expired()) {
        const size_t c = unmet->first;
        const int from = static_cast<int>(c / (kWindowSignals * kWindowContexts));
        const uint64_t got = mine[c].load() - windows_->consumed[c];
        const uint64_t want = unmet->second - windows_->consumed[c];
        return fail(WEFT_ERROR(weftTimeout,
                               "rank %d: weftWaitSignal: %llu of %llu signals from rank %d on (sigIdx %d, ctx %d) came "
                               "within %d s (WEFT_TIMEOUT_S); check that rank %d puts or signals to rank %d that many "
                               "times, or raise WEFT_TIMEOUT_S",
                               rank_, static_cast<unsigned long long>(got), static_cast<unsigned long long>(want), from,
                               static_cast<int>(c / kWindowContexts % kWindowSignals),
                               static_cast<int>(c % kWindowContexts), settings_.timeoutS, from, rank_));
      }
    }
    backoff.pause();
  }
  for (const auto& [c, target] : targets) windows_->consumed[c] = target;
  return Status::ok();
}

}  // namespace core
}  // namespace weft
