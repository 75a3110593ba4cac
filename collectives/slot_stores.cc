#include "collectives/slot_stores.h"

#include <atomic>
#include <vector>

#include "base/log.h"
#include "base/params.h"

namespace weft {
namespace coll {
namespace {

// Weight of a new measurement in the moving average: a few steps follow a change of placement,
// one slow step (a preemption) does not flip the choice on its own.
constexpr double kNewWeight = 0.25;
constexpr double kTriedWeight = 0.5;

}  // namespace

bool slotStoresFromName(const std::string& name, SlotStores* out) {
  if (name == "cached") {
    *out = SlotStores::kCached;
  } else if (name == "streaming") {
    *out = SlotStores::kStreaming;
  } else if (name == "auto") {
    *out = SlotStores::kAuto;
  } else {
    return false;
  }
  return true;
}

SlotStores configuredSlotStores() {
  static const SlotStores mode = [] {
    SlotStores m = SlotStores::kAuto;
    const std::string asked = params::SlotStores();
    if (!slotStoresFromName(asked, &m))
      WEFT_LOG(kWarn, kColl, "WEFT_SLOT_STORES=%s is not one of cached, streaming, auto; using auto", asked.c_str());
    return m;
  }();
  return mode;
}

bool SlotStoreChooser::streamNext(size_t bytes) {
  if (bytes < kMinBytes || mode_ == SlotStores::kCached) return false;
  if (mode_ == SlotStores::kStreaming) return true;
  // Each way is measured before either is preferred: cached first (the way that was the only
  // one before), then streaming.
  if (nsPerByte_[0] == 0.0) return false;
  if (nsPerByte_[1] == 0.0) return true;
  const bool preferred = streamingPreferred();
  if (++sinceTry_ < tryInterval()) return preferred;
  sinceTry_ = 0;
  return !preferred;
}

uint32_t SlotStoreChooser::tryInterval() const {
  // A try of the slower way costs (ratio - 1) steps' worth of time: the further apart the two
  // are, the rarer the tries, so that they cost a few per cent whatever the ratio.
  const double slow = nsPerByte_[0] > nsPerByte_[1] ? nsPerByte_[0] : nsPerByte_[1];
  const double fast = nsPerByte_[0] > nsPerByte_[1] ? nsPerByte_[1] : nsPerByte_[0];
  double ratio = fast > 0.0 ? slow / fast : 1.0;
  if (ratio > kMaxRatio) ratio = kMaxRatio;
  return static_cast<uint32_t>(kExploreEvery * ratio);
}

void SlotStoreChooser::record(bool streamed, size_t bytes, uint64_t ns) {
  if (mode_ != SlotStores::kAuto || bytes < kMinBytes) return;
  double perByte = static_cast<double>(ns) / static_cast<double>(bytes);
  double& avg = nsPerByte_[streamed ? 1 : 0];
  if (avg > 0.0 && perByte > kMaxStepRatio * avg) perByte = kMaxStepRatio * avg;
  const bool preferred = streamed == streamingPreferred();
  // The way not preferred is measured rarely: its few measurements weigh more.
  const double weight = preferred ? kNewWeight : kTriedWeight;
  // A step that took no measurable time still counts as measured.
  avg = avg == 0.0 ? (perByte > 0.0 ? perByte : 1e-9) : avg + weight * (perByte - avg);
}

namespace {
std::atomic<bool> gRanksOutnumberCpus{false};
}  // namespace

void setRanksOutnumberCpus(bool outnumber) { gRanksOutnumberCpus.store(outnumber, std::memory_order_relaxed); }

SlotStoreChooser& threadSlotStores() {
  thread_local SlotStoreChooser chooser(configuredSlotStores());
  thread_local SlotStoreChooser cached(SlotStores::kCached);
  return chooser.measures() && gRanksOutnumberCpus.load(std::memory_order_relaxed) ? cached : chooser;
}

void reduceStreamingSlot(ReduceFn reduce, void* dst, void* slot, const void* a, const void* b, size_t n, size_t bytes,
                         uint32_t divisor) {
  thread_local std::vector<char> staging;
  if (dst == nullptr) {
    if (staging.size() < bytes) staging.resize(bytes);
    dst = staging.data();
  }
  reduce(dst, a, b, n, divisor);
  copyStreaming(slot, dst, bytes);
}

}  // namespace coll
}  // namespace weft
