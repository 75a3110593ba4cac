// What the host runtime and the emulated device share: every buffer is host memory, so copies
// and memsets are memmove and memset, and work queued on a stream is done before the call
// returns (except the emulated device's memsets, which wait on their stream: defersMemsets),
// so streams and events are tokens, nothing is ever being captured into a graph, and
// the lane program runs on host threads (hostLaneRunner()) to its end. Each derived runtime
// supplies the devices, the allocation and the IPC.
#ifndef WEFT_DEVICE_HOST_MEMORY_RUNTIME_H_
#define WEFT_DEVICE_HOST_MEMORY_RUNTIME_H_

#include "device/device.h"

namespace weft {
namespace device {

class HostMemoryRuntime : public Runtime {
 public:
  // `label` starts every message: "host runtime", "emulated runtime".
  explicit HostMemoryRuntime(const char* label) : label_(label) {}

  Status copy(void* dst, const void* src, size_t bytes, CopyKind kind) override;
  Status copyAsync(void* dst, const void* src, size_t bytes, CopyKind kind, Stream) override;
  Status memset(void* dst, int value, size_t bytes) override;
  Status memsetAsync(void* dst, int value, size_t bytes, Stream) override;

  Status streamCreate(Stream* out) override;
  Status streamDestroy(Stream stream) override;
  Status streamSynchronize(Stream stream) override;
  Status streamQuery(Stream, bool* done) override;
  // Streams complete their work at once, so there is never anything to wait for.
  Status streamWaitEvent(Stream, Event event) override;

  Status eventCreate(Event* out, EventKind kind) override;
  Status eventDestroy(Event event) override;
  Status eventRecord(Event event, Stream) override;
  Status eventSynchronize(Event event) override;
  Status eventQuery(Event event, bool* done) override;
  Status eventElapsedMs(Event start, Event end, float* ms) override;

  // The lane program on host threads, to its end before the call returns; like a kernel's, the
  // lanes' failures stay in *launch.error and the launch itself succeeds.
  Status launchLanes(const LaneLaunch& launch, Stream stream) override;

  // Work runs before the call returns, so no stream is ever being recorded.
  Status streamIsCapturing(Stream, bool* capturing) override;
  Status graphCaptureBegin(Stream) override;
  Status graphCaptureEnd(Stream, Graph* out) override;
  Status graphLaunch(Graph, Stream) override;
  Status graphDestroy(Graph graph) override;

  // Events of EventKind::kTiming made by any host-memory runtime of this process so far (tests
  // check that the library's own paths make none).
  static uint64_t timingEventsCreated();

 protected:
  // Where launchLanes's blocks wait for room on the device (null: they all start at once).
  virtual BlockSlots* blockSlots() { return nullptr; }
  // True: memsets are queued on their stream, as a GPU's are, rather than done before the call
  // returns (the emulated device). memset() queues on the legacy default stream, as cudaMemset
  // does on device memory. Queued memsets run, in order, when their stream must have finished
  // them: later work on it (copyAsync, launches), its synchronization or query, an event recorded
  // on it being waited for; the legacy stream's also at synchronous copies; all of them when
  // memory is freed. Nothing else runs them: memory zeroed with memset() and handed to a peer
  // without synchronizing stays unzeroed until some later call wipes it, as on hardware. The
  // queue belongs to the process, as a device's streams do, whichever runtime object is used.
  virtual bool defersMemsets() const { return false; }
  // Refuses a launch whose polled memory (FIFOs, flags, the error record) this runtime knows to
  // be of a kind the lanes must not poll (the emulated device: device.h, Sharing).
  virtual Status checkLaneMemory(const LaneLaunch&) const { return Status::ok(); }
  void drain(Stream stream);  // runs `stream`'s queued memsets (null or the default handle: the legacy stream's)
  void drainAll();
  Status nullPointer(const char* call, size_t bytes) const;
  Status noGraphs(const char* call) const;
  const char* label_;
};

}  // namespace device
}  // namespace weft

#endif  // WEFT_DEVICE_HOST_MEMORY_RUNTIME_H_
