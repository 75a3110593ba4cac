// Counts and bandwidth factors per collective, following nccl-tests' *GetCollByteCount and
// *GetBw functions so that a row here means what the same row means there.
#include "perf/collectives.h"

#include <cstring>
#include <string>

namespace weft::perf {
namespace {

struct CollInfo {
  const char* name;
  const char* program;
  const char* alias;  // the name with an underscore
  bool reduces;
  bool rooted;
};

const CollInfo kInfo[kNumCollectives] = {
    {"allreduce", "all_reduce_perf", "all_reduce", true, false},
    {"allgather", "all_gather_perf", "all_gather", false, false},
    {"reducescatter", "reduce_scatter_perf", "reduce_scatter", true, false},
    {"broadcast", "broadcast_perf", "broadcast", false, true},
    {"reduce", "reduce_perf", "reduce", true, true},
    {"alltoall", "alltoall_perf", "all_to_all", false, false},
    {"sendrecv", "sendrecv_perf", "send_recv", false, false},
};

const CollInfo& info(Collective coll) { return kInfo[static_cast<int>(coll)]; }

}  // namespace

const char* collectiveName(Collective coll) { return info(coll).name; }
const char* collectiveProgram(Collective coll) { return info(coll).program; }
bool collectiveReduces(Collective coll) { return info(coll).reduces; }
bool collectiveRooted(Collective coll) { return info(coll).rooted; }

bool collectiveFromName(const char* name, Collective* coll) {
  for (int i = 0; i < kNumCollectives; ++i) {
    const CollInfo& c = kInfo[i];
    if (std::strcmp(name, c.name) == 0 || std::strcmp(name, c.program) == 0 || std::strcmp(name, c.alias) == 0) {
      *coll = static_cast<Collective>(i);
      return true;
    }
  }
  return false;
}

CollCounts collCounts(Collective coll, size_t bytes, size_t typeSize, int nranks) {
  const size_t count = bytes / typeSize;
  const size_t n = static_cast<size_t>(nranks);
  CollCounts c;
  switch (coll) {
    case Collective::kAllGather: {
      // Each rank contributes count/n elements; in place it sends from its own block.
      const size_t base = count / n;
      c.sendCount = base;
      c.recvCount = base * n;
      c.paramCount = base;
      c.sendInplaceOffset = base;  // multiplied by the rank when used
      c.recvInplaceOffset = 0;
      break;
    }
    case Collective::kReduceScatter: {
      const size_t base = count / n;
      c.sendCount = base * n;
      c.recvCount = base;
      c.paramCount = base;
      c.sendInplaceOffset = 0;
      c.recvInplaceOffset = base;  // multiplied by the rank when used
      break;
    }
    case Collective::kAllToAll: {
      const size_t base = count / n;
      c.sendCount = base * n;
      c.recvCount = base * n;
      c.paramCount = base;
      break;
    }
    case Collective::kAllReduce:
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSendRecv:
      c.sendCount = c.recvCount = c.paramCount = count;
      break;
  }
  return c;
}

size_t rowBytes(const CollCounts& c, size_t typeSize) {
  return (c.sendCount > c.recvCount ? c.sendCount : c.recvCount) * typeSize;
}

double busBwFactor(Collective coll, int nranks) {
  const double n = nranks;
  switch (coll) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return (n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

double algBytes(Collective coll, size_t paramCount, size_t typeSize, int nranks) {
  const double bytes = static_cast<double>(paramCount) * static_cast<double>(typeSize);
  switch (coll) {
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return bytes * nranks;
    default:
      return bytes;
  }
}

void bandwidth(Collective coll, size_t paramCount, size_t typeSize, int nranks, double seconds, double* algBwGBs,
               double* busBwGBs) {
  const double alg = seconds > 0 ? algBytes(coll, paramCount, typeSize, nranks) / 1.0e9 / seconds : 0.0;
  *algBwGBs = alg;
  *busBwGBs = alg * busBwFactor(coll, nranks);
}

}  // namespace weft::perf
