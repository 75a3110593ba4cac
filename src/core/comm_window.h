// One-sided windows and signals on host memory (weftCommWindowRegister, weftPutSignal,
// weftSignal, weftWaitSignal): what a communicator keeps about its windows and its signals.
// Communicator (comm_window.cc) is the only user.
//
// Signals: every rank owns a block of counters in shared memory (allocSharedHost), one per
// (sender, sigIdx, ctx); a sender adds to its own counter in the receiver's block through a
// mapping of it, so each counter has one writer and atomics work across processes. A wait for
// opCnt signals from a peer waits until that counter reaches what the earlier waits consumed
// plus opCnt.
//
// Windows: a put writes the peer's window directly: through a mapping of it when it is shared
// memory (weftMemAlloc's host memory), by address in the same process, else with
// process_vm_writev where the OS allows it. Ranks on other hosts are refused at registration.
#ifndef WEFT_CORE_COMM_WINDOW_H_
#define WEFT_CORE_COMM_WINDOW_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "core/host_memory.h"
#include "weft/weft.h"

namespace weft {
namespace core {

constexpr int kWindowSignals = WEFT_WIN_MAX_SIGNALS;
constexpr int kWindowContexts = WEFT_WIN_MAX_CONTEXTS;

// Where a put to one peer's window goes.
struct WindowTarget {
  char* mapped = nullptr;  // the window as this process addresses it (shared memory or same process)
  uint64_t address = 0;    // its address in the peer's process (process_vm_writev)
  uint64_t bytes = 0;
  int pid = 0;
};

struct Window {
  std::vector<WindowTarget> targets;  // per rank
};

struct WindowSet {
  SharedHostBuffer signals;                         // this rank's counters: nRanks x kWindowSignals x kWindowContexts
  std::vector<std::atomic<uint64_t>*> peerSignals;  // every rank's counters, mapped here
  std::vector<uint64_t> consumed;                   // per counter of this rank: what waits took
  std::map<uint32_t, Window> windows;
  uint32_t nextId = 0;

  static size_t counter(int from, int sigIdx, int ctx) {
    return (static_cast<size_t>(from) * kWindowSignals + static_cast<size_t>(sigIdx)) * kWindowContexts +
           static_cast<size_t>(ctx);
  }
};

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_COMM_WINDOW_H_
