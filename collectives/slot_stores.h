// How the host executor writes the FIFO slots a peer reads next (WEFT_SLOT_STORES).
//
// Cached stores leave the slot's lines dirty in this core's cache, and the reader pulls them
// from there; when the two cores share a last-level cache that is the fastest way. Between cores
// that do not (other chiplets or sockets; on the development VM the hypervisor moves its two
// vCPUs between such placements every few tens of seconds), every line then crosses with a
// snoop of ~500 ns, and every first write to a line the reader holds waits for one too: the
// 64 MiB all-reduce fell from 6 to 1.2-1.9 GB/s. Non-temporal stores send the lines to memory
// without reading them first, and the reader fetches them from there (5-6.5 GB/s in that
// placement, but 4.2 instead of 6 where the caches are shared: perf/RESULTS.md, session 11).
//
// So "auto" measures: each thread keeps, for both ways, a moving average of the time per byte
// of the steps that wrote a slot that way, uses the faster, and tries the other one step in
// a while (more rarely the further apart the two are) so that it notices when the placement
// changes. Which way a sender writes never
// changes what its peer reads: only how fast.
#ifndef WEFT_COLLECTIVES_SLOT_STORES_H_
#define WEFT_COLLECTIVES_SLOT_STORES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives/reduce.h"

namespace weft {
namespace coll {

enum class SlotStores { kCached, kStreaming, kAuto };

// "cached", "streaming" or "auto" (case as written); false for anything else.
bool slotStoresFromName(const std::string& name, SlotStores* out);

// WEFT_SLOT_STORES, read once (an unknown name is warned about and taken as auto).
SlotStores configuredSlotStores();

class SlotStoreChooser {
 public:
  // Steps that write fewer bytes into a slot always use cached stores (a small message is read
  // at once, and its latency is what counts).
  static constexpr size_t kMinBytes = 64 * 1024;
  // One eligible step in kExploreEvery x (the slower way's time / the faster's, at most
  // kMaxRatio) tries the way not currently preferred. A try costs more than its own step (the
  // lines it streamed are read from memory, and the next cached writes fetch them back): with
  // one in 16 x ratio, auto ran 3-8 % behind cached stores at 4-64 MiB where the caches are
  // shared (Intel VM, session 12); one in 64 x ratio keeps within 0-5 % of them and still
  // notices a change of placement within a few hundred steps (a 64 MiB call has 256 per rank).
  static constexpr uint32_t kExploreEvery = 64;
  static constexpr double kMaxRatio = 16.0;
  // Streaming is preferred only when it measures this much faster than cached stores: a writer
  // times its own stores, and a streamed slot's other cost, the reader fetching its lines from
  // memory, falls on the peer's steps (2 ranks, 256 KiB, session 13: a process that settled on
  // streaming ran its all-reduce in 76-87 us against 45-54). Where the caches are not shared,
  // streaming measured 3-5x faster (the header's comment), far above the margin.
  static constexpr double kStreamMargin = 1.25;
  // One step counts as at most this many times its way's average so far: a single stretched
  // step (a preemption, a cold start) moved cached stores' average past streaming's (Intel VM,
  // 1 MiB, session 15: from ~100 to ~320 ns/KiB in one step, against streaming's ~115), and auto
  // then streamed every step until cached stores were tried again (all 100 steps between a
  // process's 700th and 800th). A real change of placement still shows within a few steps:
  // every slow step moves the average up by a quarter.
  static constexpr double kMaxStepRatio = 2.0;

  explicit SlotStoreChooser(SlotStores mode) : mode_(mode) {}

  // Whether a step that writes `bytes` into a slot should use non-temporal stores.
  bool streamNext(size_t bytes);
  // Whether it chooses by measuring (auto): only then are steps timed for record().
  bool measures() const { return mode_ == SlotStores::kAuto; }
  // The step chosen by streamNext(bytes) took `ns`.
  void record(bool streamed, size_t bytes, uint64_t ns);

  // The current estimate in ns per KiB for a way (0: not measured yet).
  double nsPerKiB(bool streamed) const { return nsPerByte_[streamed ? 1 : 0] * 1024.0; }

 private:
  SlotStores mode_;
  uint32_t tryInterval() const;
  bool streamingPreferred() const { return nsPerByte_[1] * kStreamMargin < nsPerByte_[0]; }

  double nsPerByte_[2] = {0.0, 0.0};  // moving averages: [0] cached, [1] streaming
  uint32_t sinceTry_ = 0;             // eligible steps since the last try of the other way
};

// This thread's chooser (the host executor's): it outlives a call, so that what one call
// measured serves the next. Auto gives way to cached stores while ranks outnumber CPUs.
SlotStoreChooser& threadSlotStores();

// Ranks of this process's communicators outnumber their host's CPUs (src/core, at init, from
// the tuner's cpuShare): a step's time then measures the preemptions that fell into it more than
// the stores, and auto's tries and flips cost more than they find. Auto then writes cached
// (4 ranks on 2 vCPUs, Intel Xeon VM, session 13: the 256 KiB all-reduce's worst run of a
// series was 0.90-1.08x Open MPI with auto and 1.22-1.36x cached, in four series; perf/RESULTS.md
// "Four ranks on two vCPUs"). An explicit WEFT_SLOT_STORES=streaming still streams.
void setRanksOutnumberCpus(bool outnumber);

// A reduction whose outgoing slot is written with non-temporal stores: reduce(a, b) of n
// elements (bytes in all) goes to dst (or, when null, to a buffer of this thread's) and is
// copied from there, still in this core's cache, into the slot by copyStreaming (fenced).
void reduceStreamingSlot(ReduceFn reduce, void* dst, void* slot, const void* a, const void* b, size_t n, size_t bytes,
                         uint32_t divisor);

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_SLOT_STORES_H_
