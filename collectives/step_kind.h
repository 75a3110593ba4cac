// Step kinds: what each kind of schedule step does, written once (../shared/DESIGN.md, "One
// table per fact"). The schedule builders, the host executor, the reference interpreter, the
// device-program encoder and the device lanes (collectives/device/*.cuh, compiled by the host
// compiler, nvcc and hipcc) all read kStepKinds through the predicates below; none keeps its own
// list. Adding a kind means one row here plus what the executors do with it.
//
// Device encoding: a LaneStep (device/kernel_api.h) carries the kind as encodeStepKind(kind), a
// byte. Device code cannot index a host array at run time, so the flag columns are also packed
// into one 64-bit constant (kStepFlagWord), derived from the table at compile time; the
// static_asserts at the end tie the two and fix the byte values the GPU modules were built with.
#ifndef WEFT_COLLECTIVES_STEP_KIND_H_
#define WEFT_COLLECTIVES_STEP_KIND_H_

#include <stdint.h>

#include "device/platform.h"

namespace weft {
namespace coll {

enum class StepKind : uint8_t {
  kSend,                // send src
  kRecv,                // dst = incoming
  kRecvReduceSend,      // send (src op incoming)
  kRecvReduceCopy,      // dst = src op incoming
  kRecvReduceCopySend,  // dst = src op incoming; send dst
  kRecvCopySend,        // dst = incoming; send it on
  kCopy,                // dst = src (local; skipped when they are the same memory)
};

// The buffers a step's regions lie in; a LaneStep carries them as their values.
enum class Buf : uint8_t { kSend, kRecv, kScratch };

// One row per kind, in enum order.
struct StepKindInfo {
  StepKind kind;
  const char* name;  // as formatStep and error messages print it
  bool receives;     // takes one message from recvPeer
  bool sends;        // posts one message to sendPeer
  bool reads;        // uses src (step.srcBuf, srcOffset)
  bool writes;       // stores into dst (step.dstBuf, dstOffset)
  bool reduces;      // combines src with the incoming message through the op
};

constexpr StepKindInfo kStepKinds[] = {
    // kind, name, receives, sends, reads, writes, reduces
    {StepKind::kSend, "send", false, true, true, false, false},
    {StepKind::kRecv, "recv", true, false, false, true, false},
    {StepKind::kRecvReduceSend, "recvReduceSend", true, true, true, false, true},
    {StepKind::kRecvReduceCopy, "recvReduceCopy", true, false, true, true, true},
    {StepKind::kRecvReduceCopySend, "recvReduceCopySend", true, true, true, true, true},
    {StepKind::kRecvCopySend, "recvCopySend", true, true, false, true, false},
    {StepKind::kCopy, "copy", false, false, true, true, false},
};

constexpr int kNumStepKinds = static_cast<int>(sizeof(kStepKinds) / sizeof(kStepKinds[0]));

// The flag columns packed for device code: kind k's flags are byte k of kStepFlagWord.
constexpr uint32_t kStepReceives = 1u << 0;
constexpr uint32_t kStepSends = 1u << 1;
constexpr uint32_t kStepReads = 1u << 2;
constexpr uint32_t kStepWrites = 1u << 3;
constexpr uint32_t kStepReduces = 1u << 4;

constexpr uint64_t packStepFlags(const StepKindInfo& k) {
  return (k.receives ? kStepReceives : 0u) | (k.sends ? kStepSends : 0u) | (k.reads ? kStepReads : 0u) |
         (k.writes ? kStepWrites : 0u) | (k.reduces ? kStepReduces : 0u);
}

constexpr uint64_t packStepFlagWord() {
  uint64_t word = 0;
  for (int i = 0; i < kNumStepKinds; ++i) word |= packStepFlags(kStepKinds[i]) << (8 * i);
  return word;
}

constexpr uint64_t kStepFlagWord = packStepFlagWord();

// The byte a LaneStep carries, and back. A byte that names no kind decodes to no flags.
WEFT_HOST_DEVICE constexpr uint8_t encodeStepKind(StepKind kind) { return static_cast<uint8_t>(kind); }
WEFT_HOST_DEVICE constexpr StepKind decodeStepKind(uint8_t code) { return static_cast<StepKind>(code); }

WEFT_HOST_DEVICE constexpr uint32_t stepFlags(StepKind kind) {
  return static_cast<uint8_t>(kind) < kNumStepKinds
             ? static_cast<uint32_t>((kStepFlagWord >> (8 * static_cast<uint8_t>(kind))) & 0xffu)
             : 0u;
}

WEFT_HOST_DEVICE constexpr bool stepReceives(StepKind kind) { return (stepFlags(kind) & kStepReceives) != 0; }
WEFT_HOST_DEVICE constexpr bool stepSends(StepKind kind) { return (stepFlags(kind) & kStepSends) != 0; }
WEFT_HOST_DEVICE constexpr bool stepReads(StepKind kind) { return (stepFlags(kind) & kStepReads) != 0; }
WEFT_HOST_DEVICE constexpr bool stepWrites(StepKind kind) { return (stepFlags(kind) & kStepWrites) != 0; }
WEFT_HOST_DEVICE constexpr bool stepReduces(StepKind kind) { return (stepFlags(kind) & kStepReduces) != 0; }

// The operands of one step's slice, as both executors combine them (the host executor's apply,
// the lane program's reduceCopy): sources {src if it reads, the incoming message if it
// receives}, destinations {dst if it writes, the outgoing slot if it sends}. Two sources mean a
// reduction (see the static_asserts below); one source is copied to every destination.
struct StepOperands {
  const void* srcs[2];
  void* dsts[2];
  int nSrcs;
  int nDsts;
};
WEFT_HOST_DEVICE inline StepOperands stepOperands(StepKind kind, const void* src, const void* in, void* dst,
                                                  void* out) {
  StepOperands o{{nullptr, nullptr}, {nullptr, nullptr}, 0, 0};
  if (stepReads(kind)) o.srcs[o.nSrcs++] = src;
  if (stepReceives(kind)) o.srcs[o.nSrcs++] = in;
  if (stepWrites(kind)) o.dsts[o.nDsts++] = dst;
  if (stepSends(kind)) o.dsts[o.nDsts++] = out;
  return o;
}

// A copy onto the same memory moves nothing, and every executor skips it (the host executor's
// applyStep, the lane program's runLane): a kCopy step whose source and destination are the same
// elements, unless it multiplies this rank's own input by a premul-sum's scalar on the way
// (scalesOwn: then it scales in place). The interpreter's checks and traffic.cc's count ask the
// same, so that they check and count what the executors do. The host executor asks it of each
// destination of a step that copies (one source, StepKind::kCopy's case).
WEFT_HOST_DEVICE constexpr bool isNoOpCopy(StepKind kind, bool sameMemory, bool scalesOwn) {
  return kind == StepKind::kCopy && sameMemory && !scalesOwn;
}

// Host only (names are for people).
constexpr const char* stepName(StepKind kind) {
  return static_cast<uint8_t>(kind) < kNumStepKinds ? kStepKinds[static_cast<uint8_t>(kind)].name : "unknown";
}

// ---- What ties the table, the enum and the device encoding together -------------------------

constexpr bool stepTableInEnumOrder() {
  for (int i = 0; i < kNumStepKinds; ++i) {
    if (static_cast<int>(kStepKinds[i].kind) != i) return false;
  }
  return true;
}
constexpr bool stepEncodingRoundTrips() {
  for (int i = 0; i < kNumStepKinds; ++i) {
    const StepKind k = kStepKinds[i].kind;
    if (decodeStepKind(encodeStepKind(k)) != k || encodeStepKind(k) != i) return false;
  }
  return true;
}
constexpr bool stepFlagsMatchTable() {
  for (int i = 0; i < kNumStepKinds; ++i) {
    const StepKindInfo& k = kStepKinds[i];
    if (stepReceives(k.kind) != k.receives || stepSends(k.kind) != k.sends || stepReads(k.kind) != k.reads ||
        stepWrites(k.kind) != k.writes || stepReduces(k.kind) != k.reduces) {
      return false;
    }
  }
  return true;
}
// Two sources (it reads and receives) exactly when it reduces: stepOperands' callers rely on it.
constexpr bool stepTwoSourcesIffReduces() {
  for (int i = 0; i < kNumStepKinds; ++i) {
    const StepKindInfo& k = kStepKinds[i];
    if (k.reduces != (k.reads && k.receives)) return false;
  }
  return true;
}

static_assert(kNumStepKinds <= 8, "kStepFlagWord holds 8 kinds; widen it (two words) for a ninth");
static_assert(stepTableInEnumOrder(), "kStepKinds must list every StepKind once, in enum order");
static_assert(stepEncodingRoundTrips(), "a LaneStep's kind byte must be the StepKind's value");
static_assert(stepFlagsMatchTable(), "kStepFlagWord must say what kStepKinds says");
static_assert(stepTwoSourcesIffReduces(), "a step kind reduces exactly when it reads src and receives");
// The byte values GPU modules built from this header use (a change needs every module rebuilt,
// which the build does; these catch a reordering that a stale module would misread).
static_assert(encodeStepKind(StepKind::kSend) == 0 && encodeStepKind(StepKind::kRecv) == 1 &&
                  encodeStepKind(StepKind::kRecvReduceSend) == 2 && encodeStepKind(StepKind::kRecvReduceCopy) == 3 &&
                  encodeStepKind(StepKind::kRecvReduceCopySend) == 4 &&
                  encodeStepKind(StepKind::kRecvCopySend) == 5 && encodeStepKind(StepKind::kCopy) == 6,
              "the device encoding of step kinds changed");

}  // namespace coll
}  // namespace weft

#endif  // WEFT_COLLECTIVES_STEP_KIND_H_
