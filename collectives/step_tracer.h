// What the host executor tells a level-2 timeline (WEFT_TRACE_LEVEL=2, src/core/trace.h): every
// step it ran and every wait before one. The executor calls it only through ExecPlan::tracer,
// which is null unless that level is on, so a run without a timeline pays one branch per step.
#ifndef WEFT_COLLECTIVES_STEP_TRACER_H_
#define WEFT_COLLECTIVES_STEP_TRACER_H_

#include <cstddef>
#include <cstdint>

#include "collectives/step_kind.h"

namespace weft {
namespace coll {

class StepTracer {
 public:
  virtual ~StepTracer() = default;
  // One slice of one step of track `track`, from startNs to endNs (base/os.h nowNs): its kind,
  // the peers it received from and sent to (-1: none) and its bytes.
  virtual void step(int track, StepKind kind, int recvPeer, int sendPeer, size_t bytes, uint64_t startNs,
                    uint64_t endNs) = 0;
  // Track `track` could not run its next step from startNs to endNs: it waited for a message from
  // `peer` (receiving) or for a free slot towards it.
  virtual void wait(int track, int peer, bool receiving, uint64_t startNs, uint64_t endNs) = 0;
};

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_STEP_TRACER_H_
