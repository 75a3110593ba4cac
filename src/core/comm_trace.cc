// The communicator's side of timelines (trace.h, WEFT_TRACE_FILE): each host call timed as one
// event around the untraced call, and each device call as an instant when it is enqueued.
// Reached only when the communicator has a tracer (comm.h: runCollective, runP2p).
#include "collectives/datatypes.h"
#include "core/comm.h"

namespace weft {
namespace core {
namespace {

// The facts of a collective call (its number is filled in once the call numbered itself).
void describeCall(TraceEvent* e, const CollCall& call, const char* algo) {
  e->name = coll::collName(call.kind);
  e->count = call.count;
  e->bytes = call.count * coll::dataTypeSize(call.type);
  e->datatype = coll::dataTypeName(call.type);
  if (coll::collReduces(call.kind)) e->op = coll::isValidRedOp(call.op) ? coll::redOpName(call.op) : "premul-sum";
  if (coll::collRooted(call.kind)) e->root = call.root;
  e->algo = algo;
}

}  // namespace

Status Communicator::runTraced(const CollCall& call) {
  const char* algo = nullptr;
  if (coll::collTraits(call.kind).scheduled) {
    algo = coll::algoName(paramsFor(call, coll::dataTypeSize(call.type), true).algo);
  }
  TracedCall traced(tracer_.get());
  describeCall(&traced.event(), call, algo);
  Status s = runCollectiveCall(call);
  traced.event().call = seq_;  // the call's number, as its error messages give it ("allreduce #12")
  traced.setResult(static_cast<int>(s.code()));
  return s;
}

Status Communicator::runTraced(const std::vector<P2pCall>& calls) {
  TracedCall traced(tracer_.get());
  TraceEvent& e = traced.event();
  e.name = "sendrecv";
  e.count = calls.size();
  for (const auto& c : calls) e.bytes += c.bytes;
  Status s = runP2pCall(calls);
  e.call = seq_;
  traced.setResult(static_cast<int>(s.code()));
  return s;
}

void Communicator::traceEnqueue(const CollCall& call, int algo) {
  if (!tracer_) return;
  TraceEvent e;
  e.cat = TraceEvent::Cat::kDevice;
  e.ph = 'i';
  describeCall(&e, call, coll::algoName(static_cast<coll::Algo>(algo)));
  e.call = seq_;
  e.tid = Tracer::threadTid();
  e.startNs = nowNs();
  tracer_->add(e);
}

}  // namespace core
}  // namespace weft
